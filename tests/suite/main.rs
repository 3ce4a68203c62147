//! The integration tests, in one binary: one link of the library instead of one per
//! file, the tests of every file run side by side, and what several files need (the
//! bundled calibration, its held-out accuracy) is computed once ([`shared`]).
//!
//! Run one file's tests with `cargo test --test suite FILE::` (e.g. `golden::`).

mod shared;
mod support;

mod aiconfigurator;
mod bounded_work;
mod browser;
mod calibrate_cli;
mod calibrate_report;
mod chunked_prefill;
mod cli;
mod decoding;
mod emit;
mod engine_files;
mod fuzz_corpus;
mod golden;
mod hardware_db;
mod headline;
mod hostile_bar;
mod hostile_inputs;
mod html_report;
mod intervals;
mod kernels;
mod measurements;
mod memory;
mod models;
mod models_2025;
mod plan;
mod prices;
mod properties;
mod prose_numbers;
mod public_api;
mod reference;
mod reliability;
mod serving;
mod simulate;
mod static_sweep;
mod svg;
mod sweep;
mod train;
mod train_kinds;
mod train_plan;
mod web_api;
