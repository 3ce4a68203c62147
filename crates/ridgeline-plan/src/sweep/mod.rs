//! Sweeps: every combination of models, devices, device counts, batch sizes, prompt and
//! generation lengths, weight and KV formats and engines, evaluated in parallel and
//! streamed in a fixed order (`ridgeline sweep`), gathered into `ndarray` arrays
//! indexed by the swept axes ([`Sweep::grid`]) for planning code, or into the CSV's
//! columns ([`Sweep::columns`]) for data-frame code.
//!
//! ## Order
//! Configurations are numbered in the order of [`AXES`], outermost first: model, gpu,
//! gpus, batch, prompt, gen, weights, kv, engine (the CSV column order). Row `i` of the
//! CSV is flat index `i` of the arrays.
//!
//! ## Invalid combinations
//! A combination that cannot be laid out (tensor parallel over a device count that does
//! not divide the heads, more pipeline stages than layers, several devices without a
//! link) is not skipped: it becomes a row whose `error` column says why, with empty
//! metrics (`null` in JSON, `NaN` and `valid = false` in [`Grid`]). One bad cell never
//! aborts a sweep, and the row count is always the product of the list lengths.
//! Unknown names abort in [`Sweep::from_lists`], before any work.
//!
//! ## Speed
//! The sweep walks configurations in order, builds one [`Predictor`] per (model, gpu,
//! gpus, weights, kv, engine) and keeps an [`Evaluator`] for each, so a decode step
//! costs a few multiply-adds and the prefill is reused across `gen` values. Rows are
//! evaluated and formatted in ordered chunks on all cores (rayon) and written through
//! the caller's writer, so memory stays bounded whatever the sweep's size.

use crate::dtype::Format;
use crate::engine::{Engine, EngineDb};
use crate::error::{Error, Result};
use crate::hardware::{Hardware, HardwareDb};
use crate::list::{parse_names, parse_u64_list_in};
use crate::memory::Parallel;
use crate::model::{ModelConfig, ModelDb};
use crate::predict::{
    Evaluator, GenerationReport, Kernels, Predictor, Scenario, Speculation, Summary,
};
use crate::roofline::Bound;
use rayon::prelude::*;
use std::cell::OnceCell;
use std::ops::Range;

mod columns;
mod grid;
mod rate;
pub mod write;
pub use columns::{Column, Columns};
pub use grid::{Grid, GridAxes};
pub use rate::{MAX_RATE_CELLS, RATE_COLUMNS, RateOptions, RateRow};
pub use write::WriteOptions;

/// The swept axes, outermost first: the order of rows and of [`Grid`] dimensions.
pub const AXES: [&str; 9] = [
    "model", "gpu", "gpus", "batch", "prompt", "gen", "weights", "kv", "engine",
];

/// The most configurations one sweep may have.
pub const MAX_CONFIGS: usize = 1_000_000_000;

/// The most cells [`Sweep::grid`] gathers in memory (about 45 bytes each); stream
/// larger sweeps with [`Sweep::write_csv`] or [`Sweep::for_each`].
pub const MAX_GRID_CELLS: usize = 50_000_000;

/// Largest batch, prompt or gen a sweep accepts (the same as `predict`:
/// [`crate::predict::MAX_COUNT`]).
pub const MAX_VALUE: u64 = crate::predict::MAX_COUNT;

/// Largest device count a sweep accepts (the same as `predict`).
pub use crate::predict::MAX_GPUS;

/// The CSV header (and the JSON keys, in order).
pub const COLUMNS: [&str; 22] = [
    "model",
    "gpu",
    "gpus",
    "batch",
    "prompt",
    "gen",
    "weights",
    "kv",
    "engine",
    "parallel",
    "fits",
    "ttft_s",
    "tpot_s",
    "decode_tokens_per_s",
    "output_tokens_per_s",
    "total_bytes",
    "capacity_bytes",
    "decode_bound",
    "usd_per_million_tokens",
    "spec_speedup",
    "error",
    "priced",
];

/// A sweep: one list per axis; every combination is evaluated.
#[derive(Debug, Clone)]
pub struct Sweep<'a> {
    /// Models.
    pub models: Vec<ModelConfig>,
    /// Devices.
    pub devices: Vec<&'a Hardware>,
    /// Device counts.
    pub gpus: Vec<u64>,
    /// Concurrent sequences (>= 1).
    pub batch: Vec<u64>,
    /// Prompt tokens per sequence.
    pub prompt: Vec<u64>,
    /// Generated tokens per sequence.
    pub gen_tokens: Vec<u64>,
    /// Weight formats (`None`: each model's native format).
    pub weights: Vec<Option<Format>>,
    /// KV-cache formats (`None`: the activation dtype).
    pub kv: Vec<Option<Format>>,
    /// Engines.
    pub engines: Vec<&'a Engine>,
    /// How devices split the model.
    pub parallel: Parallel,
    /// Expert-parallel groups (1: none), for every configuration.
    pub ep: u64,
    /// Speculative decoding, for every configuration.
    pub spec: Option<Speculation>,
    /// Draft model of speculative decoding (`None`: each model's own head).
    pub draft: Option<ModelConfig>,
    /// Fused attention.
    pub flash: bool,
    /// Stream weights that do not fit from host memory.
    pub offload: bool,
    /// Network bandwidth per device between scale-up domains, bytes/s (see
    /// [`Scenario::inter_node_bytes_per_s`]).
    pub inter_node_bytes_per_s: f64,
    /// Passes hide the expert all-to-all behind their other ops
    /// ([`Scenario::overlap_ep`]); the evaluation then takes the plain path.
    pub overlap_ep: bool,
    /// The busiest expert-parallel rank's routed rows over the mean's, at least
    /// ([`Scenario::expert_imbalance`]; 1: uniform routing).
    pub expert_imbalance: f64,
    /// The routed experts' format in every configuration of a mixture-of-experts model
    /// ([`Scenario::expert_weights`]; `None`: each configuration's weight format where
    /// it names one, else the checkpoint's expert format).
    pub expert_weights: Option<Format>,
    /// Measured kernel tables read where they cover an op (`None`: the engines' fitted
    /// costs); the evaluation then takes the plain path, about as costly per
    /// configuration as one [`Predictor::summary`].
    pub kernels: Option<Kernels<'a>>,
}

/// The raw LIST strings of `ridgeline sweep`, before parsing.
#[derive(Debug, Clone, Copy)]
pub struct SweepLists<'t> {
    /// `--model`: model ids or config.json paths.
    pub model: &'t str,
    /// `--gpu`: device ids or aliases.
    pub gpu: &'t str,
    /// `--gpus`: device counts.
    pub gpus: &'t str,
    /// `--batch`.
    pub batch: &'t str,
    /// `--prompt`.
    pub prompt: &'t str,
    /// `--gen`.
    pub gen_tokens: &'t str,
    /// `--weights`: format names, `native` for each model's own.
    pub weights: &'t str,
    /// `--kv`: format names, `native` for the activation dtype.
    pub kv: &'t str,
    /// `--engine`: engine ids.
    pub engine: &'t str,
    /// `--parallel`.
    pub parallel: Parallel,
    /// `--ep`.
    pub ep: u64,
    /// `--spec-k` and `--spec-accept`.
    pub spec: Option<Speculation>,
    /// `--draft`: a model id or config.json path (empty: each model's own head).
    pub draft: &'t str,
    /// `--flash` / `--no-flash`.
    pub flash: bool,
    /// `--inter-node-bw`, bytes/s.
    pub inter_node_bytes_per_s: f64,
    /// `--overlap-ep`.
    pub overlap_ep: bool,
    /// `--expert-imbalance`.
    pub expert_imbalance: f64,
    /// `--expert-weights`.
    pub expert_weights: Option<Format>,
}

impl Default for SweepLists<'_> {
    /// The CLI defaults (model and gpu empty: they are required).
    fn default() -> Self {
        SweepLists {
            model: "",
            gpu: "",
            gpus: "1",
            batch: "1",
            prompt: "512",
            gen_tokens: "128",
            weights: "native",
            kv: "native",
            engine: "typical",
            parallel: Parallel::Tp,
            ep: 1,
            spec: None,
            draft: "",
            flash: true,
            inter_node_bytes_per_s: crate::hardware::DEFAULT_INTER_NODE_BYTES_PER_S,
            overlap_ep: false,
            expert_imbalance: 1.0,
            expert_weights: None,
        }
    }
}

/// Parses a format LIST item (`native`/`auto`/`default` -> `None`).
fn format_item(s: &str) -> Result<Option<Format>> {
    match s.to_ascii_lowercase().as_str() {
        "native" | "auto" | "default" => Ok(None),
        _ => Format::parse(s).map(Some),
    }
}

/// The predictions of one valid configuration.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct Point {
    /// The core numbers (see [`Predictor::summary`]).
    pub summary: Summary,
    /// Time to first token, s.
    pub ttft_s: f64,
    /// Mean time per output token, s (0 when gen = 0).
    pub tpot_s: f64,
    /// TTFT plus every decode step, s.
    pub total_s: f64,
    /// batch x decode steps / decode time (see [`crate::predict::decode_steps`]).
    pub decode_tokens_per_s: f64,
    /// batch x gen / (TTFT + decode time).
    pub output_tokens_per_s: f64,
    /// Rental price of all the devices, USD per hour (when the device has a price).
    pub usd_per_hour: Option<f64>,
    /// USD per million output tokens: `usd_per_hour / (output_tokens_per_s x 3600) x 1e6`
    /// (when the device has a price and the configuration produces tokens).
    pub usd_per_million_tokens: Option<f64>,
}

impl Point {
    /// Derives the per-configuration metrics from a summary, with the formulas of
    /// [`Predictor::predict`]'s `generation` block. `usd_per_hour` is the price of all
    /// the devices together.
    pub(crate) fn new(
        summary: Summary,
        batch: u64,
        gen_tokens: u64,
        usd_per_hour: Option<f64>,
    ) -> Point {
        let g = GenerationReport::from_summary(&summary, batch, gen_tokens);
        let output = g.output_tokens_per_s;
        Point {
            summary,
            ttft_s: g.ttft_s,
            tpot_s: g.tpot_s,
            total_s: g.total_s,
            decode_tokens_per_s: g.decode_tokens_per_s,
            output_tokens_per_s: output,
            usd_per_hour,
            usd_per_million_tokens: match usd_per_hour {
                Some(p) if output > 0.0 => Some(p / (output * 3600.0) * 1e6),
                _ => None,
            },
        }
    }

    /// Whether it fits in device memory.
    pub fn fits(&self) -> bool {
        self.summary.memory.fits
    }

    /// Memory per device, bytes.
    pub fn total_bytes(&self) -> f64 {
        self.summary.memory.total_bytes
    }

    /// The measured columns every output shares, in column order: TTFT, TPOT, decode
    /// and output tokens/s, memory per device and its capacity.
    pub(crate) fn headline(&self) -> [f64; 6] {
        [
            self.ttft_s,
            self.tpot_s,
            self.decode_tokens_per_s,
            self.output_tokens_per_s,
            self.total_bytes(),
            self.summary.memory.capacity_bytes,
        ]
    }

    /// USD per million output tokens of a configuration that fits (`None` for one that
    /// does not: it produces no tokens on these devices).
    pub fn usd_per_million_tokens_if_fits(&self) -> Option<f64> {
        self.usd_per_million_tokens.filter(|_| self.fits())
    }

    /// The bound of the mid-generation decode step.
    pub fn decode_bound(&self) -> Bound {
        self.summary.decode.bound()
    }
}

/// What [`Sweep::for_each`] hands over for each configuration: its predictions, or why
/// the combination is invalid.
pub(crate) type Outcome<'r> = std::result::Result<&'r Point, &'r Error>;

/// Counts from writing a sweep.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Stats {
    /// Rows written.
    pub rows: u64,
    /// Of which invalid combinations (rows with an `error`).
    pub invalid: u64,
    /// Of which valid configurations that do not fit in memory.
    pub not_fitting: u64,
    /// Up to five distinct error messages with their counts.
    pub errors: Vec<(String, u64)>,
    /// The reader went away (closed pipe) before the end.
    pub truncated: bool,
}

impl Stats {
    pub(crate) fn add(&mut self, o: Stats) {
        self.rows += o.rows;
        self.invalid += o.invalid;
        self.not_fitting += o.not_fitting;
        for (msg, n) in o.errors {
            self.note_error(msg, n);
        }
    }

    fn note_error(&mut self, msg: String, n: u64) {
        if let Some(e) = self.errors.iter_mut().find(|e| e.0 == msg) {
            e.1 += n;
        } else if self.errors.len() < 5 {
            self.errors.push((msg, n));
        }
    }

    pub(crate) fn count(&mut self, r: &Outcome<'_>) {
        self.rows += 1;
        match r {
            Ok(p) => self.not_fitting += u64::from(!p.fits()),
            Err(e) => {
                self.invalid += 1;
                self.note_error(e.to_string(), 1);
            }
        }
    }
}

/// Advances the odometer `ix` (innermost axis last); returns the outermost axis that
/// changed (`ix.len()` when it wrapped around).
#[inline]
fn advance(ix: &mut [usize; 9], shape: &[usize; 9]) -> usize {
    let mut a = 9;
    while a > 0 {
        a -= 1;
        ix[a] += 1;
        if ix[a] < shape[a] {
            return a;
        }
        ix[a] = 0;
    }
    9
}

fn unravel(mut flat: usize, shape: &[usize; 9]) -> [usize; 9] {
    let mut ix = [0; 9];
    for a in (0..9).rev() {
        ix[a] = flat % shape[a];
        flat /= shape[a];
    }
    ix
}

impl<'a> Sweep<'a> {
    /// Parses and resolves the LISTs: every name is looked up (unknown ones fail with
    /// the closest valid names) and every number checked before any work.
    pub fn from_lists(
        l: &SweepLists<'_>,
        hardware: &'a HardwareDb,
        engines: &'a EngineDb,
    ) -> Result<Sweep<'a>> {
        let db = ModelDb::builtin()?;
        let names = |flag: &str, text: &str| parse_names(flag, text);
        let sweep = Sweep {
            models: names("model", l.model)?
                .iter()
                .map(|m| db.resolve(m))
                .collect::<Result<_>>()?,
            devices: names("gpu", l.gpu)?
                .iter()
                .map(|g| hardware.get(g))
                .collect::<Result<_>>()?,
            gpus: parse_u64_list_in("gpus", l.gpus, 1, MAX_GPUS)?,
            batch: parse_u64_list_in("batch", l.batch, 1, MAX_VALUE)?,
            prompt: parse_u64_list_in("prompt", l.prompt, 0, MAX_VALUE)?,
            gen_tokens: parse_u64_list_in("gen", l.gen_tokens, 0, MAX_VALUE)?,
            weights: names("weights", l.weights)?
                .iter()
                .map(|f| format_item(f))
                .collect::<Result<_>>()?,
            kv: names("kv", l.kv)?
                .iter()
                .map(|f| format_item(f))
                .collect::<Result<_>>()?,
            engines: names("engine", l.engine)?
                .iter()
                .map(|e| engines.get(e))
                .collect::<Result<_>>()?,
            parallel: l.parallel,
            ep: l.ep,
            spec: l.spec,
            draft: match l.draft.trim() {
                "" => None,
                name => Some(db.resolve(name)?),
            },
            flash: l.flash,
            offload: false,
            inter_node_bytes_per_s: l.inter_node_bytes_per_s,
            overlap_ep: l.overlap_ep,
            expert_imbalance: l.expert_imbalance,
            expert_weights: l.expert_weights,
            kernels: None,
        };
        sweep.validate()?;
        Ok(sweep)
    }

    /// The scenario of the device count and formats at these indices of their axes,
    /// with the sweep's parallelism and attention: batch 1, no prompt, generation or
    /// speculation.
    fn layout(&self, gpus: usize, weights: usize, kv: usize) -> Scenario {
        Scenario {
            batch: 1,
            prompt: 0,
            gen_tokens: 0,
            weights: self.weights[weights],
            expert_weights: self.expert_weights,
            kv: self.kv[kv],
            gpus: self.gpus[gpus],
            parallel: self.parallel,
            ep: self.ep,
            flash: self.flash,
            offload: self.offload,
            spec: None,
            inter_node_bytes_per_s: self.inter_node_bytes_per_s,
            overlap_ep: self.overlap_ep,
            expert_imbalance: self.expert_imbalance,
        }
    }

    /// Lengths of the axes, in the order of [`AXES`].
    pub fn shape(&self) -> [usize; 9] {
        [
            self.models.len(),
            self.devices.len(),
            self.gpus.len(),
            self.batch.len(),
            self.prompt.len(),
            self.gen_tokens.len(),
            self.weights.len(),
            self.kv.len(),
            self.engines.len(),
        ]
    }

    /// Charges the sweep's configurations to the work in force
    /// ([`ridgeline_core::work::charge`]); over its budget the error names the axis
    /// with the most values (`batch`, `prompt`, ...).
    pub(crate) fn charge(&self) -> Result<()> {
        let shape = self.shape();
        let longest = (0..AXES.len()).max_by_key(|&i| shape[i]).unwrap_or(0);
        ridgeline_core::work::charge(self.len() as f64, AXES[longest], "configurations")
    }

    /// Number of configurations (saturating; [`Sweep::validate`] caps it).
    pub fn len(&self) -> usize {
        self.shape()
            .iter()
            .fold(1usize, |a, &n| a.saturating_mul(n))
    }

    /// Whether some axis is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Checks what [`Sweep::from_lists`] checks, for sweeps built by hand: no empty
    /// axis, batch >= 1, values within [`MAX_VALUE`] / [`MAX_GPUS`], batch x (prompt +
    /// gen) within [`crate::predict::MAX_TOKENS`], at most [`MAX_CONFIGS`]
    /// configurations.
    pub fn validate(&self) -> Result<()> {
        for (axis, n) in AXES.iter().zip(self.shape()) {
            if n == 0 {
                return Err(Error::invalid(
                    axis.to_string(),
                    "the list is empty; give at least one value",
                ));
            }
        }
        let check = |flag: &str, v: &[u64], min: u64, max: u64| match v
            .iter()
            .find(|&&x| x < min || x > max)
        {
            Some(x) => Err(Error::invalid(flag, format!("{x} is outside {min}..{max}"))),
            None => Ok(()),
        };
        check("gpus", &self.gpus, 1, MAX_GPUS)?;
        check("ep", &[self.ep], 1, MAX_GPUS)?;
        crate::predict::check_expert_imbalance(self.expert_imbalance, self.ep)?;
        if let Some(spec) = self.spec {
            spec.validate()?;
        }
        if self.draft.is_some() && self.spec.is_none() {
            return Err(Error::conflict(
                &["draft", "spec_k"],
                "a draft model needs speculative decoding (spec_k and spec_accept)",
            ));
        }
        check("batch", &self.batch, 1, MAX_VALUE)?;
        check("prompt", &self.prompt, 0, MAX_VALUE)?;
        check("gen", &self.gen_tokens, 0, MAX_VALUE)?;
        let max = |v: &[u64]| v.iter().copied().max().unwrap_or(0) as f64;
        let tokens = max(&self.batch) * (max(&self.prompt) + max(&self.gen_tokens));
        if tokens > crate::predict::MAX_TOKENS as f64 {
            return Err(Error::invalid(
                "batch",
                format!(
                    "batch x (prompt + gen) reaches {tokens:e} tokens at the largest values; the supported maximum is {:e}",
                    crate::predict::MAX_TOKENS as f64
                ),
            ));
        }
        let n = self
            .shape()
            .iter()
            .try_fold(1usize, |a, &n| a.checked_mul(n));
        match n {
            Some(n) if n <= MAX_CONFIGS => Ok(()),
            _ => Err(Error::invalid(
                "sweep",
                format!(
                    "{} configurations ({}) is more than the limit of {MAX_CONFIGS}; shorten a list or use a coarser step",
                    self.shape()
                        .iter()
                        .map(|n| n.to_string())
                        .collect::<Vec<_>>()
                        .join(" x "),
                    AXES.join(" x ")
                ),
            )),
        }
    }

    /// Validates the sweep and checks that it is small enough to gather in memory
    /// ([`Sweep::grid`], [`Sweep::columns`]): at most [`MAX_GRID_CELLS`]
    /// configurations. Returns their number.
    fn in_memory(&self) -> Result<usize> {
        self.validate()?;
        let n = self.len();
        if n > MAX_GRID_CELLS {
            return Err(Error::invalid(
                "sweep",
                format!(
                    "{n} configurations are more than the {MAX_GRID_CELLS} gathered in memory at once; stream them with write_csv or for_each"
                ),
            ));
        }
        Ok(n)
    }

    /// The predictor of the (model, gpu, gpus, weights, kv, engine) of the configuration
    /// at axis indices `ix` (order of [`AXES`]; batch, prompt and gen are ignored).
    pub fn predictor(&self, ix: &[usize; 9]) -> Result<Predictor<'_>> {
        let shape = self.shape();
        if ix.iter().zip(shape).any(|(&i, n)| i >= n) {
            return Err(Error::invalid(
                "sweep",
                format!("index {ix:?} is outside the shape {shape:?}"),
            ));
        }
        let s = Scenario {
            spec: self.spec,
            ..self.layout(ix[2], ix[6], ix[7])
        };
        let (model, hw, engine) = (
            &self.models[ix[0]],
            self.devices[ix[1]],
            self.engines[ix[8]],
        );
        let p = match &self.kernels {
            Some(k) => k.predictor(model, hw, engine, &s)?,
            None => Predictor::new(model, hw, engine, &s)?,
        };
        p.with_draft_if(self.draft.as_ref())
    }

    /// Evaluates the configurations with flat indices in `range` in order on this thread,
    /// calling `f` with each one's axis indices (order of [`AXES`]) and outcome. No
    /// allocation per configuration; one [`Predictor`] per (model, gpu, gpus, weights,
    /// kv, engine) met. Indices past the end are ignored. For a sweep built by hand, call
    /// [`Sweep::validate`] first: values beyond its limits are not checked here.
    pub fn for_each(&self, range: Range<usize>, mut f: impl FnMut(&[usize; 9], Outcome<'_>)) {
        let shape = self.shape();
        let end = range.end.min(self.len());
        if range.start >= end {
            return;
        }
        let mut left = end - range.start;
        let mut ix = unravel(range.start, &shape);
        let (nk, ne) = (shape[7], shape[8]);
        let inner_len = shape[6] * nk * ne;
        while left > 0 {
            // one (model, gpu, gpus) group: predictors built on first use
            let preds: Vec<OnceCell<Result<Predictor<'_>>>> =
                (0..inner_len).map(|_| OnceCell::new()).collect();
            let mut evals: Vec<Option<Evaluator<'_, '_>>> = (0..inner_len).map(|_| None).collect();
            let gpus = self.gpus[ix[2]];
            let price = self.devices[ix[1]]
                .price
                .as_ref()
                .map(|p| p.usd_per_hour * gpus as f64);
            loop {
                let inner = (ix[6] * nk + ix[7]) * ne + ix[8];
                if evals[inner].is_none()
                    && let Ok(p) = preds[inner].get_or_init(|| self.predictor(&ix))
                {
                    // prefill lines take up to ~250 kB per evaluator: only for a few at once
                    evals[inner] = Some(if inner_len <= 16 {
                        Evaluator::new(p)
                    } else {
                        Evaluator::lean(p)
                    });
                }
                let (b, g) = (self.batch[ix[3]], self.gen_tokens[ix[5]]);
                match evals[inner].as_mut() {
                    Some(ev) => {
                        let point = Point::new(ev.summary(b, self.prompt[ix[4]], g), b, g, price);
                        f(&ix, Ok(&point));
                    }
                    None => {
                        if let Some(Err(e)) = preds[inner].get() {
                            f(&ix, Err(e));
                        }
                    }
                }
                left -= 1;
                if left == 0 || advance(&mut ix, &shape) <= 2 {
                    break;
                }
            }
        }
    }

    /// Evaluates in ordered chunks on all cores: `task` turns each range of flat
    /// indices into a value (e.g. formatted text), and `sink` receives the values in
    /// order; it returns `false` to stop early.
    pub fn run_chunked<T: Send>(
        &self,
        rows_per_task: usize,
        task: impl Fn(Range<usize>) -> T + Sync,
        mut sink: impl FnMut(T) -> bool,
    ) {
        let n = self.len();
        let per = rows_per_task.max(1);
        let tasks_per_chunk = 4 * rayon::current_num_threads().max(1);
        let chunk = per.saturating_mul(tasks_per_chunk);
        let mut start = 0;
        while start < n {
            let end = start.saturating_add(chunk).min(n);
            let ranges: Vec<Range<usize>> = (start..end)
                .step_by(per)
                .map(|s| s..(s + per).min(end))
                .collect();
            let out: Vec<T> = ranges.into_par_iter().map(&task).collect();
            for t in out {
                if !sink(t) {
                    return;
                }
            }
            start = end;
        }
    }

    /// Streams the sweep as CSV (see `write::write_csv`).
    pub fn write_csv<W: std::io::Write>(&self, out: W, opts: &WriteOptions) -> Result<Stats> {
        write::write_csv(self, out, opts)
    }

    /// Streams the sweep as one JSON document (see `write::write_json`).
    pub fn write_json<W: std::io::Write>(&self, out: W, opts: &WriteOptions) -> Result<Stats> {
        write::write_json(self, out, opts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn small<'a>(hw: &'a HardwareDb, en: &'a EngineDb) -> Sweep<'a> {
        Sweep::from_lists(
            &SweepLists {
                model: "llama-2-7b,llama-3-8b",
                gpu: "h100,l4",
                gpus: "1,3",
                batch: "1,8",
                prompt: "0,512",
                gen_tokens: "1,128",
                ..SweepLists::default()
            },
            hw,
            en,
        )
        .unwrap()
    }

    #[test]
    fn for_each_visits_in_order_and_matches_plain_predictions() {
        let (hw, en) = (HardwareDb::builtin().unwrap(), EngineDb::builtin().unwrap());
        let s = small(hw, en);
        assert_eq!(s.len(), 2 * 2 * 2 * 2 * 2 * 2);
        let mut seen = Vec::new();
        s.for_each(0..s.len(), |ix, r| {
            seen.push(*ix);
            let p = s.predictor(ix);
            match (r, p) {
                (Ok(pt), Ok(p)) => {
                    let (b, g) = (s.batch[ix[3]], s.gen_tokens[ix[5]]);
                    let plain = p.predict(b, s.prompt[ix[4]], g).unwrap();
                    let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 * a.abs().max(b.abs());
                    assert!(close(pt.ttft_s, plain.generation.ttft_s));
                    assert!(close(pt.tpot_s, plain.generation.tpot_s));
                    assert!(close(
                        pt.output_tokens_per_s,
                        plain.generation.output_tokens_per_s
                    ));
                    assert!(close(
                        pt.decode_tokens_per_s,
                        plain.generation.decode_tokens_per_s
                    ));
                    assert_eq!(pt.total_bytes(), plain.memory.inner.total_bytes);
                }
                (Err(e), Err(e2)) => assert_eq!(e, &e2),
                (r, p) => panic!("{ix:?}: sweep {r:?} vs predictor {:?}", p.is_ok()),
            }
        });
        let expect: Vec<[usize; 9]> = (0..s.len()).map(|i| unravel(i, &s.shape())).collect();
        assert_eq!(seen, expect);
        // sub-ranges see the same thing as the whole
        let mut part = Vec::new();
        s.for_each(5..13, |ix, _| part.push(*ix));
        assert_eq!(part, expect[5..13]);
    }

    #[test]
    fn odometer_and_unravel_agree() {
        let shape = [2, 1, 3, 1, 2, 1, 1, 2, 1];
        let mut ix = [0; 9];
        for i in 1..24 {
            let a = advance(&mut ix, &shape);
            assert!(a < 9);
            assert_eq!(ix, unravel(i, &shape));
        }
        assert_eq!(advance(&mut ix, &shape), 9);
    }

    #[test]
    fn csv_and_json_rows_line_up() {
        let (hw, en) = (HardwareDb::builtin().unwrap(), EngineDb::builtin().unwrap());
        let s = small(hw, en);
        let opts = WriteOptions { rows_per_task: 3 };
        let mut csv = Vec::new();
        let st = s.write_csv(&mut csv, &opts).unwrap();
        assert_eq!(st.rows, 64);
        // gpus 3 divides neither model's 32 heads
        assert_eq!(st.invalid, 32);
        assert_eq!(st.errors.len(), 2);
        let text = String::from_utf8(csv).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], COLUMNS.join(","));
        assert_eq!(lines.len(), 65);
        assert!(lines[1].starts_with("llama-2-7b,h100-sxm,1,1,0,1,fp16,fp16,typical,tp,true,"));
        assert!(lines[3].starts_with("llama-2-7b,h100-sxm,1,1,512,1,"));
        let mut json = Vec::new();
        s.write_json(&mut json, &opts).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&json).unwrap();
        let rows = v["rows"].as_array().unwrap();
        assert_eq!(rows.len(), 64);
        for (row, line) in rows.iter().zip(&lines[1..]) {
            let cells: Vec<&str> = line.splitn(COLUMNS.len(), ',').collect();
            assert_eq!(row["model"], cells[0]);
            assert_eq!(row["gpus"].as_u64().unwrap().to_string(), cells[2]);
            assert_eq!(row["fits"].as_bool().unwrap().to_string(), cells[10]);
            match row["ttft_s"].as_f64() {
                // serde_json's default float parser may be off in the last bit
                Some(t) => {
                    let c: f64 = cells[11].parse().unwrap();
                    assert!((t - c).abs() <= 1e-15 * c.abs(), "{t} {line}");
                }
                None => {
                    assert_eq!(cells[11], "");
                    assert!(row["error"].is_string());
                }
            }
        }
    }

    #[test]
    fn grid_has_one_dimension_per_axis() {
        let (hw, en) = (HardwareDb::builtin().unwrap(), EngineDb::builtin().unwrap());
        let s = small(hw, en);
        let g = s.grid().unwrap();
        assert_eq!(g.ttft_s.shape(), &s.shape());
        assert_eq!(g.valid.iter().filter(|v| **v).count(), 32);
        // invalid cells are NaN; valid ones finite
        for (v, t) in g.valid.iter().zip(g.tpot_s.iter()) {
            assert_eq!(*v, t.is_finite());
        }
        assert_eq!(g.axes.gpus, vec![1, 3]);
        assert_eq!(g.axes.weights, vec!["native"]);
        // h100 has a price, the l4 too: cost is known wherever output is produced
        assert!(g.usd_per_million_tokens[[0, 0, 0, 0, 0, 1, 0, 0, 0]].is_finite());
    }

    #[test]
    fn unknown_names_and_bad_numbers_fail_before_work() {
        let (hw, en) = (HardwareDb::builtin().unwrap(), EngineDb::builtin().unwrap());
        let base = SweepLists {
            model: "llama-2-7b",
            gpu: "h100",
            ..SweepLists::default()
        };
        for (lists, needle) in [
            (
                SweepLists {
                    gpu: "h100,h10x",
                    ..base
                },
                "unknown hardware id 'h10x'",
            ),
            (
                SweepLists {
                    model: "llama-9",
                    ..base
                },
                "llama-9",
            ),
            (
                SweepLists {
                    weights: "fp16,q4km",
                    ..base
                },
                "unknown format 'q4km'",
            ),
            (
                SweepLists {
                    engine: "typicall",
                    ..base
                },
                "typicall",
            ),
            (
                SweepLists {
                    batch: "0..4",
                    ..base
                },
                "invalid batch: '0..4'",
            ),
            (SweepLists { gpus: "0", ..base }, "invalid gpus: '0'"),
            (
                SweepLists {
                    prompt: "1..x",
                    ..base
                },
                "invalid prompt: '1..x'",
            ),
            (
                SweepLists {
                    batch: "1..1000000",
                    prompt: "1..1000000",
                    ..base
                },
                "more than the limit",
            ),
        ] {
            let e = Sweep::from_lists(&lists, hw, en).unwrap_err().to_string();
            assert!(e.contains(needle), "{e} lacks {needle}");
        }
    }

    #[test]
    fn stops_quietly_on_a_closed_pipe() {
        struct Closed;
        impl Write for Closed {
            fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
                Err(std::io::ErrorKind::BrokenPipe.into())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let (hw, en) = (HardwareDb::builtin().unwrap(), EngineDb::builtin().unwrap());
        let st = small(hw, en)
            .write_csv(Closed, &WriteOptions::default())
            .unwrap();
        assert!(st.truncated);
    }
}
