//! Renderers: every output format reads the same serde report structs; formatting of
//! numbers for people (GB, TFLOP/s, ms) happens only here.

pub mod calibration;
pub mod explain;
pub mod markdown;
pub mod plan;
pub mod table;
pub mod text;
pub mod train;

use crate::model::ModelConfig;
use serde::Serialize;

/// One row of `ridgeline models --json`.
#[derive(Debug, Clone, Serialize)]
pub struct ModelSummary {
    /// Model id.
    pub id: String,
    /// Human name.
    pub name: String,
    /// Total parameters.
    pub params: u64,
    /// Parameters used per token.
    pub active_params: u64,
    /// Layers.
    pub layers: u64,
    /// Width.
    pub hidden: u64,
    /// Query heads.
    pub heads: u64,
    /// KV heads.
    pub kv_heads: u64,
    /// Trained context.
    pub max_context: u64,
    /// Native weight format.
    pub native_format: String,
    /// Config source.
    pub source: String,
}

/// Summary of a model for listings.
pub fn model_summary(m: &ModelConfig) -> ModelSummary {
    let p = m.params();
    ModelSummary {
        id: m.id.clone(),
        name: m.name.clone(),
        params: p.total,
        active_params: p.active,
        layers: m.layers,
        hidden: m.hidden,
        heads: m.heads,
        kv_heads: m.kv_heads,
        max_context: m.max_context,
        native_format: m.native_format.name(),
        source: m.source.clone(),
    }
}
