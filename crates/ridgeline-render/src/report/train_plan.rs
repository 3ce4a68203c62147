//! Text, Markdown and plain-language explanation of a training plan (`ridgeline plan
//! --train`); the sentences of its reasons are the plan crate's (`plan::train::sentences`).

pub use crate::plan::train::sentences::{config, hours, layout, method_name, target_flag, usd};
use crate::plan::train::sentences::{devices, gb, usd_opt};
use crate::plan::train::{Answer, NextCheaper, OptionRole, OptionStory, TrainEntry, TrainPlan};
use crate::train::{Method, Offload};
use crate::units::sig3;

/// How many Pareto entries the text shows (`--json` has them all).
pub(crate) const PARETO_SHOWN: usize = 12;

/// A count of tokens with a K/M/B/T suffix, as `--tokens` takes them (`200M`, `1.5B`).
pub(crate) fn tokens(n: f64) -> String {
    for (scale, s) in [(1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")] {
        if n >= scale {
            let v = format!("{:.2}", n / scale);
            let v = v.trim_end_matches('0').trim_end_matches('.');
            return format!("{v}{s}");
        }
    }
    format!("{n:.0}")
}

/// How sharding brings the whole model's states to one device's: `ZeRO-3 over 2
/// a100-80gb-sxm brings it to 54.0 GB each`.
fn sharding(o: &OptionStory) -> String {
    let e = &o.entry;
    let mut how = Vec::new();
    if e.tp > 1 {
        how.push(format!("tensor parallelism over {}", e.tp));
    }
    if e.pp > 1 {
        how.push(format!("{} pipeline stages", e.pp));
    }
    if e.zero > 0 && e.dp > 1 {
        how.push(format!("ZeRO-{} over {} data-parallel ranks", e.zero, e.dp));
    }
    if e.offload == Offload::Cpu {
        how.push(format!(
            "the optimizer states on the CPU ({} per device)",
            gb(o.host_states_per_device_bytes)
        ));
    }
    if how.is_empty() {
        return format!(
            "one device holds them all ({})",
            gb(o.states_per_device_bytes)
        );
    }
    format!(
        "{} bring{} it to {} on each {}",
        how.join(" and "),
        if how.len() == 1 { "s" } else { "" },
        gb(o.states_per_device_bytes),
        e.gpu
    )
}

/// The next cheaper configuration and what it lacks.
fn next_cheaper(n: &Option<NextCheaper>) -> String {
    match n {
        None => "Nothing searched is cheaper.".into(),
        Some(NextCheaper {
            entry, lack: None, ..
        }) => format!(
            "The next cheaper, {} at {}, qualifies too but takes {}.",
            config(entry),
            usd_opt(entry.usd),
            hours(entry.hours)
        ),
        Some(NextCheaper {
            entry,
            lack: Some(lack),
            ..
        }) => format!(
            "The next cheaper, {} at {}, {lack}.",
            config(entry),
            usd_opt(entry.usd)
        ),
    }
}

/// What binds one option, in plain language: its model states per parameter, what
/// sharding leaves on each device, its whole footprint against the capacity, and what
/// the next cheaper option lacks.
pub fn explain_option(o: &OptionStory) -> String {
    let e = &o.entry;
    let role = match o.role {
        OptionRole::Best => "Best (cheapest)".to_string(),
        OptionRole::Fastest => "Fastest".to_string(),
        OptionRole::Cheapest => format!("Cheapest {}", method_name(e.method)),
    };
    let trained = if e.method == Method::Full {
        String::new()
    } else {
        format!(", {} of them trained", tokens(o.trainable_params))
    };
    format!(
        "{role}: {} in {} for {}. {} needs {} bytes per parameter of model states: {} for {} parameters{trained}; {}. With {} of activations and {} of overhead it takes {} of {} per device. {}",
        config(e),
        hours(e.hours),
        usd_opt(e.usd),
        capitalized(method_name(e.method)),
        trimmed(sig3(o.state_bytes_per_param)),
        gb(o.model_states_bytes),
        tokens(o.params as f64),
        sharding(o),
        gb(o.activations_bytes),
        gb(o.overhead_bytes),
        gb(e.memory_per_device_bytes),
        gb(e.capacity_bytes),
        next_cheaper(&o.next_cheaper)
    )
}

/// `text` broken at spaces into lines of at most `width` characters (a longer word
/// stays whole), every line after the first starting with `indent`.
pub(crate) fn wrap(text: &str, width: usize, indent: &str) -> String {
    let mut out = String::new();
    let mut line = 0usize;
    for word in text.split(' ') {
        let len = word.chars().count();
        if line > 0 && line + 1 + len > width {
            out.push('\n');
            out.push_str(indent);
            line = indent.chars().count();
        } else if line > 0 {
            out.push(' ');
            line += 1;
        }
        out.push_str(word);
        line += len;
    }
    out
}

/// A decimal without trailing zeros (`16.0` -> `16`, `2.50` -> `2.5`).
fn trimmed(s: String) -> String {
    if s.contains('.') && !s.contains('e') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

fn capitalized(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map_or_else(String::new, |f| f.to_uppercase().chain(c).collect())
}

/// The header lines: what was asked and searched.
fn header(p: &TrainPlan) -> String {
    let t = &p.targets;
    let mut targets = Vec::new();
    if let Some(h) = t.max_hours {
        targets.push(format!("at most {}", hours(h)));
    }
    if let Some(b) = t.budget_usd {
        targets.push(format!("at most {}", usd(b)));
    }
    let methods: Vec<&str> = p.methods.iter().map(|m| method_name(*m)).collect();
    format!(
        "Training plan for {}: {} tokens of {}-token sequences, {} sequences per step\nMethods: {}; targets: {}\nEvaluated {} configurations, {} feasible ({} layouts and options skipped as impossible)\n",
        p.model,
        tokens(p.tokens as f64),
        p.seq,
        p.global_batch,
        methods.join(", "),
        if targets.is_empty() {
            "none (cheapest that fits)".into()
        } else {
            targets.join(", ")
        },
        p.evaluated,
        p.feasible,
        p.skipped_layouts
    )
}

/// One answer (best or fastest) with its numbers.
fn answer(label: &str, e: &TrainEntry) -> String {
    format!(
        "{label}: {}\n  {} for {} ({}/h), {} tokens/s, MFU {:.0} %, {} of {} per device\n",
        config(e),
        hours(e.hours),
        usd_opt(e.usd),
        e.usd_per_hour.map_or("n/a".into(), usd),
        sig3(e.tokens_per_s),
        100.0 * e.mfu,
        gb(e.memory_per_device_bytes),
        gb(e.capacity_bytes)
    )
}

/// The default `plan --train` output: the answers and what binds them, what binds each
/// highlighted option, then the Pareto front.
pub fn render(p: &TrainPlan) -> String {
    let mut s = header(p);
    s.push('\n');
    for (label, e) in [("Best (cheapest)", &p.best), ("Fastest", &p.fastest)] {
        if let Some(e) = e {
            s.push_str(&answer(label, e));
        }
    }
    if p.best.is_none() {
        s.push_str("No configuration meets the targets.\n");
    }
    for n in &p.near_ties {
        s.push_str(&wrap(&format!("Chosen on a {n}"), 96, "  "));
        s.push('\n');
    }
    for b in &p.binding {
        let who = match b.answer {
            Answer::Best => "Why the best",
            Answer::Fastest => "Why the fastest",
            Answer::None => "Why none",
        };
        let line = format!("{who}: {} binds: {}", target_flag(b.target), b.reason);
        s.push_str(&wrap(&line, 96, "  "));
        s.push('\n');
    }
    if !p.options.is_empty() {
        s.push_str("\nWhat binds each option:\n");
        for o in &p.options {
            s.push_str(&format!("- {}\n", wrap(&explain_option(o), 96, "  ")));
        }
    }
    if !p.pareto.is_empty() {
        s.push_str(&format!(
            "\nPareto front (cost vs time): {} configuration{}, cheapest first\n  {:>10}  {:>16}  {:>9}  config\n",
            p.pareto.len(),
            if p.pareto.len() == 1 { "" } else { "s" },
            "cost",
            "time",
            "tok/s"
        ));
        for e in p.pareto.iter().take(PARETO_SHOWN) {
            s.push_str(&format!(
                "  {:>10}  {:>16}  {:>9}  {}\n",
                usd_opt(e.usd),
                hours(e.hours),
                sig3(e.tokens_per_s),
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

/// The plan as Markdown: the answers, the explanation and the Pareto front as a table.
pub fn markdown(p: &TrainPlan) -> String {
    let h = header(p);
    let mut lines = h.lines();
    let title = lines.next().unwrap_or_default().replacen(
        &format!("for {}:", p.model),
        &format!("for `{}`:", p.model),
        1,
    );
    let mut s = format!("## {title}\n\n");
    for line in lines {
        s.push_str(&format!("{line}  \n"));
    }
    s.push('\n');
    for (label, e) in [("Best (cheapest)", &p.best), ("Fastest", &p.fastest)] {
        if let Some(e) = e {
            let a = answer(label, e);
            let mut lines = a.lines();
            let head = lines.next().unwrap_or_default();
            let rest: Vec<&str> = lines.map(str::trim).collect();
            s.push_str(&format!("**{head}**  \n{}\n\n", rest.join(" ")));
        }
    }
    if p.best.is_none() {
        s.push_str("**No configuration meets the targets.**\n\n");
    }
    for n in &p.near_ties {
        s.push_str(&format!("- Chosen on a {n}\n"));
    }
    for b in &p.binding {
        s.push_str(&format!(
            "- **{}** ({}): {}\n",
            b.answer,
            target_flag(b.target),
            b.reason
        ));
    }
    if !p.options.is_empty() {
        s.push_str("\n### What binds each option\n\n");
        for o in &p.options {
            s.push_str(&format!("- {}\n", explain_option(o)));
        }
    }
    if !p.pareto.is_empty() {
        s.push_str("\n### Pareto front (cost vs time)\n\n| cost | time | tokens/s | method | devices | layout |\n|---:|---:|---:|---|---|---|\n");
        for e in &p.pareto {
            s.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} |\n",
                usd_opt(e.usd),
                hours(e.hours),
                sig3(e.tokens_per_s),
                method_name(e.method),
                devices(e),
                layout(e)
            ));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_for_people() {
        assert_eq!(tokens(2e8), "200M");
        assert_eq!(tokens(1.5e9), "1.5B");
        assert_eq!(tokens(2e12), "2T");
        assert_eq!(tokens(6_738_415_616.0), "6.74B");
        assert_eq!(hours(0.5), "30.0 min");
        assert_eq!(hours(13.25), "13.2 h");
        assert_eq!(hours(72.0), "72.0 h (3.00 days)");
        assert_eq!(usd(2.5), "$2.50");
        assert_eq!(usd(437.123), "$437.12");
        assert_eq!(usd(12345.4), "$12,345");
        assert_eq!(
            wrap("one two three four", 9, "  "),
            "one two\n  three\n  four"
        );
        assert_eq!(capitalized("full fine-tune"), "Full fine-tune");
        assert_eq!(trimmed(sig3(16.0)), "16");
        assert_eq!(trimmed(sig3(0.58)), "0.58");
    }
}
