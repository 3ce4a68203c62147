//! Training calibration: the published training runs ([`runs`]) and the fit of the
//! training efficiency factors to them ([`calibrate`], `ridgeline calibrate --train`).
//! Everything else of training is the core's (re-exported here).

pub mod calibrate;
pub mod runs;

pub use ridgeline_core::train::*;
