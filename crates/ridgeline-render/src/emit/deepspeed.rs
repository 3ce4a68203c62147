//! DeepSpeed: `ds_config.json` (batch sizes, ZeRO stage and optimizer offload,
//! precision, activation checkpointing, optimizer) and the `deepspeed` launcher line.

use super::shell::{Cmd, script};
use super::{EmittedFile, Format, Training, header, lora_note};
use crate::error::Result;
use crate::train::{Offload, Optimizer, Recompute, TrainPrecision};

/// The config file the launch line names.
pub(crate) const CONFIG: &str = "ds_config.json";

/// `deepspeed.sh` and `ds_config.json`.
pub(crate) fn emit(t: &Training) -> Result<Vec<EmittedFile>> {
    let f = Format::Deepspeed;
    let mut comments = header(f, &super::training_summary(t));
    let mut cfg = serde_json::json!({
        "train_batch_size": t.global_batch,
        "train_micro_batch_size_per_gpu": t.micro_batch,
        "gradient_accumulation_steps": t.accumulation,
        "zero_optimization": { "stage": t.zero },
    });
    if t.offload == Offload::Cpu {
        cfg["zero_optimization"]["offload_optimizer"] =
            serde_json::json!({ "device": "cpu", "pin_memory": true });
    }
    match t.precision {
        TrainPrecision::Fp16 => cfg["fp16"] = serde_json::json!({ "enabled": true }),
        p => {
            cfg["bf16"] = serde_json::json!({ "enabled": true });
            if p == TrainPrecision::Fp8 {
                comments.push(
                    "precision fp8: DeepSpeed's config has no fp8 switch; train.py takes fp8 \
                     GEMMs from Transformer Engine (bf16 elsewhere)"
                        .into(),
                );
            }
            if p == TrainPrecision::Bf16Pure {
                comments.push(
                    "precision bf16-pure: load the model in bf16 and keep the optimizer states \
                     in bf16 in train.py (DeepSpeed's bf16 keeps fp32 master weights)"
                        .into(),
                );
            }
        }
    }
    if t.recompute != Recompute::None {
        cfg["activation_checkpointing"] = serde_json::json!({
            "partition_activations": false,
            "cpu_checkpointing": false,
            "contiguous_memory_optimization": false,
        });
        comments.push(format!(
            "recompute {}: train.py wraps each layer with deepspeed.checkpointing.checkpoint \
             (or model.gradient_checkpointing_enable()){}",
            t.recompute.name(),
            if t.recompute == Recompute::Full {
                ""
            } else {
                "; DeepSpeed recomputes whole layers, not a selective part"
            }
        ));
    }
    match t.optimizer {
        Optimizer::Adamw => cfg["optimizer"] = serde_json::json!({ "type": "AdamW" }),
        o => comments.push(format!(
            "optimizer {}: not a DeepSpeed built-in here; train.py passes it to \
             deepspeed.initialize(optimizer=...)",
            o.name()
        )),
    }
    if t.cp > 1 {
        comments.push(format!(
            "cp {}: DeepSpeed has no ring context parallelism (its Ulysses sequence parallelism \
             splits heads, not the keys and values ring); train.py must build the context-parallel \
             groups itself",
            t.cp
        ));
    }
    if t.tp > 1 || t.pp > 1 {
        comments.push(format!(
            "tp {} pp {}: DeepSpeed ZeRO does not split layers; train.py builds the \
             model-parallel groups (Megatron-DeepSpeed) and passes mpu to deepspeed.initialize, \
             so that train_batch_size counts the {} data-parallel ranks",
            t.tp, t.pp, t.dp
        ));
    }
    if t.ep > 1 {
        comments.push(format!(
            "ep {}: the MoE layers in train.py are deepspeed.moe.layer.MoE(ep_size={})",
            t.ep, t.ep
        ));
    }
    if let Some(note) = lora_note(t) {
        comments.push(note);
    }
    comments.extend(super::moe_training_notes(t, "DeepSpeed"));
    if t.optimizer_in_backward {
        comments.push("optimizer in backward: not a DeepSpeed option".into());
    }
    let mut cmd = Cmd::new(&["deepspeed"]);
    cmd.flag("--num_nodes", t.nodes());
    cmd.flag("--num_gpus", t.per_node());
    if t.nodes() > 1 {
        cmd.flag("--hostfile", "hostfile");
        comments.push(format!(
            "hostfile lists the {} nodes, one `host slots={}` line each",
            t.nodes(),
            t.per_node()
        ));
    }
    cmd.switch("train.py");
    cmd.flag("--deepspeed", CONFIG);
    let json = serde_json::to_string_pretty(&cfg).unwrap_or_default() + "\n";
    Ok(vec![
        EmittedFile {
            name: "deepspeed.sh".into(),
            contents: script(&comments, &[&cmd]),
        },
        EmittedFile {
            name: CONFIG.into(),
            contents: json,
        },
    ])
}
