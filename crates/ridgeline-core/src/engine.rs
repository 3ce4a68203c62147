//! Efficiency profiles of inference engines (`--engine`): a few physical factors per
//! engine (achieved bandwidth fraction by device class, achieved compute fraction,
//! overheads), loaded from `data/engines.toml` or a user's `--engine-file`.

use crate::error::{Error, Result};
use crate::hardware::{DeviceClass, Hardware};
use crate::roofline::Efficiency;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// The embedded `data/engines.toml`.
pub const BUILTIN_ENGINES_TOML: &str = include_str!("../../../data/engines.toml");

/// One engine's efficiency factors.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Engine {
    /// Engine id (`vllm`), filled from the TOML table name.
    #[serde(default)]
    pub id: String,
    /// One line on what the profile represents.
    #[serde(default)]
    pub description: String,
    /// Fraction of memory bandwidth reached, by memory technology (`hbm`, `gddr`,
    /// `lpddr`) or device class (`default` for the rest); see [`memory_keys`].
    pub memory_efficiency: BTreeMap<String, f64>,
    /// Fraction of dense peak FLOP/s reached.
    pub compute_efficiency: f64,
    /// Fraction of an Apple GPU's peak its matmul kernels reach, where it differs from
    /// `compute_efficiency` (Apple GPUs have no tensor cores: their peak is the ALUs'
    /// FMA rate, which simdgroup-matrix kernels come closer to than kernels come to a
    /// tensor-core peak); `None`: `compute_efficiency`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub apple_compute_efficiency: Option<f64>,
    /// Fraction of an AMD RDNA GPU's peak its matmul kernels reach, where it differs
    /// from `compute_efficiency` (RDNA 3's WMMA issues on the SIMD ALUs: its peak needs
    /// dual-issued VOPD packets, a rate kernels come much less close to than to a CDNA or
    /// NVIDIA tensor-core peak); `None`: `compute_efficiency`. Keyed by the hardware
    /// file's `architecture` (`rdna3`, `rdna3.5`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rdna_compute_efficiency: Option<f64>,
    /// Fraction of link bandwidth collectives reach (default 1).
    #[serde(default = "one")]
    pub link_efficiency: f64,
    /// Fraction of the compute efficiency that matmuls on weight-only quantized
    /// weights reach when compute-bound (the kernel widens every weight tile before
    /// multiplying: AWQ, GPTQ/Marlin, NF4, GGUF), default 1.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub dequant_efficiency: f64,
    /// Fraction of the compute efficiency that matmuls on fp4 tensor cores reach
    /// (block-scaled MXFP4 / NVFP4 GEMMs: a scale per 16 or 32 elements to load and
    /// apply), default 1.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub fp4_efficiency: f64,
    /// Fraction of the compute and memory efficiencies the attention kernels reach
    /// (paged KV reads in decode, flash attention in prefill), default 1.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub attention_efficiency: f64,
    /// mxfp4 / nvfp4 weights run on fp4 tensor cores where the device has them
    /// (default true; false: dequantized to the activation dtype, as llama.cpp does).
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub fp4_tensor_cores: bool,
    /// GGUF block formats run integer MMA at the int8 tensor rate (llama.cpp's MMQ),
    /// default false (dequantized to the activation dtype).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub int8_mma: bool,
    /// fp16 matmuls accumulate in fp16 where the device publishes that rate (GeForce
    /// cards: twice the fp32-accumulate rate), default false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fp16_accumulate: bool,
    /// The matmul and attention kernels issue the device's warpgroup MMA (Hopper's
    /// `wgmma`), default true; false: warp-level `mma.sync` kernels, which reach only
    /// the device's [`crate::hardware::Peaks::warp_mma_fraction`] of its tensor peaks.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub warpgroup_mma: bool,
    /// The KV cache grows by concatenation each decode step (Hugging Face's dynamic
    /// cache): every step also reads and writes each layer's whole cache once, default
    /// false (a preallocated or paged cache written in place).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub kv_concat: bool,
    /// Unfused attention (flash attention off) materializes its scores and
    /// probabilities, and reads its queries and writes its outputs, in fp32: ggml's
    /// matmul results and softmax are fp32 tensors (llama.cpp with `-fa 0`), twice the
    /// bytes of a 16-bit score matrix. Default false (the activation dtype).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fp32_scores: bool,
    /// Rows (tokens) at which a weight matmul on the tensor cores reaches half its
    /// large-batch compute rate: a matmul of `M` rows runs at `M / (M + gemm_half_rows)`
    /// of [`Engine::compute_efficiency`]. Each weight tile a thread block loads, and the
    /// pipeline it fills and drains, is paid once whatever the rows it serves, so the
    /// compute time is that of `M + gemm_half_rows` rows: affine in the tokens, half of
    /// the rate at `M = gemm_half_rows`, within 2% of it beyond 50 times that. Passes of
    /// at most [`GEMV_MAX_TOKENS`] tokens run matrix-vector kernels (memory-bound, no
    /// tiles) and are not derated. Default 0 (no roll-off); 36 in every bundled engine,
    /// chosen from 8 ... 128 by the leave-one-source-out error of the bundled rows.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub gemm_half_rows: f64,
    /// Fixed time per forward pass, s.
    #[serde(default)]
    pub step_overhead_s: f64,
    /// Host time per sequence per forward pass (sampling, scheduling, detokenizing), s.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub sequence_overhead_s: f64,
    /// Fixed time per layer per forward pass, s.
    #[serde(default)]
    pub layer_overhead_s: f64,
    /// Time per layer that a prompt pass (a prompt or a chunk of one: more tokens than
    /// sequences) pays on top of [`Engine::layer_overhead_s`], s. Such a pass is
    /// launched kernel by kernel where decode steps (speculative verification passes
    /// included) are replayed from a captured CUDA graph, its shapes changing with
    /// every prompt, and it runs the kernels only a prompt needs (the prompt
    /// attention's sequence offsets and masks, the rotary embedding and the KV-cache
    /// writes over its tokens). Default 0; 25 µs in every bundled engine but `ideal`, set
    /// by hand from the leave-one-source-out error of the bundled rows (fitted per
    /// engine it overfits: most engines' prompt rows come from one or two publications).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub prefill_layer_overhead_s: f64,
    /// Host and dispatch time per routed expert's weight matrix a pass visits on the
    /// matmul (GEMM) path, s: engines whose batched expert matmul runs one expert at a
    /// time (gather its tokens, widen its weights, multiply, scatter back) pay it for
    /// every expert that has tokens, on top of the arithmetic. Passes of at most
    /// [`GEMV_MAX_TOKENS`] tokens run the matrix-vector kernels, which take every
    /// expert in one launch, and do not pay it. Default 0 (one grouped GEMM launch for
    /// all experts).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub expert_overhead_s: f64,
    /// [`Engine::expert_overhead_s`] on an AMD RDNA GPU, where it differs: above a few
    /// dozen tokens llama.cpp's HIP build leaves its MMQ kernels for dequantize +
    /// hipBLAS on RDNA, a path that takes a MoE matmul one expert at a time (its source
    /// keeps MMQ for MoE on older AMD parts because that path "is much slower" there),
    /// and its Vulkan expert matmuls measure as slow; `None`: `expert_overhead_s`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rdna_expert_overhead_s: Option<f64>,
    /// Latency of one collective or point-to-point send, s.
    #[serde(default)]
    pub collective_latency_s: f64,
    /// Extra device memory the engine needs, bytes.
    #[serde(default)]
    pub overhead_bytes: f64,
    /// Fraction of capacity left unused (e.g. vLLM's gpu_memory_utilization = 0.9 -> 0.1).
    #[serde(default)]
    pub reserve_fraction: f64,
    /// Most tokens one prefill chunk processes (chunked prefill, llama.cpp's ubatch):
    /// bounds the activation workspace. `None`: the whole `batch x prompt` at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_batched_tokens: Option<u64>,
    /// Most sequences the scheduler runs in one iteration (vLLM's `max_num_seqs`,
    /// TensorRT-LLM's `max_batch_size`, llama.cpp's `--parallel`); `None`: only the KV
    /// cache limits it (SGLang derives `max_running_requests` from memory). Read by
    /// `ridgeline::simulate`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_num_seqs: Option<u64>,
    /// Tokens per KV-cache block (vLLM's `block_size` 16, TensorRT-LLM's
    /// `tokens_per_block` 64): a sequence holds whole blocks. `None`: token-granular
    /// (SGLang's page size 1, llama.cpp's cells). Read by `ridgeline::simulate`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_block_tokens: Option<u64>,
    /// Measurement ids the factors were fitted on.
    #[serde(default)]
    pub fitted_on: Vec<String>,
    /// A user file may replace a built-in engine only when it says so
    /// (`override = true`); `ideal` cannot be replaced.
    #[serde(
        default,
        rename = "override",
        skip_serializing_if = "std::ops::Not::not"
    )]
    pub override_builtin: bool,
}

/// Most tokens a pass may have and still run the matrix-vector kernels (llama.cpp's
/// `MMVQ_MAX_BATCH_SIZE` and Vulkan `mul_mat_vec` column limit, 8): such passes pay no
/// [`Engine::expert_overhead_s`].
pub const GEMV_MAX_TOKENS: u64 = 8;

/// Largest `max_num_seqs` and `kv_block_tokens` an engine profile may set (2^24).
pub const MAX_SCHEDULER_COUNT: u64 = 1 << 24;

fn one() -> f64 {
    1.0
}

fn yes() -> bool {
    true
}

fn is_one(v: &f64) -> bool {
    *v == 1.0
}

fn is_zero(v: &f64) -> bool {
    *v == 0.0
}

fn is_true(v: &bool) -> bool {
    *v
}

/// The names of [`DeviceClass`] as used in `memory_efficiency` keys.
pub fn class_key(c: DeviceClass) -> &'static str {
    match c {
        DeviceClass::Datacenter => "datacenter",
        DeviceClass::Workstation => "workstation",
        DeviceClass::Consumer => "consumer",
        DeviceClass::Apple => "apple",
        DeviceClass::Tpu => "tpu",
        DeviceClass::Gaudi => "gaudi",
    }
}

/// The memory technology key of a device: `hbm`, `gddr` or `lpddr` from its memory
/// type, or `None` for anything else.
pub fn memory_key(hw: &Hardware) -> Option<&'static str> {
    let t = hw.memory.kind.trim().to_ascii_uppercase();
    if t.starts_with("HBM") {
        Some("hbm")
    } else if t.starts_with("GDDR") {
        Some("gddr")
    } else if t.starts_with("LPDDR") {
        Some("lpddr")
    } else {
        None
    }
}

/// The `memory_efficiency` keys tried for `hw`, most specific first (then `default`).
///
/// GPUs try their memory technology before their class: batch-1 decode kernels reach a
/// smaller fraction of HBM bandwidth (2-5 TB/s) than of GDDR bandwidth (0.3-1 TB/s) in
/// the same engine, whether the card is sold as data-centre (L40S, A10G) or consumer.
/// Apple, TPU and Gaudi devices try their class first.
pub fn memory_keys(hw: &Hardware) -> [Option<&'static str>; 2] {
    let class = Some(class_key(hw.class));
    match hw.class {
        DeviceClass::Apple | DeviceClass::Tpu | DeviceClass::Gaudi => [class, memory_key(hw)],
        _ => [memory_key(hw), class],
    }
}

/// The key a fitted memory efficiency of `hw` is stored under: the first of
/// [`memory_keys`] (`hbm`, `gddr`, `apple`, ...).
pub fn memory_group(hw: &Hardware) -> &'static str {
    memory_keys(hw)
        .into_iter()
        .flatten()
        .next()
        .unwrap_or("default")
}

/// Keys `memory_efficiency` accepts.
pub const MEMORY_KEYS: [&str; 10] = [
    "default",
    "hbm",
    "gddr",
    "lpddr",
    "datacenter",
    "workstation",
    "consumer",
    "apple",
    "tpu",
    "gaudi",
];

/// Whether `hw` is an AMD RDNA GPU (its `architecture` is `rdna...`), whose matmul
/// fraction is [`Engine::rdna_compute_efficiency`].
pub fn is_rdna(hw: &Hardware) -> bool {
    hw.architecture.starts_with("rdna")
}

impl Engine {
    /// The pure roofline: every efficiency 1, no overheads.
    pub fn ideal() -> Engine {
        Engine {
            id: "ideal".into(),
            description: "Pure roofline: datasheet peaks and bandwidth, no overheads.".into(),
            memory_efficiency: BTreeMap::from([("default".to_string(), 1.0)]),
            compute_efficiency: 1.0,
            apple_compute_efficiency: None,
            rdna_compute_efficiency: None,
            link_efficiency: 1.0,
            dequant_efficiency: 1.0,
            fp4_efficiency: 1.0,
            attention_efficiency: 1.0,
            fp4_tensor_cores: true,
            int8_mma: false,
            fp16_accumulate: false,
            warpgroup_mma: true,
            kv_concat: false,
            fp32_scores: false,
            gemm_half_rows: 0.0,
            step_overhead_s: 0.0,
            sequence_overhead_s: 0.0,
            layer_overhead_s: 0.0,
            prefill_layer_overhead_s: 0.0,
            expert_overhead_s: 0.0,
            rdna_expert_overhead_s: None,
            collective_latency_s: 0.0,
            overhead_bytes: 0.0,
            reserve_fraction: 0.0,
            max_batched_tokens: None,
            max_num_seqs: None,
            kv_block_tokens: None,
            fitted_on: Vec::new(),
            override_builtin: false,
        }
    }

    /// Whether two profiles predict the same (every factor equal; names, descriptions
    /// and provenance aside).
    pub fn same_factors(&self, other: &Engine) -> bool {
        self.memory_efficiency == other.memory_efficiency
            && self.compute_efficiency == other.compute_efficiency
            && self.apple_compute_efficiency == other.apple_compute_efficiency
            && self.rdna_compute_efficiency == other.rdna_compute_efficiency
            && self.link_efficiency == other.link_efficiency
            && self.dequant_efficiency == other.dequant_efficiency
            && self.fp4_efficiency == other.fp4_efficiency
            && self.attention_efficiency == other.attention_efficiency
            && self.fp4_tensor_cores == other.fp4_tensor_cores
            && self.int8_mma == other.int8_mma
            && self.fp16_accumulate == other.fp16_accumulate
            && self.warpgroup_mma == other.warpgroup_mma
            && self.kv_concat == other.kv_concat
            && self.fp32_scores == other.fp32_scores
            && self.gemm_half_rows == other.gemm_half_rows
            && self.step_overhead_s == other.step_overhead_s
            && self.sequence_overhead_s == other.sequence_overhead_s
            && self.layer_overhead_s == other.layer_overhead_s
            && self.prefill_layer_overhead_s == other.prefill_layer_overhead_s
            && self.expert_overhead_s == other.expert_overhead_s
            && self.rdna_expert_overhead_s == other.rdna_expert_overhead_s
            && self.collective_latency_s == other.collective_latency_s
            && self.overhead_bytes == other.overhead_bytes
            && self.reserve_fraction == other.reserve_fraction
            && self.max_batched_tokens == other.max_batched_tokens
            && self.max_num_seqs == other.max_num_seqs
            && self.kv_block_tokens == other.kv_block_tokens
    }

    /// Fraction of bandwidth reached on `hw`: the first of [`memory_keys`] present,
    /// else `default`, else 1.
    pub fn memory_efficiency(&self, hw: &Hardware) -> f64 {
        memory_keys(hw)
            .into_iter()
            .flatten()
            .find_map(|k| self.memory_efficiency.get(k))
            .or_else(|| self.memory_efficiency.get("default"))
            .copied()
            .unwrap_or(1.0)
    }

    /// Checks every factor's range; `src` names the file in errors.
    pub fn check(&self, src: &str) -> Result<()> {
        self.validate(src)
    }

    /// What the engine's matmul kernels do with low-precision weights.
    pub fn kernels(&self) -> crate::model::graph::Kernels {
        crate::model::graph::Kernels {
            fp4: self.fp4_tensor_cores,
            int8_mma: self.int8_mma,
            kv_concat: self.kv_concat,
            fp32_scores: self.fp32_scores,
        }
    }

    /// Per-op efficiency on `hw` (no per-op overhead; overheads are added per pass).
    pub fn efficiency(&self, hw: &Hardware) -> Efficiency {
        Efficiency {
            compute: self.compute_efficiency_on(hw),
            memory: self.memory_efficiency(hw),
            link: self.link_efficiency,
            overhead_s: 0.0,
        }
    }

    /// Fraction of `hw`'s dense peak reached: [`Engine::apple_compute_efficiency`] on an
    /// Apple GPU and [`Engine::rdna_compute_efficiency`] on an RDNA GPU where set, else
    /// [`Engine::compute_efficiency`].
    pub fn compute_efficiency_on(&self, hw: &Hardware) -> f64 {
        match (hw.class, self.apple_compute_efficiency) {
            (DeviceClass::Apple, Some(e)) => e,
            _ => match self.rdna_compute_efficiency {
                Some(e) if is_rdna(hw) => e,
                _ => self.compute_efficiency,
            },
        }
    }

    /// Time per routed expert matrix a GEMM-path pass visits on `hw`:
    /// [`Engine::rdna_expert_overhead_s`] on an RDNA GPU where set, else
    /// [`Engine::expert_overhead_s`].
    pub fn expert_overhead_on(&self, hw: &Hardware) -> f64 {
        match self.rdna_expert_overhead_s {
            Some(s) if is_rdna(hw) => s,
            _ => self.expert_overhead_s,
        }
    }

    fn validate(&self, src: &str) -> Result<()> {
        let bad = |field: String, msg: String| Error::Parse {
            source_name: src.to_string(),
            message: format!("engine '{}': {field}: {msg}", self.id),
        };
        // below a thousandth of a ceiling is no implementation, just a typo
        let frac = |field: &str, v: f64| {
            if v.is_finite() && (1e-3..=1.0).contains(&v) {
                Ok(())
            } else {
                Err(bad(
                    field.to_string(),
                    format!("must be in [0.001, 1], got {v}"),
                ))
            }
        };
        frac("compute_efficiency", self.compute_efficiency)?;
        if let Some(e) = self.apple_compute_efficiency {
            frac("apple_compute_efficiency", e)?;
        }
        if let Some(e) = self.rdna_compute_efficiency {
            frac("rdna_compute_efficiency", e)?;
        }
        frac("link_efficiency", self.link_efficiency)?;
        frac("dequant_efficiency", self.dequant_efficiency)?;
        frac("fp4_efficiency", self.fp4_efficiency)?;
        frac("attention_efficiency", self.attention_efficiency)?;
        if self.memory_efficiency.is_empty() {
            return Err(bad(
                "memory_efficiency".into(),
                "needs at least a `default` entry".into(),
            ));
        }
        for (k, v) in &self.memory_efficiency {
            if !MEMORY_KEYS.contains(&k.as_str()) {
                return Err(bad(
                    format!("memory_efficiency.{k}"),
                    format!(
                        "unknown device class or memory type; valid: {}",
                        MEMORY_KEYS.join(", ")
                    ),
                ));
            }
            frac(&format!("memory_efficiency.{k}"), *v)?;
        }
        for (field, v, max) in [
            ("step_overhead_s", self.step_overhead_s, 1.0),
            ("sequence_overhead_s", self.sequence_overhead_s, 0.1),
            ("layer_overhead_s", self.layer_overhead_s, 0.1),
            (
                "prefill_layer_overhead_s",
                self.prefill_layer_overhead_s,
                0.1,
            ),
            ("expert_overhead_s", self.expert_overhead_s, 0.01),
            (
                "rdna_expert_overhead_s",
                self.rdna_expert_overhead_s.unwrap_or(0.0),
                0.01,
            ),
            ("collective_latency_s", self.collective_latency_s, 1.0),
            ("gemm_half_rows", self.gemm_half_rows, 65536.0),
            ("overhead_bytes", self.overhead_bytes, 1e13),
        ] {
            if !(v.is_finite() && (0.0..=max).contains(&v)) {
                return Err(bad(
                    field.into(),
                    format!("must be in [0, {max:e}], got {v}"),
                ));
            }
        }
        if !(self.reserve_fraction.is_finite() && (0.0..1.0).contains(&self.reserve_fraction)) {
            return Err(bad(
                "reserve_fraction".into(),
                format!("must be in [0, 1), got {}", self.reserve_fraction),
            ));
        }
        for (field, v, max) in [
            ("max_batched_tokens", self.max_batched_tokens, u64::MAX),
            ("max_num_seqs", self.max_num_seqs, MAX_SCHEDULER_COUNT),
            ("kv_block_tokens", self.kv_block_tokens, MAX_SCHEDULER_COUNT),
        ] {
            if let Some(v) = v.filter(|&v| v == 0 || v > max) {
                return Err(bad(field.into(), format!("must be in 1..={max}, got {v}")));
            }
        }
        Ok(())
    }
}

/// A set of engines by id.
#[derive(Debug, Clone, Default)]
pub struct EngineDb {
    engines: Vec<Engine>,
}

impl EngineDb {
    /// Parses an engines TOML document (tables named by engine id).
    pub fn from_toml(text: &str, src: &str) -> Result<EngineDb> {
        let map: BTreeMap<String, Engine> = toml::from_str(text).map_err(|e| Error::Parse {
            source_name: src.to_string(),
            message: e.to_string().trim().replace('\n', " "),
        })?;
        let mut engines = Vec::new();
        for (id, mut e) in map {
            e.id = id;
            e.validate(src)?;
            engines.push(e);
        }
        Ok(EngineDb { engines })
    }

    /// The built-in profiles.
    pub fn builtin() -> Result<&'static EngineDb> {
        static DB: OnceLock<Result<EngineDb>> = OnceLock::new();
        DB.get_or_init(|| EngineDb::from_toml(BUILTIN_ENGINES_TOML, "data/engines.toml"))
            .as_ref()
            .map_err(Clone::clone)
    }

    /// Adds engines from a user's TOML file; returns the ids of engines it replaced.
    /// An engine with an id already loaded needs `override = true`, and the pure
    /// roofline `ideal` cannot be replaced.
    pub fn load_file(&mut self, path: &std::path::Path) -> Result<Vec<String>> {
        let text = crate::files::read_document(path)?;
        let src = path.display().to_string();
        let other = EngineDb::from_toml(&text, &src)?;
        let mut replaced = Vec::new();
        // the pure roofline as written by `calibrate --save` is no redefinition
        let other_engines: Vec<Engine> = other
            .engines
            .into_iter()
            .filter(|e| !(e.id == "ideal" && e.same_factors(&Engine::ideal())))
            .collect();
        for e in &other_engines {
            let taken = self.engines.iter().any(|x| x.id == e.id);
            if taken && (e.id == "ideal" || !e.override_builtin) {
                return Err(Error::Parse {
                    source_name: src,
                    message: if e.id == "ideal" {
                        "[ideal] is the pure roofline and cannot be replaced; give the profile another name".into()
                    } else {
                        format!(
                            "[{}] is already an engine; add `override = true` to its table to replace it, or give it another name",
                            e.id
                        )
                    },
                });
            }
            if taken {
                replaced.push(e.id.clone());
            }
        }
        for e in other_engines {
            self.engines.retain(|x| x.id != e.id);
            self.engines.push(e);
        }
        Ok(replaced)
    }

    /// All engines.
    pub fn engines(&self) -> &[Engine] {
        &self.engines
    }

    /// An engine by id; unknown ids suggest the closest.
    pub fn get(&self, id: &str) -> Result<&Engine> {
        let q = id.trim().to_ascii_lowercase();
        let q = match q.as_str() {
            "llamacpp" | "llama-cpp" => "llama.cpp".to_string(),
            "tensorrt-llm" | "trtllm" => "trt-llm".to_string(),
            "transformers" => "hf".to_string(),
            _ => q,
        };
        self.engines
            .iter()
            .find(|e| e.id == q)
            .ok_or_else(|| Error::unknown("engine", id, self.engines.iter().map(|e| e.id.as_str())))
    }
}
