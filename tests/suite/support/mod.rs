//! Helpers the test files share.

pub mod cli;
pub mod fuzz_checks;
pub mod net;
pub mod synthetic_measurements;
