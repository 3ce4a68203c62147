//! The calibration reports: the fit, held-out errors and interval bands as tables
//! ([`calibration`]), the report of fitted engines against the pure roofline
//! ([`calibration_report`]) and the training fit ([`train_fit`]). The other renderers
//! are `ridgeline-render`'s (re-exported here).

pub mod calibration;
pub mod calibration_report;
pub mod train_fit;

pub use ridgeline_render::report::*;
