//! Launch files (`--emit FORMAT`): the command line, config file or manifest that runs a
//! configuration ridgeline predicted, planned or simulated, for one serving engine
//! (vLLM, SGLang, TensorRT-LLM, llama.cpp, a Kubernetes manifest of vLLM) or one
//! training stack (DeepSpeed, PyTorch FSDP through Accelerate, torchtune, Megatron-LM).
//!
//! The input is a finished report, read into a [`Serving`] or a [`Training`]
//! description (from a plan entry, a prediction, a simulated run, a training report or
//! a training-plan entry); [`emit`] turns it into files ([`EmittedFile`]). Nothing here
//! predicts. Every flag and key written is one of the tool's, at the version in
//! `data/emit/<tool>.toml` (which also names the documentation it was checked against);
//! what the tool cannot express is said in a comment of the emitted file, and what it
//! cannot run at all is refused with an error naming `emit`.

mod deepspeed;
mod fsdp;
mod k8s;
mod llama_cpp;
mod megatron;
mod sglang;
mod shell;
mod torchtune;
mod trt_llm;
mod vllm;

use crate::dtype::Format as Dtype;
use crate::error::{Error, Result};
use crate::model::ModelConfig;
use crate::plan::Entry;
use crate::plan::train::TrainEntry;
use crate::predict::Prediction;
use crate::train::{
    LoraTargets, Method, Offload, Optimizer, Recompute, TrainConfig, TrainPrecision, TrainReport,
};

/// The checked-in flag lists, one TOML document per tool (`tool`, `version`, `source`,
/// `flags`, `keys`), in [`Format::ALL`] order.
pub(crate) const FLAG_LISTS: [(&str, &str); 9] = [
    ("vllm", include_str!("../../../../data/emit/vllm.toml")),
    ("sglang", include_str!("../../../../data/emit/sglang.toml")),
    (
        "trt-llm",
        include_str!("../../../../data/emit/trt-llm.toml"),
    ),
    (
        "llama.cpp",
        include_str!("../../../../data/emit/llama.cpp.toml"),
    ),
    ("k8s", include_str!("../../../../data/emit/k8s.toml")),
    (
        "deepspeed",
        include_str!("../../../../data/emit/deepspeed.toml"),
    ),
    ("fsdp", include_str!("../../../../data/emit/fsdp.toml")),
    (
        "torchtune",
        include_str!("../../../../data/emit/torchtune.toml"),
    ),
    (
        "megatron",
        include_str!("../../../../data/emit/megatron.toml"),
    ),
];

/// A launch-file format: one tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// `vllm serve` (a shell script).
    Vllm,
    /// `python -m sglang.launch_server` (a shell script).
    Sglang,
    /// `trtllm-serve` and its `--extra_llm_api_options` YAML.
    TrtLlm,
    /// `llama-server` over a GGUF file.
    LlamaCpp,
    /// A Kubernetes Deployment (or LeaderWorkerSet across nodes) running `vllm serve`.
    K8s,
    /// A DeepSpeed `ds_config.json` and its `deepspeed` launch line.
    Deepspeed,
    /// An Accelerate config of PyTorch FSDP and its `accelerate launch` line.
    Fsdp,
    /// `tune run` of a torchtune recipe with key=value overrides.
    Torchtune,
    /// `torchrun pretrain_gpt.py` of Megatron-LM.
    Megatron,
}

impl Format {
    /// Every format, serving first.
    pub const ALL: [Format; 9] = [
        Format::Vllm,
        Format::Sglang,
        Format::TrtLlm,
        Format::LlamaCpp,
        Format::K8s,
        Format::Deepspeed,
        Format::Fsdp,
        Format::Torchtune,
        Format::Megatron,
    ];

    /// The name `--emit` takes.
    pub const fn name(self) -> &'static str {
        match self {
            Format::Vllm => "vllm",
            Format::Sglang => "sglang",
            Format::TrtLlm => "trt-llm",
            Format::LlamaCpp => "llama.cpp",
            Format::K8s => "k8s",
            Format::Deepspeed => "deepspeed",
            Format::Fsdp => "fsdp",
            Format::Torchtune => "torchtune",
            Format::Megatron => "megatron",
        }
    }

    /// Parses a name (case-insensitive; `trtllm` and `llama-cpp` also accepted).
    pub fn parse(s: &str) -> Result<Format> {
        let q = s.trim().to_ascii_lowercase();
        let q = match q.as_str() {
            "trtllm" | "tensorrt-llm" => "trt-llm",
            "llama-cpp" | "llamacpp" => "llama.cpp",
            "kubernetes" => "k8s",
            other => other,
        };
        Format::ALL
            .into_iter()
            .find(|f| f.name() == q)
            .ok_or_else(|| Error::unknown("launch format", s, Format::ALL.map(Format::name)))
    }

    /// Whether this is a training stack (else a serving engine).
    pub const fn is_training(self) -> bool {
        matches!(
            self,
            Format::Deepspeed | Format::Fsdp | Format::Torchtune | Format::Megatron
        )
    }

    /// The checked-in flag list of this format's tool (a [`FLAG_LISTS`] document).
    pub(crate) fn flag_list(self) -> &'static str {
        FLAG_LISTS
            .iter()
            .find(|(name, _)| *name == self.name())
            .map_or("", |(_, text)| text)
    }

    /// The tool version the flags are checked against (from `data/emit/`).
    pub fn version(self) -> String {
        self.flag_list()
            .lines()
            .find_map(|l| l.strip_prefix("version = \""))
            .and_then(|v| v.strip_suffix('"'))
            .unwrap_or("unknown")
            .to_string()
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One file of a launch: its name (the script refers to its companions by these names)
/// and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmittedFile {
    /// File name, no folder (`vllm.sh`, `ds_config.json`).
    pub name: String,
    /// The file's text.
    pub contents: String,
}

/// A serving configuration, as a report gives it.
#[derive(Debug, Clone, PartialEq)]
pub struct Serving {
    /// The model (its id, Hugging Face repo, native format, shape).
    pub model: ModelConfig,
    /// Device id.
    pub gpu: String,
    /// Devices of one replica.
    pub gpus: u64,
    /// Devices per node (a replica larger than this spans nodes).
    pub devices_per_node: u64,
    /// Pipeline stages (1: tensor parallel over all devices of an expert group).
    pub pp: u64,
    /// Expert-parallel groups (1: none): the routed experts spread over `ep` groups of
    /// `gpus / ep` devices, attention data-parallel across the groups.
    pub ep: u64,
    /// Replicas of the whole configuration (1 without a rate plan).
    pub replicas: u64,
    /// Weight format.
    pub weights: Dtype,
    /// KV-cache format (`None`: the activation dtype, the engine's `auto`).
    pub kv: Option<Dtype>,
    /// Engine profile id the numbers came from.
    pub engine: String,
    /// Sequences per iteration.
    pub max_num_seqs: u64,
    /// Tokens per iteration.
    pub max_batched_tokens: u64,
    /// Longest request, prompt + generated tokens.
    pub max_model_len: u64,
    /// Speculative decoding (`None`: off); see [`Serving::speculating`].
    pub spec: Option<Speculating>,
    /// The expert all-to-all overlapped with computation (two micro-batches; the
    /// planned `--overlap-ep`).
    pub overlap_ep: bool,
}

/// Speculative decoding of a serving configuration: what the engine is told to run.
#[derive(Debug, Clone, PartialEq)]
pub struct Speculating {
    /// Draft tokens proposed per verify pass.
    pub k: u64,
    /// Acceptance probability ridgeline assumed (a property of the drafts and the
    /// traffic, not a setting: said in a comment).
    pub accept: f64,
    /// A separate draft model (`None`: the model's own head).
    pub draft: Option<ModelConfig>,
}

/// Who proposes the draft tokens, as the engines name them.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Drafter<'s> {
    /// A separate, smaller model with the same vocabulary.
    Model(&'s ModelConfig),
    /// The checkpoint's own multi-token-prediction module (DeepSeek's
    /// `num_nextn_predict_layers`, the only MTP modules ridgeline reads).
    Mtp,
    /// A one-layer EAGLE-style head trained for the model: not part of its checkpoint,
    /// so the emitted file names a placeholder ([`EAGLE_HEAD`]).
    Eagle,
}

/// The path an emitted file gives a draft head that no checkpoint ridgeline knows
/// provides (the header says to replace it).
pub(crate) const EAGLE_HEAD: &str = "EAGLE_HEAD_PATH";

impl Serving {
    /// Devices of one expert group (the tensor-parallel size of each pipeline stage
    /// times the stages).
    pub(crate) fn group(&self) -> u64 {
        (self.gpus / self.ep.max(1)).max(1)
    }

    /// Tensor-parallel size within one expert group and stage.
    pub(crate) fn tp(&self) -> u64 {
        (self.group() / self.pp.max(1)).max(1)
    }

    /// Nodes one replica spans.
    pub(crate) fn nodes(&self) -> u64 {
        self.gpus.div_ceil(self.devices_per_node.max(1))
    }

    /// The model as an engine loads it: its Hugging Face repo, else its id.
    pub(crate) fn model_path(&self) -> String {
        hf_repo(&self.model).unwrap_or_else(|| self.model.id.clone())
    }

    /// A plan entry (its `replicas` when planned for a rate).
    pub fn from_entry(e: &Entry, model: &ModelConfig, devices_per_node: u64) -> Serving {
        let pp = match e.parallel {
            crate::memory::Parallel::Pp => e.gpus,
            crate::memory::Parallel::Tp => 1,
        };
        Serving {
            model: model.clone(),
            gpu: e.gpu.clone(),
            gpus: e.gpus,
            devices_per_node,
            pp,
            ep: e.ep,
            replicas: e.replicas.unwrap_or(1),
            weights: e.weights,
            kv: native_kv(model, e.kv),
            engine: e.engine.clone(),
            max_num_seqs: e.batch,
            max_batched_tokens: (e.batch * e.prompt).max(e.batch),
            max_model_len: e.prompt + e.gen_tokens,
            spec: None,
            overlap_ep: false,
        }
    }

    /// A prediction: its batch, prompt and gen, layout and formats.
    pub fn from_prediction(p: &Prediction, model: &ModelConfig, devices_per_node: u64) -> Serving {
        let c = &p.config;
        let ep = c.ep.max(1);
        let group = (p.hardware.count / ep).max(1);
        let pp = match c.parallel {
            crate::memory::Parallel::Pp => group,
            crate::memory::Parallel::Tp => 1,
        };
        Serving {
            model: model.clone(),
            gpu: p.hardware.id.clone(),
            gpus: p.hardware.count,
            devices_per_node,
            pp,
            ep,
            replicas: 1,
            weights: c.weights,
            kv: native_kv(model, c.kv),
            engine: c.engine.clone(),
            max_num_seqs: c.batch,
            max_batched_tokens: (c.batch * c.prompt).max(c.batch),
            max_model_len: c.prompt + c.r#gen,
            spec: None,
            overlap_ep: false,
        }
    }

    /// A simulated run: its deployment (`max_num_seqs`, `max_batched_tokens` as the
    /// scheduler had them), the layout and formats it was given, and the longest request
    /// of its workload. A disaggregated deployment (two pools) is refused: it is two
    /// servers and a KV transfer, not one launch line.
    pub fn from_run(
        r: &crate::simulate::RunConfig,
        layout: &crate::predict::Scenario,
        model: &ModelConfig,
        max_model_len: u64,
        devices_per_node: u64,
    ) -> Result<Serving> {
        if r.disagg.is_some() {
            return Err(Error::invalid(
                "emit",
                "a disaggregated deployment (--disagg) is two pools joined by a KV transfer, \
                 not one server: emit each pool from its own simulate or predict",
            ));
        }
        let ep = layout.ep.max(1);
        let group = (r.gpus / ep).max(1);
        let pp = match layout.parallel {
            crate::memory::Parallel::Pp => group,
            crate::memory::Parallel::Tp => 1,
        };
        let weights = layout.weights.unwrap_or(model.native_format);
        let max_batched_tokens = r
            .max_batched_tokens
            .unwrap_or(crate::simulate::DEFAULT_MAX_BATCHED_TOKENS);
        // no sequence limit: each running sequence takes at least one token of an
        // iteration, so the token budget bounds them
        let max_num_seqs = r.max_num_seqs.unwrap_or(max_batched_tokens);
        Ok(Serving {
            model: model.clone(),
            gpu: r.gpu.clone(),
            gpus: r.gpus,
            devices_per_node,
            pp,
            ep,
            replicas: 1,
            weights,
            kv: layout.kv.and_then(|k| native_kv(model, k)),
            engine: r.engine.clone(),
            max_num_seqs,
            max_batched_tokens,
            max_model_len,
            spec: None,
            overlap_ep: false,
        })
    }

    /// This configuration with its expert all-to-all overlapped with computation (only
    /// with expert parallelism).
    pub fn overlapping(mut self, overlap_ep: bool) -> Serving {
        self.overlap_ep = overlap_ep && self.ep > 1;
        self
    }

    /// What a tool that cannot switch on the expert all-to-all's overlap says instead
    /// (`None`: no overlap planned).
    pub(crate) fn overlap_note(&self, tool: &str, why: &str) -> Option<String> {
        self.overlap_ep.then(|| {
            format!(
                "the plan overlaps the expert all-to-all with computation (two micro-batches, \
                 --overlap-ep); {tool} {why}: not set, so expect the exposed all-to-all's time"
            )
        })
    }

    /// This configuration speculating with `spec` (none: unchanged), the drafts from
    /// `draft` or, without one, from the model's own head.
    pub fn speculating(
        mut self,
        spec: Option<crate::predict::Speculation>,
        draft: Option<&ModelConfig>,
    ) -> Serving {
        self.spec = spec.map(|sp| Speculating {
            k: sp.k,
            accept: sp.accept,
            draft: draft.cloned(),
        });
        self
    }

    /// Draft tokens per verify pass and who drafts them (`None`: no speculation).
    pub(crate) fn drafter(&self) -> Option<(u64, Drafter<'_>)> {
        let sp = self.spec.as_ref()?;
        let who = match &sp.draft {
            Some(d) => Drafter::Model(d),
            None if self.model.mtp_layers > 0 => Drafter::Mtp,
            None => Drafter::Eagle,
        };
        Some((sp.k, who))
    }
}

/// The longest request a workload sends, prompt + generated tokens: a trace's longest
/// row, else the largest prompt plus the largest output its distributions draw (a
/// log-normal length, which has no largest, counts as the model's trained context).
pub fn longest_request(w: &crate::simulate::Workload, model: &ModelConfig) -> u64 {
    use crate::simulate::{Arrivals, Dist};
    if let Arrivals::Trace(rows) = &w.arrivals {
        return rows
            .iter()
            .map(|r| r.prompt + r.gen_tokens)
            .max()
            .unwrap_or(1);
    }
    let top = |d: &Dist| match *d {
        Dist::Fixed { tokens } => tokens,
        Dist::Uniform { hi, .. } => hi,
        Dist::Lognormal { .. } => model.max_context,
    };
    top(&w.prompt) + top(&w.gen_tokens)
}

/// A KV format that is the model's own 16-bit activation dtype is the engines' `auto`.
fn native_kv(model: &ModelConfig, kv: Dtype) -> Option<Dtype> {
    let native = matches!(kv, Dtype::Bf16 | Dtype::Fp16 | Dtype::Fp32)
        && (kv == model.native_format || kv.bits() >= 16.0);
    (!native).then_some(kv)
}

/// A training configuration, as a report gives it.
#[derive(Debug, Clone, PartialEq)]
pub struct Training {
    /// The model.
    pub model: ModelConfig,
    /// Device id.
    pub gpu: String,
    /// Devices in all.
    pub gpus: u64,
    /// Devices per node.
    pub devices_per_node: u64,
    /// Tensor-parallel degree.
    pub tp: u64,
    /// Pipeline-parallel degree.
    pub pp: u64,
    /// Data-parallel degree.
    pub dp: u64,
    /// Context-parallel degree (1: none).
    pub cp: u64,
    /// Expert-parallel degree (a divisor of `dp`).
    pub ep: u64,
    /// ZeRO stage 0-3.
    pub zero: u64,
    /// Sequences per micro-batch per data-parallel rank.
    pub micro_batch: u64,
    /// Sequences per optimizer step, all ranks.
    pub global_batch: u64,
    /// Micro-batches per step per pipeline (gradient accumulation).
    pub accumulation: u64,
    /// Tokens per sequence.
    pub seq: u64,
    /// Full, LoRA or QLoRA.
    pub method: Method,
    /// LoRA rank (full training: none).
    pub lora_rank: Option<u64>,
    /// Matrices LoRA adapts.
    pub lora_targets: LoraTargets,
    /// Activation recomputation.
    pub recompute: Recompute,
    /// Mixed-precision recipe.
    pub precision: TrainPrecision,
    /// Optimizer.
    pub optimizer: Optimizer,
    /// Optimizer states in host memory.
    pub offload: Offload,
    /// Model chunks per pipeline stage (interleaved schedule).
    pub virtual_stages: u64,
    /// Megatron sequence parallelism (with tp > 1).
    pub sequence_parallel: bool,
    /// Optimizer step fused into the backward pass.
    pub optimizer_in_backward: bool,
    /// Compiled step.
    pub compile: bool,
    /// Multi-token-prediction modules trained beside the model.
    pub mtp: u64,
    /// The expert all-to-all hidden behind an adjacent micro-batch's computation (with
    /// `ep > 1`).
    pub overlap_ep: bool,
}

impl Training {
    /// Nodes the run spans.
    pub(crate) fn nodes(&self) -> u64 {
        self.gpus.div_ceil(self.devices_per_node.max(1))
    }

    /// Processes per node.
    pub(crate) fn per_node(&self) -> u64 {
        self.gpus.min(self.devices_per_node.max(1))
    }

    /// A training report (`ridgeline train`).
    pub fn from_report(r: &TrainReport, model: &ModelConfig) -> Training {
        let (c, l) = (&r.config, &r.layout);
        Training::new(
            model,
            &r.hardware.id,
            l.devices_per_node,
            c,
            (l.tp, l.pp, l.dp, l.ep),
            (l.micro_batch, l.global_batch, l.micro_batches),
        )
        .with_cp(l.cp)
    }

    /// An entry of a training plan on top of the plan's base configuration.
    pub fn from_entry(
        e: &TrainEntry,
        base: &TrainConfig,
        model: &ModelConfig,
        devices_per_node: u64,
    ) -> Training {
        let c = e.train_config(base);
        let accumulation = (e.global_batch / (e.micro_batch * e.dp).max(1)).max(1);
        Training::new(
            model,
            &e.gpu,
            devices_per_node,
            &c,
            (e.tp, e.pp, e.dp, e.ep),
            (e.micro_batch, e.global_batch, accumulation),
        )
        .with_cp(e.cp)
    }

    /// ` cp N` with context parallelism, else nothing: the layouts' words.
    pub(crate) fn cp_words(&self) -> String {
        if self.cp > 1 {
            format!(" cp {}", self.cp)
        } else {
            String::new()
        }
    }

    /// The same run with each sequence split over `cp` context-parallel ranks (`cp · tp ·
    /// pp · dp` devices).
    fn with_cp(self, cp: u64) -> Training {
        Training {
            gpus: self.gpus * cp,
            cp,
            ..self
        }
    }

    fn new(
        model: &ModelConfig,
        gpu: &str,
        devices_per_node: u64,
        c: &TrainConfig,
        (tp, pp, dp, ep): (u64, u64, u64, u64),
        (micro_batch, global_batch, accumulation): (u64, u64, u64),
    ) -> Training {
        let lora_rank = match c.method {
            Method::Full => None,
            _ => Some(c.lora_rank.unwrap_or(crate::train::DEFAULT_LORA_RANK)),
        };
        Training {
            model: model.clone(),
            gpu: gpu.to_string(),
            gpus: tp * pp * dp,
            devices_per_node,
            tp,
            pp,
            dp,
            cp: 1,
            ep,
            zero: c.zero,
            micro_batch,
            global_batch,
            accumulation,
            seq: c.seq,
            method: c.method,
            lora_rank,
            lora_targets: c.lora_targets,
            recompute: c.recompute,
            precision: c.precision,
            optimizer: c.optimizer,
            offload: c.offload,
            virtual_stages: c.virtual_stages,
            sequence_parallel: c.sequence_parallel && tp > 1,
            optimizer_in_backward: c.optimizer_in_backward,
            compile: c.compile,
            mtp: c.mtp_modules(model),
            overlap_ep: c.overlap_ep && ep > 1,
        }
    }

    /// The expert-parallel group spans scale-up domains (nodes).
    pub(crate) fn ep_across_nodes(&self) -> bool {
        self.ep > 1 && self.ep * self.tp > self.devices_per_node.max(1)
    }
}

/// What to emit launch files for.
#[derive(Debug, Clone, Copy)]
pub enum Launch<'a> {
    /// A serving configuration (vllm, sglang, trt-llm, llama.cpp, k8s).
    Serving(&'a Serving),
    /// A training configuration (deepspeed, fsdp, torchtune, megatron).
    Training(&'a Training),
}

/// The launch files of `launch` in `format`, the script first; an error naming `emit`
/// when the format does not fit the kind of configuration or the tool cannot run it.
///
/// ```
/// use ridgeline_core::prelude::*;
/// use ridgeline_render::emit::{Format, Launch, Serving, emit};
///
/// let model = ModelDb::builtin()?.resolve("llama-3-8b")?;
/// let s = Serving {
///     model, gpu: "h100".into(), gpus: 2, devices_per_node: 8, pp: 1, ep: 1,
///     replicas: 1, weights: ridgeline_core::dtype::Format::Bf16, kv: None,
///     engine: "vllm".into(), max_num_seqs: 64, max_batched_tokens: 8192,
///     max_model_len: 4096,
///     spec: None, overlap_ep: false,
/// };
/// let files = emit(Format::Vllm, Launch::Serving(&s))?;
/// assert!(files[0].contents.contains("--tensor-parallel-size 2"));
/// assert!(emit(Format::Deepspeed, Launch::Serving(&s)).is_err());
/// # Ok::<(), ridgeline_core::Error>(())
/// ```
pub fn emit(format: Format, launch: Launch<'_>) -> Result<Vec<EmittedFile>> {
    match (launch, format.is_training()) {
        (Launch::Serving(s), false) => match format {
            Format::Vllm => vllm::emit(s),
            Format::Sglang => sglang::emit(s),
            Format::TrtLlm => trt_llm::emit(s),
            Format::LlamaCpp => llama_cpp::emit(s),
            _ => k8s::emit(s),
        },
        (Launch::Training(t), true) => match format {
            Format::Deepspeed => deepspeed::emit(t),
            Format::Fsdp => fsdp::emit(t),
            Format::Torchtune => torchtune::emit(t),
            _ => megatron::emit(t),
        },
        (Launch::Serving(_), true) => Err(refuse(
            format,
            "is a training launch; this is a serving configuration (serving formats: vllm, \
             sglang, trt-llm, llama.cpp, k8s)",
        )),
        (Launch::Training(_), false) => Err(refuse(
            format,
            "is a serving launch; this is a training configuration (training formats: \
             deepspeed, fsdp, torchtune, megatron)",
        )),
    }
}

/// The error for what `format` cannot express or run.
pub(crate) fn refuse(format: Format, why: impl std::fmt::Display) -> Error {
    Error::invalid("emit", format!("{} {why}", format.name()))
}

/// The Hugging Face repo of a model whose config comes from one
/// (`https://huggingface.co/ORG/NAME/...`), else `None`.
pub(crate) fn hf_repo(model: &ModelConfig) -> Option<String> {
    let rest = model
        .source
        .trim()
        .strip_prefix("https://huggingface.co/")?;
    let mut parts = rest.split(['/', ' ']);
    let (org, name) = (parts.next()?, parts.next()?);
    let ok = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    };
    (ok(org) && ok(name) && !matches!(org, "datasets" | "spaces")).then(|| format!("{org}/{name}"))
}

/// The header comment lines every launch file starts with: what it runs, from which
/// ridgeline configuration, for which tool version.
pub(crate) fn header(format: Format, what: &str) -> Vec<String> {
    vec![
        format!(
            "ridgeline --emit {}: {what} ({} {})",
            format.name(),
            tool_name(format),
            format.version()
        ),
        "check paths, ports and data before running; every number is ridgeline's configuration"
            .to_string(),
    ]
}

/// The tool a format launches, in words.
fn tool_name(format: Format) -> &'static str {
    match format {
        Format::Vllm | Format::K8s => "vLLM",
        Format::Sglang => "SGLang",
        Format::TrtLlm => "TensorRT-LLM",
        Format::LlamaCpp => "llama.cpp",
        Format::Deepspeed => "DeepSpeed",
        Format::Fsdp => "Accelerate",
        Format::Torchtune => "torchtune",
        Format::Megatron => "Megatron-LM",
    }
}

/// The serving configuration in words, for the header.
pub(crate) fn serving_summary(s: &Serving) -> String {
    let mut t = format!(
        "{} on {} x {}, tp {} pp {}",
        s.model.id,
        s.gpus,
        s.gpu,
        s.tp(),
        s.pp
    );
    if s.ep > 1 {
        t.push_str(&format!(" ep {}", s.ep));
    }
    if s.overlap_ep {
        t.push_str(" (all-to-all overlapped)");
    }
    t.push_str(&format!(
        ", weights {}, kv {}, engine profile {}",
        s.weights.name(),
        s.kv.map_or("auto".to_string(), |k| k.name()),
        s.engine
    ));
    if s.replicas > 1 {
        t.push_str(&format!(", {} replicas", s.replicas));
    }
    if let Some(sp) = &s.spec {
        t.push_str(&format!(
            ", speculative k {} (acceptance {} assumed; draft {})",
            sp.k,
            sp.accept,
            sp.draft
                .as_ref()
                .map_or("the model's own head", |d| d.id.as_str())
        ));
    }
    t
}

/// The comments every engine's file carries about its drafts: where a placeholder
/// stands for a head no checkpoint provides, and where a draft model has no known repo.
pub(crate) fn drafter_notes(s: &Serving) -> Vec<String> {
    match s.drafter() {
        Some((_, Drafter::Eagle)) => vec![format!(
            "{EAGLE_HEAD}: {} ships no draft head; replace it with an EAGLE-style head trained for it",
            s.model.id
        )],
        Some((_, Drafter::Model(d))) if hf_repo(d).is_none() => vec![format!(
            "no Hugging Face repo is known for draft {}: replace its path with its checkpoint",
            d.id
        )],
        _ => Vec::new(),
    }
}

/// A draft model's path as an engine loads it: its Hugging Face repo, else its id.
pub(crate) fn draft_path(d: &ModelConfig) -> String {
    hf_repo(d).unwrap_or_else(|| d.id.clone())
}

/// The training configuration in words, for the header.
pub(crate) fn training_summary(t: &Training) -> String {
    format!(
        "{} {} on {} x {}, tp {}{} pp {} dp {} ep {}, ZeRO-{}, micro-batch {} x {} accumulation = {} sequences of {} tokens, {}, recompute {}",
        t.method.name(),
        t.model.id,
        t.gpus,
        t.gpu,
        t.tp,
        t.cp_words(),
        t.pp,
        t.dp,
        t.ep,
        t.zero,
        t.micro_batch,
        t.accumulation,
        t.global_batch,
        t.seq,
        t.precision.name(),
        t.recompute.name()
    )
}

/// Comments for what a tool's config cannot set of the prediction's multi-token
/// prediction modules and expert all-to-all overlap.
pub(crate) fn moe_training_notes(t: &Training, tool: &str) -> Vec<String> {
    let mut out = Vec::new();
    if t.mtp > 0 {
        out.push(format!(
            "mtp {}: {tool} trains no multi-token-prediction modules from this file; the \
             prediction counts them, so the model's training code must add them",
            t.mtp
        ));
    }
    if t.overlap_ep {
        out.push(format!(
            "overlap-ep: {tool} has no switch that hides the expert all-to-all behind \
             computation; the prediction assumed it hidden"
        ));
    }
    out
}

/// What LoRA or QLoRA asks of a training script the launcher cannot set (`None`: full).
pub(crate) fn lora_note(t: &Training) -> Option<String> {
    let rank = t.lora_rank?;
    let targets = match t.lora_targets {
        LoraTargets::QueryValue => "[\"q_proj\", \"v_proj\"]",
        LoraTargets::AllLinear => "\"all-linear\"",
    };
    let base = if t.method == Method::Qlora {
        ", base weights in NF4 (bitsandbytes load_in_4bit)"
    } else {
        ""
    };
    Some(format!(
        "{}: train.py wraps the model with PEFT LoraConfig(r={rank}, target_modules={targets}){base}",
        t.method.name()
    ))
}

/// Weight formats that are llama.cpp's own (GGUF), which the Python engines do not load.
pub(crate) fn is_gguf(w: Dtype) -> bool {
    matches!(
        w,
        Dtype::Q8_0 | Dtype::Q4_0 | Dtype::Q4KM | Dtype::Q5KM | Dtype::Q6K | Dtype::Bpw(_)
    )
}

/// How a Python engine (vLLM, SGLang) gets the weight format: `Ok(None)` when the
/// checkpoint's own, `Ok(Some((flag, value)))` for a flag, a comment when the checkpoint
/// must already be in that format, an error for formats it cannot load.
pub(crate) enum WeightsHow {
    /// The checkpoint's own format: nothing to say.
    Native,
    /// One flag and its value.
    Flag(&'static str, &'static str),
    /// A pre-quantized checkpoint is needed; the sentence says which.
    Checkpoint(String),
}

/// The `--quantization` / `--dtype` of vLLM and SGLang for weights `w`; `int8` is
/// SGLang's `w8a8_int8` (vLLM needs a W8A8 checkpoint).
pub(crate) fn python_engine_weights(format: Format, s: &Serving) -> Result<WeightsHow> {
    let w = s.weights;
    let native = s.model.native_format;
    if w == native || (w == Dtype::Fp8Block && native == Dtype::Fp8Block) {
        return Ok(WeightsHow::Native);
    }
    if s.model.mixed_expert_format() == Some(w) {
        return Ok(WeightsHow::Native);
    }
    if is_gguf(w) {
        return Err(refuse(
            format,
            format!(
                "does not serve weights {} (a llama.cpp GGUF format); use --emit llama.cpp",
                w.name()
            ),
        ));
    }
    let sglang = format == Format::Sglang;
    Ok(match w {
        Dtype::Bf16 => WeightsHow::Flag("--dtype", "bfloat16"),
        Dtype::Fp16 => WeightsHow::Flag("--dtype", "float16"),
        Dtype::Fp32 => WeightsHow::Flag("--dtype", "float32"),
        Dtype::Fp8 | Dtype::Fp8Block => WeightsHow::Flag("--quantization", "fp8"),
        Dtype::AwqInt4 => WeightsHow::Flag("--quantization", "awq"),
        Dtype::GptqInt4 => WeightsHow::Flag("--quantization", "gptq"),
        Dtype::Nf4 => WeightsHow::Flag("--quantization", "bitsandbytes"),
        Dtype::Mxfp4 => WeightsHow::Flag("--quantization", "mxfp4"),
        Dtype::Int8 if sglang => WeightsHow::Flag("--quantization", "w8a8_int8"),
        other => WeightsHow::Checkpoint(format!(
            "weights {}: point the model path at a checkpoint already quantized to {} \
             (compressed-tensors or ModelOpt); the engine reads the format from its config",
            other.name(),
            other.name()
        )),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ModelDb;

    #[test]
    fn hf_repo_is_read_from_the_config_source() {
        let db = ModelDb::builtin().unwrap();
        let repo = |id: &str| hf_repo(&db.resolve(id).unwrap());
        assert_eq!(
            repo("llama-3-8b").as_deref(),
            Some("meta-llama/Meta-Llama-3-8B")
        );
        // a source with a note after the address
        assert_eq!(
            repo("gemma-3-12b").as_deref(),
            Some("google/gemma-3-12b-it")
        );
        // GPT-3's shape comes from the paper: no repo
        assert_eq!(repo("gpt3-175b"), None);
    }

    #[test]
    fn formats_parse_by_name_and_alias() {
        for f in Format::ALL {
            assert_eq!(Format::parse(f.name()).unwrap(), f);
            assert_eq!(f.is_training(), Format::ALL[5..].contains(&f));
        }
        assert_eq!(Format::parse("TRTLLM").unwrap(), Format::TrtLlm);
        assert_eq!(Format::parse("llama-cpp").unwrap(), Format::LlamaCpp);
        let e = Format::parse("vllm2").unwrap_err().to_string();
        assert!(e.contains("vllm"), "{e}");
    }

    #[test]
    fn shell_words_quote_only_where_needed() {
        assert_eq!(
            shell::quote("meta-llama/Meta-Llama-3-8B"),
            "meta-llama/Meta-Llama-3-8B"
        );
        assert_eq!(shell::quote("[q_proj,v_proj]"), "'[q_proj,v_proj]'");
        assert_eq!(shell::quote("it's"), r"'it'\''s'");
        assert_eq!(shell::quote(""), "''");
    }
}
