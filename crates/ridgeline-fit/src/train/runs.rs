//! Published training runs: the training rows of the measurements CSV (kind D,
//! throughput / MFU; kind E, device memory), each configured as its source describes by
//! `data/measurements/training_runs.toml` ([`RunSetups`]), ready to predict.
//!
//! The CSV gives the measured number, the device count, the sequence length, the global
//! batch when it counts sequences and the precision when it names one recipe; the setup
//! file gives the model and device ids, the layout and everything the CSV leaves out (see
//! the file's header). A value in both must agree; a row that cannot be configured is a
//! [`Skipped`] entry with the reason, never silently dropped.

use super::Trainer;
use super::config::{
    LoraTargets, Loss, Method, Optimizer, Recompute, TrainConfig, TrainPrecision, TrainStack,
};
use super::efficiency::TrainEfficiency;
use crate::calibrate::{Count, Kind, Measurement};
use crate::dtype::Format;
use crate::error::Result;
use crate::hardware::{Hardware, HardwareDb};
use crate::model::{ModelConfig, ModelDb};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// The bundled `data/measurements/training_runs.toml`.
pub(crate) const BUILTIN_TRAINING_RUNS_TOML: &str =
    include_str!("../../../../data/measurements/training_runs.toml");

/// Bytes in a GiB.
const GIB: f64 = 1_073_741_824.0;

crate::named_enum! {
    /// The number a published run reports, as read off a prediction.
    pub enum Metric: "training metric" {
        /// Tokens per second per device.
        TokensPerSPerGpu = "tokens_per_s_per_gpu",
        /// Tokens per second over all devices.
        TokensPerS = "tokens_per_s",
        /// Model FLOP/s per device (recomputation not counted; attention over the full
        /// square, as published).
        ModelFlopsPerSPerGpu = "model_flops_per_s_per_gpu",
        /// FLOP/s per device counting recomputation (Narayanan et al. 2021 count it).
        HardwareFlopsPerSPerGpu = "hardware_flops_per_s_per_gpu",
        /// Model FLOPs utilization (fraction; attention over the full square).
        Mfu = "mfu",
        /// `torch.cuda.max_memory_allocated()`: no CUDA context, no allocator slack.
        AllocatedBytes = "allocated_bytes",
        /// `torch.cuda.max_memory_reserved()`: allocator slack included, no CUDA context.
        ReservedBytes = "reserved_bytes",
    }
}

impl Metric {
    /// Whether the metric is a memory figure (kind E) rather than a throughput (kind D).
    pub(crate) fn is_memory(self) -> bool {
        matches!(self, Metric::AllocatedBytes | Metric::ReservedBytes)
    }

    /// The factor from a CSV `unit` to this metric's units (FLOP/s, fraction, bytes,
    /// tokens/s), `None` when the unit does not measure it.
    fn scale(self, unit: &str) -> Option<f64> {
        let u = unit.trim();
        match self {
            Metric::ModelFlopsPerSPerGpu | Metric::HardwareFlopsPerSPerGpu => {
                (u == "TFLOP/s/GPU").then_some(1e12)
            }
            Metric::Mfu => (u == "%").then_some(0.01),
            Metric::TokensPerSPerGpu => (u == "tokens/s/GPU").then_some(1.0),
            Metric::TokensPerS => (u.starts_with("tokens/s") && u != "tokens/s/GPU").then_some(1.0),
            Metric::AllocatedBytes | Metric::ReservedBytes => match u {
                "GB" => Some(1e9),
                "GiB" => Some(GIB),
                _ => None,
            },
        }
    }

    /// The metric a throughput row's unit implies.
    fn from_unit(unit: &str) -> Option<Metric> {
        [
            Metric::ModelFlopsPerSPerGpu,
            Metric::Mfu,
            Metric::TokensPerSPerGpu,
            Metric::TokensPerS,
        ]
        .into_iter()
        .find(|m| m.scale(unit).is_some())
    }
}

/// How one CSV row is configured (a `[run.<id>]` table); every key but `skip` optional.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RunSetup {
    /// Why the row is not used.
    pub skip: Option<String>,
    /// Model id: a `[models.*]` key or a bundled model.
    pub model: Option<String>,
    /// Device id: a `[devices.*]` key or a bundled device.
    pub gpu: Option<String>,
    /// Tensor-parallel degree.
    pub tp: Option<u64>,
    /// Pipeline-parallel degree.
    pub pp: Option<u64>,
    /// Context-parallel degree.
    pub cp: Option<u64>,
    /// Expert-parallel degree (MoE models; divides the data-parallel degree).
    pub ep: Option<u64>,
    /// The expert all-to-all hidden behind an adjacent micro-batch's computation.
    pub overlap_ep: Option<bool>,
    /// Multi-token-prediction modules trained beside the model.
    pub mtp: Option<u64>,
    /// Interleaved pipeline chunks.
    pub virtual_stages: Option<u64>,
    /// ZeRO stage.
    pub zero: Option<u64>,
    /// Micro-batch (an upper bound for throughput rows).
    pub micro_batch: Option<u64>,
    /// Sequences per step, where the CSV does not count them.
    pub global_batch: Option<u64>,
    /// Tokens per sequence, where the CSV does not give them.
    pub seq: Option<u64>,
    /// Full, LoRA or QLoRA.
    pub method: Option<Method>,
    /// Precision, where the CSV does not name one recipe.
    pub precision: Option<TrainPrecision>,
    /// Recomputation.
    pub recompute: Option<Recompute>,
    /// Fused attention.
    pub flash: Option<bool>,
    /// Dropout masks stored.
    pub dropout: Option<bool>,
    /// Storage format of frozen LoRA base weights.
    pub frozen_format: Option<Format>,
    /// Matrices the LoRA adapters adapt.
    pub lora_targets: Option<LoraTargets>,
    /// LoRA rank (default [`super::DEFAULT_LORA_RANK`]).
    pub lora_rank: Option<u64>,
    /// Optimizer.
    pub optimizer: Option<Optimizer>,
    /// A compiled step (torch.compile).
    pub compile: Option<bool>,
    /// The training stack (default generic).
    pub stack: Option<TrainStack>,
    /// How the loss holds the logits (default fused).
    pub loss: Option<Loss>,
    /// Inter-node bandwidth per GPU, bytes/s.
    pub inter_node_bytes_per_s: Option<f64>,
    /// The metric, where the CSV unit does not say (memory rows, FLOP/s counting
    /// recomputation).
    pub metric: Option<Metric>,
}

/// A device derived from a bundled one (a power-capped or re-memoried variant).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct DeviceSetup {
    base: String,
    name: String,
    capacity_bytes: Option<f64>,
    bandwidth_bytes_per_s: Option<f64>,
    bf16: Option<f64>,
    fp16: Option<f64>,
    fp8: Option<f64>,
    source: String,
}

/// A model given as its Hugging Face `config.json` text.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ModelSetup {
    config: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RunsFile {
    #[serde(default)]
    devices: BTreeMap<String, DeviceSetup>,
    #[serde(default)]
    models: BTreeMap<String, ModelSetup>,
    #[serde(default)]
    run: BTreeMap<String, RunSetup>,
}

/// The setups of the published runs, with the devices and models they define.
#[derive(Debug, Clone)]
pub struct RunSetups {
    devices: BTreeMap<String, Hardware>,
    models: BTreeMap<String, ModelConfig>,
    runs: BTreeMap<String, RunSetup>,
}

impl DeviceSetup {
    fn build(&self, id: &str, db: &HardwareDb) -> Result<Hardware> {
        let mut h = db.get(&self.base)?.clone();
        h.id = id.to_string();
        h.name = self.name.clone();
        h.aliases.clear();
        h.sources = vec![self.source.clone()];
        if let Some(c) = self.capacity_bytes {
            h.memory.capacity_bytes = c;
        }
        if let Some(b) = self.bandwidth_bytes_per_s {
            h.memory.bandwidth_bytes_per_s = b;
        }
        let p = &mut h.peak_flops_per_s;
        p.rates.bf16 = self.bf16.or(p.rates.bf16);
        p.rates.fp16 = self.fp16.or(p.rates.fp16);
        p.rates.fp8 = self.fp8.or(p.rates.fp8);
        Ok(h)
    }
}

impl RunSetups {
    /// Parses a `training_runs.toml` document (devices on the bundled hardware
    /// database); `source_name` names it in errors.
    pub(crate) fn from_toml(text: &str, source_name: &str) -> Result<RunSetups> {
        let file: RunsFile = super::parse_toml(text, source_name)?;
        let db = HardwareDb::builtin()?;
        let mut devices = BTreeMap::new();
        for (id, d) in &file.devices {
            let hw = d
                .build(id, db)
                .map_err(|e| super::parse_error(source_name, format!("devices.{id}: {e}")))?;
            devices.insert(id.clone(), hw);
        }
        let mut models = BTreeMap::new();
        for (id, m) in &file.models {
            let src = format!("{source_name} [models.{id}]");
            models.insert(id.clone(), ModelConfig::from_json_str(&m.config, id, &src)?);
        }
        Ok(RunSetups {
            devices,
            models,
            runs: file.run,
        })
    }

    /// The bundled setups (parsed once).
    pub fn builtin() -> Result<&'static RunSetups> {
        static SETUPS: OnceLock<Result<RunSetups>> = OnceLock::new();
        super::parsed_once(&SETUPS, || {
            RunSetups::from_toml(
                BUILTIN_TRAINING_RUNS_TOML,
                "data/measurements/training_runs.toml",
            )
        })
    }

    /// A model: one the file defines, else a bundled one.
    pub(crate) fn model(&self, id: &str) -> Result<ModelConfig> {
        match self.models.get(id) {
            Some(m) => Ok(m.clone()),
            None => ModelDb::builtin()?.resolve(id),
        }
    }

    /// A device: one the file defines, else a bundled one.
    pub fn hardware(&self, id: &str) -> Result<Hardware> {
        match self.devices.get(id) {
            Some(h) => Ok(h.clone()),
            None => Ok(HardwareDb::builtin()?.get(id)?.clone()),
        }
    }

    /// The setup of a measurement row.
    pub(crate) fn get(&self, row_id: &str) -> Option<&RunSetup> {
        self.runs.get(row_id)
    }

    /// The row ids the file configures.
    pub fn row_ids(&self) -> impl Iterator<Item = &str> {
        self.runs.keys().map(String::as_str)
    }
}

/// A training row that is not used, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Skipped {
    /// Row id.
    pub id: String,
    /// Why.
    pub reason: String,
}

/// One published run, configured and ready to predict.
#[derive(Debug, Clone)]
pub struct PublishedRun {
    /// Row id (`m093`).
    pub id: String,
    /// Kind D (throughput) or E (memory).
    pub kind: Kind,
    /// Model, framework and devices as the source names them.
    pub label: String,
    /// The model.
    pub model: ModelConfig,
    /// The device.
    pub hardware: Hardware,
    /// The configuration (micro-batch fitted for throughput rows).
    pub config: TrainConfig,
    /// What was measured.
    pub metric: Metric,
    /// The measured number in the metric's units (tokens/s, FLOP/s, fraction, bytes).
    pub measured: f64,
    /// The publication the row comes from ([`crate::calibrate::source_key`] of its
    /// source), the unit that leave one source out holds out.
    pub source: String,
}

impl PublishedRun {
    /// The predicted number for the metric, with `efficiency` in place of the table's
    /// factors when given. FLOP metrics (model and hardware FLOP/s, MFU) are read in the
    /// convention of the published figures, PaLM's and Megatron-LM's attention over the
    /// full `s × s` square ([`Trainer::model_flops_full_square`]), not in the causal
    /// count of `train`'s own MFU.
    pub fn predict(&self, efficiency: Option<&TrainEfficiency>) -> Result<f64> {
        let cfg = TrainConfig {
            efficiency: efficiency
                .cloned()
                .or_else(|| self.config.efficiency.clone()),
            ..self.config.clone()
        };
        let t = Trainer::new(&self.model, &self.hardware, &cfg)?;
        if self.metric.is_memory() {
            let (m, d) = t.memory_at(cfg.micro_batch);
            let reserved = m.total_bytes - d.context_bytes;
            return Ok(match self.metric {
                Metric::AllocatedBytes => reserved - d.fragmentation_bytes,
                _ => reserved,
            });
        }
        let s = t.step();
        // published FLOP figures count attention over the full square
        let square = t.model_flops_full_square() / s.flops;
        Ok(match self.metric {
            Metric::TokensPerSPerGpu => s.tokens_per_s_per_gpu,
            Metric::TokensPerS => s.tokens_per_s,
            Metric::ModelFlopsPerSPerGpu => s.model_flops_per_s_per_gpu * square,
            Metric::HardwareFlopsPerSPerGpu => s.hfu * s.peak_flops_per_s * square,
            _ => s.mfu * square,
        })
    }

    /// Whether the run trains a MoE model with expert parallelism (`ep` above 1).
    pub fn is_expert_parallel(&self) -> bool {
        self.config.ep > 1
    }

    /// Whether the run splits its sequences with context parallelism (`cp` above 1)
    /// and no expert parallelism (those count as expert-parallel).
    pub fn is_context_parallel(&self) -> bool {
        self.config.cp > 1 && !self.is_expert_parallel()
    }

    /// `predicted / measured - 1`.
    pub fn error(&self, efficiency: Option<&TrainEfficiency>) -> Result<f64> {
        Ok(self.predict(efficiency)? / self.measured - 1.0)
    }
}

/// The configured runs and the rows left out.
#[derive(Debug, Clone)]
pub struct PublishedRuns {
    /// Rows configured, in file order.
    pub runs: Vec<PublishedRun>,
    /// Training rows not used, with the reason.
    pub skipped: Vec<Skipped>,
}

impl PublishedRuns {
    /// The throughput rows (kind D) the factors are fitted on: all but the
    /// expert-parallel ([`PublishedRuns::expert_parallel`]) and context-parallel
    /// ([`PublishedRuns::context_parallel`]) ones.
    pub fn throughput(&self) -> impl Iterator<Item = &PublishedRun> {
        self.runs
            .iter()
            .filter(|r| r.kind == Kind::D && !r.is_expert_parallel() && !r.is_context_parallel())
    }

    /// The throughput rows of dense runs with context parallelism (`cp` above 1).
    /// Their attention runs as a ring of chunk kernels, costed as one kernel of the
    /// same work: at the factors fitted on the other rows every one of them but one
    /// ran slower than predicted, so they are predicted with those factors, not fitted
    /// on, and their errors are held out by construction.
    pub fn context_parallel(&self) -> impl Iterator<Item = &PublishedRun> {
        self.runs
            .iter()
            .filter(|r| r.kind == Kind::D && r.is_context_parallel())
    }

    /// The throughput rows of MoE models trained with expert parallelism (`ep` above
    /// 1). Their steps hold costs the op counts do not (the token dispatch's own
    /// kernels, each local expert's matmuls launched apart), which the dense factors
    /// would absorb; they are predicted with the factors fitted on the other rows, so
    /// their errors are held out by construction.
    pub fn expert_parallel(&self) -> impl Iterator<Item = &PublishedRun> {
        self.runs
            .iter()
            .filter(|r| r.kind == Kind::D && r.is_expert_parallel())
    }

    /// The memory rows (kind E).
    pub fn memory(&self) -> impl Iterator<Item = &PublishedRun> {
        self.runs.iter().filter(|r| r.kind == Kind::E)
    }
}

/// The precision a CSV text names: fp8 when it names fp8 or float8, else bf16 or fp16
/// when it names only that one.
fn precision_of(text: &str) -> Option<TrainPrecision> {
    let t = text.to_ascii_lowercase();
    let (bf16, fp16) = (t.contains("bf16"), t.contains("fp16"));
    if t.contains("fp8") || t.contains("float8") {
        Some(TrainPrecision::Fp8)
    } else if bf16 && !fp16 {
        Some(TrainPrecision::Bf16)
    } else if fp16 && !bf16 {
        Some(TrainPrecision::Fp16)
    } else {
        None
    }
}

/// Sequences a CSV batch cell counts: a plain number, or `<n> seqs ...`.
fn sequences_of(batch: &Count) -> Option<u64> {
    match batch {
        Count::Exact(n) => Some(*n),
        Count::Text(t) => {
            let mut words = t.split_whitespace();
            let n = words.next()?.parse().ok()?;
            words.next()?.starts_with("seq").then_some(n)
        }
        Count::Missing => None,
    }
}

/// The value from the CSV, else the setup's; both must agree when both are given.
fn agree<T: PartialEq + Copy + std::fmt::Debug>(
    field: &str,
    csv: Option<T>,
    setup: Option<T>,
) -> std::result::Result<T, String> {
    match (csv, setup) {
        (Some(a), Some(b)) if a != b => Err(format!(
            "{field}: the CSV says {a:?}, training_runs.toml {b:?}"
        )),
        (Some(a), _) | (None, Some(a)) => Ok(a),
        (None, None) => Err(format!(
            "{field}: neither the CSV nor training_runs.toml gives it"
        )),
    }
}

/// The configuration a setup describes for a row (micro-batch as given).
fn config_of(row: &Measurement, s: &RunSetup) -> std::result::Result<TrainConfig, String> {
    let d = TrainConfig::default();
    let micro_batch = s.micro_batch.unwrap_or(d.micro_batch);
    Ok(TrainConfig {
        gpus: row.num_gpus,
        tp: s.tp.unwrap_or(d.tp),
        pp: s.pp.unwrap_or(d.pp),
        cp: s.cp.unwrap_or(d.cp),
        ep: s.ep.unwrap_or(d.ep),
        overlap_ep: s.overlap_ep.unwrap_or(d.overlap_ep),
        mtp: s.mtp.or(d.mtp),
        virtual_stages: s.virtual_stages.unwrap_or(d.virtual_stages),
        zero: s.zero.unwrap_or(d.zero),
        micro_batch,
        global_batch: Some(agree(
            "global_batch",
            sequences_of(&row.batch),
            s.global_batch,
        )?),
        seq: agree("seq", row.prompt_len.exact(), s.seq)?,
        method: s.method.unwrap_or(d.method),
        precision: agree(
            "precision",
            precision_of(&row.precision),
            // pure bf16 is a bf16 recipe: a CSV cell saying bf16 agrees with it
            s.precision.map(|p| match p {
                TrainPrecision::Bf16Pure => TrainPrecision::Bf16,
                p => p,
            }),
        )
        .map(|p| s.precision.unwrap_or(p))?,
        recompute: s.recompute.unwrap_or(d.recompute),
        flash: s.flash.unwrap_or(d.flash),
        dropout: s.dropout.unwrap_or(d.dropout),
        frozen_format: s.frozen_format,
        lora_targets: s.lora_targets.unwrap_or(d.lora_targets),
        lora_rank: s.lora_rank,
        optimizer: s.optimizer.unwrap_or(d.optimizer),
        compile: s.compile.unwrap_or(d.compile),
        stack: s.stack.unwrap_or(d.stack),
        loss: s.loss.unwrap_or(d.loss),
        inter_node_bytes_per_s: s.inter_node_bytes_per_s.unwrap_or(d.inter_node_bytes_per_s),
        ..d
    })
}

/// Where a source does not give the micro-batch, the configured one is an upper bound:
/// the largest divisor of `global / dp` at or below it whose memory fits (1 when none
/// does).
fn fit_micro_batch(model: &ModelConfig, hw: &Hardware, cfg: &TrainConfig) -> Result<u64> {
    let dp = (cfg.gpus / (cfg.tp * cfg.pp * cfg.cp).max(1)).max(1);
    let per_rank = cfg.global_batch.unwrap_or(cfg.micro_batch * dp) / dp;
    for mb in (1..=cfg.micro_batch).rev() {
        if !per_rank.is_multiple_of(mb) {
            continue;
        }
        let c = TrainConfig {
            micro_batch: mb,
            ..cfg.clone()
        };
        if Trainer::new(model, hw, &c)?.memory_at(mb).0.fits {
            return Ok(mb);
        }
    }
    Ok(1)
}

/// One row as a configured run.
fn run_of(
    row: &Measurement,
    s: &RunSetup,
    setups: &RunSetups,
) -> std::result::Result<PublishedRun, String> {
    let model_id = s.model.as_deref().ok_or("no model in training_runs.toml")?;
    let gpu_id = s.gpu.as_deref().ok_or("no gpu in training_runs.toml")?;
    let model = setups.model(model_id).map_err(|e| e.to_string())?;
    let hardware = setups.hardware(gpu_id).map_err(|e| e.to_string())?;
    let metric = match (s.metric, row.kind) {
        (Some(m), _) => m,
        (None, Kind::D) => Metric::from_unit(&row.unit)
            .ok_or_else(|| format!("unit '{}' is not a training throughput", row.unit))?,
        (None, _) => {
            return Err("memory rows need a metric (allocated_bytes or reserved_bytes)".into());
        }
    };
    let scale = metric
        .scale(&row.unit)
        .ok_or_else(|| format!("unit '{}' does not measure {metric}", row.unit))?;
    let mut config = config_of(row, s)?;
    if row.kind == Kind::D {
        config.micro_batch =
            fit_micro_batch(&model, &hardware, &config).map_err(|e| e.to_string())?;
    }
    Trainer::new(&model, &hardware, &config).map_err(|e| e.to_string())?;
    Ok(PublishedRun {
        id: row.id.clone(),
        kind: row.kind,
        label: format!(
            "{}, {}, {}x {}",
            row.model, row.framework, row.num_gpus, row.gpu
        ),
        model,
        hardware,
        config,
        metric,
        measured: row.value * scale,
        source: crate::calibrate::source_key(&row.source),
    })
}

/// The training rows (kinds D and E) of `rows` as configured runs, with the setups of
/// `setups`; rows without a setup, or whose setup says `skip`, are [`Skipped`].
pub fn published_runs(rows: &[Measurement], setups: &RunSetups) -> PublishedRuns {
    let mut out = PublishedRuns {
        runs: Vec::new(),
        skipped: Vec::new(),
    };
    for row in rows.iter().filter(|r| matches!(r.kind, Kind::D | Kind::E)) {
        let skip = |reason: String| Skipped {
            id: row.id.clone(),
            reason,
        };
        match setups.get(&row.id) {
            None => out
                .skipped
                .push(skip("no [run] entry in training_runs.toml".into())),
            Some(RunSetup {
                skip: Some(reason), ..
            }) => out.skipped.push(skip(reason.clone())),
            Some(s) => match run_of(row, s, setups) {
                Ok(run) => out.runs.push(run),
                Err(reason) => out.skipped.push(skip(reason)),
            },
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_cells_are_read_only_when_unambiguous() {
        assert_eq!(
            precision_of("float8 linears + compile"),
            Some(TrainPrecision::Fp8)
        );
        assert_eq!(precision_of("fp16 mixed"), Some(TrainPrecision::Fp16));
        assert_eq!(precision_of("bf16 (amp)"), Some(TrainPrecision::Bf16));
        assert_eq!(precision_of("fp16/bf16 mixed"), None);
        assert_eq!(precision_of("LoRA (PyTorch)"), None);
        assert_eq!(sequences_of(&Count::Exact(96)), Some(96));
        assert_eq!(
            sequences_of(&Count::Text("64 seqs (local 1)".into())),
            Some(64)
        );
        assert_eq!(sequences_of(&Count::Text("16M tokens/batch".into())), None);
        assert_eq!(sequences_of(&Count::Text("local 2".into())), None);
        assert_eq!(agree("seq", Some(2048), None), Ok(2048));
        assert_eq!(agree("seq", None, Some(1304)), Ok(1304));
        let e = agree("seq", Some(2048), Some(4096)).unwrap_err();
        assert!(
            e.contains("seq") && e.contains("2048") && e.contains("4096"),
            "{e}"
        );
        assert!(agree::<u64>("seq", None, None).is_err());
    }

    #[test]
    fn units_match_metrics() {
        assert_eq!(
            Metric::from_unit("TFLOP/s/GPU"),
            Some(Metric::ModelFlopsPerSPerGpu)
        );
        assert_eq!(Metric::from_unit("%"), Some(Metric::Mfu));
        assert_eq!(
            Metric::from_unit("tokens/s/GPU"),
            Some(Metric::TokensPerSPerGpu)
        );
        assert_eq!(
            Metric::from_unit("tokens/s (8 GPUs)"),
            Some(Metric::TokensPerS)
        );
        assert_eq!(Metric::from_unit("GB"), None);
        assert_eq!(Metric::ReservedBytes.scale("GiB"), Some(GIB));
        assert_eq!(Metric::Mfu.scale("GB"), None);
    }
}
