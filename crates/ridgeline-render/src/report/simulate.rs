//! Human-readable text of a serving simulation (`ridgeline simulate`): one run in detail,
//! or a table of rates with the saturation knee and what binds there.

use crate::simulate::{Binding, Knee, RateSweep, Run, Stats};
use crate::units::{fixed, fmt_gb, fmt_seconds, sig3};
use std::fmt::Write as _;

fn pct(x: f64) -> String {
    format!("{:.0}%", 100.0 * x)
}

fn limit(v: Option<u64>) -> String {
    v.map_or("none".into(), |n| n.to_string())
}

/// The deployment line.
fn deployment(r: &Run) -> String {
    let c = &r.config;
    let pools = match c.disagg {
        Some(d) => format!(
            "prefill pool {} x {} + decode pool {} x {}",
            d.prefill_gpus, c.gpu, d.decode_gpus, c.gpu
        ),
        None => format!("{} x {}", c.gpus, c.gpu),
    };
    let tables = match &c.kernel_table {
        None => String::new(),
        Some(d) if *d == c.gpu => "; iterations costed on its measured kernel tables".into(),
        Some(d) => format!("; iterations costed on {d}'s measured kernel tables (a sibling's)"),
    };
    let front = if c.request_overhead_s > 0.0 {
        format!(
            "; each TTFT and end-to-end latency holds {} of the server's front end",
            fmt_seconds(c.request_overhead_s)
        )
    } else {
        String::new()
    };
    format!(
        "Serving {} on {pools}, engine {} (max_num_seqs {}, max_batched_tokens {}, KV blocks of {} tokens, KV cache {} per device{}){tables}{front}",
        c.model,
        c.engine,
        limit(c.max_num_seqs),
        limit(c.max_batched_tokens),
        c.kv_block_tokens,
        fmt_gb(c.kv_cache_bytes),
        if c.prefix_hit > 0.0 {
            format!(", prefix hit {}", pct(c.prefix_hit))
        } else {
            String::new()
        }
    )
}

fn workload(r: &Run) -> String {
    let how = match (r.rate_per_s, r.concurrency) {
        (Some(rate), _) => format!("Poisson arrivals at {} req/s", sig3(rate)),
        (_, Some(c)) => format!("a closed loop of {c} users"),
        _ => "a trace".to_string(),
    };
    format!(
        "Workload: {how}, {} requests (seed {})",
        r.requests, r.config.seed
    )
}

fn row(out: &mut String, name: &str, s: &Stats) {
    let _ = writeln!(
        out,
        "  {name:<8} {:>11} {:>11} {:>11} {:>11}",
        fmt_seconds(s.mean),
        fmt_seconds(s.p50),
        fmt_seconds(s.p90),
        fmt_seconds(s.p99)
    );
}

/// One sentence on what held a run back.
pub(crate) fn binding_text(b: &Binding) -> String {
    let bound = b
        .iteration_bound
        .map(|x| {
            format!(
                "{x}-bound ({} of their time)",
                pct(b.iteration_bound_fraction)
            )
        })
        .unwrap_or_else(|| "empty".into());
    let queue = match b.queue_limit() {
        Some(l) => {
            let share = match l {
                "max_num_seqs" => b.max_num_seqs,
                "max_batched_tokens" => b.max_batched_tokens,
                _ => b.kv_cache,
            };
            let what = match l {
                "max_num_seqs" => "max_num_seqs sequences were running",
                "max_batched_tokens" => "the token budget (max_batched_tokens) was spent",
                _ => "the KV cache was full",
            };
            format!(
                "requests waited because {what} ({} of the busy time)",
                pct(share)
            )
        }
        None => "no limit kept requests waiting".into(),
    };
    format!(
        "the engine computed {} of the time; its iterations were {bound}; {queue}",
        pct(b.busy_fraction)
    )
}

/// The text of one run.
pub(crate) fn run(r: &Run) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", deployment(r));
    let _ = writeln!(out, "{}", workload(r));
    let _ = writeln!(
        out,
        "Completed {} of {} in {}{}: {} req/s, {} output tokens/s, {} input tokens/s",
        r.completed,
        r.requests,
        fmt_seconds(r.duration_s),
        if r.rejected > 0 {
            format!(" ({} refused: too long for the KV cache)", r.rejected)
        } else {
            String::new()
        },
        sig3(r.throughput.requests_per_s),
        sig3(r.throughput.output_tokens_per_s),
        sig3(r.throughput.input_tokens_per_s)
    );
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "  {:<8} {:>11} {:>11} {:>11} {:>11}",
        "", "mean", "p50", "p90", "p99"
    );
    row(&mut out, "TTFT", &r.ttft_s);
    row(&mut out, "TPOT", &r.tpot_s);
    row(&mut out, "E2E", &r.e2e_s);
    row(&mut out, "queue", &r.queue_s);
    if let Some(t) = &r.kv_transfer_s {
        row(&mut out, "KV xfer", t);
    }
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "Requests in the system {} on average; batch {} on average; KV cache peak {}; {} preemption{}",
        fixed(r.mean_requests_in_system, 2),
        fixed(r.mean_batch, 1),
        pct(r.kv_peak_fraction),
        r.preemptions,
        if r.preemptions == 1 { "" } else { "s" }
    );
    if let Some(g) = &r.goodput {
        let _ = writeln!(
            out,
            "Goodput: {} req/s meet the SLOs ({} of the completed requests)",
            sig3(g.requests_per_s),
            pct(g.fraction)
        );
    }
    if r.rate_per_s.is_some() {
        let _ = writeln!(
            out,
            "{}: it sustained {} req/s while requests arrived",
            if r.saturated {
                "Saturated"
            } else {
                "Keeping up"
            },
            sig3(r.sustained_requests_per_s)
        );
    }
    let _ = writeln!(out, "What binds: {}.", binding_text(&r.binding));
    out
}

/// The sentence on the knee of a sweep.
pub fn knee_text(sweep: &RateSweep) -> String {
    match &sweep.knee {
        Some(Knee {
            rate_per_s,
            capacity_requests_per_s,
            ..
        }) => {
            let at = sweep
                .rows
                .iter()
                .find(|r| r.rate_per_s == Some(*rate_per_s))
                .map(|r| binding_text(&r.binding))
                .unwrap_or_default();
            format!(
                "Saturation knee: from {} req/s the deployment falls behind its arrivals and queues grow with every request (at most {} req/s were sustained beyond it: its capacity); there {at}.",
                sig3(*rate_per_s),
                sig3(*capacity_requests_per_s)
            )
        }
        None => {
            let top = sweep.rows.iter().max_by(|a, b| {
                a.rate_per_s
                    .unwrap_or(0.0)
                    .total_cmp(&b.rate_per_s.unwrap_or(0.0))
            });
            match top {
                Some(r) => format!(
                    "No rate saturated the deployment: at the highest, {} req/s, {}.",
                    sig3(r.rate_per_s.unwrap_or(0.0)),
                    binding_text(&r.binding)
                ),
                None => String::new(),
            }
        }
    }
}

/// The text of a rate sweep: the deployment, one line per rate, the knee.
pub fn sweep(s: &RateSweep) -> String {
    let Some(first) = s.rows.first() else {
        return String::new();
    };
    if s.rows.len() == 1 {
        return run(first);
    }
    let mut out = String::new();
    let _ = writeln!(out, "{}", deployment(first));
    let _ = writeln!(
        out,
        "Workload: Poisson arrivals, {} requests per rate (seed {}); the same requests at every rate",
        first.requests, first.config.seed
    );
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "{:>8} {:>8} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>7} {:>7} {:>7}",
        "rate/s",
        "done/s",
        "out tok/s",
        "TTFT p50",
        "TTFT p99",
        "TPOT p50",
        "TPOT p99",
        "queue p50",
        "batch",
        "KV peak",
        "preempt"
    );
    for r in &s.rows {
        let _ = writeln!(
            out,
            "{:>8} {:>8} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>7} {:>7} {:>7}{}",
            sig3(r.rate_per_s.unwrap_or(0.0)),
            sig3(r.throughput.requests_per_s),
            sig3(r.throughput.output_tokens_per_s),
            fmt_seconds(r.ttft_s.p50),
            fmt_seconds(r.ttft_s.p99),
            fmt_seconds(r.tpot_s.p50),
            fmt_seconds(r.tpot_s.p99),
            fmt_seconds(r.queue_s.p50),
            fixed(r.mean_batch, 1),
            pct(r.kv_peak_fraction),
            r.preemptions,
            if r.saturated { "  saturated" } else { "" }
        );
    }
    let _ = writeln!(out);
    let _ = writeln!(out, "{}", knee_text(s));
    out
}
