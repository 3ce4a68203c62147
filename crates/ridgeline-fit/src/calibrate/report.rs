//! The calibration report (`calibrate --report`): for each kind, the error of four
//! predictors side by side (the pure roofline, one flat bandwidth factor, the engines
//! fitted in sample, and leave one source out), the rows held out worst, and each
//! engine's held-out error.

use super::many::Distinct;
use super::{
    Calibration, Case, Compared, HeldOut, Kind, Mapped, Progress, calibrate_with_progress,
    leave_one_source_out_with_progress, median_abs, source_key, speed_ratio,
};
use crate::engine::{Engine, EngineDb};
use crate::error::{Error, Result};
use serde::Serialize;
use std::collections::BTreeMap;

/// Rows `calibrate --report` lists unless told otherwise (`--worst`).
pub const DEFAULT_WORST: usize = 10;

/// Rows of one kind an engine needs to be listed in [`CalibrationReport::engines`].
pub const REPORT_MIN_ENGINE_ROWS: usize = 3;

/// The flat bandwidth factor: one memory efficiency for every device and engine, and
/// nothing else (compute efficiency 1, no overheads), as an engine profile with id
/// `flat`. The baseline a calibration has to beat: "the roofline times a constant".
pub fn flat_engine(memory_efficiency: f64) -> Engine {
    let mut e = Engine::ideal();
    e.id = "flat".into();
    e.description = format!(
        "Flat bandwidth factor: memory efficiency {memory_efficiency} on every device, \
         compute 1, no overheads."
    );
    e.speed.memory_efficiency = BTreeMap::from([("default".to_string(), memory_efficiency)]);
    e
}

/// The flat bandwidth factor fitted to `cases`: the median of measured / predicted
/// (as a speed: for a time the inverse) under the pure roofline over the kind A rows
/// (single-stream decode, where the roofline is the bandwidth roof), with the number of
/// rows; `None` without kind A rows.
pub fn flat_factor(cases: &[&Case]) -> Result<Option<(f64, usize)>> {
    let a: Vec<&Case> = cases
        .iter()
        .copied()
        .filter(|c| c.kind == Kind::A)
        .collect();
    if a.is_empty() {
        return Ok(None);
    }
    let errors = errors_under(&a, &Engine::ideal())?;
    let ratios = a.iter().zip(errors).map(|(c, e)| speed_ratio(c.target, e));
    Ok(Some((median_abs(ratios), a.len())))
}

/// `100 · (predicted / measured - 1)` of each case under `engine` (each distinct
/// prediction once, in parallel); a failed prediction is an error naming the row.
fn errors_under(cases: &[&Case], engine: &Engine) -> Result<Vec<f64>> {
    Distinct::new(cases)
        .predict(engine)
        .into_iter()
        .zip(cases)
        .map(|(p, c)| {
            let p = p.map_err(|e| c.row_error(e))?;
            Ok(100.0 * (p / c.measured - 1.0))
        })
        .collect()
}

/// Median and 90th percentile of absolute % errors.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Spread {
    /// Median |error|, %.
    pub median_pct: f64,
    /// 90th percentile of |error| (interpolated), %.
    pub p90_pct: f64,
}

impl Spread {
    /// The spread of `errors` (NaN for none).
    pub(crate) fn of(errors: impl IntoIterator<Item = f64>) -> Spread {
        let mut v: Vec<f64> = errors.into_iter().map(f64::abs).collect();
        v.sort_by(|a, b| a.total_cmp(b));
        Spread {
            median_pct: median_abs(v.iter().copied()),
            p90_pct: if v.is_empty() {
                f64::NAN
            } else {
                crate::intervals::percentile(&v, 0.9)
            },
        }
    }
}

/// One kind's errors under the four predictors.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct KindErrors {
    /// Kind (A, B or C).
    pub kind: Kind,
    /// Rows of the kind.
    pub rows: usize,
    /// The pure roofline (`ideal`).
    pub ideal: Spread,
    /// The flat bandwidth factor ([`flat_engine`]); NaN without kind A rows to fit it.
    pub flat: Spread,
    /// The engines fitted to these rows ([`super::calibrate`]), in sample.
    pub fitted: Spread,
    /// Each row predicted by engines fitted without its publication
    /// ([`super::leave_one_source_out`]).
    pub leave_one_source_out: Spread,
}

/// One row under the four predictors.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct ReportRow {
    /// The row and its engine.
    #[serde(flatten)]
    pub row: Compared,
    /// The publication ([`source_key`]).
    pub source: String,
    /// Predicted by engines fitted without the row's publication, SI units.
    pub predicted: f64,
    /// `100 · (predicted / measured - 1)`, held out by source.
    pub error_pct: f64,
    /// The error under the pure roofline, %.
    pub ideal_error_pct: f64,
    /// The error under the flat bandwidth factor, % (NaN without kind A rows).
    pub flat_error_pct: f64,
    /// The error under the engines fitted in sample, %.
    pub fitted_error_pct: f64,
}

/// One engine's errors on one kind.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct EngineErrors {
    /// Engine id.
    pub engine: String,
    /// Kind.
    pub kind: Kind,
    /// Rows of the engine and kind.
    pub rows: usize,
    /// Median |error| fitted in sample, %.
    pub fitted_pct: f64,
    /// Median |error| held out by source, %.
    pub leave_one_source_out_pct: f64,
}

/// Everything `calibrate --report` shows.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct CalibrationReport {
    /// The flat bandwidth factor's memory efficiency (NaN without kind A rows).
    pub flat_memory_efficiency: f64,
    /// The kind A rows it was fitted on.
    pub flat_rows: usize,
    /// Publications the rows of kinds A, B and C come from ([`source_key`]).
    pub sources: usize,
    /// Kinds A, B and C, those with rows.
    pub kinds: Vec<KindErrors>,
    /// The rows with the largest held-out |error|, largest first.
    pub worst: Vec<ReportRow>,
    /// Per kind, each engine with at least [`REPORT_MIN_ENGINE_ROWS`] rows of it,
    /// largest held-out error first.
    pub engines: Vec<EngineErrors>,
}

/// The report on the rows of `mapped` with engines refitted from `engines`: the four
/// predictors per kind, the `worst` rows by held-out error, and per engine. The fits
/// are [`super::calibrate`]'s (in sample) and [`super::leave_one_source_out`]'s (each
/// done once); `progress` hears about both.
pub fn calibration_report(
    mapped: &Mapped,
    engines: &EngineDb,
    worst: usize,
    progress: Progress,
) -> Result<CalibrationReport> {
    let cal = calibrate_with_progress(mapped, engines, None, progress)?;
    let loso = leave_one_source_out_with_progress(mapped, engines, progress)?;
    calibration_report_from(mapped, &cal, &loso, worst)
}

/// [`calibration_report`] from a calibration of `mapped` ([`super::calibrate`]) and its
/// leave-one-source-out rows ([`super::leave_one_source_out`], or an [`super::Accuracy`]'s
/// `leave_one_source_out`), computed once elsewhere.
pub fn calibration_report_from(
    mapped: &Mapped,
    cal: &Calibration,
    loso: &[HeldOut],
    worst: usize,
) -> Result<CalibrationReport> {
    let cases: Vec<&Case> = mapped.cases.iter().filter(|c| c.kind != Kind::F).collect();
    let flat = flat_factor(&cases)?;
    let ideal = errors_under(&cases, &Engine::ideal())?;
    let flat_err = match flat {
        Some((f, _)) => errors_under(&cases, &flat_engine(f))?,
        None => vec![f64::NAN; cases.len()],
    };
    // calibrate's rows are every case in order, leave one source out's the A/B/C ones
    let fitted: Vec<f64> = mapped
        .cases
        .iter()
        .zip(&cal.rows)
        .filter(|(c, _)| c.kind != Kind::F)
        .map(|(_, r)| r.error_after_pct)
        .collect();
    let aligned = cal.rows.len() == mapped.cases.len()
        && loso.len() == cases.len()
        && cal
            .rows
            .iter()
            .zip(&mapped.cases)
            .all(|(r, c)| r.row.id == c.id)
        && loso.iter().zip(&cases).all(|(h, c)| h.id == c.id);
    if !aligned {
        return Err(Error::internal(
            "calibration report",
            "the fits' rows are not the file's",
        ));
    }
    let mut rows = Vec::with_capacity(cases.len());
    for (i, (c, held)) in cases.iter().zip(loso).enumerate() {
        rows.push(ReportRow {
            row: Compared::new(c, &c.engine),
            source: source_key(&c.source),
            predicted: c.measured * (1.0 + held.error_pct / 100.0),
            error_pct: held.error_pct,
            ideal_error_pct: ideal[i],
            flat_error_pct: flat_err[i],
            fitted_error_pct: fitted[i],
        });
    }
    let mut sources: Vec<&str> = rows.iter().map(|r| r.source.as_str()).collect();
    sources.sort_unstable();
    sources.dedup();
    let (flat_memory_efficiency, flat_rows) = flat.unwrap_or((f64::NAN, 0));
    Ok(CalibrationReport {
        flat_memory_efficiency,
        flat_rows,
        sources: sources.len(),
        kinds: kind_errors(&rows),
        engines: engine_errors(&rows),
        worst: worst_rows(rows, worst),
    })
}

/// The four spreads of each kind with rows.
fn kind_errors(rows: &[ReportRow]) -> Vec<KindErrors> {
    let mut out = Vec::new();
    for kind in [Kind::A, Kind::B, Kind::C] {
        let of: Vec<&ReportRow> = rows.iter().filter(|r| r.row.kind == kind).collect();
        if of.is_empty() {
            continue;
        }
        let spread = |f: fn(&ReportRow) -> f64| Spread::of(of.iter().map(|r| f(r)));
        out.push(KindErrors {
            kind,
            rows: of.len(),
            ideal: spread(|r| r.ideal_error_pct),
            flat: spread(|r| r.flat_error_pct),
            fitted: spread(|r| r.fitted_error_pct),
            leave_one_source_out: spread(|r| r.error_pct),
        });
    }
    out
}

/// Per kind, the engines with at least [`REPORT_MIN_ENGINE_ROWS`] rows of it, largest
/// held-out median first.
fn engine_errors(rows: &[ReportRow]) -> Vec<EngineErrors> {
    let mut groups: BTreeMap<(Kind, &str), Vec<&ReportRow>> = BTreeMap::new();
    for r in rows {
        groups
            .entry((r.row.kind, r.row.engine.as_str()))
            .or_default()
            .push(r);
    }
    let mut out: Vec<EngineErrors> = groups
        .into_iter()
        .filter(|(_, of)| of.len() >= REPORT_MIN_ENGINE_ROWS)
        .map(|((kind, engine), of)| EngineErrors {
            engine: engine.to_string(),
            kind,
            rows: of.len(),
            fitted_pct: median_abs(of.iter().map(|r| r.fitted_error_pct)),
            leave_one_source_out_pct: median_abs(of.iter().map(|r| r.error_pct)),
        })
        .collect();
    out.sort_by(|a, b| {
        a.kind.cmp(&b.kind).then(
            b.leave_one_source_out_pct
                .total_cmp(&a.leave_one_source_out_pct),
        )
    });
    out
}

/// The `n` rows with the largest held-out |error|, largest first (ties in file order).
fn worst_rows(mut rows: Vec<ReportRow>, n: usize) -> Vec<ReportRow> {
    rows.sort_by(|a, b| b.error_pct.abs().total_cmp(&a.error_pct.abs()));
    rows.truncate(n);
    rows
}
