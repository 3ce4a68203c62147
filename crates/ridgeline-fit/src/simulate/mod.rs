//! Serving validation ([`validation`]): the simulator against published serving
//! measurements. The simulator itself is `ridgeline-sim`'s (re-exported here).

pub mod validation;

pub use ridgeline_sim::simulate::*;
