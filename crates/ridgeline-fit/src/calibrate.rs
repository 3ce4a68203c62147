//! Calibration: published measurements -> engine efficiency factors.
//!
//! 1. [`parse_measurements`] reads a CSV with the columns of [`COLUMNS`] into typed
//!    [`Measurement`] rows (errors name the file, line and column).
//! 2. [`cases`] maps each row's free text to ridgeline's ids (device names through the
//!    hardware files' `publication_names`) and turns kind A/B/C rows into a
//!    [`Scenario`] plus the prediction number that matches the metric ([`Target`]), and
//!    kind F rows into an efficiency ceiling. A row that cannot be mapped becomes a
//!    [`Skipped`] entry with the reason, never silently dropped.
//! 3. [`fit`] fits a few physical factors of one engine (memory efficiency per memory
//!    group, compute efficiency, a per-pass overhead) to its rows by least squares on
//!    `ln(predicted / measured)`, bounded above by the kind F ceilings, with Student-t
//!    confidence intervals; [`calibrate`] fits every engine, [`evaluate`] gives the
//!    per-row errors.
//! 4. [`leave_one_out`] and [`leave_one_source_out`] predict rows with fits that did not
//!    see them; [`accuracy`] sums up all of it per kind (the README's table);
//!    [`calibration_report`] sets the fitted engines beside the pure roofline and one
//!    flat bandwidth factor, and lists the rows held out worst.
//! 5. [`engines_file`] writes the fitted profiles as `data/engines.toml`, with comments
//!    on what each factor was fitted on.
//!
//! ```
//! use ridgeline_fit::calibrate::{cases, evaluate, parse_measurements, BUILTIN_MEASUREMENTS_CSV};
//! use ridgeline_core::engine::EngineDb;
//! let rows = parse_measurements(BUILTIN_MEASUREMENTS_CSV, "measurements.csv").unwrap();
//! let mapped = cases(&rows).unwrap();
//! let engines = EngineDb::builtin().unwrap();
//! let errs = evaluate(&mapped.cases, |c| engines.get(&c.engine).ok().cloned());
//! assert!(errs.iter().all(|e| e.predicted.is_finite()));
//! ```

mod bounds;
mod case;
mod checks;
mod factors;
mod fit;
mod heldout;
mod intervals;
mod lm;
mod many;
mod mapping;
mod report;
mod run;
mod save;

pub use crate::measurements::{
    COLUMNS, Count, Kind, Measurement, parse_measurements, read_measurements,
};
pub use bounds::{Bounds, bounds_from_ceilings};
pub use case::{predict_case, predict_case_with};
pub use checks::{MAX_OFF_ROOFLINE, check_measurements};
pub use factors::{FACTORS, Factor, Limit, factor};
pub use fit::{EngineFit, FitOptions, FittedParam, OverheadKind, ParamKind, fit};
pub use heldout::{
    Accuracy, HeldOut, KindAccuracy, accuracy, accuracy_with_progress, leave_one_out,
    leave_one_source_out, leave_one_source_out_with_progress, source_key,
};
pub use intervals::{
    HeldRatio, IntervalBands, TARGET_COVERAGE, coverage, coverage_by_source, held_out_ratios,
    held_out_tail, interval_bands, interval_bands_from, interval_db, intervals_toml, speed_ratio,
};
pub use mapping::{
    ENGINE_IDS, GpuMatch, TYPICAL_POOL, VERSION_PROFILES, map_framework, map_gpu, map_model,
    map_precision, name_words, on_vendor, partial_device, version_profile,
};
pub use report::{
    CalibrationReport, DEFAULT_WORST, EngineErrors, KindErrors, REPORT_MIN_ENGINE_ROWS, ReportRow,
    Spread, calibration_report, calibration_report_from, flat_engine, flat_factor,
};
/// Median of the absolute values (the core's [`ridgeline_core::stats::median_abs`]).
pub use ridgeline_core::stats::median_abs;
pub use run::{
    Calibration, KindSummary, Progress, RowReport, base_for, calibrate, calibrate_with_progress,
    carry_over_memory, options_for, start_from_typical, tag_carried,
};
pub use save::{engines_file, engines_toml, fits_on_tables, kernel_engines_toml};

use crate::dtype::ComputeDtype;
use crate::engine::Engine;
use crate::error::Result;
use crate::hardware::{Hardware, HardwareDb};
use crate::model::{ModelConfig, ModelDb};
use crate::predict::Scenario;
use serde::Serialize;
use std::sync::Arc;

/// The bundled `data/measurements/measurements.csv`.
pub const BUILTIN_MEASUREMENTS_CSV: &str =
    include_str!("../../../data/measurements/measurements.csv");

/// Largest batch assumed for "max-load" / "offline" throughput rows, whose batch the
/// scheduler chose, under an engine that sets no `max_num_seqs`: the largest batch that
/// fits in memory, capped here (vLLM's default `max_num_seqs` is 256). An engine's own
/// `max_num_seqs` (TensorRT-LLM's `max_batch_size` 2048) caps it where given.
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
    /// `generation.decode_tokens_per_s` divided by the number of devices (a
    /// disaggregated decode instance's "decode tokens/s per GPU").
    DecodeTokensPerSPerGpu,
    /// `prefill.tokens_per_s` (llama-bench `pp`).
    PrefillTokensPerS,
    /// `generation.ttft_s`, seconds.
    TtftS,
    /// `generation.tpot_s`, seconds: a single stream's time per output token
    /// ("per-token latency", "inter-token latency").
    TpotS,
    /// `generation.total_s`, seconds: a request's end-to-end latency (prefill and every
    /// decode step).
    E2eS,
    /// Achieved matmul rate: `compute_efficiency × peak(dtype)`, FLOP/s.
    MatmulFlopsPerS(ComputeDtype),
    /// Achieved bandwidth: `memory_efficiency × bandwidth`, bytes/s.
    MemoryBytesPerS,
}

impl Target {
    /// Whether a larger value means faster (false for times).
    pub fn higher_is_faster(self) -> bool {
        !matches!(self, Target::TtftS | Target::TpotS | Target::E2eS)
    }

    /// Short name for reports.
    pub fn name(self) -> &'static str {
        match self {
            Target::DecodeTokensPerS => "decode_tokens_per_s",
            Target::OutputTokensPerS => "output_tokens_per_s",
            Target::OutputTokensPerSPerGpu => "output_tokens_per_s_per_gpu",
            Target::DecodeTokensPerSPerGpu => "decode_tokens_per_s_per_gpu",
            Target::PrefillTokensPerS => "prefill_tokens_per_s",
            Target::TtftS => "ttft_s",
            Target::TpotS => "tpot_s",
            Target::E2eS => "e2e_s",
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
    /// The file the row was read from (errors name it).
    pub file: String,
    /// 1-based column of the measured value in that file (errors about it name it).
    pub value_column: usize,
    /// Kind of measurement.
    pub kind: Kind,
    /// Where it was published (the row's `source_url_or_repo_path`).
    pub source: String,
    /// Engine id the row is compared with (`typical` for device ceilings).
    pub engine: String,
    /// The device (a scaled copy for one die of a package), shared by the rows that
    /// name it.
    pub hardware: Arc<Hardware>,
    /// The model (`None` for kind F rows), shared by the rows that name it.
    pub model: Option<Arc<ModelConfig>>,
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
    /// The measured kernel tables the case is predicted with (`None`: the engine's
    /// costs alone); set for a whole mapping by [`Mapped::with_kernels`].
    pub kernels: Option<Arc<CaseKernels>>,
}

/// Measured kernel tables and the devices among which a device without a table finds
/// its sibling ([`Predictor::with_kernels`](crate::predict::Predictor::with_kernels)),
/// shared by the cases predicted with them.
#[derive(Debug, Clone)]
pub struct CaseKernels {
    /// The tables.
    pub db: ridgeline_core::kernels::KernelDb,
    /// The devices siblings are looked for among.
    pub hardware: HardwareDb,
}

/// A row left out, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
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

impl Case {
    /// Whether the case reads a kernel table: it carries tables ([`Case::kernels`]) and
    /// one covers its device, or the device's sibling, under its engine.
    pub fn reads_tables(&self) -> bool {
        self.kernels.as_ref().is_some_and(|k| {
            k.db.table_for(&self.hardware, &k.hardware, &self.engine)
                .is_some()
        })
    }
}

impl Mapped {
    /// Every case predicted with `kernels` (where a table covers its device, or the
    /// device's sibling, under its engine: [`predict_case`]).
    pub fn with_kernels(mut self, kernels: CaseKernels) -> Self {
        let k = Arc::new(kernels);
        for c in &mut self.cases {
            c.kernels = Some(Arc::clone(&k));
        }
        self
    }
}

/// Maps rows with the built-in hardware and model databases (see [`cases_with`]).
pub fn cases(rows: &[Measurement]) -> Result<Mapped> {
    Ok(cases_with(
        rows,
        HardwareDb::builtin()?,
        ModelDb::builtin()?,
    ))
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
    let mut names = case::Names::new(hw_db, model_db);
    let mut each: Vec<std::result::Result<Case, String>> =
        rows.iter().map(|r| case::case(r, &mut names)).collect();
    // a layout the predictor rejects (no link between devices, heads not divisible) is
    // a reason to skip, found now rather than at every prediction: each distinct case
    // predicted once with the ideal engine
    let at: Vec<usize> = (0..each.len())
        .filter(|&i| each[i].as_ref().is_ok_and(|c| c.model.is_some()))
        .collect();
    let failed: Vec<Option<String>> = {
        let cases: Vec<&Case> = at.iter().filter_map(|&i| each[i].as_ref().ok()).collect();
        let ideal = Engine::ideal();
        many::Distinct::new(&cases)
            .predict(&ideal)
            .into_iter()
            .map(|p| p.err().map(|e| e.to_string()))
            .collect()
    };
    for (i, why) in at.into_iter().zip(failed) {
        if let Some(why) = why {
            each[i] = Err(why);
        }
    }
    let mut out = Mapped::default();
    for (r, m) in rows.iter().zip(each) {
        match m {
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

/// A case compared under an engine: the row, the engine and what was compared.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct Compared {
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
}

impl Compared {
    /// `c` compared under the engine `engine`.
    pub(crate) fn new(c: &Case, engine: &str) -> Compared {
        Compared {
            id: c.id.clone(),
            kind: c.kind,
            engine: engine.to_string(),
            hardware: c.hardware.id.clone(),
            model: c.model.as_ref().map_or(String::new(), |m| m.id.clone()),
            target: c.target,
            measured: c.measured,
        }
    }

    /// `100 · (predicted / measured - 1)`.
    pub(crate) fn error_pct(&self, predicted: f64) -> f64 {
        100.0 * (predicted / self.measured - 1.0)
    }
}

/// One case's prediction against its measurement.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct RowError {
    /// The row and the engine used.
    #[serde(flatten)]
    pub row: Compared,
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
            let row = Compared::new(c, &e.id);
            Some(RowError {
                error_pct: row.error_pct(predicted),
                row,
                predicted,
            })
        })
        .collect()
}
