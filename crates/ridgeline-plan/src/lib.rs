//! # ridgeline-plan
//!
//! The questions over many configurations: parallel sweeps over every axis
//! ([`sweep::Sweep`], streamed as CSV or JSON, `ndarray` grids), capacity plans under
//! latency, throughput, rate and budget targets ([`plan::plan`]), training plans
//! ([`plan::train::plan_training`]), the data the charts draw ([`series`]) and cloud
//! instance shapes with prices ([`instances::InstanceDb`]).
//!
//! Depends on `ridgeline-core` and `ridgeline-sim` (`plan --rate` and `sweep --rate`
//! simulate). `ridgeline` re-exports each module at its own path.
#![deny(missing_docs)]

pub mod instances;
pub mod plan;
pub mod series;
pub mod sweep;

use ridgeline_core::{
    dtype, engine, error, files, hardware, intervals, list, measurements, memory, model,
    named_enum, predict, roofline, search, train, units,
};
use ridgeline_sim::simulate;
