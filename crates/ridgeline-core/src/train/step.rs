//! Training step time on the roofline: forward, backward and recomputation of one
//! micro-batch, 3D-parallel communication, the pipeline bubble and the optimizer update;
//! tokens/s, MFU and HFU.
//!
//! One micro-batch on the slowest (last) pipeline stage: the forward operators come from
//! [`graph::forward`]; backward costs 2× the forward FLOPs for matmuls (input gradient +
//! weight gradient; only the input gradient for frozen LoRA weights) with its own bytes
//! (see `backward_cost`), 2.5× for fused attention (the kernel recomputes the scores),
//! 2× FLOPs and bytes for vector ops, and repeats the tensor-parallel collectives. Full
//! recomputation adds one more forward of the layers, selective the attention core. Each
//! op is placed on the roofline ([`crate::roofline::place`]) with
//! [`super::TrainEfficiency`]. The step is
//!
//! ```text
//! t = (m + (pp-1)·c/n) · t_micro  +  exposed DP communication  +  optimizer update
//! ```
//!
//! for `m` micro-batches per pipeline and `v` virtual stages (interleaving): the `n` layers
//! of the fullest stage in `v` chunks of whole layers, the largest `c = ceil(n/v)` (`c/n =
//! 1/v` when `v` divides `n`, as Megatron-LM requires); tensor-parallel
//! collectives run on the scale-up link, or on the inter-node network when a group spans
//! nodes (see [`super::TrainConfig::inter_node_bytes_per_s`]). A fraction (`overlap_*`) of
//! each communication is hidden behind compute, never more than the compute available.
//!
//! **Utilizations.** MFU = model FLOPs / (time × GPUs × dense peak of the matmul dtype).
//! Model FLOPs follow PaLM (Chowdhery et al. 2022, appendix B) and Megatron-LM: `6 · N`
//! per token (N: parameters that multiply, i.e. excluding the input-embedding lookup and
//! inactive experts; LoRA `4 · N` for the frozen weights, which get no weight gradients,
//! plus `6 ·` the adapters), plus attention `6 · layers · heads·head_dim · seq` per
//! token: PaLM's `12 · layers · q · seq` halved for the causal mask, i.e. the `s²/2`
//! query-key pairs a causal model needs (the convention of FlashAttention's benchmarks
//! and Megatron's causal FLOP count), never counting recomputation. PaLM's full `s × s`
//! square counts work no causal kernel does: at long sequences, where attention
//! dominates, it made MFU exceed the executed-FLOP utilization and even 1.
//! [`Trainer::model_flops_full_square`] gives that count for comparing with figures
//! published in it. HFU is MFU scaled by the ratio of executed kernel FLOPs with and
//! without recomputation.
//!
//! `0 < MFU ≤ HFU ≤ the compute efficiency ≤ 1` holds by construction (with measured
//! attention kernels, `super::attention`, whose fraction may exceed `compute`, HFU is
//! bounded by the larger of the two instead):
//! - model FLOPs never exceed the FLOPs the kernels execute without recomputation: every
//!   matmul executes `6·` (LoRA's frozen ones `4·`) its parameters per token (forward,
//!   input and weight gradients), fused attention the causal pairs plus the same again
//!   2.5× in backward (`7 · q · (s+1)` per token against the model's `6 · q · s`; the naive
//!   form the full square, `12 · q · s`), and norms, biases and activations execute at
//!   least the `6 ·` their parameters the model counts; every device executes at least
//!   its share (the slowest stage stands for all, with whole layers);
//! - so HFU's numerator, model FLOPs × executed / (executed − recomputed), is at most the
//!   executed FLOPs, and MFU ≤ HFU as executed ≥ executed − recomputed;
//! - every kernel is placed at no more than its efficiency times its unit's peak
//!   ([`place`]), and the step time is at least the sum of the kernel times: matmuls at
//!   `super::TrainEfficiency::compute_for` their dtype, the attention core at
//!   `attention ≤ compute` of the 16-bit peak (validation enforces the order where
//!   both are fitted: a fitted attention does not run closer to peak than the dense
//!   matmuls; a measured one runs at its kernels' fraction), vector ops at
//!   `compute` of the (lower) fp32 peak. With 16-bit matmuls HFU ≤ `compute`; with fp8
//!   matmuls, against the fp8 peak, HFU ≤ max(`compute_fp8`, `compute` × 16-bit peak /
//!   fp8 peak), the 16-bit attention core being the faster of the two when fp8 matmuls
//!   are slow; every factor is at most 1.

use super::Trainer;
use super::config::{Method, Offload, Recompute};
use super::layers;
use crate::dtype::ComputeDtype;
use crate::hardware::Traffic as Pattern;
use crate::model::graph::{self, OpInstance, OpKind, Step, Unit};
use crate::ops::{ByteClasses, Cost};
use crate::roofline::{Bound, Ceilings, Efficiency, place, slowest, time_at};
use serde::Serialize;

/// The `step` object of `train --json`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[non_exhaustive]
pub struct StepReport {
    /// Model FLOPs of one optimizer step over all devices (the MFU numerator).
    pub flops: f64,
    /// Predicted time of one optimizer step, s.
    pub time_s: f64,
    /// Tokens trained per second, all devices.
    pub tokens_per_s: f64,
    /// Tokens per second per device.
    pub tokens_per_s_per_gpu: f64,
    /// Model FLOPs utilization (recomputation not counted; causal attention, see the
    /// [module docs](self)): `0 < mfu <= hfu <=` the compute efficiency `<= 1`.
    pub mfu: f64,
    /// The bound that accounts for most of the step time.
    pub bound: Bound,
    /// Model FLOPs plus the recomputed forward work, counted the same way (MFU's
    /// convention): `flops · executed / (executed - recomputed)` kernel FLOPs.
    pub hardware_flops: f64,
    /// Hardware FLOPs utilization (`hardware_flops` over time × GPUs × peak); at most
    /// the compute efficiency the step assumes.
    pub hfu: f64,
    /// FLOPs the kernels execute per step over all devices (causal-half attention,
    /// 2.5x fused-attention backward, recomputation), from the slowest stage.
    pub executed_flops: f64,
    /// Model FLOP/s achieved per device.
    pub model_flops_per_s_per_gpu: f64,
    /// Dense peak the utilizations are relative to, FLOP/s per device.
    pub peak_flops_per_s: f64,
    /// Tokens per step.
    pub tokens: f64,
    /// Time of one micro-batch (forward, backward, recomputation, exposed TP
    /// communication) on the slowest stage, s.
    pub micro_batch_time_s: f64,
    /// Of the step: compute-bound op time, s.
    pub compute_time_s: f64,
    /// Of the step: memory-bound op time (optimizer update included), s.
    pub memory_time_s: f64,
    /// Tensor-parallel collective time per step before overlap, s.
    pub tp_comm_time_s: f64,
    /// Expert-parallel all-to-all time per step (dispatch and combine, forward and
    /// backward) before overlap, s; it overlaps like the tensor-parallel collectives.
    pub ep_comm_time_s: f64,
    /// Data-parallel (gradient, ZeRO) communication per step before overlap, s.
    pub dp_comm_time_s: f64,
    /// Pipeline sends per step, s.
    pub pp_comm_time_s: f64,
    /// Communication time not hidden by compute, s.
    pub exposed_comm_time_s: f64,
    /// Pipeline bubble `(pp-1)·c/n · t_micro` (`1/v` of the plain bubble when the
    /// chunks are even; see the [module docs](self)), s.
    pub bubble_time_s: f64,
    /// Optimizer update on the device, s.
    pub optimizer_time_s: f64,
    /// Gradient / weight traffic over the host link with offload, s.
    pub offload_time_s: f64,
    /// Context-parallel ring passes (keys and values, their gradients) per step before
    /// overlap with the attention they feed, s.
    pub cp_comm_time_s: f64,
    /// Bubble fraction `(p-1)·c/n / (m + (p-1)·c/n)`.
    pub bubble_fraction: f64,
}

/// Which efficiency and link an op of the training step uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KernelClass {
    /// Attention core (fused kernel or the naive score/value matmuls).
    Attention,
    /// A tensor-parallel collective.
    Collective,
    /// The all-to-all of expert parallelism (dispatch and combine).
    ExpertAllToAll,
    /// The ring of context parallelism: every rank's keys and values passed around the
    /// `cp` ranks of an attention layer (and their gradients back in backward).
    ContextRing,
    /// Everything else (projections, norms, elementwise).
    Other,
}

/// One kernel of a micro-batch: the cost of all its executions, where it runs, its
/// class, and whether it is recomputation.
#[derive(Debug, Clone, Copy)]
struct Kernel {
    cost: Cost,
    unit: Unit,
    class: KernelClass,
    recompute: bool,
}

/// Times and FLOPs of one micro-batch on the slowest stage.
#[derive(Debug, Clone, Copy, Default)]
struct MicroBatch {
    /// Compute-bound op time, s.
    compute_s: f64,
    /// Memory-bound op time, s.
    memory_s: f64,
    /// Tensor-parallel collectives before overlap, s.
    tp_s: f64,
    /// Expert-parallel all-to-alls (dispatch and combine) before overlap, s.
    ep_s: f64,
    /// Context-parallel ring passes before overlap, s.
    cp_s: f64,
    /// Attention cores (forward, backward, recomputed), s: what the ring overlaps.
    attention_s: f64,
    /// Executed FLOPs.
    flops: f64,
    /// Of those, recomputation.
    recomputed_flops: f64,
}

/// Data-parallel, pipeline and host-link time of one step, s.
#[derive(Debug, Clone, Copy)]
struct Traffic {
    dp_s: f64,
    dp_exposed_s: f64,
    pp_s: f64,
    optimizer_s: f64,
    offload_s: f64,
}

fn scale(c: Cost, flops: f64, bytes: f64) -> Cost {
    let b = c.times(bytes);
    Cost {
        flops: c.flops * flops,
        ..b
    }
}

/// Backward cost of a linear layer from its forward cost `y = x·W`: the input gradient
/// `dx = dy·Wᵀ` (same FLOPs as forward; reads `dy` and `W`, writes `dx`) and, unless the
/// weight is frozen, the weight gradient `dW = xᵀ·dy` (same FLOPs again; reads `x` and
/// `dy`, writes `dW` at `grad_bits`). `w_bits` recovers the element count of `W` from the
/// forward weight bytes.
pub(crate) fn backward_cost(fwd: &Cost, w_bits: f64, grad_bits: f64, frozen: bool) -> Cost {
    let x = fwd.read.activations;
    let dy = fwd.written.activations + fwd.written.kv;
    let w = fwd.read.weights;
    let dgrad = Cost {
        flops: fwd.flops,
        read: ByteClasses {
            weights: w,
            activations: dy,
            kv: 0.0,
        },
        written: ByteClasses {
            activations: x,
            ..Default::default()
        },
        link_bytes: 0.0,
    };
    if frozen {
        return dgrad;
    }
    let w_elems = if w_bits > 0.0 { w * 8.0 / w_bits } else { 0.0 };
    dgrad
        + Cost {
            flops: fwd.flops,
            read: ByteClasses {
                activations: x + dy,
                ..Default::default()
            },
            written: ByteClasses {
                weights: w_elems * grad_bits / 8.0,
                ..Default::default()
            },
            link_bytes: 0.0,
        }
}

impl Trainer<'_> {
    /// Effective per-GPU bandwidth of a collective over a group of `size` ranks spaced
    /// `stride` apart: the scale-up link inside a node; across nodes, the `g` members of
    /// the group in each node drive `g` NICs in parallel rings, so the rate is
    /// `min(scale-up, g · inter_node)` for a ring ([`crate::hardware::group_bandwidth`]
    /// for the other patterns).
    fn group_bandwidth(&self, size: u64, stride: u64, traffic: Pattern) -> f64 {
        let scaleup = self
            .hardware
            .device_link()
            .map_or(0.0, |l| l.bytes_per_s_per_direction);
        crate::hardware::group_bandwidth(
            scaleup,
            self.cfg.inter_node_bytes_per_s,
            self.layout.devices_per_node,
            (size, stride),
            traffic,
        )
    }

    /// The expert all-to-all's pattern: copies for another node cross the network once
    /// per node and are forwarded over the scale-up link (DeepSeek-V3's dispatch, arXiv
    /// 2412.19437 section 3.2.2), a token reaching only its `topk_group` groups' nodes
    /// where each node holds whole groups.
    fn expert_traffic(&self) -> Pattern {
        let l = &self.layout;
        let ep = l.ep.max(1);
        let per_domain = l.devices_per_node / l.tp.max(1);
        Pattern::Forwarded {
            network_share: self.model.forwarded_network_share(ep, per_domain),
        }
    }

    /// The share of an op's forward that op-level selective checkpointing
    /// ([`Recompute::Op`]) runs again in backward: the matmuls whose outputs it does not
    /// keep (k of the fused q/k/v projection, o, the up half of a gated MLP's fused gate
    /// and up projection, the second matmul of a plain MLP) and every elementwise op;
    /// the attention core and the kept matmuls run once.
    fn op_recomputed(&self, kind: OpKind) -> f64 {
        let (q, k) = (self.model.q_width() as f64, self.model.kv_width() as f64);
        match kind {
            OpKind::QkvProj => k / (q + 2.0 * k),
            OpKind::OProj => 1.0,
            OpKind::GateUpProj => 0.5,
            OpKind::UpProj => 0.0,
            OpKind::DownProj if self.model.gated_mlp => 0.0,
            OpKind::DownProj => 1.0,
            // shared experts (one op): up of gate, up, down; down of up, down
            OpKind::SharedExperts if self.model.gated_mlp => 1.0 / 3.0,
            OpKind::SharedExperts => 0.5,
            // latent attention keeps its latents (q_a and kv_a outputs) and recomputes
            // the up-projections q_b and kv_b
            OpKind::MlaQProj => match self.model.mla {
                Some(m) if m.q_lora_rank.is_some() => {
                    let qk = (self.model.heads * m.qk_head_dim()) as f64;
                    qk / (self.model.hidden as f64 + qk)
                }
                _ => 1.0,
            },
            OpKind::MlaKvAProj => 0.0,
            // the recurrences keep their outputs, like the attention core
            OpKind::DeltaRule | OpKind::SsmScan => 0.0,
            k if k.is_attention_core() => 0.0,
            _ => 1.0,
        }
    }

    /// Forward, backward and (when recomputed) again forward of one graph op.
    fn op_kernels(&self, op: &OpInstance, out: &mut Vec<Kernel>) {
        let l = &self.layout;
        let frozen = self.cfg.method != Method::Full;
        let mut fwd = op.total();
        let is_comm = op.cost.link_bytes > 0.0;
        let class = if is_comm && op.kind.is_expert_all_to_all() {
            KernelClass::ExpertAllToAll
        } else if is_comm {
            KernelClass::Collective
        } else if op.kind.is_attention_matmul() {
            KernelClass::Attention
        } else {
            KernelClass::Other
        };
        if self.cfg.sequence_parallel && op.kind.is_norm_or_residual() {
            fwd = fwd.times(1.0 / l.tp as f64);
        }
        if l.cp > 1 {
            // a context-parallel rank runs `seq / cp` of each sequence's tokens (and, the
            // split load-balanced, `1 / cp` of its causal attention pairs) on all of the
            // weights
            let weights = (fwd.read.weights, fwd.written.weights);
            fwd = fwd.times(1.0 / l.cp as f64);
            (fwd.read.weights, fwd.written.weights) = weights;
            if class == KernelClass::Attention {
                self.context_ring(op, out);
            }
        }
        if op.routed && l.ep > 1 && self.cfg.expert_imbalance != 1.0 {
            // the busiest rank: its routed tokens' work and traffic, the same weights
            let weights = (fwd.read.weights, fwd.written.weights);
            fwd = fwd.times(self.cfg.expert_imbalance);
            (fwd.read.weights, fwd.written.weights) = weights;
        }
        if self.cfg.compile && op.kind.is_fused_when_compiled() {
            // fused into a neighbour: the FLOPs stay, the memory traffic goes
            fwd = Cost {
                flops: fwd.flops,
                ..Cost::default()
            };
        }
        let w_bits = self.precision.weights.bits();
        let grad_bits = self.cfg.precision.weight_format().bits();
        let bwd = match (op.kind, op.unit) {
            (k, _) if frozen && k.is_embedding() => Cost::default(),
            (OpKind::Attention | OpKind::WindowAttention | OpKind::MlaAttention, _) => {
                scale(fwd, 2.5, 2.0)
            }
            (OpKind::AttnScores | OpKind::AttnValues, _) => fwd.times(2.0),
            (_, Unit::Matrix(_) | Unit::Dequant(_)) => {
                backward_cost(&fwd, w_bits, grad_bits, frozen)
            }
            _ if is_comm => fwd,
            _ => fwd.times(2.0),
        };
        let kernel = |cost, recompute| Kernel {
            cost,
            unit: op.unit,
            class,
            recompute,
        };
        out.push(kernel(fwd, false));
        out.push(kernel(bwd, false));
        let per_layer = op.count > 1.0 || l.layers_per_stage == 1;
        let again = match self.cfg.recompute {
            Recompute::None => 0.0,
            Recompute::Selective if op.kind.is_attention_core() => 1.0,
            Recompute::Selective => 0.0,
            Recompute::Full if per_layer && !op.kind.is_outside_layers() => 1.0,
            Recompute::Full => 0.0,
            Recompute::Op if per_layer && !op.kind.is_outside_layers() && !is_comm => {
                self.op_recomputed(op.kind)
            }
            Recompute::Op => 0.0,
        };
        if again > 0.0 {
            out.push(kernel(fwd.times(again), true));
        }
    }

    /// The ring of context parallelism for an attention op over `count` layers: each of
    /// the `cp` ranks passes its keys and values on `cp - 1` times, so every rank sends
    /// and receives the other ranks' `(cp - 1) / cp · seq` tokens' keys and values per
    /// sequence in forward, and in backward those again and their gradients: three
    /// times the forward bytes. Per token and layer the keys and values are `2 · kv
    /// heads · head_dim` wide (latent attention's up-projected `heads · (qk_head_dim +
    /// v_head_dim)`, as Megatron-Core's ring runs it), of the rank's share of the heads.
    /// Recurrences (linear attention, state-space scans) pass no keys.
    fn context_ring(&self, op: &OpInstance, out: &mut Vec<Kernel>) {
        let l = &self.layout;
        let m = self.model;
        let width = match op.kind {
            OpKind::Attention | OpKind::WindowAttention => {
                2.0 * (m.head_dim * (m.kv_heads / l.tp).max(1)) as f64
            }
            OpKind::MlaAttention => match m.mla {
                Some(a) => ((m.heads / l.tp).max(1) * (a.qk_head_dim() + a.v_head_dim)) as f64,
                None => 0.0,
            },
            _ => 0.0,
        };
        let cp = l.cp as f64;
        let tokens = l.micro_batch as f64 * self.cfg.seq as f64 * (cp - 1.0) / cp;
        let bytes = 3.0 * op.count * tokens * width * self.precision.activations.bytes();
        if bytes > 0.0 {
            out.push(Kernel {
                cost: Cost {
                    link_bytes: bytes,
                    ..Cost::default()
                },
                unit: Unit::Vector,
                class: KernelClass::ContextRing,
                recompute: false,
            });
        }
    }

    /// The LoRA adapters `y += (x·A)·B` of every adapted matrix, forward and backward:
    /// `2 · tokens · adapter params` FLOPs; reads `x` (d_in) and the rank-r bottleneck,
    /// writes the bottleneck and `y` (d_out), at 16 bits; adapters read once.
    /// `Σ(d_in + d_out) = adapter params / r`.
    fn adapter_kernels(&self, out: &mut Vec<Kernel>) {
        let l = &self.layout;
        let tokens = l.micro_batch as f64 * self.cfg.seq as f64;
        let range = self.stage_range(l.pp == 1, true);
        let sp = self.stage(l.pp == 1, true);
        let adapters = self.trainable(&sp, range.clone());
        let r = self.cfg.effective_lora_rank() as f64;
        let e = self.precision.activations.bytes();
        let io = if r > 0.0 { adapters / r } else { 0.0 };
        let targets = self.cfg.lora_targets;
        let bottleneck = layers::sum_over(self.model, range, |k| {
            layers::lora_matrices_of(self.model, k, targets)
        }) * r;
        let act = tokens * (io / 2.0 + bottleneck) * e;
        let fwd = Cost {
            flops: 2.0 * tokens * adapters,
            read: ByteClasses {
                weights: adapters * 2.0,
                activations: act,
                kv: 0.0,
            },
            written: ByteClasses {
                activations: act,
                ..Default::default()
            },
            link_bytes: 0.0,
        };
        let unit = Unit::Matrix(self.precision.activations);
        for cost in [fwd, fwd.times(2.0)] {
            out.push(Kernel {
                cost,
                unit,
                class: KernelClass::Other,
                recompute: false,
            });
        }
    }

    /// Dequantization of frozen sub-16-bit matrices to 16 bits before each forward and
    /// backward matmul (and the recomputed forward): read the packed weights, write
    /// 16-bit copies.
    fn dequantize_kernel(&self) -> Kernel {
        let l = &self.layout;
        let body = self.stage(l.pp == 1, true).body;
        let dq = Cost {
            read: ByteClasses {
                weights: body * self.frozen.bytes(),
                ..Default::default()
            },
            written: ByteClasses {
                weights: body * 2.0,
                ..Default::default()
            },
            ..Default::default()
        };
        let times = if self.cfg.recompute == Recompute::Full {
            3.0
        } else {
            2.0
        };
        Kernel {
            cost: dq.times(times),
            unit: Unit::Vector,
            class: KernelClass::Other,
            recompute: false,
        }
    }

    /// Kernels of one micro-batch on the slowest (last) stage.
    fn micro_batch_kernels(&self) -> Vec<Kernel> {
        let l = &self.layout;
        let step = Step {
            batch: l.micro_batch,
            new_tokens: self.cfg.seq,
            context: self.cfg.seq,
            logits_per_sequence: self.cfg.seq,
            decode: false,
            all_tokens: None,
        };
        // with expert parallelism the graph's `ep` groups are `ep` data-parallel ranks,
        // each with its own micro-batch: attention runs one, the experts the tokens of
        // all `ep` routed to the device's share of them
        let step = Step {
            batch: l.micro_batch.saturating_mul(l.ep.max(1)),
            ..step
        };
        let g = graph::forward_layers(
            self.model,
            &step,
            &self.precision,
            &graph::Shard {
                tp: l.tp,
                ep: l.ep.max(1),
                layers: l.layers_per_stage,
                busiest: false,
                imbalance: 1.0,
                pair_reads_below: 0,
            },
            self.cfg.flash,
            self.stage_range(l.pp == 1, true),
        );
        let mut out = Vec::with_capacity(3 * g.ops().len() + 4);
        for op in g.ops() {
            self.op_kernels(op, &mut out);
        }
        // the multi-token-prediction modules on the last stage: each joins the next
        // token's embedding with the last hidden state, runs one layer and the shared
        // lm_head (the inference draft head's graph)
        let shard = graph::Shard {
            tp: l.tp,
            ep: l.ep.max(1),
            layers: 1,
            busiest: false,
            imbalance: 1.0,
            pair_reads_below: 0,
        };
        for _ in 0..self.cfg.mtp_modules(self.model) {
            let head =
                graph::draft_head(self.model, &step, &self.precision, &shard, self.cfg.flash);
            for op in head.ops() {
                self.op_kernels(op, &mut out);
            }
        }
        if self.cfg.method != Method::Full {
            self.adapter_kernels(&mut out);
            if self.frozen.bits() < 16.0 {
                out.push(self.dequantize_kernel());
            }
        }
        out
    }

    /// Places every kernel of a micro-batch on the roofline and sums the times by bound.
    fn micro_batch(&self) -> MicroBatch {
        let hw = self.hardware;
        let bw = hw.memory.bandwidth_bytes_per_s;
        let vector = Ceilings {
            peak_flops_per_s: hw.peak(ComputeDtype::Fp32).0,
            memory_bytes_per_s: bw,
            link_bytes_per_s: Some(self.group_bandwidth(self.layout.tp, 1, Pattern::Ring)),
        };
        let base_eff = Efficiency {
            compute: self.eff.compute,
            memory: self.eff.memory,
            link: self.eff.link,
            overhead_s: 0.0,
        };
        let a2a = Ceilings {
            link_bytes_per_s: Some(self.group_bandwidth(
                self.layout.ep,
                self.layout.tp,
                self.expert_traffic(),
            )),
            ..vector
        };
        // the ring runs between the `cp` ranks of one tensor-parallel rank, `tp` apart
        let ring = Ceilings {
            link_bytes_per_s: Some(self.group_bandwidth(
                self.layout.cp,
                self.layout.tp,
                Pattern::Ring,
            )),
            ..vector
        };
        // the attention core at the measured kernels' fraction for its query length
        // where the entry names them (train::attention), else the entry's own
        let attention = self.eff.attention_at(self.cfg.seq / self.layout.cp.max(1));
        let mut mb = MicroBatch::default();
        for k in self.micro_batch_kernels() {
            let (ceil, eff) = match k.unit {
                _ if k.class == KernelClass::ExpertAllToAll => (a2a, base_eff),
                _ if k.class == KernelClass::ContextRing => (ring, base_eff),
                Unit::Matrix(d) | Unit::Dequant(d) => (
                    Ceilings {
                        peak_flops_per_s: hw.sustained_peak(d).0,
                        memory_bytes_per_s: bw,
                        link_bytes_per_s: None,
                    },
                    Efficiency {
                        compute: if k.class == KernelClass::Attention {
                            attention
                        } else {
                            self.eff.compute_for(d)
                        },
                        ..base_eff
                    },
                ),
                Unit::Vector => (vector, base_eff),
            };
            mb.flops += k.cost.flops;
            if k.recompute {
                mb.recomputed_flops += k.cost.flops;
            }
            let p = place(&k.cost, &ceil, &eff);
            if k.class == KernelClass::Attention {
                mb.attention_s += p.time_s;
            }
            if k.class == KernelClass::ExpertAllToAll {
                mb.ep_s += p.time_s;
            } else if k.class == KernelClass::ContextRing {
                mb.cp_s += p.time_s;
            } else if k.class == KernelClass::Collective {
                mb.tp_s += p.time_s;
            } else if p.bound == Bound::Compute {
                mb.compute_s += p.time_s;
            } else {
                mb.memory_s += p.time_s;
            }
        }
        mb
    }

    /// Pipeline sends, data-parallel synchronisation and the optimizer update of one
    /// step, given the op time `op_s` of one micro-batch.
    fn traffic(&self, op_s: f64) -> Traffic {
        let l = &self.layout;
        let m = l.micro_batches as f64;
        let v = self.cfg.virtual_stages as f64;
        // pipeline sends: activations (and their gradients) of one micro-batch cross each
        // stage boundary; the slowest stage sends one way and receives the other. A
        // context-parallel rank sends its `seq / cp` tokens.
        let e = self.precision.activations.bytes();
        let pp_bw = self.group_bandwidth(l.pp, l.tp * l.cp * l.dp, Pattern::Ring);
        let pp_bytes = if l.pp > 1 {
            2.0 * l.micro_batch as f64 * self.cfg.seq as f64 * self.model.hidden as f64 * e
                / (l.tp * l.cp) as f64
                * v
        } else {
            0.0
        };
        let pp_s = m * time_at(pp_bytes, pp_bw * self.eff.link);

        // data-parallel gradient synchronisation / ZeRO traffic per step
        let sp = self.stage(l.pp == 1, true);
        let range = self.stage_range(l.pp == 1, true);
        let trainable = self.trainable(&sp, range.clone());
        // routed experts under expert parallelism synchronise over the `dp / ep` ranks
        // holding the same experts
        let routed = self.trainable_routed(&sp, range);
        let grad_b = self.cfg.precision.weight_format().bytes();
        let frozen_bytes = match self.cfg.method {
            Method::Full => 0.0,
            _ => self.frozen_bytes(&sp),
        };
        let frozen_routed = match self.cfg.method {
            Method::Full => 0.0,
            _ if routed > 0.0 || l.ep > 1 => sp.routed * self.frozen.bytes(),
            _ => 0.0,
        };
        let ep = l.ep.max(1);
        // gradients are reduced over every rank holding the same weights: the
        // data-parallel ranks and the context-parallel ranks within each
        let replicas = l.dp * l.cp;
        let sync_time = |trainable: f64, frozen: f64, ranks: u64, stride: u64| {
            let n = ranks as f64;
            let ring = if ranks > 1 { (n - 1.0) / n } else { 0.0 };
            let dp_bytes = if self.cfg.zero >= 3 {
                // per micro-batch: all-gather weights for forward and again for backward,
                // reduce-scatter gradients.
                let w = trainable * grad_b + frozen;
                m * ring * (2.0 * w + trainable * grad_b)
            } else {
                // once per step: all-reduce (ZeRO-0) or reduce-scatter + all-gather (1, 2)
                // of the gradients, overlapping the last micro-batch's backward.
                2.0 * ring * trainable * grad_b
            };
            time_at(
                dp_bytes,
                self.group_bandwidth(ranks, stride, Pattern::Ring) * self.eff.link,
            )
        };
        let overlappable = if self.cfg.zero >= 3 { m * op_s } else { op_s };
        let dp_s = if ep > 1 {
            sync_time(
                trainable - routed,
                frozen_bytes - frozen_routed,
                replicas,
                l.tp,
            ) + sync_time(routed, frozen_routed, replicas / ep, l.tp * ep)
        } else {
            sync_time(trainable, frozen_bytes, replicas, l.tp)
        };
        let dp_exposed_s = dp_s - (self.eff.overlap_dp * dp_s).min(overlappable);

        // optimizer update (sharded by ZeRO >= 1)
        let n = replicas as f64;
        let shard = if self.cfg.zero >= 1 { n } else { 1.0 };
        let shard_e = if self.cfg.zero >= 1 {
            (n / ep as f64).max(1.0)
        } else {
            1.0
        };
        let upd = if ep > 1 {
            (trainable - routed) / shard + routed / shard_e
        } else {
            trainable / shard
        };
        let bw = self.hardware.memory.bandwidth_bytes_per_s;
        let (optimizer_s, offload_s) = match self.cfg.offload {
            Offload::None => (
                upd * self
                    .cfg
                    .optimizer
                    .update_bytes_per_param(self.cfg.precision)
                    / (bw * self.eff.memory),
                0.0,
            ),
            Offload::Cpu => {
                let host = self
                    .hardware
                    .host_link
                    .as_ref()
                    .map_or(0.0, |h| h.bytes_per_s_per_direction);
                // gradients down and updated 16-bit weights up; the two directions of
                // the link run concurrently.
                (0.0, time_at(upd * grad_b, host * self.eff.link))
            }
        };
        Traffic {
            dp_s,
            dp_exposed_s,
            pp_s,
            optimizer_s,
            offload_s,
        }
    }

    /// Model FLOPs of one step over all devices: `6·N·tokens` (LoRA: `4·N_frozen +
    /// 6·N_adapters`) plus `6 · layers · heads·head_dim · seq` per token for causal
    /// attention (see the [module docs](self)).
    pub fn model_flops(&self) -> f64 {
        let p = self.model.params();
        let table_lookup = p.embedding as f64
            - if self.model.tied_embeddings {
                (self.model.vocab * self.model.hidden) as f64
            } else {
                0.0
            };
        // the parameters one token multiplies: inactive routed experts left out; each
        // multi-token-prediction module multiplies its layer's active parameters, its
        // `2·hidden × hidden` projection and the shared lm_head again
        let (h, v) = (self.model.hidden as f64, self.model.vocab as f64);
        let mtp = self.mtp_kind().map_or(0.0, |kind| {
            let mixer = self.model.try_mixer_params(kind.mixer).unwrap_or(0) as f64;
            let ffn = self.model.try_ffn_params(kind.ffn).map_or(0, |(_, a)| a) as f64;
            self.cfg.mtp_modules(self.model) as f64 * (mixer + ffn + 2.0 * h * h + v * h)
        });
        let n = p.active as f64 - table_lookup + mtp;
        let dense = match self.cfg.method {
            Method::Full => 6.0 * n,
            _ => 4.0 * n + 6.0 * self.trainable_params(),
        };
        self.tokens_per_step() * (dense + self.attention_flops_per_token())
    }

    /// Model FLOPs of one step with attention counted over the full `s × s` square,
    /// `12 · layers · heads·head_dim · seq` per token, as PaLM and Megatron-LM's
    /// published MFUs and TFLOP/s do: for comparing with such figures only (it exceeds
    /// what a causal kernel executes, so its utilization is not bounded by 1).
    pub fn model_flops_full_square(&self) -> f64 {
        self.model_flops() + self.tokens_per_step() * self.attention_flops_per_token()
    }

    /// Tokens per optimizer step, all devices.
    pub(super) fn tokens_per_step(&self) -> f64 {
        self.layout.global_batch as f64 * self.cfg.seq as f64
    }

    /// Causal attention FLOPs per token in the model count: `6 · layers · q · s` (forward
    /// `2 · q · s` over the `s²/2` causal pairs, backward twice that). A layer with a
    /// sliding window `w < s` sees fewer keys: its `s` becomes the span its pairs give,
    /// `2 · pairs(s, w) / s - 1` (`s` itself without a window).
    pub(super) fn attention_flops_per_token(&self) -> f64 {
        let s = self.cfg.seq;
        // the multi-token-prediction modules: one more layer of the last kind each
        let mtp = self
            .mtp_kind()
            .map(|k| (k, self.cfg.mtp_modules(self.model)));
        self.model
            .kind_counts()
            .iter()
            .map(|&(k, n)| (k, n))
            .chain(mtp)
            .map(|(kind, layers)| {
                // the width the score and value matmuls multiply over, per side: latent
                // attention's queries and keys are `H·(d_nope + d_rope)` wide, its
                // values `H·d_v`; recurrences (linear attention, state-space blocks)
                // have no quadratic term in the convention
                let q = match (kind.mixer, self.model.mla) {
                    (crate::model::Mixer::Attention, _) => self.model.q_width() as f64,
                    (crate::model::Mixer::Mla, Some(m)) => {
                        (self.model.heads * (m.qk_head_dim() + m.v_head_dim)) as f64 / 2.0
                    }
                    _ => 0.0,
                };
                let span = match kind.window {
                    Some(w) if w < s => 2.0 * crate::ops::windowed_pairs(s, s, w) / s as f64 - 1.0,
                    _ => s as f64,
                };
                6.0 * layers as f64 * q * span
            })
            .sum()
    }

    /// The layer kind of the multi-token-prediction modules trained (the model's last),
    /// `None` without any.
    fn mtp_kind(&self) -> Option<crate::model::LayerKind> {
        let &k = self.model.layer_kinds.last()?;
        (self.cfg.mtp_modules(self.model) > 0).then(|| self.model.kinds[k as usize])
    }

    /// Predicts one optimizer step.
    pub fn step(&self) -> StepReport {
        let l = &self.layout;
        let mb = self.micro_batch();
        let op_s = mb.compute_s + mb.memory_s;
        // an overlapped all-to-all hides behind the adjacent micro-batch's computation;
        // what it leaves, and the other collectives, overlap by the stack's fraction
        let hidden_ep = if self.cfg.overlap_ep && l.ep > 1 {
            mb.ep_s.min(op_s)
        } else {
            0.0
        };
        // the ring passes the next chunk's keys while the attention of this one runs
        let cp_exposed = (mb.cp_s - mb.attention_s).max(0.0);
        let comm_s = mb.tp_s + mb.ep_s - hidden_ep + cp_exposed;
        let tp_exposed = comm_s - (self.eff.overlap_tp * comm_s).min(op_s - hidden_ep);
        let t_micro = op_s + tp_exposed;
        let m = l.micro_batches as f64;
        let n = l.layers_per_stage.max(1);
        let chunk = n.div_ceil(self.cfg.virtual_stages);
        let bubble_mb = (l.pp - 1) as f64 * chunk as f64 / n as f64;
        let tr = self.traffic(op_s);
        let time =
            (m + bubble_mb) * t_micro + tr.dp_exposed_s + tr.pp_s + tr.optimizer_s + tr.offload_s;
        let scale_mb = m + bubble_mb;
        let comm_exposed = scale_mb * tp_exposed + tr.dp_exposed_s + tr.pp_s;
        let (_, bound) = slowest(
            scale_mb * mb.compute_s,
            scale_mb * mb.memory_s + tr.optimizer_s,
            comm_exposed + tr.offload_s,
            0.0,
        );

        let model_flops = self.model_flops();
        let hardware_flops = if mb.flops > mb.recomputed_flops {
            model_flops * mb.flops / (mb.flops - mb.recomputed_flops)
        } else {
            model_flops
        };
        let peak = self
            .hardware
            .peak(
                self.precision
                    .weights
                    .compute_dtype(self.precision.activations),
            )
            .0;
        let gpus = l.gpus as f64;
        let tokens = self.tokens_per_step();
        let util = |f: f64| time_at(f, time * gpus * peak);
        StepReport {
            flops: model_flops,
            time_s: time,
            tokens_per_s: time_at(tokens, time),
            tokens_per_s_per_gpu: time_at(tokens, time * gpus),
            mfu: util(model_flops),
            bound,
            hardware_flops,
            hfu: util(hardware_flops),
            // the slowest stage's per-micro-batch FLOPs stand for every stage
            executed_flops: mb.flops * m * (l.tp * l.cp * l.dp * l.pp) as f64,
            model_flops_per_s_per_gpu: time_at(model_flops, time * gpus),
            peak_flops_per_s: peak,
            tokens,
            micro_batch_time_s: t_micro,
            compute_time_s: scale_mb * mb.compute_s,
            memory_time_s: scale_mb * mb.memory_s + tr.optimizer_s,
            tp_comm_time_s: m * mb.tp_s,
            ep_comm_time_s: m * mb.ep_s,
            cp_comm_time_s: m * mb.cp_s,
            dp_comm_time_s: tr.dp_s,
            pp_comm_time_s: tr.pp_s,
            exposed_comm_time_s: comm_exposed,
            bubble_time_s: bubble_mb * t_micro,
            optimizer_time_s: tr.optimizer_s,
            offload_time_s: tr.offload_s,
            bubble_fraction: bubble_mb / (m + bubble_mb),
        }
    }
}
