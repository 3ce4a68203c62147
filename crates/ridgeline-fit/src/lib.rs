//! # ridgeline-fit
//!
//! Calibration, kept out of what library users compile: published measurements mapped
//! to predictions, the engine-factor fit and its held-out evaluation ([`calibrate`]),
//! prediction-interval bands, the training fit over published runs ([`train::calibrate`],
//! [`train::runs`]), serving validation ([`simulate::validation`]), the calibration
//! reports ([`report`]), other tools' estimates as a reference
//! ([`mod@reference`]) and the kernel tables held out by device ([`kernel_transfer`]). What `ridgeline calibrate` runs, and what writes
//! `data/engines.toml`, `data/training.toml` and `data/intervals.toml`.
//!
//! Depends on `ridgeline-core`, `ridgeline-sim` and `ridgeline-render` (its tables).
#![deny(missing_docs)]

pub mod calibrate;
mod csv_rows;
pub mod kernel_transfer;
pub mod reference;
pub mod report;
pub mod simulate;
pub mod static_sweep;
pub mod train;

use ridgeline_core::{
    Error, dtype, engine, error, files, hardware, intervals, kernels, measurements, memory, model,
    named_enum, predict, stats, units,
};
