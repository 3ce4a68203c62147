//! The command line's shape: clap structs with the shared option groups flattened,
//! kinds parsed by their library types, ranges checked by the parser, and the
//! conversions from arguments to the library's request types. No calculation here.

use crate::Result;
use crate::dtype::Format;
use crate::memory::Parallel;
use crate::predict::{MAX_COUNT, Scenario};
use crate::train::{
    LoraTargets, Loss, Method, Offload, Optimizer, Recompute, TrainConfig, TrainPrecision,
    TrainStack,
};
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

mod calibration;
pub use calibration::CalibrateArgs;
mod capture;
pub mod charts;
pub mod commands;
mod context;
mod embed;
mod emit;
mod groups;
pub use embed::{OptionInfo, options, sweep_columns_args};
pub use groups::{AttentionArgs, DecodingArgs, EmitArgs, RunArgs, SpecArgs};
mod html;
pub mod progress;
mod run;
pub use charts::Chart;
pub use run::{RunOptions, chart_args, flag_of, parse, run, run_args, run_args_with};
mod simulate;
pub use simulate::{PlanRateArgs, SimulateArgs};

/// Most devices a layout may have (the library's own limit).
const MAX_DEVICES: u64 = 1_000_000;

/// The whole command line: global options and one command.
#[derive(Parser)]
#[command(
    name = "ridgeline",
    version,
    about = "Will it fit, and how fast will it run? LLM rooflines for GPUs.",
    long_about = None
)]
pub struct Cli {
    /// Print exactly one JSON document on stdout.
    #[arg(long, global = true)]
    pub json: bool,
    /// Extra hardware definitions (TOML, same schema as data/hardware/*.toml).
    #[arg(long = "hardware-file", global = true, value_name = "FILE")]
    pub hardware_files: Vec<PathBuf>,
    /// Extra engine profiles (TOML, same schema as data/engines.toml).
    #[arg(long = "engine-file", global = true, value_name = "FILE")]
    pub engine_files: Vec<PathBuf>,
    /// Extra cloud instance shapes (TOML, same schema as data/instances.toml).
    #[arg(long = "instances-file", global = true, value_name = "FILE")]
    pub instances_files: Vec<PathBuf>,
    /// Negotiated or other prices (TOML, same schema as data/prices.toml): each device
    /// the file names is priced from the file alone.
    #[arg(long = "price-file", global = true, value_name = "FILE")]
    pub price_files: Vec<PathBuf>,
    /// Price devices from one provider's offers only (`aws`, `runpod`, `lambda`, ...);
    /// devices it does not rent are unpriced.
    #[arg(long, global = true, value_name = "NAME")]
    pub provider: Option<String>,
    /// No progress line on stderr (none is drawn when stderr is not a terminal).
    #[arg(long, global = true)]
    pub quiet: bool,
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// The commands and their own options.
#[derive(Subcommand)]
pub enum Command {
    /// List devices, or `hardware show ID` for one device with sources.
    Hardware {
        /// `show ID`, or none to list.
        #[command(subcommand)]
        action: Option<HardwareAction>,
    },
    /// List bundled models with parameter counts.
    Models,
    /// Predict memory, TTFT, per-token latency and tokens/s for one configuration.
    Predict {
        /// The options of the command.
        #[command(flatten)]
        args: PredictArgs,
        /// Print a Markdown report instead of text.
        #[arg(long, conflicts_with_all = ["json", "max"])]
        markdown: bool,
        /// Print only the planning limits: the largest batch that fits at this prompt
        /// and gen, and the longest context that fits at this batch.
        #[arg(long)]
        max: bool,
        /// Also write a chart (SVG) to FILE; --chart picks which.
        #[arg(long, value_name = "FILE")]
        svg: Option<PathBuf>,
        /// Chart for --svg: decode throughput and latency vs batch (the default), the
        /// roofline with the model's ops, or memory per weight format.
        #[arg(long, value_enum, requires = "svg")]
        chart: Option<ChartArg>,
        /// Also write a self-contained HTML report to FILE (inputs, tables, the
        /// explanation, inline charts; readable offline and printable).
        #[arg(long, value_name = "FILE.html")]
        html: Option<PathBuf>,
        /// `--emit FORMAT [--out FILE]`: the launch files.
        #[command(flatten)]
        emit: EmitArgs,
    },
    /// Plain-language report: what binds, why, and what would help.
    Explain {
        /// The options of the command.
        #[command(flatten)]
        args: PredictArgs,
        /// Also write the roofline chart (ops placed on the device's roofs) as SVG.
        #[arg(long, value_name = "FILE.svg")]
        svg: Option<PathBuf>,
        /// Also write a self-contained HTML report to FILE (inputs, tables, the
        /// explanation, inline charts; readable offline and printable).
        #[arg(long, value_name = "FILE.html")]
        html: Option<PathBuf>,
    },
    /// Evaluate every combination of LISTs in parallel; CSV rows (default) or --json.
    ///
    /// LIST: comma-separated values and inclusive ranges, mixed freely: `1,2,4`, `1..64`,
    /// `128..8192:x2` (geometric), `0..1000:+50` (arithmetic). Rows come in the order
    /// model, gpu, gpus, batch, prompt, gen, weights, kv, engine (outermost first); a
    /// combination that cannot be laid out is a row with an `error` column, and a count of
    /// them goes to stderr.
    Sweep {
        /// The options of the command.
        #[command(flatten)]
        args: SweepArgs,
    },
    /// Cheapest configuration meeting latency/throughput targets, and the Pareto front;
    /// with --train, the cheapest and fastest way to train on --tokens.
    ///
    /// Searches devices (default: those with a price), counts 1, 2, 4, 8 (tp or pp) and
    /// 16, 32 (pp), weight and KV formats and batch sizes; ranks by USD per million output
    /// tokens (price x gpus / output tokens per hour) and says which target binds. With
    /// --train: devices (or --instances), counts 1..64, tp x pp x dp layouts, methods,
    /// ZeRO, recomputation, offload and micro-batches; hours = tokens / (tokens/s x
    /// 3600), cost = hours x price x devices.
    Plan {
        /// The options of the command.
        #[command(flatten)]
        args: PlanArgs,
        /// The training-plan options (`--train`).
        #[command(flatten)]
        train: PlanTrainArgs,
        /// `--emit FORMAT [--out FILE]`: the launch files.
        #[command(flatten)]
        emit: EmitArgs,
    },
    /// Serve a request rate: continuous batching simulated iteration by iteration.
    ///
    /// Poisson arrivals at each --rate (one row per rate), a closed loop of
    /// --concurrency users, or a --trace; the engine's scheduler (max_num_seqs, chunked
    /// prefill up to max_batched_tokens, KV cache in blocks, preemption by recompute);
    /// iterations costed with predict's op costs. Prints TTFT, TPOT, end-to-end and
    /// queueing percentiles, throughput, the batch and KV use, and with several rates
    /// the saturation knee and what binds there.
    Simulate {
        /// The options of the command.
        #[command(flatten)]
        args: SimulateArgs,
        /// Also write a chart (SVG): p50/p99 TTFT and TPOT against rate with the knee,
        /// and a timeline of the batch and KV cache use at one rate.
        #[arg(long, value_name = "FILE.svg")]
        svg: Option<PathBuf>,
        /// `--emit FORMAT [--out FILE]`: the launch files.
        #[command(flatten)]
        emit: EmitArgs,
    },
    /// Cloud instance shapes (devices, links, host memory, network, on-demand price).
    Instances,
    /// Measured kernel tables: coverage by device, engine, version and op class.
    Kernels {
        /// A kernel database in the importer's schema (`<DIR>/<device>/<engine>.csv`,
        /// see docs/kernels.md): adds or replaces tables.
        #[arg(long = "kernels", value_name = "DIR")]
        kernels: Option<PathBuf>,
    },
    /// Training: memory per device and step time (ZeRO, 3D parallelism, LoRA/QLoRA).
    Train {
        /// The options of the command.
        #[command(flatten)]
        args: TrainArgs,
        /// Also write a chart of memory per device at ZeRO stages 0-3 (SVG).
        #[arg(long, value_name = "FILE.svg")]
        svg: Option<PathBuf>,
        /// `--emit FORMAT [--out FILE]`: the launch files.
        #[command(flatten)]
        emit: EmitArgs,
    },
    /// Fit engine efficiency factors to published measurements (CSV) and report errors.
    Calibrate {
        /// The options of the command.
        #[command(flatten)]
        args: CalibrateArgs,
    },
    /// A local web page and JSON API over the library: pick a model and devices, see
    /// the numbers, the charts and the explanation.
    ///
    /// `GET /` is the page; `GET /api/<command>?<flags>` returns the command's JSON
    /// (`?model=llama-3-8b&gpu=h100&batch=8`); `GET /api/<chart>.svg?<flags>` a chart.
    /// Nothing is read from or written to files. Ctrl-C stops it.
    Serve {
        /// The options of the command.
        #[command(flatten)]
        args: ServeArgs,
    },
    /// Roofline chart (SVG) of the model's ops on one or more devices (--gpu G,G2,...).
    Roofline {
        /// The options of the command.
        #[command(flatten)]
        args: PredictArgs,
        /// Output SVG file (`-` for stdout).
        #[arg(long, value_name = "FILE.svg")]
        out: PathBuf,
        /// Draw the host-link and scale-up-link slopes (by default: the host link with
        /// --offload cpu, the scale-up link with --gpus > 1).
        #[arg(long)]
        links: bool,
    },
}

/// Options of `ridgeline serve`.
#[derive(Args, Clone)]
pub struct ServeArgs {
    /// Address to listen on (127.0.0.1: this machine only; 0.0.0.0: every interface).
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// Port to listen on (0: any free port).
    #[arg(long, default_value_t = 8080)]
    pub port: u16,
}

/// What `hardware` does besides listing.
#[derive(Subcommand)]
pub enum HardwareAction {
    /// One device with every number and its sources.
    Show {
        /// Device id or alias (e.g. h100, a100-80gb-sxm, 4090).
        id: String,
    },
}

/// The chart `predict --svg` writes.
#[derive(ValueEnum, Clone, Copy, PartialEq, Eq)]
pub enum ChartArg {
    /// Decode throughput and latency against batch.
    Throughput,
    /// The roofline with the model's ops.
    Roofline,
    /// Memory per device by weight format.
    Memory,
}

/// Whether weights that do not fit stream from host memory.
#[derive(ValueEnum, Clone, Copy, PartialEq, Eq)]
pub enum OffloadArg {
    /// Everything in device memory.
    None,
    /// Weights that do not fit stream over the host link every pass.
    Cpu,
}

/// Options shared by predict, explain and roofline.
#[derive(Args, Clone)]
pub struct PredictArgs {
    /// Model id (see `ridgeline models`) or path to a Hugging Face config.json.
    #[arg(long)]
    pub model: String,
    /// Device id or alias (see `ridgeline hardware`).
    #[arg(long)]
    pub gpu: String,
    /// Number of devices.
    #[arg(long, default_value_t = 1, allow_negative_numbers = true, value_parser = clap::value_parser!(u64).range(1..=MAX_DEVICES))]
    pub gpus: u64,
    /// How devices split the model.
    #[arg(long, value_enum, default_value_t = Parallel::Tp)]
    pub parallel: Parallel,
    /// Concurrent sequences.
    #[arg(long, default_value_t = 1, allow_negative_numbers = true, value_parser = clap::value_parser!(u64).range(1..=MAX_COUNT))]
    pub batch: u64,
    /// Prompt tokens per sequence.
    #[arg(long, default_value_t = 512, allow_negative_numbers = true, value_parser = clap::value_parser!(u64).range(0..=MAX_COUNT))]
    pub prompt: u64,
    /// Generated tokens per sequence.
    #[arg(long = "gen", default_value_t = 128, allow_negative_numbers = true, value_parser = clap::value_parser!(u64).range(0..=MAX_COUNT))]
    pub gen_tokens: u64,
    /// Formats, engine and attention kernel.
    #[command(flatten)]
    pub run: RunArgs,
    /// Stream weights that do not fit from host memory over PCIe.
    #[arg(long, value_enum, default_value_t = OffloadArg::None)]
    pub offload: OffloadArg,
    /// Expert parallelism and speculative decoding.
    #[command(flatten)]
    pub decoding: DecodingArgs,
    /// Measured kernel tables for the ops they cover (dense matmuls, softmax attention,
    /// routed-expert blocks, a decode step's latent attention, tensor-parallel
    /// all-reduces; `source` in the op table, docs/kernels.md), read where a table
    /// covers the device and the engine's backend (TensorRT-LLM, vLLM, SGLang):
    /// `bundled` (data/kernels, the default), `none` (every op at the engine's fitted
    /// costs), or a directory in the importer's schema, whose tables add to or replace
    /// the bundled ones.
    #[arg(long = "kernels", default_value = "bundled", value_name = "none|bundled|DIR", value_parser = KernelsArg::parse)]
    pub kernels: KernelsArg,
}

/// `--kernels`: which measured kernel tables the cost model reads.
#[derive(Debug, Clone, PartialEq)]
pub enum KernelsArg {
    /// None: every op at the engine's fitted costs.
    None,
    /// The bundled tables (data/kernels).
    Bundled,
    /// The bundled tables with a directory's added.
    Dir(PathBuf),
}

impl KernelsArg {
    /// `none`, `bundled`, or a directory path.
    pub fn parse(s: &str) -> std::result::Result<KernelsArg, String> {
        match s.trim() {
            "" => Err("give none, bundled or a directory".into()),
            "none" => Ok(KernelsArg::None),
            "bundled" => Ok(KernelsArg::Bundled),
            dir => Ok(KernelsArg::Dir(PathBuf::from(dir))),
        }
    }

    /// The tables it names (`None` for `none`; the bundled ones are not copied); a
    /// directory that does not load is an error naming `kernels`.
    pub fn load(&self) -> Result<Option<std::borrow::Cow<'static, crate::kernels::KernelDb>>> {
        use std::borrow::Cow;
        let bundled = crate::kernels::KernelDb::builtin;
        match self {
            KernelsArg::None => Ok(None),
            KernelsArg::Bundled => Ok(Some(Cow::Borrowed(bundled()?))),
            KernelsArg::Dir(d) => {
                let mut db = bundled()?.clone();
                db.load_dir(d)
                    .map_err(|e| crate::Error::invalid("kernels", e.to_string()))?;
                Ok(Some(Cow::Owned(db)))
            }
        }
    }
}

impl PredictArgs {
    /// The library's scenario.
    pub fn scenario(&self) -> Scenario {
        Scenario {
            batch: self.batch,
            prompt: self.prompt,
            gen_tokens: self.gen_tokens,
            weights: self.run.weights,
            expert_weights: self.run.expert_weights,
            kv: self.run.kv,
            gpus: self.gpus,
            parallel: self.parallel,
            ep: self.decoding.ep,
            flash: self.run.attention.fused(),
            offload: self.offload == OffloadArg::Cpu,
            spec: self.decoding.speculation(),
            inter_node_bytes_per_s: self.decoding.inter_node_bw,
            overlap_ep: self.decoding.overlap_ep,
            expert_imbalance: self.decoding.expert_imbalance,
        }
    }
}

/// Options of `ridgeline train`.
#[derive(Args, Clone)]
pub struct TrainArgs {
    /// Model id (see `ridgeline models`) or path to a Hugging Face config.json.
    #[arg(long)]
    pub model: String,
    /// Device id or alias (see `ridgeline hardware`).
    #[arg(
        long,
        required_unless_present = "instance",
        conflicts_with = "instance"
    )]
    pub gpu: Option<String>,
    /// A cloud instance shape (see `ridgeline instances`): its device, link, devices per
    /// node and network between instances.
    #[arg(long, conflicts_with = "inter_node_bw")]
    pub instance: Option<String>,
    /// Number of devices (tp x pp x dp).
    #[arg(long, default_value_t = 1, allow_negative_numbers = true, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    pub gpus: u64,
    /// Tensor-parallel degree.
    #[arg(long, default_value_t = 1, allow_negative_numbers = true, value_parser = clap::value_parser!(u64).range(1..))]
    pub tp: u64,
    /// Pipeline-parallel degree.
    #[arg(long, default_value_t = 1, allow_negative_numbers = true, value_parser = clap::value_parser!(u64).range(1..))]
    pub pp: u64,
    /// Context-parallel degree: each sequence split over this many ranks, keys and
    /// values passed around them in a ring (Megatron-Core's context parallelism; gpus =
    /// tp x cp x pp x dp; needs flash attention and a seq that 2 x cp divides).
    #[arg(long, default_value_t = 1, allow_negative_numbers = true, value_parser = clap::value_parser!(u64).range(1..))]
    pub cp: u64,
    /// Expert-parallel degree: routed experts split over this many data-parallel ranks
    /// (MoE models; divides dp and the experts).
    #[arg(long, default_value_t = 1, allow_negative_numbers = true, value_parser = clap::value_parser!(u64).range(1..))]
    pub ep: u64,
    /// ZeRO stage: 0, 1 (optimizer states sharded), 2 (+ gradients), 3 (+ weights).
    #[arg(long, default_value_t = 0, allow_negative_numbers = true, value_parser = clap::value_parser!(u64).range(0..=3))]
    pub zero: u64,
    /// Sequences per micro-batch per data-parallel rank.
    #[arg(long = "micro-batch", default_value_t = 1, allow_negative_numbers = true, value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    pub micro_batch: u64,
    /// Sequences per optimizer step (default: micro-batch x dp, x 4pp with pipelining).
    #[arg(long = "global-batch", allow_negative_numbers = true, value_parser = clap::value_parser!(u64).range(1..))]
    pub global_batch: Option<u64>,
    /// Tokens per sequence.
    #[arg(long, default_value_t = 2048, allow_negative_numbers = true, value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    pub seq: u64,
    /// full, lora or qlora.
    #[arg(long, default_value = "full", value_parser = Method::parse)]
    pub method: Method,
    /// LoRA rank (adapters on q and v) [default: 8 with lora and qlora].
    #[arg(long = "lora-rank", allow_negative_numbers = true, value_parser = clap::value_parser!(u64).range(1..))]
    pub lora_rank: Option<u64>,
    /// Activation recomputation: none, selective, full.
    #[arg(long, default_value = "none", value_parser = Recompute::parse)]
    pub recompute: Recompute,
    /// Precision: bf16, fp16, fp8 (mixed, fp32 master weights) or bf16-pure (weights,
    /// gradients and optimizer states in bf16).
    #[arg(long, default_value = "bf16", value_parser = TrainPrecision::parse)]
    pub precision: TrainPrecision,
    /// Matrices LoRA adapts: all_linear (every projection of attention and MLP, PEFT's
    /// `target_modules="all-linear"`), query_value (the LoRA paper's q and v).
    #[arg(long = "lora-targets", default_value = "all_linear", value_parser = LoraTargets::parse)]
    pub lora_targets: LoraTargets,
    /// Optimizer: adamw, sgd, adafactor, adamw8bit.
    #[arg(long, default_value = "adamw", value_parser = Optimizer::parse)]
    pub optimizer: Optimizer,
    /// Fuse the optimizer step into the backward pass: one layer's gradients held at a
    /// time (needs one micro-batch per step).
    #[arg(long = "optimizer-in-backward")]
    pub optimizer_in_backward: bool,
    /// Compiled step (torch.compile-class fusion of residual adds, gated activations
    /// and RoPE into their neighbours).
    #[arg(long)]
    pub compile: bool,
    /// Training stack whose calibrated efficiencies apply: generic (PyTorch FSDP/DDP,
    /// torchtune, Hugging Face, JAX MaxText) or megatron (Megatron-Core / NeMo with
    /// TransformerEngine).
    #[arg(long, default_value = "generic", value_parser = TrainStack::parse)]
    pub stack: TrainStack,
    /// How the loss holds the logits: fused (a fused or chunked cross-entropy: 16-bit
    /// logits + fp32 log-probabilities) or upcast (logits upcast to fp32 first, as
    /// Hugging Face transformers before v4.45).
    #[arg(long, default_value = "fused", value_parser = Loss::parse)]
    pub loss: Loss,
    /// Optimizer states in host memory: none, cpu.
    #[arg(long, default_value = "none", value_parser = Offload::parse)]
    pub offload: Offload,
    /// Interleaved pipeline: model chunks per device.
    #[arg(long = "virtual-stages", default_value_t = 1, allow_negative_numbers = true, value_parser = clap::value_parser!(u64).range(1..))]
    pub virtual_stages: u64,
    /// Inter-node network bandwidth per GPU, bytes/s (400 Gb/s InfiniBand = 50e9).
    #[arg(long = "inter-node-bw", allow_negative_numbers = true, default_value_t = crate::train::DEFAULT_INTER_NODE_BYTES_PER_S)]
    pub inter_node_bw: f64,
    /// Multi-token-prediction modules trained beside the model (DeepSeek-V3 trains one):
    /// each one layer of the last kind and a projection on the last stage, taking a
    /// layer's place in the pipeline partition, with the shared lm_head run again
    /// [default: none].
    #[arg(long, allow_negative_numbers = true, value_parser = clap::value_parser!(u64).range(0..=crate::train::MAX_MTP_MODULES))]
    pub mtp: Option<u64>,
    /// Hide each micro-batch's expert all-to-all behind an adjacent micro-batch's
    /// computation (Megatron-Core's `--overlap-moe-expert-parallel-comm`, DeepSeek's
    /// DualPipe); with `--ep` above 1.
    #[arg(long = "overlap-ep")]
    pub overlap_ep: bool,
    /// Routed tokens on the busiest expert-parallel rank over the mean: its experts'
    /// work and all-to-all traffic, which every step waits for (1: balanced; at most
    /// `--ep`); with `--ep` above 1.
    #[arg(
        long = "expert-imbalance",
        default_value_t = 1.0,
        allow_negative_numbers = true
    )]
    pub expert_imbalance: f64,
    /// Naive attention that materializes the score matrix.
    #[arg(long = "no-flash")]
    pub no_flash: bool,
    /// Tensor parallelism without sequence parallelism.
    #[arg(long = "no-sequence-parallel")]
    pub no_sequence_parallel: bool,
}

impl TrainArgs {
    /// The library's training configuration.
    pub fn config(&self) -> TrainConfig {
        TrainConfig {
            gpus: self.gpus,
            tp: self.tp,
            pp: self.pp,
            cp: self.cp,
            ep: self.ep,
            zero: self.zero,
            micro_batch: self.micro_batch,
            global_batch: self.global_batch,
            seq: self.seq,
            method: self.method,
            lora_rank: self.lora_rank,
            recompute: self.recompute,
            precision: self.precision,
            lora_targets: self.lora_targets,
            optimizer: self.optimizer,
            offload: self.offload,
            optimizer_in_backward: self.optimizer_in_backward,
            compile: self.compile,
            stack: self.stack,
            loss: self.loss,
            sequence_parallel: !self.no_sequence_parallel,
            flash: !self.no_flash,
            virtual_stages: self.virtual_stages,
            inter_node_bytes_per_s: self.inter_node_bw,
            mtp: self.mtp,
            overlap_ep: self.overlap_ep,
            expert_imbalance: self.expert_imbalance,
            ..TrainConfig::default()
        }
    }
}

/// Options of `ridgeline sweep`: every LIST takes `1,2,4`, `1..64`, `128..8192:x2`,
/// `0..1000:+50`, mixed freely.
#[derive(Args, Clone)]
pub struct SweepArgs {
    /// Model ids or config.json paths, comma-separated.
    #[arg(long)]
    pub model: String,
    /// Device ids or aliases, comma-separated.
    #[arg(long)]
    pub gpu: String,
    /// Device counts (LIST).
    #[arg(long, default_value = "1")]
    pub gpus: String,
    /// How devices split the model.
    #[arg(long, value_enum, default_value_t = Parallel::Tp)]
    pub parallel: Parallel,
    /// Concurrent sequences (LIST).
    #[arg(long, default_value = "1")]
    pub batch: String,
    /// Prompt tokens per sequence (LIST).
    #[arg(long, default_value = "512")]
    pub prompt: String,
    /// Generated tokens per sequence (LIST).
    #[arg(long = "gen", default_value = "128")]
    pub gen_tokens: String,
    /// Weight formats, comma-separated; `native` is each model's own dtype.
    #[arg(long, default_value = "native")]
    pub weights: String,
    /// KV-cache formats, comma-separated; `native` is the activation dtype.
    #[arg(long, default_value = "native")]
    pub kv: String,
    /// Format of a mixture-of-experts model's routed experts in every configuration,
    /// as `predict --expert-weights` (default: each configuration's --weights where it
    /// names one, else the checkpoint's expert format).
    #[arg(long, value_parser = Format::parse)]
    pub expert_weights: Option<Format>,
    /// Engines, comma-separated.
    #[arg(long, default_value = "typical")]
    pub engine: String,
    /// Fused or naive attention, for every configuration.
    #[command(flatten)]
    pub attention: AttentionArgs,
    /// Expert parallelism and speculative decoding, for every configuration.
    #[command(flatten)]
    pub decoding: DecodingArgs,
    /// CSV rows (the default; --json for `{"rows": [...]}`).
    #[arg(long)]
    pub csv: bool,
    /// Write to FILE instead of stdout.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Simulate serving at these Poisson request rates, requests/s (LIST), one row per
    /// deployment, prompt, gen and rate (the scheduler chooses the batch).
    #[arg(long, allow_negative_numbers = true)]
    pub rate: Option<String>,
    /// With --rate: requests simulated per row [default: 300].
    #[arg(long, requires = "rate", allow_negative_numbers = true, value_parser = clap::value_parser!(u64).range(1..=crate::simulate::MAX_REQUESTS))]
    pub requests: Option<u64>,
    /// With --rate: seed of the arrivals (the same seed gives the same rows).
    #[arg(long, requires = "rate", allow_negative_numbers = true)]
    pub seed: Option<u64>,
    /// With --rate: the server's host time per request besides the engine's iterations,
    /// ms, in every simulated time to first token and end-to-end latency (as simulate
    /// --request-overhead-ms) [default: the fit in data/front-end.toml; 0 under
    /// --engine ideal].
    #[arg(long = "request-overhead-ms", requires = "rate", value_parser = simulate::front_end_ms, allow_negative_numbers = true)]
    pub request_overhead_ms: Option<f64>,
    /// Measured kernel tables for the ops they cover, as for `predict --kernels`:
    /// `bundled` (the default), `none` or a directory. A configuration a table covers
    /// is evaluated the plain way (a few to tens of microseconds each, not a fraction of
    /// one; `--kernels none` keeps every configuration on the fast path); with --rate
    /// the simulated iterations are costed on them, as for `simulate --kernels`.
    #[arg(long = "kernels", default_value = "bundled", value_name = "none|bundled|DIR", value_parser = KernelsArg::parse)]
    pub kernels: KernelsArg,
}

impl SweepArgs {
    /// The LIST strings as the library takes them.
    pub fn lists(&self) -> crate::sweep::SweepLists<'_> {
        crate::sweep::SweepLists {
            model: &self.model,
            gpu: &self.gpu,
            gpus: &self.gpus,
            batch: &self.batch,
            prompt: &self.prompt,
            gen_tokens: &self.gen_tokens,
            weights: &self.weights,
            kv: &self.kv,
            engine: &self.engine,
            parallel: self.parallel,
            ep: self.decoding.ep,
            spec: self.decoding.speculation(),
            draft: self.decoding.spec.draft.as_deref().unwrap_or(""),
            flash: self.attention.fused(),
            inter_node_bytes_per_s: self.decoding.inter_node_bw,
            overlap_ep: self.decoding.overlap_ep,
            expert_imbalance: self.decoding.expert_imbalance,
            expert_weights: self.expert_weights,
        }
    }
}

/// A target in milliseconds on the command line: finite and > 0.
fn positive(s: &str) -> std::result::Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a number"))?;
    if v.is_finite() && v > 0.0 {
        Ok(v)
    } else {
        Err(format!("must be a finite number > 0, got {s}"))
    }
}

/// Options of `ridgeline plan`.
#[derive(Args, Clone)]
pub struct PlanArgs {
    /// Model id or path to a Hugging Face config.json.
    #[arg(long)]
    pub model: String,
    /// Devices to consider, comma-separated, or `all` (default: every device with a price).
    #[arg(long)]
    pub gpu: Option<String>,
    /// Device counts to consider (LIST; default 1,2,4,8,16,32).
    #[arg(long)]
    pub gpus: Option<String>,
    /// Prompt tokens per request.
    #[arg(long, default_value_t = 512, allow_negative_numbers = true, value_parser = clap::value_parser!(u64).range(0..=MAX_COUNT), conflicts_with = "train")]
    pub prompt: u64,
    /// Generated tokens per request.
    #[arg(long = "gen", default_value_t = 128, allow_negative_numbers = true, value_parser = clap::value_parser!(u64).range(1..=MAX_COUNT), conflicts_with = "train")]
    pub gen_tokens: u64,
    /// Largest acceptable time to first token, ms.
    #[arg(long = "max-ttft-ms", value_parser = positive, allow_negative_numbers = true, conflicts_with = "train")]
    pub max_ttft_ms: Option<f64>,
    /// Largest acceptable mean time per output token, ms.
    #[arg(long = "max-tpot-ms", value_parser = positive, allow_negative_numbers = true, conflicts_with = "train")]
    pub max_tpot_ms: Option<f64>,
    /// Smallest acceptable output tokens/s of one replica (all its devices together).
    #[arg(long = "min-throughput", value_parser = positive, allow_negative_numbers = true, conflicts_with = "train")]
    pub min_throughput: Option<f64>,
    /// Largest acceptable price of one replica, USD per hour.
    #[arg(long = "budget-usd-per-hour", value_parser = positive, allow_negative_numbers = true, conflicts_with = "train")]
    pub budget_usd_per_hour: Option<f64>,
    /// Weight formats to consider, comma-separated (`native` for the model's own;
    /// default: native, fp8 and int8 where the device has those peaks, q8_0, awq-int4).
    #[arg(long, conflicts_with = "train")]
    pub weights: Option<String>,
    /// KV formats to consider, comma-separated (default: native,fp8).
    #[arg(long, conflicts_with = "train")]
    pub kv: Option<String>,
    /// Format of a mixture-of-experts model's routed experts in every configuration, as
    /// `predict --expert-weights` (default: each configuration's weight format where it
    /// names one, else the checkpoint's expert format).
    #[arg(long, value_parser = Format::parse, conflicts_with = "train")]
    pub expert_weights: Option<Format>,
    /// Engines to consider, comma-separated.
    #[arg(long, default_value = "typical", conflicts_with = "train")]
    pub engine: String,
    /// Naive attention that materializes the score matrix.
    #[arg(long = "no-flash")]
    pub no_flash: bool,
    /// Serving at a request rate (`--rate`).
    #[command(flatten)]
    pub rate: PlanRateArgs,
    /// Speculative decoding in every configuration planned (not with --train).
    #[command(flatten)]
    pub spec: SpecArgs,
    /// Network bandwidth per device between scale-up domains (nodes), bytes/s per
    /// direction (400 Gb/s InfiniBand = 50e9): what layouts across nodes communicate
    /// at, serving or training.
    #[arg(long = "inter-node-bw", allow_negative_numbers = true, default_value_t = crate::hardware::DEFAULT_INTER_NODE_BYTES_PER_S)]
    pub inter_node_bw: f64,
    /// Buy or rent: years a purchased device is written off over.
    #[arg(
        long = "own-life-years",
        default_value_t = 3.0,
        allow_negative_numbers = true,
        conflicts_with = "train"
    )]
    pub own_life_years: f64,
    /// Buy or rent: fraction of the hours an owned device does useful work.
    #[arg(
        long = "own-utilisation",
        default_value_t = 0.6,
        allow_negative_numbers = true,
        conflicts_with = "train"
    )]
    pub own_utilisation: f64,
    /// Buy or rent: power usage effectiveness of the room (facility / IT power).
    #[arg(
        long,
        default_value_t = 1.3,
        allow_negative_numbers = true,
        conflicts_with = "train"
    )]
    pub pue: f64,
    /// What configurations are ranked by: `rent` (rental prices) or `own` (the cost of
    /// owning the devices, for devices with a purchase price).
    #[arg(long = "price-basis", default_value = "rent", value_parser = crate::plan::PriceBasis::parse, conflicts_with = "train")]
    pub price_basis: crate::plan::PriceBasis,
    /// Buy or rent: electricity, USD per kWh.
    #[arg(
        long = "usd-per-kwh",
        default_value_t = 0.12,
        allow_negative_numbers = true,
        conflicts_with = "train"
    )]
    pub usd_per_kwh: f64,
    /// Measured kernel tables for the ops they cover, as for `predict --kernels`:
    /// `bundled` (the default), `none` or a directory; with --rate the simulated
    /// iterations are costed on them, as for `simulate --kernels`; not read by --train
    /// (training does not read the tables).
    #[arg(long = "kernels", default_value = "bundled", value_name = "none|bundled|DIR", value_parser = KernelsArg::parse, conflicts_with = "train")]
    pub kernels: KernelsArg,
}

impl PlanArgs {
    /// The buy-or-rent assumptions, checked (errors name the option).
    pub fn ownership(&self) -> crate::Result<crate::hardware::Ownership> {
        let o = crate::hardware::Ownership {
            life_years: self.own_life_years,
            utilisation: self.own_utilisation,
            pue: self.pue,
            usd_per_kwh: self.usd_per_kwh,
        };
        o.validate()?;
        Ok(o)
    }

    /// The targets in SI units.
    pub fn targets(&self) -> crate::plan::Targets {
        crate::plan::Targets {
            max_ttft_s: self.max_ttft_ms.map(|x| x / 1e3),
            max_tpot_s: self.max_tpot_ms.map(|x| x / 1e3),
            min_output_tokens_per_s: self.min_throughput,
            max_usd_per_hour: self.budget_usd_per_hour,
        }
    }
}

/// A count of tokens (`5e8`, `500M`, `1.5B`, `2T`), as clap parses it.
fn token_count(s: &str) -> std::result::Result<u64, String> {
    crate::list::parse_count("--tokens", s).map_err(|e| match e {
        crate::Error::InvalidValue { message, .. } => message,
        other => other.to_string(),
    })
}

/// Training methods to search (`--method`).
#[derive(Clone, Debug)]
pub struct Methods(pub Vec<Method>);

/// `any` or a comma-separated list of methods.
fn methods(s: &str) -> std::result::Result<Methods, String> {
    crate::plan::train::parse_methods(s)
        .map(Methods)
        .map_err(|e| e.to_string())
}

/// The training options of `ridgeline plan --train`.
#[derive(Args, Clone)]
pub struct PlanTrainArgs {
    /// Plan a training run instead of serving: the cheapest and fastest way to train
    /// --model on --tokens, and the Pareto front of cost vs time.
    #[arg(long)]
    pub train: bool,
    /// Tokens to train on: plain, scientific or with K/M/B/T (5e8, 500M, 1.5B, 2T).
    #[arg(long, value_parser = token_count, requires = "train", allow_negative_numbers = true)]
    pub tokens: Option<u64>,
    /// Tokens per sequence.
    #[arg(long, default_value_t = 2048, allow_negative_numbers = true, value_parser = clap::value_parser!(u64).range(1..=100_000_000), requires = "train")]
    pub seq: u64,
    /// full, lora, qlora (comma-separated) or any.
    #[arg(long, default_value = "any", value_parser = methods, requires = "train")]
    pub method: Methods,
    /// Training stack whose calibrated efficiencies apply: generic or megatron.
    #[arg(long, default_value = "generic", value_parser = TrainStack::parse, requires = "train")]
    pub stack: TrainStack,
    /// Sequences per optimizer step (each configuration rounds it up to a multiple of
    /// micro-batch x dp).
    #[arg(long = "global-batch", default_value_t = crate::plan::train::DEFAULT_GLOBAL_BATCH, allow_negative_numbers = true, value_parser = clap::value_parser!(u64).range(1..=1_048_576), requires = "train")]
    pub global_batch: u64,
    /// Largest acceptable training time, hours.
    #[arg(long = "max-hours", value_parser = positive, allow_negative_numbers = true, requires = "train")]
    pub max_hours: Option<f64>,
    /// Largest acceptable cost of the whole run, USD.
    #[arg(long = "budget-usd", value_parser = positive, allow_negative_numbers = true, requires = "train")]
    pub budget_usd: Option<f64>,
    /// Rent cloud instance shapes (see `ridgeline instances`) instead of loose devices.
    #[arg(long, requires = "train")]
    pub instances: bool,
    /// Context-parallel degrees to search, as `train --cp` (a LIST: `1,2,4,8`); each
    /// layout takes those that divide its data-parallel ranks and the sequence
    /// [default: 1].
    #[arg(long, requires = "train")]
    pub cp: Option<String>,
    /// Multi-token-prediction modules the full-training configurations train beside
    /// the model, as `train --mtp` [default: none].
    #[arg(long, requires = "train", allow_negative_numbers = true, value_parser = clap::value_parser!(u64).range(0..=crate::train::MAX_MTP_MODULES))]
    pub mtp: Option<u64>,
    /// Expert-parallel configurations hide the expert all-to-all behind computation:
    /// serving layouts as `predict --overlap-ep`, training ones as `train --overlap-ep`.
    #[arg(long = "overlap-ep")]
    pub overlap_ep: bool,
    /// The busiest expert-parallel rank's routed tokens over the mean in the
    /// expert-parallel configurations: serving layouts as `predict --expert-imbalance`
    /// (layouts of fewer expert-parallel groups than this are not searched), training
    /// ones as `train --expert-imbalance`.
    #[arg(
        long = "expert-imbalance",
        default_value_t = 1.0,
        allow_negative_numbers = true
    )]
    pub expert_imbalance: f64,
    /// Print Markdown instead of text.
    #[arg(long, requires = "train", conflicts_with = "json")]
    pub markdown: bool,
    /// Also write the chart of cost against time (the Pareto front, one marker per
    /// method) as SVG.
    #[arg(long, value_name = "FILE.svg", requires = "train")]
    pub svg: Option<PathBuf>,
}

/// A comma-separated format list; `native` (or `auto`, `default`) is the model's own.
pub fn format_list(field: &str, text: &str) -> Result<Vec<Option<Format>>> {
    crate::list::parse_names(field, text)?
        .iter()
        .map(|f| match f.to_ascii_lowercase().as_str() {
            "native" | "auto" | "default" => Ok(None),
            _ => Format::parse(f).map(Some),
        })
        .collect()
}
