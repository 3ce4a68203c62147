//! Megatron-LM: `torchrun pretrain_gpt.py` with the layout, batch, precision,
//! recomputation and optimizer flags, and the model's shape.

use super::shell::{Cmd, script};
use super::{EmittedFile, Format, Training, header, refuse};
use crate::error::Result;
use crate::train::{Method, Offload, Optimizer, Recompute, TrainPrecision};

/// `megatron.sh`.
pub(crate) fn emit(t: &Training) -> Result<Vec<EmittedFile>> {
    let f = Format::Megatron;
    if t.method != Method::Full {
        return Err(refuse(
            f,
            format!(
                "trains every weight: pretrain_gpt.py has no {} (use --emit torchtune, deepspeed or fsdp)",
                t.method.name()
            ),
        ));
    }
    let m = &t.model;
    let mut comments = header(f, &super::training_summary(t));
    let mut cmd = Cmd::new(&["torchrun"]);
    cmd.flag("--nproc_per_node", t.per_node());
    cmd.flag("--nnodes", t.nodes());
    cmd.switch("pretrain_gpt.py");
    cmd.flag("--tensor-model-parallel-size", t.tp);
    cmd.flag("--pipeline-model-parallel-size", t.pp);
    if t.cp > 1 {
        cmd.flag("--context-parallel-size", t.cp);
    }
    if t.virtual_stages > 1 {
        cmd.flag(
            "--num-layers-per-virtual-pipeline-stage",
            (m.layers / (t.pp * t.virtual_stages)).max(1),
        );
    }
    if t.sequence_parallel {
        cmd.switch("--sequence-parallel");
    }
    if t.ep > 1 {
        cmd.flag("--expert-model-parallel-size", t.ep);
        // the all-to-all the prediction costs: across nodes DeepEP's, which sends a
        // token once per node and forwards it there
        if t.ep_across_nodes() {
            cmd.flag("--moe-token-dispatcher-type", "flex");
            cmd.switch("--moe-enable-deepep");
        } else {
            cmd.flag("--moe-token-dispatcher-type", "alltoall");
        }
    }
    cmd.flag("--num-layers", m.layers);
    cmd.flag("--hidden-size", m.hidden);
    cmd.flag("--ffn-hidden-size", m.intermediate);
    cmd.flag("--num-attention-heads", m.heads);
    if m.kv_heads < m.heads {
        cmd.switch("--group-query-attention");
        cmd.flag("--num-query-groups", m.kv_heads);
    }
    if m.gated_mlp {
        cmd.switch("--swiglu");
    }
    if !m.tied_embeddings {
        cmd.switch("--untie-embeddings-and-output-weights");
    }
    if m.experts > 1 {
        cmd.flag("--num-experts", m.experts);
        cmd.flag("--moe-router-topk", m.experts_per_token);
        cmd.flag("--moe-ffn-hidden-size", m.expert_intermediate);
        // group-limited routing (config.json n_group, topk_group)
        if let Some(g) = m.expert_groups {
            cmd.flag("--moe-router-num-groups", g.groups);
            cmd.flag("--moe-router-group-topk", g.per_token);
        }
        if m.shared_experts > 0 {
            cmd.flag(
                "--moe-shared-expert-intermediate-size",
                m.shared_intermediate,
            );
        }
    }
    cmd.flag("--seq-length", t.seq);
    cmd.flag("--max-position-embeddings", t.seq.max(m.max_context));
    cmd.flag("--micro-batch-size", t.micro_batch);
    cmd.flag("--global-batch-size", t.global_batch);
    match t.precision {
        TrainPrecision::Fp16 => {
            cmd.switch("--fp16");
        }
        TrainPrecision::Fp8 => {
            cmd.switch("--bf16");
            cmd.flag("--fp8-format", "hybrid");
        }
        TrainPrecision::Bf16 => {
            cmd.switch("--bf16");
        }
        TrainPrecision::Bf16Pure => {
            cmd.switch("--bf16");
            comments.push(
                "precision bf16-pure: Megatron-LM keeps fp32 master weights with --bf16".into(),
            );
        }
    }
    match t.recompute {
        Recompute::None => {}
        Recompute::Selective | Recompute::Op => {
            cmd.flag("--recompute-granularity", "selective");
        }
        Recompute::Full => {
            cmd.flag("--recompute-granularity", "full");
            cmd.flag("--recompute-method", "uniform");
            cmd.flag("--recompute-num-layers", 1);
        }
    }
    if t.zero >= 1 {
        cmd.switch("--use-distributed-optimizer");
        if t.zero >= 2 {
            comments.push(format!(
                "ZeRO-{}: the distributed optimizer shards optimizer states and reduce-scatters \
                 gradients; weights are not sharded (Megatron FSDP would)",
                t.zero
            ));
        }
    }
    if t.offload == Offload::Cpu {
        // the hybrid device optimizer runs on the precision-aware optimizer's code path
        // (an assertion of arguments.py)
        cmd.switch("--optimizer-cpu-offload");
        cmd.switch("--use-precision-aware-optimizer");
    }
    match t.optimizer {
        Optimizer::Adamw => {
            cmd.flag("--optimizer", "adam");
        }
        Optimizer::Sgd => {
            cmd.flag("--optimizer", "sgd");
        }
        o => {
            cmd.flag("--optimizer", "adam");
            comments.push(format!(
                "optimizer {}: Megatron-LM offers adam and sgd; adam given",
                o.name()
            ));
        }
    }
    if t.mtp > 0 {
        cmd.flag("--mtp-num-layers", t.mtp);
    }
    if t.overlap_ep {
        // transformer_config.py's conditions for the combined 1F1B schedule
        let blocked = if t.pp > 1 && t.virtual_stages <= 1 {
            Some("a pipelined run needs an interleaved schedule (--virtual-stages)")
        } else if t.recompute == Recompute::Full {
            Some("it refuses full recomputation")
        } else if t.mtp > 1 {
            Some("it takes at most one multi-token-prediction layer")
        } else {
            None
        };
        match blocked {
            None => {
                cmd.switch("--overlap-moe-expert-parallel-comm");
            }
            Some(why) => comments.push(format!(
                "overlap-ep: --overlap-moe-expert-parallel-comm not set: {why}; the \
                 prediction assumed the all-to-all hidden"
            )),
        }
    }
    if m.mla.is_some() || m.linear.is_some() || m.ssm.is_some() || m.mamba.is_some() {
        comments.push(format!(
            "{}: its latent, linear or state-space layers need the model's own Megatron \
             recipe flags beyond these",
            m.id
        ));
    }
    comments.push(
        "data, tokenizer, learning rate and checkpoint flags are the run's own: add them".into(),
    );
    Ok(vec![EmittedFile {
        name: "megatron.sh".into(),
        contents: script(&comments, &[&cmd]),
    }])
}
