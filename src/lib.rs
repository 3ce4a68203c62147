//! # ridgeline
//!
//! Will it fit, and how fast will it run? ridgeline answers both for large language
//! models on GPUs and accelerators, and shows *why* on a roofline.
//!
//! A decode step does about 2 FLOPs per weight but must stream every weight and the
//! whole KV cache from memory: its arithmetic intensity is ~1 FLOP/byte, while an
//! H100's ridge point is ~295 FLOP/byte. Decode is bandwidth-bound; prefill and large
//! batches are compute-bound. ridgeline makes that computable.
//!
//! ## Quick example
//!
//! ```
//! use ridgeline::prelude::*;
//!
//! let model = ModelDb::builtin()?.resolve("llama-2-7b")?;
//! let gpu = HardwareDb::builtin()?.get("h100")?;          // alias of h100-sxm
//! let engine = EngineDb::builtin()?.get("ideal")?;         // pure roofline
//! let p = predict(&model, gpu, engine, &Scenario::default())?;
//!
//! // Decode at batch 1 is memory-bound at ~1 FLOP/byte ...
//! assert_eq!(p.decode.bound, Bound::Memory);
//! assert!((p.decode.arithmetic_intensity - 1.0).abs() < 0.05);
//! // ... so tokens/s ~ bandwidth / bytes per token: 3.35e12 / 13.5e9 ~ 248.
//! assert!((p.decode.tokens_per_s - 248.0).abs() < 3.0);
//! // Prefill of 512 tokens reuses each weight 512 times: compute-bound.
//! assert_eq!(p.prefill.bound, Bound::Compute);
//! # Ok::<(), ridgeline::Error>(())
//! ```
//!
//! ## Crates
//!
//! This package is a facade over a workspace whose crate graph is the layer diagram
//! (nothing imports upward; see `docs/architecture.md`):
//!
//! ```text
//! ridgeline (this facade, the CLI and `serve`)
//!  ├─ ridgeline-fit     calibration, training fit, serving validation   (core, sim, render)
//!  ├─ ridgeline-render  text, Markdown, explain, HTML, SVG charts       (core, sim, plan)
//!  ├─ ridgeline-plan    sweeps, plans, training plans, series, instances (core, sim)
//!  ├─ ridgeline-sim     request-level serving simulation                 (core)
//!  └─ ridgeline-core    units ... predict, train, measurements: the cost model
//! ```
//!
//! Every module keeps its path here (`ridgeline::predict`, `ridgeline::simulate`, ...).
//! With `default-features = false` only the core's modules are re-exported, and none of
//! clap, plotters, the HTTP parser, rand or the fitter is compiled; the features `sim`,
//! `plan`, `render`, `fit` and `cli` (the default) add the layers above.
//!
//! ## Module map
//!
//! Data flows one way: hardware and model data -> operator costs -> roofline placement
//! -> predictions -> reports.
//!
//! | module | job |
//! |---|---|
//! | [`units`] | SI constants and edge formatting (GB = 1e9, GiB = 2^30) |
//! | [`dtype`] | compute dtypes and storage formats with real bits per weight |
//! | [`ops`] | operator catalog: FLOPs and bytes by class for GEMM, attention, norms, ... |
//! | [`hardware`] | the device database ([`hardware::HardwareDb`]), every number sourced |
//! | [`instances`] | cloud instance shapes with on-demand prices ([`instances::InstanceDb`]) |
//! | [`model`] | [`model::ModelConfig`] from HF `config.json`: layer kinds (softmax, windowed, latent and linear attention, Mamba state-space blocks; dense, MoE or no feed-forward), parameter counts, the layer graph ([`model::graph`]) |
//! | [`roofline`] | ridge points, attainable FLOP/s, [`roofline::place`], [`roofline::Bound`] |
//! | [`engine`] | efficiency profiles of inference engines ([`engine::EngineDb`]) |
//! | [`memory`] | inference memory per device for a layout ([`memory::Share`]), max batch, max context |
//! | [`predict`] | prefill, decode and generation roll-ups ([`predict::Predictor`], cached [`predict::Evaluator`]), expert parallelism, speculative decoding ([`predict::Speculation`]), architecture facts |
//! | [`search`] | the one bisection: largest / smallest value meeting a monotone predicate |
//! | [`names`] | `named_enum!`: kinds serialized and parsed by name |
//! | [`list`] | LIST arguments: `1,2,4`, `1..64`, `128..8192:x2`, `0..1000:+50` |
//! | [`sweep`] | parallel sweeps over every axis ([`sweep::Sweep`]): streaming CSV/JSON, `ndarray` grids, columns for data frames |
//! | [`plan`] | capacity planning under latency, throughput and budget targets ([`plan::plan`]); training plans ([`plan::train::plan_training`]) |
//! | [`series`] | chart data: throughput and latency vs batch, memory by weight format and by ZeRO stage |
//! | [`simulate`] | serving at a request rate: continuous batching, chunked prefill, preemption, disaggregation, latency percentiles |
//! | [`report`] | text, Markdown and plain-language renderers of the report structs |
//! | [`emit`] | launch files (`--emit`): vLLM, SGLang, TensorRT-LLM, llama.cpp, Kubernetes; DeepSpeed, FSDP, torchtune, Megatron-LM |
//! | [`plot`] | SVG charts: roofline, throughput and latency vs batch, memory breakdown, training cost vs time |
//! | [`train`] | training memory and step time (ZeRO, 3D parallelism, LoRA/QLoRA, offload) |
//! | [`intervals`] | 80% prediction intervals from held-out errors per kind and engine (`data/intervals.toml`) |
//! | [`kernels`] | measured kernel efficiencies per device, engine, op class and shape (`data/kernels/`) |
//! | [`calibrate`] | published measurements, engine-factor fitting, leave-one-source-out errors |
//! | [`cli`] | the command line as a library: [`cli::run_args`] runs words as the CLI does, [`cli::chart_args`] draws a command's chart |
//! | [`web`] | `ridgeline serve`: the local page and JSON API ([`web::handle`] answers one request) |
//! | [`files`] | bounded reads of user files, atomic writes |
//! | [`error`] | one [`Error`] type naming the field, with near matches |
//!
//! All internal quantities are `f64` in SI base units (FLOP, byte, second, FLOP/s,
//! byte/s); conversion happens only in [`units`] and [`report`].
#![deny(missing_docs)]

pub use ridgeline_core::{Error, Result, named_enum};
pub use ridgeline_core::{
    dtype, engine, error, files, hardware, intervals, kernels, list, measurements, memory, model,
    names, ops, predict, roofline, search, stats, units, work,
};

#[cfg(feature = "plan")]
pub use ridgeline_plan::{instances, plan, series, sweep};
#[cfg(feature = "render")]
pub use ridgeline_render::{emit, plot};

#[cfg(feature = "fit")]
pub use ridgeline_fit::{calibrate, kernel_transfer, reference, static_sweep};

#[cfg(feature = "cli")]
pub mod cli;
#[cfg(feature = "cli")]
pub mod web;

/// Training memory and step time (ZeRO, 3D parallelism, LoRA/QLoRA, offload); with the
/// `fit` feature also the published runs ([`train::runs`]) and their fit
/// ([`train::calibrate`]).
pub mod train {
    pub use ridgeline_core::train::*;
    #[cfg(feature = "fit")]
    pub use ridgeline_fit::train::{calibrate, runs};
}

/// Serving at a request rate: continuous batching, chunked prefill, preemption,
/// disaggregation, latency percentiles; with the `fit` feature also the validation
/// against published serving measurements ([`simulate::validation`]).
#[cfg(feature = "sim")]
pub mod simulate {
    #[cfg(feature = "fit")]
    pub use ridgeline_fit::simulate::validation;
    pub use ridgeline_sim::simulate::*;
}

/// Text, Markdown, plain-language and HTML renderers of the report structs; the sweep's
/// CSV/JSON writers ([`report::sweep`]); with the `fit` feature the calibration reports.
#[cfg(feature = "render")]
pub mod report {
    #[cfg(feature = "fit")]
    pub use ridgeline_fit::report::{calibration, calibration_report};
    pub use ridgeline_render::report::*;

    /// Text report of a training prediction and its notes; with the `fit` feature the
    /// training fit's text ([`train::calibration`]).
    pub mod train {
        #[cfg(feature = "fit")]
        pub use ridgeline_fit::report::train_fit::calibration;
        pub use ridgeline_render::report::train::*;
    }
}

/// The types most programs need, in one import.
pub mod prelude {
    pub use ridgeline_core::prelude::*;
}
