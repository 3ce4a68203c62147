//! The kinds of operators a layer graph holds.

crate::named_enum! {
    /// What an operator of the layer graph is. Training arithmetic and reports match on
    /// the kind, never on a name string; the name (`qkv_proj`) is what JSON shows.
    pub enum OpKind: "op kind" {
        /// Token-embedding lookup.
        Embedding = "embedding",
        /// Learned position-embedding lookup (GPT-2, MPT-style models without RoPE).
        PositionEmbedding = "position_embedding",
        /// Norm before attention.
        AttnNorm = "attn_norm",
        /// Fused q, k, v projection (K and V written to the cache).
        QkvProj = "qkv_proj",
        /// Rotary position embedding on q and k.
        Rope = "rope",
        /// Per-head RMSNorm of queries and keys (Qwen3, Gemma 3).
        QkNorm = "qk_norm",
        /// Fused (flash) attention over the whole context.
        Attention = "attention",
        /// Fused attention over a sliding window (or chunk).
        WindowAttention = "window_attention",
        /// Latent attention: query projection (with its compression and norm).
        MlaQProj = "mla_q_proj",
        /// Latent attention: the compressed key/value latent and rotary key, written to
        /// the cache.
        MlaKvAProj = "mla_kv_a_proj",
        /// Latent attention, prefill: the latent expanded to per-head keys and values.
        MlaKvBProj = "mla_kv_b_proj",
        /// Latent attention, decode: queries absorbed into the latent space.
        MlaQAbsorb = "mla_q_absorb",
        /// Latent attention over the cached latents (or the expanded keys in prefill).
        MlaAttention = "mla_attention",
        /// Latent attention, decode: the latent output mapped back to values.
        MlaVAbsorb = "mla_v_absorb",
        /// Linear attention: input projection (queries, keys, values, gates).
        LinearInProj = "linear_in_proj",
        /// Linear attention and state-space blocks: the short causal convolution.
        ShortConv = "short_conv",
        /// Linear attention: the gated delta-rule recurrence over the state.
        DeltaRule = "delta_rule",
        /// Linear attention: the gated output norm.
        LinearNorm = "linear_norm",
        /// State-space (Mamba-2) block: input projection (gate, x, B, C, step sizes).
        SsmInProj = "ssm_in_proj",
        /// Mamba-1 block: `x_proj` (step rank, B, C, with their norms) and `dt_proj`.
        SsmXProj = "ssm_x_proj",
        /// State-space block: the selective scan (state update and readout).
        SsmScan = "ssm_scan",
        /// Mamba-2 block: the gated RMSNorm before the output projection.
        SsmNorm = "ssm_norm",
        /// Mamba-1 block: the output gated by `silu(z)`.
        SsmGate = "ssm_gate",
        /// Naive attention: scores `Q·Kᵀ`.
        AttnScores = "attn_scores",
        /// Naive attention: softmax over the scores.
        AttnSoftmax = "attn_softmax",
        /// Naive attention: probabilities times `V`.
        AttnValues = "attn_values",
        /// Attention output projection.
        OProj = "o_proj",
        /// Tensor-parallel all-reduce after attention.
        AllreduceAttn = "allreduce_attn",
        /// Residual add after attention.
        AttnResidual = "attn_residual",
        /// Norm before the MLP.
        MlpNorm = "mlp_norm",
        /// MoE router.
        Router = "router",
        /// Expert parallelism: each token sent to the devices holding its experts.
        MoeDispatch = "moe_dispatch",
        /// Expert parallelism: the experts' outputs sent back to their tokens' devices.
        MoeCombine = "moe_combine",
        /// MoE shared experts (every token), gate, up and down together.
        SharedExperts = "shared_experts",
        /// Gated MLP: gate and up projections together.
        GateUpProj = "gate_up_proj",
        /// Plain MLP: up projection.
        UpProj = "up_proj",
        /// Gated MLP: activation times gate.
        ActMul = "act_mul",
        /// Plain MLP: activation.
        Activation = "activation",
        /// MLP down projection.
        DownProj = "down_proj",
        /// Tensor-parallel all-reduce after the MLP.
        AllreduceMlp = "allreduce_mlp",
        /// Residual add after the MLP.
        MlpResidual = "mlp_residual",
        /// Speculative-decoding draft head (MTP or EAGLE-style): the normed embedding of
        /// the last token and the model's last hidden state joined by a
        /// `2·hidden → hidden` projection.
        DraftProj = "draft_proj",
        /// Norm before the lm_head.
        FinalNorm = "final_norm",
        /// Output projection to the vocabulary.
        LmHead = "lm_head",
        /// Offload (`--offload cpu`): the weights a pass streams from host memory over
        /// the host link (a row of the op table, not a graph op).
        HostOffload = "host_offload",
    }
}

impl OpKind {
    /// The attention core whose work grows with the context (fused, or the score and
    /// value matmuls of the naive form; the softmax is elementwise).
    pub(crate) fn is_attention_matmul(self) -> bool {
        matches!(
            self,
            OpKind::Attention
                | OpKind::WindowAttention
                | OpKind::MlaAttention
                | OpKind::AttnScores
                | OpKind::AttnValues
        )
    }

    /// An expert-parallel all-to-all: the dispatch to the routed experts or the combine
    /// that brings their outputs back.
    pub fn is_expert_all_to_all(self) -> bool {
        matches!(self, OpKind::MoeDispatch | OpKind::MoeCombine)
    }

    /// Any part of the attention core, softmax included.
    pub(crate) fn is_attention_core(self) -> bool {
        self.is_attention_matmul() || self == OpKind::AttnSoftmax
    }

    /// An embedding lookup (token or position).
    pub(crate) fn is_embedding(self) -> bool {
        matches!(self, OpKind::Embedding | OpKind::PositionEmbedding)
    }

    /// A norm or residual add over the hidden width (split by sequence parallelism).
    pub(crate) fn is_norm_or_residual(self) -> bool {
        matches!(
            self,
            OpKind::AttnNorm
                | OpKind::MlpNorm
                | OpKind::AttnResidual
                | OpKind::MlpResidual
                | OpKind::FinalNorm
        )
    }

    /// A residual add (after the mixer or the MLP).
    pub(crate) fn is_residual(self) -> bool {
        matches!(self, OpKind::AttnResidual | OpKind::MlpResidual)
    }

    /// Elementwise ops a compiler fuses into a neighbouring kernel (the residual add
    /// into the next norm, the gated activation into the up projection's epilogue,
    /// RoPE into attention): they move no bytes of their own.
    pub(crate) fn is_fused_when_compiled(self) -> bool {
        matches!(
            self,
            OpKind::AttnResidual
                | OpKind::MlpResidual
                | OpKind::ActMul
                | OpKind::Activation
                | OpKind::Rope
        )
    }

    /// Ops outside the layer stack (embedding lookups, the final norm, the lm_head).
    pub(crate) fn is_outside_layers(self) -> bool {
        self.is_embedding() || matches!(self, OpKind::FinalNorm | OpKind::LmHead)
    }
}
