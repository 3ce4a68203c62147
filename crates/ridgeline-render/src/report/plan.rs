//! Human-readable text of a capacity plan (`ridgeline plan`).

pub use crate::plan::target_flag;
use crate::plan::{Entry, Plan, PriceBasis, Unserved};
use crate::units::fmt_seconds;

/// How many Pareto entries the text shows (`--json` has them all).
pub(crate) const PARETO_SHOWN: usize = 15;

fn config(e: &Entry) -> String {
    format!(
        "{} x {}{}, weights {}, kv {}, engine {}, batch {}",
        e.gpus,
        e.gpu,
        split(e.gpus, e.parallel, e.ep),
        e.weights,
        e.kv,
        e.engine,
        e.batch
    )
}

/// Where the best's price comes from, its age, and buy or rent, as lines under it.
fn price_notes(p: &Plan, b: &Entry) -> String {
    let mut s = String::new();
    let o = &p.ownership;
    let assumptions = format!(
        "{} years, {:.0}% utilisation, PUE {}, ${}/kWh",
        crate::units::sig3(o.life_years),
        o.utilisation * 100.0,
        crate::units::sig3(o.pue),
        crate::units::sig3(o.usd_per_kwh)
    );
    match b.price_basis {
        Some(PriceBasis::Rent) => s.push_str(&format!(
            "  price: rented{}, read {}\n",
            b.price_provider
                .as_deref()
                .map(|p| format!(" from {p}"))
                .unwrap_or_default(),
            b.price_date.as_deref().unwrap_or("undated")
        )),
        Some(PriceBasis::Own) => s.push_str(&format!(
            "  price: owned (--price-basis own): purchase price of {}, written off over {assumptions}\n",
            b.price_date.as_deref().unwrap_or("undated")
        )),
        Some(term @ (PriceBasis::Committed1y | PriceBasis::Committed3y)) => s.push_str(&format!(
            "  price: rented under a {}-year commitment (--price-basis {}){}, read {}\n",
            if term == PriceBasis::Committed1y { "one" } else { "three" },
            term.name(),
            b.price_provider
                .as_deref()
                .map(|p| format!(" from {p}"))
                .unwrap_or_default(),
            b.price_date.as_deref().unwrap_or("undated")
        )),
        None => {}
    }
    if let (Some(own), Some(PriceBasis::Rent)) = (b.own_usd_per_hour, b.price_basis) {
        let rent = b.usd_per_hour.unwrap_or(f64::NAN);
        let when = match b.breakeven_utilisation {
            Some(u) if u <= 1.0 => format!("buying wins from {:.0}% utilisation up", u * 100.0),
            _ => "renting wins at any utilisation".to_string(),
        };
        s.push_str(&format!(
            "  buy or rent: owning costs ${own:.2} per hour of use against ${rent:.2} rented ({assumptions}); {when}\n"
        ));
    }
    for n in &p.near_ties {
        s.push_str(&format!("  chosen on a {n}\n"));
    }
    s
}

/// Feasible configurations on devices without a price: shown, marked, ranked by the
/// devices they need.
fn unpriced_section(p: &Plan, line: impl Fn(&Entry) -> String) -> String {
    if p.unpriced.is_empty() {
        return String::new();
    }
    let mut s = format!(
        "\nNot priced ({} device{}; ranked by devices needed, not against the priced; give a price with --price-file):\n",
        p.unpriced.len(),
        if p.unpriced.len() == 1 { "" } else { "s" }
    );
    for e in p.unpriced.iter().take(PARETO_SHOWN) {
        let own = e
            .own_usd_per_hour
            .map(|h| {
                format!("; owning it: ${h:.2} per hour of use (--price-basis own ranks by that)")
            })
            .unwrap_or_default();
        s.push_str(&format!("  unpriced  {}{own}\n", line(e)));
    }
    if p.unpriced.len() > PARETO_SHOWN {
        s.push_str(&format!(
            "  ... {} more (--json lists them all)\n",
            p.unpriced.len() - PARETO_SHOWN
        ));
    }
    s
}

fn usd_m(e: &Entry) -> String {
    e.usd_per_million_tokens
        .map_or("n/a".into(), |c| format!("{c:.3}"))
}

/// `plan --rate`: the cheapest fleet for the rate, then the Pareto front per replica.
/// The lines saying that every configuration speculates, and who drafts, that the
/// expert-parallel ones overlap their all-to-all, and the imbalance of their routing
/// (empty when none of these is asked for).
fn speculation(p: &Plan) -> String {
    let mut s = match &p.speculative {
        Some(sp) => format!(
            "Speculative decoding in every configuration: k {}, accept {} (draft {})\n",
            sp.k,
            sp.accept,
            sp.draft.as_deref().unwrap_or("the model's own head")
        ),
        None => String::new(),
    };
    if p.overlap_ep {
        s.push_str(
            "Expert-parallel configurations hide their all-to-all behind computation (--overlap-ep: two micro-batches)\n",
        );
    }
    if p.expert_imbalance != 1.0 {
        s.push_str(&format!(
            "Expert-parallel configurations: the busiest group at least {}x the mean's routed rows (--expert-imbalance; fewer groups than that are not searched)\n",
            crate::units::sig3(p.expert_imbalance)
        ));
    }
    s
}

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
        "Plan for {} at {}: prompt {}, gen {} tokens per request (simulated: {} requests per rate tried, seed {})\n{}Evaluated {} layout{}, {} serve a rate within the targets{}\n\n",
        p.model,
        targets.join(", "),
        p.prompt,
        p.gen_tokens,
        t.requests,
        t.seed,
        speculation(p),
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
            if b.usd_per_hour.is_none() {
                s.push_str(&format!(
                    "  no prices: chosen by the fewest devices in all ({})\n",
                    b.gpus * b.replicas.unwrap_or(1)
                ));
            }
            s.push_str(&price_notes(p, b));
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
    s.push_str(&unpriced_section(p, line));
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

/// How a layout splits the model: ` (tp)`, ` (pp)`, ` (tp, ep 8)`, or nothing for one
/// device.
fn split(gpus: u64, parallel: crate::memory::Parallel, ep: u64) -> String {
    match (gpus > 1, ep > 1) {
        (_, true) => format!(" ({parallel}, ep {ep})"),
        (true, false) => format!(" ({parallel})"),
        (false, false) => String::new(),
    }
}

/// One layout that serves no rate, and why.
fn unserved_line(u: &Unserved) -> String {
    format!(
        "{} x {}{}, weights {}, kv {}, engine {}: {}",
        u.gpus,
        u.gpu,
        split(u.gpus, u.parallel, u.ep),
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
        "Plan for {}: prompt {}, gen {} tokens per request\nTargets: {}\n{}Evaluated {} configurations, {} feasible ({} layouts skipped as impossible for this model)\n\n",
        p.model,
        p.prompt,
        p.gen_tokens,
        if targets.is_empty() {
            "none (cheapest that fits)".to_string()
        } else {
            targets.join(", ")
        },
        speculation(p),
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
            s.push_str(&price_notes(p, b));
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
    s.push_str(&unpriced_section(p, |e| {
        format!(
            "{}: TPOT {}, TTFT {}, {:.0} output tokens/s",
            config(e),
            fmt_seconds(e.tpot_s),
            fmt_seconds(e.ttft_s),
            e.output_tokens_per_s
        )
    }));
    s
}
