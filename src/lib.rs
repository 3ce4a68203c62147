//! # ridgeline
//! (crate guide written below)
#![deny(missing_docs)]

pub mod dtype;
pub mod engine;
pub mod error;
pub mod hardware;
pub mod memory;
pub mod model;
pub mod ops;
pub mod plot;
pub mod predict;
pub mod report;
pub mod roofline;
pub mod units;

pub use error::{Error, Result};
