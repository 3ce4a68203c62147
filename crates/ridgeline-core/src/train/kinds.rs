//! The named kinds of a training run: method, LoRA targets, recomputation, precision,
//! optimizer, offload, stack and loss (what [`super::config::TrainConfig`] is made of).

use crate::dtype::{ComputeDtype, Format};

crate::named_enum! {
    /// What is trained.
    pub enum Method: "training method" {
        /// Every parameter.
        Full = "full",
        /// Low-rank adapters on frozen 16-bit base weights.
        Lora = "lora",
        /// Low-rank adapters (bf16) on frozen NF4 (double-quantized) base weights.
        Qlora = "qlora",
    }
}

crate::named_enum! {
    /// Which matrices LoRA adapts.
    pub enum LoraTargets: "LoRA targets" {
        /// Query and value projections (the LoRA paper's and PEFT's default).
        QueryValue = "query_value",
        /// Every projection of attention and MLP.
        AllLinear = "all_linear",
    }
}

crate::named_enum! {
    /// Activation recomputation (checkpointing).
    pub enum Recompute: "recomputation" {
        /// Store every activation the backward pass needs.
        None = "none",
        /// Recompute the attention core (Korthikanti et al.): no stored score matrix.
        Selective = "selective",
        /// Store only each layer's input; recompute the layer in backward.
        Full = "full",
        /// Op-level selective checkpointing (torchtitan's `selective_ac_option = "op"`):
        /// keep the layer input, the attention output (with its log-sum-exp) and the
        /// output of every second matmul in execution order (q, v, the gate and the
        /// down projection of a gated MLP; q, v and the first MLP matmul otherwise);
        /// recompute the other matmuls and every norm, activation and residual.
        Op = "op",
    }
}

crate::named_enum! {
    /// Mixed-precision recipe.
    pub enum TrainPrecision: "training precision" {
        /// bf16 weights, activations and gradients, fp32 master weights.
        Bf16 = "bf16",
        /// fp16 the same way (with loss scaling).
        Fp16 = "fp16",
        /// bf16 recipe with the linear layers' matmuls in fp8 (TransformerEngine,
        /// torchao float8): memory as bf16, matmuls at the fp8 peak.
        Fp8 = "fp8",
        /// Pure bf16: weights, gradients and optimizer states all in bf16, no fp32
        /// master copy (torchtune's `dtype: bf16`, Answer.AI's fsdp_qlora
        /// `--precision bf16`; the update rounds to bf16).
        Bf16Pure = "bf16-pure",
    }
}

impl TrainPrecision {
    /// Dtype of activations, 16-bit weights and gradients.
    pub fn activations(self) -> ComputeDtype {
        match self {
            TrainPrecision::Fp16 => ComputeDtype::Fp16,
            _ => ComputeDtype::Bf16,
        }
    }

    /// 16-bit storage format of weights and gradients.
    pub(crate) fn weight_format(self) -> Format {
        match self {
            TrainPrecision::Fp16 => Format::Fp16,
            _ => Format::Bf16,
        }
    }

    /// Whether the optimizer keeps an fp32 master copy of the trainable weights (every
    /// recipe but [`TrainPrecision::Bf16Pure`]).
    pub(crate) fn fp32_master(self) -> bool {
        self != TrainPrecision::Bf16Pure
    }

    /// Bytes of one full-precision optimizer moment (AdamW's m and v, SGD's momentum):
    /// fp32 (4) with mixed precision, bf16 (2) in pure bf16, where the states take the
    /// parameters' dtype.
    pub(crate) fn moment_bytes(self) -> f64 {
        if self.fp32_master() { 4.0 } else { 2.0 }
    }
}

crate::named_enum! {
    /// Optimizer.
    pub enum Optimizer: "optimizer" {
        /// Adam with decoupled weight decay.
        Adamw = "adamw",
        /// SGD with momentum.
        Sgd = "sgd",
        /// Adafactor (factored second moment, no first moment).
        Adafactor = "adafactor",
        /// AdamW with 8-bit block-quantized moments (bitsandbytes `AdamW8bit`).
        Adamw8bit = "adamw8bit",
    }
}

impl Optimizer {
    /// Optimizer-state bytes per trainable parameter, fp32 master weights included,
    /// under mixed precision: AdamW 12 (master 4 + m 4 + v 4); SGD with momentum 8
    /// (master 4 + momentum 4); Adafactor 4 (master) plus its factored second moment,
    /// `4 · (rows + cols)` bytes per matrix, passed in as `factored_per_param`
    /// (`4 · Σ(rows + cols) / params`, see [`super::adafactor_factored_bytes_per_param`]);
    /// 8-bit AdamW 6 plus its block scales (master 4 + m 1 + v 1, one fp32 absmax per
    /// 2048 values of each moment: 4 + 1 + 1 + 2 · 4/2048 = 6.00390625; Dettmers et al.
    /// 2022, "8-bit Optimizers via Block-wise Quantization"). In pure bf16
    /// ([`TrainPrecision::Bf16Pure`]) there is no master copy and the moments are bf16:
    /// AdamW 4, SGD 2, Adafactor half its factored statistics, 8-bit AdamW 2.0039.
    ///
    /// ```
    /// use ridgeline_core::train::{Optimizer, TrainPrecision};
    /// assert_eq!(Optimizer::Adamw.state_bytes_per_param(0.0, TrainPrecision::Bf16), 12.0);
    /// assert_eq!(Optimizer::Adamw.state_bytes_per_param(0.0, TrainPrecision::Bf16Pure), 4.0);
    /// ```
    pub fn state_bytes_per_param(self, factored_per_param: f64, precision: TrainPrecision) -> f64 {
        let master = if precision.fp32_master() { 4.0 } else { 0.0 };
        let moment = precision.moment_bytes();
        master
            + match self {
                Optimizer::Adamw => 2.0 * moment,
                Optimizer::Sgd => moment,
                Optimizer::Adafactor => factored_per_param * moment / 4.0,
                Optimizer::Adamw8bit => 2.0 + 2.0 * 4.0 / 2048.0,
            }
    }

    /// Bytes the update moves per trainable parameter in device (or host) memory. Mixed
    /// precision: AdamW reads master, m, v and the 16-bit gradient and writes master, m,
    /// v and the 16-bit weight, 4·3 + 2 + 4·3 + 2 = 28; SGD 4·2 + 2 + 4·2 + 2 = 20;
    /// Adafactor 4 + 2 + 4 + 2 = 12 (the factored statistics are negligible); 8-bit
    /// AdamW (4 + 1 + 1) + 2 + (4 + 1 + 1) + 2 = 16. Pure bf16 reads and writes the bf16
    /// weight in place of the master and has bf16 moments: AdamW 2·3 + 2 + 2·3 = 14,
    /// SGD 10, Adafactor 6, 8-bit AdamW 10.
    ///
    /// ```
    /// use ridgeline_core::train::{Optimizer, TrainPrecision};
    /// assert_eq!(Optimizer::Adamw.update_bytes_per_param(TrainPrecision::Bf16), 28.0);
    /// assert_eq!(Optimizer::Adamw.update_bytes_per_param(TrainPrecision::Bf16Pure), 14.0);
    /// ```
    pub fn update_bytes_per_param(self, precision: TrainPrecision) -> f64 {
        let (weight, write16) = if precision.fp32_master() {
            (4.0, 2.0)
        } else {
            (2.0, 0.0)
        };
        let moments = match self {
            Optimizer::Adamw => 2.0 * precision.moment_bytes(),
            Optimizer::Sgd => precision.moment_bytes(),
            Optimizer::Adafactor => 0.0,
            Optimizer::Adamw8bit => 2.0,
        };
        2.0 * (weight + moments) + 2.0 + write16
    }
}

crate::named_enum! {
    /// Where optimizer states live.
    pub enum Offload: "offload" {
        /// Device memory.
        None = "none",
        /// Host memory (ZeRO-Offload): gradients go down, updated weights come back over
        /// the host link every step.
        Cpu = "cpu",
    }
}

crate::named_enum! {
    /// The software stack a run trains with: its kernels, fusions and overlap schedule
    /// set how close to the peak it runs (`data/training.toml` fits each separately).
    pub enum TrainStack: "training stack" {
        /// Framework-native training: PyTorch FSDP/DDP (torchtitan, torchtune, Hugging
        /// Face Trainer and PEFT, llm-foundry, fms-fsdp) or JAX (MaxText), with library
        /// kernels (cuBLAS, FlashAttention) and framework collectives. What most
        /// fine-tunes and FSDP pre-training runs use.
        Generic = "generic",
        /// Megatron-Core (Megatron-LM, NeMo, Megatron-Bridge) with TransformerEngine:
        /// fused norms and activations, cuDNN fused attention, communication overlapped
        /// with compute.
        Megatron = "megatron",
    }
}

crate::named_enum! {
    /// How the loss holds the logits of the last stage (per logit element: token x
    /// vocabulary entry).
    pub enum Loss: "loss" {
        /// A fused or chunked cross-entropy (Megatron-Core, torchtitan, torchtune,
        /// Liger): the 16-bit logits and the fp32 log-probabilities kept for the
        /// backward pass, `e + 4` bytes (6 in bf16).
        Fused = "fused",
        /// The logits upcast to fp32 before a plain cross-entropy, as Hugging Face
        /// transformers' causal-LM models did in their forward until v4.45
        /// (`logits = logits.float()`): 16 bytes at the start of the backward pass, the
        /// fp32 logits the output keeps (4), the fp32 log-softmax saved for backward
        /// (4), its incoming gradient (4) and the gradient it produces (4); the 16-bit
        /// logits are freed once upcast.
        Upcast = "upcast",
    }
}

impl Loss {
    /// Bytes per logit element at the loss's peak with `e`-byte activations.
    ///
    /// ```
    /// use ridgeline_core::train::Loss;
    /// assert_eq!(Loss::Fused.bytes_per_logit(2.0), 6.0);
    /// assert_eq!(Loss::Upcast.bytes_per_logit(2.0), 16.0);
    /// ```
    pub fn bytes_per_logit(self, e: f64) -> f64 {
        match self {
            Loss::Fused => e + 4.0,
            Loss::Upcast => 16.0,
        }
    }
}
