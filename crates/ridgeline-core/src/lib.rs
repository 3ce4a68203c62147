//! # ridgeline-core
//!
//! The cost model of [ridgeline](https://crates.io/crates/ridgeline): every number it
//! predicts is computed here, from data embedded in the crate, with no command line,
//! chart or fitting machinery attached. Embed this crate (or `ridgeline` with
//! `default-features = false`, which re-exports it) in capacity-planning code.
//!
//! ## Quick example
//!
//! ```
//! use ridgeline_core::prelude::*;
//!
//! let model = ModelDb::builtin()?.resolve("llama-2-7b")?;
//! let gpu = HardwareDb::builtin()?.get("h100")?;          // alias of h100-sxm
//! let engine = EngineDb::builtin()?.get("ideal")?;         // pure roofline
//! let p = predict(&model, gpu, engine, &Scenario::default())?;
//! // decode at batch 1 streams every weight: memory-bound
//! assert_eq!(p.decode.bound, Bound::Memory);
//! // a 512-token prompt reuses each weight 512 times: compute-bound
//! assert_eq!(p.prefill.bound, Bound::Compute);
//! # Ok::<(), ridgeline_core::Error>(())
//! ```
//!
//! ## Module map
//!
//! Data flows one way: hardware and model data -> operator costs -> roofline placement
//! -> predictions (report structs, raw SI numbers). Nothing here renders, plans, simulates
//! or fits; those crates sit above this one.
//!
//! | module | job |
//! |---|---|
//! | [`units`] | SI constants and edge formatting (GB = 1e9, GiB = 2^30) |
//! | [`dtype`] | compute dtypes and storage formats with real bits per weight |
//! | [`ops`] | operator catalog: FLOPs and bytes by class for GEMM, attention, norms, ... |
//! | [`hardware`] | the device database ([`hardware::HardwareDb`]), every number sourced |
//! | [`model`] | [`model::ModelConfig`] from HF `config.json`: layer kinds, parameter counts, the layer graph ([`model::graph`]) |
//! | [`roofline`] | ridge points, attainable FLOP/s, [`roofline::place`], [`roofline::Bound`] |
//! | [`kernels`] | measured kernel efficiencies per device, engine, op class and shape (`data/kernels/`), interpolated ([`kernels::KernelDb`]) |
//! | [`engine`] | efficiency profiles of inference engines ([`engine::EngineDb`]): types and lookup |
//! | [`memory`] | inference memory per device for a layout ([`memory::Share`]), max batch, max context |
//! | [`predict`] | prefill, decode and generation roll-ups ([`predict::Predictor`], cached [`predict::Evaluator`]), expert parallelism, speculative decoding |
//! | [`train`] | training memory and step time (ZeRO, 3D parallelism, LoRA/QLoRA, offload) |
//! | [`intervals`] | prediction intervals from held-out errors per kind and engine (`data/intervals.toml`) |
//! | [`measurements`] | the published-measurement rows ([`measurements::Measurement`], [`measurements::Kind`]) and their CSV reader |
//! | [`stats`] | medians and percentiles of samples: the one home of order statistics |
//! | [`search`] | the one bisection: largest / smallest value meeting a monotone predicate |
//! | [`names`] | `named_enum!`: kinds serialized and parsed by name |
//! | [`list`] | LIST arguments: `1,2,4`, `1..64`, `128..8192:x2`, `0..1000:+50` |
//! | [`files`] | bounded reads of user files, atomic writes |
//! | [`work`] | bounded, cancellable work: deadline, budget, progress ([`work::Work`]) |
//! | [`error`] | one [`Error`] type naming the field, with near matches |
//!
//! All internal quantities are `f64` in SI base units (FLOP, byte, second, FLOP/s,
//! byte/s); conversion happens only in [`units`] and the renderers.
#![deny(missing_docs)]

pub mod dtype;
pub mod engine;
pub mod error;
pub mod files;
pub mod hardware;
pub mod intervals;
pub mod kernels;
pub mod list;
pub mod measurements;
pub mod memory;
pub mod model;
pub mod names;
pub mod ops;
pub mod predict;
pub mod roofline;
pub mod search;
pub mod stats;
pub mod train;
pub mod units;
pub mod work;

pub use error::{Error, Result};

/// The types most programs need, in one import.
pub mod prelude {
    pub use crate::dtype::{ComputeDtype, Format};
    pub use crate::engine::{Engine, EngineDb};
    pub use crate::error::{Error, Result};
    pub use crate::hardware::{Hardware, HardwareDb};
    pub use crate::memory::Parallel;
    pub use crate::model::{ModelConfig, ModelDb};
    pub use crate::predict::{Prediction, Predictor, Scenario, predict};
    pub use crate::roofline::Bound;
}
