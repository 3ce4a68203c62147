//! Efficiency profiles of inference engines (`--engine`): a few physical factors per
//! engine (achieved bandwidth fraction by device class, achieved compute fraction,
//! overheads), loaded from `data/engines.toml` or a user's `--engine-file`.

pub mod file;
pub mod front_end;
pub mod select;

use crate::error::{Error, Result};
use crate::hardware::{DeviceClass, Hardware};
use crate::roofline::Efficiency;
pub use select::{
    CLASS_KEYS, DeviceFactor, DeviceOverride, MEMORY_TECHNOLOGIES, Selector, class_key, memory_key,
};
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// The embedded `data/engines.toml`.
pub const BUILTIN_ENGINES_TOML: &str = include_str!("../../../../data/engines.toml");

/// The embedded `data/engines-kernels.toml`: the profiles of the engines refitted on top
/// of the measured kernel tables ([`EngineDb::on_tables`]).
pub const BUILTIN_KERNEL_ENGINES_TOML: &str = include_str!("../../../../data/engines-kernels.toml");

/// One engine's efficiency factors, grouped: the speed factors a fit sets, the fixed
/// overheads, what its kernels do, its scheduler, its memory footprint, the devices it
/// behaves differently on, and where its numbers came from. An engine file writes the
/// groups' fields flat in the engine's table (see [`mod@file`] for the schema and
/// `base = "typical"` inheritance).
#[derive(Debug, Clone, PartialEq)]
pub struct Engine {
    /// One engine's efficiency factors.
    /// Engine id (`vllm`), filled from the TOML table name.
    pub id: String,
    /// One line on what the profile represents.
    pub description: String,
    /// Fitted fractions of the device's ceilings.
    pub speed: Speed,
    /// Fixed times per pass, layer, sequence, expert and collective.
    pub overheads: Overheads,
    /// What the matmul and attention kernels do.
    pub features: Features,
    /// How the scheduler batches and pages.
    pub scheduler: Scheduler,
    /// Device memory the engine takes for itself.
    pub footprint: Footprint,
    /// Factors that differ on some devices (the first override that selects a device and
    /// sets a factor wins).
    pub devices: Vec<DeviceOverride>,
    /// Where the profile came from.
    pub provenance: Provenance,
    /// A user file may replace a built-in engine only when it says so
    /// (`override = true`); `ideal` cannot be replaced.
    pub override_builtin: bool,
}

/// The fractions of a device's ceilings an engine's kernels reach.
#[derive(Debug, Clone, PartialEq)]
pub struct Speed {
    /// Fraction of memory bandwidth reached, by memory technology (`hbm`, `gddr`,
    /// `lpddr`) or device class (`default` for the rest); see `memory_keys`.
    pub memory_efficiency: BTreeMap<String, f64>,
    /// Fraction of dense peak FLOP/s reached.
    pub compute_efficiency: f64,
    /// Fraction of link bandwidth collectives reach (default 1).
    pub link_efficiency: f64,
    /// Fraction of the compute efficiency that matmuls on weight-only quantized
    /// weights reach when compute-bound (the kernel widens every weight tile before
    /// multiplying: AWQ, GPTQ/Marlin, NF4, GGUF), default 1.
    pub dequant_efficiency: f64,
    /// Fraction of the compute efficiency that matmuls on fp4 tensor cores reach
    /// (block-scaled MXFP4 / NVFP4 GEMMs: a scale per 16 or 32 elements to load and
    /// apply), default 1.
    pub fp4_efficiency: f64,
    /// Fraction of the compute and memory efficiencies the attention kernels reach
    /// (paged KV reads in decode, flash attention in prefill), default 1.
    pub attention_efficiency: f64,
    /// Fraction of the memory efficiency a routed expert's weight matmuls reach (the
    /// expert kernels: one launch over the experts the router picks, each a small
    /// matrix at an offset the kernel reads from the routing), default 1. llama.cpp's
    /// Metal expert kernels on an Apple GPU stream their weights slower than its dense
    /// ones (a device override, fitted on the published MoE rows).
    pub expert_memory_efficiency: f64,
    /// Fraction of the device's 16-bit peak at which a matrix-vector kernel
    /// (a weight matmul of at most [`GEMV_MAX_TOKENS`] rows) does the multiply-adds of
    /// its rows past the first, on top of its weights' loads; 0 (the default): none,
    /// overlapped with the loads. The same cost as
    /// [`Overheads::gemv_s_per_gflop`] in a form that carries across devices: the time
    /// per GFLOP is `1 / (gemv_compute_efficiency * peak GFLOP/s)`, so a device of a
    /// quarter of the peak takes four times as long. llama.cpp's Metal kernels on an
    /// Apple GPU do not overlap them (a device override, fitted on the published rows
    /// of 2 to 8 tokens a pass); where `gemv_s_per_gflop` selects a device as well, it
    /// wins.
    pub gemv_compute_efficiency: f64,
    /// Rows (tokens) at which a weight matmul on the tensor cores reaches half its
    /// large-batch compute rate: a matmul of `M` rows runs at `M / (M + gemm_half_rows)`
    /// of [`Speed::compute_efficiency`]. Each weight tile a thread block loads, and the
    /// pipeline it fills and drains, is paid once whatever the rows it serves, so the
    /// compute time is that of `M + gemm_half_rows` rows: affine in the tokens, half of
    /// the rate at `M = gemm_half_rows`, within 2% of it beyond 50 times that. Passes of
    /// at most [`GEMV_MAX_TOKENS`] tokens run matrix-vector kernels (memory-bound, no
    /// tiles) and are not derated. On an Apple GPU `M` is first rounded up to whole
    /// tiles of 32 tokens (`crate::predict::METAL_TOKEN_TILE`; routed experts apart).
    /// Default 0 (no roll-off); 36 in every bundled engine, chosen from 8 ... 128 by the
    /// leave-one-source-out error of the bundled rows.
    pub gemm_half_rows: f64,
}

/// An engine's fixed times, s.
#[derive(Debug, Clone, PartialEq)]
pub struct Overheads {
    /// Fixed time per forward pass, s.
    pub step_overhead_s: f64,
    /// Host time per sequence per forward pass (sampling, scheduling, detokenizing), s.
    pub sequence_overhead_s: f64,
    /// Fixed time per layer per forward pass, s: the launches of a dense decoder
    /// layer's 11 kernels. A layer pays it in proportion to the kernels its kind
    /// launches in a decode step (latent attention, experts and shared experts launch
    /// more; Gemma's extra norms too), counted per layer kind by the predictor.
    pub layer_overhead_s: f64,
    /// Time per layer that a prompt pass (a prompt or a chunk of one: more tokens than
    /// sequences) pays on top of [`Overheads::layer_overhead_s`], s. Such a pass is
    /// launched kernel by kernel where decode steps (speculative verification passes
    /// included) are replayed from a captured CUDA graph, its shapes changing with
    /// every prompt, and it runs the kernels only a prompt needs (the prompt
    /// attention's sequence offsets and masks, the rotary embedding and the KV-cache
    /// writes over its tokens). Default 0; 25 µs in every bundled engine but `ideal`, set
    /// by hand from the leave-one-source-out error of the bundled rows (fitted per
    /// engine it overfits: most engines' prompt rows come from one or two publications).
    pub prefill_layer_overhead_s: f64,
    /// Host and dispatch time per routed expert's weight matrix a pass visits on the
    /// matmul (GEMM) path, s: engines whose batched expert matmul runs one expert at a
    /// time (gather its tokens, widen its weights, multiply, scatter back) pay it for
    /// every expert that has tokens, on top of the arithmetic. Passes of at most
    /// [`GEMV_MAX_TOKENS`] tokens run the matrix-vector kernels, which take every
    /// expert in one launch, and do not pay it. Default 0 (one grouped GEMM launch for
    /// all experts).
    pub expert_overhead_s: f64,
    /// Latency of one collective or point-to-point send, s.
    pub collective_latency_s: f64,
    /// Time the matrix-vector kernels (weight matmuls of at most [`GEMV_MAX_TOKENS`]
    /// rows) spend per GFLOP of their multiply-adds on top of their weights' loads, s:
    /// where such a kernel does not overlap its arithmetic with its loads, each row past
    /// the first (a decode step's further sequences; one row's arithmetic hides under
    /// the loads) adds its arithmetic at the rate this is the inverse of, a lower
    /// effective bandwidth. llama.cpp's Metal kernels on an Apple GPU do (a device
    /// override, fitted on the published batched rows). Default 0: overlapped, the
    /// roofline's larger of the two.
    pub gemv_s_per_gflop: f64,
}

/// What an engine's kernels do with low-precision weights, the KV cache and scores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Features {
    /// mxfp4 / nvfp4 weights run on fp4 tensor cores where the device has them
    /// (default true; false: dequantized to the activation dtype, as llama.cpp does).
    pub fp4_tensor_cores: bool,
    /// GGUF block formats run integer MMA at the int8 tensor rate (llama.cpp's MMQ),
    /// default false (dequantized to the activation dtype).
    pub int8_mma: bool,
    /// fp16 matmuls accumulate in fp16 where the device publishes that rate (GeForce
    /// cards: twice the fp32-accumulate rate), default false.
    pub fp16_accumulate: bool,
    /// The matmul and attention kernels issue the device's warpgroup MMA (Hopper's
    /// `wgmma`), default true; false: warp-level `mma.sync` kernels, which reach only
    /// the device's [`crate::hardware::Peaks::warp_mma_fraction`] of its tensor peaks.
    pub warpgroup_mma: bool,
    /// The KV cache grows by concatenation each decode step (Hugging Face's dynamic
    /// cache): every step also reads and writes each layer's whole cache once, default
    /// false (a preallocated or paged cache written in place).
    pub kv_concat: bool,
    /// Unfused attention (flash attention off) materializes its scores and
    /// probabilities, and reads its queries and writes its outputs, in fp32: ggml's
    /// matmul results and softmax are fp32 tensors (llama.cpp with `-fa 0`), twice the
    /// bytes of a 16-bit score matrix. Default false (the activation dtype).
    pub fp32_scores: bool,
}

/// How an engine's scheduler batches and pages (read by the predictor's chunking and by
/// `ridgeline::simulate`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scheduler {
    /// Most tokens one prefill chunk processes (chunked prefill, llama.cpp's ubatch):
    /// bounds the activation workspace. `None`: the whole `batch x prompt` at once.
    pub max_batched_tokens: Option<u64>,
    /// Most sequences the scheduler runs in one iteration (vLLM's `max_num_seqs`,
    /// TensorRT-LLM's `max_batch_size`, llama.cpp's `--parallel`); `None`: only the KV
    /// cache limits it (SGLang derives `max_running_requests` from memory). Read by
    /// `ridgeline::simulate`.
    pub max_num_seqs: Option<u64>,
    /// Tokens per KV-cache block (vLLM's `block_size` 16, TensorRT-LLM's
    /// `tokens_per_block` 64): a sequence holds whole blocks. `None`: token-granular
    /// (SGLang's page size 1, llama.cpp's cells). Read by `ridgeline::simulate`.
    pub kv_block_tokens: Option<u64>,
}

/// Device memory an engine takes for itself.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Footprint {
    /// Extra device memory the engine needs, bytes.
    pub overhead_bytes: f64,
    /// Fraction of capacity left unused (e.g. vLLM's gpu_memory_utilization = 0.9 -> 0.1).
    pub reserve_fraction: f64,
}

/// Where an engine profile came from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Provenance {
    /// Measurement ids the factors were fitted on.
    pub fitted_on: Vec<String>,
    /// The profile it inherits unset fields from (`base = "typical"`), if any.
    pub base: Option<String>,
    /// Fitted on top of the measured kernel tables (a profile of
    /// [`EngineDb::on_tables`], not written in files: which file it came from says it).
    pub on_tables: bool,
    /// Where each fitted or derived factor came from, by the fit's name of it
    /// (`compute_efficiency`, `memory_efficiency.hbm`, `apple_compute_efficiency`, ...;
    /// the `factors` table of an engine file). A factor without a tag was not fitted:
    /// its value is the one given (by hand, or the prior the fit started from). Through
    /// `base`, a factor the table leaves out keeps its base's tag.
    pub factors: BTreeMap<String, FactorTag>,
    /// For a profile with a `base`, the engine at the root of its chain of bases, whose
    /// measured all-reduce latency ([`crate::kernels::AllReduceLatency`]) it reads where
    /// none is measured under its own id ([`Engine::kernel_ids`]); `None` without a
    /// base. Not written in files.
    pub kernels_of: Option<String>,
}

/// Where one factor of a profile came from ([`Provenance::factors`]), written in engine
/// files as a sentence: `fitted on 19 rows from 6 devices in 5 publications`, `fitted on
/// 16 rows from 1 device (mi300x) in 5 publications` (one device, named), or `carried
/// over from typical`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FactorTag {
    /// Fitted on published measurements.
    Fitted {
        /// Rows whose prediction depends on the factor.
        rows: u32,
        /// Distinct devices among those rows.
        devices: u32,
        /// Distinct publications (GitHub repository or web page) among them.
        publications: u32,
        /// The device id, where the rows are all from one device: on any other the
        /// factor is an assumption.
        device: Option<String>,
    },
    /// Not measured for this engine: derived from another profile's value (the fit
    /// scales `typical`'s memory efficiencies by the engine's fitted ratio to them).
    Carried {
        /// The profile it was derived from.
        from: String,
    },
}

impl std::fmt::Display for FactorTag {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = |n: u32| if n == 1 { "" } else { "s" };
        match self {
            FactorTag::Fitted {
                rows,
                devices,
                publications,
                device,
            } => write!(
                f,
                "fitted on {rows} row{} from {devices} device{}{} in {publications} publication{}",
                s(*rows),
                s(*devices),
                device
                    .as_deref()
                    .map_or_else(String::new, |d| format!(" ({d})")),
                s(*publications)
            ),
            FactorTag::Carried { from } => write!(f, "carried over from {from}"),
        }
    }
}

impl std::str::FromStr for FactorTag {
    type Err = String;

    /// The sentence [`FactorTag`]'s `Display` writes; anything else is an error saying
    /// what is expected.
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        let expected = || {
            format!(
                "'{s}' is not a factor tag: expected 'fitted on N rows from N devices in N publications' (one device may be named: '1 device (ID)') or 'carried over from ENGINE'"
            )
        };
        let w: Vec<&str> = s.split_whitespace().collect();
        if let ["carried", "over", "from", from] = w.as_slice() {
            return Ok(FactorTag::Carried {
                from: (*from).to_string(),
            });
        }
        let n = |t: &str| t.parse::<u32>().ok().filter(|&v| v > 0);
        let unit = |t: &str, one: &str, many: &str| t == one || t == many;
        // `(ID)` after the devices names the one device
        let named = |t: &str| {
            t.strip_prefix('(')
                .and_then(|t| t.strip_suffix(')'))
                .filter(|id| !id.is_empty() && !id.contains(['(', ')']))
                .map(str::to_string)
        };
        let (r, ru, d, du, device, p, pu) = match w.as_slice() {
            ["fitted", "on", r, ru, "from", d, du, "in", p, pu] => (r, ru, d, du, None, p, pu),
            ["fitted", "on", r, ru, "from", d, du, id, "in", p, pu] => {
                (r, ru, d, du, Some(named(id).ok_or_else(expected)?), p, pu)
            }
            _ => return Err(expected()),
        };
        if !(unit(ru, "row", "rows")
            && unit(du, "device", "devices")
            && unit(pu, "publication", "publications"))
        {
            return Err(expected());
        }
        match (n(r), n(d), n(p)) {
            (Some(rows), Some(devices), Some(publications))
                if devices <= rows
                    && publications <= rows
                    && (device.is_none() || devices == 1) =>
            {
                Ok(FactorTag::Fitted {
                    rows,
                    devices,
                    publications,
                    device,
                })
            }
            _ => Err(expected()),
        }
    }
}

/// Most tokens a pass may have and still run the matrix-vector kernels (llama.cpp's
/// `MMVQ_MAX_BATCH_SIZE` and Vulkan `mul_mat_vec` column limit, 8): such passes pay no
/// [`Overheads::expert_overhead_s`].
pub const GEMV_MAX_TOKENS: u64 = 8;

/// Largest `max_num_seqs` and `kv_block_tokens` an engine profile may set (2^24).
pub const MAX_SCHEDULER_COUNT: u64 = 1 << 24;

/// The `memory_efficiency` keys tried for `hw`, most specific first (then `default`).
///
/// GPUs try their memory technology before their class: batch-1 decode kernels reach a
/// smaller fraction of HBM bandwidth (2-5 TB/s) than of GDDR bandwidth (0.3-1 TB/s) in
/// the same engine, whether the card is sold as data-centre (L40S, A10G) or consumer.
/// Apple, TPU and Gaudi devices try their class first.
pub(crate) fn memory_keys(hw: &Hardware) -> [Option<&'static str>; 2] {
    let class = Some(class_key(hw.class));
    match hw.class {
        DeviceClass::Apple | DeviceClass::Tpu | DeviceClass::Gaudi => [class, memory_key(hw)],
        _ => [memory_key(hw), class],
    }
}

/// The key a fitted memory efficiency of `hw` is stored under: the first of
/// `memory_keys` (`hbm`, `gddr`, `apple`, ...).
pub fn memory_group(hw: &Hardware) -> &'static str {
    memory_keys(hw)
        .into_iter()
        .flatten()
        .next()
        .unwrap_or("default")
}

/// Keys `memory_efficiency` accepts.
pub(crate) const MEMORY_KEYS: [&str; 10] = [
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

/// The engine profile that `engine` runs as on a device of `vendor` (a hardware file's
/// `vendor`): vLLM and SGLang on AMD devices run under ROCm, with other kernels than on
/// CUDA (hipBLASLt GEMMs, AITER and ROCm attention backends), so their rows there fit
/// profiles of their own (`vllm-rocm`, `sglang-rocm`) rather than pulling the CUDA
/// profiles toward them. Every other engine is itself on every vendor.
///
/// ```
/// use ridgeline_core::engine::on_vendor;
/// assert_eq!(on_vendor("sglang", "AMD"), "sglang-rocm");
/// assert_eq!(on_vendor("vllm", "AMD"), "vllm-rocm");
/// assert_eq!(on_vendor("sglang", "NVIDIA"), "sglang");
/// assert_eq!(on_vendor("llama.cpp", "AMD"), "llama.cpp");
/// ```
pub fn on_vendor<'a>(engine: &'a str, vendor: &str) -> &'a str {
    match (engine, vendor.eq_ignore_ascii_case("amd")) {
        ("vllm", true) => "vllm-rocm",
        ("sglang", true) => "sglang-rocm",
        _ => engine,
    }
}

/// Whether `hw` is an AMD RDNA GPU (its `architecture` is `rdna...`).
pub fn is_rdna(hw: &Hardware) -> bool {
    hw.architecture.starts_with("rdna")
}

impl Engine {
    /// The engine ids the measured all-reduce latency is looked up under, in order: its
    /// own, then, for a profile derived with `base`, the root of its chain of bases
    /// ([`Provenance::kernels_of`]).
    pub fn kernel_ids(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.id.as_str()).chain(self.provenance.kernels_of.as_deref())
    }

    /// The pure roofline: every efficiency 1, no overheads.
    pub fn ideal() -> Engine {
        Engine {
            id: "ideal".into(),
            description: "Pure roofline: datasheet peaks and bandwidth, no overheads.".into(),
            speed: Speed {
                memory_efficiency: BTreeMap::from([("default".to_string(), 1.0)]),
                compute_efficiency: 1.0,
                link_efficiency: 1.0,
                dequant_efficiency: 1.0,
                fp4_efficiency: 1.0,
                attention_efficiency: 1.0,
                expert_memory_efficiency: 1.0,
                gemv_compute_efficiency: 0.0,
                gemm_half_rows: 0.0,
            },
            overheads: Overheads {
                step_overhead_s: 0.0,
                sequence_overhead_s: 0.0,
                layer_overhead_s: 0.0,
                prefill_layer_overhead_s: 0.0,
                expert_overhead_s: 0.0,
                gemv_s_per_gflop: 0.0,
                collective_latency_s: 0.0,
            },
            features: Features {
                fp4_tensor_cores: true,
                int8_mma: false,
                fp16_accumulate: false,
                warpgroup_mma: true,
                kv_concat: false,
                fp32_scores: false,
            },
            scheduler: Scheduler {
                max_batched_tokens: None,
                max_num_seqs: None,
                kv_block_tokens: None,
            },
            footprint: Footprint {
                overhead_bytes: 0.0,
                reserve_fraction: 0.0,
            },
            devices: Vec::new(),
            provenance: Provenance::default(),
            override_builtin: false,
        }
    }

    /// Whether this profile predicts as the pure roofline does ([`Engine::ideal`]'s
    /// factors, whatever its name).
    pub fn is_physics(&self) -> bool {
        static IDEAL: OnceLock<Engine> = OnceLock::new();
        self.same_factors(IDEAL.get_or_init(Engine::ideal))
    }

    /// Whether two profiles predict the same (every factor equal; names, descriptions
    /// and provenance aside).
    pub fn same_factors(&self, other: &Engine) -> bool {
        self.speed == other.speed
            && self.overheads == other.overheads
            && self.features == other.features
            && self.scheduler == other.scheduler
            && self.footprint == other.footprint
            && self.devices == other.devices
    }

    /// Fraction of bandwidth reached on `hw`: a device override's
    /// `memory_efficiency` where one selects `hw`, else the first of `memory_keys`
    /// present, else `default`, else 1.
    pub fn memory_efficiency(&self, hw: &Hardware) -> f64 {
        if let Some(v) = self.device_value(DeviceFactor::MemoryEfficiency, hw) {
            return v;
        }
        memory_keys(hw)
            .into_iter()
            .flatten()
            .find_map(|k| self.speed.memory_efficiency.get(k))
            .or_else(|| self.speed.memory_efficiency.get("default"))
            .copied()
            .unwrap_or(1.0)
    }

    /// Checks every factor's range; `src` names the file in errors.
    pub fn check(&self, src: &str) -> Result<()> {
        self.validate(src)
    }

    /// What the engine's matmul kernels do with low-precision weights.
    pub(crate) fn kernels(&self) -> crate::model::graph::Kernels {
        crate::model::graph::Kernels {
            fp4: self.features.fp4_tensor_cores,
            int8_mma: self.features.int8_mma,
            kv_concat: self.features.kv_concat,
            fp32_scores: self.features.fp32_scores,
        }
    }

    /// Per-op efficiency on `hw` (no per-op overhead; overheads are added per pass).
    pub fn efficiency(&self, hw: &Hardware) -> Efficiency {
        Efficiency {
            compute: self.compute_efficiency_on(hw),
            memory: self.memory_efficiency(hw),
            link: self.speed.link_efficiency,
            overhead_s: 0.0,
        }
    }

    /// The value of `factor` on `hw`: the first override in [`Engine::devices`] that
    /// selects `hw` and sets it, else `None`.
    pub(crate) fn device_value(&self, factor: DeviceFactor, hw: &Hardware) -> Option<f64> {
        self.devices
            .iter()
            .filter(|o| o.select.matches(hw))
            .find_map(|o| factor.of(o))
    }

    /// Fraction of `hw`'s dense peak reached: a device override's
    /// `compute_efficiency` where one selects `hw` (Apple GPUs, RDNA GPUs), else
    /// [`Speed::compute_efficiency`].
    pub fn compute_efficiency_on(&self, hw: &Hardware) -> f64 {
        self.device_value(DeviceFactor::ComputeEfficiency, hw)
            .unwrap_or(self.speed.compute_efficiency)
    }

    /// Time per routed expert matrix a GEMM-path pass visits on `hw`: a device
    /// override's `expert_overhead_s` where one selects `hw` (RDNA GPUs), else
    /// [`Overheads::expert_overhead_s`].
    pub fn expert_overhead_on(&self, hw: &Hardware) -> f64 {
        self.device_value(DeviceFactor::ExpertOverhead, hw)
            .unwrap_or(self.overheads.expert_overhead_s)
    }

    /// Time per GFLOP the matrix-vector kernels add on `hw`: a device override's
    /// `gemv_s_per_gflop` where one selects `hw`, else [`Overheads::gemv_s_per_gflop`].
    pub fn gemv_s_per_gflop_on(&self, hw: &Hardware) -> f64 {
        self.device_value(DeviceFactor::GemvTime, hw)
            .unwrap_or(self.overheads.gemv_s_per_gflop)
    }

    /// Fraction of the peak at which the matrix-vector kernels' rows past the first do
    /// their multiply-adds on `hw` (0: none): a device override's
    /// `gemv_compute_efficiency` where one selects `hw`, else
    /// [`Speed::gemv_compute_efficiency`].
    pub fn gemv_compute_efficiency_on(&self, hw: &Hardware) -> f64 {
        self.device_value(DeviceFactor::GemvEfficiency, hw)
            .unwrap_or(self.speed.gemv_compute_efficiency)
    }

    /// Which factor prices the matrix-vector kernels' rows past the first on `hw`, and
    /// its value: the time per GFLOP where one is set for `hw` (it wins), else the
    /// fraction of the peak where one is set, else none (their arithmetic overlaps
    /// their loads).
    pub fn gemv_factor_on(&self, hw: &Hardware) -> Option<(DeviceFactor, f64)> {
        let per_gflop = self.gemv_s_per_gflop_on(hw);
        if per_gflop > 0.0 {
            return Some((DeviceFactor::GemvTime, per_gflop));
        }
        let efficiency = self.gemv_compute_efficiency_on(hw);
        (efficiency > 0.0).then_some((DeviceFactor::GemvEfficiency, efficiency))
    }

    /// Fraction of the memory efficiency a routed expert's weight matmuls reach on `hw`:
    /// a device override's `expert_memory_efficiency` where one selects `hw`, else
    /// [`Speed::expert_memory_efficiency`].
    pub fn expert_memory_efficiency_on(&self, hw: &Hardware) -> f64 {
        self.device_value(DeviceFactor::ExpertMemoryEfficiency, hw)
            .unwrap_or(self.speed.expert_memory_efficiency)
    }

    /// The override with exactly `select`'s criteria, if any.
    pub fn device_override(&self, select: &Selector) -> Option<&DeviceOverride> {
        self.devices.iter().find(|o| &o.select == select)
    }

    /// `factor` as the override with exactly `select`'s criteria stores it (`None`:
    /// unset, or no such override).
    pub fn override_value(&self, select: &Selector, factor: DeviceFactor) -> Option<f64> {
        self.device_override(select).and_then(|o| factor.of(o))
    }

    /// Clears `factor` from every override (dropping those left setting nothing) and
    /// returns what each set, with its selector.
    pub fn take_device_factor(&mut self, factor: DeviceFactor) -> Vec<(Selector, f64)> {
        let taken = self
            .devices
            .iter_mut()
            .filter_map(|o| Some((o.select.clone(), factor.slot(o).take()?)))
            .collect();
        self.devices.retain(|o| !o.is_empty());
        taken
    }

    /// Sets (`Some`) or clears (`None`) `factor` in the override with exactly `select`'s
    /// criteria, adding the override at the end if there is none; an override left
    /// setting nothing is removed.
    pub fn set_override(&mut self, select: &Selector, factor: DeviceFactor, v: Option<f64>) {
        match self.devices.iter().position(|o| &o.select == select) {
            Some(i) => *factor.slot(&mut self.devices[i]) = v,
            None if v.is_some() => {
                let mut o = DeviceOverride {
                    select: select.clone(),
                    ..DeviceOverride::default()
                };
                *factor.slot(&mut o) = v;
                self.devices.push(o);
            }
            None => {}
        }
        self.devices.retain(|o| !o.is_empty());
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
        let sp = &self.speed;
        let oh = &self.overheads;
        frac("compute_efficiency", sp.compute_efficiency)?;
        frac("link_efficiency", sp.link_efficiency)?;
        frac("dequant_efficiency", sp.dequant_efficiency)?;
        frac("fp4_efficiency", sp.fp4_efficiency)?;
        frac("attention_efficiency", sp.attention_efficiency)?;
        frac("expert_memory_efficiency", sp.expert_memory_efficiency)?;
        // 0: none (the kernels overlap the arithmetic with the loads)
        let gemv_frac = |field: &str, v: f64| if v == 0.0 { Ok(()) } else { frac(field, v) };
        gemv_frac("gemv_compute_efficiency", sp.gemv_compute_efficiency)?;
        if sp.memory_efficiency.is_empty() {
            return Err(bad(
                "memory_efficiency".into(),
                "needs at least a `default` entry".into(),
            ));
        }
        for (k, v) in &sp.memory_efficiency {
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
        let mut ranges = vec![
            ("step_overhead_s".to_string(), oh.step_overhead_s, 1.0),
            ("sequence_overhead_s".into(), oh.sequence_overhead_s, 0.1),
            ("layer_overhead_s".into(), oh.layer_overhead_s, 0.1),
            (
                "prefill_layer_overhead_s".into(),
                oh.prefill_layer_overhead_s,
                0.1,
            ),
            ("expert_overhead_s".into(), oh.expert_overhead_s, 0.01),
            ("gemv_s_per_gflop".into(), oh.gemv_s_per_gflop, 0.01),
            ("collective_latency_s".into(), oh.collective_latency_s, 1.0),
            ("gemm_half_rows".into(), sp.gemm_half_rows, 65536.0),
            ("overhead_bytes".into(), self.footprint.overhead_bytes, 1e13),
        ];
        for (i, o) in self.devices.iter().enumerate() {
            let at = format!("device[{i}] ({})", o.select.describe());
            if let Some(p) = o.select.problem() {
                return Err(bad(at, p));
            }
            if self.devices[..i].iter().any(|p| p.select == o.select) {
                return Err(bad(
                    at,
                    "selects the same devices as an earlier entry".into(),
                ));
            }
            if o.is_empty() {
                return Err(bad(
                    at,
                    "sets no factor: give compute_efficiency, expert_memory_efficiency, expert_overhead_s, gemv_compute_efficiency, gemv_s_per_gflop or memory_efficiency"
                        .into(),
                ));
            }
            if let Some(e) = o.compute_efficiency {
                frac(&format!("{at}.compute_efficiency"), e)?;
            }
            if let Some(e) = o.memory_efficiency {
                frac(&format!("{at}.memory_efficiency"), e)?;
            }
            if let Some(e) = o.expert_memory_efficiency {
                frac(&format!("{at}.expert_memory_efficiency"), e)?;
            }
            if let Some(e) = o.gemv_compute_efficiency {
                gemv_frac(&format!("{at}.gemv_compute_efficiency"), e)?;
            }
            if let Some(s) = o.expert_overhead_s {
                ranges.push((format!("{at}.expert_overhead_s"), s, 0.01));
            }
            if let Some(s) = o.gemv_s_per_gflop {
                ranges.push((format!("{at}.gemv_s_per_gflop"), s, 0.01));
            }
        }
        for (field, v, max) in ranges {
            if !(v.is_finite() && (0.0..=max).contains(&v)) {
                return Err(bad(field, format!("must be in [0, {max:e}], got {v}")));
            }
        }
        let reserve = self.footprint.reserve_fraction;
        if !(reserve.is_finite() && (0.0..1.0).contains(&reserve)) {
            return Err(bad(
                "reserve_fraction".into(),
                format!("must be in [0, 1), got {reserve}"),
            ));
        }
        let sc = &self.scheduler;
        for (field, v, max) in [
            ("max_batched_tokens", sc.max_batched_tokens, u64::MAX),
            ("max_num_seqs", sc.max_num_seqs, MAX_SCHEDULER_COUNT),
            ("kv_block_tokens", sc.kv_block_tokens, MAX_SCHEDULER_COUNT),
        ] {
            if let Some(v) = v.filter(|&v| v == 0 || v > max) {
                return Err(bad(field.into(), format!("must be in 1..={max}, got {v}")));
            }
        }
        Ok(())
    }
}

/// A set of engines by id, and for some of them the profile fitted on top of measured
/// kernel tables.
#[derive(Debug, Clone, Default)]
pub struct EngineDb {
    engines: Vec<Engine>,
    /// Profiles fitted with the kernel tables read where they cover an op (a per-pass
    /// overhead, no per-layer one), by engine id: what a prediction that reads a
    /// table uses in place of the engine's own ([`EngineDb::on_tables`]).
    on_tables: Vec<Engine>,
}

impl EngineDb {
    /// Parses an engines TOML document (tables named by engine id).
    /// A table's `base` names another table of the document.
    pub fn from_toml(text: &str, src: &str) -> Result<EngineDb> {
        Ok(EngineDb {
            engines: file::parse(text, src, &[])?,
            on_tables: Vec::new(),
        })
    }

    /// The built-in profiles, with the built-in profiles fitted on the kernel tables.
    pub fn builtin() -> Result<&'static EngineDb> {
        static DB: OnceLock<Result<EngineDb>> = OnceLock::new();
        DB.get_or_init(|| {
            EngineDb::from_toml(BUILTIN_ENGINES_TOML, "data/engines.toml")?
                .with_tables_toml(BUILTIN_KERNEL_ENGINES_TOML, "data/engines-kernels.toml")
        })
        .as_ref()
        .map_err(Clone::clone)
    }

    /// `self` with the profiles of an engines TOML document (the schema of
    /// data/engines.toml, as `calibrate --kernels --save` writes it) as the engines'
    /// profiles on kernel tables; each must name an engine of `self`, and replaces a
    /// profile on tables it had.
    pub(crate) fn with_tables_toml(mut self, text: &str, src: &str) -> Result<EngineDb> {
        for mut e in file::parse(text, src, &self.engines)? {
            if self.get_exact(&e.id).is_none() {
                return Err(Error::Parse {
                    source_name: src.to_string(),
                    message: format!(
                        "[{}] is no engine: a profile on kernel tables refits an engine of the engines file",
                        e.id
                    ),
                });
            }
            self.on_tables.retain(|x| x.id != e.id);
            e.provenance.on_tables = true;
            self.on_tables.push(e);
        }
        Ok(self)
    }

    /// The profile of engine `id` fitted on top of the kernel tables, if it has one: a
    /// prediction that reads a table under `id` uses it in place of the engine's own
    /// (whose per-layer overhead stands in for launch costs a measured kernel includes).
    pub fn on_tables(&self, id: &str) -> Option<&Engine> {
        self.on_tables.iter().find(|e| e.id == id)
    }

    /// The engine of exactly this id.
    fn get_exact(&self, id: &str) -> Option<&Engine> {
        self.engines.iter().find(|e| e.id == id)
    }

    /// Adds engines from a user's TOML file; returns the ids of engines it replaced.
    /// An engine with an id already loaded needs `override = true`, and the pure
    /// roofline `ideal` cannot be replaced; a replaced engine loses its profile on
    /// kernel tables ([`EngineDb::on_tables`]).
    pub fn load_file(&mut self, path: &std::path::Path) -> Result<Vec<String>> {
        let text = crate::files::read_document(path)?;
        self.load_toml(&text, &path.display().to_string())
    }

    /// Adds engines from an engines TOML document, as [`EngineDb::load_file`] does
    /// from a file (`src` names it in errors); returns the ids of engines it replaced.
    pub fn load_toml(&mut self, text: &str, src: &str) -> Result<Vec<String>> {
        let src = src.to_string();
        // a base may also be an engine loaded before (a built-in one)
        let other = EngineDb {
            engines: file::parse(text, &src, &self.engines)?,
            on_tables: Vec::new(),
        };
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
            // a replaced engine's profile on tables was fitted for the one it replaces
            self.on_tables.retain(|x| x.id != e.id);
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
