//! Writing fitted engines as an engines TOML: every table preceded by comments on where
//! its numbers came from (rows, factors with intervals, residuals after the fit).
//!
//! [`engines_file`] writes the whole database (`data/engines.toml` is its output for
//! the bundled measurements); [`engines_toml`] only the engines just fitted, for
//! `--engine-file`. Lines starting with `#` are the writer's; lines starting with `##`
//! are hand-written remarks, kept where they stand (at the top, or above an engine's
//! table) when a file is written over.

use super::{Calibration, Case, EngineFit, Kind, Mapped, median_abs, predict_case};
use crate::engine::{Engine, EngineDb};
use crate::error::{Error, Result};
use std::collections::BTreeMap;

/// Width comment lines are wrapped at.
const WIDTH: usize = 88;

fn round_sig(v: f64, digits: i32) -> f64 {
    if v == 0.0 || !v.is_finite() {
        return v;
    }
    let mag = v.abs().log10().floor() as i32;
    let f = 10f64.powi(digits - 1 - mag);
    (v * f).round() / f
}

/// A fitted value as written in comments: 3 significant digits.
fn num(v: f64) -> String {
    let v = round_sig(v, 3);
    if v != 0.0 && (v.abs() < 1e-3 || v.abs() >= 1e4) {
        format!("{v:.2e}")
    } else {
        format!("{v}")
    }
}

/// `engine` with its fitted numbers rounded to 3 significant digits, as written.
fn rounded(engine: &Engine) -> Engine {
    let mut e = engine.clone();
    // every fittable factor as stored (an unset family override stays unset), every
    // device override (a family's keyed to its one device among them) ...
    for f in super::FACTORS {
        if let Some(v) = (f.stored)(&e) {
            (f.set)(&mut e, round_sig(v, 3));
        }
    }
    for o in &mut e.devices {
        for v in [
            &mut o.compute_efficiency,
            &mut o.expert_overhead_s,
            &mut o.memory_efficiency,
            &mut o.gemv_s_per_gflop,
            &mut o.expert_memory_efficiency,
            &mut o.gemv_compute_efficiency,
        ]
        .into_iter()
        .flatten()
        {
            *v = round_sig(*v, 3);
        }
    }
    // ... and the overheads set by hand beside them
    e.overheads.expert_overhead_s = round_sig(e.overheads.expert_overhead_s, 3);
    e.overheads.sequence_overhead_s = round_sig(e.overheads.sequence_overhead_s, 3);
    e.overheads.gemv_s_per_gflop = round_sig(e.overheads.gemv_s_per_gflop, 3);
    e.speed.expert_memory_efficiency = round_sig(e.speed.expert_memory_efficiency, 3);
    e.speed.gemv_compute_efficiency = round_sig(e.speed.gemv_compute_efficiency, 3);
    for v in e.speed.memory_efficiency.values_mut() {
        *v = round_sig(*v, 3);
    }
    e
}

/// Appends `text` as comment lines starting with `prefix` and a space, wrapped at
/// [`WIDTH`] (continuation lines indented two more spaces).
fn comment(out: &mut String, prefix: &str, text: &str) {
    let mut line = format!("{prefix} ");
    let start = line.len();
    for word in text.split_whitespace() {
        if line.len() + 1 + word.len() > WIDTH && line.len() > start + 2 {
            out.push_str(line.trim_end());
            out.push('\n');
            line = format!("{prefix}   ");
        } else if line.len() > start && !line.ends_with(' ') {
            line.push(' ');
        }
        line.push_str(word);
    }
    out.push_str(&line);
    out.push('\n');
}

/// `1 row`, `2 rows`.
fn rows(n: usize) -> String {
    format!("{n} row{}", if n == 1 { "" } else { "s" })
}

/// The hand-written `##` remarks of an engines file: those at its top, and those above
/// each engine's table (by engine id).
fn remarks(text: &str) -> (Vec<&str>, BTreeMap<String, Vec<&str>>) {
    let (mut head, mut by_engine) = (Vec::new(), BTreeMap::<String, Vec<&str>>::new());
    let mut pending = Vec::new();
    let mut at_top = true;
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with("##") {
            if at_top { &mut head } else { &mut pending }.push(t);
        } else {
            // the file's remarks end at the first line that is not one
            at_top = false;
            if let Some(id) = table_engine(t).filter(|_| !pending.is_empty()) {
                by_engine.entry(id).or_default().append(&mut pending);
            }
        }
    }
    (head, by_engine)
}

/// The engine a table header (`[vllm]`, `["llama.cpp".memory_efficiency]`) belongs to.
fn table_engine(header: &str) -> Option<String> {
    let inner = header.strip_prefix('[')?.trim_start();
    let id = match inner.strip_prefix('"') {
        Some(quoted) => quoted.split('"').next()?,
        None => inner.split(['.', ']']).next()?.trim(),
    };
    (!id.is_empty()).then(|| id.to_string())
}

/// The rows of `f` as cases of `mapped`.
fn rows_of<'a>(f: &EngineFit, mapped: &'a Mapped) -> Vec<&'a Case> {
    f.rows
        .iter()
        .filter_map(|id| mapped.cases.iter().find(|c| &c.id == id))
        .collect()
}

/// `kind A 17, C 6` for the rows.
fn kinds(rows: &[&Case]) -> String {
    let mut counts: BTreeMap<Kind, usize> = BTreeMap::new();
    for c in rows {
        *counts.entry(c.kind).or_default() += 1;
    }
    let parts: Vec<String> = counts.iter().map(|(k, n)| format!("{k} {n}")).collect();
    format!("kind {}", parts.join(", "))
}

/// Distinct values in order of first appearance.
fn distinct<'a>(items: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::new();
    for i in items {
        if !out.contains(&i) {
            out.push(i);
        }
    }
    out
}

/// The comment block above a fitted engine's table: rows, factors, residuals of the
/// engine as written, notes.
fn fit_comment(out: &mut String, f: &EngineFit, written: &Engine, mapped: &Mapped) -> Result<()> {
    let cases = rows_of(f, mapped);
    let engines = distinct(cases.iter().map(|c| c.engine.as_str()));
    let devices = distinct(cases.iter().map(|c| c.hardware.id.as_str()));
    let of = if engines == [written.id.as_str()] {
        String::new()
    } else {
        format!(" of {}", engines.join(", "))
    };
    comment(
        out,
        "#",
        &format!(
            "{}: fitted on {} ({}){of} on {}; rms ln(predicted/measured) {}.",
            written.id,
            rows(f.rows.len()),
            kinds(&cases),
            devices.join(", "),
            num(f.rms_log_after)
        ),
    );
    for p in &f.params {
        let ci = match (p.ci_low, p.ci_high) {
            (Some(l), Some(h)) => format!("95% CI {}..{}", num(l), num(h)),
            _ if p.at_bound => format!("at its bound {}", num(p.bounds.1)),
            _ => "no interval".to_string(),
        };
        let unit = match p.kind {
            _ if p.kind.is_overhead() => " s",
            _ => "",
        };
        let text = format!(
            "{} = {}{unit} ({ci}; {} rows)",
            p.key,
            num(p.value),
            p.rows.len()
        );
        comment(out, "#  ", &text);
    }
    let mut errors = Vec::with_capacity(cases.len());
    for c in &cases {
        errors.push((
            100.0 * (predict_case(c, written)? / c.measured - 1.0),
            &c.id,
        ));
    }
    errors.sort_by(|a, b| a.0.total_cmp(&b.0));
    if let (Some(lo), Some(hi)) = (errors.first(), errors.last()) {
        let text = format!(
            "errors of the values as written: median |error| {:.1}%, from {:+.0}% ({}) to {:+.0}% ({})",
            median_abs(errors.iter().map(|e| e.0)),
            lo.0,
            lo.1,
            hi.0,
            hi.1
        );
        comment(out, "#  ", &text);
    }
    // the factor lines say which factors stopped at a bound
    let bound_note = |n: &str| {
        f.params
            .iter()
            .any(|p| p.at_bound && n.starts_with(&format!("{} stopped at its bound", p.key)))
    };
    for n in f.notes.iter().filter(|n| !bound_note(n)) {
        comment(out, "#  ", n);
    }
    Ok(())
}

/// Appends `engine` as a TOML table. Every profile but `ideal` is marked
/// `override = true`: loaded with `--engine-file`, it replaces the built-in profile of
/// its name (the pure roofline is the same everywhere and never replaced).
fn table(out: &mut String, engine: &Engine) -> Result<()> {
    engine
        .check("fitted engine")
        .map_err(|e| Error::internal("engine TOML writer", e))?;
    let mut engine = engine.clone();
    engine.override_builtin = engine.id != "ideal";
    let map = BTreeMap::from([(engine.id.clone(), crate::engine::file::Table(&engine))]);
    let text = toml::to_string(&map).map_err(|e| Error::internal("engine TOML writer", e))?;
    // the id is the table's name
    for line in text.lines().filter(|l| !l.starts_with("id = ")) {
        out.push_str(line);
        out.push('\n');
    }
    Ok(())
}

/// An engines TOML (the schema of `data/engines.toml`, accepted by `--engine-file`)
/// holding the engines `cal` fitted, each preceded by comments on where its numbers
/// came from. Fitted values are rounded to 3 significant digits.
pub fn engines_toml(cal: &Calibration, mapped: &Mapped) -> Result<String> {
    let mut out = String::from(
        "# Engine profiles fitted by `ridgeline calibrate`. Load with --engine-file FILE.\n",
    );
    for f in &cal.engines {
        let written = rounded(&f.engine);
        out.push('\n');
        fit_comment(&mut out, f, &written, mapped)?;
        table(&mut out, &written)?;
    }
    Ok(out)
}

/// The fits of `cal` whose engine has a serving row that reads a kernel table
/// ([`Case::reads_tables`]): the profiles [`kernel_engines_toml`] writes, in `cal`'s order.
pub fn fits_on_tables<'a>(cal: &'a Calibration, mapped: &Mapped) -> Vec<&'a EngineFit> {
    let on_tables = |id: &str| {
        mapped
            .cases
            .iter()
            .any(|c| c.engine == id && c.kind != Kind::F && c.reads_tables())
    };
    cal.engines
        .iter()
        .filter(|f| on_tables(&f.engine.id))
        .collect()
}

/// The engines of `cal` whose rows read kernel tables ([`Case::reads_tables`]: the
/// calibration of a mapping [`Mapped::with_kernels`]), as an engines TOML: the profiles
/// on tables that `data/engines-kernels.toml` holds
/// ([`EngineDb::on_tables`](crate::engine::EngineDb::on_tables)). `tables` names the
/// tables in the file's header. An engine without such rows is left out (its fit is
/// the one without tables); `Err` where no engine has any.
///
/// `data/engines-kernels.toml` is this function's output for the bundled measurements:
/// `ridgeline calibrate --measurements data/measurements/measurements.csv --kernels
/// bundled --save data/engines-kernels.toml`.
pub fn kernel_engines_toml(cal: &Calibration, mapped: &Mapped, tables: &str) -> Result<String> {
    let fits = fits_on_tables(cal, mapped);
    if fits.is_empty() {
        return Err(Error::invalid(
            "kernels",
            "no row of the measurements reads a kernel table (engine and device, or its sibling, without a table): nothing to save",
        ));
    }
    let mut out = String::new();
    comment(
        &mut out,
        "#",
        &format!(
            "Engine profiles refitted on top of measured kernel tables ({tables}), written by \
             `ridgeline calibrate --kernels --save`: a prediction that reads a table under \
             one of these engines (`--kernels`) uses the profile here in place of the \
             engine's own. Each engine fits a per-pass overhead and no per-layer one (a \
             measured kernel's time includes its launch); every number below comes from \
             the fit, as in data/engines.toml. Only engines with rows on a device a table \
             covers are written."
        ),
    );
    for f in fits {
        let written = rounded(&f.engine);
        out.push('\n');
        fit_comment(&mut out, f, &written, mapped)?;
        table(&mut out, &written)?;
    }
    Ok(out)
}

/// The complete engines database after the calibration `cal` of `mapped`: every engine
/// of `engines` and every fitted one, `ideal` first, then `typical`, then by id.
/// Fitted engines are written as fitted (3 significant digits); an engine without rows
/// takes `typical`'s speed factors (efficiencies and overheads) and keeps its own
/// memory-footprint and link fields; `ideal`, the roofline itself, is written as given.
/// The `##` remarks of `previous` (the file being written over) are kept.
///
/// `data/engines.toml` is this function's output for the bundled measurements and
/// engines: `ridgeline calibrate --measurements data/measurements/measurements.csv
/// --save data/engines.toml`.
pub fn engines_file(
    cal: &Calibration,
    mapped: &Mapped,
    engines: &EngineDb,
    previous: Option<&str>,
) -> Result<String> {
    let (head, by_engine) = remarks(previous.unwrap_or(""));
    let fitted = |id: &str| cal.engines.iter().find(|f| f.engine.id == id);
    let typical = match fitted("typical") {
        Some(f) => rounded(&f.engine),
        None => engines.get("typical")?.clone(),
    };
    let mut ids: Vec<&str> = engines.engines().iter().map(|e| e.id.as_str()).collect();
    ids.extend(cal.engines.iter().map(|f| f.engine.id.as_str()));
    ids.sort_by_key(|id| (*id != "ideal", *id != "typical", *id));
    ids.dedup();
    let mut out = String::new();
    for r in &head {
        out.push_str(r);
        out.push('\n');
    }
    header(&mut out, cal);
    for id in ids {
        out.push('\n');
        for r in by_engine.get(id).into_iter().flatten() {
            out.push_str(r);
            out.push('\n');
        }
        let written = match (fitted(id), engines.get(id)) {
            (Some(f), _) => {
                let written = rounded(&f.engine);
                fit_comment(&mut out, f, &written, mapped)?;
                written
            }
            (None, Ok(e)) if id == "ideal" || id == "typical" => {
                comment(
                    &mut out,
                    "#",
                    &format!("{id}: not fitted (no rows); as given."),
                );
                e.clone()
            }
            (None, Ok(e)) => {
                let text = format!(
                    "{id}: no rows; its speed factors (memory_efficiency, compute_efficiency, \
                     step_overhead_s, layer_overhead_s) are typical's."
                );
                comment(&mut out, "#", &text);
                let mut e = super::start_from_typical(e, &typical);
                super::tag_carried(&mut e, &typical);
                e
            }
            (None, Err(e)) => return Err(Error::internal("engine TOML writer", e)),
        };
        table(&mut out, &written)?;
    }
    Ok(out)
}

/// The file's own comment: what wrote it and the ceilings the fit was held to.
fn header(out: &mut String, cal: &Calibration) {
    comment(
        out,
        "#",
        "Engine efficiency profiles, written by `ridgeline calibrate --save` from the \
         measurements: lines starting with `#` and every fitted number come from the fit, \
         lines starting with `##` are hand-written and kept when the file is written again. \
         The fit minimizes the squared ln(predicted/measured) over an engine's rows (Huber \
         beyond a threshold chosen by the leave-one-source-out error), fits a factor only \
         if some row depends on it and the per-layer \
         overhead only with enough rows; `typical` is fitted on the pooled rows of the tuned \
         engines, every other engine on its own rows pulled toward `typical` as if typical \
         were 3 more rows. Intervals are 95% Student-t.",
    );
    let b = &cal.bounds;
    let groups: Vec<String> = b
        .memory
        .iter()
        .map(|(g, v)| format!("{g} {}", num(*v)))
        .collect();
    comment(
        out,
        "#",
        &format!(
            "Ceilings from the kind F rows ({}): memory_efficiency at most {} (other \
             groups {}), compute_efficiency at most {}.",
            b.from.join(", "),
            groups.join(", "),
            num(b.memory_default),
            num(b.compute)
        ),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remarks_stay_with_their_engine() {
        let text = "## file remark\n##   indented\n\n## about ideal\n# generated\n[ideal]\nx = 1\n\
                    ## about llama.cpp\n# generated about llama.cpp\n[\"llama.cpp\"]\nx = 1\n\
                    [\"llama.cpp\".memory_efficiency]\ndefault = 1\n## about vllm\n[vllm]\n";
        let (head, by_engine) = remarks(text);
        assert_eq!(head, ["## file remark", "##   indented"]);
        assert_eq!(by_engine["llama.cpp"], ["## about llama.cpp"]);
        assert_eq!(by_engine["vllm"], ["## about vllm"]);
        assert_eq!(by_engine["ideal"], ["## about ideal"]);
        assert_eq!(
            table_engine("[ trt-llm.memory_efficiency ]").unwrap(),
            "trt-llm"
        );
    }

    #[test]
    fn comments_wrap_and_numbers_keep_three_digits() {
        let mut out = String::new();
        comment(&mut out, "#", &"word ".repeat(40));
        assert!(
            out.lines().all(|l| l.len() <= WIDTH && l.starts_with('#')),
            "{out}"
        );
        assert!(
            out.lines().skip(1).all(|l| l.starts_with("#   word")),
            "{out}"
        );
        assert_eq!(
            (num(0.77256), num(6.7516e-5), num(0.0)),
            ("0.773".into(), "6.75e-5".into(), "0".into())
        );
    }
}
