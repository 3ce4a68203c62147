//! Calibration: published measurements -> engine efficiency factors.
//!
//! 1. [`parse_measurements`] reads a CSV with the columns of [`COLUMNS`] into typed
//!    [`Measurement`] rows (errors name the file, line and column).
//! 2. [`cases`] maps each row's free text to ridgeline's ids and turns kind A/B/C rows
//!    into a [`Scenario`] plus the prediction number that matches the metric
//!    ([`Target`]), and kind F rows into an efficiency ceiling. A row that cannot be
//!    mapped becomes a [`Skipped`] entry with the reason, never silently dropped.
//! 3. [`fit`] fits a few physical factors of one engine (memory efficiency per memory
//!    group, compute efficiency, a per-pass overhead) to its rows by least squares on
//!    `ln(predicted / measured)`, bounded above by the kind F ceilings, with Student-t
//!    confidence intervals; [`evaluate`] gives the per-row errors.
//!
//! ```
//! use ridgeline::calibrate::{cases, evaluate, parse_measurements, BUILTIN_MEASUREMENTS_CSV};
//! use ridgeline::engine::EngineDb;
//! let rows = parse_measurements(BUILTIN_MEASUREMENTS_CSV, "measurements.csv").unwrap();
//! let mapped = cases(&rows).unwrap();
//! let engines = EngineDb::builtin().unwrap();
//! let errs = evaluate(&mapped.cases, |c| engines.get(&c.engine).ok().cloned());
//! assert!(errs.iter().all(|e| e.predicted.is_finite()));
//! ```

mod csv;
mod fit;
mod mapping;

pub use csv::{COLUMNS, Count, Kind, Measurement, parse_measurements, read_measurements};
pub use fit::{
    Bounds, EngineFit, FitOptions, FittedParam, OverheadKind, ParamKind, TYPICAL_POOL,
    bounds_from_ceilings, fit,
};
pub use mapping::{
    ENGINE_IDS, GpuMatch, map_framework, map_gpu, map_model, map_precision, name_words,
    partial_device,
};

use crate::dtype::{ComputeDtype, Format};
use crate::engine::Engine;
use crate::error::Result;
use crate::hardware::{Hardware, HardwareDb};
use crate::memory::Parallel;
use crate::model::{ModelConfig, ModelDb};
use crate::predict::{GenerationReport, Predictor, Scenario};
use serde::Serialize;

/// The bundled `data/measurements/measurements.csv`.
pub const BUILTIN_MEASUREMENTS_CSV: &str = include_str!("../data/measurements/measurements.csv");

/// Largest batch assumed for "max-load" / "offline" throughput rows, whose batch the
/// scheduler chose: the largest batch that fits in memory, capped here (vLLM's default
/// `max_num_seqs` is 256; TensorRT-LLM's benchmark tunes its own, typically a few
/// hundred).
pub const MAX_LOAD_BATCH: u64 = 256;

/// The prediction number a measurement is compared with.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Target {
    /// `generation.decode_tokens_per_s` (llama-bench `tg`, "decode tokens/s").
    DecodeTokensPerS,
    /// `generation.output_tokens_per_s` (static-batching output throughput).
    OutputTokensPerS,
    /// `generation.output_tokens_per_s` divided by the number of devices.
    OutputTokensPerSPerGpu,
    /// `prefill.tokens_per_s` (llama-bench `pp`).
    PrefillTokensPerS,
    /// `generation.ttft_s`, seconds.
    TtftS,
    /// Achieved matmul rate: `compute_efficiency × peak(dtype)`, FLOP/s.
    MatmulFlopsPerS(ComputeDtype),
    /// Achieved bandwidth: `memory_efficiency × bandwidth`, bytes/s.
    MemoryBytesPerS,
}

impl Target {
    /// Whether a larger value means faster (false for times).
    pub fn higher_is_faster(self) -> bool {
        !matches!(self, Target::TtftS)
    }

    /// Short name for reports.
    pub fn name(self) -> &'static str {
        match self {
            Target::DecodeTokensPerS => "decode_tokens_per_s",
            Target::OutputTokensPerS => "output_tokens_per_s",
            Target::OutputTokensPerSPerGpu => "output_tokens_per_s_per_gpu",
            Target::PrefillTokensPerS => "prefill_tokens_per_s",
            Target::TtftS => "ttft_s",
            Target::MatmulFlopsPerS(_) => "matmul_flops_per_s",
            Target::MemoryBytesPerS => "memory_bytes_per_s",
        }
    }
}

/// How many sequences a case runs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BatchSpec {
    /// A stated batch.
    Fixed(u64),
    /// The scheduler's choice under full load: the largest batch that fits, at most
    /// [`MAX_LOAD_BATCH`].
    MaxLoad,
}

/// A measurement mapped onto ridgeline: what to predict and what was measured.
#[derive(Debug, Clone)]
pub struct Case {
    /// Row id.
    pub id: String,
    /// Line in the file.
    pub line: usize,
    /// Kind of measurement.
    pub kind: Kind,
    /// Engine id the row is compared with (`typical` for device ceilings).
    pub engine: String,
    /// The device (a scaled copy for one die of a package).
    pub hardware: Hardware,
    /// The model (`None` for kind F rows).
    pub model: Option<ModelConfig>,
    /// Shapes, formats and layout (batch is [`Case::batch`]).
    pub scenario: Scenario,
    /// Batch.
    pub batch: BatchSpec,
    /// The prediction number that matches the metric.
    pub target: Target,
    /// The measured value in SI units (tokens/s, s, FLOP/s, bytes/s).
    pub measured: f64,
    /// What had to be assumed to map the row.
    pub assumptions: Vec<String>,
}

/// A row left out, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Skipped {
    /// Row id.
    pub id: String,
    /// Line in the file.
    pub line: usize,
    /// Kind.
    pub kind: Kind,
    /// Why it cannot be predicted.
    pub reason: String,
}

/// Rows mapped to cases, and the rows that could not be.
#[derive(Debug, Clone, Default)]
pub struct Mapped {
    /// Predictable rows.
    pub cases: Vec<Case>,
    /// Rows left out, each with its reason.
    pub skipped: Vec<Skipped>,
}

/// Maps rows with the built-in hardware and model databases (see [`cases_with`]).
pub fn cases(rows: &[Measurement]) -> Result<Mapped> {
    Ok(cases_with(
        rows,
        HardwareDb::builtin()?,
        ModelDb::builtin()?,
    ))
}

fn unit_scale(unit: &str) -> Option<(f64, &'static str)> {
    let u = unit.trim().to_ascii_lowercase().replace(' ', "");
    Some(match u.as_str() {
        "tok/s" | "tokens/s" | "token/s" | "tokens/sec" => (1.0, "rate"),
        "tok/s/gpu" | "tokens/s/gpu" => (1.0, "rate_per_gpu"),
        "ms" => (1e-3, "time"),
        "s" | "sec" => (1.0, "time"),
        "us" | "µs" => (1e-6, "time"),
        "tflop/s" | "tflops" => (1e12, "flops"),
        "gflop/s" => (1e9, "flops"),
        "gb/s" => (1e9, "bandwidth"),
        "tb/s" => (1e12, "bandwidth"),
        _ => return None,
    })
}

/// Maps rows to cases with the given databases. Kinds D (training) and E (memory) are
/// skipped with that reason: they are checked by the training and memory models, not
/// by engine calibration.
///
/// Assumptions made on the way are listed in [`Case::assumptions`]: a kind A row with no
/// batch is batch 1; missing prompt length is 0 and missing generation length 128;
/// `num_gpus > 1` is tensor parallel except for llama.cpp (whose default splits layers
/// across devices, i.e. pipeline-style) or where the notes say "layer split"/"pipeline".
pub fn cases_with(rows: &[Measurement], hw_db: &HardwareDb, model_db: &ModelDb) -> Mapped {
    let mut out = Mapped::default();
    for r in rows {
        match case(r, hw_db, model_db) {
            Ok(c) => out.cases.push(c),
            Err(reason) => out.skipped.push(Skipped {
                id: r.id.clone(),
                line: r.line,
                kind: r.kind,
                reason,
            }),
        }
    }
    out
}

fn case(
    r: &Measurement,
    hw_db: &HardwareDb,
    model_db: &ModelDb,
) -> std::result::Result<Case, String> {
    let mut assumptions = Vec::new();
    match r.kind {
        Kind::D => {
            return Err("kind D (training throughput) is not an inference measurement".into());
        }
        Kind::E => {
            return Err("kind E (measured memory) is not a speed measurement".into());
        }
        _ => {}
    }
    let (scale, dim) =
        unit_scale(&r.unit).ok_or_else(|| format!("unit '{}' is not understood", r.unit))?;
    let measured = r.value * scale;
    if measured.is_nan() || measured <= 0.0 {
        return Err(format!("value {} is not positive", r.value));
    }
    let gpu = map_gpu(&r.gpu, hw_db)?;
    let base = hw_db.get(&gpu.id).map_err(|e| e.to_string())?;
    let hardware = partial_device(base, gpu.share);
    if let Some(n) = &gpu.note {
        assumptions.push(n.clone());
    }
    let (weights, kv) = map_precision(&r.precision)?;
    if r.kind == Kind::F {
        let engine = match map_framework(&r.framework) {
            Some(e) if e != "ideal" => e.to_string(),
            _ => "typical".to_string(),
        };
        let target = match dim {
            "flops" => {
                let act = weights.unwrap_or(Format::Bf16);
                let d = act.compute_dtype(act.as_activation_dtype().unwrap_or(ComputeDtype::Bf16));
                Target::MatmulFlopsPerS(d)
            }
            "bandwidth" => Target::MemoryBytesPerS,
            _ => {
                return Err(format!(
                    "kind F row in '{}': only FLOP/s and bandwidth ceilings are compared",
                    r.unit
                ));
            }
        };
        return Ok(Case {
            id: r.id.clone(),
            line: r.line,
            kind: r.kind,
            engine,
            hardware,
            model: None,
            scenario: Scenario::default(),
            batch: BatchSpec::Fixed(1),
            target,
            measured,
            assumptions,
        });
    }
    let engine = map_framework(&r.framework)
        .ok_or_else(|| {
            format!(
                "framework '{}' is not one of ridgeline's engines",
                r.framework
            )
        })?
        .to_string();
    let model_id = map_model(&r.model, model_db)?;
    let model = model_db.resolve(&model_id).map_err(|e| e.to_string())?;
    let batch = match &r.batch {
        Count::Exact(0) => return Err("batch 0".into()),
        Count::Exact(n) => BatchSpec::Fixed(*n),
        Count::Missing if r.kind == Kind::A => {
            assumptions.push("batch not stated: 1 (single stream)".into());
            BatchSpec::Fixed(1)
        }
        Count::Missing => return Err("batch not stated".into()),
        Count::Text(t) => {
            let l = t.to_ascii_lowercase();
            if l.starts_with("max") || l.starts_with("offline") {
                assumptions.push(format!(
                    "batch '{t}': the largest that fits, at most {MAX_LOAD_BATCH}"
                ));
                BatchSpec::MaxLoad
            } else {
                return Err(format!("batch '{t}' is not a number"));
            }
        }
    };
    let prompt = match r.prompt_len {
        Count::Exact(n) => n,
        Count::Missing => {
            assumptions.push("prompt length not stated: 0".into());
            0
        }
        Count::Text(ref t) => return Err(format!("prompt_len '{t}' is not a number")),
    };
    let gen_tokens = match r.gen_len {
        Count::Exact(n) => n,
        Count::Missing if r.kind == Kind::C => {
            assumptions.push("generation length not stated: 1".into());
            1
        }
        Count::Missing => {
            assumptions.push("generation length not stated: 128".into());
            128
        }
        Count::Text(ref t) => return Err(format!("gen_len '{t}' is not a number")),
    };
    let notes = r.notes.to_ascii_lowercase();
    let parallel = if r.num_gpus > 1
        && (engine == "llama.cpp" || notes.contains("layer split") || notes.contains("pipeline"))
    {
        assumptions.push("devices split layers (pipeline-style), not tensor parallel".into());
        Parallel::Pp
    } else {
        Parallel::Tp
    };
    let metric = r.metric.to_ascii_lowercase();
    let target = match (r.kind, dim) {
        (Kind::A, "rate") if metric.contains("output") || metric.contains("out tok") => {
            Target::OutputTokensPerS
        }
        (Kind::A, "rate") => Target::DecodeTokensPerS,
        (Kind::B, "rate") if metric.contains("per gpu") => Target::OutputTokensPerSPerGpu,
        (Kind::B, "rate") => Target::OutputTokensPerS,
        (Kind::A | Kind::B, "rate_per_gpu") => Target::OutputTokensPerSPerGpu,
        (Kind::C, "rate") => Target::PrefillTokensPerS,
        (Kind::C, "time") => Target::TtftS,
        _ => {
            return Err(format!(
                "kind {} with unit '{}' does not match a prediction",
                r.kind, r.unit
            ));
        }
    };
    if r.kind == Kind::C && prompt == 0 {
        return Err("prefill row with prompt length 0".into());
    }
    if matches!(r.kind, Kind::A | Kind::B) && gen_tokens == 0 {
        return Err("decode row with generation length 0".into());
    }
    let scenario = Scenario {
        batch: match batch {
            BatchSpec::Fixed(n) => n,
            BatchSpec::MaxLoad => 1,
        },
        prompt,
        gen_tokens,
        weights,
        kv,
        gpus: r.num_gpus,
        parallel,
        flash: true,
        offload: false,
    };
    let c = Case {
        id: r.id.clone(),
        line: r.line,
        kind: r.kind,
        engine,
        hardware,
        model: Some(model),
        scenario,
        batch,
        target,
        measured,
        assumptions,
    };
    // a layout the predictor rejects (no link between devices, heads not divisible)
    // is a reason to skip, found now rather than at every prediction
    predict_case(&c, &Engine::ideal()).map_err(|e| e.to_string())?;
    Ok(c)
}

/// Predicts the case's [`Target`] with `engine`, in SI units.
pub fn predict_case(c: &Case, engine: &Engine) -> Result<f64> {
    let Some(model) = &c.model else {
        return Ok(match c.target {
            Target::MatmulFlopsPerS(d) => engine.compute_efficiency * c.hardware.peak(d).0,
            _ => engine.memory_efficiency(&c.hardware) * c.hardware.memory.bandwidth_bytes_per_s,
        });
    };
    let p = Predictor::new(model, &c.hardware, engine, &c.scenario)?;
    let s = &c.scenario;
    let batch = match c.batch {
        BatchSpec::Fixed(n) => n,
        BatchSpec::MaxLoad => {
            let max = p.max_batch(s.prompt, s.gen_tokens);
            if max == 0 {
                return Err(crate::error::Error::conflict(
                    &["batch"],
                    format!(
                        "{}: not even one sequence of {} + {} tokens fits",
                        c.id, s.prompt, s.gen_tokens
                    ),
                ));
            }
            max.min(MAX_LOAD_BATCH)
        }
    };
    let sum = p.summary(batch, s.prompt, s.gen_tokens);
    let g = GenerationReport::from_summary(&sum, batch, s.gen_tokens);
    Ok(match c.target {
        Target::DecodeTokensPerS => g.decode_tokens_per_s,
        Target::OutputTokensPerS => g.output_tokens_per_s,
        Target::OutputTokensPerSPerGpu => g.output_tokens_per_s / s.gpus as f64,
        Target::PrefillTokensPerS => batch as f64 * s.prompt as f64 / g.ttft_s,
        Target::TtftS => g.ttft_s,
        Target::MatmulFlopsPerS(_) | Target::MemoryBytesPerS => {
            return Err(crate::error::Error::invalid(
                "target",
                "device ceilings have no model",
            ));
        }
    })
}

/// One case's prediction against its measurement.
#[derive(Debug, Clone, Serialize)]
pub struct RowError {
    /// Row id.
    pub id: String,
    /// Kind.
    pub kind: Kind,
    /// Engine id used.
    pub engine: String,
    /// Hardware id.
    pub hardware: String,
    /// Model id (empty for device ceilings).
    pub model: String,
    /// What was compared.
    pub target: Target,
    /// Measured, SI units.
    pub measured: f64,
    /// Predicted, SI units (NaN when the prediction failed).
    pub predicted: f64,
    /// `100 · (predicted / measured - 1)`.
    pub error_pct: f64,
}

/// Predicts every case with the engine `engine_for` returns for it (cases it returns
/// `None` for are left out).
pub fn evaluate(cases: &[Case], engine_for: impl Fn(&Case) -> Option<Engine>) -> Vec<RowError> {
    cases
        .iter()
        .filter_map(|c| {
            let e = engine_for(c)?;
            let predicted = predict_case(c, &e).unwrap_or(f64::NAN);
            Some(RowError {
                id: c.id.clone(),
                kind: c.kind,
                engine: e.id.clone(),
                hardware: c.hardware.id.clone(),
                model: c.model.as_ref().map_or(String::new(), |m| m.id.clone()),
                target: c.target,
                measured: c.measured,
                predicted,
                error_pct: 100.0 * (predicted / c.measured - 1.0),
            })
        })
        .collect()
}

/// Median of the absolute values (NaN for an empty slice; NaNs sort last).
pub fn median_abs(values: impl IntoIterator<Item = f64>) -> f64 {
    let mut v: Vec<f64> = values.into_iter().map(f64::abs).collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// One row before and after calibration.
#[derive(Debug, Clone, Serialize)]
pub struct RowReport {
    /// Row id.
    pub id: String,
    /// Kind.
    pub kind: Kind,
    /// Engine id.
    pub engine: String,
    /// Hardware id.
    pub hardware: String,
    /// Model id (empty for device ceilings).
    pub model: String,
    /// What was compared.
    pub target: Target,
    /// Measured, SI units.
    pub measured: f64,
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
/// sets it apart, Python's per-module overhead, is fitted even from a single row.
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
pub fn base_for(engines: &crate::engine::EngineDb, id: &str) -> Result<Engine> {
    match engines.get(id) {
        Ok(e) => Ok(e.clone()),
        Err(_) => {
            let mut e = engines.get("typical")?.clone();
            e.id = id.to_string();
            e.description = format!("{id}: not in the engine database; starts from typical");
            e.fitted_on.clear();
            Ok(e)
        }
    }
}

/// `engine` with its speed factors replaced by `typical`'s (efficiencies and
/// overheads); its memory-footprint fields (overhead bytes, reserve) and link factors
/// stay. A fit starts here, so a factor the engine's rows do not inform is `typical`'s,
/// whatever the engine had before: calibrating twice gives the same profile.
pub fn start_from_typical(engine: &Engine, typical: &Engine) -> Engine {
    Engine {
        memory_efficiency: typical.memory_efficiency.clone(),
        compute_efficiency: typical.compute_efficiency,
        step_overhead_s: typical.step_overhead_s,
        layer_overhead_s: typical.layer_overhead_s,
        fitted_on: Vec::new(),
        ..engine.clone()
    }
}

/// Memory groups a fit did not reach (an engine measured only on HBM parts, say) take
/// `typical`'s value times the engine's own ratio to `typical` on the groups it was
/// fitted on (geometric mean), within the bounds: an engine whose decode kernels reach
/// 10% less bandwidth than typical on HBM is assumed to reach 10% less on GDDR too.
pub fn carry_over_memory(f: &mut EngineFit, typical: &Engine, bounds: &Bounds) {
    let fitted: Vec<(String, f64)> = f
        .params
        .iter()
        .filter_map(|p| match &p.kind {
            ParamKind::Memory(g) => Some((g.clone(), p.value)),
            _ => None,
        })
        .collect();
    if fitted.is_empty() {
        return;
    }
    let typ = |g: &str| {
        typical
            .memory_efficiency
            .get(g)
            .or_else(|| typical.memory_efficiency.get("default"))
            .copied()
            .unwrap_or(1.0)
    };
    let ln_ratio = fitted.iter().map(|(g, v)| (v / typ(g)).ln()).sum::<f64>() / fitted.len() as f64;
    let ratio = ln_ratio.exp();
    let keys: Vec<String> = typical.memory_efficiency.keys().cloned().collect();
    let mut derived = Vec::new();
    for k in keys {
        if fitted.iter().any(|(g, _)| *g == k) {
            continue;
        }
        let hi = bounds
            .memory
            .get(&k)
            .copied()
            .unwrap_or(bounds.memory_default);
        let v = (typ(&k) * ratio).clamp(bounds.min_efficiency, hi);
        f.engine.memory_efficiency.insert(k.clone(), v);
        derived.push(format!("{k} {v:.3}"));
    }
    if !derived.is_empty() {
        f.notes.push(format!(
            "memory_efficiency not measured, carried over from typical x {ratio:.3}: {}",
            derived.join(", ")
        ));
    }
}

/// Fits every engine that has rows in `mapped` (only `only` when given), starting from
/// and completing the profiles in `engines`.
///
/// `typical` is fitted on the pooled rows of [`TYPICAL_POOL`] (and rows whose framework
/// is literally `typical`); each other engine on its own rows, pulled toward the fitted
/// `typical` by [`FitOptions::prior_rows`]. Efficiencies are bounded by the kind F
/// ceilings in `mapped`, or by those of the bundled file when `mapped` has none.
pub fn calibrate(
    mapped: &Mapped,
    engines: &crate::engine::EngineDb,
    only: Option<&str>,
) -> Result<Calibration> {
    let mut bounds = bounds_from_ceilings(&mapped.cases);
    if bounds.from.is_empty() {
        let rows = parse_measurements(
            BUILTIN_MEASUREMENTS_CSV,
            "data/measurements/measurements.csv",
        )?;
        bounds = bounds_from_ceilings(&cases(&rows)?.cases);
    }
    let only = only
        .map(|e| {
            let q = e.trim().to_ascii_lowercase();
            match engines.get(&q) {
                Ok(e) => Ok(e.id.clone()),
                Err(_) if ENGINE_IDS.contains(&q.as_str()) => Ok(q),
                Err(err) => Err(err),
            }
        })
        .transpose()?;
    let mut ids: Vec<String> = Vec::new();
    for c in mapped.cases.iter().filter(|c| c.kind != Kind::F) {
        if !ids.contains(&c.engine) {
            ids.push(c.engine.clone());
        }
    }
    let pooled: Vec<&Case> = mapped
        .cases
        .iter()
        .filter(|c| c.kind != Kind::F)
        .filter(|c| c.engine == "typical" || TYPICAL_POOL.contains(&c.engine.as_str()))
        .collect();
    let wants = |id: &str| only.as_deref().is_none_or(|o| o == id);
    let mut fits: Vec<EngineFit> = Vec::new();
    let mut typical = engines.get("typical")?.clone();
    if wants("typical") && !pooled.is_empty() {
        let f = fit(&typical, &pooled, &options_for("typical", &bounds, None))?;
        typical = f.engine.clone();
        fits.push(f);
    }
    ids.sort();
    for id in ids.iter().filter(|id| *id != "typical" && *id != "ideal") {
        if !wants(id) {
            continue;
        }
        let base = start_from_typical(&base_for(engines, id)?, &typical);
        let rows: Vec<&Case> = mapped
            .cases
            .iter()
            .filter(|c| &c.engine == id && c.kind != Kind::F)
            .collect();
        let mut f = fit(&base, &rows, &options_for(id, &bounds, Some(&typical)))?;
        carry_over_memory(&mut f, &typical, &bounds);
        fits.push(f);
    }
    let fitted = |id: &str| fits.iter().find(|f| f.engine.id == id).map(|f| &f.engine);
    let mut rows = Vec::new();
    for c in &mapped.cases {
        // with `--engine typical`, the pooled rows are shown against typical
        let profile = if only.as_deref() == Some("typical")
            && (c.kind == Kind::F || TYPICAL_POOL.contains(&c.engine.as_str()))
        {
            "typical"
        } else if wants(&c.engine) {
            c.engine.as_str()
        } else {
            continue;
        };
        let before = &base_for(engines, profile)?;
        let after = fitted(profile).unwrap_or(before);
        let pb = predict_case(c, before).unwrap_or(f64::NAN);
        let pa = predict_case(c, after).unwrap_or(f64::NAN);
        let used = fits.iter().any(|f| f.rows.contains(&c.id));
        rows.push(RowReport {
            id: c.id.clone(),
            kind: c.kind,
            engine: profile.to_string(),
            hardware: c.hardware.id.clone(),
            model: c.model.as_ref().map_or(String::new(), |m| m.id.clone()),
            target: c.target,
            measured: c.measured,
            predicted_before: pb,
            predicted_after: pa,
            error_before_pct: 100.0 * (pb / c.measured - 1.0),
            error_after_pct: 100.0 * (pa / c.measured - 1.0),
            fitted: used,
            assumptions: c.assumptions.clone(),
        });
    }
    let mut kinds: Vec<Kind> = rows.iter().map(|r| r.kind).collect();
    kinds.sort();
    kinds.dedup();
    let summary = kinds
        .into_iter()
        .map(|k| {
            let of: Vec<&RowReport> = rows.iter().filter(|r| r.kind == k).collect();
            KindSummary {
                kind: k,
                rows: of.len(),
                median_abs_error_before_pct: median_abs(of.iter().map(|r| r.error_before_pct)),
                median_abs_error_after_pct: median_abs(of.iter().map(|r| r.error_after_pct)),
            }
        })
        .collect();
    Ok(Calibration {
        bounds,
        engines: fits,
        rows,
        summary,
        skipped: mapped.skipped.clone(),
    })
}

fn round_sig(v: f64, digits: i32) -> f64 {
    if v == 0.0 || !v.is_finite() {
        return v;
    }
    let mag = v.abs().log10().floor() as i32;
    let f = 10f64.powi(digits - 1 - mag);
    (v * f).round() / f
}

/// An engines TOML (the schema of `data/engines.toml`, accepted by `--engine-file`)
/// holding the fitted engines, each preceded by a comment on where its numbers came
/// from. Values are rounded to 3 significant digits.
pub fn engines_toml(fits: &[EngineFit]) -> Result<String> {
    let mut out = String::from(
        "# Engine profiles fitted by `ridgeline calibrate`. Load with --engine-file FILE.\n",
    );
    for f in fits {
        let mut e = f.engine.clone();
        e.compute_efficiency = round_sig(e.compute_efficiency, 3);
        e.step_overhead_s = round_sig(e.step_overhead_s, 3);
        e.layer_overhead_s = round_sig(e.layer_overhead_s, 3);
        for v in e.memory_efficiency.values_mut() {
            *v = round_sig(*v, 3);
        }
        e.check("fitted engine")?;
        out.push('\n');
        out.push_str(&format!(
            "# {}: fitted on {} rows; rms ln(pred/measured) {:.3} -> {:.3}\n",
            e.id,
            f.rows.len(),
            f.rms_log_before,
            f.rms_log_after
        ));
        for p in &f.params {
            let ci = match (p.ci_low, p.ci_high) {
                (Some(l), Some(h)) => format!("95% CI {l:.4e}..{h:.4e}"),
                _ if p.at_bound => "at its bound".to_string(),
                _ => "no interval".to_string(),
            };
            out.push_str(&format!("#   {} = {:.4e} ({ci})\n", p.key, p.value));
        }
        for n in &f.notes {
            out.push_str(&format!("#   {n}\n"));
        }
        let id = e.id.clone();
        let table = std::collections::BTreeMap::from([(id, e)]);
        let text = toml::to_string(&table)
            .map_err(|err| crate::error::Error::internal("engine TOML writer", err))?;
        out.push_str(&text);
    }
    Ok(out)
}

/// One row predicted by a calibration that did not see it.
#[derive(Debug, Clone, Serialize)]
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
/// rows (as [`calibrate`] does) and predicts the row left out. The median of the
/// errors estimates the error on measurements that are not in the file. Costs one full
/// calibration per row.
pub fn leave_one_out(mapped: &Mapped, engines: &crate::engine::EngineDb) -> Result<Vec<HeldOut>> {
    let mut out = Vec::new();
    for (i, c) in mapped.cases.iter().enumerate() {
        if c.kind == Kind::F {
            continue;
        }
        let mut rest = mapped.clone();
        rest.cases.remove(i);
        let cal = calibrate(&rest, engines, None)?;
        let fitted = |id: &str| cal.engines.iter().find(|f| f.engine.id == id);
        let engine = match (fitted(&c.engine), fitted("typical")) {
            (Some(f), _) => f.engine.clone(),
            // the engine's only row was left out: its profile is typical's
            (None, Some(t)) => start_from_typical(&base_for(engines, &c.engine)?, &t.engine),
            (None, None) => base_for(engines, &c.engine)?,
        };
        let p = predict_case(c, &engine)?;
        out.push(HeldOut {
            id: c.id.clone(),
            kind: c.kind,
            engine: c.engine.clone(),
            error_pct: 100.0 * (p / c.measured - 1.0),
        });
    }
    Ok(out)
}
