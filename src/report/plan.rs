//! Human-readable text of a capacity plan (`ridgeline plan`).

use crate::plan::{Better, Config, Entry, Miss, Plan, Reason, Target};
use std::fmt;

/// How many Pareto entries the text shows (`--json` has them all).
pub const PARETO_SHOWN: usize = 15;

fn config(e: &Entry) -> String {
    format!(
        "{} x {}{}, weights {}, kv {}, engine {}, batch {}",
        e.gpus,
        e.gpu,
        if e.gpus > 1 {
            format!(" ({})", e.parallel)
        } else {
            String::new()
        },
        e.weights,
        e.kv,
        e.engine,
        e.batch
    )
}

fn ms(s: f64) -> String {
    crate::units::fmt_seconds(s)
}

/// The CLI flag a plan target comes from (`memory` for the capacity limit).
pub fn target_flag(target: Target) -> &'static str {
    match target {
        Target::MaxTtft => "--max-ttft-ms",
        Target::MaxTpot => "--max-tpot-ms",
        Target::MinThroughput => "--min-throughput",
        Target::MaxUsdPerHour => "--budget-usd-per-hour",
        other => other.name(),
    }
}

impl fmt::Display for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} x {}", self.gpus, self.gpu)?;
        if self.gpus > 1 {
            write!(f, " ({})", self.parallel)?;
        }
        write!(
            f,
            ", weights {}, kv {}, batch {}",
            self.weights, self.kv, self.batch
        )
    }
}

/// "TTFT 2.1 s > 2 s asked": how a value misses a target's limit.
fn shortfall(target: Target, value: f64, limit: f64) -> String {
    match target {
        Target::MaxTtft => format!("TTFT {} > {} asked", ms(value), ms(limit)),
        Target::MaxTpot => format!("TPOT {} > {} asked", ms(value), ms(limit)),
        Target::MinThroughput => format!("{value:.0} tokens/s < {limit:.0} asked"),
        _ => format!("${value:.2}/h > ${limit:.2}/h budget"),
    }
}

fn configurations(n: u64) -> String {
    format!("{n} configuration{}", if n == 1 { "" } else { "s" })
}

fn costs(m: &Miss) -> String {
    match m.usd_per_million_tokens {
        Some((a, b)) => format!(" (${a:.3} vs ${b:.3} per million tokens)"),
        None => String::new(),
    }
}

fn would(better: Better) -> &'static str {
    match better {
        Better::Cheaper => "would cost less",
        Better::MoreTokensPerDevice => "would produce more tokens per device",
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::BetterMiss {
                target,
                count,
                better,
                closest,
            } => {
                let head = format!("{} {}", configurations(*count), would(*better));
                match (target, closest) {
                    (Target::Memory, Some(m)) => write!(
                        f,
                        "{head} but do not fit; the closest, {}, needs {:.1} of {:.1} GB per device{}",
                        m.config,
                        m.value / 1e9,
                        m.limit / 1e9,
                        costs(m)
                    ),
                    (Target::Memory, None) => write!(f, "{head} but do not fit in memory"),
                    (t, Some(m)) => write!(
                        f,
                        "{head} but miss it; the closest miss, {}, has {}{}",
                        m.config,
                        shortfall(*t, m.value, m.limit),
                        costs(m)
                    ),
                    (t, None) => write!(f, "{head} but miss {t} (with other targets too)"),
                }
            }
            Reason::LargestBatch {
                batch,
                total_bytes,
                capacity_bytes,
                better,
            } => write!(
                f,
                "batch {batch} is the largest that fits ({:.1} of {:.1} GB per device); a larger batch {}",
                total_bytes / 1e9,
                capacity_bytes / 1e9,
                match better {
                    Better::Cheaper => "would cost less per token",
                    Better::MoreTokensPerDevice => "would produce more tokens per device",
                }
            ),
            Reason::NothingBetter { max_batch } => write!(
                f,
                "no target binds: nothing cheaper was found among the configurations searched (batch at most {max_batch})"
            ),
            Reason::NothingFits {
                smallest: Some((c, bytes, capacity)),
            } => write!(
                f,
                "nothing fits in memory: the smallest footprint is {:.1} GB per device on {c} ({:.1} GB)",
                bytes / 1e9,
                capacity / 1e9
            ),
            Reason::NothingFits { smallest: None } => {
                f.write_str("no layout of the model is possible on these devices")
            }
            Reason::BestReachable {
                target,
                limit,
                reached,
                others_met,
            } => match (reached, others_met) {
                (Some((v, c)), false) => write!(
                    f,
                    "the best reachable is {} ({c})",
                    shortfall(*target, *v, *limit)
                ),
                (None, false) => f.write_str("the best reachable is nothing (no priced device)"),
                (Some((v, c)), true) => write!(
                    f,
                    "with the other targets met, the best reachable is {} ({c})",
                    shortfall(*target, *v, *limit)
                ),
                (None, true) => f.write_str("no configuration meets the other targets either"),
            },
        }
    }
}

impl serde::Serialize for Reason {
    /// As its sentence.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

fn usd_m(e: &Entry) -> String {
    e.usd_per_million_tokens
        .map_or("n/a".into(), |c| format!("{c:.3}"))
}

/// `plan --rate`: the cheapest fleet for the rate, then the Pareto front per replica.
fn render_rate(p: &Plan, t: &crate::plan::RateTarget) -> String {
    let mut targets = vec![format!("{} req/s", crate::units::sig3(t.rate_per_s))];
    if let Some(x) = t.p99_ttft_s {
        targets.push(format!("p99 TTFT <= {}", ms(x)));
    }
    if let Some(x) = t.p99_tpot_s {
        targets.push(format!("p99 TPOT <= {}", ms(x)));
    }
    let mut s = format!(
        "Plan for {} at {}: prompt {}, gen {} tokens per request (simulated: {} requests per rate tried, seed {})\nEvaluated {} layouts, {} serve a rate within the targets\n\n",
        p.model,
        targets.join(", "),
        p.prompt,
        p.gen_tokens,
        t.requests,
        t.seed,
        p.evaluated,
        p.feasible
    );
    let line = |e: &Entry| {
        format!(
            "{} replica{} of {} (one serves {} req/s, held by {}; p99 TTFT {}, p99 TPOT {})",
            e.replicas.unwrap_or(0),
            if e.replicas == Some(1) { "" } else { "s" },
            config(e),
            crate::units::sig3(e.rate_per_replica.unwrap_or(0.0)),
            e.limited_by.unwrap_or("-"),
            ms(e.ttft_s),
            ms(e.tpot_s)
        )
    };
    match &p.best {
        Some(b) => {
            s.push_str(&format!("Best: {}\n", line(b)));
            if let (Some(c), Some(h)) = (b.usd_per_million_tokens, b.usd_per_hour) {
                s.push_str(&format!(
                    "  ${c:.3} per million output tokens, ${h:.2}/h for {} devices\n",
                    b.gpus * b.replicas.unwrap_or(1)
                ));
            }
        }
        None => s.push_str("No layout serves the targets, even at a vanishing rate.\n"),
    }
    if !p.pareto.is_empty() {
        s.push_str(&format!(
            "\nPareto front (cost vs p99 TPOT vs rate per replica): {} configurations, cheapest first\n",
            p.pareto.len()
        ));
        for e in p.pareto.iter().take(PARETO_SHOWN) {
            s.push_str(&format!("  ${:>8}  {}\n", usd_m(e), line(e)));
        }
    }
    s
}

/// The default `ridgeline plan` output: the winner and why, then the Pareto front.
pub fn render(p: &Plan) -> String {
    if let Some(t) = &p.rate {
        return render_rate(p, t);
    }
    let t = &p.targets;
    let mut targets = Vec::new();
    if let Some(x) = t.max_ttft_s {
        targets.push(format!("TTFT <= {}", ms(x)));
    }
    if let Some(x) = t.max_tpot_s {
        targets.push(format!("TPOT <= {}", ms(x)));
    }
    if let Some(x) = t.min_output_tokens_per_s {
        targets.push(format!("output >= {x:.0} tokens/s"));
    }
    if let Some(x) = t.max_usd_per_hour {
        targets.push(format!("price <= ${x:.2}/h"));
    }
    let mut s = format!(
        "Plan for {}: prompt {}, gen {} tokens per request\nTargets: {}\nEvaluated {} configurations, {} feasible ({} layouts skipped as impossible for this model)\n\n",
        p.model,
        p.prompt,
        p.gen_tokens,
        if targets.is_empty() {
            "none (cheapest that fits)".to_string()
        } else {
            targets.join(", ")
        },
        p.evaluated,
        p.feasible,
        p.skipped_layouts
    );
    match &p.best {
        Some(b) => {
            s.push_str(&format!("Best: {}\n", config(b)));
            match (b.usd_per_million_tokens, b.usd_per_hour) {
                (Some(c), Some(h)) => s.push_str(&format!(
                    "  ${c:.3} per million output tokens (${h:.2}/h for {} device{})\n",
                    b.gpus,
                    if b.gpus == 1 { "" } else { "s" }
                )),
                _ => {
                    s.push_str("  no price for this device: chosen by output tokens/s per device\n")
                }
            }
            s.push_str(&format!(
                "  TTFT {}, TPOT {}, {:.0} output tokens/s, {:.1} of {:.1} GB per device\n",
                ms(b.ttft_s),
                ms(b.tpot_s),
                b.output_tokens_per_s,
                b.total_bytes / 1e9,
                b.capacity_bytes / 1e9
            ));
            for why in &p.binding {
                s.push_str(&format!(
                    "Why this one: {} binds: {}\n",
                    target_flag(why.target),
                    why.reason
                ));
            }
        }
        None => {
            s.push_str("No configuration meets the targets.\n");
            for why in &p.binding {
                s.push_str(&format!("  {}: {}\n", target_flag(why.target), why.reason));
            }
        }
    }
    if !p.pareto.is_empty() {
        s.push_str(&format!(
            "\nPareto front (cost vs TPOT vs throughput): {} configurations, cheapest first\n",
            p.pareto.len()
        ));
        s.push_str(&format!(
            "  {:>9}  {:>9}  {:>10}  {:>9}  config\n",
            "$/M tok", "TPOT", "TTFT", "tok/s"
        ));
        for e in p.pareto.iter().take(PARETO_SHOWN) {
            s.push_str(&format!(
                "  {:>9}  {:>9}  {:>10}  {:>9.0}  {}\n",
                usd_m(e),
                ms(e.tpot_s),
                ms(e.ttft_s),
                e.output_tokens_per_s,
                config(e)
            ));
        }
        if p.pareto.len() > PARETO_SHOWN {
            s.push_str(&format!(
                "  ... {} more (--json lists them all)\n",
                p.pareto.len() - PARETO_SHOWN
            ));
        }
    }
    s
}
