//! Serving at a request rate (`ridgeline simulate`): a discrete-event simulation of one
//! deployment under continuous batching.
//!
//! ```text
//! workload (rate | concurrency | trace; length distributions; seed)   workload.rs
//!    -> scheduler (admission, chunked prefill, preemption, FCFS)       scheduler.rs
//!    -> iteration cost (predict's ops for a mixed batch)               predict::IterationCost
//!    -> metrics (TTFT, TPOT, E2E, queue; percentiles; goodput)         metrics.rs
//! ```
//!
//! The loop advances from event to event (an arrival, the end of an iteration, the end
//! of a KV transfer), never token by token; memory grows with the requests in flight,
//! not with the requests simulated (percentiles come from fixed-size histograms). With
//! [`Serving::disagg`], prefill and decode run on separate pools joined by a KV
//! transfer over the device link (`disagg.rs`).
//!
//! Conventions: a request's first output token comes from the iteration that finishes
//! its prompt (TTFT = that iteration's end - arrival); TPOT = (E2E - TTFT) / (gen - 1)
//! for gen > 1 (vLLM's `benchmark_serving`); queue = first admission - arrival. The
//! run lasts from the first arrival to the last completion (`duration_s`);
//! `mean_requests_in_system` is the time average over it of the requests that arrived
//! and have not completed.
//!
//! ```
//! use ridgeline_core::prelude::*;
//! use ridgeline_sim::simulate::{Arrivals, Dist, Serving, Workload, simulate};
//!
//! let model = ModelDb::builtin()?.resolve("llama-3-8b")?;
//! let gpu = HardwareDb::builtin()?.get("h100")?;
//! let engine = EngineDb::builtin()?.get("vllm")?;
//! let w = Workload {
//!     arrivals: Arrivals::Poisson { rate: 5.0 },
//!     requests: 200,
//!     prompt: Dist::Fixed { tokens: 512 },
//!     gen_tokens: Dist::Fixed { tokens: 128 },
//!     seed: 1,
//! };
//! let run = simulate(&model, gpu, engine, &Scenario::default(), &Serving::default(), &w)?;
//! assert_eq!(run.completed, 200);
//! // light load: a token every ~10 ms, the first after ~40 ms
//! assert!(run.tpot_s.p50 < 0.02 && run.ttft_s.p50 < 0.1);
//! # Ok::<(), ridgeline_core::Error>(())
//! ```

mod disagg;
mod metrics;
mod run;
mod scheduler;
mod workload;

pub use metrics::{Stats, TIMELINE_POINTS, Timeline, TimelinePoint};
pub(crate) use scheduler::Instance;
pub use scheduler::Limits;
pub use workload::{
    Arrivals, Dist, MAX_CONCURRENCY, MAX_LENGTH, MAX_RATE, MAX_REQUESTS, TraceRequest, Workload,
    parse_trace, read_trace,
};

use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::hardware::Hardware;
use crate::model::ModelConfig;
use crate::predict::{Kernels, Predictor, Scenario};
use crate::roofline::Bound;
use serde::Serialize;

/// Most iterations one simulation may run (10^9): beyond, it stops with an error.
pub(crate) const MAX_ITERATIONS: u64 = 1_000_000_000;

/// Most tokens a workload may ask for in all (requests x mean prompt + gen, 10^11).
pub const MAX_TOTAL_TOKENS: f64 = 1e11;

/// The token budget of one iteration where the engine profile states none
/// (`max_batched_tokens` absent, as in `ideal`, `gpt-fast` and `hf`, engines without
/// chunked prefill) and `--max-batched-tokens` is not given: 8192 tokens, vLLM's
/// default `max_num_batched_tokens` with chunked prefill and the `typical` profile's.
/// Without a budget the simulator would size the activation workspace for a whole
/// iteration of unbounded tokens and leave no room for the KV cache. `predict` keeps
/// such engines unchunked; only the simulator's scheduler needs a budget.
pub const DEFAULT_MAX_BATCHED_TOKENS: u64 = 8192;

/// A prefill pool and a decode pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Disagg {
    /// Devices of the prefill pool (one tensor-parallel group).
    pub prefill_gpus: u64,
    /// Devices of the decode pool (one tensor-parallel group).
    pub decode_gpus: u64,
}

impl Disagg {
    /// Parses `P:D` (`--disagg 1:1`).
    pub fn parse(text: &str) -> Result<Disagg> {
        let bad = || {
            Error::invalid(
                "disagg",
                format!(
                    "'{text}': give P:D, the devices of the prefill and decode pools, e.g. 1:1 or 2:4"
                ),
            )
        };
        let (p, d) = text.trim().split_once(':').ok_or_else(bad)?;
        let n = |s: &str| {
            s.trim()
                .parse::<u64>()
                .ok()
                .filter(|&v| (1..=1024).contains(&v))
        };
        Ok(Disagg {
            prefill_gpus: n(p).ok_or_else(bad)?,
            decode_gpus: n(d).ok_or_else(bad)?,
        })
    }
}

/// Service-level objectives for goodput.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Slo {
    /// Largest acceptable TTFT, s.
    pub ttft_s: Option<f64>,
    /// Largest acceptable TPOT, s.
    pub tpot_s: Option<f64>,
}

/// How the deployment serves, beyond the engine profile.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Serving<'d> {
    /// Replaces the engine's `max_num_seqs`.
    pub max_num_seqs: Option<u64>,
    /// Replaces the engine's `max_batched_tokens`.
    pub max_batched_tokens: Option<u64>,
    /// Fraction of each prompt found in the prefix cache, in [0, 1).
    pub prefix_hit: f64,
    /// Separate prefill and decode pools.
    pub disagg: Option<Disagg>,
    /// Targets for goodput.
    pub slo: Slo,
    /// A separate speculative-decoding draft model, served beside the model on the same
    /// devices (needs the scenario's `spec`; `None`: the drafts come from the model's
    /// own head, its MTP module or an EAGLE-style one).
    pub draft: Option<&'d ModelConfig>,
    /// Measured kernel tables the iterations are costed on where they cover an op
    /// (`None`: the engine's fitted costs). Where a table covers the device, the engine's
    /// profile refitted on the tables serves ([`Kernels::engine`]), with this
    /// configuration's overrides applied over it.
    pub kernels: Option<Kernels<'d>>,
    /// The server's host time per request besides the engine's iterations (HTTP,
    /// parsing, tokenization, the first token's trip back), s: part of every request's
    /// time to first token and end-to-end latency, not of its queueing or of the
    /// iterations (`None`: the bundled fit,
    /// [`ridgeline_core::engine::front_end::FrontEnd`]; 0 under the `ideal` engine).
    pub request_overhead_s: Option<f64>,
}

impl Serving<'_> {
    /// The front end's time per request under `engine`, s ([`Serving::request_overhead_s`]).
    pub fn request_overhead(&self, engine: &Engine) -> Result<f64> {
        match self.request_overhead_s {
            Some(s) => Ok(s),
            None if engine.is_physics() => Ok(0.0),
            None => Ok(ridgeline_core::engine::front_end::FrontEnd::builtin()?.request_overhead_s),
        }
    }

    /// Checks ranges; errors name the field.
    pub fn validate(&self) -> Result<()> {
        if !(self.prefix_hit.is_finite() && (0.0..1.0).contains(&self.prefix_hit)) {
            return Err(Error::invalid(
                "prefix_hit",
                format!("must be a fraction in [0, 1), got {}", self.prefix_hit),
            ));
        }
        for (f, v) in [
            ("max_num_seqs", self.max_num_seqs),
            ("max_batched_tokens", self.max_batched_tokens),
        ] {
            if let Some(v) = v.filter(|&v| v == 0 || v > crate::engine::MAX_SCHEDULER_COUNT) {
                return Err(Error::invalid(
                    f,
                    format!(
                        "must lie in 1..={}, got {v}",
                        crate::engine::MAX_SCHEDULER_COUNT
                    ),
                ));
            }
        }
        if let Some(s) = self.request_overhead_s {
            ridgeline_core::engine::front_end::check_request_overhead(s)?;
        }
        for (f, v) in [
            ("slo_ttft_s", self.slo.ttft_s),
            ("slo_tpot_s", self.slo.tpot_s),
        ] {
            if let Some(v) = v {
                crate::error::require_positive(f, v)?;
            }
        }
        Ok(())
    }

    /// `engine` with the overrides applied, and [`DEFAULT_MAX_BATCHED_TOKENS`] where
    /// neither the engine nor the overrides set a token budget.
    pub(crate) fn engine(&self, engine: &Engine) -> Engine {
        let mut e = engine.clone();
        if let Some(n) = self.max_num_seqs {
            e.scheduler.max_num_seqs = Some(n);
        }
        if let Some(n) = self.max_batched_tokens {
            e.scheduler.max_batched_tokens = Some(n);
        }
        e.scheduler.max_batched_tokens = e
            .scheduler
            .max_batched_tokens
            .or(Some(DEFAULT_MAX_BATCHED_TOKENS));
        e
    }
}

/// The instance limits an engine profile sets.
pub fn limits(engine: &Engine) -> Limits {
    Limits {
        max_num_seqs: engine.scheduler.max_num_seqs.unwrap_or(u64::MAX),
        max_batched_tokens: engine.scheduler.max_batched_tokens.unwrap_or(u64::MAX),
        block_tokens: engine.scheduler.kv_block_tokens.unwrap_or(1),
    }
}

/// Request, input-token and output-token rates.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Throughput {
    /// Completed requests / duration.
    pub requests_per_s: f64,
    /// Output tokens of the completed requests / duration.
    pub output_tokens_per_s: f64,
    /// Prompt tokens of the completed requests / duration.
    pub input_tokens_per_s: f64,
}

/// Requests meeting both SLOs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Goodput {
    /// Such requests / duration.
    pub requests_per_s: f64,
    /// Such requests / completed requests.
    pub fraction: f64,
}

/// What held a run back: what kept requests waiting, and what bound the iterations.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Binding {
    /// Fraction of the run the engine computed (the rest it idled; with
    /// disaggregation, the mean of the two pools).
    pub busy_fraction: f64,
    /// Fraction of the busy time requests waited because `max_num_seqs` were running.
    pub max_num_seqs: f64,
    /// ... because the iteration's token budget was spent.
    pub max_batched_tokens: f64,
    /// ... because the KV cache was full (or a request was preempted).
    pub kv_cache: f64,
    /// What most of the iteration time was bound by.
    pub iteration_bound: Option<Bound>,
    /// Fraction of the iteration time bound by it.
    pub iteration_bound_fraction: f64,
}

impl Binding {
    /// The limit that kept requests waiting for the largest share of the time (`None`:
    /// they waited less than 5% of it).
    pub fn queue_limit(&self) -> Option<&'static str> {
        let v = [
            ("max_num_seqs", self.max_num_seqs),
            ("max_batched_tokens", self.max_batched_tokens),
            ("kv_cache", self.kv_cache),
        ];
        v.iter()
            .copied()
            .filter(|x| x.1 >= 0.05)
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .map(|x| x.0)
    }
}

/// The deployment a run simulated.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RunConfig {
    /// Model id.
    pub model: String,
    /// Device id.
    pub gpu: String,
    /// Devices of one instance (with disaggregation: prefill + decode).
    pub gpus: u64,
    /// Engine id.
    pub engine: String,
    /// `max_num_seqs` in force (null: none).
    pub max_num_seqs: Option<u64>,
    /// `max_batched_tokens` in force (the engine's, `--max-batched-tokens`, or
    /// [`DEFAULT_MAX_BATCHED_TOKENS`]).
    pub max_batched_tokens: Option<u64>,
    /// Tokens per KV block.
    pub kv_block_tokens: u64,
    /// KV cache per device, bytes (with disaggregation: the decode pool's).
    pub kv_cache_bytes: f64,
    /// Prefix-cache hit fraction.
    pub prefix_hit: f64,
    /// The pools (null: one pool).
    pub disagg: Option<Disagg>,
    /// Seed.
    pub seed: u64,
    /// The device whose measured kernel tables the iterations were costed on where
    /// they cover an op: this one, or its sibling (null: none, the engine's fitted
    /// costs; [`Serving::kernels`]).
    pub kernel_table: Option<String>,
    /// The front end's time per request, s ([`Serving::request_overhead_s`]).
    pub request_overhead_s: f64,
}

/// One simulation (the `simulate --json` document for one rate).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Run {
    /// The deployment.
    pub config: RunConfig,
    /// Offered rate, requests/s (null: closed loop or trace).
    pub rate_per_s: Option<f64>,
    /// Users of a closed loop (null: open loop).
    pub concurrency: Option<u64>,
    /// Requests issued.
    pub requests: u64,
    /// Requests completed.
    pub completed: u64,
    /// Requests refused: their prompt and output cannot fit the empty KV cache.
    pub rejected: u64,
    /// First arrival to last completion, s.
    pub duration_s: f64,
    /// Rates over the duration.
    pub throughput: Throughput,
    /// Completions per second from the arrival of the middle request (once one has
    /// completed) to the last arrival: the rate the deployment kept up with while
    /// requests kept coming, past the ramp-up of a run that starts empty.
    pub sustained_requests_per_s: f64,
    /// Whether the deployment fell behind the arrivals: over that window the requests in
    /// the system grew by more than 5% of the arrivals and by more than three standard
    /// deviations of a stable system's fluctuation (`3 sqrt(2 x mean in system + 1)`).
    pub saturated: bool,
    /// Time to first token, s.
    pub ttft_s: Stats,
    /// Time per output token after the first, s (requests with gen > 1).
    pub tpot_s: Stats,
    /// End-to-end latency, s.
    pub e2e_s: Stats,
    /// Arrival to first admission, s.
    pub queue_s: Stats,
    /// Time average of the requests arrived and not completed.
    pub mean_requests_in_system: f64,
    /// Time average of the sequences per iteration while busy.
    pub mean_batch: f64,
    /// Highest fraction of the KV cache in use.
    pub kv_peak_fraction: f64,
    /// Requests preempted (their cache dropped, recomputed later).
    pub preemptions: u64,
    /// KV transfer time per request, s (disaggregation only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kv_transfer_s: Option<Stats>,
    /// Requests meeting both SLOs (only with an SLO).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub goodput: Option<Goodput>,
    /// Iterations run (all pools).
    pub iterations: u64,
    /// What held it back.
    pub binding: Binding,
    /// Batch size and KV use over time (not in JSON).
    #[serde(skip)]
    pub timeline: Timeline,
}

/// Several rates of one deployment, and where it saturates.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct RateSweep {
    /// One run per rate, in the order given.
    pub rows: Vec<Run>,
    /// Where latency turns up (null: no rate saturated the deployment).
    pub knee: Option<Knee>,
}

impl RateSweep {
    /// The sweep of one run (a single rate, concurrency or trace): no knee.
    pub fn single(run: Run) -> RateSweep {
        RateSweep {
            rows: vec![run],
            knee: None,
        }
    }
}

/// The saturation knee of a rate sweep.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Knee {
    /// The lowest offered rate the deployment could not keep up with, requests/s.
    pub rate_per_s: f64,
    /// Its capacity: the most requests/s any saturated run completed over its duration
    /// (first arrival to last completion), requests/s.
    pub capacity_requests_per_s: f64,
    /// What kept requests waiting there (`max_num_seqs`, `max_batched_tokens`,
    /// `kv_cache`; null: the iterations themselves).
    pub queue_limit: Option<&'static str>,
    /// What bound the iterations there.
    pub iteration_bound: Option<Bound>,
}

/// Simulates `workload` on one deployment: `model` on `hardware` laid out as
/// `scenario` says (devices, parallelism, formats, flash; batch, prompt and gen are the
/// workload's business), served by `engine` with `serving`'s overrides.
pub fn simulate(
    model: &ModelConfig,
    hardware: &Hardware,
    engine: &Engine,
    scenario: &Scenario,
    serving: &Serving,
    workload: &Workload,
) -> Result<Run> {
    serving.validate()?;
    workload.validate()?;
    check_work(workload)?;
    if scenario.offload {
        return Err(Error::invalid(
            "offload",
            "simulate serves from device memory only; drop --offload",
        ));
    }
    let engine = serving.engine(
        serving
            .kernels
            .map_or(engine, |k| k.engine(engine, hardware)),
    );
    let lim = limits(&engine);
    if let Some(d) = serving.disagg {
        return disagg::run(model, hardware, &engine, scenario, serving, workload, d);
    }
    let p = predictor(model, hardware, &engine, scenario, serving)?;
    let mut inst = Instance::new(&p, lim, serving.prefix_hit)?;
    let front = serving.request_overhead(&engine)?;
    let mut run = run::unified(&mut inst, workload, serving, front)?;
    run.config = RunConfig {
        gpus: scenario.gpus,
        kv_cache_bytes: inst.kv.pool_bytes,
        kernel_table: p.kernel_table().map(str::to_string),
        request_overhead_s: front,
        ..config(model, hardware, &engine, serving, workload)
    };
    Ok(run)
}

/// The predictor of one pool, on `serving`'s kernel tables and with its
/// speculative-decoding draft where it gives them.
fn predictor<'a>(
    model: &'a ModelConfig,
    hardware: &'a Hardware,
    engine: &'a Engine,
    scenario: &Scenario,
    serving: &Serving<'a>,
) -> Result<Predictor<'a>> {
    let p = Predictor::new(model, hardware, engine, scenario)?;
    match serving.kernels {
        Some(k) => p.with_kernels(k.db, k.hardware),
        None => p,
    }
    .with_draft_if(serving.draft)
}

/// The configuration of a run, without its pools' sizes.
fn config(
    model: &ModelConfig,
    hardware: &Hardware,
    engine: &Engine,
    serving: &Serving,
    workload: &Workload,
) -> RunConfig {
    RunConfig {
        model: model.id.clone(),
        gpu: hardware.id.clone(),
        gpus: 1,
        engine: engine.id.clone(),
        max_num_seqs: engine.scheduler.max_num_seqs,
        max_batched_tokens: engine.scheduler.max_batched_tokens,
        kv_block_tokens: limits(engine).block_tokens,
        kv_cache_bytes: 0.0,
        prefix_hit: serving.prefix_hit,
        disagg: serving.disagg,
        seed: workload.seed,
        kernel_table: None,
        request_overhead_s: 0.0,
    }
}

/// Checks a workload as [`simulate`] does before it runs (ranges, and the total work
/// within [`MAX_TOTAL_TOKENS`]); errors name the field.
pub fn check_workload(w: &Workload) -> Result<()> {
    w.validate()?;
    check_work(w)
}

/// Refuses workloads whose total work would run for hours: requests x mean lengths
/// above [`MAX_TOTAL_TOKENS`].
fn check_work(w: &Workload) -> Result<()> {
    let per_request = match &w.arrivals {
        Arrivals::Trace(rows) => {
            rows.iter()
                .map(|r| (r.prompt + r.gen_tokens) as f64)
                .sum::<f64>()
                / rows.len() as f64
        }
        _ => w.prompt.mean() + w.gen_tokens.mean(),
    };
    let total = per_request * w.requests as f64;
    if total > MAX_TOTAL_TOKENS {
        return Err(Error::invalid(
            "requests",
            format!(
                "{} requests of about {per_request:.0} tokens each are {total:.2e} tokens, more than the {MAX_TOTAL_TOKENS:e} one simulation runs; use fewer requests or shorter lengths",
                w.requests
            ),
        ));
    }
    Ok(())
}

/// Simulates `workload` at each of `rates` (Poisson arrivals; the same requests,
/// closer together as the rate rises) and finds the knee.
pub fn simulate_rates(
    model: &ModelConfig,
    hardware: &Hardware,
    engine: &Engine,
    scenario: &Scenario,
    serving: &Serving,
    workload: &Workload,
    rates: &[f64],
) -> Result<RateSweep> {
    if rates.is_empty() {
        return Err(Error::invalid("rate", "needs at least one rate"));
    }
    let rows = rates
        .iter()
        .map(|&rate| {
            let w = Workload {
                arrivals: Arrivals::Poisson { rate },
                ..workload.clone()
            };
            simulate(model, hardware, engine, scenario, serving, &w)
        })
        .collect::<Result<Vec<Run>>>()?;
    let mut rows = rows;
    // the same requests closer together: a deployment that falls behind at one rate
    // falls behind at every higher one, whatever one run's window shows (flags monotone)
    let lowest = rows
        .iter()
        .filter(|r| r.saturated)
        .filter_map(|r| r.rate_per_s)
        .fold(f64::INFINITY, f64::min);
    for r in &mut rows {
        if r.rate_per_s.is_some_and(|x| x >= lowest) {
            r.saturated = true;
        }
    }
    // the capacity: the most requests/s any saturated run completed over its whole
    // duration (first arrival to last completion: an overloaded engine runs at its
    // ceiling from the ramp-up to the drain, so this slightly understates it, never
    // counts a start-up burst)
    let capacity = rows
        .iter()
        .filter(|r| r.saturated)
        .map(|r| r.throughput.requests_per_s)
        .fold(0.0, f64::max);
    let knee = rows
        .iter()
        .filter(|r| r.saturated)
        .min_by(|a, b| {
            a.rate_per_s
                .unwrap_or(0.0)
                .total_cmp(&b.rate_per_s.unwrap_or(0.0))
        })
        .map(|r| Knee {
            rate_per_s: r.rate_per_s.unwrap_or(0.0),
            capacity_requests_per_s: capacity,
            queue_limit: r.binding.queue_limit(),
            iteration_bound: r.binding.iteration_bound,
        });
    Ok(RateSweep { rows, knee })
}
