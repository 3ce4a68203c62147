//! Charts as SVG strings: the roofline ([`roofline`]), decode throughput and latency
//! against batch ([`throughput`]), stacked memory breakdowns ([`memory`]), and serving
//! latency against request rate with a batch and KV timeline ([`serving`]).
//!
//! Every chart is drawn with plotters' SVG backend into a `String`; nothing touches the
//! file system or the system's fonts. The renderers only render: they read finished
//! structs (a [`Prediction`](crate::predict::Prediction), the
//! [`ThroughputSeries`](crate::series::ThroughputSeries) and
//! [`MemoryChart`](crate::series::MemoryChart) that [`crate::series`] computes) and
//! return SVG strings, so a library user gets exactly what the CLI writes.
//!
//! House style, shared by all charts:
//! - colours from the colour-blind-safe Okabe-Ito palette ([`OKABE_ITO`]), and a distinct
//!   marker shape ([`MarkerShape`]) or a direct label for every series, so a chart also
//!   reads in greyscale;
//! - text never overlaps other text and never leaves the canvas: labels are placed by a
//!   small collision-avoiding placer that nudges them, draws a leader line when a label
//!   had to move away from its point, and drops a label (never the data) when there is
//!   no room. Text widths are estimated from DejaVu Sans metrics ([`text_width`]), a
//!   wide sans-serif, so narrower fonts only add slack;
//! - units at the edges: axis titles and legends name them (GB = 1e9 bytes);
//! - deterministic: the same inputs give the same bytes.
//!
//! ```
//! use ridgeline_core::{engine::EngineDb, hardware::HardwareDb, model::ModelDb};
//! use ridgeline_render::plot::roofline::{RooflineDevice, RooflineOptions, roofline};
//! use ridgeline_core::predict::{Scenario, predict};
//!
//! let model = ModelDb::builtin()?.resolve("llama-3-8b")?;
//! let hw = HardwareDb::builtin()?.get("h100")?;
//! let engine = EngineDb::builtin()?.get("typical")?;
//! let p = predict(&model, hw, engine, &Scenario::default())?;
//! let svg = roofline(&[RooflineDevice { hardware: hw, prediction: &p }], &RooflineOptions::default())?;
//! assert!(svg.starts_with("<svg"));
//! # Ok::<(), ridgeline_core::Error>(())
//! ```

pub mod cost_time;
pub mod memory;
pub mod roofline;
pub mod serving;
pub mod throughput;

mod axes;
mod draw;
mod labels;
mod legend;
mod style;
mod text;

pub use axes::{decades, log_ticks, tick_label};
pub use style::{MarkerShape, OKABE_ITO, series_color};
pub use text::text_width;
