//! Another tool's estimates as a reference: NVIDIA AIConfigurator's static mode
//! (`data/reference/aiconfigurator-static.csv`, written by
//! `tools/aiconfigurator_static.py` from the PyPI package `aiconfigurator-core`, whose
//! estimates come from its measured-kernel database). Each row is one configuration
//! (model, device, backend, tensor-parallel size, batch, formats, 4000 prompt and 500
//! generated tokens) with AIConfigurator's TTFT, time per output token and tokens/s
//! per GPU; [`compare`] predicts every row with ridgeline, once with the engines as
//! fitted (`data/engines.toml`) and once on the measured kernel tables with the
//! engines refitted on them (`--kernels bundled`), and [`markdown`] reports the median
//! ratios (README, section Accuracy; `tests/suite/aiconfigurator.rs` checks it is current).
//!
//! The two tools share AIConfigurator's kernel measurements where ridgeline reads its
//! tables, so the second comparison is not independent of the first's data; it shows
//! where the two cost models still part (scheduling, the ops no table covers, how the
//! measured grid is interpolated). Definitions follow AIConfigurator's static mode:
//! TTFT is the whole batch's prompt pass, time per token the mean of the `osl - 1`
//! decode steps, tokens/s per GPU `batch x osl / (TTFT + (osl - 1) x TPOT) / tp`;
//! ridgeline's tokens/s per GPU is computed from its own TTFT and TPOT by the same
//! formula.

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

/// The bundled `data/reference/aiconfigurator-static.csv`.
pub const BUILTIN_AICONFIGURATOR_CSV: &str =
    include_str!("../../../data/reference/aiconfigurator-static.csv");

/// The reference file's columns, in order.
pub const COLUMNS: [&str; 12] = [
    "model",
    "device",
    "engine",
    "backend_version",
    "formats",
    "tp",
    "batch",
    "isl",
    "osl",
    "ttft_ms",
    "tpot_ms",
    "tokens_s_gpu",
];

/// Formats of a reference row: `bf16` (weights, KV cache and attention in bfloat16) or
/// `fp8` (FP8 weights and GEMMs, FP8 KV cache).
pub const FORMATS: [&str; 2] = ["bf16", "fp8"];

/// One configuration and the reference tool's estimates for it.
#[derive(Debug, Clone, PartialEq)]
pub struct ReferenceRow {
    /// Model id.
    pub model: String,
    /// Hardware id.
    pub device: String,
    /// Engine id (`trt-llm`, `vllm`, `sglang`).
    pub engine: String,
    /// The backend release the reference's kernels were measured on.
    pub backend_version: String,
    /// `bf16` or `fp8` (see [`FORMATS`]).
    pub formats: String,
    /// Tensor-parallel devices.
    pub tp: u64,
    /// Concurrent sequences.
    pub batch: u64,
    /// Prompt tokens per sequence.
    pub isl: u64,
    /// Generated tokens per sequence.
    pub osl: u64,
    /// Time to first token, s.
    pub ttft_s: f64,
    /// Time per output token, s.
    pub tpot_s: f64,
    /// Output tokens/s per device.
    pub tokens_s_gpu: f64,
}

impl ReferenceRow {
    /// The configuration in ridgeline's words.
    pub(crate) fn scenario(&self) -> Result<Scenario> {
        let (weights, kv) = match self.formats.as_str() {
            "bf16" => ("bf16", "bf16"),
            "fp8" => ("fp8", "fp8"),
            other => {
                return Err(Error::unknown("formats", other, FORMATS));
            }
        };
        Ok(Scenario {
            batch: self.batch,
            prompt: self.isl,
            gen_tokens: self.osl,
            weights: Some(Format::parse(weights)?),
            kv: Some(Format::parse(kv)?),
            gpus: self.tp,
            ..Scenario::default()
        })
    }

    /// Short description: `llama-3.1-70b 4 x h200-sxm trt-llm bf16 b16`.
    pub fn label(&self) -> String {
        format!(
            "{} {} x {} {} {} b{}",
            self.model, self.tp, self.device, self.engine, self.formats, self.batch
        )
    }
}

/// Reads a reference CSV (`#` comment lines, then a header of [`COLUMNS`]); `src`
/// names it in errors, which give the line and the column.
pub fn parse_reference(text: &str, src: &str) -> Result<Vec<ReferenceRow>> {
    let mut rows = Vec::new();
    for row in crate::csv_rows::rows(text, src, &COLUMNS)? {
        let cells = &row.cells;
        if !FORMATS.contains(&cells[4]) {
            return Err(row.bad(
                "formats",
                format!("'{}' is not one of {}", cells[4], FORMATS.join(", ")),
            ));
        }
        let osl = row.count(8)?;
        if osl < 2 {
            return Err(row.bad("osl", "at least 2 tokens (one decode step)".into()));
        }
        rows.push(ReferenceRow {
            model: cells[0].to_string(),
            device: cells[1].to_string(),
            engine: cells[2].to_string(),
            backend_version: cells[3].to_string(),
            formats: cells[4].to_string(),
            tp: row.count(5)?,
            batch: row.count(6)?,
            isl: row.count(7)?,
            osl,
            ttft_s: row.value(9)? * 1e-3,
            tpot_s: row.value(10)? * 1e-3,
            tokens_s_gpu: row.value(11)?,
        });
    }
    Ok(rows)
}

/// ridgeline's three numbers for a reference row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    /// Time to first token, s.
    pub ttft_s: f64,
    /// Time per output token, s.
    pub tpot_s: f64,
    /// Output tokens/s per device, by the reference's formula.
    pub tokens_s_gpu: f64,
}

impl Estimate {
    /// From a TTFT and a time per token for `row`'s configuration: tokens/s per GPU
    /// by the reference's formula.
    pub(crate) fn new(ttft_s: f64, tpot_s: f64, row: &ReferenceRow) -> Estimate {
        let request_s = ttft_s + (row.osl - 1) as f64 * tpot_s;
        Estimate {
            ttft_s,
            tpot_s,
            tokens_s_gpu: (row.batch * row.osl) as f64 / request_s / row.tp as f64,
        }
    }

    /// From a generation report of `row`'s configuration.
    fn from_generation(g: &GenerationReport, row: &ReferenceRow) -> Estimate {
        Estimate::new(g.ttft_s, g.tpot_s, row)
    }

    /// ridgeline over the reference: TTFT, time per token, tokens/s per GPU.
    pub fn ratios(&self, row: &ReferenceRow) -> [f64; 3] {
        [
            self.ttft_s / row.ttft_s,
            self.tpot_s / row.tpot_s,
            self.tokens_s_gpu / row.tokens_s_gpu,
        ]
    }
}

/// One row with ridgeline's estimates: the engine as fitted, and on the kernel tables
/// (`None` where no table covers the row's device under its engine).
#[derive(Debug, Clone, PartialEq)]
pub struct Compared {
    /// The reference row.
    pub row: ReferenceRow,
    /// The engine's fitted profile, no tables.
    pub fitted: Estimate,
    /// On the tables, with the engine's profile refitted on them.
    pub tables: Option<Estimate>,
}

/// Predicts every row of `rows` with the bundled models, devices and engines, and
/// again on `kernels` (as `predict --kernels` does). A row naming an unknown model,
/// device or engine, or one ridgeline cannot predict, is an error naming the row: a
/// reference row is never dropped silently.
pub fn compare(
    rows: &[ReferenceRow],
    models: &ModelDb,
    hardware: &HardwareDb,
    engines: &EngineDb,
    kernels: &KernelDb,
) -> Result<Vec<Compared>> {
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        let named = |e: Error| Error::invalid("reference", format!("{}: {e}", row.label()));
        let model = models.resolve(&row.model).map_err(named)?;
        let hw = hardware.get(&row.device).map_err(named)?;
        let engine = engines.get(&row.engine).map_err(named)?;
        let s = row.scenario().map_err(named)?;
        let fitted = Predictor::new(&model, hw, engine, &s).map_err(named)?;
        let g = GenerationReport::from_summary(
            &fitted.summary(row.batch, row.isl, row.osl),
            row.batch,
            row.osl,
        );
        let tables = match kernels.table_for(hw, hardware, &row.engine) {
            Some(_) => {
                let e = kernels.engine_for(engine, engines, hw, hardware);
                let p = Predictor::new(&model, hw, e, &s)
                    .map_err(named)?
                    .with_kernels(kernels, hardware);
                let t = GenerationReport::from_summary(
                    &p.summary(row.batch, row.isl, row.osl),
                    row.batch,
                    row.osl,
                );
                Some(Estimate::from_generation(&t, row))
            }
            None => None,
        };
        out.push(Compared {
            row: row.clone(),
            fitted: Estimate::from_generation(&g, row),
            tables,
        });
    }
    Ok(out)
}

/// Median ratio and median |ratio - 1| (percent) of each metric over `ratios`.
pub fn summarize(ratios: &[[f64; 3]]) -> [(f64, f64); 3] {
    std::array::from_fn(|m| {
        let v = || ratios.iter().map(|r| r[m]);
        // ratios are positive: the median of their magnitudes is their median
        (median_abs(v()), 100.0 * median_abs(v().map(|x| x - 1.0)))
    })
}

/// The README's table: per formats and variant, the rows and each metric's median
/// ratio (ridgeline over the reference) with its median |ratio - 1|.
pub fn markdown(compared: &[Compared]) -> String {
    let mut s = String::from(
        "| ridgeline / AIConfigurator | rows | TTFT | time per token | tokens/s per GPU |\n|---|---:|---:|---:|---:|\n",
    );
    let mut groups: BTreeMap<(usize, &str), Vec<[f64; 3]>> = BTreeMap::new();
    for c in compared {
        let f = c.row.formats.as_str();
        groups
            .entry((0, f))
            .or_default()
            .push(c.fitted.ratios(&c.row));
        if let Some(t) = &c.tables {
            groups.entry((1, f)).or_default().push(t.ratios(&c.row));
        }
    }
    for ((variant, formats), ratios) in &groups {
        let name = match variant {
            0 => "without the tables (`--kernels none`)",
            _ => "on the kernel tables (the default)",
        };
        let cells = summarize(ratios).map(|(r, e)| format!("{r:.2}x ({e:.0}%)"));
        let _ = writeln!(
            s,
            "| {name}, {formats} | {} | {} | {} | {} |",
            ratios.len(),
            cells[0],
            cells[1],
            cells[2]
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    const ONE: &str = "# a comment\nmodel,device,engine,backend_version,formats,tp,batch,isl,osl,ttft_ms,tpot_ms,tokens_s_gpu\nllama-3.1-8b,h100-sxm,trt-llm,1.3.0rc20,bf16,1,16,4000,500,1000,10,1000\n";

    #[test]
    fn a_row_reads_in_seconds() {
        let rows = parse_reference(ONE, "t").unwrap();
        assert_eq!(rows.len(), 1);
        let r = &rows[0];
        assert_eq!((r.tp, r.batch, r.isl, r.osl), (1, 16, 4000, 500));
        assert_eq!((r.ttft_s, r.tpot_s), (1.0, 0.01));
        let s = r.scenario().unwrap();
        assert_eq!(
            (s.gpus, s.batch, s.prompt, s.gen_tokens),
            (1, 16, 4000, 500)
        );
    }

    #[test]
    fn bad_cells_name_line_and_column() {
        let bad = ONE.replace(",bf16,", ",int3,");
        let e = parse_reference(&bad, "t").unwrap_err().to_string();
        assert!(e.contains("line 3, column formats"), "{e}");
        let bad = ONE.replace(",16,4000", ",0,4000");
        let e = parse_reference(&bad, "t").unwrap_err().to_string();
        assert!(e.contains("column batch"), "{e}");
        let e = parse_reference("# only\n", "t").unwrap_err().to_string();
        assert!(e.contains("no header"), "{e}");
    }

    #[test]
    fn tokens_per_gpu_follow_the_reference_formula() {
        let r = &parse_reference(ONE, "t").unwrap()[0];
        let e = Estimate::new(1.0, 0.01, r);
        assert!((e.tokens_s_gpu - 8000.0 / 5.99).abs() < 1e-9);
        let [a, b, c] = e.ratios(r);
        assert_eq!((a, b), (1.0, 1.0));
        assert!((c - 8000.0 / 5.99 / 1000.0).abs() < 1e-12);
    }

    #[test]
    fn medians_of_ratio_and_error() {
        // ratios 0.8, 1.0, 1.3: median 1.0; |r - 1| = 0.2, 0, 0.3: median 20%
        let m = summarize(&[[0.8; 3], [1.0; 3], [1.3; 3]]);
        assert!((m[0].0 - 1.0).abs() < 1e-12);
        assert!((m[0].1 - 20.0).abs() < 1e-9);
    }
}
