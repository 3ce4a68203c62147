//! The alternatives `explain` weighs: a larger batch, 4-bit weights, twice the devices,
//! tensor parallelism in place of expert parallelism.
//! Each is a full [`Summary`] computed here, in the core, so the renderer only reads.

use super::Draft;
use super::{Predictor, Scenario, Summary};
use crate::dtype::Format;
use crate::memory::Parallel;

/// One alternative configuration and its predicted numbers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WhatIf {
    /// Sequences.
    pub batch: u64,
    /// Devices.
    pub gpus: u64,
    /// Weight format.
    pub weights: Format,
    /// The prediction at that configuration.
    pub summary: Summary,
}

/// The alternatives to a prediction that `explain` reports (those that apply).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WhatIfs {
    /// Query heads of the model.
    pub heads: u64,
    /// Key/value heads of the model.
    pub kv_heads: u64,
    /// The weight format in use.
    pub weights: Format,
    /// The routed experts' format, where it differs from `weights`.
    pub experts: Option<Format>,
    /// Up to 8x the batch, within what fits (when that is larger than the batch).
    pub larger_batch: Option<WhatIf>,
    /// Weights at q4_k_m (when that makes them smaller: the weights use more than 5
    /// bits, and a checkpoint's own 4-bit experts are not larger than q4_k_m's).
    pub quantized: Option<WhatIf>,
    /// Tensor parallel over twice the devices (when it does not fit, or on one device).
    pub more_devices: Option<WhatIf>,
    /// With expert parallelism, the same devices tensor parallel alone (`ep` 1: every
    /// expert split over all of them, no all-to-all and no busiest rank).
    pub without_ep: Option<WhatIf>,
}

/// The format the quantization what-if uses.
pub const QUANTIZED_WHAT_IF: Format = Format::Q4KM;

impl Predictor<'_> {
    /// Evaluates the alternatives to the configuration (batch, prompt, gen) whose
    /// memory limit is `max_batch` (see [`Predictor::max_batch`]).
    pub fn what_ifs(&self, batch: u64, prompt: u64, gen_tokens: u64, max_batch: u64) -> WhatIfs {
        let weights = self.precision.weights;
        let mixed = self.precision.experts != weights;
        let at = |b: u64| WhatIf {
            batch: b,
            gpus: self.gpus,
            weights,
            summary: self.summary(b, prompt, gen_tokens),
        };
        let b8 = (batch * 8).min(max_batch.max(batch));
        let larger_batch = (b8 > batch).then(|| at(b8));
        let base = Scenario {
            batch,
            prompt,
            gen_tokens,
            // the formats as they run, the routed experts' stated apart (a checkpoint's
            // native mix, or one asked for)
            weights: Some(weights),
            expert_weights: Some(self.precision.experts),
            kv: Some(self.precision.kv),
            gpus: self.gpus,
            parallel: self.parallel,
            ep: self.ep,
            flash: self.flash,
            offload: false,
            spec: self.spec,
            inter_node_bytes_per_s: self.network_bw,
            overlap_ep: self.overlap_ep,
            expert_imbalance: self.expert_imbalance,
        };
        let now = self.memory(batch, prompt, gen_tokens).0;
        let quantized = (weights.bits() > 5.0)
            .then(|| {
                self.alternative(&Scenario {
                    weights: Some(QUANTIZED_WHAT_IF),
                    expert_weights: None,
                    ..base
                })
            })
            .flatten()
            .filter(|q| q.summary.memory.weights_bytes < now.weights_bytes);
        let fits = now.fits;
        let more_devices = (!fits || self.gpus == 1)
            .then(|| {
                self.alternative(&Scenario {
                    gpus: 2 * self.gpus,
                    parallel: Parallel::Tp,
                    ..base
                })
            })
            .flatten();
        let without_ep = (self.ep > 1)
            .then(|| {
                self.alternative(&Scenario {
                    ep: 1,
                    overlap_ep: false,
                    expert_imbalance: 1.0,
                    ..base
                })
            })
            .flatten();
        WhatIfs {
            heads: self.model.heads,
            kv_heads: self.model.kv_heads,
            weights,
            experts: (mixed && self.model.experts > 1).then_some(self.precision.experts),
            larger_batch,
            quantized,
            more_devices,
            without_ep,
        }
    }

    /// The same model, device and engine at another scenario (`None` where that
    /// layout is impossible).
    fn alternative(&self, s: &Scenario) -> Option<WhatIf> {
        let mut q = Predictor::new(self.model, self.hardware, self.engine, s).ok()?;
        // the same device and engine: the same kernel table
        q.kernels = self.kernels.clone();
        if let Draft::Model(d, _) = self.draft {
            q = q.with_draft(d).ok()?;
        }
        Some(WhatIf {
            batch: s.batch,
            gpus: s.gpus,
            weights: q.precision.weights,
            summary: q.summary(s.batch, s.prompt, s.gen_tokens),
        })
    }
}
