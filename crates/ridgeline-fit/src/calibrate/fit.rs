//! Fitting an engine's few physical factors to its measurements.
//!
//! Parameters: `memory_efficiency.<group>` for each memory group (`hbm`, `gddr`,
//! `apple`, ...; see [`crate::engine::memory_group`]) some row depends on,
//! `compute_efficiency` when some row depends on it, and one per-pass overhead
//! (`step_overhead_s` or `layer_overhead_s`) when there are enough rows. A row "depends
//! on" a factor when a 1% change of the factor moves its prediction by at least
//! [`FitOptions::sensitivity`] %.
//!
//! The fit minimizes `Σ ln(predicted_i / measured_i)²` (Levenberg-Marquardt on
//! `ln(efficiency)` and on the overhead in ms, with box bounds: efficiencies at most the
//! kind F ceilings, see [`bounds_from_ceilings`]). Confidence intervals are Student-t on
//! the log-ratios: `θ ± t(0.975, n - p) · sqrt(s² (JᵀJ)⁻¹)` with `s² = SSR / (n - p)`,
//! mapped back to the factor; none when there are no more rows than free parameters.

use super::factors::{
    Factor, Limit, clear_family, factor, fold_into_families, fold_memory_into_groups,
    key_memory_to_device, key_to_device,
};
use super::many::Memo;
use super::{Bounds, Case, Kind, lm};
use crate::engine::{Engine, FactorTag, memory_group};
use crate::error::{Error, Result};
use serde::Serialize;
use statrs::distribution::{ContinuousCDF, StudentsT};

/// Which per-pass overhead the fit may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OverheadKind {
    /// Keep the base engine's overheads.
    None,
    /// Fit `step_overhead_s` (per forward pass).
    Step,
    /// Fit `layer_overhead_s` (per layer per forward pass).
    Layer,
    /// Fit `sequence_overhead_s` (host work per running sequence per forward pass): an
    /// engine release's own term, over the efficiencies of the profile it derives from
    /// ([`super::VERSION_PROFILES`]).
    Sequence,
}

/// Options of [`fit`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FitOptions {
    /// Which overhead to fit.
    pub overhead: OverheadKind,
    /// Fit the overhead only with at least this many rows.
    pub min_rows_for_overhead: usize,
    /// Smallest `|d ln(pred) / d ln(factor)|` for a row to count as informing a factor.
    pub sensitivity: f64,
    /// Bounds.
    pub bounds: Bounds,
    /// Engine whose efficiencies the fit is pulled toward (partial pooling), if any.
    pub prior: Option<Engine>,
    /// How many rows the prior counts as: each fitted efficiency adds the residual
    /// `sqrt(prior_rows) · ln(value / prior value)`, a fitted overhead
    /// `sqrt(prior_rows) · (value / prior value - 1)` (when the prior's is positive).
    /// With many rows it hardly matters; with one or two it keeps a framework's few
    /// (possibly unrepresentative) rows from setting its factors alone, and it keeps the
    /// per-layer overhead from absorbing what a few slow rows share (an online server's
    /// request handling, a poorly parallelized MoE) when nothing in them isolates it.
    pub prior_rows: f64,
    /// Fit the efficiencies (false: only the overhead moves; for engines that run the
    /// same kernels as `typical` and differ by their overheads).
    pub fit_efficiencies: bool,
    /// Huber threshold on `ln(pred / measured)`: rows off by more than this count
    /// linearly, not quadratically, so one odd row cannot drag a factor (None: plain
    /// least squares). Default 0.25 (rows more than e^0.25 - 1 = 28% off), chosen from
    /// 0.15, 0.2, 0.25, 0.3, 0.35, 0.4 and 0.5 by the leave-one-source-out error on the
    /// bundled rows (decode / batched / prefill, when chosen: 0.2 gave 8.4 / 14.9 /
    /// 21.7%, 0.25 8.4 / 14.8 / 19.6%, 0.3 8.8 / 14.6 / 19.4%; with fp32 scores for
    /// llama.cpp 0.2 gives 8.2 / 14.9 / 19.7%, 0.25 7.9 / 14.8 / 18.5%, 0.3 8.0 / 14.6 /
    /// 18.2%, within the selection's noise; with the sustained tensor rates of
    /// `power_reference` and 53 more prefill rows, 0.2 gives 9.1 / 15.0 / 19.0%, 0.25
    /// 9.1 / 15.1 / 18.0%, 0.3 9.5 / 15.1 / 18.2%, 0.35 9.9 / 15.5 / 18.4%; with the
    /// matmuls' roll-off at few rows, `gemm_half_rows` 36, 0.2 gives 8.7 / 13.6 /
    /// 16.2%, 0.25 8.6 / 13.9 / 16.1%, 0.3 8.7 / 14.2 / 16.4%): rows of a
    /// class the model does not
    /// express (2-3x off) must not pull the factors of the rows it does, and the
    /// narrower the threshold the more rows it discounts.
    pub huber: Option<f64>,
}

impl Default for FitOptions {
    fn default() -> Self {
        FitOptions {
            overhead: OverheadKind::Layer,
            min_rows_for_overhead: 6,
            sensitivity: 0.2,
            bounds: Bounds::default(),
            prior: None,
            prior_rows: 3.0,
            fit_efficiencies: true,
            huber: Some(0.25),
        }
    }
}

/// Which engine field a parameter sets.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ParamKind {
    /// `memory_efficiency.<group>`.
    Memory(String),
    /// `compute_efficiency`.
    Compute,
    /// `apple_compute_efficiency`: Apple GPUs' matmuls.
    AppleCompute,
    /// `rdna_compute_efficiency`: AMD RDNA GPUs' matmuls.
    RdnaCompute,
    /// `dequant_efficiency`: compute-bound matmuls on weight-only quantized weights.
    Dequant,
    /// `fp4_efficiency`: matmuls on fp4 tensor cores.
    Fp4,
    /// `attention_efficiency`: the attention kernels.
    Attention,
    /// `step_overhead_s`.
    StepOverhead,
    /// `layer_overhead_s`.
    LayerOverhead,
    /// `sequence_overhead_s`: host work per running sequence per forward pass.
    SequenceOverhead,
    /// `rdna_expert_overhead_s`: per routed expert matrix of a GEMM-path pass on AMD
    /// RDNA GPUs (fitted where rows run there; `expert_overhead_s` elsewhere is set by
    /// hand, 0 in every bundled engine).
    RdnaExpertOverhead,
    /// `apple_gemv_compute_efficiency`: the fraction of the peak at which the
    /// matrix-vector kernels' rows past the first do their multiply-adds on Apple GPUs
    /// (llama.cpp's Metal kernels do not overlap their arithmetic with their loads).
    AppleGemv,
    /// `apple_expert_memory_efficiency`: the fraction of the memory efficiency a routed
    /// expert's weight matmuls reach on Apple GPUs (llama.cpp's Metal expert kernels).
    AppleExpertMemory,
}

impl ParamKind {
    /// The TOML key (`memory_efficiency.hbm`).
    pub(crate) fn key(&self) -> String {
        match self {
            ParamKind::Memory(g) => format!("memory_efficiency.{g}"),
            scalar => scalar.factor().key.into(),
        }
    }

    /// The registry's entry of a scalar kind ([`super::factors::FACTORS`]).
    fn factor(&self) -> &'static Factor {
        factor(self).expect("every scalar parameter kind is in the factor registry")
    }

    pub(super) fn is_overhead(&self) -> bool {
        !matches!(self, ParamKind::Memory(_)) && self.factor().is_overhead()
    }

    fn get(&self, e: &Engine) -> f64 {
        match self {
            ParamKind::Memory(g) => e
                .speed
                .memory_efficiency
                .get(g)
                .or_else(|| e.speed.memory_efficiency.get("default"))
                .copied()
                .unwrap_or(1.0),
            scalar => (scalar.factor().get)(e),
        }
    }

    fn set(&self, e: &mut Engine, v: f64) {
        match self {
            ParamKind::Memory(g) => {
                e.speed.memory_efficiency.insert(g.clone(), v);
            }
            scalar => (scalar.factor().set)(e, v),
        }
    }

    // internal coordinates: ln(efficiency), overhead in ms
    fn to_internal(&self, v: f64) -> f64 {
        if self.is_overhead() { v * 1e3 } else { v.ln() }
    }

    fn to_value(&self, x: f64) -> f64 {
        if self.is_overhead() {
            x * 1e-3
        } else {
            x.exp()
        }
    }
}

/// One fitted factor.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct FittedParam {
    /// Which field.
    pub kind: ParamKind,
    /// The TOML key.
    pub key: String,
    /// Value before the fit.
    pub start: f64,
    /// Fitted value.
    pub value: f64,
    /// 95% confidence interval, low end, clipped to the bounds (None: too few rows, or
    /// at a bound).
    pub ci_low: Option<f64>,
    /// 95% confidence interval, high end.
    pub ci_high: Option<f64>,
    /// Lower and upper bound the fit was held to.
    pub bounds: (f64, f64),
    /// Whether the value sits on a bound (then it is not free and has no interval).
    pub at_bound: bool,
    /// Rows that inform it (sensitivity above the threshold).
    pub rows: Vec<String>,
}

/// The result of fitting one engine.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct EngineFit {
    /// The fitted engine (base engine with the fitted factors set, `fitted_on` filled).
    pub engine: Engine,
    /// Fitted factors.
    pub params: Vec<FittedParam>,
    /// Rows used.
    pub rows: Vec<String>,
    /// Rows minus free parameters.
    pub dof: usize,
    /// Root-mean-square of `ln(pred / measured)` before the fit.
    pub rms_log_before: f64,
    /// Root-mean-square of `ln(pred / measured)` after the fit.
    pub rms_log_after: f64,
    /// Plain-language remarks (parameters left out, bounds hit).
    pub notes: Vec<String>,
}

/// `ln(p / measured)` of a case predicted `p`; errors name the case's row.
fn log_ratio(c: &Case, p: f64) -> Result<f64> {
    if !(p.is_finite() && p > 0.0) {
        // a validated device, model and engine always predict a positive time
        return Err(c.row_error(Error::internal(
            "calibration fit",
            format!("prediction {p} is not a positive number"),
        )));
    }
    let r = (p / c.measured).ln();
    if r.is_finite() {
        Ok(r)
    } else {
        // only a measurement no engine could produce gets here (a rate near zero):
        // check_measurements refuses those first
        Err(c.value_error(format!(
            "{} is out of any prediction's reach ({p} predicted)",
            c.measured
        )))
    }
}

/// `ln(predicted / measured)` of each case under `engine` (`memo` holds the cases).
fn residuals(memo: &Memo, cases: &[&Case], engine: &Engine) -> Result<Vec<f64>> {
    let p = memo.predict(engine)?;
    cases.iter().zip(p).map(|(c, p)| log_ratio(c, p)).collect()
}

/// `sign(r) · sqrt(2 ρ(r))` for Huber's ρ: equal to `r` within `k`, growing like
/// `sqrt(|r|)` beyond, smooth at `k`; its square is the loss.
fn huber_residual(r: f64, k: Option<f64>) -> f64 {
    match k {
        Some(k) if r.abs() > k => r.signum() * (2.0 * k * r.abs() - k * k).sqrt(),
        _ => r,
    }
}

/// The least-squares problem in the parameters' internal coordinates: data residuals
/// (Huber-weighted) followed by the prior residuals of the efficiencies.
struct Problem<'a> {
    start: &'a Engine,
    params: &'a [ParamKind],
    cases: &'a [&'a Case],
    memo: &'a Memo<'a>,
    /// Per parameter, the prior value in internal coordinates and the scale its
    /// deviation is measured in (1 for the logarithm of an efficiency; the prior value
    /// for an overhead, so that the pull is on its relative change).
    prior: Vec<Option<(f64, f64)>>,
    prior_weight: f64,
    huber: Option<f64>,
}

impl Problem<'_> {
    fn residuals(&self, x: &[f64]) -> Result<Vec<f64>> {
        let engine = with(self.start, self.params, x);
        let mut r: Vec<f64> = residuals(self.memo, self.cases, &engine)?
            .into_iter()
            .map(|v| huber_residual(v, self.huber))
            .collect();
        for (xi, p) in x.iter().zip(&self.prior) {
            if let Some((p, scale)) = p {
                r.push(self.prior_weight * (xi - p) / scale);
            }
        }
        Ok(r)
    }
}

fn with(base: &Engine, params: &[ParamKind], x: &[f64]) -> Engine {
    let mut e = base.clone();
    for (p, &xi) in params.iter().zip(x) {
        p.set(&mut e, p.to_value(xi));
    }
    e
}

fn internal(params: &[ParamKind], e: &Engine) -> Vec<f64> {
    params.iter().map(|p| p.to_internal(p.get(e))).collect()
}

/// Whether a row informs a factor.
type Informs = fn(&Case) -> bool;

/// The Apple GPUs' row-informed factors: each with the rows that inform it, its bound
/// (the value that means "none") and the start a fit takes away from that bound.
/// - `apple_gemv_compute_efficiency`: decode rows of several sequences and prompts of 2
///   to 8 tokens (passes whose weight matmuls run the matrix-vector kernels on more
///   than one row: a single row's arithmetic hides under the weights' loads); bound 0
///   (none), start 0.2 of the peak.
/// - `apple_expert_memory_efficiency`: decode rows of MoE models (a decode step streams
///   the experts' weights); bound 1, start 0.9.
fn apple_row_factors() -> [(ParamKind, Informs, f64, f64); 2] {
    fn on_apple(c: &Case) -> bool {
        c.hardware.class == crate::hardware::DeviceClass::Apple
    }
    fn decode_on_apple(c: &Case) -> bool {
        on_apple(c) && matches!(c.kind, Kind::A | Kind::B)
    }
    [
        (
            ParamKind::AppleGemv,
            |c| {
                let s = &c.scenario;
                let short_prompt = c.kind == Kind::C
                    && s.batch == 1
                    && (2..=crate::engine::GEMV_MAX_TOKENS).contains(&s.prompt);
                (decode_on_apple(c) && s.batch > 1) || (on_apple(c) && short_prompt)
            },
            0.0,
            0.2,
        ),
        (
            ParamKind::AppleExpertMemory,
            |c| decode_on_apple(c) && c.model.as_ref().is_some_and(|m| m.is_moe()),
            1.0,
            0.9,
        ),
    ]
}

/// `base` with its compute efficiency and the memory efficiency of every group the
/// cases run on moved inside the bounds, and those groups.
fn start_in_bounds(base: &Engine, cases: &[&Case], b: &Bounds) -> (Engine, Vec<String>) {
    let mut start = base.clone();
    // the Apple GPUs' matrix-vector time and expert kernels' efficiency: a start away
    // from the bound where rows inform them; where none does, none (an earlier fit's
    // value came from rows this fit does not have: a publication held out)
    for (kind, informs, bound, away) in apple_row_factors() {
        let Some(f) = factor(&kind) else { continue };
        if !cases.iter().any(|c| informs(c)) {
            clear_family(&mut start, f);
        } else if (f.get)(&start) == bound {
            (f.set)(&mut start, away);
        }
    }
    // the bounds are checked (Bounds::check): low <= high
    start.speed.compute_efficiency = start
        .speed
        .compute_efficiency
        .clamp(b.min_efficiency, b.compute);
    for o in &mut start.devices {
        o.compute_efficiency = o
            .compute_efficiency
            .map(|e| e.clamp(b.min_efficiency, b.compute));
    }
    let mut groups: Vec<String> = cases
        .iter()
        .map(|c| memory_group(&c.hardware).to_string())
        .collect();
    groups.sort();
    groups.dedup();
    for g in &groups {
        let k = ParamKind::Memory(g.clone());
        let v = k.get(&start).clamp(b.min_efficiency, b.memory_for(g));
        k.set(&mut start, v);
    }
    (start, groups)
}

/// The parameters to fit, each with the rows that inform it: the efficiencies some row
/// depends on (sensitivity at least [`FitOptions::sensitivity`]), then the overhead
/// when there are enough rows. What is left out is said in `notes`.
fn choose_params(
    (start, r0): (&Engine, &[f64]),
    (cases, memo): (&[&Case], &Memo),
    groups: &[String],
    opts: &FitOptions,
    notes: &mut Vec<String>,
) -> Result<Vec<(ParamKind, Vec<String>)>> {
    let mut cand: Vec<ParamKind> = Vec::new();
    if opts.fit_efficiencies {
        cand.extend(groups.iter().cloned().map(ParamKind::Memory));
        cand.push(ParamKind::Compute);
        if groups.iter().any(|g| g == "apple") {
            cand.push(ParamKind::AppleCompute);
        }
        // each informed only by its rows on an Apple GPU
        for (kind, informs, ..) in apple_row_factors() {
            if cases.iter().any(|c| informs(c)) {
                cand.push(kind);
            }
        }
        if cases.iter().any(|c| crate::engine::is_rdna(&c.hardware)) {
            cand.push(ParamKind::RdnaCompute);
            cand.push(ParamKind::RdnaExpertOverhead);
        }
        cand.push(ParamKind::Dequant);
        cand.push(ParamKind::Fp4);
        cand.push(ParamKind::Attention);
    } else {
        notes.push("efficiencies kept as given: only the overhead is fitted".into());
    }
    let plain = Problem {
        start,
        params: &cand,
        cases,
        memo,
        prior: Vec::new(),
        prior_weight: 0.0,
        huber: None,
    };
    let f = |x: &[f64]| plain.residuals(x);
    let x0 = internal(&cand, start);
    let j0 = lm::jacobian(&f, &x0, r0)?;
    let mut params = Vec::new();
    for (p, col) in cand.iter().zip(&j0) {
        let rows: Vec<String> = cases
            .iter()
            .zip(col)
            .filter(|(_, d)| d.abs() >= opts.sensitivity)
            .map(|(c, _)| c.id.clone())
            .collect();
        if rows.is_empty() {
            notes.push(format!(
                "{} kept at {:.3}: no row depends on it",
                p.key(),
                p.get(start)
            ));
        } else {
            params.push((p.clone(), rows));
        }
    }
    let overhead = match opts.overhead {
        OverheadKind::Step => Some(ParamKind::StepOverhead),
        OverheadKind::Layer => Some(ParamKind::LayerOverhead),
        OverheadKind::Sequence => Some(ParamKind::SequenceOverhead),
        OverheadKind::None => None,
    };
    if let Some(o) = overhead {
        let needs = opts.min_rows_for_overhead.max(params.len() + 1);
        if cases.len() >= needs {
            params.push((o, cases.iter().map(|c| c.id.clone()).collect()));
        } else {
            notes.push(format!(
                "{} kept at {:.3e} s: {} rows are too few to separate it from the efficiencies (needs {needs})",
                o.key(),
                o.get(start),
                cases.len(),
            ));
        }
    }
    Ok(params)
}

/// Lower and upper bound of a parameter's value.
fn limits(p: &ParamKind, b: &Bounds) -> (f64, f64) {
    match p {
        ParamKind::Memory(g) => (b.min_efficiency, b.memory_for(g)),
        scalar => match scalar.factor().limit {
            Limit::Compute => (b.min_efficiency, b.compute),
            Limit::Unit => (b.min_efficiency, 1.0),
            Limit::Overhead => (0.0, b.max_overhead_s),
        },
    }
}

/// Student-t 95% intervals of the free (interior) parameters at the optimum, in value
/// units and clipped to the bounds; with the degrees of freedom.
struct Intervals {
    at_bound: Vec<bool>,
    ci: Vec<Option<(f64, f64)>>,
    dof: usize,
}

fn intervals(
    f: &impl Fn(&[f64]) -> Result<Vec<f64>>,
    params: &[ParamKind],
    (x, r): (&[f64], &[f64]),
    xb: &[(f64, f64)],
    n_data: usize,
    notes: &mut Vec<String>,
) -> Result<Intervals> {
    let at_bound: Vec<bool> = x
        .iter()
        .zip(xb)
        .map(|(xi, (l, h))| (xi - l).abs() < 1e-6 || (h - xi).abs() < 1e-6)
        .collect();
    let free: Vec<usize> = (0..params.len()).filter(|&j| !at_bound[j]).collect();
    let dof = n_data.saturating_sub(free.len());
    let mut ci: Vec<Option<(f64, f64)>> = vec![None; params.len()];
    if dof == 0 || free.is_empty() {
        if !free.is_empty() {
            notes.push(format!(
                "{} rows for {} free factors: no confidence intervals",
                n_data,
                free.len()
            ));
        }
        return Ok(Intervals { at_bound, ci, dof });
    }
    let jac = lm::jacobian(f, x, r)?;
    let s2 = lm::ssr(&r[..n_data]) / dof as f64;
    let t = StudentsT::new(0.0, 1.0, dof as f64)
        .map(|d| d.inverse_cdf(0.975))
        .unwrap_or(f64::NAN);
    let Some(inv) = lm::inverse(&lm::gram(&jac, &free)) else {
        notes.push(
            "the fitted factors are not separable with these rows (singular JᵀJ): no intervals"
                .into(),
        );
        return Ok(Intervals { at_bound, ci, dof });
    };
    for (k, &j) in free.iter().enumerate() {
        let se = (s2 * inv[k][k]).max(0.0).sqrt();
        let p = &params[j];
        let (lo, hi) = (x[j] - t * se, x[j] + t * se);
        // an interval never leaves the bounds the value is held to
        let (bl, bh) = xb[j];
        ci[j] = Some((p.to_value(lo.max(bl)), p.to_value(hi.min(bh))));
    }
    Ok(Intervals { at_bound, ci, dof })
}

/// Fits `base`'s factors to `cases` (the rows of one engine; kind F rows are ignored).
/// Bounds that cross (a ceiling below the lowest efficiency) are an error naming the
/// bound; a row whose prediction fails is an error naming the row.
///
/// Returns the fitted engine with `fitted_on` set to the row ids, the factors with
/// confidence intervals, and the fit's residuals before and after.
pub fn fit(base: &Engine, cases: &[&Case], opts: &FitOptions) -> Result<EngineFit> {
    let cases: Vec<&Case> = cases
        .iter()
        .copied()
        .filter(|c| c.kind != Kind::F && c.model.is_some())
        .collect();
    let b = &opts.bounds;
    b.check()?;
    let mut base = base.clone();
    let mut hardware: Vec<&crate::hardware::Hardware> =
        cases.iter().map(|c| c.hardware.as_ref()).collect();
    hardware.sort_by(|a, b| a.id.cmp(&b.id));
    hardware.dedup_by(|a, b| a.id == b.id);
    fold_into_families(&mut base, &hardware);
    fold_memory_into_groups(&mut base, &hardware);
    let (start, groups) = start_in_bounds(&base, &cases, b);
    let memo = Memo::new(&cases);
    let r0 = residuals(&memo, &cases, &start)?;
    let rms_before = lm::rms(&r0);
    if cases.is_empty() {
        return Ok(EngineFit {
            engine: start,
            params: Vec::new(),
            rows: Vec::new(),
            dof: 0,
            rms_log_before: 0.0,
            rms_log_after: 0.0,
            notes: vec!["no rows: factors left as given".into()],
        });
    }
    let mut notes = Vec::new();
    let (params, informing): (Vec<ParamKind>, Vec<Vec<String>>) =
        choose_params((&start, &r0), (&cases, &memo), &groups, opts, &mut notes)?
            .into_iter()
            .unzip();
    let xb: Vec<(f64, f64)> = params
        .iter()
        .map(|p| {
            let (l, h) = limits(p, b);
            (p.to_internal(l), p.to_internal(h))
        })
        .collect();
    let prior = params
        .iter()
        .map(|p| {
            let e = opts.prior.as_ref()?;
            let (l, h) = limits(p, b);
            let raw = p.get(e);
            let v = p.to_internal(raw.clamp(l, h));
            if raw <= 0.0 && !p.is_overhead() {
                // an efficiency the prior does not have (the matrix-vector kernels'
                // arithmetic, 0 where it overlaps the loads): nothing to pull toward
                None
            } else if !p.is_overhead() {
                Some((v, 1.0))
            } else if v > 0.0 {
                Some((v, v))
            } else {
                None
            }
        })
        .collect();
    let problem = Problem {
        start: &start,
        params: &params,
        cases: &cases,
        memo: &memo,
        prior,
        prior_weight: opts.prior_rows.max(0.0).sqrt(),
        huber: opts.huber,
    };
    let f = |x: &[f64]| problem.residuals(x);
    let (x, r) = lm::minimize(&f, internal(&params, &start), &xb)?;
    let iv = intervals(&f, &params, (&x, &r), &xb, cases.len(), &mut notes)?;
    let mut engine = with(&start, &params, &x);
    let rms_after = lm::rms(&residuals(&memo, &cases, &engine)?);
    engine.provenance.fitted_on = engine_rows(&cases);
    let mut fitted: Vec<FittedParam> = params
        .iter()
        .zip(informing)
        .enumerate()
        .map(|(j, (p, rows))| FittedParam {
            kind: p.clone(),
            key: p.key(),
            start: p.get(&start),
            value: p.to_value(x[j]),
            ci_low: iv.ci[j].map(|c| c.0),
            ci_high: iv.ci[j].map(|c| c.1),
            bounds: limits(p, b),
            at_bound: iv.at_bound[j],
            rows,
        })
        .collect();
    // a family override informed by one device's rows belongs to that device, and so
    // does a memory group's efficiency
    for p in &mut fitted {
        let devices = devices_of(&p.rows, &cases);
        let [device] = &devices[..] else {
            continue;
        };
        let name = match &p.kind {
            ParamKind::Memory(g) => key_memory_to_device(&mut engine, g, device),
            kind => factor(kind).and_then(|f| key_to_device(&mut engine, f, device)),
        };
        if let Some(name) = name {
            notes.push(format!(
                "{} is informed by rows of {device} only: keyed to that device as {name}",
                p.key
            ));
            p.key = name;
        }
    }
    engine.provenance.factors = fitted
        .iter()
        .map(|p| (p.key.clone(), tag(&p.rows, &cases)))
        .collect();
    for p in fitted.iter().filter(|p| p.at_bound) {
        notes.push(format!(
            "{} stopped at its bound {:.4} (bounds {:.4}..{:.4})",
            p.key, p.value, p.bounds.0, p.bounds.1
        ));
    }
    Ok(EngineFit {
        engine,
        params: fitted,
        rows: engine_rows(&cases),
        dof: iv.dof,
        rms_log_before: rms_before,
        rms_log_after: rms_after,
        notes,
    })
}

/// The distinct values of `key` over the rows `ids` of `cases`, sorted.
fn distinct(ids: &[String], cases: &[&Case], key: &dyn Fn(&Case) -> String) -> Vec<String> {
    let mut v: Vec<String> = cases
        .iter()
        .filter(|c| ids.contains(&c.id))
        .map(|c| key(c))
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// The devices of the rows `ids` of `cases`, sorted and distinct.
fn devices_of(ids: &[String], cases: &[&Case]) -> Vec<String> {
    distinct(ids, cases, &|c| c.hardware.id.clone())
}

/// Where a factor informed by the rows `ids` of `cases` came from: those rows, their
/// distinct devices (named where there is one) and their distinct publications
/// ([`super::source_key`]).
fn tag(ids: &[String], cases: &[&Case]) -> FactorTag {
    let devices = devices_of(ids, cases);
    FactorTag::Fitted {
        rows: cases.iter().filter(|c| ids.contains(&c.id)).count() as u32,
        devices: devices.len() as u32,
        publications: distinct(ids, cases, &|c| super::source_key(&c.source)).len() as u32,
        device: match devices.as_slice() {
            [one] => Some(one.clone()),
            _ => None,
        },
    }
}

fn engine_rows(cases: &[&Case]) -> Vec<String> {
    cases.iter().map(|c| c.id.clone()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calibrate::{BatchSpec, Target, predict_case};
    use crate::engine::{DeviceFactor, Selector};
    use crate::hardware::HardwareDb;
    use crate::model::ModelDb;
    use crate::predict::Scenario;
    use std::collections::BTreeMap;

    fn engine(hbm: f64, gddr: f64, compute: f64, layer_s: f64) -> Engine {
        let mut e = Engine::ideal();
        e.id = "synthetic".into();
        e.speed.memory_efficiency = BTreeMap::from([("hbm".into(), hbm), ("gddr".into(), gddr)]);
        e.speed.compute_efficiency = compute;
        e.overheads.layer_overhead_s = layer_s;
        e
    }

    fn case(
        id: &str,
        gpu: &str,
        model: &str,
        batch: u64,
        prompt: u64,
        gen_tokens: u64,
        target: Target,
    ) -> Case {
        let kind = match target {
            Target::TtftS | Target::PrefillTokensPerS => Kind::C,
            _ if batch > 1 => Kind::B,
            _ => Kind::A,
        };
        Case {
            id: id.into(),
            line: 0,
            file: "synthetic".into(),
            value_column: 12,
            kind,
            source: "synthetic".into(),
            engine: "synthetic".into(),
            hardware: HardwareDb::builtin()
                .unwrap()
                .get(gpu)
                .unwrap()
                .clone()
                .into(),
            model: Some(ModelDb::builtin().unwrap().resolve(model).unwrap().into()),
            scenario: Scenario {
                batch,
                prompt,
                gen_tokens,
                ..Scenario::default()
            },
            batch: BatchSpec::Fixed(batch),
            target,
            measured: 1.0,
            assumptions: Vec::new(),
            kernels: None,
        }
    }

    /// Llama-2-7B decoding 16 tokens after 16 at batch 1 on `gpu`, measured at
    /// `fraction` of the ideal roofline's tokens/s.
    fn decode_at(gpu: &str, fraction: f64) -> Case {
        let mut c = case("d1", gpu, "llama-2-7b", 1, 16, 16, Target::DecodeTokensPerS);
        c.measured = fraction * predict_case(&c, &Engine::ideal()).unwrap();
        c
    }

    /// Sets each case's measurement to `truth`'s prediction times `noise[i]`.
    fn measure(cases: &mut [Case], truth: &Engine, noise: &[f64]) {
        for (i, c) in cases.iter_mut().enumerate() {
            c.measured = predict_case(c, truth).unwrap() * noise.get(i).copied().unwrap_or(1.0);
        }
    }

    /// The fitted factor `key` of `f` (a memory group's by its group's name, also where
    /// the fit keyed it to its one device).
    fn param<'f>(f: &'f EngineFit, key: &str) -> &'f FittedParam {
        f.params
            .iter()
            .find(|p| p.key == key || p.kind.key() == key)
            .unwrap()
    }

    /// The memory efficiency `f`'s engine reaches on the bundled device `id`.
    fn memory_on(f: &EngineFit, id: &str) -> f64 {
        let hw = HardwareDb::builtin().unwrap().get(id).unwrap();
        f.engine.memory_efficiency(hw)
    }

    fn plain() -> FitOptions {
        FitOptions {
            overhead: OverheadKind::None,
            huber: None,
            prior: None,
            ..FitOptions::default()
        }
    }

    #[test]
    fn apple_factors_no_row_informs_are_not_carried_from_an_earlier_fit() {
        // an earlier fit set the Apple matrix-vector time and the expert kernels'
        // efficiency (keyed to the m2-ultra); a fit on one dense single stream there
        // (none of the rows that inform either: a publication held out) starts from
        // neither, so its prediction of the held-out rows takes neither
        let mut base = engine(1.0, 1.0, 1.0, 0.0);
        base.speed.memory_efficiency.insert("apple".into(), 1.0);
        let own = Selector::device("m2-ultra");
        base.set_override(&own, DeviceFactor::GemvEfficiency, Some(0.2));
        base.set_override(&own, DeviceFactor::ExpertMemoryEfficiency, Some(0.8));
        let c = decode_at("m2-ultra", 0.5);
        let f = fit(&base, &[&c], &plain()).unwrap();
        let m2 = HardwareDb::builtin().unwrap().get("m2-ultra").unwrap();
        assert_eq!(f.engine.gemv_compute_efficiency_on(m2), 0.0);
        assert_eq!(f.engine.expert_memory_efficiency_on(m2), 1.0);
        // with a batched row there the matrix-vector time is fitted from its start
        let mut b = case(
            "b4",
            "m2-ultra",
            "llama-2-7b",
            4,
            16,
            16,
            Target::DecodeTokensPerS,
        );
        b.measured = 0.5 * predict_case(&b, &Engine::ideal()).unwrap();
        let f = fit(&base, &[&c, &b], &plain()).unwrap();
        assert!(
            f.params.iter().any(|p| p.kind == ParamKind::AppleGemv),
            "{:?}",
            f.params
        );
    }

    #[test]
    fn half_the_roofline_decode_rate_is_half_the_bandwidth() {
        // Batch-1 decode on the ideal roofline is memory-bound in every op, so its time
        // is Σ bytes / (bandwidth · e): measuring half the ideal tokens/s means e = 0.5,
        // whatever the model.
        let c = decode_at("a100-80gb-sxm", 0.5);
        let f = fit(&engine(1.0, 1.0, 1.0, 0.0), &[&c], &plain()).unwrap();
        assert_eq!(f.params.len(), 1, "{:?}", f.params);
        // the A100's rows alone inform the HBM group: keyed to that device
        assert_eq!(f.params[0].kind.key(), "memory_efficiency.hbm");
        assert_eq!(
            f.params[0].key,
            "memory_efficiency (device = \"a100-80gb-sxm\")"
        );
        assert!(!f.engine.speed.memory_efficiency.contains_key("hbm"));
        assert!((memory_on(&f, "a100-80gb-sxm") - f.params[0].value).abs() < 1e-12);
        assert!(
            (f.params[0].value - 0.5).abs() < 1e-4,
            "{}",
            f.params[0].value
        );
        assert!(
            f.notes
                .iter()
                .any(|n| n.contains("compute_efficiency kept")),
            "{:?}",
            f.notes
        );
        assert!(f.rms_log_after < 1e-4);
        assert_eq!(f.engine.provenance.fitted_on, vec!["d1".to_string()]);
    }

    #[test]
    fn a_fitted_factor_is_tagged_with_its_rows_devices_and_publications() {
        // three batch-1 decode rows, all memory-bound on HBM: two on the A100 from one
        // repository (two pages of it), one on the H100 from a web page. The HBM
        // efficiency depends on all three: 3 rows, 2 devices, 2 publications.
        let mut rows = [
            decode_at("a100-80gb-sxm", 0.5),
            decode_at("a100-80gb-sxm", 0.5),
            decode_at("h100-sxm", 0.5),
        ];
        let sources = [
            "https://github.com/org/bench/blob/main/a.md",
            "https://github.com/org/bench/blob/main/b.md",
            "https://example.org/h100-post",
        ];
        for (i, (c, src)) in rows.iter_mut().zip(sources).enumerate() {
            c.id = format!("d{i}");
            c.source = src.to_string();
        }
        let cases: Vec<&Case> = rows.iter().collect();
        let f = fit(&engine(1.0, 1.0, 1.0, 0.0), &cases, &plain()).unwrap();
        assert_eq!(
            f.engine.provenance.factors.get("memory_efficiency.hbm"),
            Some(&FactorTag::Fitted {
                rows: 3,
                devices: 2,
                publications: 2,
                device: None,
            })
        );
        // compute_efficiency was kept (no row depends on it): no tag
        assert!(
            !f.engine
                .provenance
                .factors
                .contains_key("compute_efficiency")
        );
        let text = f.engine.provenance.factors["memory_efficiency.hbm"].to_string();
        assert_eq!(text, "fitted on 3 rows from 2 devices in 2 publications");
        assert_eq!(
            text.parse::<FactorTag>().unwrap(),
            f.engine.provenance.factors["memory_efficiency.hbm"]
        );
    }

    #[test]
    fn a_family_factor_from_one_device_is_keyed_to_it() {
        use crate::engine::{DeviceFactor, Selector};
        use crate::hardware::DeviceClass;
        // compute-bound prompts on Apple GPUs at 60% of the ideal prefill rate, and one
        // decode row each for the memory efficiency: the Apple compute factor is
        // informed by the prompts' devices
        let rows_on = |gpus: &[&str]| -> Vec<Case> {
            gpus.iter()
                .enumerate()
                .flat_map(|(i, g)| {
                    let mut p = case(
                        &format!("p{i}"),
                        g,
                        "llama-2-7b",
                        1,
                        2048,
                        1,
                        Target::PrefillTokensPerS,
                    );
                    p.measured = 0.6 * predict_case(&p, &Engine::ideal()).unwrap();
                    let mut d = decode_at(g, 0.7);
                    d.id = format!("d{i}");
                    [p, d]
                })
                .collect()
        };
        let apple = Selector::class(DeviceClass::Apple);
        let one = rows_on(&["m2-ultra"]);
        let f = fit(&Engine::ideal(), &one.iter().collect::<Vec<_>>(), &plain()).unwrap();
        let own = Selector::device("m2-ultra");
        let name = "compute_efficiency (device = \"m2-ultra\")";
        // the value sits under the device, not the class, and is named so
        let v = f
            .engine
            .override_value(&own, DeviceFactor::ComputeEfficiency);
        assert!(
            v.is_some_and(|v| (v - 0.6).abs() < 0.05),
            "{v:?} {:?}",
            f.params
        );
        assert_eq!(
            f.engine
                .override_value(&apple, DeviceFactor::ComputeEfficiency),
            None
        );
        assert!(f.params.iter().any(|p| p.key == name), "{:?}", f.params);
        assert!(f.engine.provenance.factors.contains_key(name));
        // a refit starting from it moves it back into the family and keys it again
        let again = fit(&f.engine, &one.iter().collect::<Vec<_>>(), &plain()).unwrap();
        assert_eq!(again.engine.devices, f.engine.devices);
        // informed by two devices, it stays the family's
        let two = rows_on(&["m2-ultra", "m1-max"]);
        let f = fit(&Engine::ideal(), &two.iter().collect::<Vec<_>>(), &plain()).unwrap();
        assert!(
            f.engine
                .override_value(&apple, DeviceFactor::ComputeEfficiency)
                .is_some()
        );
        assert!(
            f.engine
                .provenance
                .factors
                .contains_key("apple_compute_efficiency")
        );
    }

    fn refs(cs: &[Case]) -> Vec<&Case> {
        cs.iter().collect()
    }

    #[test]
    fn a_memory_group_informed_by_one_device_belongs_to_that_device() {
        use crate::engine::{DeviceFactor, Selector};
        let rows = |at: &[(&str, f64)]| -> Vec<Case> {
            at.iter()
                .enumerate()
                .map(|(i, &(gpu, fraction))| {
                    let mut c = decode_at(gpu, fraction);
                    c.id = format!("d{i}");
                    c
                })
                .collect()
        };
        // half the ideal decode rate on an RTX 4090: GDDR at 0.5, keyed to the 4090
        let one = rows(&[("rtx-4090", 0.5)]);
        let f = fit(&engine(1.0, 1.0, 1.0, 0.0), &refs(&one), &plain()).unwrap();
        let own = Selector::device("rtx-4090");
        let v = f
            .engine
            .override_value(&own, DeviceFactor::MemoryEfficiency);
        assert!(v.is_some_and(|v| (v - 0.5).abs() < 1e-4), "{v:?}");
        assert!(!f.engine.speed.memory_efficiency.contains_key("gddr"));
        let name = "memory_efficiency (device = \"rtx-4090\")";
        assert!(f.engine.provenance.factors.contains_key(name));
        assert_eq!(param(&f, "memory_efficiency.gddr").key, name);
        // a refit on the same rows starts from it (folded back into the group) and
        // keys it again
        let again = fit(&f.engine, &refs(&one), &plain()).unwrap();
        assert_eq!(again.engine.devices, f.engine.devices);
        // a fit without the 4090's rows does not start from it (a held-out
        // publication's own value): the 3090's rows alone key the group to the 3090
        let other = rows(&[("rtx-3090", 0.7)]);
        let g = fit(&f.engine, &refs(&other), &plain()).unwrap();
        assert_eq!(
            g.engine
                .override_value(&own, DeviceFactor::MemoryEfficiency),
            None
        );
        let v = g.engine.override_value(
            &Selector::device("rtx-3090"),
            DeviceFactor::MemoryEfficiency,
        );
        assert!(v.is_some_and(|v| (v - 0.7).abs() < 1e-4), "{v:?}");
        // informed by two devices, it stays the group's
        let two = rows(&[("rtx-4090", 0.5), ("rtx-3090", 0.5)]);
        let h = fit(&engine(1.0, 1.0, 1.0, 0.0), &refs(&two), &plain()).unwrap();
        let gddr = h.engine.speed.memory_efficiency["gddr"];
        assert!((gddr - 0.5).abs() < 1e-3, "{gddr}");
        assert!(
            h.engine
                .devices
                .iter()
                .all(|o| o.memory_efficiency.is_none())
        );
    }

    #[test]
    fn prior_pulls_to_the_geometric_mean_when_it_weighs_one_row() {
        // one row implying e = 0.4, a prior of 0.8 worth one row: minimizing
        // (ln e - ln 0.4)² + (ln e - ln 0.8)² gives e = sqrt(0.4 · 0.8) = 0.5657.
        let c = decode_at("rtx-4090", 0.4);
        let opts = FitOptions {
            prior: Some(engine(0.8, 0.8, 0.8, 0.0)),
            prior_rows: 1.0,
            ..plain()
        };
        let f = fit(&engine(1.0, 1.0, 1.0, 0.0), &[&c], &opts).unwrap();
        let v = memory_on(&f, "rtx-4090");
        assert!((v - (0.4f64 * 0.8).sqrt()).abs() < 1e-3, "{v}");
    }

    fn synthetic_cases() -> Vec<Case> {
        use Target::*;
        vec![
            case(
                "a1",
                "a100-80gb-sxm",
                "llama-2-7b",
                1,
                128,
                128,
                DecodeTokensPerS,
            ),
            case(
                "a2",
                "a100-80gb-sxm",
                "llama-2-13b",
                1,
                128,
                256,
                DecodeTokensPerS,
            ),
            case("a3", "rtx-4090", "llama-2-7b", 1, 0, 128, DecodeTokensPerS),
            case(
                "a4",
                "rtx-4090",
                "qwen2.5-coder-3b",
                1,
                0,
                128,
                DecodeTokensPerS,
            ),
            case("c1", "a100-80gb-sxm", "llama-2-7b", 1, 2048, 1, TtftS),
            case(
                "c2",
                "rtx-4090",
                "llama-2-7b",
                1,
                1024,
                1,
                PrefillTokensPerS,
            ),
            case(
                "b1",
                "a100-80gb-sxm",
                "llama-2-7b",
                64,
                128,
                128,
                OutputTokensPerS,
            ),
            case(
                "b2",
                "a100-80gb-sxm",
                "llama-2-13b",
                32,
                512,
                128,
                OutputTokensPerS,
            ),
        ]
    }

    #[test]
    fn recovers_a_known_engine_from_its_own_predictions() {
        let truth = engine(0.6, 0.85, 0.55, 80e-6);
        let mut cs = synthetic_cases();
        measure(&mut cs, &truth, &[]);
        let refs: Vec<&Case> = cs.iter().collect();
        let opts = FitOptions {
            min_rows_for_overhead: 6,
            overhead: OverheadKind::Layer,
            ..plain()
        };
        let f = fit(&engine(0.8, 0.8, 0.7, 0.0), &refs, &opts).unwrap();
        let got = |k: &str| param(&f, k).value;
        assert!((got("memory_efficiency.hbm") / 0.6 - 1.0).abs() < 0.01);
        assert!((got("memory_efficiency.gddr") / 0.85 - 1.0).abs() < 0.01);
        assert!((got("compute_efficiency") / 0.55 - 1.0).abs() < 0.01);
        assert!((got("layer_overhead_s") / 80e-6 - 1.0).abs() < 0.02);
        assert!(f.rms_log_after < 1e-3, "{}", f.rms_log_after);
        assert_eq!(f.dof, cs.len() - 4);
    }

    #[test]
    fn intervals_cover_the_truth_under_noise_and_widen_with_it() {
        let truth = engine(0.6, 0.85, 0.55, 80e-6);
        let opts = FitOptions {
            overhead: OverheadKind::Layer,
            ..plain()
        };
        let width = |noise: &[f64]| {
            let mut cs = synthetic_cases();
            measure(&mut cs, &truth, noise);
            let refs: Vec<&Case> = cs.iter().collect();
            let f = fit(&engine(0.8, 0.8, 0.7, 0.0), &refs, &opts).unwrap();
            let p = param(&f, "memory_efficiency.hbm");
            let (lo, hi) = (p.ci_low.unwrap(), p.ci_high.unwrap());
            assert!(
                lo <= 0.6 && 0.6 <= hi,
                "{lo}..{hi} misses 0.6 (noise {noise:?})"
            );
            hi / lo
        };
        let quiet = width(&[1.01, 0.99, 1.01, 0.99, 1.01, 0.99, 1.01, 0.99]);
        let loud = width(&[1.08, 0.93, 1.06, 0.95, 1.07, 0.92, 1.05, 0.94]);
        assert!(quiet > 1.0 && loud > quiet, "{quiet} vs {loud}");
    }

    #[test]
    fn ceilings_bound_the_fit() {
        // rows implying e = 0.98 on HBM against a measured ceiling of 0.9
        let truth = engine(0.98, 0.98, 0.7, 0.0);
        let mut cs = synthetic_cases();
        cs.retain(|c| c.id.starts_with('a'));
        measure(&mut cs, &truth, &[]);
        let refs: Vec<&Case> = cs.iter().collect();
        let mut opts = plain();
        opts.bounds.memory.insert("hbm".into(), 0.9);
        let f = fit(&engine(0.8, 0.8, 0.7, 0.0), &refs, &opts).unwrap();
        let p = param(&f, "memory_efficiency.hbm");
        assert!(p.at_bound && (p.value - 0.9).abs() < 1e-9, "{p:?}");
        assert!(p.ci_low.is_none());
        assert!(f.notes.iter().any(|n| n.contains("bound")), "{:?}", f.notes);
    }

    #[test]
    fn crossing_bounds_are_an_error_naming_the_bound_not_a_panic() {
        // a GDDR ceiling below the lowest efficiency: clamp(0.02, 0.001) panicked
        let c = decode_at("rtx-4090", 0.5);
        let mut opts = plain();
        opts.bounds.memory.insert("gddr".into(), 0.001);
        let e = fit(&engine(0.8, 0.8, 0.7, 0.0), &[&c], &opts)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("bounds.memory.gddr") && e.contains("0.001"),
            "{e}"
        );
        opts.bounds = Bounds {
            min_efficiency: f64::NAN,
            ..Bounds::default()
        };
        let e = fit(&engine(0.8, 0.8, 0.7, 0.0), &[&c], &opts).unwrap_err();
        assert!(e.to_string().contains("bounds.min_efficiency"), "{e}");
        // carrying memory factors over with such bounds stays in them, no panic
        let mut f = fit(&engine(0.8, 0.8, 0.7, 0.0), &[&c], &plain()).unwrap();
        let crossed = Bounds {
            memory_default: 0.001,
            ..Bounds::default()
        };
        crate::calibrate::carry_over_memory(&mut f, &engine(0.8, 0.8, 0.7, 0.0), &crossed);
        assert!(
            f.engine.speed.memory_efficiency["hbm"] <= 0.02,
            "{:?}",
            f.engine
        );
    }

    #[test]
    fn a_row_out_of_reach_is_named_not_its_neighbour() {
        // the second row's rate is subnormal: predicted / measured overflows; the
        // error names that row (the first row's prediction was blamed before)
        let truth = engine(0.6, 0.85, 0.55, 0.0);
        let mut cs = synthetic_cases();
        measure(&mut cs, &truth, &[]);
        cs[1].measured = 1e-310;
        cs[1].line = 3;
        let refs: Vec<&Case> = cs.iter().collect();
        let e = fit(&engine(0.8, 0.8, 0.7, 0.0), &refs, &plain())
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 3, column 12 (value): a2:"), "{e}");
    }

    #[test]
    fn huber_limits_one_outlier() {
        let truth = engine(0.6, 0.85, 0.55, 0.0);
        let mut cs = synthetic_cases();
        cs.retain(|c| c.id == "a1" || c.id == "a2" || c.id == "b1");
        // a1 measured 3x slower than the truth
        measure(&mut cs, &truth, &[1.0 / 3.0, 1.0, 1.0]);
        let refs: Vec<&Case> = cs.iter().collect();
        let ls = fit(&engine(0.8, 0.8, 0.7, 0.0), &refs, &plain()).unwrap();
        let robust = fit(
            &engine(0.8, 0.8, 0.7, 0.0),
            &refs,
            &FitOptions {
                huber: Some(0.3),
                ..plain()
            },
        )
        .unwrap();
        let hbm = |f: &EngineFit| memory_on(f, "a100-80gb-sxm");
        assert!(
            (hbm(&robust) / 0.6 - 1.0).abs() < (hbm(&ls) / 0.6 - 1.0).abs(),
            "robust {} vs least squares {}",
            hbm(&robust),
            hbm(&ls)
        );
    }
}
