//! The 80% interval bands of `data/intervals.toml` from held-out errors: kinds A, B
//! and C from [`super::leave_one_source_out`], kinds D and E from the training fit's
//! residuals (see [`crate::intervals`]).

use super::{Case, HeldOut, Kind, Mapped, Target};
use crate::error::{Error, Result};
use crate::intervals::{Band, IntervalDb};
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

/// One held-out row as the bands see it.
#[derive(Debug, Clone, PartialEq)]
pub struct HeldRatio {
    /// Engine compared.
    pub engine: String,
    /// Kind A, B or C.
    pub kind: Kind,
    /// `measured / predicted` as a speed, predicted without the row's publication.
    pub ratio: f64,
    /// The publication ([`super::source_key`]).
    pub source: String,
}

/// Speed ratios of held-out rows `held` (one per row of `mapped` with kind A, B or C,
/// in order, as [`super::leave_one_source_out`] returns them).
pub fn held_out_ratios(mapped: &Mapped, held: &[HeldOut]) -> Result<Vec<HeldRatio>> {
    let by_id: BTreeMap<&str, &Case> = mapped.cases.iter().map(|c| (c.id.as_str(), c)).collect();
    held.iter()
        .map(|h| {
            let c = by_id.get(h.id.as_str()).ok_or_else(|| {
                Error::invalid("held-out rows", format!("row {} is not in the cases", h.id))
            })?;
            Ok(HeldRatio {
                engine: h.engine.clone(),
                kind: h.kind,
                ratio: speed_ratio(c.target, h.error_pct),
                source: super::source_key(&c.source),
            })
        })
        .collect()
}

/// The share of rows a band is meant to hold.
pub const TARGET_COVERAGE: f64 = 0.8;

/// Tails tried for the low end, narrowest band first: 0.10, 0.09, ..., 0.01.
const TAILS: [f64; 10] = [0.10, 0.09, 0.08, 0.07, 0.06, 0.05, 0.04, 0.03, 0.02, 0.01];

/// The distinct publications of `rows`, sorted.
fn sources<'a>(rows: impl Iterator<Item = &'a HeldRatio>) -> Vec<&'a str> {
    let mut s: Vec<&str> = rows.map(|r| r.source.as_str()).collect();
    s.sort_unstable();
    s.dedup();
    s
}

/// Fraction of `rows` inside the band at `tail` computed without their publication.
fn held_out_coverage(rows: &[&HeldRatio], tail: f64) -> f64 {
    let mut inside = 0;
    for s in &sources(rows.iter().copied()) {
        let rest: Vec<f64> = rows
            .iter()
            .filter(|r| r.source != *s)
            .map(|r| r.ratio)
            .collect();
        if let Some(b) = Band::with_tail(&rest, tail) {
            inside += rows
                .iter()
                .filter(|r| r.source == *s && b.holds(r.ratio))
                .count();
        }
    }
    inside as f64 / rows.len().max(1) as f64
}

/// The narrowest tail of 0.10, 0.09, ..., 0.01 whose bands, computed without each
/// publication, hold [`TARGET_COVERAGE`] of its rows (the widest when none does): rows of one
/// publication share a setup and miss together, so quantiles of all rows at 0.1 hold
/// fewer than 80% of a new publication's rows.
pub fn held_out_tail(rows: &[&HeldRatio]) -> f64 {
    TAILS
        .into_iter()
        .find(|&t| held_out_coverage(rows, t) >= TARGET_COVERAGE)
        .unwrap_or(TAILS[TAILS.len() - 1])
}

/// The band of kind `kind` over `rows`, at the tail [`held_out_tail`] picks.
fn kind_band(rows: &[HeldRatio], kind: Kind) -> Option<Band> {
    let of: Vec<&HeldRatio> = rows.iter().filter(|r| r.kind == kind).collect();
    let ratios: Vec<f64> = of.iter().map(|r| r.ratio).collect();
    Band::with_tail(&ratios, held_out_tail(&of))
}

/// The bands: per kind A/B/C over all engines' held-out rows, at the tail that holds
/// 80% of a publication left out ([`held_out_tail`]); D and E from `train` when given
/// (10th and 90th percentiles of its in-sample residuals). No engine gets a band of its
/// own: one engine's rows mostly come from one or two publications, and such bands
/// held fewer rows of a new publication than the pooled one.
pub fn interval_db(ratios: &[HeldRatio], train: Option<&TrainFit>) -> IntervalDb {
    let mut db = IntervalDb::default();
    for kind in [Kind::A, Kind::B, Kind::C] {
        if let Some(b) = kind_band(ratios, kind) {
            db.pooled.insert(kind.letter().into(), b);
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
    let _ = writeln!(out, "tail = {:.2}", b.tail);
    let _ = writeln!(out, "rows = {}", b.rows);
    let _ = writeln!(out, "median = {:.3}\n", b.median);
}

/// `db` as `data/intervals.toml`, numbers rounded to 3 decimals, each band with a
/// comment naming its rows; `measurements` names the file it was computed from.
pub fn intervals_toml(db: &IntervalDb, measurements: &str) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "# 80% prediction intervals: the low and high quantiles (p10 = the `tail` quantile,\n\
         # p90 = the 1 - `tail` quantile) of measured / predicted, as a speed (for a time,\n\
         # predicted / measured), over held-out rows of {measurements}.\n\
         # Kinds A, B and C: each row predicted by engines calibrated without its\n\
         # publication (leave one source out); [pooled.K] takes every engine's rows of kind K,\n\
         # its tail the narrowest of 0.10, 0.09, ..., 0.01 at which bands computed without\n\
         # each publication hold 80% of that publication's rows. Kinds D and E: the 10th and\n\
         # 90th percentiles of the in-sample residuals of `calibrate --train`.\n\
         # Quantiles interpolate linearly between order statistics.\n\
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

/// Fraction of `ratios` inside their own band of `db` (the in-sample coverage), per
/// kind A/B/C: `(kind, inside, rows)`.
pub fn coverage(db: &IntervalDb, ratios: &[HeldRatio]) -> Vec<(Kind, usize, usize)> {
    [Kind::A, Kind::B, Kind::C]
        .into_iter()
        .map(|kind| {
            let of = ratios.iter().filter(|r| r.kind == kind);
            let inside = of
                .clone()
                .filter(|r| db.band(&r.engine, kind).is_some_and(|b| b.holds(r.ratio)))
                .count();
            (kind, inside, of.count())
        })
        .collect()
}

/// Like [`coverage`], but each publication's rows checked against bands computed
/// without them, their tail chosen without them too: the coverage to expect on a new
/// publication's measurements.
pub fn coverage_by_source(ratios: &[HeldRatio]) -> Vec<(Kind, usize, usize)> {
    let mut tally: BTreeMap<Kind, (usize, usize)> = BTreeMap::new();
    for s in &sources(ratios.iter()) {
        let rest: Vec<HeldRatio> = ratios.iter().filter(|r| r.source != *s).cloned().collect();
        let db = interval_db(&rest, None);
        for r in ratios.iter().filter(|r| r.source == *s) {
            let t = tally.entry(r.kind).or_default();
            t.1 += 1;
            if db.band(&r.engine, r.kind).is_some_and(|b| b.holds(r.ratio)) {
                t.0 += 1;
            }
        }
    }
    tally.into_iter().map(|(k, (i, n))| (k, i, n)).collect()
}

/// What `calibrate --save-intervals` computes: the bands and their coverage.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[non_exhaustive]
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
    interval_bands_from(rows, mapped, &held)
}

/// [`interval_bands`] from leave-one-source-out rows computed once elsewhere
/// ([`super::leave_one_source_out`], or an [`super::Accuracy`]'s `leave_one_source_out`).
pub fn interval_bands_from(
    rows: &[super::Measurement],
    mapped: &Mapped,
    held: &[HeldOut],
) -> Result<IntervalBands> {
    let ratios = held_out_ratios(mapped, held)?;
    let train = crate::train::calibrate::fit_rows(rows)?;
    let db = interval_db(&ratios, Some(&train));
    Ok(IntervalBands {
        in_sample: coverage(&db, &ratios),
        by_source: coverage_by_source(&ratios),
        db,
    })
}
