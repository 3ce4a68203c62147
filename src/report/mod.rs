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

/// The planning limits of `predict --max`.
#[derive(Debug, Clone, Serialize)]
pub struct Limits {
    /// Model id.
    pub model: String,
    /// Device id.
    pub hardware: String,
    /// Devices.
    pub gpus: u64,
    /// Weight format.
    pub weights: crate::dtype::Format,
    /// KV format.
    pub kv: crate::dtype::Format,
    /// Batch the context limit is for.
    pub batch: u64,
    /// Prompt tokens the batch limit is for.
    pub prompt: u64,
    /// Generated tokens the batch limit is for.
    pub r#gen: u64,
    /// Largest batch that fits at `prompt + gen` tokens per sequence.
    pub max_batch: u64,
    /// Longest context (tokens per sequence) that fits at `batch`.
    pub max_context: u64,
    /// Weights per device, bytes.
    pub weights_bytes: f64,
    /// KV cache per token of one sequence on one device, bytes.
    pub kv_bytes_per_token: f64,
    /// Device capacity, bytes.
    pub capacity_bytes: f64,
}

/// Extracts the planning limits from a prediction.
pub fn limits(p: &crate::predict::Prediction) -> Limits {
    let c = &p.config;
    let m = &p.memory.inner;
    let tokens = (c.batch * (c.prompt + c.r#gen)).max(1) as f64;
    Limits {
        model: p.model.id.clone(),
        hardware: p.hardware.id.clone(),
        gpus: p.hardware.count,
        weights: c.weights,
        kv: c.kv,
        batch: c.batch,
        prompt: c.prompt,
        r#gen: c.r#gen,
        max_batch: p.memory.max_batch,
        max_context: p.memory.max_context,
        weights_bytes: m.weights_bytes,
        kv_bytes_per_token: m.kv_cache_bytes / tokens,
        capacity_bytes: m.capacity_bytes,
    }
}
