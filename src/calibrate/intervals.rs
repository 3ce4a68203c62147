//! The 80% interval bands of `data/intervals.toml` from held-out errors: kinds A, B
//! and C from [`super::leave_one_source_out`], kinds D and E from the training fit's
//! residuals (see [`crate::intervals`]).

use super::{Case, HeldOut, Kind, Mapped, Target};
use crate::error::{Error, Result};
use crate::intervals::{Band, IntervalDb, MIN_ENGINE_ROWS};
use crate::train::calibrate::TrainFit;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// `measured / predicted` as a speed for a row whose error is `error_pct`
/// (`100 · (predicted / measured - 1)`): for a time to first token the inverse.
pub fn speed_ratio(target: Target, error_pct: f64) -> f64 {
    let predicted_over_measured = 1.0 + error_pct / 100.0;
    if target.higher_is_faster() {
        1.0 / predicted_over_measured
    } else {
        predicted_over_measured
    }
}

/// Speed ratios of held-out rows `held` (one per row of `mapped` with kind A, B or C,
/// in order, as [`super::leave_one_source_out`] returns them): `(engine, kind, ratio)`.
pub fn held_out_ratios(mapped: &Mapped, held: &[HeldOut]) -> Result<Vec<(String, Kind, f64)>> {
    let by_id: BTreeMap<&str, &Case> = mapped.cases.iter().map(|c| (c.id.as_str(), c)).collect();
    held.iter()
        .map(|h| {
            let c = by_id.get(h.id.as_str()).ok_or_else(|| {
                Error::invalid("held-out rows", format!("row {} is not in the cases", h.id))
            })?;
            Ok((h.engine.clone(), h.kind, speed_ratio(c.target, h.error_pct)))
        })
        .collect()
}

/// The bands: per kind A/B/C over all rows and per engine with at least
/// [`MIN_ENGINE_ROWS`] rows of the kind; D and E (pooled) from `train` when given.
pub fn interval_db(ratios: &[(String, Kind, f64)], train: Option<&TrainFit>) -> IntervalDb {
    let mut db = IntervalDb::default();
    for kind in [Kind::A, Kind::B, Kind::C] {
        let of: Vec<&(String, Kind, f64)> = ratios.iter().filter(|r| r.1 == kind).collect();
        let all: Vec<f64> = of.iter().map(|r| r.2).collect();
        if let Some(b) = Band::of(&all) {
            db.pooled.insert(kind.letter().into(), b);
        }
        let mut engines: Vec<&str> = of.iter().map(|r| r.0.as_str()).collect();
        engines.sort();
        engines.dedup();
        for e in engines {
            let own: Vec<f64> = of.iter().filter(|r| r.0 == e).map(|r| r.2).collect();
            if own.len() < MIN_ENGINE_ROWS {
                continue;
            }
            if let Some(b) = Band::of(&own) {
                let m = db.engines.entry(e.to_string()).or_default();
                m.insert(kind.letter().into(), b);
            }
        }
    }
    if let Some(t) = train {
        // error = predicted / measured - 1: measured / predicted = 1 / (1 + error)
        let ratio = |rows: &[crate::train::calibrate::RowFit]| -> Vec<f64> {
            rows.iter().map(|r| 1.0 / (1.0 + r.error)).collect()
        };
        for (kind, rows) in [(Kind::D, &t.rows), (Kind::E, &t.memory_rows)] {
            if let Some(b) = Band::of(&ratio(rows)) {
                db.pooled.insert(kind.letter().into(), b);
            }
        }
    }
    db
}

/// What each kind's band bounds, for the file's comments.
fn kind_label(kind: &str) -> &'static str {
    match kind {
        "A" => "single-stream decode (decode tokens/s, time per output token at batch 1)",
        "B" => "batched throughput (output and decode tokens/s, time per output token)",
        "C" => "prefill tokens/s and time to first token",
        "D" => "training step tokens/s per device (in-sample residuals of calibrate --train)",
        "E" => "training memory per device (in-sample residuals of calibrate --train)",
        _ => "",
    }
}

fn band_toml(out: &mut String, table: &str, what: &str, b: &Band) {
    let _ = writeln!(
        out,
        "# {what}: {} rows, median measured/predicted {:.3}",
        b.rows, b.median
    );
    let _ = writeln!(out, "[{table}]");
    let _ = writeln!(out, "p10 = {:.3}", b.p10);
    let _ = writeln!(out, "p90 = {:.3}", b.p90);
    let _ = writeln!(out, "rows = {}", b.rows);
    let _ = writeln!(out, "median = {:.3}\n", b.median);
}

/// `db` as `data/intervals.toml`, numbers rounded to 3 decimals, each band with a
/// comment naming its rows; `measurements` names the file it was computed from.
pub fn intervals_toml(db: &IntervalDb, measurements: &str) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "# 80% prediction intervals: the 10th and 90th percentiles (p10, p90) of measured /\n\
         # predicted, as a speed (for a time, predicted / measured), over held-out rows of\n\
         # {measurements}.\n\
         # Kinds A, B and C: each row predicted by engines calibrated without its\n\
         # publication (leave one source out). [pooled.K] takes every engine's rows of kind K;\n\
         # [engines.E.K] an engine's own, written where it has at least {MIN_ENGINE_ROWS} rows.\n\
         # Percentiles interpolate linearly between order statistics.\n\
         # Written by `ridgeline calibrate --measurements {measurements} --save-intervals FILE`;\n\
         # do not edit by hand (tests/intervals.rs checks it is that command's output).\n\n"
    );
    for (kind, b) in &db.pooled {
        let what = format!("kind {kind}, all engines, {}", kind_label(kind));
        band_toml(&mut out, &format!("pooled.{kind}"), &what, b);
    }
    for (engine, kinds) in &db.engines {
        for (kind, b) in kinds {
            let what = format!("kind {kind}, engine {engine}");
            let bare = engine
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
            let key = if bare {
                engine.clone()
            } else {
                format!("{engine:?}")
            };
            band_toml(&mut out, &format!("engines.{key}.{kind}"), &what, b);
        }
    }
    out.truncate(out.trim_end().len());
    out.push('\n');
    out
}

/// Fraction of `ratios` inside their own band of `db` (the in-sample coverage, ~80%
/// by construction), per kind A/B/C: `(kind, inside, rows)`.
pub fn coverage(db: &IntervalDb, ratios: &[(String, Kind, f64)]) -> Vec<(Kind, usize, usize)> {
    [Kind::A, Kind::B, Kind::C]
        .into_iter()
        .map(|kind| {
            let of = ratios.iter().filter(|r| r.1 == kind);
            let inside = of
                .clone()
                .filter(|r| db.band(&r.0, kind).is_some_and(|b| b.holds(r.2)))
                .count();
            (kind, inside, of.count())
        })
        .collect()
}

/// Like [`coverage`], but each publication's rows checked against bands computed
/// without them ([`super::source_key`]): the coverage to expect on a new
/// publication's measurements, which the in-sample figure overstates.
pub fn coverage_by_source(mapped: &Mapped, held: &[HeldOut]) -> Result<Vec<(Kind, usize, usize)>> {
    let ratios = held_out_ratios(mapped, held)?;
    let by_id: BTreeMap<&str, &Case> = mapped.cases.iter().map(|c| (c.id.as_str(), c)).collect();
    let sources: Vec<String> = held
        .iter()
        .map(|h| {
            by_id
                .get(h.id.as_str())
                .map_or(String::new(), |c| super::source_key(&c.source))
        })
        .collect();
    let mut distinct = sources.clone();
    distinct.sort();
    distinct.dedup();
    let mut tally: BTreeMap<Kind, (usize, usize)> = BTreeMap::new();
    for s in &distinct {
        let (mine, rest): (Vec<_>, Vec<_>) =
            ratios.iter().zip(&sources).partition(|(_, src)| *src == s);
        let rest: Vec<(String, Kind, f64)> = rest.into_iter().map(|(r, _)| r.clone()).collect();
        let db = interval_db(&rest, None);
        for ((engine, kind, ratio), _) in mine {
            let t = tally.entry(*kind).or_default();
            t.1 += 1;
            if db.band(engine, *kind).is_some_and(|b| b.holds(*ratio)) {
                t.0 += 1;
            }
        }
    }
    Ok(tally.into_iter().map(|(k, (i, n))| (k, i, n)).collect())
}

/// What `calibrate --save-intervals` computes: the bands and their coverage.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct IntervalBands {
    /// The bands.
    pub db: IntervalDb,
    /// Held-out rows inside their own band, per kind A/B/C: `(kind, inside, rows)`.
    pub in_sample: Vec<(Kind, usize, usize)>,
    /// The same against bands computed without the row's publication.
    pub by_source: Vec<(Kind, usize, usize)>,
}

/// The bands of the rows `rows` (mapped as `mapped`) with the engines `engines`:
/// leave one source out for kinds A/B/C, the training fit for D and E.
pub fn interval_bands(
    rows: &[super::Measurement],
    mapped: &Mapped,
    engines: &crate::engine::EngineDb,
) -> Result<IntervalBands> {
    let held = super::leave_one_source_out(mapped, engines)?;
    let ratios = held_out_ratios(mapped, &held)?;
    let train = crate::train::calibrate::fit_rows(rows)?;
    let db = interval_db(&ratios, Some(&train));
    Ok(IntervalBands {
        in_sample: coverage(&db, &ratios),
        by_source: coverage_by_source(mapped, &held)?,
        db,
    })
}
