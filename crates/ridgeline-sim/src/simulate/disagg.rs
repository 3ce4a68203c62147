//! Disaggregated serving: a prefill pool (one tensor-parallel group of `P` devices)
//! makes each prompt's KV cache and first token, the cache moves over the device link
//! to a decode pool (`D` devices), which makes the other tokens.
//!
//! The transfer of a prompt of `n` tokens takes `max(B_p, B_d) / (link x link
//! efficiency) + collective latency`, where `B_p` and `B_d` are the cache bytes one
//! device of each pool holds for it: every device sends (or receives) its shard over
//! its own link at once, and a pool with fewer devices moves more per device.
//! Transfers use the link one after another (first come, first served). A request's
//! first token reaches the client when its cache has reached the decode pool (TTFT =
//! end of the transfer - arrival); its prefill-pool blocks are freed when the prefill
//! ends. Requests of one output token finish on the prefill pool.

use super::run::{Collector, Feed};
use super::scheduler::{Instance, Req};
use super::{Disagg, Run, RunConfig, Serving, Workload, limits};
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::hardware::Hardware;
use crate::memory::Parallel;
use crate::model::ModelConfig;
use crate::predict::Scenario;
use std::collections::VecDeque;

/// The link between the pools.
struct Link {
    bytes_per_s: f64,
    latency_s: f64,
    free_at: f64,
}

/// The transfer time of a cache of `n` tokens from pool `a` to pool `b`.
fn transfer_s(link: &Link, a: &Instance<'_, '_>, b: &Instance<'_, '_>, n: u64) -> f64 {
    let bytes_a = a.kv.bytes(a.cost.predictor(), n, 1);
    let bytes_b = b.kv.bytes(b.cost.predictor(), n, 1);
    bytes_a.max(bytes_b) / link.bytes_per_s + link.latency_s
}

/// Runs a workload on a prefill pool and a decode pool.
pub(super) fn run(
    model: &ModelConfig,
    hardware: &Hardware,
    engine: &Engine,
    scenario: &Scenario,
    serving: &Serving,
    workload: &Workload,
    d: Disagg,
) -> Result<Run> {
    let link = hardware.device_link().ok_or_else(|| {
        Error::conflict(
            &["disagg", "gpu"],
            format!(
                "{} has no device link in the database to move KV caches over",
                hardware.id
            ),
        )
    })?;
    let pool = |gpus: u64| Scenario {
        gpus,
        parallel: Parallel::Tp,
        ..*scenario
    };
    let (sp, sd) = (pool(d.prefill_gpus), pool(d.decode_gpus));
    let pp = super::predictor(model, hardware, engine, &sp, serving)
        .map_err(|e| in_pool(e, "prefill"))?;
    let pd = super::predictor(model, hardware, engine, &sd, serving)
        .map_err(|e| in_pool(e, "decode"))?;
    let lim = limits(engine);
    let mut pre = Instance::new(&pp, lim, serving.prefix_hit).map_err(|e| in_pool(e, "prefill"))?;
    pre.prefill_only = true;
    let mut dec = Instance::new(&pd, lim, 0.0).map_err(|e| in_pool(e, "decode"))?;
    let mut link = Link {
        bytes_per_s: link.bytes_per_s_per_direction * engine.speed.link_efficiency,
        latency_s: engine.overheads.collective_latency_s,
        free_at: 0.0,
    };
    let front = serving.request_overhead(engine)?;
    let mut run = event_loop(&mut pre, &mut dec, &mut link, workload, serving, front)?;
    run.config = RunConfig {
        gpus: d.prefill_gpus + d.decode_gpus,
        kv_cache_bytes: dec.kv.pool_bytes,
        // both pools read the same device's tables (one device, one engine)
        kernel_table: pd.kernel_table().map(str::to_string),
        request_overhead_s: front,
        ..super::config(model, hardware, engine, serving, workload)
    };
    run.preemptions = pre.preemptions + dec.preemptions;
    Ok(run)
}

fn in_pool(e: Error, pool: &str) -> Error {
    match e {
        Error::Conflict { fields, message } => Error::Conflict {
            fields: vec!["disagg".into()].into_iter().chain(fields).collect(),
            message: format!("the {pool} pool: {message}"),
        },
        other => other,
    }
}

/// The events of both pools and the link, in time order.
fn event_loop<'p, 'a>(
    pre: &mut Instance<'p, 'a>,
    dec: &mut Instance<'p, 'a>,
    link: &mut Link,
    w: &Workload,
    serving: &Serving,
    front: f64,
) -> Result<Run> {
    let mut feed = Feed::new(w);
    let mut col = Collector::default();
    col.front = front;
    col.pools = 2;
    col.expected = w.requests;
    let mut on_link: VecDeque<(f64, Req)> = VecDeque::new();
    // each pool's running iteration: its end
    let (mut pre_end, mut dec_end): (Option<f64>, Option<f64>) = (None, None);
    let mut done = Vec::new();
    let mut ticker = super::run::Ticker::default();
    loop {
        ticker.tick(0)?;
        let next = [feed.peek(), pre_end, on_link.front().map(|x| x.0), dec_end]
            .into_iter()
            .flatten()
            .fold(f64::INFINITY, f64::min);
        if !next.is_finite() {
            break;
        }
        let t = next;
        // arrivals
        while let Some(r) = feed.pop_until(t) {
            col.arrive(r.arrival_s);
            let req = Req::new(col.requests - 1, r.arrival_s, r.prompt, r.gen_tokens);
            let fits = pre.can_ever_hold(req.prompt + 1)
                && (req.gen_tokens == 1 || dec.can_ever_hold(req.prompt + req.gen_tokens));
            if fits {
                pre.enqueue(req);
            } else {
                col.reject(r.arrival_s);
                feed.completed_at(r.arrival_s);
            }
        }
        if pre_end == Some(t) {
            pre_end = None;
            pre.finish(t, &mut done);
            for mut r in done.drain(..) {
                if r.gen_tokens == 1 {
                    col.complete(&r, t, &serving.slo, feed.exhausted());
                    ticker.completed(1);
                    ticker.completed(1);
                    feed.completed_at(t);
                    continue;
                }
                let dt = transfer_s(link, pre, dec, r.prompt);
                let start = t.max(link.free_at);
                link.free_at = start + dt;
                r.transfer_s = dt;
                on_link.push_back((link.free_at, r));
            }
        }
        while on_link.front().is_some_and(|x| x.0 <= t) {
            let Some((at, mut r)) = on_link.pop_front() else {
                break;
            };
            r.first_token_s = at;
            r.computed = r.prompt;
            r.kv_bytes = 0.0;
            r.kv_tokens = 0;
            dec.enqueue(r);
        }
        if dec_end == Some(t) {
            dec_end = None;
            dec.finish(t, &mut done);
            for r in done.drain(..) {
                col.complete(&r, t, &serving.slo, feed.exhausted());
                ticker.completed(1);
                feed.completed_at(t);
            }
        }
        for (inst, end, decode) in [
            (&mut *pre, &mut pre_end, false),
            (&mut *dec, &mut dec_end, true),
        ] {
            if end.is_none()
                && let Some(it) = inst.start(t)
            {
                col.iteration(&it, t, inst, decode)?;
                *end = Some(t + it.pass.time_s);
            }
        }
    }
    if pre.busy() || dec.busy() {
        return Err(Error::internal(
            "simulate",
            "a pool stalled with requests queued",
        ));
    }
    let kv_peak = pre.kv_peak_fraction.max(dec.kv_peak_fraction);
    ticker.flush();
    Ok(col.finish(w, serving, 0, kv_peak))
}
