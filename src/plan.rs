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
//!   node only pipeline parallel, since tensor parallel across nodes is not what anyone
//!   deploys (the inter-node network itself is not modelled: stage sends use the
//!   device link). Layouts the model does not allow (tp not dividing the heads, more
//!   stages than layers, no link) are skipped and counted;
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

use crate::dtype::Format;
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::hardware::{Hardware, HardwareDb};
use crate::memory::Parallel;
use crate::model::ModelConfig;
use crate::predict::{Evaluator, Predictor, Scenario, resolve_formats};
use crate::sweep::Point;
use rayon::prelude::*;
use serde::Serialize;

/// Device counts searched by default.
pub const DEFAULT_GPU_COUNTS: [u64; 6] = [1, 2, 4, 8, 16, 32];

/// Largest batch searched (2^20).
pub const MAX_PLAN_BATCH: u64 = 1 << 20;

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
}

/// Every device with a price, or every device when none has one.
pub fn default_devices(db: &HardwareDb) -> Vec<&Hardware> {
    let priced: Vec<&Hardware> = db.devices().iter().filter(|d| d.price.is_some()).collect();
    if priced.is_empty() {
        db.devices().iter().collect()
    } else {
        priced
    }
}

/// The weight formats searched on `hw` by default.
pub fn default_weight_formats(hw: &Hardware) -> Vec<Option<Format>> {
    let mut v = vec![None];
    if hw.peak_flops_per_s.fp8.is_some() {
        v.push(Some(Format::Fp8));
    }
    if hw.peak_flops_per_s.int8.is_some() {
        v.push(Some(Format::Int8));
    }
    v.push(Some(Format::Q8_0));
    v.push(Some(Format::AwqInt4));
    v
}

/// One configuration with its predictions (an entry of `best` and `pareto`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Entry {
    /// Model id.
    pub model: String,
    /// Device id.
    pub gpu: String,
    /// Devices in one replica.
    pub gpus: u64,
    /// `tp` or `pp`.
    pub parallel: &'static str,
    /// Weight format.
    pub weights: String,
    /// KV-cache format.
    pub kv: String,
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
    /// batch x gen / decode time.
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
}

/// A target that keeps cheaper (or any) configurations out.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Binding {
    /// `memory`, `max_ttft_s`, `max_tpot_s`, `min_output_tokens_per_s`,
    /// `max_usd_per_hour`, or `search_space` (nothing binds: nothing cheaper was found).
    pub target: &'static str,
    /// The limit asked (SI units; for `memory`, the capacity per device in bytes).
    pub limit: Option<f64>,
    /// With a best: the best's own value of that quantity (for `memory`, its bytes per
    /// device). Without one: the best value any configuration that fits reaches.
    pub best_reachable: Option<f64>,
    /// One sentence for people.
    pub message: String,
}

/// The `plan --json` document.
#[derive(Debug, Clone, PartialEq, Serialize)]
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
}

/// One evaluated configuration, compact.
#[derive(Debug, Clone, Copy)]
struct Cand {
    layout: usize,
    batch: u64,
    max_batch: u64,
    fits: bool,
    ttft_s: f64,
    tpot_s: f64,
    decode_tokens_per_s: f64,
    output_tokens_per_s: f64,
    total_bytes: f64,
    capacity_bytes: f64,
    usd_per_hour: Option<f64>,
    usd_per_million_tokens: Option<f64>,
}

impl Cand {
    fn cost(&self) -> f64 {
        self.usd_per_million_tokens.unwrap_or(f64::INFINITY)
    }
}

/// One (device, count, layout, weights, kv, engine).
#[derive(Debug, Clone, Copy)]
struct Layout<'a> {
    hw: &'a Hardware,
    gpus: u64,
    parallel: Parallel,
    weights: Option<Format>,
    kv: Option<Format>,
    engine: &'a Engine,
}

/// The targets in the order violations are reported.
const TARGET_NAMES: [&str; 5] = [
    "memory",
    "max_ttft_s",
    "max_tpot_s",
    "min_output_tokens_per_s",
    "max_usd_per_hour",
];

fn violations(c: &Cand, t: &Targets) -> [bool; 5] {
    [
        !c.fits,
        t.max_ttft_s.is_some_and(|x| c.ttft_s > x),
        t.max_tpot_s.is_some_and(|x| c.tpot_s > x),
        t.min_output_tokens_per_s
            .is_some_and(|x| c.output_tokens_per_s < x),
        t.max_usd_per_hour
            .is_some_and(|x| c.usd_per_hour.is_none_or(|p| p > x)),
    ]
}

fn ms(s: f64) -> String {
    crate::units::fmt_seconds(s)
}

/// Runs the search.
///
/// ```
/// use ridgeline::prelude::*;
/// use ridgeline::plan::{PlanRequest, Targets, plan};
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
/// };
/// let p = plan(&req)?;
/// let best = p.best.expect("an 8B model meets 50 ms per token somewhere");
/// assert!(best.tpot_s <= 0.05 && best.fits);
/// assert!(p.feasible <= p.evaluated);
/// # Ok::<(), ridgeline::Error>(())
/// ```
pub fn plan(req: &PlanRequest<'_>) -> Result<Plan> {
    if req.gen_tokens == 0 {
        return Err(Error::invalid(
            "gen_tokens",
            "must be at least 1 for planning (cost is per output token)",
        ));
    }
    Scenario {
        prompt: req.prompt,
        gen_tokens: req.gen_tokens,
        ..Scenario::default()
    }
    .validate()?;
    for (name, v) in [
        ("max_ttft_s", req.targets.max_ttft_s),
        ("max_tpot_s", req.targets.max_tpot_s),
        (
            "min_output_tokens_per_s",
            req.targets.min_output_tokens_per_s,
        ),
        ("max_usd_per_hour", req.targets.max_usd_per_hour),
    ] {
        if let Some(v) = v {
            crate::error::require_positive(name, v)?;
        }
    }
    if req.devices.is_empty() || req.engines.is_empty() || req.gpu_counts.is_empty() {
        return Err(Error::invalid(
            "plan",
            "needs at least one device, engine and device count",
        ));
    }
    if let Some(&n) = req
        .gpu_counts
        .iter()
        .find(|&&n| n == 0 || n > crate::sweep::MAX_GPUS)
    {
        return Err(Error::invalid(
            "gpu_counts",
            format!("{n} is outside 1..{}", crate::sweep::MAX_GPUS),
        ));
    }
    let kv_set = req
        .kv
        .clone()
        .unwrap_or_else(|| vec![None, Some(Format::Fp8)]);
    let mut layouts = Vec::new();
    for &hw in &req.devices {
        let weights = req
            .weights
            .clone()
            .unwrap_or_else(|| default_weight_formats(hw));
        let per_node = u64::from(hw.devices_per_node.unwrap_or(8)).max(1);
        for &gpus in &req.gpu_counts {
            let parallels: &[Parallel] = if gpus == 1 {
                &[Parallel::Tp]
            } else if gpus <= per_node {
                &[Parallel::Tp, Parallel::Pp]
            } else {
                &[Parallel::Pp]
            };
            for &parallel in parallels {
                for &w in &weights {
                    for &k in &kv_set {
                        for &engine in &req.engines {
                            layouts.push(Layout {
                                hw,
                                gpus,
                                parallel,
                                weights: w,
                                kv: k,
                                engine,
                            });
                        }
                    }
                }
            }
        }
    }
    let (prompt, gen_tokens) = (req.prompt, req.gen_tokens);
    let results: Vec<Option<Vec<Cand>>> = layouts
        .par_iter()
        .enumerate()
        .map(|(i, l)| {
            let s = Scenario {
                batch: 1,
                prompt,
                gen_tokens,
                weights: l.weights,
                kv: l.kv,
                gpus: l.gpus,
                parallel: l.parallel,
                flash: req.flash,
                offload: false,
            };
            let p = Predictor::new(&req.model, l.hw, l.engine, &s).ok()?;
            let price = l.hw.price.as_ref().map(|x| x.usd_per_hour * l.gpus as f64);
            let max_batch = p.max_batch(prompt, gen_tokens);
            let top = max_batch.clamp(1, MAX_PLAN_BATCH);
            let mut batches: Vec<u64> =
                std::iter::successors(Some(1u64), |b| b.checked_mul(2).filter(|&n| n <= top))
                    .collect();
            if batches.last() != Some(&top) {
                batches.push(top);
            }
            let mut ev = Evaluator::new(&p);
            Some(
                batches
                    .into_iter()
                    .map(|b| {
                        let pt =
                            Point::new(ev.summary(b, prompt, gen_tokens), b, gen_tokens, price);
                        Cand {
                            layout: i,
                            batch: b,
                            max_batch,
                            fits: pt.fits(),
                            ttft_s: pt.ttft_s,
                            tpot_s: pt.tpot_s,
                            decode_tokens_per_s: pt.decode_tokens_per_s,
                            output_tokens_per_s: pt.output_tokens_per_s,
                            total_bytes: pt.total_bytes(),
                            capacity_bytes: pt.summary.memory.capacity_bytes,
                            usd_per_hour: price,
                            usd_per_million_tokens: pt.usd_per_million_tokens,
                        }
                    })
                    .collect(),
            )
        })
        .collect();
    let skipped = results.iter().filter(|r| r.is_none()).count() as u64;
    let cands: Vec<Cand> = results.into_iter().flatten().flatten().collect();
    let t = &req.targets;
    let feasible: Vec<&Cand> = cands
        .iter()
        .filter(|c| !violations(c, t).iter().any(|&v| v))
        .collect();
    let entry = |c: &Cand| {
        let l = &layouts[c.layout];
        let prec = resolve_formats(&req.model, l.weights, l.kv);
        Entry {
            model: req.model.id.clone(),
            gpu: l.hw.id.clone(),
            gpus: l.gpus,
            parallel: l.parallel.name(),
            weights: prec.weights.name(),
            kv: prec.kv.name(),
            engine: l.engine.id.clone(),
            batch: c.batch,
            prompt,
            gen_tokens,
            fits: c.fits,
            ttft_s: c.ttft_s,
            tpot_s: c.tpot_s,
            decode_tokens_per_s: c.decode_tokens_per_s,
            output_tokens_per_s: c.output_tokens_per_s,
            total_bytes: c.total_bytes,
            capacity_bytes: c.capacity_bytes,
            max_batch: c.max_batch,
            usd_per_hour: c.usd_per_hour,
            usd_per_million_tokens: c.usd_per_million_tokens,
        }
    };
    let describe = |c: &Cand| {
        let l = &layouts[c.layout];
        let e = entry(c);
        format!(
            "{} x {}{}, weights {}, kv {}, batch {}",
            l.gpus,
            l.hw.id,
            if l.gpus > 1 {
                format!(" ({})", l.parallel.name())
            } else {
                String::new()
            },
            e.weights,
            e.kv,
            c.batch
        )
    };
    let priced = feasible.iter().any(|c| c.usd_per_million_tokens.is_some());
    let per_gpu = |c: &Cand| c.output_tokens_per_s / layouts[c.layout].gpus as f64;
    let best = feasible.iter().copied().min_by(|a, b| {
        let key = |c: &Cand| {
            if priced {
                (c.cost(), c.tpot_s, layouts[c.layout].gpus as f64)
            } else {
                (-per_gpu(c), c.tpot_s, layouts[c.layout].gpus as f64)
            }
        };
        let (ka, kb) = (key(a), key(b));
        ka.0.total_cmp(&kb.0)
            .then(ka.1.total_cmp(&kb.1))
            .then(ka.2.total_cmp(&kb.2))
    });
    let binding = match best {
        Some(b) => why_best(b, &cands, t, priced, &describe),
        None => why_none(&cands, t, &describe),
    };
    // Pareto front over (cost, tpot, -throughput), unknown cost = +inf.
    let mut sorted = feasible.clone();
    sorted.sort_by(|a, b| {
        a.cost()
            .total_cmp(&b.cost())
            .then(a.tpot_s.total_cmp(&b.tpot_s))
            .then(b.output_tokens_per_s.total_cmp(&a.output_tokens_per_s))
    });
    let mut front: Vec<&Cand> = Vec::new();
    for c in sorted {
        let dominated = front.iter().any(|f| {
            f.cost() <= c.cost()
                && f.tpot_s <= c.tpot_s
                && f.output_tokens_per_s >= c.output_tokens_per_s
        });
        if !dominated {
            front.push(c);
        }
    }
    Ok(Plan {
        model: req.model.id.clone(),
        prompt,
        gen_tokens,
        targets: req.targets,
        evaluated: cands.len() as u64,
        feasible: feasible.len() as u64,
        skipped_layouts: skipped,
        best: best.map(entry),
        best_by: if priced || best.is_none() {
            "usd_per_million_tokens"
        } else {
            "output_tokens_per_s_per_gpu"
        },
        binding,
        pareto: front.into_iter().map(entry).collect(),
    })
}

fn limit_of(t: &Targets, i: usize) -> Option<f64> {
    match i {
        1 => t.max_ttft_s,
        2 => t.max_tpot_s,
        3 => t.min_output_tokens_per_s,
        4 => t.max_usd_per_hour,
        _ => None,
    }
}

fn value_of(c: &Cand, i: usize) -> Option<f64> {
    match i {
        0 => Some(c.total_bytes),
        1 => Some(c.ttft_s),
        2 => Some(c.tpot_s),
        3 => Some(c.output_tokens_per_s),
        _ => c.usd_per_hour,
    }
}

fn shortfall(i: usize, value: f64, limit: f64) -> String {
    match i {
        1 => format!("TTFT {} > {} asked", ms(value), ms(limit)),
        2 => format!("TPOT {} > {} asked", ms(value), ms(limit)),
        3 => format!("{value:.0} tokens/s < {limit:.0} asked"),
        _ => format!("${value:.2}/h > ${limit:.2}/h budget"),
    }
}

/// Why nothing cheaper than `best` qualifies.
fn why_best(
    best: &Cand,
    cands: &[Cand],
    t: &Targets,
    priced: bool,
    describe: &dyn Fn(&Cand) -> String,
) -> Vec<Binding> {
    let better = |c: &Cand| {
        if priced {
            c.cost() < best.cost()
        } else {
            c.output_tokens_per_s > best.output_tokens_per_s
        }
    };
    // the rank `best` wins on: lower is better
    let rank = |c: &Cand| {
        if priced {
            c.cost()
        } else {
            -c.output_tokens_per_s
        }
    };
    let mut sole = [0u64; 5];
    let mut any = [0u64; 5];
    // per target, of the better configurations that miss only that target, the one
    // that misses it by the least
    let miss = |c: &Cand, i: usize| match (value_of(c, i), limit_of(t, i)) {
        _ if i == 0 => c.total_bytes / c.capacity_bytes,
        (Some(v), Some(l)) if i == 3 => l / v,
        (Some(v), Some(l)) => v / l,
        _ => f64::INFINITY,
    };
    let mut example: [Option<&Cand>; 5] = [None; 5];
    for c in cands.iter().filter(|c| better(c)) {
        let v = violations(c, t);
        let n = v.iter().filter(|&&x| x).count();
        for i in 0..5 {
            if v[i] {
                any[i] += 1;
                if n == 1 {
                    sole[i] += 1;
                    if example[i].is_none_or(|e| {
                        miss(c, i)
                            .total_cmp(&miss(e, i))
                            .then(rank(e).total_cmp(&rank(c)))
                            .is_lt()
                    }) {
                        example[i] = Some(c);
                    }
                }
            }
        }
    }
    let pick = if sole.iter().any(|&n| n > 0) {
        (0..5).max_by_key(|&i| (sole[i], std::cmp::Reverse(i)))
    } else if any.iter().any(|&n| n > 0) {
        (0..5).max_by_key(|&i| (any[i], std::cmp::Reverse(i)))
    } else {
        None
    };
    let n = |k: u64| {
        (
            k,
            if k == 1 {
                "configuration"
            } else {
                "configurations"
            },
        )
    };
    let cheaper = if priced {
        "would cost less"
    } else {
        "would produce more tokens per device"
    };
    let costs = |e: &Cand| match (e.usd_per_million_tokens, best.usd_per_million_tokens) {
        (Some(a), Some(b)) => format!(" (${a:.3} vs ${b:.3} per million tokens)"),
        _ => String::new(),
    };
    match pick {
        Some(0) => {
            let msg = match example[0] {
                Some(e) => format!(
                    "{} {} {cheaper} but do not fit; the closest, {}, needs {:.1} of {:.1} GB per device{}",
                    n(sole[0]).0,
                    n(sole[0]).1,
                    describe(e),
                    e.total_bytes / 1e9,
                    e.capacity_bytes / 1e9,
                    costs(e)
                ),
                None => format!(
                    "{} {} {cheaper} but do not fit in memory",
                    n(any[0]).0,
                    n(any[0]).1
                ),
            };
            vec![Binding {
                target: "memory",
                limit: Some(best.capacity_bytes),
                best_reachable: Some(best.total_bytes),
                message: msg,
            }]
        }
        Some(i) => {
            let limit = limit_of(t, i);
            let msg = match (example[i], limit) {
                (Some(e), Some(l)) => format!(
                    "{} {} {cheaper} but miss it; the closest miss, {}, has {}{}",
                    n(sole[i]).0,
                    n(sole[i]).1,
                    describe(e),
                    shortfall(i, value_of(e, i).unwrap_or(f64::NAN), l),
                    costs(e)
                ),
                _ => format!(
                    "{} {} {cheaper} but miss {} (with other targets too)",
                    n(any[i]).0,
                    n(any[i]).1,
                    TARGET_NAMES[i]
                ),
            };
            vec![Binding {
                target: TARGET_NAMES[i],
                limit,
                best_reachable: value_of(best, i),
                message: msg,
            }]
        }
        None if best.batch >= best.max_batch => vec![Binding {
            target: "memory",
            limit: Some(best.capacity_bytes),
            best_reachable: Some(best.total_bytes),
            message: format!(
                "batch {} is the largest that fits ({:.1} of {:.1} GB per device); a larger batch {}",
                best.batch,
                best.total_bytes / 1e9,
                best.capacity_bytes / 1e9,
                if priced {
                    "would cost less per token"
                } else {
                    "would produce more tokens per device"
                }
            ),
        }],
        None => vec![Binding {
            target: "search_space",
            limit: None,
            best_reachable: None,
            message: format!(
                "no target binds: nothing cheaper was found among the configurations searched (batch at most {MAX_PLAN_BATCH})"
            ),
        }],
    }
}

/// Which targets no configuration reaches, with the best value reachable.
fn why_none(cands: &[Cand], t: &Targets, describe: &dyn Fn(&Cand) -> String) -> Vec<Binding> {
    let fitting: Vec<&Cand> = cands.iter().filter(|c| c.fits).collect();
    if fitting.is_empty() {
        let smallest = cands.iter().min_by(|a, b| {
            (a.total_bytes / a.capacity_bytes).total_cmp(&(b.total_bytes / b.capacity_bytes))
        });
        return vec![Binding {
            target: "memory",
            limit: smallest.map(|c| c.capacity_bytes),
            best_reachable: smallest.map(|c| c.total_bytes),
            message: match smallest {
                Some(c) => format!(
                    "nothing fits in memory: the smallest footprint is {:.1} GB per device on {} ({:.1} GB)",
                    c.total_bytes / 1e9,
                    describe(c),
                    c.capacity_bytes / 1e9
                ),
                None => "no layout of the model is possible on these devices".into(),
            },
        }];
    }
    let best_of = |i: usize, pool: &mut dyn Iterator<Item = &&Cand>| -> Option<(f64, String)> {
        let better = |a: f64, b: f64| if i == 3 { a > b } else { a < b };
        let mut best: Option<(f64, &Cand)> = None;
        for c in pool {
            if let Some(v) = value_of(c, i)
                && best.is_none_or(|(b, _)| better(v, b))
            {
                best = Some((v, c));
            }
        }
        best.map(|(v, c)| (v, describe(c)))
    };
    let mut out = Vec::new();
    // targets no fitting configuration reaches on their own
    for (i, &name) in TARGET_NAMES.iter().enumerate().skip(1) {
        let Some(limit) = limit_of(t, i) else {
            continue;
        };
        let (value, who) = match best_of(i, &mut fitting.iter()) {
            Some(x) => x,
            None => (f64::NAN, "no priced device".into()),
        };
        let reached = if i == 3 {
            value >= limit
        } else {
            value <= limit
        };
        if !reached {
            out.push(Binding {
                target: name,
                limit: Some(limit),
                best_reachable: value.is_finite().then_some(value),
                message: format!(
                    "the best reachable is {} ({who})",
                    if value.is_finite() {
                        shortfall(i, value, limit)
                    } else {
                        "nothing".into()
                    }
                ),
            });
        }
    }
    if out.is_empty() {
        // each target alone is reachable, not all together: the best value of each
        // among configurations meeting the others
        for (i, &name) in TARGET_NAMES.iter().enumerate().skip(1) {
            let Some(limit) = limit_of(t, i) else {
                continue;
            };
            let mut others = fitting.iter().filter(|c| {
                let v = violations(c, t);
                (1..5).all(|j| j == i || !v[j])
            });
            let (value, who) = best_of(i, &mut others).unwrap_or((f64::NAN, String::new()));
            out.push(Binding {
                target: name,
                limit: Some(limit),
                best_reachable: value.is_finite().then_some(value),
                message: if value.is_finite() {
                    format!(
                        "with the other targets met, the best reachable is {} ({who})",
                        shortfall(i, value, limit)
                    )
                } else {
                    "no configuration meets the other targets either".into()
                },
            });
        }
    }
    out
}
