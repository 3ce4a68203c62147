//! # ridgeline-sim
//!
//! Serving at a request rate: the request-level simulation of one deployment
//! ([`simulate::simulate`]) under continuous batching, chunked prefill, preemption and
//! prefill/decode disaggregation, with latency percentiles and goodput; each iteration
//! is costed by the core's predictor ([`ridgeline_core::predict::IterationCost`]).
//!
//! Depends on `ridgeline-core` only. `ridgeline::simulate` re-exports [`simulate`].
#![deny(missing_docs)]

pub mod simulate;

use ridgeline_core::{engine, error, files, hardware, memory, model, predict, roofline};
