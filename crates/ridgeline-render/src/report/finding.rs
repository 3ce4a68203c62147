//! The explanation's claims as data: what [`super::explain`] and the architecture
//! findings both produce.

use serde::Serialize;

/// One claim of the explanation.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct Finding {
    /// `decode`, `prefill`, `batching`, `memory`, `kernels`, `interval`,
    /// `architecture`, `help`.
    pub topic: &'static str,
    /// The sentence, with its numbers.
    pub text: String,
}

/// The explanation document (`explain --json`).
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct Explanation {
    /// One-line answer.
    pub headline: String,
    /// Claims in reading order.
    pub findings: Vec<Finding>,
}
