//! PyTorch FSDP through Accelerate: an `accelerate` config (FSDP v1 keys) and the
//! `accelerate launch` line with the Hugging Face Trainer's batch arguments.

use super::shell::{Cmd, script};
use super::{EmittedFile, Format, Training, header, lora_note};
use crate::error::Result;
use crate::train::{Offload, Recompute, TrainPrecision};

/// The config file the launch line names.
pub(crate) const CONFIG: &str = "fsdp_accelerate.yaml";

/// FSDP's sharding strategy for a ZeRO stage, and what it shards beyond the stage.
pub(crate) fn sharding(zero: u64) -> (&'static str, Option<&'static str>) {
    match zero {
        0 => ("NO_SHARD", None),
        1 => (
            "SHARD_GRAD_OP",
            Some(
                "ZeRO-1: FSDP has no optimizer-only sharding; SHARD_GRAD_OP also shards gradients (ZeRO-2)",
            ),
        ),
        2 => ("SHARD_GRAD_OP", None),
        _ => ("FULL_SHARD", None),
    }
}

/// `fsdp.sh` and `fsdp_accelerate.yaml`.
pub(crate) fn emit(t: &Training) -> Result<Vec<EmittedFile>> {
    let f = Format::Fsdp;
    let mut comments = header(f, &super::training_summary(t));
    let (strategy, note) = sharding(t.zero);
    comments.extend(note.map(String::from));
    let mixed = match t.precision {
        TrainPrecision::Bf16 => "bf16",
        TrainPrecision::Fp16 => "fp16",
        TrainPrecision::Fp8 => "fp8",
        TrainPrecision::Bf16Pure => {
            comments.push(
                "precision bf16-pure: mixed_precision no, with the model loaded in bf16 by train.py"
                    .into(),
            );
            "no"
        }
    };
    if t.offload == Offload::Cpu {
        comments.push(
            "offload cpu: FSDP offloads the parameters with their gradients and optimizer \
             states, more than the optimizer states ridgeline moved"
                .into(),
        );
    }
    if t.recompute == Recompute::Selective || t.recompute == Recompute::Op {
        comments.push(format!(
            "recompute {}: FSDP activation checkpointing recomputes whole layers",
            t.recompute.name()
        ));
    }
    if t.tp > 1 || t.pp > 1 || t.ep > 1 || t.cp > 1 {
        comments.push(format!(
            "tp {} pp {} ep {}{}: not expressed by this config; FSDP shards over all {} ranks as data parallel",
            t.tp,
            t.pp,
            t.ep,
            t.cp_words(),
            t.gpus
        ));
    }
    if let Some(n) = lora_note(t) {
        comments.push(n);
    }
    comments.extend(super::moe_training_notes(t, "accelerate's FSDP"));
    let yes = |b: bool| if b { "true" } else { "false" };
    let mut yaml = String::new();
    for c in header(f, &super::training_summary(t)) {
        yaml.push_str(&format!("# {c}\n"));
    }
    yaml.push_str(&format!(
        "compute_environment: LOCAL_MACHINE
distributed_type: FSDP
mixed_precision: {mixed}
num_machines: {nodes}
num_processes: {gpus}
machine_rank: 0
fsdp_config:
  fsdp_version: 1
  fsdp_sharding_strategy: {strategy}
  fsdp_offload_params: {offload}
  fsdp_activation_checkpointing: {ac}
  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP
  fsdp_state_dict_type: SHARDED_STATE_DICT
  fsdp_use_orig_params: true
",
        nodes = t.nodes(),
        gpus = t.gpus,
        offload = yes(t.offload == Offload::Cpu),
        ac = yes(t.recompute != Recompute::None),
    ));
    if t.nodes() > 1 {
        comments.push(format!(
            "run on each of the {} nodes with its own machine_rank and main_process_ip",
            t.nodes()
        ));
    }
    let mut cmd = Cmd::new(&["accelerate", "launch"]);
    cmd.flag("--config_file", CONFIG);
    cmd.switch("train.py");
    cmd.flag("--per_device_train_batch_size", t.micro_batch);
    cmd.flag("--gradient_accumulation_steps", t.accumulation);
    Ok(vec![
        EmittedFile {
            name: "fsdp.sh".into(),
            contents: script(&comments, &[&cmd]),
        },
        EmittedFile {
            name: CONFIG.into(),
            contents: yaml,
        },
    ])
}
