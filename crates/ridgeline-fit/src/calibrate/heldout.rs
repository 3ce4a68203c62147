//! Held-out errors: each row predicted by a calibration that did not see it (leave one
//! row out) or did not see its publication (leave one source out), and the accuracy
//! summary per kind that the README shows.

use super::run::{base_for, bounds_for, fit_engine, fit_typical, pooled, start_from_typical};
use super::{Bounds, Case, Kind, Mapped, Progress, median_abs, predict_case};
use crate::engine::{Engine, EngineDb};
use crate::error::Result;
use rayon::prelude::*;
use serde::Serialize;
use std::sync::atomic::{AtomicUsize, Ordering};

/// One row predicted by a calibration that did not see it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct HeldOut {
    /// Row id.
    pub id: String,
    /// Kind.
    pub kind: Kind,
    /// Engine id.
    pub engine: String,
    /// `100 · (predicted / measured - 1)` with the engines fitted without this row.
    pub error_pct: f64,
}

/// Leave-one-out cross-validation: for each kind A/B/C row, calibrates on all other
/// rows (as [`super::calibrate`] does) and predicts the row left out. The median of
/// the errors estimates the error on measurements that are not in the file.
pub fn leave_one_out(mapped: &Mapped, engines: &EngineDb) -> Result<Vec<HeldOut>> {
    held_out(mapped, engines, |c| c.id.clone(), &Tally::quiet())
}

/// Leave-one-source-out cross-validation: for each publication ([`source_key`]),
/// calibrates on the rows of all other publications and predicts its rows. Rows of one
/// source share a setup (machine, build, benchmark script), so this estimates the error
/// on a new publication's measurements, which leave-one-out (whose fits still see the
/// row's siblings) understates.
pub fn leave_one_source_out(mapped: &Mapped, engines: &EngineDb) -> Result<Vec<HeldOut>> {
    held_out(mapped, engines, |c| source_key(&c.source), &Tally::quiet())
}

/// [`leave_one_source_out`], telling `progress` how many rows have been held out of
/// how many.
pub fn leave_one_source_out_with_progress(
    mapped: &Mapped,
    engines: &EngineDb,
    progress: Progress,
) -> Result<Vec<HeldOut>> {
    let tally = Tally {
        what: "leave one source out",
        done: AtomicUsize::new(0),
        before: 0,
        total: fitted_rows(mapped).count(),
        progress,
    };
    held_out(mapped, engines, |c| source_key(&c.source), &tally)
}

/// Rows held out so far, of how many, told to a [`Progress`] (from the fold threads).
struct Tally<'a> {
    what: &'static str,
    done: AtomicUsize,
    before: usize,
    total: usize,
    progress: Progress<'a>,
}

impl<'a> Tally<'a> {
    fn quiet() -> Tally<'static> {
        Tally {
            what: "",
            done: AtomicUsize::new(0),
            before: 0,
            total: 0,
            progress: &|_, _, _| {},
        }
    }

    fn add(&self, rows: usize) {
        let done = self.done.fetch_add(rows, Ordering::Relaxed) + rows;
        (self.progress)(self.what, self.before + done, self.total);
    }
}

/// The publication a row's source belongs to: for a GitHub address its repository
/// (`github.com/owner/repo`, whatever file, commit, issue or pull request), otherwise
/// the address without scheme, query and fragment. Only the first word counts (`URL
/// (user quoting ...)`).
///
/// ```
/// use ridgeline_fit::calibrate::source_key;
/// assert_eq!(
///     source_key("https://github.com/ggml-org/llama.cpp/pull/4766"),
///     source_key("https://github.com/ggml-org/llama.cpp/blob/abc/README.md")
/// );
/// assert_eq!(source_key("https://blogs.example.org/post?x=1"), "blogs.example.org/post");
/// ```
pub fn source_key(source: &str) -> String {
    let first = source.split_whitespace().next().unwrap_or("");
    let s = first
        .trim_start_matches("https://")
        .trim_start_matches("http://")
        .trim_start_matches("www.");
    let s = s
        .split(['?', '#'])
        .next()
        .unwrap_or(s)
        .trim_end_matches('/');
    match s.strip_prefix("github.com/") {
        Some(path) => format!(
            "github.com/{}",
            path.split('/').take(2).collect::<Vec<_>>().join("/")
        ),
        None => s.to_string(),
    }
    .to_ascii_lowercase()
}

/// The rows a calibration fits (kinds A, B and C; kind F rows bound it instead).
fn fitted_rows(mapped: &Mapped) -> impl Iterator<Item = (usize, &Case)> {
    mapped
        .cases
        .iter()
        .enumerate()
        .filter(|(_, c)| c.kind != Kind::F)
}

/// Holds out each group of rows in turn (rows with the same `group` key), fits on the
/// rest and predicts the group. Only the fits a held-out row's prediction depends on
/// are redone: `typical` when the group has pooled rows, and the rows' own engines.
fn held_out(
    mapped: &Mapped,
    engines: &EngineDb,
    group: impl Fn(&Case) -> String + Sync,
    tally: &Tally,
) -> Result<Vec<HeldOut>> {
    let bounds = bounds_for(mapped)?;
    let all: Vec<&Case> = mapped.cases.iter().collect();
    let typical = fit_typical(&all, engines, &bounds)?.map(|f| f.engine);
    let mut folds: Vec<(String, Vec<usize>)> = Vec::new();
    for (i, c) in fitted_rows(mapped) {
        let key = group(c);
        match folds.iter_mut().find(|(k, _)| *k == key) {
            Some((_, rows)) => rows.push(i),
            None => folds.push((key, vec![i])),
        }
    }
    let fold = Fold {
        mapped,
        engines,
        bounds: &bounds,
        typical: typical.as_ref(),
    };
    let w = ridgeline_core::work::current();
    let results: Vec<Result<Vec<(usize, HeldOut)>>> = folds
        .par_iter()
        .map(|(_, out)| {
            ridgeline_core::work::within(w.as_ref(), || {
                ridgeline_core::work::check()?;
                let held = fold.predict(out);
                tally.add(out.len());
                held
            })
        })
        .collect();
    let mut out = Vec::new();
    for r in results {
        out.extend(r?);
    }
    out.sort_by_key(|(i, _)| *i);
    Ok(out.into_iter().map(|(_, h)| h).collect())
}

/// What every fold shares: the rows, the database, the ceilings and `typical` fitted
/// on all rows.
struct Fold<'a> {
    mapped: &'a Mapped,
    engines: &'a EngineDb,
    bounds: &'a Bounds,
    typical: Option<&'a Engine>,
}

impl Fold<'_> {
    /// Fits without the rows `out` (indices into the cases) and predicts them.
    fn predict(&self, out: &[usize]) -> Result<Vec<(usize, HeldOut)>> {
        let cases = &self.mapped.cases;
        let rest: Vec<&Case> = (0..cases.len())
            .filter(|i| !out.contains(i))
            .map(|i| &cases[i])
            .collect();
        let typical = if out.iter().any(|&i| pooled(&cases[i])) {
            fit_typical(&rest, self.engines, self.bounds)?.map(|f| f.engine)
        } else {
            self.typical.cloned()
        };
        let mut fitted: Vec<(&str, Engine)> = Vec::new();
        let mut held = Vec::with_capacity(out.len());
        for &i in out {
            let c = &cases[i];
            let at = match fitted.iter().position(|(id, _)| *id == c.engine) {
                Some(at) => at,
                None => {
                    let e = self.engine_without(&c.engine, &rest, typical.as_ref())?;
                    fitted.push((&c.engine, e));
                    fitted.len() - 1
                }
            };
            let engine = &fitted[at].1;
            let p = predict_case(c, engine).map_err(|e| c.row_error(e))?;
            held.push((
                i,
                HeldOut {
                    id: c.id.clone(),
                    kind: c.kind,
                    engine: c.engine.clone(),
                    error_pct: 100.0 * (p / c.measured - 1.0),
                },
            ));
        }
        Ok(held)
    }

    /// The profile [`super::calibrate`] gives engine `id` from the rows `rest`, with
    /// `typical` fitted on them (`None`: no pooled rows, typical as given).
    fn engine_without(&self, id: &str, rest: &[&Case], typical: Option<&Engine>) -> Result<Engine> {
        if id == "typical" {
            return match typical {
                Some(t) => Ok(t.clone()),
                None => base_for(self.engines, id),
            };
        }
        if id != "ideal" && rest.iter().any(|c| c.engine == id && c.kind != Kind::F) {
            let t = match typical {
                Some(t) => t.clone(),
                None => self.engines.get("typical")?.clone(),
            };
            return Ok(fit_engine(id, rest, self.engines, self.bounds, &t)?.engine);
        }
        // the engine's rows were all held out: its profile is typical's, without the
        // factors an earlier fit keyed to one device (that device's rows, held out here)
        let mut e = match typical {
            Some(t) => start_from_typical(&base_for(self.engines, id)?, t),
            None => base_for(self.engines, id)?,
        };
        super::factors::drop_keyed(&mut e, |_| true);
        Ok(e)
    }
}

/// Median absolute % errors of one kind.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct KindAccuracy {
    /// Kind.
    pub kind: Kind,
    /// Rows compared.
    pub rows: usize,
    /// The pure roofline (`ideal`).
    pub ideal_pct: f64,
    /// The engines as given (for the bundled file: fitted on these rows).
    pub fitted_pct: f64,
    /// Each row predicted by a fit without it ([`leave_one_out`]).
    pub leave_one_out_pct: f64,
    /// Each row predicted by a fit without its publication ([`leave_one_source_out`]).
    pub leave_one_source_out_pct: f64,
}

/// How well the engines predict a measurements file, in sample and held out.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Accuracy {
    /// Kinds A, B and C, those with rows.
    pub kinds: Vec<KindAccuracy>,
    /// Publications the rows come from ([`source_key`]).
    pub sources: usize,
    /// Held-out errors, one per row.
    pub leave_one_out: Vec<HeldOut>,
    /// Held-out errors by publication, one per row.
    pub leave_one_source_out: Vec<HeldOut>,
}

/// Median absolute errors per kind of the rows in `mapped`: with the pure roofline,
/// with the engines of `engines`, leave one out and leave one source out (refitting
/// from `engines`).
pub fn accuracy(mapped: &Mapped, engines: &EngineDb) -> Result<Accuracy> {
    accuracy_with_progress(mapped, engines, &|_, _, _| {})
}

/// [`accuracy`], telling `progress` how many rows have been held out of how many
/// (each row twice: left out alone, and with its publication).
pub fn accuracy_with_progress(
    mapped: &Mapped,
    engines: &EngineDb,
    progress: Progress,
) -> Result<Accuracy> {
    let n = fitted_rows(mapped).count();
    let tally = |what, before| Tally {
        what,
        done: AtomicUsize::new(0),
        before,
        total: 2 * n,
        progress,
    };
    let loo = held_out(
        mapped,
        engines,
        |c| c.id.clone(),
        &tally("leave one row out", 0),
    )?;
    let loso = held_out(
        mapped,
        engines,
        |c| source_key(&c.source),
        &tally("leave one source out", n),
    )?;
    let ideal = Engine::ideal();
    let mut kinds = Vec::new();
    for kind in [Kind::A, Kind::B, Kind::C] {
        let of: Vec<&Case> = mapped.cases.iter().filter(|c| c.kind == kind).collect();
        if of.is_empty() {
            continue;
        }
        let err = |c: &Case, e: &Engine| -> Result<f64> {
            let p = predict_case(c, e).map_err(|x| c.row_error(x))?;
            Ok(100.0 * (p / c.measured - 1.0))
        };
        let mut ideal_err = Vec::new();
        let mut fitted_err = Vec::new();
        for c in &of {
            ideal_err.push(err(c, &ideal)?);
            fitted_err.push(err(c, &base_for(engines, &c.engine)?)?);
        }
        let held =
            |h: &[HeldOut]| median_abs(h.iter().filter(|h| h.kind == kind).map(|h| h.error_pct));
        kinds.push(KindAccuracy {
            kind,
            rows: of.len(),
            ideal_pct: median_abs(ideal_err),
            fitted_pct: median_abs(fitted_err),
            leave_one_out_pct: held(&loo),
            leave_one_source_out_pct: held(&loso),
        });
    }
    let mut sources: Vec<String> = fitted_rows(mapped)
        .map(|(_, c)| source_key(&c.source))
        .collect();
    sources.sort();
    sources.dedup();
    Ok(Accuracy {
        kinds,
        sources: sources.len(),
        leave_one_out: loo,
        leave_one_source_out: loso,
    })
}
