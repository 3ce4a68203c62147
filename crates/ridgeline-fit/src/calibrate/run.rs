//! Calibrating every engine of a measurements file: `typical` on the pooled rows of the
//! tuned engines, then each engine on its own rows pulled toward `typical`; and the
//! report of each row before and after.

use super::many::Distinct;
use super::{
    BUILTIN_MEASUREMENTS_CSV, Bounds, Case, Compared, ENGINE_IDS, EngineFit, FitOptions, Kind,
    Mapped, OverheadKind, ParamKind, Skipped, TYPICAL_POOL, bounds_from_ceilings, cases,
    check_measurements, fit, median_abs, parse_measurements, version_profile,
};
use crate::engine::{DeviceFactor, Engine, EngineDb};
use crate::error::{Error, Result};
use serde::Serialize;
use std::collections::HashSet;

/// One row before and after calibration.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct RowReport {
    /// The row and the engine it was compared with.
    #[serde(flatten)]
    pub row: Compared,
    /// Predicted with the engine as given (before the fit), SI units.
    pub predicted_before: f64,
    /// Predicted with the fitted engine, SI units.
    pub predicted_after: f64,
    /// `100 · (before / measured - 1)`.
    pub error_before_pct: f64,
    /// `100 · (after / measured - 1)`.
    pub error_after_pct: f64,
    /// Whether the row was used in the fit (kind F rows bound it instead).
    pub fitted: bool,
    /// What had to be assumed to map the row.
    pub assumptions: Vec<String>,
}

/// Median absolute % error of one kind, before and after.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct KindSummary {
    /// Kind.
    pub kind: Kind,
    /// Rows compared.
    pub rows: usize,
    /// Median |error| with the engines as given, %.
    pub median_abs_error_before_pct: f64,
    /// Median |error| with the fitted engines, %.
    pub median_abs_error_after_pct: f64,
}

/// Everything `ridgeline calibrate` reports.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct Calibration {
    /// Ceilings the efficiencies were bounded by.
    pub bounds: Bounds,
    /// One fit per engine.
    pub engines: Vec<EngineFit>,
    /// Every mapped row, before and after.
    pub rows: Vec<RowReport>,
    /// Median errors by kind.
    pub summary: Vec<KindSummary>,
    /// Rows that could not be mapped, with reasons.
    pub skipped: Vec<Skipped>,
}

/// Fit options used for `engine`.
///
/// Every engine fits its efficiencies and, with at least six rows, a per-layer overhead
/// (`layer_overhead_s`: kernel launches and the gaps between them grow with depth; on the
/// bundled rows it predicts held-out rows better than a per-step overhead: leave-one-out
/// median error 9.7% against 11.0%). Eager PyTorch (`hf`) runs the same cuBLAS/ATen
/// kernels as the tuned engines, so its efficiencies stay those of `typical`, and what
/// sets it apart, Python's per-module overhead, is fitted even from a single row (pulled
/// toward `typical`'s like every engine's overhead, [`FitOptions::prior_rows`]: its
/// publications range from eager loops far from the roofline to static-cache runs near
/// it, and held out by source the pull predicts them better).
pub fn options_for(engine: &str, bounds: &Bounds, prior: Option<&Engine>) -> FitOptions {
    let mut o = FitOptions {
        bounds: bounds.clone(),
        prior: prior.cloned(),
        overhead: OverheadKind::Layer,
        ..FitOptions::default()
    };
    if engine == "hf" {
        o.min_rows_for_overhead = 1;
        o.fit_efficiencies = false;
    }
    if engine == "typical" || engine == "ideal" {
        o.prior = None;
    }
    o
}

/// The profile of `id` in `engines`, or, for an engine the database lacks, a copy of
/// `typical` under that id (the starting point of its fit).
pub fn base_for(engines: &EngineDb, id: &str) -> Result<Engine> {
    match engines.get(id) {
        Ok(e) => Ok(e.clone()),
        Err(_) => {
            let mut e = engines.get("typical")?.clone();
            e.id = id.to_string();
            e.description = format!("{id}: not in the engine database; starts from typical");
            e.provenance.fitted_on.clear();
            e.provenance.factors.clear();
            Ok(e)
        }
    }
}

/// `engine` with its speed factors replaced by `typical`'s (the memory, compute and fp4
/// efficiencies and the overheads: fp4 GEMMs are the same CUTLASS/cuBLASLt block-scaled
/// kernels in every engine that has them); its memory-footprint fields (overhead bytes,
/// reserve), link factors and other kernel factors stay. A fit starts here, so a factor the engine's rows do not inform is `typical`'s,
/// whatever the engine had before: calibrating twice gives the same profile.
pub fn start_from_typical(engine: &Engine, typical: &Engine) -> Engine {
    let mut e = engine.clone();
    e.speed.memory_efficiency = typical.speed.memory_efficiency.clone();
    // typical's memory efficiencies keyed to one device come along with its groups'
    e.take_device_factor(DeviceFactor::MemoryEfficiency);
    for o in &typical.devices {
        if let Some(v) = o.memory_efficiency {
            e.set_override(&o.select, DeviceFactor::MemoryEfficiency, Some(v));
        }
    }
    e.overheads.expert_overhead_s = typical.overheads.expert_overhead_s;
    e.provenance.fitted_on.clear();
    e.provenance.factors.clear();
    for f in super::FACTORS.iter().filter(|f| f.from_typical) {
        (f.copy)(&mut e, typical);
    }
    e
}

/// Tags as `carried over from typical` the speed factors of `e` that hold `typical`'s
/// value without a tag of their own ([`start_from_typical`] copied them; no row of the
/// engine informs them): the registry's factors that start from `typical`, and the
/// memory efficiencies equal to typical's.
pub fn tag_carried(e: &mut Engine, typical: &Engine) {
    let carried = || crate::engine::FactorTag::Carried {
        from: typical.id.clone(),
    };
    for factor in super::FACTORS.iter().filter(|x| x.from_typical) {
        if !e.provenance.factors.contains_key(factor.key)
            && (factor.stored)(typical).is_some()
            && (factor.get)(e) == (factor.get)(typical)
        {
            e.provenance
                .factors
                .insert(factor.key.to_string(), carried());
        }
    }
    for (k, v) in &typical.speed.memory_efficiency {
        let key = format!("memory_efficiency.{k}");
        if !e.provenance.factors.contains_key(&key) && e.speed.memory_efficiency.get(k) == Some(v) {
            e.provenance.factors.insert(key, carried());
        }
    }
}

/// Memory groups a fit did not reach (an engine measured only on HBM parts, say) take
/// `typical`'s value times the engine's own ratio to `typical` on the groups it was
/// fitted on (geometric mean), within the bounds: an engine whose decode kernels reach
/// 10% less bandwidth than typical on HBM is assumed to reach 10% less on GDDR too.
pub fn carry_over_memory(f: &mut EngineFit, typical: &Engine, bounds: &Bounds) {
    // every fitted group sets the ratio, those keyed to their one device among them
    let fitted: Vec<(String, f64)> = f
        .params
        .iter()
        .filter_map(|p| match &p.kind {
            ParamKind::Memory(g) => Some((g.clone(), p.value)),
            _ => None,
        })
        .collect();
    let kept: Vec<&String> = f
        .params
        .iter()
        .filter(|p| p.key == p.kind.key())
        .filter_map(|p| match &p.kind {
            ParamKind::Memory(g) => Some(g),
            _ => None,
        })
        .collect();
    if fitted.is_empty() {
        return;
    }
    let typ = |g: &str| {
        typical
            .speed
            .memory_efficiency
            .get(g)
            .or_else(|| typical.speed.memory_efficiency.get("default"))
            .copied()
            .unwrap_or(1.0)
    };
    let ln_ratio = fitted.iter().map(|(g, v)| (v / typ(g)).ln()).sum::<f64>() / fitted.len() as f64;
    let ratio = ln_ratio.exp();
    let keys: Vec<String> = typical.speed.memory_efficiency.keys().cloned().collect();
    let mut derived = Vec::new();
    for k in keys {
        if kept.contains(&&k) {
            continue;
        }
        let hi = bounds
            .memory
            .get(&k)
            .copied()
            .unwrap_or(bounds.memory_default);
        // max then min: no panic where a caller's bounds cross (fit refuses them)
        let v = (typ(&k) * ratio).max(bounds.min_efficiency).min(hi);
        f.engine.speed.memory_efficiency.insert(k.clone(), v);
        f.engine.provenance.factors.insert(
            format!("memory_efficiency.{k}"),
            crate::engine::FactorTag::Carried {
                from: typical.id.clone(),
            },
        );
        derived.push(format!("{k} {v:.3}"));
    }
    if !derived.is_empty() {
        f.notes.push(format!(
            "memory_efficiency not measured, carried over from typical x {ratio:.3}: {}",
            derived.join(", ")
        ));
    }
}

/// Efficiency ceilings from the kind F rows of `mapped`, or from those of the bundled
/// file when `mapped` has none.
///
/// Rows no device or engine could produce are refused first ([`check_measurements`]).
pub(super) fn bounds_for(mapped: &Mapped) -> Result<Bounds> {
    check_measurements(&mapped.cases)?;
    let bounds = bounds_from_ceilings(&mapped.cases);
    if !bounds.from.is_empty() {
        return Ok(bounds);
    }
    let bundled = |e: Error| Error::internal("bundled measurements", e);
    let rows = parse_measurements(
        BUILTIN_MEASUREMENTS_CSV,
        "data/measurements/measurements.csv",
    )
    .map_err(bundled)?;
    Ok(bounds_from_ceilings(&cases(&rows).map_err(bundled)?.cases))
}

/// Whether a row counts toward `typical` (its engine is in the pool, or is `typical`).
pub(super) fn pooled(c: &Case) -> bool {
    c.kind != Kind::F && (c.engine == "typical" || TYPICAL_POOL.contains(&c.engine.as_str()))
}

/// `typical` fitted on the pooled rows among `cases`; `None` without any.
pub(super) fn fit_typical(
    cases: &[&Case],
    engines: &EngineDb,
    bounds: &Bounds,
) -> Result<Option<EngineFit>> {
    let rows: Vec<&Case> = cases.iter().copied().filter(|c| pooled(c)).collect();
    if rows.is_empty() {
        return Ok(None);
    }
    let typical = engines.get("typical")?;
    fit(typical, &rows, &options_for("typical", bounds, None)).map(Some)
}

/// Engine `id` fitted on its rows among `cases`, starting from `typical`'s speed
/// factors and pulled toward them; memory groups it was not measured on carried over.
/// Where a row reads kernel tables ([`Case::reads_tables`]), the engine is fitted on
/// the rows that do alone, with a per-step overhead and no per-layer one: a measured
/// kernel's time already includes its launch.
pub(super) fn fit_engine(
    id: &str,
    cases: &[&Case],
    engines: &EngineDb,
    bounds: &Bounds,
    typical: &Engine,
) -> Result<EngineFit> {
    if let Some((base_id, description)) = version_profile(id) {
        return fit_release((id, base_id, description), cases, engines, bounds, typical);
    }
    let mut base = start_from_typical(&base_for(engines, id)?, typical);
    let mut rows: Vec<&Case> = cases
        .iter()
        .copied()
        .filter(|c| c.engine == id && c.kind != Kind::F)
        .collect();
    let mut o = options_for(id, bounds, Some(typical));
    if rows.iter().any(|c| c.reads_tables()) {
        // the profile on tables is used only where a table covers the device
        // (`KernelDb::engine_for`): fitted on those rows alone
        rows.retain(|c| c.reads_tables());
        // measured kernel times include their launches and the gaps between them, and
        // a kernel no table covers pays the table's shortest measured kernel
        // ([`crate::kernels::Table::shortest_kernel_s`]): a per-layer term would count
        // them twice, so only the per-pass overhead (scheduling, sampling, what no
        // kernel covers) is fitted; the prompt pass's per-layer term
        // (`prefill_layer_overhead_s`, not fitted) stays: without it the prompt rows
        // held out by source come out 5 points worse (examples/kernel_refit;
        // docs/calibration-log.md)
        o.overhead = super::OverheadKind::Step;
        base.overheads.layer_overhead_s = 0.0;
    }
    let mut f = fit(&base, &rows, &o)?;
    carry_over_memory(&mut f, typical, bounds);
    tag_carried(&mut f.engine, typical);
    Ok(f)
}

/// A release's profile ([`super::VERSION_PROFILES`]) fitted on its rows among `cases`: its
/// base engine as [`fit_engine`] fits it on the same rows (those that read no kernel
/// table: a release's rows run its own kernels, which no table measures), with the
/// release's own factor, the host time per running sequence (`sequence_overhead_s`),
/// fitted on the release's rows alone (even one), every other factor kept and tagged as
/// carried over from the base. The release's rows thus set only what sets it apart,
/// and the base's rows the kernels they share.
fn fit_release(
    (id, base_id, description): (&str, &str, &str),
    cases: &[&Case],
    engines: &EngineDb,
    bounds: &Bounds,
    typical: &Engine,
) -> Result<EngineFit> {
    let plain: Vec<&Case> = cases
        .iter()
        .copied()
        .filter(|c| !c.reads_tables())
        .collect();
    let mut base = if plain
        .iter()
        .any(|c| c.engine == base_id && c.kind != Kind::F)
    {
        fit_engine(base_id, &plain, engines, bounds, typical)?.engine
    } else {
        let mut e = start_from_typical(&base_for(engines, base_id)?, typical);
        tag_carried(&mut e, typical);
        e
    };
    let carried: Vec<String> = base.provenance.factors.keys().cloned().collect();
    base.id = id.to_string();
    base.description = description.to_string();
    base.provenance.kernels_of = Some(
        base.provenance
            .kernels_of
            .clone()
            .unwrap_or_else(|| base_id.to_string()),
    );
    base.provenance.base = Some(base_id.to_string());
    // a start inside the bounds, away from 0, whatever an earlier fit wrote
    base.overheads.sequence_overhead_s = 1e-5;
    let rows: Vec<&Case> = plain
        .iter()
        .copied()
        .filter(|c| c.engine == id && c.kind != Kind::F)
        .collect();
    let o = FitOptions {
        overhead: OverheadKind::Sequence,
        min_rows_for_overhead: 1,
        fit_efficiencies: false,
        bounds: bounds.clone(),
        prior: None,
        ..FitOptions::default()
    };
    let mut f = fit(&base, &rows, &o)?;
    for key in carried {
        f.engine.provenance.factors.entry(key).or_insert_with(|| {
            crate::engine::FactorTag::Carried {
                from: base_id.to_string(),
            }
        });
    }
    Ok(f)
}

/// The engine id `only` names (an id of `engines`, or one of [`ENGINE_IDS`]).
fn resolve_only(engines: &EngineDb, only: Option<&str>) -> Result<Option<String>> {
    only.map(|e| {
        let q = e.trim().to_ascii_lowercase();
        match engines.get(&q) {
            Ok(e) => Ok(e.id.clone()),
            Err(_) if ENGINE_IDS.contains(&q.as_str()) => Ok(q),
            Err(err) => Err(err),
        }
    })
    .transpose()
}

/// Fits every engine that has rows in `mapped` (only `only` when given), starting from
/// and completing the profiles in `engines`.
///
/// `typical` is fitted on the pooled rows of [`TYPICAL_POOL`] (and rows whose framework
/// is literally `typical`); each other engine on its own rows, pulled toward the fitted
/// `typical` by [`FitOptions::prior_rows`]. Efficiencies are bounded by the kind F
/// ceilings in `mapped`, or by those of the bundled file when `mapped` has none.
pub fn calibrate(mapped: &Mapped, engines: &EngineDb, only: Option<&str>) -> Result<Calibration> {
    calibrate_with_progress(mapped, engines, only, &|_, _, _| {})
}

/// Told how far a long calibration has got: what it is doing, and how many of how many
/// rows it has done (`("fitting llama.cpp", 2574, 12775)`); called from any thread.
pub type Progress<'a> = &'a (dyn Fn(&str, usize, usize) + Sync);

/// [`calibrate`], telling `progress` before each engine's fit and before the rows are
/// compared (rows counted once per fit they are in, and once compared).
pub fn calibrate_with_progress(
    mapped: &Mapped,
    engines: &EngineDb,
    only: Option<&str>,
    progress: Progress,
) -> Result<Calibration> {
    let bounds = bounds_for(mapped)?;
    let only = resolve_only(engines, only)?;
    let wants = |id: &str| only.as_deref().is_none_or(|o| o == id);
    let all: Vec<&Case> = mapped.cases.iter().collect();
    // an engine asked for by name must have rows to fit (typical pools every engine's)
    if let Some(o) = only.as_deref().filter(|&o| o != "typical")
        && !all.iter().any(|c| c.engine == o && c.kind != Kind::F)
    {
        {
            let mut have: Vec<&str> = all
                .iter()
                .filter(|c| c.kind != Kind::F)
                .map(|c| c.engine.as_str())
                .collect();
            have.sort_unstable();
            have.dedup();
            return Err(Error::invalid(
                "engine",
                if have.is_empty() {
                    format!("no row of the measurements is for {o}: the file has no engine rows")
                } else {
                    format!(
                        "no row of the measurements is for {o}; the file has rows for {}",
                        have.join(", ")
                    )
                },
            ));
        }
    }
    let mut ids: Vec<&str> = Vec::new();
    for c in mapped.cases.iter().filter(|c| c.kind != Kind::F) {
        if !ids.contains(&c.engine.as_str()) {
            ids.push(&c.engine);
        }
    }
    ids.sort();
    ids.retain(|id| *id != "typical" && *id != "ideal" && wants(id));
    let rows_of = |id: &str| {
        all.iter()
            .filter(|c| c.engine == id && c.kind != Kind::F)
            .count()
    };
    let pooled_rows = if wants("typical") {
        all.iter().filter(|c| pooled(c)).count()
    } else {
        0
    };
    let total = pooled_rows + ids.iter().map(|id| rows_of(id)).sum::<usize>() + all.len();
    let mut done = 0;
    let mut fits: Vec<EngineFit> = Vec::new();
    let mut typical = engines.get("typical")?.clone();
    if wants("typical") {
        progress("fitting typical", done, total);
        if let Some(f) = fit_typical(&all, engines, &bounds)? {
            typical = f.engine.clone();
            fits.push(f);
        }
        done += pooled_rows;
    }
    for id in ids {
        progress(&format!("fitting {id}"), done, total);
        fits.push(fit_engine(id, &all, engines, &bounds, &typical)?);
        done += rows_of(id);
    }
    progress("comparing rows", done, total);
    let rows = row_reports(mapped, engines, &fits, only.as_deref())?;
    Ok(Calibration {
        bounds,
        engines: fits,
        summary: kind_summary(&rows),
        rows,
        skipped: mapped.skipped.clone(),
    })
}

/// The profile a row is shown against: with `--engine typical`, the pooled rows (and
/// the ceilings) against typical; otherwise its own engine, if calibrated.
fn profile_of<'c>(c: &'c Case, only: Option<&str>) -> Option<&'c str> {
    if only == Some("typical") && (c.kind == Kind::F || TYPICAL_POOL.contains(&c.engine.as_str())) {
        Some("typical")
    } else if only.is_none_or(|o| o == c.engine) {
        Some(c.engine.as_str())
    } else {
        None
    }
}

/// Each row of the engines calibrated, predicted before and after (each profile's
/// distinct predictions once, in parallel).
fn row_reports(
    mapped: &Mapped,
    engines: &EngineDb,
    fits: &[EngineFit],
    only: Option<&str>,
) -> Result<Vec<RowReport>> {
    let fitted = |id: &str| fits.iter().find(|f| f.engine.id == id).map(|f| &f.engine);
    let used: HashSet<&str> = fits
        .iter()
        .flat_map(|f| f.rows.iter().map(String::as_str))
        .collect();
    let shown: Vec<(&Case, &str)> = mapped
        .cases
        .iter()
        .filter_map(|c| Some((c, profile_of(c, only)?)))
        .collect();
    let mut profiles: Vec<&str> = shown.iter().map(|(_, p)| *p).collect();
    profiles.sort_unstable();
    profiles.dedup();
    let mut predicted: Vec<(f64, f64)> = vec![(f64::NAN, f64::NAN); shown.len()];
    for profile in profiles {
        let at: Vec<usize> = (0..shown.len())
            .filter(|&i| shown[i].1 == profile)
            .collect();
        let cases: Vec<&Case> = at.iter().map(|&i| shown[i].0).collect();
        let rows = Distinct::new(&cases);
        let before = &base_for(engines, profile)?;
        let pb = rows.predict(before);
        let pa = match fitted(profile) {
            Some(after) if after != before => rows.predict(after),
            _ => pb.clone(),
        };
        for ((i, b), a) in at.into_iter().zip(pb).zip(pa) {
            predicted[i] = (b.unwrap_or(f64::NAN), a.unwrap_or(f64::NAN));
        }
    }
    Ok(shown
        .into_iter()
        .zip(predicted)
        .map(|((c, profile), (pb, pa))| {
            let row = Compared::new(c, profile);
            RowReport {
                error_before_pct: row.error_pct(pb),
                error_after_pct: row.error_pct(pa),
                row,
                predicted_before: pb,
                predicted_after: pa,
                fitted: used.contains(c.id.as_str()),
                assumptions: c.assumptions.clone(),
            }
        })
        .collect())
}

/// Median errors by kind, before and after.
fn kind_summary(rows: &[RowReport]) -> Vec<KindSummary> {
    let mut kinds: Vec<Kind> = rows.iter().map(|r| r.row.kind).collect();
    kinds.sort();
    kinds.dedup();
    kinds
        .into_iter()
        .map(|k| {
            let of: Vec<&RowReport> = rows.iter().filter(|r| r.row.kind == k).collect();
            KindSummary {
                kind: k,
                rows: of.len(),
                median_abs_error_before_pct: median_abs(of.iter().map(|r| r.error_before_pct)),
                median_abs_error_after_pct: median_abs(of.iter().map(|r| r.error_after_pct)),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calibrate::{
        BUILTIN_MEASUREMENTS_CSV, CaseKernels, Mapped, ParamKind, cases, parse_measurements,
        predict_case, predict_case_with,
    };
    use crate::hardware::HardwareDb;
    use ridgeline_core::kernels::KernelDb;

    /// Rows predicted with the kernel tables fit a per-pass overhead and no per-layer
    /// one (the measured kernel times hold their launches); the same rows without the
    /// tables keep the per-layer overhead. A case carries its tables into every
    /// prediction of the fit ([`predict_case`]).
    #[test]
    fn on_the_kernel_tables_an_engine_fits_no_per_layer_overhead() {
        let rows = parse_measurements(BUILTIN_MEASUREMENTS_CSV, "m.csv").unwrap();
        let plain = cases(&rows).unwrap();
        let engines = EngineDb::builtin().unwrap();
        let hw = HardwareDb::builtin().unwrap();
        let tables = plain.clone().with_kernels(CaseKernels {
            db: KernelDb::builtin().unwrap().clone(),
            hardware: hw.clone(),
        });
        let fitted = |m: &Mapped| {
            let cal = calibrate(m, engines, Some("trt-llm")).unwrap();
            cal.engines
                .into_iter()
                .find(|f| f.engine.id == "trt-llm")
                .unwrap()
        };
        let (p, t) = (fitted(&plain), fitted(&tables));
        let has = |f: &EngineFit, k: ParamKind| f.params.iter().any(|x| x.kind == k);
        assert!(has(&p, ParamKind::LayerOverhead) && !has(&p, ParamKind::StepOverhead));
        assert!(p.engine.overheads.layer_overhead_s > 0.0);
        assert!(has(&t, ParamKind::StepOverhead) && !has(&t, ParamKind::LayerOverhead));
        assert_eq!(t.engine.overheads.layer_overhead_s, 0.0);
        // a trt-llm row on an H100 SXM is predicted with the tables it carries
        let c = tables
            .cases
            .iter()
            .find(|c| c.engine == "trt-llm" && c.hardware.id == "h100-sxm" && c.model.is_some())
            .unwrap();
        let k = c.kernels.as_deref().unwrap();
        let e = &t.engine;
        assert_eq!(
            predict_case(c, e).unwrap(),
            predict_case_with(c, e, Some((&k.db, &k.hardware))).unwrap()
        );
        assert_ne!(
            predict_case(c, e).unwrap(),
            predict_case_with(c, e, None).unwrap()
        );
    }
}
