//! # ridgeline-render
//!
//! Every format a person reads: text, Markdown, the plain-language explanation, HTML
//! reports ([`report`]) and SVG charts drawn with plotters ([`plot`]: roofline,
//! throughput and latency vs batch, memory breakdown, serving vs rate, training cost vs
//! time) and launch files for serving engines and training stacks ([`emit`]).
//! Renderers read finished report structs and chart series; they compute
//! nothing but the page.
//!
//! Depends on `ridgeline-core`, `ridgeline-sim` and `ridgeline-plan`.
#![deny(missing_docs)]

pub mod emit;
pub mod plot;
pub mod report;

use ridgeline_core::{dtype, error, hardware, kernels, memory, model, predict, train, units};
use ridgeline_plan::{instances, plan, series, sweep};
use ridgeline_sim::simulate;
