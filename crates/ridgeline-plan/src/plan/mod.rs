//! Capacity planning (`ridgeline plan`): search devices, device counts, tensor/pipeline
//! layouts, weight and KV formats, engines and batch sizes for a model and a request
//! shape; keep what fits in memory and meets the latency, throughput and budget
//! targets; return the cheapest by USD per million output tokens, the Pareto front of
//! cost vs time per output token vs throughput, and, when a target binds, which one.
//!
//! ## Search space
//! - devices: those given, else every device with a rental price (every device if none
//!   has one);
//! - device counts: 1, 2, 4, 8, 16, 32 (or those given). Up to a node (the device's
//!   `devices_per_node`, default 8) both tensor and pipeline parallel are tried; beyond a
//!   node pipeline parallel, since tensor parallel across nodes is not what anyone
//!   deploys, and for a mixture-of-experts model expert parallelism over groups whose
//!   tensor parallelism stays within a node. Collectives and stage sends between
//!   scale-up domains run at the network's bandwidth per device
//!   ([`PlanRequest::inter_node_bytes_per_s`]). Layouts the model does not allow (tp
//!   not dividing the heads, more stages than layers, no link) are skipped and counted;
//! - weight formats: native, fp8 where the device publishes an fp8 peak, int8 where it
//!   publishes an int8 peak, q8_0 and awq-int4 (or those given);
//! - KV formats: native (the activation dtype) and fp8 (or those given);
//! - batch: powers of two up to the largest batch that fits, and that largest batch.
//!
//! ## Cost
//! `usd_per_million_tokens = price_per_device_hour x gpus / (output tokens/s x 3600) x
//! 1e6`, with output tokens/s = batch x gen / (TTFT + all decode steps) (static batching:
//! what a fully loaded replica produces). Configurations on devices without a price have
//! no cost; the best is then the highest output tokens/s per device.

mod binding;
mod rate;
mod search;
mod sentences;
pub mod train;

pub use binding::{Better, Config, Miss, Reason};
pub use rate::{PROBES_CHARGED, RateTarget, plan_rate};
pub use sentences::target_flag;

use crate::dtype::Format;
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::hardware::{Hardware, HardwareDb, Ownership};
use crate::memory::Parallel;
use crate::model::ModelConfig;
use crate::predict::{Scenario, Speculation};
use search::Cand;
use serde::Serialize;

/// Device counts searched by default.
pub const DEFAULT_GPU_COUNTS: [u64; 6] = [1, 2, 4, 8, 16, 32];

/// Largest batch searched (2^20).
pub(crate) const MAX_PLAN_BATCH: u64 = 1 << 20;

/// Service-level and budget targets; `None` leaves one open.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Targets {
    /// Largest acceptable time to first token, s.
    pub max_ttft_s: Option<f64>,
    /// Largest acceptable mean time per output token, s.
    pub max_tpot_s: Option<f64>,
    /// Smallest acceptable output tokens/s of one replica (all its devices).
    pub min_output_tokens_per_s: Option<f64>,
    /// Largest acceptable rental price of one replica, USD per hour.
    pub max_usd_per_hour: Option<f64>,
}

/// What to plan for.
#[derive(Debug, Clone)]
pub struct PlanRequest<'a> {
    /// The model.
    pub model: ModelConfig,
    /// Devices to consider (see [`default_devices`]).
    pub devices: Vec<&'a Hardware>,
    /// Engines to consider.
    pub engines: Vec<&'a Engine>,
    /// Prompt tokens per request.
    pub prompt: u64,
    /// Generated tokens per request (>= 1).
    pub gen_tokens: u64,
    /// Targets.
    pub targets: Targets,
    /// Device counts to consider.
    pub gpu_counts: Vec<u64>,
    /// Weight formats (`None`: the default set per device; `Some(None)` inside: native).
    pub weights: Option<Vec<Option<Format>>>,
    /// KV formats (`None`: native and fp8).
    pub kv: Option<Vec<Option<Format>>>,
    /// Fused attention.
    pub flash: bool,
    /// What owning a device costs (the buy-or-rent figures of each entry, and the price
    /// with `price_basis` `own`).
    pub ownership: Ownership,
    /// What configurations are ranked by: rental prices (`rent`, the default) or the
    /// cost of owning the devices (`own`); devices without that price are unpriced.
    pub price_basis: PriceBasis,
    /// Measured kernel tables read where they cover an op (`None`: the engines' fitted
    /// costs). With [`plan_rate`] the simulated iterations are costed on them.
    pub kernels: Option<crate::predict::Kernels<'a>>,
    /// Speculative decoding in every configuration (`None`: off).
    pub spec: Option<Speculation>,
    /// Draft model of speculative decoding (`None`: the model's own head), served on
    /// the same devices (its weights and cache take device memory).
    pub draft: Option<ModelConfig>,
    /// Network bandwidth per device between scale-up domains, bytes/s (see
    /// [`Scenario::inter_node_bytes_per_s`]).
    pub inter_node_bytes_per_s: f64,
    /// The expert-parallel layouts hide their all-to-all behind computation
    /// ([`Scenario::overlap_ep`]); the others are unchanged.
    pub overlap_ep: bool,
    /// The busiest expert-parallel rank's routed rows over the mean in the
    /// expert-parallel layouts ([`Scenario::expert_imbalance`]; 1: uniform routing);
    /// a layout of fewer groups than this cannot hold it and is not built (counted
    /// with the impossible layouts), one without expert parallelism is unchanged.
    pub expert_imbalance: f64,
    /// The routed experts' format in every configuration of a mixture-of-experts model
    /// ([`Scenario::expert_weights`]; `None`: each configuration's weight format where
    /// it names one, else the checkpoint's expert format).
    pub expert_weights: Option<Format>,
}

crate::named_enum! {
    /// What a plan entry's price is and what configurations are ranked by: the
    /// devices' rental price, or the cost of owning them per hour of use ([`Ownership`]).
    #[derive(Default)]
    pub enum PriceBasis: "price basis" {
        /// Rented: the device's cheapest offer per device-hour.
        #[default]
        Rent = "rent",
        /// Owned: purchase over the stated life and utilisation, plus power.
        Own = "own",
        /// Rented under a one-year commitment: the device's cheapest published
        /// committed-use price (reserved instance, savings plan, committed-use discount).
        Committed1y = "committed-1y",
        /// Rented under a three-year commitment.
        Committed3y = "committed-3y",
    }
}

/// What one device-hour of `hw` costs in a plan ranked by `basis`: its rental price, or
/// what owning it costs per hour of use; `None`: unpriced on that basis.
pub(crate) fn device_hour(hw: &Hardware, own: &Ownership, basis: PriceBasis) -> Option<f64> {
    match basis {
        PriceBasis::Rent => hw.price.as_ref().map(|p| p.usd_per_hour),
        PriceBasis::Own => own.own_usd_per_hour(hw),
        PriceBasis::Committed1y => hw.committed_1y.as_ref().map(|c| c.usd_per_hour),
        PriceBasis::Committed3y => hw.committed_3y.as_ref().map(|c| c.usd_per_hour),
    }
}

/// Where the price a plan ranks `hw` by comes from under `basis`: the provider (of the
/// rental price for `rent` and `own`, of the commitment for a committed basis) and the
/// date it was read (for `own`, the purchase price's); `None`s where unknown.
pub(crate) fn price_origin(hw: &Hardware, basis: PriceBasis) -> (Option<String>, Option<String>) {
    let term = |t: &Option<crate::hardware::TermPrice>| {
        t.as_ref().map_or((None, None), |c| {
            (Some(c.provider.clone()), Some(c.date.clone()))
        })
    };
    match basis {
        PriceBasis::Rent => hw
            .price
            .as_ref()
            .map_or((None, None), |p| (p.provider.clone(), Some(p.date.clone()))),
        PriceBasis::Own => (
            hw.price.as_ref().and_then(|p| p.provider.clone()),
            hw.purchase.as_ref().map(|p| p.date.clone()),
        ),
        PriceBasis::Committed1y => term(&hw.committed_1y),
        PriceBasis::Committed3y => term(&hw.committed_3y),
    }
}

/// Every device with a rental or a purchase price, or every device when none has one.
pub fn default_devices(db: &HardwareDb) -> Vec<&Hardware> {
    let priced: Vec<&Hardware> = db
        .devices()
        .iter()
        .filter(|d| d.price.is_some() || d.purchase.is_some())
        .collect();
    if priced.is_empty() {
        db.devices().iter().collect()
    } else {
        priced
    }
}

/// The weight formats searched on `hw` by default.
pub(crate) fn default_weight_formats(hw: &Hardware) -> Vec<Option<Format>> {
    let mut v = vec![None];
    if hw.peak_flops_per_s.rates.fp8.is_some() {
        v.push(Some(Format::Fp8));
    }
    if hw.peak_flops_per_s.rates.int8.is_some() {
        v.push(Some(Format::Int8));
    }
    v.push(Some(Format::Q8_0));
    v.push(Some(Format::AwqInt4));
    v
}

/// One configuration with its predictions (an entry of `best` and `pareto`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Entry {
    /// Model id.
    pub model: String,
    /// Device id.
    pub gpu: String,
    /// Devices in one replica.
    pub gpus: u64,
    /// How the devices split the model.
    pub parallel: Parallel,
    /// Expert-parallel groups (1: none): a mixture-of-experts model's routed experts
    /// over `ep` groups of `gpus / ep` tensor-parallel devices, attention data-parallel
    /// across them.
    pub ep: u64,
    /// Weight format.
    pub weights: Format,
    /// KV-cache format.
    pub kv: Format,
    /// Engine id.
    pub engine: String,
    /// Concurrent sequences.
    pub batch: u64,
    /// Prompt tokens.
    pub prompt: u64,
    /// Generated tokens.
    #[serde(rename = "gen")]
    pub gen_tokens: u64,
    /// Fits in device memory.
    pub fits: bool,
    /// Time to first token, s.
    pub ttft_s: f64,
    /// Mean time per output token, s.
    pub tpot_s: f64,
    /// batch x decode steps / decode time (see [`crate::predict::decode_steps`]).
    pub decode_tokens_per_s: f64,
    /// batch x gen / (TTFT + decode time), the whole replica.
    pub output_tokens_per_s: f64,
    /// Memory per device, bytes.
    pub total_bytes: f64,
    /// Capacity per device, bytes.
    pub capacity_bytes: f64,
    /// Largest batch that fits in this layout.
    pub max_batch: u64,
    /// Price of the replica, USD per hour (null: device without a price).
    pub usd_per_hour: Option<f64>,
    /// USD per million output tokens (null: device without a price).
    pub usd_per_million_tokens: Option<f64>,
    /// Whether the entry has a price (false: ranked by devices needed, not by cost).
    pub priced: bool,
    /// What `usd_per_hour` is: `rent` (the device's rental price) or `own` (the cost of
    /// owning the devices per hour of use, with `--price-basis own`); null when unpriced.
    pub price_basis: Option<PriceBasis>,
    /// Provider of the rental price, where known.
    pub price_provider: Option<String>,
    /// When the price (rental, else purchase) was read, YYYY-MM-DD: its age.
    pub price_date: Option<String>,
    /// Cost of owning the replica's devices per hour of use, USD, under the plan's
    /// `ownership` assumptions (null: no purchase price).
    pub own_usd_per_hour: Option<f64>,
    /// Utilisation from which owning costs less than renting (null: not both prices;
    /// above 1: renting wins at any use).
    pub breakeven_utilisation: Option<f64>,
    /// With a rate ([`plan_rate`]): replicas of this configuration the rate needs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replicas: Option<u64>,
    /// With a rate: the highest rate one replica serves within the targets, requests/s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_per_replica: Option<f64>,
    /// With a rate: what stops one replica above that rate (`p99_ttft_s`, `p99_tpot_s`,
    /// or `saturation`: it falls behind its arrivals).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limited_by: Option<&'static str>,
}

/// With a rate ([`plan_rate`]): a layout that serves no rate within the targets, and
/// why (shown beside the plan, never dropped).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Unserved {
    /// Device id.
    pub gpu: String,
    /// Devices in one replica.
    pub gpus: u64,
    /// How the devices split the model.
    pub parallel: Parallel,
    /// Expert-parallel groups (1: none).
    pub ep: u64,
    /// Weight format.
    pub weights: Format,
    /// KV-cache format.
    pub kv: Format,
    /// Engine id.
    pub engine: String,
    /// Why it serves no rate, one sentence.
    pub reason: String,
}

crate::named_enum! {
    /// What a plan is held to: memory, one of the [`Targets`], or the search space
    /// itself (nothing binds: nothing cheaper was found).
    pub enum Target: "plan target" {
        /// Device memory.
        Memory = "memory",
        /// [`Targets::max_ttft_s`].
        MaxTtft = "max_ttft_s",
        /// [`Targets::max_tpot_s`].
        MaxTpot = "max_tpot_s",
        /// [`Targets::min_output_tokens_per_s`].
        MinThroughput = "min_output_tokens_per_s",
        /// [`Targets::max_usd_per_hour`].
        MaxUsdPerHour = "max_usd_per_hour",
        /// Nothing binds.
        SearchSpace = "search_space",
    }
}

impl Target {
    /// Memory and the four targets, in the order violations are reported.
    pub(crate) const CHECKED: [Target; 5] = [
        Target::Memory,
        Target::MaxTtft,
        Target::MaxTpot,
        Target::MinThroughput,
        Target::MaxUsdPerHour,
    ];

    /// The limit `t` sets on this target (`None`: open, or memory).
    pub(crate) fn limit(self, t: &Targets) -> Option<f64> {
        match self {
            Target::MaxTtft => t.max_ttft_s,
            Target::MaxTpot => t.max_tpot_s,
            Target::MinThroughput => t.min_output_tokens_per_s,
            Target::MaxUsdPerHour => t.max_usd_per_hour,
            Target::Memory | Target::SearchSpace => None,
        }
    }
}

/// A target that keeps cheaper (or any) configurations out.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Binding {
    /// What binds.
    pub target: Target,
    /// The limit asked (SI units; for `memory`, the capacity per device in bytes).
    pub limit: Option<f64>,
    /// With a best: the best's own value of that quantity (for `memory`, its bytes per
    /// device). Without one: the best value any configuration that fits reaches.
    pub best_reachable: Option<f64>,
    /// Why, as data (serialized as one sentence for people, see
    /// `ridgeline::report::plan`).
    #[serde(rename = "message")]
    pub reason: Reason,
}

/// The `plan --json` document.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Plan {
    /// Model id.
    pub model: String,
    /// Prompt tokens.
    pub prompt: u64,
    /// Generated tokens.
    #[serde(rename = "gen")]
    pub gen_tokens: u64,
    /// The targets.
    pub targets: Targets,
    /// The rate planned for (only with `--rate`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate: Option<RateTarget>,
    /// Configurations predicted.
    pub evaluated: u64,
    /// Of which fit and meet every target.
    pub feasible: u64,
    /// (device, count, layout, formats, engine) combinations the model cannot use.
    pub skipped_layouts: u64,
    /// The cheapest feasible configuration (null: none).
    pub best: Option<Entry>,
    /// What `best` minimises: `usd_per_million_tokens`, or
    /// `output_tokens_per_s_per_gpu` (maximised) when no feasible device has a price.
    pub best_by: &'static str,
    /// Why nothing cheaper qualifies, or why nothing qualifies at all.
    pub binding: Vec<Binding>,
    /// Feasible configurations no other beats on cost, tpot and throughput at once,
    /// cheapest first.
    pub pareto: Vec<Entry>,
    /// With a rate: the layouts that serve no rate within the targets, each with why,
    /// in the order searched (absent without a rate).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unserved: Option<Vec<Unserved>>,
    /// When some feasible devices have a price and others do not: the best feasible
    /// configuration of each unpriced device, fewest devices first (ties: more output
    /// tokens/s per device). Shown and marked, never ranked against the priced.
    pub unpriced: Vec<Entry>,
    /// Why `best` is not the first by its objective: a candidate within 2% of it
    /// (see [`NEAR_TIE`]) that needs fewer devices or a simpler layout, one sentence.
    pub near_ties: Vec<String>,
    /// The assumptions behind `own_usd_per_hour` and `breakeven_utilisation`.
    pub ownership: Ownership,
    /// Speculative decoding in every configuration planned (absent: off).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub speculative: Option<PlanSpeculation>,
    /// The expert-parallel configurations hide their all-to-all behind computation
    /// (`--overlap-ep`; absent: off).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub overlap_ep: bool,
    /// The busiest expert-parallel rank's routed rows over the mean in the
    /// expert-parallel configurations (`--expert-imbalance`; absent: 1, uniform
    /// routing).
    #[serde(skip_serializing_if = "is_one")]
    pub expert_imbalance: f64,
    /// The routed experts' format in every configuration (`--expert-weights`; absent:
    /// each configuration's `weights`, else the checkpoint's expert format).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expert_weights: Option<Format>,
}

fn is_one(f: &f64) -> bool {
    *f == 1.0
}

/// The speculative decoding a plan's configurations all run.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct PlanSpeculation {
    /// Draft tokens proposed per verify pass.
    pub k: u64,
    /// Probability that a draft token is accepted.
    pub accept: f64,
    /// Draft model id (null: the model's own head, its MTP module where it ships one).
    pub draft: Option<String>,
}

impl PlanSpeculation {
    /// The speculation of `req`, if any.
    pub(crate) fn of(req: &PlanRequest<'_>) -> Option<PlanSpeculation> {
        req.spec.map(|s| PlanSpeculation {
            k: s.k,
            accept: s.accept,
            draft: req.draft.as_ref().map(|d| d.id.clone()),
        })
    }
}

/// How close to the best's objective (relative) a candidate with fewer devices or a
/// simpler layout is preferred.
pub const NEAR_TIE: f64 = 0.02;

/// What `best` is chosen by: the cost when some feasible device has a price (or there
/// is no best), else output tokens/s per device.
fn best_by(priced: bool, has_best: bool) -> &'static str {
    if priced || !has_best {
        "usd_per_million_tokens"
    } else {
        "output_tokens_per_s_per_gpu"
    }
}

/// Checks the request; the errors name the [`PlanRequest`] fields.
fn validate(req: &PlanRequest<'_>) -> Result<()> {
    if req.gen_tokens == 0 {
        return Err(Error::invalid(
            "gen_tokens",
            "must be at least 1 for planning (cost is per output token)",
        ));
    }
    Scenario::validate_shape(1, req.prompt, req.gen_tokens)?;
    for target in &Target::CHECKED[1..] {
        if let Some(v) = target.limit(&req.targets) {
            crate::error::require_positive(target.name(), v)?;
        }
    }
    if let Some(spec) = req.spec {
        spec.validate()?;
    }
    // the check of one expert-parallel layout of every group count the imbalance allows
    crate::predict::check_expert_imbalance(req.expert_imbalance, u64::MAX)?;
    if req.expert_imbalance != 1.0 && req.model.experts <= 1 {
        return Err(Error::invalid(
            "expert_imbalance",
            format!(
                "{}: {} has no experts to spread over devices",
                req.expert_imbalance, req.model.id
            ),
        ));
    }
    match (&req.draft, req.spec) {
        (Some(_), None) => {
            return Err(Error::conflict(
                &["draft", "spec_k"],
                "a draft model needs speculative decoding (spec_k and spec_accept)",
            ));
        }
        (Some(d), Some(_)) => crate::predict::check_draft(&req.model, d)?,
        _ => {}
    }
    let engines = ("engine", req.engines.len());
    check_choices(
        req.devices.len(),
        engines,
        &req.gpu_counts,
        crate::sweep::MAX_GPUS,
    )
}

/// A plan's choices: at least one device, one of `other` (engines, training methods:
/// its name and count) and one device count, every count in `1..=max_gpus`.
pub(crate) fn check_choices(
    devices: usize,
    (other, others): (&str, usize),
    gpu_counts: &[u64],
    max_gpus: u64,
) -> Result<()> {
    if devices == 0 || others == 0 || gpu_counts.is_empty() {
        return Err(Error::invalid(
            "plan",
            format!("needs at least one device, {other} and device count"),
        ));
    }
    if let Some(&n) = gpu_counts.iter().find(|&&n| n == 0 || n > max_gpus) {
        return Err(Error::invalid(
            "gpu_counts",
            format!("{n} is outside 1..{max_gpus}"),
        ));
    }
    Ok(())
}

/// Runs the search.
///
/// ```
/// use ridgeline_core::prelude::*;
/// use ridgeline_plan::plan::{PlanRequest, Targets, plan};
///
/// let hw = HardwareDb::builtin()?;
/// let req = PlanRequest {
///     model: ModelDb::builtin()?.resolve("llama-3-8b")?,
///     devices: vec![hw.get("h100")?, hw.get("l4")?],
///     engines: vec![EngineDb::builtin()?.get("typical")?],
///     prompt: 512,
///     gen_tokens: 256,
///     targets: Targets { max_tpot_s: Some(0.05), ..Targets::default() },
///     gpu_counts: vec![1, 2],
///     weights: None,
///     kv: None,
///     flash: true,
///     ownership: Default::default(),
///     price_basis: Default::default(),
///     kernels: None,
///     spec: None,
///     draft: None,
///     inter_node_bytes_per_s: 50e9,
///     overlap_ep: false,
///     expert_imbalance: 1.0,
///     expert_weights: None,
/// };
/// let p = plan(&req)?;
/// let best = p.best.expect("an 8B model meets 50 ms per token somewhere");
/// assert!(best.tpot_s <= 0.05 && best.fits);
/// assert!(p.feasible <= p.evaluated);
/// # Ok::<(), ridgeline_core::Error>(())
/// ```
pub fn plan(req: &PlanRequest<'_>) -> Result<Plan> {
    validate(req)?;
    let (layouts, impossible) = search::layouts(req);
    let (cands, failed) = search::evaluate(req, &layouts);
    ridgeline_core::work::check()?;
    let skipped = impossible + failed;
    let t = &req.targets;
    let feasible: Vec<&Cand> = cands.iter().filter(|c| c.meets(t)).collect();
    let priced = feasible.iter().any(|c| c.usd_per_million_tokens.is_some());
    let (best, near_tie) = search::best(&feasible, &layouts, priced);
    let ctx = binding::Context {
        cands: &cands,
        targets: t,
        layouts: &layouts,
        model: &req.model,
    };
    let binding = match best {
        Some(b) => ctx.why_best(b, priced),
        None => ctx.why_none(),
    };
    let entry = |c: &Cand| layouts[c.layout].entry(c, req);
    let unpriced = search::unpriced(&feasible, &layouts, priced, |c| layouts[c.layout].gpus)
        .into_iter()
        .map(entry)
        .collect();
    Ok(Plan {
        model: req.model.id.clone(),
        prompt: req.prompt,
        gen_tokens: req.gen_tokens,
        targets: req.targets,
        rate: None,
        evaluated: cands.len() as u64,
        feasible: feasible.len() as u64,
        skipped_layouts: skipped,
        best: best.map(entry),
        best_by: best_by(priced, best.is_some()),
        binding,
        pareto: search::pareto(&feasible).into_iter().map(entry).collect(),
        unserved: None,
        unpriced,
        near_ties: near_tie.into_iter().collect(),
        ownership: req.ownership,
        speculative: PlanSpeculation::of(req),
        overlap_ep: req.overlap_ep,
        expert_imbalance: req.expert_imbalance,
        expert_weights: req.expert_weights,
    })
}
