//! Renderers: every output format reads the same serde report structs; formatting of
//! numbers for people (GB, TFLOP/s, ms) happens only here.

pub mod table;
