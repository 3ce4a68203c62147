//! Human-readable text of a capacity plan (`ridgeline plan`).

pub use crate::plan::target_flag;
use crate::plan::{Entry, Plan, Unserved};
use crate::units::fmt_seconds;

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

fn usd_m(e: &Entry) -> String {
    e.usd_per_million_tokens
        .map_or("n/a".into(), |c| format!("{c:.3}"))
}

/// `plan --rate`: the cheapest fleet for the rate, then the Pareto front per replica.
fn render_rate(p: &Plan, t: &crate::plan::RateTarget) -> String {
    let unserved = p.unserved.as_deref().unwrap_or_default();
    let mut targets = vec![format!("{} req/s", crate::units::sig3(t.rate_per_s))];
    if let Some(x) = t.p99_ttft_s {
        targets.push(format!("p99 TTFT <= {}", fmt_seconds(x)));
    }
    if let Some(x) = t.p99_tpot_s {
        targets.push(format!("p99 TPOT <= {}", fmt_seconds(x)));
    }
    let mut s = format!(
        "Plan for {} at {}: prompt {}, gen {} tokens per request (simulated: {} requests per rate tried, seed {})\nEvaluated {} layout{}, {} serve a rate within the targets{}\n\n",
        p.model,
        targets.join(", "),
        p.prompt,
        p.gen_tokens,
        t.requests,
        t.seed,
        p.evaluated,
        if p.evaluated == 1 { "" } else { "s" },
        p.feasible,
        match unserved.len() {
            0 => String::new(),
            n => format!(", {n} serve none (listed last)"),
        }
    );
    let line = |e: &Entry| {
        format!(
            "{} replica{} of {} (one serves {} req/s, held by {}; p99 TTFT {}, p99 TPOT {})",
            e.replicas.unwrap_or(0),
            if e.replicas == Some(1) { "" } else { "s" },
            config(e),
            crate::units::sig3(e.rate_per_replica.unwrap_or(0.0)),
            limit_words(e.limited_by),
            fmt_seconds(e.ttft_s),
            fmt_seconds(e.tpot_s)
        )
    };
    match &p.best {
        Some(b) => {
            s.push_str(&format!("Best: {}\n", line(b)));
            if let (Some(c), Some(h)) = (b.usd_per_million_tokens, b.usd_per_hour) {
                s.push_str(&format!(
                    "  ${c:.3} per million output tokens, ${h:.2}/h for {} device{}\n",
                    b.gpus * b.replicas.unwrap_or(1),
                    if b.gpus * b.replicas.unwrap_or(1) == 1 {
                        ""
                    } else {
                        "s"
                    }
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
    if !unserved.is_empty() {
        s.push_str(&format!(
            "\nServe no rate within the targets: {} layout{}\n",
            unserved.len(),
            if unserved.len() == 1 { "" } else { "s" }
        ));
        for u in unserved.iter().take(PARETO_SHOWN) {
            s.push_str(&format!("  {}\n", unserved_line(u)));
        }
        if unserved.len() > PARETO_SHOWN {
            s.push_str(&format!(
                "  ... {} more (--json lists them all)\n",
                unserved.len() - PARETO_SHOWN
            ));
        }
    }
    s
}

/// What holds a replica's rate, in words (`limited_by` in JSON keeps the key names).
fn limit_words(limited_by: Option<&str>) -> &'static str {
    match limited_by {
        Some("p99_ttft_s") => "the p99 TTFT target",
        Some("p99_tpot_s") => "the p99 TPOT target",
        Some("saturation") => "saturation",
        _ => "-",
    }
}

/// One layout that serves no rate, and why.
fn unserved_line(u: &Unserved) -> String {
    format!(
        "{} x {}{}, weights {}, kv {}, engine {}: {}",
        u.gpus,
        u.gpu,
        if u.gpus > 1 {
            format!(" ({})", u.parallel)
        } else {
            String::new()
        },
        u.weights,
        u.kv,
        u.engine,
        u.reason
    )
}

/// The default `ridgeline plan` output: the winner and why, then the Pareto front.
pub fn render(p: &Plan) -> String {
    if let Some(t) = &p.rate {
        return render_rate(p, t);
    }
    let t = &p.targets;
    let mut targets = Vec::new();
    if let Some(x) = t.max_ttft_s {
        targets.push(format!("TTFT <= {}", fmt_seconds(x)));
    }
    if let Some(x) = t.max_tpot_s {
        targets.push(format!("TPOT <= {}", fmt_seconds(x)));
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
                fmt_seconds(b.ttft_s),
                fmt_seconds(b.tpot_s),
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
                fmt_seconds(e.tpot_s),
                fmt_seconds(e.ttft_s),
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
