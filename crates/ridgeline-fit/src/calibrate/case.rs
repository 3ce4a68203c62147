//! One measurement row -> one [`Case`]: the scenario to predict and the prediction
//! number that matches the row's metric; and predicting a case with an engine.

use super::{
    BatchSpec, Case, Count, Kind, MAX_LOAD_BATCH, Measurement, Target, map_framework, map_gpu,
    map_model, map_precision, on_vendor, partial_device,
};
use crate::dtype::{ComputeDtype, Format};
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::hardware::{Hardware, HardwareDb};
use crate::memory::Parallel;
use crate::model::{ModelConfig, ModelDb};
use crate::predict::{GenerationReport, Predictor, Scenario};
use std::collections::HashMap;
use std::sync::Arc;

/// What a unit measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dim {
    Rate,
    RatePerGpu,
    Time,
    Flops,
    Bandwidth,
}

/// The SI factor of a unit and what it measures.
fn unit_scale(unit: &str) -> Option<(f64, Dim)> {
    let u = unit.trim().to_ascii_lowercase().replace(' ', "");
    Some(match u.as_str() {
        "tok/s" | "tokens/s" | "token/s" | "tokens/sec" => (1.0, Dim::Rate),
        "tok/s/gpu" | "tokens/s/gpu" => (1.0, Dim::RatePerGpu),
        "ms" => (1e-3, Dim::Time),
        "s" | "sec" => (1.0, Dim::Time),
        "us" | "µs" => (1e-6, Dim::Time),
        "tflop/s" | "tflops" => (1e12, Dim::Flops),
        "gflop/s" => (1e9, Dim::Flops),
        "gb/s" => (1e9, Dim::Bandwidth),
        "tb/s" => (1e12, Dim::Bandwidth),
        _ => return None,
    })
}

/// Device, model and precision names mapped so far, by the text rows give them in:
/// a file names a few devices and models many times. Each device and model is one
/// shared copy however many texts name it (which makes equal cases cheap to find).
pub(super) struct Names<'d> {
    hw_db: &'d HardwareDb,
    model_db: &'d ModelDb,
    /// Device text -> the device (a scaled copy for one die) and what was assumed.
    gpus: HashMap<String, Mapped<Device>>,
    /// (hardware id, share) -> the device.
    devices: HashMap<(String, u64), Arc<Hardware>>,
    /// Model text -> the model.
    models: HashMap<String, Mapped<Arc<ModelConfig>>>,
    /// Model id -> the model.
    model_ids: HashMap<String, Arc<ModelConfig>>,
    precisions: HashMap<String, Mapped<Formats>>,
}

/// A name mapped, or why it cannot be.
type Mapped<T> = std::result::Result<T, String>;

/// A device and what was assumed to map its name.
type Device = (Arc<Hardware>, Option<String>);

/// Weight and KV formats (`None`: the model's own).
type Formats = (Option<Format>, Option<Format>);

/// The value `map` holds for `key`, made by `make` the first time.
fn memo<T: Clone>(map: &mut HashMap<String, T>, key: &str, make: impl FnOnce(&str) -> T) -> T {
    if let Some(v) = map.get(key) {
        return v.clone();
    }
    let v = make(key);
    map.insert(key.to_string(), v.clone());
    v
}

impl<'d> Names<'d> {
    pub(super) fn new(hw_db: &'d HardwareDb, model_db: &'d ModelDb) -> Self {
        Names {
            hw_db,
            model_db,
            gpus: HashMap::new(),
            devices: HashMap::new(),
            models: HashMap::new(),
            model_ids: HashMap::new(),
            precisions: HashMap::new(),
        }
    }

    fn gpu(&mut self, name: &str) -> Mapped<Device> {
        let (db, devices) = (self.hw_db, &mut self.devices);
        memo(&mut self.gpus, name, |name| {
            let gpu = map_gpu(name, db)?;
            let base = db.get(&gpu.id).map_err(|e| e.to_string())?;
            let hw = devices
                .entry((gpu.id, gpu.share.to_bits()))
                .or_insert_with(|| Arc::new(partial_device(base, gpu.share)));
            Ok((hw.clone(), gpu.note))
        })
    }

    fn model(&mut self, name: &str) -> Mapped<Arc<ModelConfig>> {
        let (db, ids) = (self.model_db, &mut self.model_ids);
        memo(&mut self.models, name, |name| {
            let id = map_model(name, db)?;
            if let Some(m) = ids.get(&id) {
                return Ok(m.clone());
            }
            let m = Arc::new(db.resolve(&id).map_err(|e| e.to_string())?);
            ids.insert(id, m.clone());
            Ok(m)
        })
    }

    fn precision(&mut self, text: &str) -> Mapped<Formats> {
        memo(&mut self.precisions, text, map_precision)
    }
}

/// Maps one row to a case, or gives the reason it cannot be predicted. A kind A/B/C
/// case's layout is not checked here: see [`super::cases_with`].
pub(super) fn case(r: &Measurement, names: &mut Names) -> std::result::Result<Case, String> {
    match r.kind {
        Kind::D => {
            return Err("kind D (training throughput) is not an inference measurement".into());
        }
        Kind::E => return Err("kind E (measured memory) is not a speed measurement".into()),
        _ => {}
    }
    let (scale, dim) =
        unit_scale(&r.unit).ok_or_else(|| format!("unit '{}' is not understood", r.unit))?;
    let measured = r.value * scale;
    if measured.is_nan() || measured <= 0.0 {
        return Err(format!("value {} is not positive", r.value));
    }
    if measured.is_infinite() {
        return Err(format!("value {} {} is beyond any number", r.value, r.unit));
    }
    let (hardware, note) = names.gpu(&r.gpu)?;
    let mut c = Case {
        id: r.id.clone(),
        line: r.line,
        file: r.file.clone(),
        value_column: r.value_column,
        kind: r.kind,
        source: r.source.clone(),
        engine: String::new(),
        hardware,
        model: None,
        scenario: Scenario::default(),
        batch: BatchSpec::Fixed(1),
        target: Target::MemoryBytesPerS,
        measured,
        assumptions: note.into_iter().collect(),
        kernels: None,
    };
    let (weights, kv) = names.precision(&r.precision)?;
    if r.kind == Kind::F {
        c.engine = match map_framework(&r.framework) {
            Some(e) if e != "ideal" => e.to_string(),
            _ => "typical".to_string(),
        };
        c.target = ceiling_target(r, dim, weights)?;
        return Ok(c);
    }
    let domains = c.hardware.scaleup_domains(r.num_gpus);
    if domains > 1 {
        return Err(format!(
            "{} devices span {domains} scale-up domains: kept out of the fit, since how much of the network's traffic the deployment hides behind compute (two micro-batches, overlapped pipelines) is not known per row (the SGLang 96 x H100 rows are bracketed by the network model in tests/suite/decoding.rs)",
            r.num_gpus
        ));
    }
    let engine = map_framework(&r.framework).ok_or_else(|| {
        format!(
            "framework '{}' is not one of ridgeline's engines",
            r.framework
        )
    })?;
    c.engine = on_vendor(engine, &c.hardware.vendor).to_string();
    let model = names.model(&r.model)?;
    let (weights, expert_weights) =
        checkpoint_formats(r, &c.engine, &model, weights, &mut c.assumptions);
    c.model = Some(model);
    c.batch = batch_spec(r, &mut c.assumptions)?;
    let (prompt, gen_tokens) = lengths(r, &mut c.assumptions)?;
    let parallel = layout(r, &c.engine, &mut c.assumptions);
    c.target = model_target(r, dim)?;
    if r.kind == Kind::C && prompt == 0 {
        return Err("prefill row with prompt length 0".into());
    }
    if matches!(r.kind, Kind::A | Kind::B) && gen_tokens == 0 {
        return Err("decode row with generation length 0".into());
    }
    let ep = expert_parallel(r, parallel, &mut c.assumptions);
    if ep == 1 && format!("{} {}", r.framework, r.notes).contains("--enable-dp-attention") {
        return Err(
            "attention data parallel without expert parallelism (SGLang's --enable-dp-attention with the experts tensor parallel): a layout ridgeline does not express (its data-parallel attention comes with --ep)"
                .into(),
        );
    }
    c.scenario = Scenario {
        batch: match c.batch {
            BatchSpec::Fixed(n) => n,
            BatchSpec::MaxLoad => 1,
        },
        prompt,
        gen_tokens,
        weights,
        expert_weights,
        kv,
        gpus: r.num_gpus,
        parallel,
        ep,
        flash: flash_attention(r, &mut c.assumptions),
        offload: false,
        spec: None,
        inter_node_bytes_per_s: crate::hardware::DEFAULT_INTER_NODE_BYTES_PER_S,
        overlap_ep: false,
        expert_imbalance: 1.0,
    };
    Ok(c)
}

/// The formats a row's stated weight format runs as: (the weights', the routed
/// experts' where they differ; `None`: the checkpoint's own).
///
/// - A checkpoint that ships block-scaled fp8 (DeepSeek-V3 and its kin) runs as it
///   ships when a row says fp8: its engine's kernels are the block-scaled ones.
/// - A row that names the format a checkpoint ships its routed experts in (gpt-oss's
///   mxfp4) ran the checkpoint: the experts in that format, the rest in the
///   checkpoint's (bf16) under the serving engines and Ollama; under llama.cpp, the
///   GGUF its converter writes, the rest in q8_0 (ggml-org's gpt-oss-120b GGUF, the
///   file every such row names: 59.02 GiB against 60.87 GiB with the rest in f16,
///   <https://community.frame.work/t/will-the-ai-max-395-128gb-be-able-to-run-gpt-oss-120b/73280/26>).
fn checkpoint_formats(
    r: &Measurement,
    engine: &str,
    model: &ModelConfig,
    weights: Option<Format>,
    assumptions: &mut Vec<String>,
) -> (Option<Format>, Option<Format>) {
    match weights {
        Some(Format::Fp8) if model.native_format == Format::Fp8Block => {
            assumptions.push("fp8 read as the checkpoint's block-scaled fp8 (fp8-block)".into());
            (Some(Format::Fp8Block), None)
        }
        Some(w) if model.mixed_expert_format() == Some(w) => {
            let ollama = r.framework.to_ascii_lowercase().contains("ollama");
            if engine == "llama.cpp" && !ollama {
                assumptions.push(format!(
                    "{} read as llama.cpp's GGUF of the checkpoint: routed experts {}, the rest q8_0",
                    w.name(),
                    w.name()
                ));
                (Some(Format::Q8_0), Some(w))
            } else {
                assumptions.push(format!(
                    "{} read as the checkpoint's native formats ({})",
                    w.name(),
                    model.native_label()
                ));
                (None, None)
            }
        }
        w => (w, None),
    }
}

/// The ceiling a kind F row measured: a matmul rate in the weights' compute dtype, or
/// a bandwidth.
fn ceiling_target(
    r: &Measurement,
    dim: Dim,
    weights: Option<Format>,
) -> std::result::Result<Target, String> {
    match dim {
        Dim::Flops => {
            let act = weights.unwrap_or(Format::Bf16);
            let d = act.compute_dtype(act.as_activation_dtype().unwrap_or(ComputeDtype::Bf16));
            Ok(Target::MatmulFlopsPerS(d))
        }
        Dim::Bandwidth => Ok(Target::MemoryBytesPerS),
        _ => Err(format!(
            "kind F row in '{}': only FLOP/s and bandwidth ceilings are compared",
            r.unit
        )),
    }
}

/// The row's batch; a kind A row without one is batch 1, "max-load"/"offline" is the
/// scheduler's choice.
fn batch_spec(
    r: &Measurement,
    assumptions: &mut Vec<String>,
) -> std::result::Result<BatchSpec, String> {
    match &r.batch {
        Count::Exact(0) => Err("batch 0".into()),
        Count::Exact(n) => Ok(BatchSpec::Fixed(*n)),
        Count::Missing if r.kind == Kind::A => {
            assumptions.push("batch not stated: 1 (single stream)".into());
            Ok(BatchSpec::Fixed(1))
        }
        Count::Missing => Err("batch not stated".into()),
        Count::Text(t) => {
            let l = t.to_ascii_lowercase();
            if l.starts_with("max") || l.starts_with("offline") {
                assumptions.push(format!(
                    "batch '{t}': the largest that fits, at most {MAX_LOAD_BATCH}"
                ));
                Ok(BatchSpec::MaxLoad)
            } else {
                Err(format!("batch '{t}' is not a number"))
            }
        }
    }
}

/// Prompt and generation lengths; missing ones are 0 and 128 (1 for prefill rows).
fn lengths(
    r: &Measurement,
    assumptions: &mut Vec<String>,
) -> std::result::Result<(u64, u64), String> {
    let prompt = match &r.prompt_len {
        Count::Exact(n) => *n,
        Count::Missing => {
            assumptions.push("prompt length not stated: 0".into());
            0
        }
        Count::Text(t) => return Err(format!("prompt_len '{t}' is not a number")),
    };
    let gen_tokens = match &r.gen_len {
        Count::Exact(n) => *n,
        Count::Missing => {
            let n = if r.kind == Kind::C { 1 } else { 128 };
            assumptions.push(format!("generation length not stated: {n}"));
            n
        }
        Count::Text(t) => return Err(format!("gen_len '{t}' is not a number")),
    };
    Ok((prompt, gen_tokens))
}

/// Several devices are tensor parallel, except for llama.cpp (whose default splits
/// layers) and rows whose notes say "layer split" or "pipeline".
fn layout(r: &Measurement, engine: &str, assumptions: &mut Vec<String>) -> Parallel {
    let notes = r.notes.to_ascii_lowercase();
    if r.num_gpus > 1
        && (engine == "llama.cpp" || notes.contains("layer split") || notes.contains("pipeline"))
    {
        assumptions.push("devices split layers (pipeline-style), not tensor parallel".into());
        Parallel::Pp
    } else {
        Parallel::Tp
    }
}

/// The expert-parallel groups a row states (`EP32` in SGLang's framework cell, `--ep 8`
/// in a trtllm-bench command line): the routed experts spread over that many groups,
/// attention data-parallel across them (SGLang's and TensorRT-LLM's DP attention);
/// 1 (experts split like everything else, tensor parallel) when none is stated, or
/// when it does not divide the devices of a tensor-parallel layout.
fn expert_parallel(r: &Measurement, parallel: Parallel, assumptions: &mut Vec<String>) -> u64 {
    let text = format!("{} {}", r.framework, r.notes);
    let words: Vec<&str> = text
        .split(|c: char| !c.is_ascii_alphanumeric() && c != '-')
        .filter(|w| !w.is_empty())
        .collect();
    let stated = words.iter().enumerate().find_map(|(i, w)| {
        let n = match w.strip_prefix("EP") {
            Some(digits) if !digits.is_empty() => digits.parse::<u64>().ok(),
            _ if *w == "--ep" => words.get(i + 1).and_then(|n| n.parse::<u64>().ok()),
            _ => None,
        }?;
        (n > 1).then_some(n)
    });
    match stated {
        Some(n) if parallel == Parallel::Tp && r.num_gpus.is_multiple_of(n) => {
            assumptions.push(format!(
                "expert parallel over {n} groups with data-parallel attention, as the source states"
            ));
            n
        }
        _ => 1,
    }
}

/// Whether the row ran fused (flash) attention: not when its framework or notes say
/// flash attention was off (`flash-attn off`, llama-bench's `fa=0` / `-fa 0`); then
/// the scores are materialized ([`crate::model::graph`]'s unfused attention).
fn flash_attention(r: &Measurement, assumptions: &mut Vec<String>) -> bool {
    let text = format!("{} {}", r.framework, r.notes).to_ascii_lowercase();
    let off = ["flash-attn off", "flash attention off", "fa=0", "-fa 0"]
        .iter()
        .any(|w| text.contains(w));
    if off {
        assumptions.push("flash attention off: unfused attention (scores materialized)".into());
    }
    !off
}

/// Whether a batched metric counts decode steps only ("decode tokens/s", "prefill
/// excluded").
fn decode_only(metric: &str) -> bool {
    metric.starts_with("decode") || metric.contains("prefill excluded")
}

/// The prediction number matching a kind A/B/C row's metric and unit.
fn model_target(r: &Measurement, dim: Dim) -> std::result::Result<Target, String> {
    let metric = r.metric.to_ascii_lowercase();
    Ok(match (r.kind, dim) {
        (Kind::A, Dim::Rate) if metric.contains("output") || metric.contains("out tok") => {
            Target::OutputTokensPerS
        }
        (Kind::A, Dim::Rate) => Target::DecodeTokensPerS,
        // a single stream's whole request ("end-to-end latency")
        (Kind::A, Dim::Time) if metric.contains("end-to-end") => Target::E2eS,
        // "per-token latency", "inter-token latency": a single stream's decode step
        (Kind::A, Dim::Time) => Target::TpotS,
        // "decode tokens/s ... prefill excluded" (llama-batched-bench S_TG, a
        // disaggregated decode instance): decode steps only
        (Kind::B, Dim::Rate | Dim::RatePerGpu) if decode_only(&metric) => {
            if metric.contains("per gpu") || dim == Dim::RatePerGpu {
                Target::DecodeTokensPerSPerGpu
            } else {
                Target::DecodeTokensPerS
            }
        }
        (Kind::B, Dim::Rate) if metric.contains("per gpu") => Target::OutputTokensPerSPerGpu,
        (Kind::B, Dim::Rate) => Target::OutputTokensPerS,
        (Kind::A | Kind::B, Dim::RatePerGpu) => Target::OutputTokensPerSPerGpu,
        (Kind::C, Dim::Rate) => Target::PrefillTokensPerS,
        (Kind::C, Dim::Time) => Target::TtftS,
        _ => {
            return Err(format!(
                "kind {} with unit '{}' does not match a prediction",
                r.kind, r.unit
            ));
        }
    })
}

/// Predicts the case's [`Target`] with `engine`, in SI units, with the case's kernel
/// tables where it has them ([`Case::kernels`]).
pub fn predict_case(c: &Case, engine: &Engine) -> Result<f64> {
    predict_case_with(
        c,
        engine,
        c.kernels.as_deref().map(|k| (&k.db, &k.hardware)),
    )
}

/// [`predict_case`] with the measured kernel tables of `kernels` (and the devices
/// among which a device without a table finds its sibling) where given
/// ([`Predictor::with_kernels`]), else with none (whatever [`Case::kernels`] says).
pub fn predict_case_with(
    c: &Case,
    engine: &Engine,
    kernels: Option<(&ridgeline_core::kernels::KernelDb, &HardwareDb)>,
) -> Result<f64> {
    let Some(model) = &c.model else {
        return match c.target {
            Target::MatmulFlopsPerS(d) => {
                Ok(engine.compute_efficiency_on(&c.hardware) * c.hardware.sustained_peak(d).0)
            }
            Target::MemoryBytesPerS => {
                Ok(engine.memory_efficiency(&c.hardware) * c.hardware.memory.bandwidth_bytes_per_s)
            }
            _ => Err(Error::invalid(
                "model",
                format!("{}: a model is needed to predict {}", c.id, c.target.name()),
            )),
        };
    };
    let mut p = Predictor::new(model, &c.hardware, engine, &c.scenario)?;
    if let Some((db, hardware)) = kernels {
        p = p.with_kernels(db, hardware);
    }
    let s = &c.scenario;
    let batch = match c.batch {
        BatchSpec::Fixed(n) => n,
        BatchSpec::MaxLoad => {
            let max = p.max_batch(s.prompt, s.gen_tokens);
            if max == 0 {
                return Err(Error::conflict(
                    &["batch"],
                    format!(
                        "{}: not even one sequence of {} + {} tokens fits",
                        c.id, s.prompt, s.gen_tokens
                    ),
                ));
            }
            // the engine's scheduler cap (TensorRT-LLM's max_batch_size, vLLM's
            // max_num_seqs) where it sets one, else MAX_LOAD_BATCH; with expert
            // parallelism each data-parallel attention group is a scheduler of its own
            let cap = engine
                .scheduler
                .max_num_seqs
                .map_or(MAX_LOAD_BATCH, |n| n.saturating_mul(s.ep.max(1)));
            max.min(cap)
        }
    };
    let sum = p.summary(batch, s.prompt, s.gen_tokens);
    let g = GenerationReport::from_summary(&sum, batch, s.gen_tokens);
    Ok(match c.target {
        Target::DecodeTokensPerS => g.decode_tokens_per_s,
        Target::OutputTokensPerS => g.output_tokens_per_s,
        Target::OutputTokensPerSPerGpu => g.output_tokens_per_s / s.gpus as f64,
        Target::DecodeTokensPerSPerGpu => g.decode_tokens_per_s / s.gpus as f64,
        Target::PrefillTokensPerS => batch as f64 * s.prompt as f64 / g.ttft_s,
        Target::TtftS => g.ttft_s,
        Target::TpotS => g.tpot_s,
        Target::E2eS => g.total_s,
        Target::MatmulFlopsPerS(_) | Target::MemoryBytesPerS => {
            return Err(Error::invalid(
                "target",
                format!("{}: device ceilings are predicted without a model", c.id),
            ));
        }
    })
}
