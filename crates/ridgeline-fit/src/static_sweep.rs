//! A publication no fit has seen: Argonne's LLM-Inference-Bench, static batches under
//! vLLM on A100, H100 and MI300X (`data/reference/llm-inference-bench-vllm.csv`, the rows of its
//! `Plots/All_results.csv` unchanged, with their source and licence in the file's
//! comment lines). Each row is one batch of `Batch Size` sequences of `Input Output
//! Length` prompt tokens generating as many, in float16, over `Num of Hardware`
//! tensor-parallel devices; its `Throughput` counts prompt and generated tokens over the
//! batch's whole time, so the output tokens/s it implies is half of it
//! ([`StaticRow::output_tokens_per_s`]), which is what `predict`'s
//! `generation.output_tokens_per_s` is for a static batch.
//!
//! [`compare`] predicts every row with the device's vLLM profile as fitted (`vllm`, and
//! `vllm-rocm` on the MI300X), and on the measured kernel tables where one covers the
//! device (`--kernels bundled`); [`markdown`] reports the median error per device and
//! batch size, [`coverage_markdown`] how often the 80% intervals hold the rows
//! (docs/calibration.md, section "An unseen
//! publication"; `tests/suite/static_sweep.rs` checks it is current). Nothing here
//! changes a prediction or a fit: the rows stay out of every fit, so their error is the
//! error to expect on a benchmark ridgeline has not seen.

use crate::dtype::Format;
use crate::engine::EngineDb;
use crate::error::{Error, Result};
use crate::hardware::HardwareDb;
use crate::kernels::KernelDb;
use crate::model::ModelDb;
use crate::predict::{GenerationReport, Predictor, Scenario};
use ridgeline_core::stats::median_abs;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The bundled `data/reference/llm-inference-bench-vllm.csv`.
pub const BUILTIN_STATIC_SWEEP_CSV: &str =
    include_str!("../../../data/reference/llm-inference-bench-vllm.csv");

/// The file's columns, in order (the publication's own header).
pub const COLUMNS: [&str; 8] = [
    "Hardware",
    "Num of Hardware",
    "Framework",
    "Model",
    "Input Output Length",
    "Batch Size",
    "Latency",
    "Throughput",
];

/// The publication's device names, the bundled devices they are read as and the
/// engine profile of vLLM there (the A100 runs are jobs on ALCF's Polaris, whose nodes
/// carry the 40 GB SXM part; the H100 variant is not stated, SXM assumed: the file's
/// comment lines).
pub const DEVICES: [(&str, &str, &str); 3] = [
    ("Nvidia A100 GPU", "a100-40gb-sxm", "vllm"),
    ("Nvidia H100 GPU", "h100-sxm", "vllm"),
    ("AMD MI300X GPU", "mi300x", "vllm-rocm"),
];

/// The bundled profile of the vLLM release the A100 and H100 rows ran (mid-2024:
/// 0.4-0.5), `vllm-0.5` ([`crate::calibrate::VERSION_PROFILES`]: the `vllm` profile
/// plus the host time per sequence of vLLM before 0.6, fitted on the bundled rows that
/// state such a release, not on these), and the devices whose rows ran it (the MI300X
/// rows ran vLLM 0.6.1).
pub const VERSION_ENGINE: (&str, [&str; 2]) = ("vllm-0.5", ["a100-40gb-sxm", "h100-sxm"]);

/// The publication's model names (Hugging Face repositories) and the bundled models
/// they are. Rows of other models (Qwen2, DeciLM, ...) are counted as not bundled.
pub const MODELS: [(&str, &str); 7] = [
    ("meta-llama/Llama-2-7b-hf", "llama-2-7b"),
    ("meta-llama/Llama-2-70b-hf", "llama-2-70b"),
    ("meta-llama/Meta-Llama-3-8B", "llama-3-8b"),
    ("meta-llama/Meta-Llama-3-70B", "llama-3-70b"),
    ("mistralai/Mistral-7B-v0.1", "mistral-7b"),
    ("mistralai/Mixtral-8x7B-v0.1", "mixtral-8x7b"),
    ("huggyllama/llama-7b", "llama-7b"),
];

/// One published row.
#[derive(Debug, Clone, PartialEq)]
pub struct StaticRow {
    /// The publication's device name.
    pub hardware: String,
    /// Tensor-parallel devices.
    pub tp: u64,
    /// The publication's model name.
    pub model: String,
    /// Prompt tokens per sequence, and generated tokens per sequence.
    pub length: u64,
    /// Sequences in the batch.
    pub batch: u64,
    /// The whole batch's time, s.
    pub latency_s: f64,
    /// Prompt and generated tokens over the batch's time, tokens/s.
    pub throughput: f64,
}

impl StaticRow {
    /// Generated tokens per second: `batch x length / latency`, half the published
    /// throughput (which counts the prompt's tokens too).
    pub fn output_tokens_per_s(&self) -> f64 {
        (self.batch * self.length) as f64 / self.latency_s
    }

    /// The bundled model, device and engine the row names, if the model and the
    /// device are bundled.
    pub fn ids(&self) -> Option<(&'static str, &'static str, &'static str)> {
        let model = MODELS.iter().find(|(m, _)| *m == self.model)?.1;
        let &(_, device, engine) = DEVICES.iter().find(|(d, ..)| *d == self.hardware)?;
        Some((model, device, engine))
    }

    /// The configuration in ridgeline's words: float16 weights and cache, the batch,
    /// its lengths and the tensor-parallel devices.
    pub fn scenario(&self) -> Scenario {
        Scenario {
            batch: self.batch,
            prompt: self.length,
            gen_tokens: self.length,
            weights: Some(Format::Fp16),
            kv: Some(Format::Fp16),
            gpus: self.tp,
            ..Scenario::default()
        }
    }
}

/// Reads the file (`#` comment lines, then the header [`COLUMNS`]); `src` names it in
/// errors, which give the line and the column. Only `vLLM` rows are expected.
pub fn parse(text: &str, src: &str) -> Result<Vec<StaticRow>> {
    let mut rows = Vec::new();
    for row in crate::csv_rows::rows(text, src, &COLUMNS)? {
        let cells = &row.cells;
        if cells[2] != "vLLM" {
            return Err(row.bad(COLUMNS[2], format!("'{}' is not vLLM", cells[2])));
        }
        rows.push(StaticRow {
            hardware: cells[0].to_string(),
            tp: row.count(1)?,
            model: cells[3].to_string(),
            length: row.count(4)?,
            batch: row.count(5)?,
            latency_s: row.value(6)?,
            throughput: row.value(7)?,
        });
    }
    Ok(rows)
}

/// Why a row has no prediction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Skipped {
    /// Its model is not bundled.
    ModelNotBundled,
    /// Its batch does not fit in the devices' memory in ridgeline's count (vLLM would
    /// preempt and recompute sequences, which a static prediction does not express).
    DoesNotFit,
}

/// One row and ridgeline's output tokens/s for it: the device's vLLM profile as fitted,
/// and on the measured kernel tables (`None` where no table covers the device).
#[derive(Debug, Clone, PartialEq)]
pub struct Predicted {
    /// The published row.
    pub row: StaticRow,
    /// Output tokens/s, the profile as fitted.
    pub fitted: f64,
    /// Output tokens/s on the kernel tables, with the profile refitted on them.
    pub tables: Option<f64>,
    /// Output tokens/s with the profile of the row's vLLM version ([`VERSION_ENGINE`]),
    /// where `engines` holds it and the row ran it.
    pub version: Option<f64>,
    /// The 80% interval `predict` gives the output tokens/s as fitted
    /// (`intervals["generation.output_tokens_per_s"]`: kind A's band at one sequence,
    /// B's at more), `None` where the engine has none.
    pub interval: Option<[f64; 2]>,
}

impl Predicted {
    /// Where the measured output tokens/s lies against [`Predicted::interval`]: below
    /// it, inside (ends included) or above it; `None` without an interval.
    pub fn against_interval(&self) -> Option<std::cmp::Ordering> {
        let [low, high] = self.interval?;
        let measured = self.row.output_tokens_per_s();
        Some(match measured {
            m if m < low => std::cmp::Ordering::Less,
            m if m > high => std::cmp::Ordering::Greater,
            _ => std::cmp::Ordering::Equal,
        })
    }
}

/// What [`compare`] gives: the rows predicted, and those skipped with the reason.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Comparison {
    /// Rows with a prediction.
    pub predicted: Vec<Predicted>,
    /// Rows without one, and why.
    pub skipped: Vec<(StaticRow, Skipped)>,
}

/// Predicts every row of a bundled model under the device's bundled vLLM profile
/// ([`DEVICES`]), and again on `kernels` where a table covers the device. A row of a model that is not bundled, or
/// whose batch does not fit, is listed in [`Comparison::skipped`], never dropped
/// silently; a device the file names that is not in [`DEVICES`] is an error.
pub fn compare(
    rows: &[StaticRow],
    models: &ModelDb,
    hardware: &HardwareDb,
    engines: &EngineDb,
    kernels: &KernelDb,
) -> Result<Comparison> {
    let mut out = Comparison::default();
    // the release's profile, looked up once (absent from a database without it)
    let (version_id, version_devices) = VERSION_ENGINE;
    let version_engine = engines.get(version_id).ok();
    for row in rows {
        let named = |e: Error| {
            Error::invalid(
                "static sweep",
                format!(
                    "{} {} x{} b{}: {e}",
                    row.model, row.hardware, row.tp, row.batch
                ),
            )
        };
        if !DEVICES.iter().any(|(d, ..)| *d == row.hardware) {
            return Err(Error::unknown(
                "Hardware",
                &row.hardware,
                DEVICES.iter().map(|(d, ..)| *d),
            ));
        }
        let Some((model_id, device_id, engine_id)) = row.ids() else {
            out.skipped.push((row.clone(), Skipped::ModelNotBundled));
            continue;
        };
        let model = models.resolve(model_id).map_err(named)?;
        let hw = hardware.get(device_id).map_err(named)?;
        let engine = engines.get(engine_id).map_err(named)?;
        let s = row.scenario();
        let p = Predictor::new(&model, hw, engine, &s).map_err(named)?;
        if !p.memory(row.batch, row.length, row.length).0.fits {
            out.skipped.push((row.clone(), Skipped::DoesNotFit));
            continue;
        }
        // the prediction as fitted, whose interval is the one `predict` prints
        let fitted = p
            .predict(row.batch, row.length, row.length)
            .map_err(named)?;
        let interval = (fitted.intervals)
            .get("generation.output_tokens_per_s")
            .copied();
        let speed = |p: &Predictor| {
            GenerationReport::from_summary(
                &p.summary(row.batch, row.length, row.length),
                row.batch,
                row.length,
            )
            .output_tokens_per_s
        };
        let tables = match kernels.table_for(hw, hardware, engine_id) {
            Some(_) => {
                let e = kernels.engine_for(engine, engines, hw, hardware);
                let t = Predictor::new(&model, hw, e, &s)
                    .map_err(named)?
                    .with_kernels(kernels, hardware);
                Some(speed(&t))
            }
            None => None,
        };
        let version = match version_engine {
            Some(e) if version_devices.contains(&device_id) => {
                Some(speed(&Predictor::new(&model, hw, e, &s).map_err(named)?))
            }
            _ => None,
        };
        out.predicted.push(Predicted {
            row: row.clone(),
            fitted: fitted.generation.output_tokens_per_s,
            tables,
            version,
            interval,
        });
    }
    Ok(out)
}

/// Median predicted / measured and median |error| (percent) of `ratios`.
pub fn summarize(ratios: &[f64]) -> (f64, f64) {
    // the ratios are positive: the median of their magnitudes is their median
    let v = || ratios.iter().copied();
    (median_abs(v()), 100.0 * median_abs(v().map(|r| r - 1.0)))
}

/// The table of docs/calibration.md: per device and batch size, and in all, the rows
/// and the median ratio of predicted to measured output tokens/s with its median
/// |error|, the vLLM profile as fitted, on the kernel tables, and with the profile of
/// the rows' vLLM release ([`VERSION_ENGINE`], where the engines hold it); then the
/// rows skipped.
pub fn markdown(c: &Comparison) -> String {
    let v = VERSION_ENGINE.0;
    let mut s = format!(
        "| device | batch | rows | as fitted: predicted / measured | median \\|error\\| | rows on the tables | on the tables: predicted / measured | median \\|error\\| | rows with `{v}` | with `{v}`: predicted / measured | median \\|error\\| |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    // per (device, batch), `None` for all rows: the ratios as fitted, on the tables and
    // with the version's profile
    let mut groups: BTreeMap<Option<(&str, u64)>, [Vec<f64>; 3]> = BTreeMap::new();
    for p in &c.predicted {
        let measured = p.row.output_tokens_per_s();
        let device = p.row.ids().map_or("", |(_, d, _)| d);
        for key in [Some((device, p.row.batch)), None] {
            let g = groups.entry(key).or_default();
            g[0].push(p.fitted / measured);
            for (v, other) in g[1..].iter_mut().zip([p.tables, p.version]) {
                v.extend(other.map(|t| t / measured));
            }
        }
    }
    // the devices and batches in order, then all rows
    let mut keys: Vec<Option<(&str, u64)>> =
        groups.keys().copied().filter(Option::is_some).collect();
    keys.push(None);
    for key in keys {
        let [fitted, tables, version] = &groups[&key];
        let name = key.map_or("all | all".to_string(), |(d, b)| format!("{d} | {b}"));
        let (rf, ef) = summarize(fitted);
        let other = |v: &Vec<f64>| match v.is_empty() {
            true => "0 | - | -".to_string(),
            false => {
                let (r, e) = summarize(v);
                format!("{} | {r:.2}x | {e:.1}%", v.len())
            }
        };
        let _ = writeln!(
            s,
            "| {name} | {} | {rf:.2}x | {ef:.1}% | {} | {} |",
            fitted.len(),
            other(tables),
            other(version)
        );
    }
    let count = |k: Skipped| c.skipped.iter().filter(|(_, why)| *why == k).count();
    let _ = writeln!(
        s,
        "\nSkipped: {} rows of models not bundled (Qwen2, DeciLM, ...), {} whose batch does not fit in ridgeline's memory count.",
        count(Skipped::ModelNotBundled),
        count(Skipped::DoesNotFit)
    );
    s
}

/// How often the 80% intervals of the predictions as fitted hold the measured output
/// tokens/s (the band `predict` prints: kind A at one sequence, kind B at more), per
/// device and kind and in all, with the rows measured below and above the interval:
/// the coverage to expect on a publication no fit has seen (docs/calibration.md).
pub fn coverage_markdown(c: &Comparison) -> String {
    use std::cmp::Ordering;
    let mut s = String::from(
        "| device | band | rows | inside the 80% interval | measured below it | measured above it |\n|---|---|---:|---:|---:|---:|\n",
    );
    // per (device, kind), `None` for all rows: rows below, inside and above
    let mut groups: BTreeMap<Option<(&str, char)>, [usize; 3]> = BTreeMap::new();
    for p in &c.predicted {
        let Some(at) = p.against_interval() else {
            continue;
        };
        let device = p.row.ids().map_or("", |(_, d, _)| d);
        let kind = if p.row.batch <= 1 { 'A' } else { 'B' };
        let i = match at {
            Ordering::Less => 0,
            Ordering::Equal => 1,
            Ordering::Greater => 2,
        };
        for key in [Some((device, kind)), None] {
            groups.entry(key).or_default()[i] += 1;
        }
    }
    let mut keys: Vec<Option<(&str, char)>> =
        groups.keys().copied().filter(Option::is_some).collect();
    keys.push(None);
    for key in keys {
        let [below, inside, above] = groups[&key];
        let n = below + inside + above;
        let pct = |k: usize| 100.0 * k as f64 / n as f64;
        let name = key.map_or("all | all".to_string(), |(d, k)| format!("{d} | {k}"));
        let _ = writeln!(
            s,
            "| {name} | {n} | {inside} ({:.0}%) | {below} ({:.0}%) | {above} ({:.0}%) |",
            pct(inside),
            pct(below),
            pct(above)
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    const ONE: &str = "# c\nHardware,Num of Hardware,Framework,Model,Input Output Length,Batch Size,Latency,Throughput\nNvidia H100 GPU,2,vLLM,meta-llama/Meta-Llama-3-8B,256,32,4.0,4096.0\n";

    #[test]
    fn a_row_reads_with_its_output_rate() {
        let rows = parse(ONE, "t").unwrap();
        let r = &rows[0];
        assert_eq!((r.tp, r.length, r.batch), (2, 256, 32));
        // 32 x 256 / 4 s = 2048 generated tokens/s, half the published 4096 (which
        // counts 32 x (256 + 256) tokens)
        assert_eq!(r.output_tokens_per_s(), 2048.0);
        assert_eq!(r.output_tokens_per_s() * 2.0, r.throughput);
        assert_eq!(r.ids(), Some(("llama-3-8b", "h100-sxm", "vllm")));
        let s = r.scenario();
        assert_eq!((s.gpus, s.batch, s.prompt, s.gen_tokens), (2, 32, 256, 256));
    }

    #[test]
    fn bad_cells_name_line_and_column() {
        let e = parse(&ONE.replace(",32,4.0", ",0,4.0"), "t")
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 3, column Batch Size"), "{e}");
        let e = parse(&ONE.replace("vLLM", "SGLang"), "t")
            .unwrap_err()
            .to_string();
        assert!(e.contains("column Framework"), "{e}");
        let e = parse("# only\n", "t").unwrap_err().to_string();
        assert!(e.contains("no header"), "{e}");
    }

    #[test]
    fn medians_of_ratio_and_error() {
        // ratios 0.8, 1.0, 1.3: median 1.0; |r - 1| = 0.2, 0, 0.3: median 20%
        let (r, e) = summarize(&[0.8, 1.0, 1.3]);
        assert!((r - 1.0).abs() < 1e-12);
        assert!((e - 20.0).abs() < 1e-9);
    }
}
