//! torchtune: `tune run` of a recipe and one of its configs for the model (the table in
//! `data/emit/torchtune.toml`), with key=value overrides.

use super::shell::{Cmd, script};
use super::{EmittedFile, Format, Training, header, refuse};
use crate::error::Result;
use crate::train::{LoraTargets, Method, Offload, Optimizer, Recompute, TrainPrecision};

/// The config directory and the configs torchtune ships for a ridgeline model id.
fn configs(model: &str) -> Option<(String, Vec<String>)> {
    let text = Format::Torchtune.flag_list();
    let mut in_table = false;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_table = line == "[configs]";
            continue;
        }
        if !in_table {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        if key.trim().trim_matches('"') != model {
            continue;
        }
        // { dir = "llama3_1/8B", have = ["full", "lora"] }
        let dir = value
            .split("dir = \"")
            .nth(1)?
            .split('"')
            .next()?
            .to_string();
        let have = value
            .split("have = [")
            .nth(1)?
            .split(']')
            .next()?
            .split(',')
            .map(|h| h.trim().trim_matches('"').to_string())
            .filter(|h| !h.is_empty())
            .collect();
        return Some((dir, have));
    }
    None
}

/// `torchtune.sh`.
pub(crate) fn emit(t: &Training) -> Result<Vec<EmittedFile>> {
    let f = Format::Torchtune;
    let Some((dir, have)) = configs(&t.model.id) else {
        return Err(refuse(
            f,
            format!(
                "{} ships no recipe config for {} (see data/emit/torchtune.toml)",
                f.version(),
                t.model.id
            ),
        ));
    };
    let method = match t.method {
        Method::Full => "full",
        Method::Lora => "lora",
        Method::Qlora => "qlora",
    };
    let single = format!("{method}_single_device");
    let (recipe, config, distributed) = if t.gpus == 1 && have.contains(&single) {
        let recipe = match t.method {
            Method::Full => "full_finetune_single_device",
            _ => "lora_finetune_single_device",
        };
        (recipe, format!("{dir}_{single}"), false)
    } else if have.iter().any(|h| h == method) {
        let recipe = match t.method {
            Method::Full => "full_finetune_distributed",
            _ => "lora_finetune_distributed",
        };
        (recipe, format!("{dir}_{method}"), true)
    } else {
        return Err(refuse(
            f,
            format!(
                "{} has no {method} config for {} ({dir}) on {} device(s) (it has: {})",
                f.version(),
                t.model.id,
                t.gpus,
                have.join(", ")
            ),
        ));
    };
    let mut comments = header(f, &super::training_summary(t));
    let mut cmd = Cmd::new(&["tune", "run"]);
    if distributed {
        cmd.flag("--nnodes", t.nodes());
        cmd.flag("--nproc_per_node", t.per_node());
    }
    cmd.switch(recipe);
    cmd.flag("--config", &config);
    let kv = |cmd: &mut Cmd, k: &str, v: &dyn std::fmt::Display| {
        cmd.switch(&format!("{k}={v}"));
    };
    let py = |b: bool| if b { "True" } else { "False" };
    kv(&mut cmd, "batch_size", &t.micro_batch);
    kv(&mut cmd, "gradient_accumulation_steps", &t.accumulation);
    kv(
        &mut cmd,
        "enable_activation_checkpointing",
        &py(t.recompute != Recompute::None),
    );
    if matches!(t.recompute, Recompute::Selective | Recompute::Op) {
        comments.push(format!(
            "recompute {}: torchtune checkpoints whole layers",
            t.recompute.name()
        ));
    }
    kv(&mut cmd, "dtype", &"bf16");
    match t.precision {
        TrainPrecision::Bf16Pure => {}
        p => comments.push(format!(
            "precision {}: torchtune trains in bf16 throughout (no fp32 master weights{})",
            p.name(),
            if p == TrainPrecision::Fp8 {
                "; fp8 GEMMs are not switched on here"
            } else {
                ""
            }
        )),
    }
    if distributed {
        if t.zero <= 2 {
            kv(&mut cmd, "fsdp_reshard_after_forward", &"False");
        }
        if t.zero <= 1 {
            comments.push(format!(
                "ZeRO-{}: torchtune always shards with FSDP2; the closest is ZeRO-2 (weights \
                 kept after forward, gradients and optimizer states sharded)",
                t.zero
            ));
        }
        if t.offload == Offload::Cpu {
            kv(&mut cmd, "fsdp_cpu_offload", &"True");
            comments.push(
                "fsdp_cpu_offload moves the parameters and gradients too, not only the optimizer \
                 states"
                    .into(),
            );
        }
        if t.tp > 1 && t.method == Method::Full {
            kv(&mut cmd, "tensor_parallel_dim", &t.tp);
            comments.push(
                "tensor_parallel_dim needs a tensor_parallel_plan for the model in the config"
                    .into(),
            );
        }
    } else if t.offload == Offload::Cpu {
        comments.push("offload cpu: the single-device recipe has no optimizer offload".into());
    }
    if t.pp > 1 || t.ep > 1 || t.cp > 1 || (t.tp > 1 && t.method != Method::Full) {
        comments.push(format!(
            "tp {} pp {} ep {}{}: torchtune's recipes do not express this layout; it runs the \
             {} devices as data parallel",
            t.tp,
            t.pp,
            t.ep,
            t.cp_words(),
            t.gpus
        ));
    }
    comments.extend(super::moe_training_notes(t, "torchtune"));
    if t.compile {
        kv(&mut cmd, "compile", &"True");
    }
    if t.optimizer_in_backward && t.method == Method::Full {
        kv(&mut cmd, "optimizer_in_bwd", &"True");
    }
    match t.optimizer {
        Optimizer::Adamw => {}
        Optimizer::Sgd => kv(&mut cmd, "optimizer._component_", &"torch.optim.SGD"),
        Optimizer::Adamw8bit => kv(
            &mut cmd,
            "optimizer._component_",
            &"bitsandbytes.optim.PagedAdamW8bit",
        ),
        Optimizer::Adafactor => comments.push(
            "optimizer adafactor: set optimizer._component_ to an Adafactor implementation".into(),
        ),
    }
    if let Some(rank) = t.lora_rank {
        kv(&mut cmd, "model.lora_rank", &rank);
        let (attn, mlp) = match t.lora_targets {
            LoraTargets::QueryValue => ("[q_proj,v_proj]", false),
            LoraTargets::AllLinear => ("[q_proj,k_proj,v_proj,output_proj]", true),
        };
        kv(&mut cmd, "model.lora_attn_modules", &attn);
        kv(&mut cmd, "model.apply_lora_to_mlp", &py(mlp));
    }
    comments.push(format!(
        "download the weights first: tune download {} (the config names the paths)",
        super::hf_repo(&t.model).unwrap_or_else(|| t.model.id.clone())
    ));
    Ok(vec![EmittedFile {
        name: "torchtune.sh".into(),
        contents: script(&comments, &[&cmd]),
    }])
}
