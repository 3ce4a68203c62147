//! Fits the training efficiency factors ([`TrainEfficiency`], per chip architecture) to
//! the published throughput runs (kind D rows of the measurements CSV, configured by
//! [`super::runs`]), and writes them as `data/training.toml`
//! (`ridgeline calibrate --train`).
//!
//! The fit is a grid search minimising the median `|predicted / measured - 1|` (ties
//! broken by the mean, then by the smaller value), per architecture:
//!
//! 1. the 16-bit matmul fraction `compute` (with `attention` equal to it) jointly with
//!    the fp8 fraction `compute_fp8` when the architecture has fp8 rows (else
//!    `compute_fp8 = compute`, unused), on a grid of [`COMPUTE_STEP`];
//! 2. a separate `attention` fraction, at most `compute` (see
//!    [`TrainEfficiency::validate`]), kept only when it lowers the median error by at
//!    least [`ATTENTION_MIN_GAIN`].
//!
//! An entry whose attention kernels are measured (`data/kernels/training-attention.toml`,
//! [`attention`]) keeps them: its steps run their attention at the measured fraction
//! for their query length, step 1 fits `compute` (which may then be below the kernels'
//! fraction: it holds a whole step's losses) and step 2 is skipped.
//!
//! Not fitted, because the runs do not identify them: `memory` and `link`
//! ([`MEMORY_PRIOR`], [`LINK_PRIOR`]; no published run is bound by memory or links
//! alone), `overlap_tp` ([`OVERLAP_TP_PRIOR`]: none of the runs is described as
//! overlapping its tensor-parallel collectives with compute, asynchronous TP) and `overlap_dp`
//! ([`OVERLAP_DP_PRIOR`]: DDP and FSDP overlap the gradient reduction with the backward
//! pass). For `overlap_dp` the fit repeats steps 1 and 2 at every value from 0 to 1 (step
//! [`OVERLAP_STEP`]) and reports the median over all rows at each
//! ([`TrainFit::overlap_profile`]): the compute fractions absorb the difference, and the
//! median moves by less than two points over the whole range without a clear minimum,
//! so the data cannot pick one.
//! Kind E (memory) rows do not depend on the factors; their errors are reported alongside.

use super::attention;
use super::config::TrainPrecision;
use super::efficiency::{EfficiencyTable, TrainEfficiency, lookup_keys, split_key, table_key};
use super::runs::{Metric, PublishedRun, PublishedRuns, RunSetups, Skipped, published_runs};
use crate::calibrate::{Measurement, read_measurements};
use crate::error::Result;
use rayon::prelude::*;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::Path;

/// Grid step of `compute`, `compute_fp8` and `attention`.
pub const COMPUTE_STEP: f64 = 0.02;
/// Grid step of the `overlap_dp` scan.
pub const OVERLAP_STEP: f64 = 0.1;
/// The least improvement of the median error that earns `attention` its own value.
pub const ATTENTION_MIN_GAIN: f64 = 0.005;
/// Fraction of memory bandwidth reached by memory-bound kernels (not fitted).
pub const MEMORY_PRIOR: f64 = 0.8;
/// Fraction of link bandwidth reached by collectives (not fitted).
pub const LINK_PRIOR: f64 = 0.8;
/// Fraction of data-parallel communication hidden behind compute (not fitted; the fit
/// reports the median error at every other value, [`TrainFit::overlap_profile`]).
pub const OVERLAP_DP_PRIOR: f64 = 0.8;
/// Fraction of tensor-parallel communication hidden behind compute (not fitted).
pub const OVERLAP_TP_PRIOR: f64 = 0.0;

/// `lo..=hi` in hundredths, every `step` hundredths (exact decimals: 0.64, not
/// 0.6400000000000001).
fn grid(lo: u32, hi: u32, step: u32) -> Vec<f64> {
    (lo..=hi)
        .step_by(step as usize)
        .map(|i| f64::from(i) / 100.0)
        .collect()
}

/// `compute` and `attention` candidates: 0.30 to 0.80.
fn compute_grid() -> Vec<f64> {
    grid(30, 80, 2)
}

/// `compute_fp8` candidates: 0.16 to 0.60.
fn fp8_grid() -> Vec<f64> {
    grid(16, 60, 2)
}

/// Overlap candidates: 0 to 1.
fn overlap_grid() -> Vec<f64> {
    grid(0, 100, 10)
}

/// Median and mean of `|e|`.
fn score(errors: &[f64]) -> (f64, f64) {
    let mut a: Vec<f64> = errors.iter().map(|e| e.abs()).collect();
    a.sort_by(f64::total_cmp);
    let n = a.len();
    if n == 0 {
        return (f64::NAN, f64::NAN);
    }
    let median = ridgeline_core::stats::median_sorted(&a);
    (median, a.iter().sum::<f64>() / n as f64)
}

/// The candidate with the lowest (median, mean) score; the first on ties.
fn best<T: Copy + Send + Sync>(
    candidates: &[T],
    errors: impl Fn(T) -> Result<Vec<f64>> + Sync,
) -> Result<(T, (f64, f64))> {
    let w = ridgeline_core::work::current();
    let scored: Vec<(T, (f64, f64))> = candidates
        .par_iter()
        .map(|&c| {
            ridgeline_core::work::within(w.as_ref(), || {
                ridgeline_core::work::check()?;
                Ok((c, score(&errors(c)?)))
            })
        })
        .collect::<Result<_>>()?;
    let mut it = scored.into_iter();
    let first = it
        .next()
        .ok_or_else(|| crate::Error::internal("train calibrate", "empty grid"))?;
    Ok(it.fold(first, |a, b| if b.1 < a.1 { b } else { a }))
}

/// Errors of `runs` with `eff`.
fn errors(runs: &[&PublishedRun], eff: &TrainEfficiency) -> Result<Vec<f64>> {
    runs.iter().map(|r| r.error(Some(eff))).collect()
}

/// One row at the fitted factors.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct RowFit {
    /// Row id.
    pub id: String,
    /// Model, framework and devices as the source names them.
    pub label: String,
    /// Device id.
    pub device: String,
    /// Its architecture.
    pub architecture: String,
    /// What was measured.
    pub metric: Metric,
    /// Micro-batch used.
    pub micro_batch: u64,
    /// Measured, in the metric's units (tokens/s, FLOP/s, fraction, bytes).
    pub measured: f64,
    /// Predicted, the same units.
    pub predicted: f64,
    /// `predicted / measured - 1`.
    pub error: f64,
    /// The error with the factors fitted without the row's publication (leave one
    /// source out, [`leave_one_source_out`]); `None` for memory rows (nothing fitted)
    /// and for rows whose architecture has no rows left to fit on.
    pub held_out_error: Option<f64>,
    /// The publication ([`crate::calibrate::source_key`]).
    pub source: String,
}

/// The fit of one architecture.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct ArchitectureFit {
    /// The architecture (`ampere`, `hopper`).
    pub architecture: String,
    /// The fitted factors.
    pub efficiency: TrainEfficiency,
    /// Whether `compute_fp8` was fitted (fp8 rows) rather than set to `compute`.
    pub fp8_fitted: bool,
    /// Row ids fitted on.
    pub rows: Vec<String>,
    /// Their devices.
    pub devices: Vec<String>,
    /// Median `|error|` over the rows.
    pub median_abs_error: f64,
}

/// The best median error at one data-parallel overlap.
#[derive(Debug, Clone, Copy, Serialize)]
#[non_exhaustive]
pub struct OverlapScore {
    /// The overlap.
    pub overlap_dp: f64,
    /// Median `|error|` over all rows with the compute fractions fitted at it.
    pub median_abs_error: f64,
}

/// The result of `calibrate --train`.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct TrainFit {
    /// Per architecture, by name.
    pub architectures: Vec<ArchitectureFit>,
    /// Fraction of data-parallel communication hidden (all architectures).
    pub overlap_dp: f64,
    /// Fraction of tensor-parallel communication hidden (all architectures).
    pub overlap_tp: f64,
    /// The throughput rows (kind D) at the fitted factors.
    pub rows: Vec<RowFit>,
    /// Median `|error|` over them.
    pub median_abs_error: f64,
    /// Median `|error|` over the rows held out by publication
    /// ([`RowFit::held_out_error`]).
    pub leave_one_source_out_median_abs_error: f64,
    /// Publications the throughput rows come from.
    pub sources: usize,
    /// The expert-parallel MoE throughput rows, not fitted: each predicted with the
    /// factors fitted for its architecture and stack on the other rows
    /// ([`PublishedRuns::expert_parallel`]).
    pub expert_rows: Vec<RowFit>,
    /// Median `|error|` over them (`None` without any).
    pub expert_median_abs_error: Option<f64>,
    /// The context-parallel throughput rows, not fitted: each predicted with the
    /// factors fitted for its architecture and stack on the other rows
    /// ([`PublishedRuns::context_parallel`]).
    pub context_rows: Vec<RowFit>,
    /// Median `|error|` over them (`None` without any).
    pub context_median_abs_error: Option<f64>,
    /// The memory rows (kind E), which the factors do not change.
    pub memory_rows: Vec<RowFit>,
    /// Median `|error|` over them.
    pub memory_median_abs_error: f64,
    /// Training rows not used.
    pub skipped: Vec<Skipped>,
    /// The median over all rows at each `overlap_dp` of the grid (each with its own
    /// compute fits).
    pub overlap_profile: Vec<OverlapScore>,
    /// Grid step of the compute fractions.
    pub compute_step: f64,
    /// Grid step of the overlap scan.
    pub overlap_step: f64,
}

impl TrainFit {
    /// The fit of one architecture.
    pub fn architecture(&self, name: &str) -> Option<&ArchitectureFit> {
        self.architectures.iter().find(|a| a.architecture == name)
    }
}

/// Fractions of one architecture being fitted.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Fractions {
    compute: f64,
    fp8: f64,
    attention: f64,
}

fn efficiency(label: &str, f: Fractions, overlap: (f64, f64)) -> TrainEfficiency {
    TrainEfficiency {
        label: label.to_string(),
        compute: f.compute,
        compute_fp8: f.fp8,
        attention: f.attention,
        memory: MEMORY_PRIOR,
        link: LINK_PRIOR,
        overlap_dp: overlap.0,
        overlap_tp: overlap.1,
        attention_measured: measured(label).map(|(id, _)| id.to_string()),
    }
}

/// The measured attention kernels of table entry `key`, with their `attention` (their
/// largest fraction to three decimals), where `data/kernels/training-attention.toml`
/// has them: the fit leaves that entry's attention to them.
fn measured(key: &str) -> Option<(&'static str, f64)> {
    let (id, k) = attention::for_entry(key).ok()??;
    Some((id, (k.max_fraction() * 1000.0).round() / 1000.0))
}

/// Whether a run's matmuls run in fp8 (fp8 recipe on a device with fp8 units).
fn uses_fp8(r: &PublishedRun) -> bool {
    r.config.precision == TrainPrecision::Fp8 && r.hardware.peak_flops_per_s.rates.fp8.is_some()
}

/// Steps 1 and 2 for one architecture at the given overlaps.
fn fit_fractions(arch: &str, runs: &[&PublishedRun], overlap: (f64, f64)) -> Result<Fractions> {
    let with_fp8 = runs.iter().any(|r| uses_fp8(r));
    let fixed = measured(arch).map(|(_, a)| a);
    let pairs: Vec<(f64, f64)> = compute_grid()
        .into_iter()
        .flat_map(|c| {
            let fp8s = if with_fp8 { fp8_grid() } else { vec![c] };
            fp8s.into_iter().map(move |f| (c, f))
        })
        .collect();
    let ((compute, fp8), tied) = best(&pairs, |(c, f)| {
        let fr = Fractions {
            compute: c,
            fp8: f,
            attention: fixed.unwrap_or(c),
        };
        errors(runs, &efficiency(arch, fr, overlap))
    })?;
    let tied_fr = Fractions {
        compute,
        fp8,
        attention: fixed.unwrap_or(compute),
    };
    if fixed.is_some() {
        return Ok(tied_fr);
    }
    let attention_grid: Vec<f64> = compute_grid()
        .into_iter()
        .filter(|a| *a <= compute)
        .collect();
    let (attention, own) = best(&attention_grid, |a| {
        errors(
            runs,
            &efficiency(
                arch,
                Fractions {
                    attention: a,
                    ..tied_fr
                },
                overlap,
            ),
        )
    })?;
    Ok(if own.0 <= tied.0 - ATTENTION_MIN_GAIN {
        Fractions {
            attention,
            ..tied_fr
        }
    } else {
        tied_fr
    })
}

fn row_fit(r: &PublishedRun, eff: Option<&TrainEfficiency>) -> Result<RowFit> {
    let predicted = r.predict(eff)?;
    Ok(RowFit {
        id: r.id.clone(),
        label: r.label.clone(),
        device: r.hardware.id.clone(),
        architecture: r.hardware.architecture.clone(),
        metric: r.metric,
        micro_batch: r.config.micro_batch,
        measured: r.measured,
        predicted,
        error: predicted / r.measured - 1.0,
        held_out_error: None,
        source: r.source.clone(),
    })
}

/// Median `|error|` of fitted rows.
fn median_error(rows: &[RowFit]) -> f64 {
    score(&rows.iter().map(|r| r.error).collect::<Vec<_>>()).0
}

/// The throughput rows by table entry (architecture and training stack,
/// [`table_key`]); rows whose device has no architecture are skipped.
fn by_architecture<'a>(
    published: &'a PublishedRuns,
    skipped: &mut Vec<Skipped>,
) -> BTreeMap<String, Vec<&'a PublishedRun>> {
    let mut by_arch: BTreeMap<String, Vec<&PublishedRun>> = BTreeMap::new();
    for r in published.throughput() {
        let arch = r.hardware.architecture.trim().to_ascii_lowercase();
        if arch.is_empty() {
            skipped.push(Skipped {
                id: r.id.clone(),
                reason: format!("device {} has no architecture", r.hardware.id),
            });
        } else {
            by_arch
                .entry(table_key(&arch, r.config.stack))
                .or_default()
                .push(r);
        }
    }
    by_arch
}

/// The median over all rows with the fractions refitted at each `overlap_dp`.
fn overlap_profile(by_arch: &BTreeMap<String, Vec<&PublishedRun>>) -> Result<Vec<OverlapScore>> {
    overlap_grid()
        .into_iter()
        .map(|od| {
            let overlap = (od, OVERLAP_TP_PRIOR);
            let mut all = Vec::new();
            for (arch, runs) in by_arch {
                let f = fit_fractions(arch, runs, overlap)?;
                all.extend(errors(runs, &efficiency(arch, f, overlap))?);
            }
            Ok(OverlapScore {
                overlap_dp: od,
                median_abs_error: score(&all).0,
            })
        })
        .collect()
}

/// Steps 1 and 2 for one architecture at the prior overlaps, with its rows.
fn fit_architecture(arch: &str, runs: &[&PublishedRun]) -> Result<(ArchitectureFit, Vec<RowFit>)> {
    let overlap = (OVERLAP_DP_PRIOR, OVERLAP_TP_PRIOR);
    let eff = efficiency(arch, fit_fractions(arch, runs, overlap)?, overlap);
    let rows = runs
        .iter()
        .map(|r| row_fit(r, Some(&eff)))
        .collect::<Result<Vec<_>>>()?;
    let mut devices: Vec<String> = runs.iter().map(|r| r.hardware.id.clone()).collect();
    devices.sort();
    devices.dedup();
    let fit = ArchitectureFit {
        architecture: arch.to_string(),
        fp8_fitted: runs.iter().any(|r| uses_fp8(r)),
        rows: runs.iter().map(|r| r.id.clone()).collect(),
        devices,
        median_abs_error: median_error(&rows),
        efficiency: eff,
    };
    Ok((fit, rows))
}

/// The distinct publications of the rows, sorted.
fn publications<'a>(by_arch: &BTreeMap<String, Vec<&'a PublishedRun>>) -> Vec<&'a str> {
    let mut sources: Vec<&str> = by_arch.values().flatten().map(|r| &*r.source).collect();
    sources.sort_unstable();
    sources.dedup();
    sources
}

/// Leave one source out: each throughput row's error with the factors of its
/// architecture fitted (as [`fit`] does, at the prior overlaps) on the rows of the other
/// publications. Where no row of the architecture is left, the architecture the bundled
/// table's fallback uses (`hopper`) stands in, as it does for unmeasured devices; rows
/// with neither are left out. By row id.
pub fn leave_one_source_out(
    by_arch: &BTreeMap<String, Vec<&PublishedRun>>,
) -> Result<BTreeMap<String, f64>> {
    let overlap = (OVERLAP_DP_PRIOR, OVERLAP_TP_PRIOR);
    let fallback = EfficiencyTable::builtin()?.fallback.uses.clone();
    let per_source = publications(by_arch)
        .par_iter()
        .map(|&source| {
            let mut out = Vec::new();
            for (arch, runs) in by_arch {
                let (held, kept): (Vec<&PublishedRun>, Vec<&PublishedRun>) =
                    runs.iter().partition(|r| r.source == source);
                if held.is_empty() {
                    continue;
                }
                let basis = if kept.is_empty() {
                    // the entry a device of this architecture and stack would get
                    // without it: the other stack's, then the fallback's architecture
                    let others: Vec<&PublishedRun> = stand_ins(arch, fallback.as_deref())
                        .iter()
                        .filter_map(|k| by_arch.get(k))
                        .map(|runs| {
                            runs.iter()
                                .copied()
                                .filter(|r| r.source != source)
                                .collect::<Vec<_>>()
                        })
                        .find(|runs| !runs.is_empty())
                        .unwrap_or_default();
                    others
                } else {
                    kept
                };
                if basis.is_empty() {
                    continue;
                }
                let eff = efficiency(arch, fit_fractions(arch, &basis, overlap)?, overlap);
                for r in held {
                    out.push((r.id.clone(), r.error(Some(&eff))?));
                }
            }
            Ok(out)
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(per_source.into_iter().flatten().collect())
}

/// The entries that stand in for `key` (`architecture` or `architecture+stack`) when
/// none of its rows is left: the keys [`EfficiencyTable::for_stack`] tries after it.
fn stand_ins(key: &str, fallback: Option<&str>) -> Vec<String> {
    let (arch, stack) = split_key(key);
    lookup_keys(arch, stack, fallback).split_off(1)
}

/// A TOML key: bare where it can be (`hopper`), quoted otherwise (`"hopper+megatron"`).
fn toml_key(k: &str) -> String {
    if !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        k.to_string()
    } else {
        format!("{k:?}")
    }
}

/// Fits the factors to the throughput rows of `published` (rows whose device has no
/// architecture are skipped); memory rows are evaluated with the bundled table.
pub fn fit(published: &PublishedRuns) -> Result<TrainFit> {
    let mut skipped = published.skipped.clone();
    let by_arch = by_architecture(published, &mut skipped);
    let mut architectures = Vec::new();
    let mut rows = Vec::new();
    for (arch, runs) in &by_arch {
        let (a, r) = fit_architecture(arch, runs)?;
        architectures.push(a);
        rows.extend(r);
    }
    rows.sort_by(|a, b| a.id.cmp(&b.id));
    let held = leave_one_source_out(&by_arch)?;
    for r in &mut rows {
        r.held_out_error = held.get(&r.id).copied();
    }
    let held_errors: Vec<f64> = held.values().copied().collect();
    let (expert_rows, expert_median) = apart(published.expert_parallel(), &architectures)?;
    let (context_rows, context_median) = apart(published.context_parallel(), &architectures)?;
    let memory_rows = published
        .memory()
        .map(|r| row_fit(r, None))
        .collect::<Result<Vec<_>>>()?;
    Ok(TrainFit {
        median_abs_error: median_error(&rows),
        leave_one_source_out_median_abs_error: score(&held_errors).0,
        sources: publications(&by_arch).len(),
        memory_median_abs_error: median_error(&memory_rows),
        expert_median_abs_error: expert_median,
        expert_rows,
        context_median_abs_error: context_median,
        context_rows,
        architectures,
        overlap_dp: OVERLAP_DP_PRIOR,
        overlap_tp: OVERLAP_TP_PRIOR,
        rows,
        memory_rows,
        skipped,
        overlap_profile: overlap_profile(&by_arch)?,
        compute_step: COMPUTE_STEP,
        overlap_step: OVERLAP_STEP,
    })
}

/// Rows kept out of the fit, each predicted with the factors fitted for its
/// architecture and stack (the bundled table's where none was fitted), by id, and their
/// median `|error|` (`None` without any).
fn apart<'a>(
    runs: impl Iterator<Item = &'a PublishedRun>,
    architectures: &[ArchitectureFit],
) -> Result<(Vec<RowFit>, Option<f64>)> {
    let mut rows = runs
        .map(|r| {
            let key = table_key(
                &r.hardware.architecture.trim().to_ascii_lowercase(),
                r.config.stack,
            );
            let fitted = architectures.iter().find(|a| a.architecture == key);
            row_fit(r, fitted.map(|a| &a.efficiency))
        })
        .collect::<Result<Vec<_>>>()?;
    rows.sort_by(|a, b| a.id.cmp(&b.id));
    let median = (!rows.is_empty()).then(|| median_error(&rows));
    Ok((rows, median))
}

/// Reads the training rows of `rows` with the bundled setups and fits them.
pub fn fit_rows(rows: &[Measurement]) -> Result<TrainFit> {
    fit(&published_runs(rows, RunSetups::builtin()?))
}

/// Reads a measurements CSV and fits its training rows (bundled setups).
pub fn fit_file(measurements: &Path) -> Result<TrainFit> {
    fit_rows(&read_measurements(measurements)?)
}

/// The `training.toml` a fit writes (entries without rows carried over from the
/// bundled table); `measurements` names the CSV in its header.
pub fn fit_toml(fit: &TrainFit, measurements: &Path) -> Result<String> {
    Ok(training_toml(
        fit,
        EfficiencyTable::builtin()?,
        &measurements.display().to_string(),
    ))
}

/// The explanation at the top of `training.toml`.
const HEADER: &str = "\
# Training efficiency factors per chip architecture, keyed by the `architecture` field
# of data/hardware/*.toml. Each factor is a fraction of the device's own ceiling:
# compute of the dense 16-bit matmul peak, compute_fp8 of the dense fp8 peak, attention
# of the 16-bit peak for the attention core (at most compute), memory of the memory
# bandwidth, link of the link bandwidth; overlap_dp and overlap_tp are the fractions of
# data- and tensor-parallel communication hidden behind compute.
#
# Written by `ridgeline calibrate --train --measurements <CSV> --save <this file>`: a grid
# search minimising the median |predicted / measured - 1| over the kind-D rows of the
# CSV, configured as data/measurements/training_runs.toml describes (see
# src/train/calibrate.rs). compute, compute_fp8 and attention are fitted per
# architecture, except attention where an entry names measured attention kernels
# (`attention_measured`, data/kernels/training-attention.toml): its steps run their
# attention at the kernels' fraction for their query length, and `attention` holds the
# largest; memory, link, overlap_dp and overlap_tp are priors the runs cannot
# identify (calibrate --train prints the median error at every overlap_dp). residuals
# are predicted / measured - 1 per row.
#
# Entries are keyed by architecture and training stack: `hopper` holds the generic
# stack's factors (PyTorch FSDP/DDP, torchtune, Hugging Face, JAX MaxText: library kernels,
# framework collectives), `hopper+megatron` Megatron-Core's (Megatron-LM, NeMo,
# Megatron-Bridge with TransformerEngine: fused kernels, cuDNN attention, overlapped
# communication); each run is fitted with its stack's rows (`stack` in
# training_runs.toml), and a stack an architecture has no entry for takes the other
# stack's entry of that architecture (`train --stack`).
#
# An entry applies to every device of its architecture. `ampere` is fitted on A100 runs
# only; A10, A10G, A40, RTX A6000 and RTX 3060/3090/3090 Ti (GA102/GA106) get it too, as a
# decision: their tensor cores are the same generation, the factors are fractions of each
# device's own dense peak, and the hardware files list GeForce peaks at the
# fp32-accumulate rate that training uses. Unmeasured: power-limited boards (the 150 W
# A10) may reach less. `blackwell` is fitted on B200 and GB200 runs (all Megatron), `ada`
# on RTX 4090 runs (torchtune), `cdna3` on MI300X runs (torchtitan); devices whose
# architecture has no entry (Turing, Volta, CDNA2, Gaudi, TPU, Apple) get `fallback`, the
# Hopper fit labelled uncalibrated.
#
# `calibrate --train` also prints leave one source out: each row's error with its
# architecture and stack fitted without the row's publication (where none of their rows
# is left, the entry `train` would use instead stands in: the other stack's, then the
# fallback's architecture).
";

fn factor_lines(out: &mut String, e: &TrainEfficiency) {
    for (k, v) in e.factors() {
        let _ = writeln!(out, "{k} = {v:?}");
    }
    if let Some(id) = &e.attention_measured {
        let _ = writeln!(out, "attention_measured = {id:?}");
    }
}

fn quoted(items: &[String]) -> String {
    let q: Vec<String> = items.iter().map(|s| format!("{s:?}")).collect();
    format!("[{}]", q.join(", "))
}

fn fitted_entry(out: &mut String, a: &ArchitectureFit, rows: &[RowFit], source: &str) {
    let _ = writeln!(
        out,
        "\n# Fitted on {} kind-D rows of {source} ({}).",
        a.rows.len(),
        a.devices.join(", ")
    );
    if !a.fp8_fitted {
        let _ = writeln!(out, "# No fp8 rows: compute_fp8 = compute (unused).");
    }
    if let Some(id) = &a.efficiency.attention_measured {
        let _ = writeln!(
            out,
            "# attention not fitted: measured kernels {id} (data/kernels/training-attention.toml),\n# at the step's query length; attention holds their largest fraction."
        );
    }
    let _ = writeln!(out, "[architecture.{}]", toml_key(&a.architecture));
    factor_lines(out, &a.efficiency);
    let _ = writeln!(out, "fitted_on = {}", quoted(&a.rows));
    let _ = writeln!(out, "devices = {}", quoted(&a.devices));
    let _ = writeln!(out, "median_abs_error = {:.3}", a.median_abs_error);
    let res: Vec<String> = rows
        .iter()
        .filter(|r| a.rows.contains(&r.id))
        .map(|r| format!("{} = {:.3}", r.id, r.error))
        .collect();
    let _ = writeln!(out, "residuals = {{ {} }}", res.join(", "));
}

/// A `training.toml` with the fitted architectures; entries of `current` for
/// architectures the fit has no rows for under any stack (`uses` entries, unmeasured
/// architectures) and its fallback are carried over.
/// `source` names the measurements file in the comments.
pub fn training_toml(fit: &TrainFit, current: &EfficiencyTable, source: &str) -> String {
    let mut out = String::from(HEADER);
    let _ = writeln!(
        out,
        "#\n# Median |error| over all {} rows: {:.3} (grid steps {} and {}).",
        fit.rows.len(),
        fit.median_abs_error,
        fit.compute_step,
        fit.overlap_step
    );
    for a in &fit.architectures {
        fitted_entry(&mut out, a, &fit.rows, source);
    }
    let carried = current
        .architectures
        .iter()
        .filter(|(k, _)| {
            fit.architectures
                .iter()
                .all(|a| split_key(&a.architecture).0 != split_key(k).0)
        })
        .map(|(k, e)| (format!("architecture.{}", toml_key(k)), k.as_str(), e))
        .chain([("fallback".to_string(), "fallback", &current.fallback)]);
    for (table, key, e) in carried {
        let _ = writeln!(out, "\n[{table}]");
        if let Some(u) = &e.uses {
            let _ = writeln!(out, "uses = {u:?}");
        } else {
            let _ = writeln!(out, "# not refitted: no rows for {key} in {source}");
            factor_lines(&mut out, &e.efficiency);
        }
        if e.efficiency.label != key {
            let _ = writeln!(out, "label = {:?}", e.efficiency.label);
        }
    }
    out
}

/// Whether `a` and `b` differ by at most `step` (plus rounding).
pub(crate) fn within(a: f64, b: f64, step: f64) -> bool {
    (a - b).abs() <= step + 1e-9
}

/// Every factor of `fitted` within one grid step of `table`'s (the compute fractions
/// within [`COMPUTE_STEP`], the overlaps within [`OVERLAP_STEP`], memory and link equal).
pub fn matches_table(fitted: &TrainEfficiency, table: &TrainEfficiency) -> bool {
    within(fitted.compute, table.compute, COMPUTE_STEP)
        && within(fitted.compute_fp8, table.compute_fp8, COMPUTE_STEP)
        && within(fitted.attention, table.attention, COMPUTE_STEP)
        && within(fitted.memory, table.memory, 0.0)
        && within(fitted.link, table.link, 0.0)
        && within(fitted.overlap_dp, table.overlap_dp, OVERLAP_STEP)
        && within(fitted.overlap_tp, table.overlap_tp, OVERLAP_STEP)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grids_are_exact_decimals() {
        assert!(compute_grid().contains(&0.64));
        assert!(compute_grid().contains(&0.56));
        assert!(fp8_grid().contains(&0.30));
        assert_eq!(overlap_grid().len(), 11);
        assert!(overlap_grid().contains(&0.8));
    }

    #[test]
    fn score_is_median_then_mean() {
        let (med, mean) = score(&[-0.1, 0.3, 0.2]);
        assert!(med == 0.2 && (mean - 0.2).abs() < 1e-12);
        let (med, mean) = score(&[0.1, -0.2, 0.3, -0.4]);
        assert!((med - 0.25).abs() < 1e-12 && (mean - 0.25).abs() < 1e-12);
    }
}
