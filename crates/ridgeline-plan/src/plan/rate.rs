//! Capacity planning for a request rate (`plan --rate R --p99-ttft-ms X
//! --p99-tpot-ms Y`): for every layout, the highest Poisson rate one replica serves with
//! p99 TTFT and TPOT within the targets, found by bisection on the rate with the serving
//! simulation ([`crate::simulate`], fixed seed, the same requests at every rate); then
//! `replicas = ceil(R / that rate)`, the fleet's price per hour and per million output
//! tokens, the cheapest and the Pareto front.
//!
//! A vanishing rate is batch 1, so a layout whose batch-1 TTFT or TPOT misses the
//! targets serves no rate. Otherwise the search starts from 1.5x the static throughput
//! at the largest batch that fits (no replica serves more), halves the rate until one
//! meets the targets, then bisects on the logarithm of the rate to 2%. Percentiles never
//! fall as the rate rises (`tests/suite/simulate.rs`), so the rates within the targets form
//! an interval from 0.

use super::search::{self, Cand, Layout};
use super::{Entry, Plan, PlanRequest};
use crate::error::{Error, Result};
use crate::search::largest_real;
use crate::simulate::{Arrivals, Dist, Run, Serving, Workload, check_workload, limits, simulate};
use crate::units::fmt_seconds;
use rayon::prelude::*;
use ridgeline_core::work;
use serde::Serialize;

/// The rate a plan must serve and its latency targets.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RateTarget {
    /// Requests per second the fleet must serve.
    pub rate_per_s: f64,
    /// Largest acceptable p99 time to first token, s.
    pub p99_ttft_s: Option<f64>,
    /// Largest acceptable p99 time per output token, s.
    pub p99_tpot_s: Option<f64>,
    /// Requests simulated at each rate tried.
    pub requests: u64,
    /// Seed of the simulated requests.
    pub seed: u64,
    /// The server's front-end time per request, s, in every simulated TTFT
    /// ([`Serving::request_overhead_s`]; `None`: the bundled fit).
    pub request_overhead_s: Option<f64>,
}

/// Relative precision of the bisection on the rate.
const PRECISION: f64 = 0.02;

/// One layout's answer: its highest rate within the targets and the run there.
struct Found {
    rate: f64,
    run: Run,
    limited_by: &'static str,
    /// Memory per device at the run's mean batch, bytes.
    total_bytes: f64,
}

/// Whether a run meets the targets (and kept up with its arrivals).
fn meets(r: &Run, t: &RateTarget) -> bool {
    !r.saturated
        && r.rejected == 0
        && t.p99_ttft_s.is_none_or(|x| r.ttft_s.p99 <= x)
        && t.p99_tpot_s.is_none_or(|x| r.tpot_s.p99 <= x)
}

/// What stops a run one step above the found rate.
fn limiter(r: &Run, t: &RateTarget) -> &'static str {
    if t.p99_ttft_s.is_some_and(|x| r.ttft_s.p99 > x) {
        "p99_ttft_s"
    } else if t.p99_tpot_s.is_some_and(|x| r.tpot_s.p99 > x) {
        "p99_tpot_s"
    } else {
        "saturation"
    }
}

/// Halvings of the rate from the top before a layout is reported as serving none: the
/// last rate tried is 2^-20 (about a millionth) of 1.5x its static throughput.
const HALVINGS: u32 = 20;

/// The highest rate `l` serves within the targets, or why it serves none.
fn highest_rate(
    req: &PlanRequest<'_>,
    l: &Layout<'_>,
    t: &RateTarget,
) -> std::result::Result<Found, String> {
    let s = l.scenario(req);
    let p = l.predictor(req, &s).map_err(|e| e.to_string())?;
    let top = p
        .max_batch(req.prompt, req.gen_tokens)
        .min(limits(l.engine).max_num_seqs);
    if top == 0 {
        return Err("the model and one request do not fit in memory".into());
    }
    let g = p
        .predict(top, req.prompt, req.gen_tokens)
        .map_err(|e| e.to_string())?
        .generation;
    let hi = 1.5 * g.output_tokens_per_s / req.gen_tokens as f64;
    let run = |rate: f64| {
        let w = Workload {
            arrivals: Arrivals::Poisson { rate },
            requests: t.requests,
            prompt: Dist::Fixed { tokens: req.prompt },
            gen_tokens: Dist::Fixed {
                tokens: req.gen_tokens,
            },
            seed: t.seed,
        };
        let serving = Serving {
            draft: req.draft.as_ref(),
            kernels: req.kernels,
            request_overhead_s: t.request_overhead_s,
            ..Serving::default()
        };
        simulate(&req.model, l.hw, l.engine, &s, &serving, &w).map_err(|e| e.to_string())
    };
    // a vanishing rate is batch 1 (tests/suite/simulate.rs), its first token the
    // server's front end later: checked without simulating
    let one = p
        .predict(1, req.prompt, req.gen_tokens)
        .map_err(|e| e.to_string())?
        .generation;
    let front = Serving {
        request_overhead_s: t.request_overhead_s,
        ..Serving::default()
    }
    .request_overhead(l.engine)
    .map_err(|e| e.to_string())?;
    for (name, target, value) in [
        ("p99 TTFT", t.p99_ttft_s, one.ttft_s + front),
        ("p99 TPOT", t.p99_tpot_s, one.tpot_s),
    ] {
        if let Some(x) = target.filter(|&x| value > x) {
            return Err(format!(
                "one request alone misses the {name} target: {} > {}",
                fmt_seconds(value),
                fmt_seconds(x)
            ));
        }
    }
    // halve from the top until a rate meets the targets, then bisect (bounded)
    let found = largest_real(hi, HALVINGS, PRECISION, |rate| {
        let r = run(rate);
        (r.as_ref().is_ok_and(|r| meets(r, t)), r)
    });
    let above = found.above;
    let Some((rate, Ok(best))) = found.best else {
        return Err(match above {
            Some(Err(e)) => format!("it cannot be simulated: {e}"),
            Some(Ok(r)) => format!(
                "no rate down to {} req/s meets the targets ({})",
                crate::units::sig3(hi / f64::from(1u32 << HALVINGS)),
                limiter(&r, t)
            ),
            None => "no rate could be tried".into(),
        });
    };
    let batch = best.mean_batch.round().max(1.0) as u64;
    Ok(Found {
        rate,
        limited_by: above
            .as_ref()
            .and_then(|r| r.as_ref().ok())
            .map_or("saturation", |r| limiter(r, t)),
        total_bytes: p.memory(batch, req.prompt, req.gen_tokens).0.total_bytes,
        run: best,
    })
}

/// Probes charged per layout when a rate plan states its size up front
/// ([`work::charge`]): about what a layout's search takes (it takes at most 64).
pub const PROBES_CHARGED: u64 = 16;

/// Charges a rate plan of `layouts` layouts, each simulating `requests` requests
/// about [`PROBES_CHARGED`] times, to the work in force; over its budget the error
/// names `requests` or, where the layouts weigh more, `gpu` (the devices that make
/// them).
fn charge_rate_plan(layouts: usize, requests: u64) -> Result<()> {
    let units = layouts as f64 * requests as f64 * PROBES_CHARGED as f64;
    let param = if requests as f64 * PROBES_CHARGED as f64 >= layouts as f64 {
        "requests"
    } else {
        "gpu"
    };
    work::charge(
        units,
        param,
        &format!(
            "simulated requests ({layouts} layouts x {requests} requests x {PROBES_CHARGED} probes)"
        ),
    )
}

/// The plan for a rate: every layout of `req` (batch is the engine's business),
/// each sized to `target.rate_per_s` with as many replicas as it needs.
pub fn plan_rate(req: &PlanRequest<'_>, target: &RateTarget) -> Result<Plan> {
    super::validate(req)?;
    if !(target.rate_per_s.is_finite() && target.rate_per_s > 0.0) {
        return Err(Error::invalid(
            "rate",
            "must be a finite number of requests/s > 0",
        ));
    }
    // the requests are the same for every layout (only the rate varies): refused once,
    // up front
    check_workload(&Workload {
        arrivals: Arrivals::Poisson { rate: 1.0 },
        requests: target.requests,
        prompt: Dist::Fixed { tokens: req.prompt },
        gen_tokens: Dist::Fixed {
            tokens: req.gen_tokens,
        },
        seed: target.seed,
    })?;
    let (layouts, impossible) = search::layouts(req);
    // about the probes a layout's search takes: the work charged up front
    charge_rate_plan(layouts.len(), target.requests)?;
    let w = work::current();
    work::start("plan --rate", layouts.len() as u64);
    let found: Vec<std::result::Result<Found, String>> = layouts
        .par_iter()
        .map(|l| {
            work::within(w.as_ref(), || {
                if work::check().is_err() {
                    // stopped: the check below reports it
                    return Err(String::new());
                }
                // each layout's simulations count as one layout done
                let f = work::quietly(|| highest_rate(req, l, target));
                work::advance(1);
                f
            })
        })
        .collect();
    work::check()?;
    let gen_tokens = req.gen_tokens as f64;
    let mut cands = Vec::new();
    // per layout (each gives at most one candidate): replicas, rate per replica, limit
    let mut extra = vec![(0u64, 0.0f64, ""); layouts.len()];
    let mut unserved = Vec::new();
    for (i, f) in found.into_iter().enumerate() {
        let l = &layouts[i];
        let f = match f {
            Ok(f) => f,
            Err(why) => {
                unserved.push(l.unserved(&req.model, why));
                continue;
            }
        };
        let replicas = (target.rate_per_s / f.rate).ceil().max(1.0) as u64;
        let per_hour = super::device_hour(l.hw, &req.ownership, req.price_basis)
            .map(|x| x * (l.gpus * replicas) as f64);
        let tokens_per_hour = target.rate_per_s * gen_tokens * 3600.0;
        cands.push(Cand {
            layout: i,
            batch: f.run.mean_batch.round().max(1.0) as u64,
            max_batch: f.run.config.max_num_seqs.unwrap_or(0),
            fits: true,
            ttft_s: f.run.ttft_s.p99,
            tpot_s: f.run.tpot_s.p99,
            decode_tokens_per_s: f.run.throughput.output_tokens_per_s,
            output_tokens_per_s: f.rate * gen_tokens,
            total_bytes: f.total_bytes,
            capacity_bytes: l.hw.memory.usable_bytes(),
            usd_per_hour: per_hour,
            usd_per_million_tokens: per_hour.map(|h| h / tokens_per_hour * 1e6),
        });
        extra[i] = (replicas, f.rate, f.limited_by);
    }
    let feasible: Vec<&Cand> = cands
        .iter()
        .filter(|c| {
            req.targets
                .max_usd_per_hour
                .is_none_or(|x| c.usd_per_hour.is_some_and(|p| p <= x))
        })
        .collect();
    let priced = feasible.iter().any(|c| c.usd_per_million_tokens.is_some());
    // without prices: the fewest devices in all the rate needs (replicas x devices)
    let fleet_of = |c: &Cand| extra[c.layout].0 * layouts[c.layout].gpus;
    let (best, near_tie) = search::best_with(&feasible, &layouts, priced, |c| fleet_of(c) as f64);
    let entry = |c: &Cand| -> Entry {
        let (replicas, rate, limited_by) = extra[c.layout];
        let mut e = layouts[c.layout].entry(c, req);
        e.own_usd_per_hour = e.own_usd_per_hour.map(|h| h * replicas as f64);
        Entry {
            replicas: Some(replicas),
            rate_per_replica: Some(rate),
            limited_by: Some(limited_by),
            ..e
        }
    };
    let unpriced = search::unpriced(&feasible, &layouts, priced, fleet_of)
        .into_iter()
        .map(entry)
        .collect();
    Ok(Plan {
        model: req.model.id.clone(),
        prompt: req.prompt,
        gen_tokens: req.gen_tokens,
        targets: req.targets,
        rate: Some(*target),
        evaluated: layouts.len() as u64,
        feasible: feasible.len() as u64,
        skipped_layouts: impossible,
        best: best.map(entry),
        best_by: if priced || best.is_none() {
            super::best_by(priced, best.is_some())
        } else {
            "fleet_gpus"
        },
        binding: Vec::new(),
        pareto: search::pareto(&feasible).into_iter().map(entry).collect(),
        unserved: Some(unserved),
        unpriced,
        near_ties: near_tie.into_iter().collect(),
        ownership: req.ownership,
        speculative: super::PlanSpeculation::of(req),
        overlap_ep: req.overlap_ep,
        expert_imbalance: req.expert_imbalance,
        expert_weights: req.expert_weights,
    })
}
