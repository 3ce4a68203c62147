//! Training plans (`ridgeline plan --train`): which devices, how many, which layout and
//! method, how long and what it costs to train a model on a number of tokens.
//!
//! ## Search space
//! - devices ([`Pool`]): loose devices (default: every device with a price), or cloud
//!   instance shapes ([`crate::instances`]), whose devices come in instance-sized groups
//!   with the instance's scale-up link, host memory and network;
//! - device counts: 1 to 64 (or those given); with instances, the multiples of the
//!   instance size among them (one instance when the shape has no cluster network);
//! - layouts `tp x pp x dp`: tensor parallelism within the scale-up domain (`tp` divides
//!   the devices per node, the attention heads and the sequence), pipeline parallelism
//!   across nodes (`pp` at most the layers), the rest data parallel. Layouts the model or
//!   device cannot use are not built, only counted (`skipped_layouts`);
//! - methods: full, LoRA, QLoRA (or those given);
//! - ZeRO: stage 0 with one data-parallel rank (nothing to shard); with several, stages 2
//!   and 3 (stages 0 and 1 hold at least as much memory as stage 2 and are never faster:
//!   all three move the same gradient bytes, and stage 0 also runs the whole optimizer
//!   update on every rank);
//! - recomputation: none and full (with fused attention, selective recomputation stores
//!   what no recomputation stores and only adds time; without it, selective too);
//! - optimizer offload to the CPU: with full training on a device with a host link
//!   (adapters' optimizer states are too small to matter); with instances, the offloaded
//!   states must fit the instance's host memory;
//! - micro-batch: the largest that fits ([`crate::search::largest`]), at most
//!   `global_batch / (dp x m)` with `m = 4 x pp` micro-batches per step when pipelining
//!   (train's default schedule) and 1 otherwise;
//! - global batch: the requested sequences per step rounded up to a multiple of
//!   `micro_batch x dp`.
//!
//! Every configuration is evaluated by [`crate::train::Trainer`] with the configuration
//! [`TrainEntry::train_config`] gives, so each entry is what `ridgeline train` prints
//! for the same options (`--instance NAME` for instance shapes).
//!
//! ## Time and cost
//! `hours = tokens / (tokens_per_s x 3600)`, `usd = hours x price per device-hour x
//! devices`. The best is the cheapest configuration that fits and meets `--max-hours`
//! and `--budget-usd`; the fastest is the fastest that does; the Pareto front holds the
//! feasible configurations no other beats on both cost and time, cheapest first, over
//! all methods and per method. When nothing qualifies, `best` and `fastest` are null and
//! [`TrainBinding`]s name the limit and the best value reachable.

mod binding;
mod search;
pub mod sentences;
mod story;

pub use binding::{Answer, Lack, TrainBinding, TrainReason, TrainTarget};
pub use story::{NextCheaper, OptionRole, OptionStory};

use crate::error::{Error, Result};
use crate::hardware::{Hardware, HardwareDb};
use crate::instances::Instance;
use crate::model::ModelConfig;
use crate::train::{Method, Offload, Recompute, TrainConfig, Trainer};
use search::Cand;
use serde::Serialize;

/// Device counts searched by default: 1 to this.
pub(crate) const DEFAULT_MAX_GPUS: u64 = 64;

/// Sequences per optimizer step when none is asked (512 Ki tokens at `seq` 2048).
pub const DEFAULT_GLOBAL_BATCH: u64 = 256;

/// Most devices one configuration may use.
pub const MAX_TRAIN_PLAN_GPUS: u64 = 1_000_000;

/// Most (device, count, tp, pp) layouts one search may span (the default search over
/// every priced device spans about 20,000; each layout is evaluated for up to 16
/// options).
pub(crate) const MAX_LAYOUTS: u64 = 50_000;

/// Largest micro-batch searched (2^20 sequences).
pub(crate) const MAX_MICRO_BATCH: u64 = 1 << 20;

/// One kind of device the search may rent: a loose device, or the devices of a cloud
/// instance shape.
#[derive(Debug, Clone, PartialEq)]
pub struct Pool {
    /// The device as the pool presents it ([`Instance::hardware`] for instances).
    pub hardware: Hardware,
    /// The instance shape's name (`None`: loose devices).
    pub instance: Option<String>,
    /// Devices per instance (1 for loose devices).
    pub devices_per_instance: u64,
    /// Host memory per device, bytes (`None`: not bounded).
    pub host_memory_per_device_bytes: Option<f64>,
    /// Network between nodes per device, bytes/s per direction.
    pub inter_node_bytes_per_s: f64,
    /// Most devices (one instance of a shape without a cluster network).
    pub max_gpus: u64,
}

impl Pool {
    /// Loose devices of one kind: the default inter-node network, no host-memory bound.
    pub fn device(hw: &Hardware) -> Pool {
        Pool {
            hardware: hw.clone(),
            instance: None,
            devices_per_instance: 1,
            host_memory_per_device_bytes: None,
            inter_node_bytes_per_s: crate::train::DEFAULT_INTER_NODE_BYTES_PER_S,
            max_gpus: MAX_TRAIN_PLAN_GPUS,
        }
    }

    /// The devices of an instance shape, resolved in `db`.
    pub fn instance(inst: &Instance, db: &HardwareDb) -> Result<Pool> {
        Ok(Pool {
            hardware: inst.hardware(db)?,
            instance: Some(inst.name.clone()),
            devices_per_instance: inst.count,
            host_memory_per_device_bytes: Some(inst.host_memory_per_gpu_bytes()),
            inter_node_bytes_per_s: inst.inter_node_bytes_per_s(),
            max_gpus: inst.max_gpus(),
        })
    }

    /// Whether `gpus` devices come in whole instances of this pool.
    pub(crate) fn allows(&self, gpus: u64) -> bool {
        gpus.is_multiple_of(self.devices_per_instance) && gpus <= self.max_gpus
    }

    /// Price per device-hour, if known.
    pub(crate) fn usd_per_gpu_hour(&self) -> Option<f64> {
        self.hardware.price.as_ref().map(|p| p.usd_per_hour)
    }
}

/// Deadline and budget; `None` leaves one open.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct TrainTargets {
    /// Largest acceptable training time, hours.
    pub max_hours: Option<f64>,
    /// Largest acceptable cost of the whole run, USD.
    pub budget_usd: Option<f64>,
}

/// What to plan for.
#[derive(Debug, Clone)]
pub struct TrainPlanRequest {
    /// The model.
    pub model: ModelConfig,
    /// Devices or instance shapes to consider.
    pub pools: Vec<Pool>,
    /// Tokens to train on.
    pub tokens: u64,
    /// Sequences per optimizer step asked (each entry rounds it up to a multiple of
    /// `micro_batch x dp`).
    pub global_batch: u64,
    /// Methods to consider.
    pub methods: Vec<Method>,
    /// Device counts to consider.
    pub gpu_counts: Vec<u64>,
    /// Context-parallel degrees to consider (default 1 alone): each layout takes those
    /// that divide its data-parallel ranks and the sequence.
    pub cp_degrees: Vec<u64>,
    /// Deadline and budget.
    pub targets: TrainTargets,
    /// What every entry shares (`seq`, precision, optimizer, LoRA rank and targets,
    /// flash, sequence parallelism); the search sets `gpus`, `tp`, `pp`, `zero`,
    /// `micro_batch`, `global_batch`, `method`, `recompute`, `offload`,
    /// `virtual_stages` (1) and `inter_node_bytes_per_s` (the pool's).
    pub base: TrainConfig,
}

impl TrainPlanRequest {
    /// A request with the defaults: every method, counts 1 to 64, global batch 256,
    /// seq 2048, no targets.
    pub fn new(model: ModelConfig, pools: Vec<Pool>, tokens: u64) -> Self {
        TrainPlanRequest {
            model,
            pools,
            tokens,
            global_batch: DEFAULT_GLOBAL_BATCH,
            methods: Method::ALL.to_vec(),
            gpu_counts: (1..=DEFAULT_MAX_GPUS).collect(),
            cp_degrees: vec![1],
            targets: TrainTargets::default(),
            base: TrainConfig::default(),
        }
    }
}

/// Parses `--method`: `any` (every method) or a comma-separated list of `full`,
/// `lora`, `qlora`; unknown names suggest the closest.
///
/// ```
/// use ridgeline_plan::plan::train::parse_methods;
/// use ridgeline_core::train::Method;
/// assert_eq!(parse_methods("any")?, Method::ALL.to_vec());
/// assert_eq!(parse_methods("qlora, full")?, vec![Method::Qlora, Method::Full]);
/// assert!(parse_methods("fulll").unwrap_err().to_string().contains("did you mean full"));
/// # Ok::<(), ridgeline_core::Error>(())
/// ```
pub fn parse_methods(text: &str) -> Result<Vec<Method>> {
    let mut out: Vec<Method> = Vec::new();
    for name in crate::list::parse_names("methods", text)? {
        let add: Vec<Method> = if name.eq_ignore_ascii_case("any") {
            Method::ALL.to_vec()
        } else {
            vec![Method::parse(&name).map_err(|_| {
                Error::unknown(
                    "training method",
                    &name,
                    Method::ALL.iter().map(|m| m.name()).chain(["any"]),
                )
            })?]
        };
        for m in add {
            if !out.contains(&m) {
                out.push(m);
            }
        }
    }
    Ok(out)
}

/// Every pool of `db` with a price (every device when none has one).
pub fn default_pools(db: &HardwareDb) -> Vec<Pool> {
    crate::plan::default_devices(db)
        .into_iter()
        .map(Pool::device)
        .collect()
}

/// One configuration with its predictions (entries of `best`, `fastest`, `pareto`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct TrainEntry {
    /// Hardware id.
    pub gpu: String,
    /// Instance shape (only with instances).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instance: Option<String>,
    /// Instances rented (only with instances).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instances: Option<u64>,
    /// Devices.
    pub gpus: u64,
    /// Tensor-parallel degree.
    pub tp: u64,
    /// Pipeline-parallel degree.
    pub pp: u64,
    /// Context-parallel degree (1: none).
    pub cp: u64,
    /// Expert-parallel degree (1: none), a divisor of `dp`.
    pub ep: u64,
    /// Data-parallel degree.
    pub dp: u64,
    /// ZeRO stage.
    pub zero: u64,
    /// Activation recomputation.
    pub recompute: Recompute,
    /// Optimizer states on the host.
    pub offload: Offload,
    /// Training method.
    pub method: Method,
    /// Sequences per micro-batch per data-parallel rank.
    pub micro_batch: u64,
    /// Sequences per optimizer step.
    pub global_batch: u64,
    /// Tokens trained per second, all devices.
    pub tokens_per_s: f64,
    /// Optimizer step time, s.
    pub step_time_s: f64,
    /// Model FLOPs utilization.
    pub mfu: f64,
    /// `tokens / (tokens_per_s x 3600)`.
    pub hours: f64,
    /// `hours x price x gpus` (null: no price).
    pub usd: Option<f64>,
    /// Price of all the devices, USD per hour (null: no price).
    pub usd_per_hour: Option<f64>,
    /// Fits in device memory (and host memory).
    pub fits: bool,
    /// Memory per device (the most loaded), bytes.
    pub memory_per_device_bytes: f64,
    /// Device capacity, bytes.
    pub capacity_bytes: f64,
    /// Optimizer states per device in host memory (offload), bytes.
    pub host_bytes_per_device: f64,
    /// Host memory per device the instance offers, bytes (null: not bounded).
    pub host_capacity_per_device_bytes: Option<f64>,
    /// Inter-node network per device the entry assumes, bytes/s.
    pub inter_node_bytes_per_s: f64,
}

impl TrainEntry {
    /// The `train` configuration of this entry on top of `base` (the request's): what
    /// `ridgeline train` takes to reproduce it.
    pub fn train_config(&self, base: &TrainConfig) -> TrainConfig {
        search::Setting {
            gpus: self.gpus,
            tp: self.tp,
            pp: self.pp,
            cp: self.cp,
            ep: self.ep,
            opt: search::Opt {
                method: self.method,
                zero: self.zero,
                recompute: self.recompute,
                offload: self.offload,
            },
            micro_batch: self.micro_batch,
            global_batch: self.global_batch,
            inter_node_bytes_per_s: self.inter_node_bytes_per_s,
        }
        .config(base)
    }
}

/// The feasible entries of one method no other of that method beats on cost and time.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct MethodFront {
    /// The method.
    pub method: Method,
    /// Cheapest first.
    pub entries: Vec<TrainEntry>,
}

/// The `plan --train --json` document.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct TrainPlan {
    /// Model id.
    pub model: String,
    /// Tokens to train on.
    pub tokens: u64,
    /// Tokens per sequence.
    pub seq: u64,
    /// Sequences per step asked.
    pub global_batch: u64,
    /// Methods searched.
    pub methods: Vec<Method>,
    /// Deadline and budget.
    pub targets: TrainTargets,
    /// Configurations evaluated.
    pub evaluated: u64,
    /// Of which fit and meet the targets.
    pub feasible: u64,
    /// (device, count, tp, pp) layouts and options the model or device cannot use.
    pub skipped_layouts: u64,
    /// The cheapest feasible configuration (null: none).
    pub best: Option<TrainEntry>,
    /// The fastest feasible configuration (null: none).
    pub fastest: Option<TrainEntry>,
    /// Feasible configurations no other beats on both cost and time, cheapest first.
    pub pareto: Vec<TrainEntry>,
    /// The same front per method.
    pub pareto_by_method: Vec<MethodFront>,
    /// What keeps the best and the fastest from being cheaper or faster, or why nothing
    /// qualifies.
    pub binding: Vec<TrainBinding>,
    /// The highlighted options (best, fastest, cheapest of each method) with what binds
    /// each: the plain-language explanation's data.
    pub options: Vec<OptionStory>,
    /// Where the best or the fastest is a near-tie (within 2% of the objective) chosen
    /// for fewer devices or a simpler layout, the sentence saying so (`best: ...`,
    /// `fastest: ...`); empty otherwise.
    pub near_ties: Vec<String>,
}

/// Checks the request; errors name the [`TrainPlanRequest`] fields.
fn validate(req: &TrainPlanRequest) -> Result<()> {
    if req.tokens == 0 {
        return Err(Error::invalid("tokens", "must be at least 1"));
    }
    if req.global_batch == 0 || req.global_batch > MAX_MICRO_BATCH {
        return Err(Error::invalid(
            "global_batch",
            format!(
                "{} sequences: must be 1 to {MAX_MICRO_BATCH}",
                req.global_batch
            ),
        ));
    }
    for (field, v) in [
        ("max_hours", req.targets.max_hours),
        ("budget_usd", req.targets.budget_usd),
    ] {
        if let Some(v) = v {
            crate::error::require_positive(field, v)?;
        }
    }
    let methods = ("method", req.methods.len());
    super::check_choices(
        req.pools.len(),
        methods,
        &req.gpu_counts,
        MAX_TRAIN_PLAN_GPUS,
    )?;
    // what no layout can repair: a model training does not model, a LoRA rank beyond
    // the model's matrices, a sequence beyond the modelled range
    for &method in &req.methods {
        let cfg = TrainConfig {
            method,
            ..req.base.clone()
        };
        Trainer::new(&req.model, &req.pools[0].hardware, &cfg)?;
    }
    Ok(())
}

/// Runs the search.
///
/// ```
/// use ridgeline_core::prelude::*;
/// use ridgeline_plan::plan::train::{Pool, TrainPlanRequest, plan_training};
/// use ridgeline_core::train::Method;
///
/// let model = ModelDb::builtin()?.resolve("llama-2-7b")?;
/// let gpu = HardwareDb::builtin()?.get("rtx-4090")?;
/// let mut req = TrainPlanRequest::new(model, vec![Pool::device(gpu)], 200_000_000);
/// req.gpu_counts = vec![1];
/// req.methods = vec![Method::Qlora];
/// let plan = plan_training(&req)?;
/// let best = plan.best.expect("QLoRA of a 7B model fits one 24 GB card");
/// assert!(best.fits && best.memory_per_device_bytes <= best.capacity_bytes);
/// assert_eq!(best.hours, 200e6 / (best.tokens_per_s * 3600.0));
/// # Ok::<(), ridgeline_core::Error>(())
/// ```
pub fn plan_training(req: &TrainPlanRequest) -> Result<TrainPlan> {
    validate(req)?;
    let (layouts, impossible) = search::layouts(req)?;
    let (cands, invalid) = search::evaluate(req, &layouts);
    ridgeline_core::work::check()?;
    let t = &req.targets;
    let feasible: Vec<&Cand> = cands.iter().filter(|c| c.meets(t)).collect();
    let (best, best_tie) = search::best(&feasible);
    let (fastest, fastest_tie) = search::fastest(&feasible);
    let near_ties: Vec<String> = best_tie
        .map(|n| format!("best: {n}"))
        .into_iter()
        .chain(fastest_tie.map(|n| format!("fastest: {n}")))
        .collect();
    let entry = |c: &Cand| c.entry(&req.pools);
    let ctx = binding::Context {
        cands: &cands,
        targets: t,
        pools: &req.pools,
    };
    let mut binding = Vec::new();
    match (best, fastest) {
        (Some(b), Some(f)) => {
            binding.push(ctx.why(b, Answer::Best));
            binding.push(ctx.why(f, Answer::Fastest));
        }
        _ => binding.extend(ctx.why_none()),
    }
    let pareto_by_method = req
        .methods
        .iter()
        .map(|&m| MethodFront {
            method: m,
            entries: search::pareto(feasible.iter().copied().filter(|c| c.opt.method == m))
                .into_iter()
                .map(entry)
                .collect(),
        })
        .collect();
    let options = story::options(req, &cands, &feasible, best, fastest)?;
    Ok(TrainPlan {
        model: req.model.id.clone(),
        tokens: req.tokens,
        seq: req.base.seq,
        global_batch: req.global_batch,
        methods: req.methods.clone(),
        targets: *t,
        evaluated: cands.len() as u64,
        feasible: feasible.len() as u64,
        skipped_layouts: impossible + invalid,
        best: best.map(entry),
        fastest: fastest.map(entry),
        pareto: search::pareto(feasible.iter().copied())
            .into_iter()
            .map(entry)
            .collect(),
        pareto_by_method,
        binding,
        options,
        near_ties,
    })
}
