//! Human-readable text of a capacity plan (`ridgeline plan`).

use crate::plan::{Entry, Plan};

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
pub fn target_flag(target: &str) -> &str {
    match target {
        "max_ttft_s" => "--max-ttft-ms",
        "max_tpot_s" => "--max-tpot-ms",
        "min_output_tokens_per_s" => "--min-throughput",
        "max_usd_per_hour" => "--budget-usd-per-hour",
        other => other,
    }
}

fn usd_m(e: &Entry) -> String {
    e.usd_per_million_tokens
        .map_or("n/a".into(), |c| format!("{c:.3}"))
}

/// The default `ridgeline plan` output: the winner and why, then the Pareto front.
pub fn render(p: &Plan) -> String {
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
                    why.message
                ));
            }
        }
        None => {
            s.push_str("No configuration meets the targets.\n");
            for why in &p.binding {
                s.push_str(&format!("  {}: {}\n", target_flag(why.target), why.message));
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
