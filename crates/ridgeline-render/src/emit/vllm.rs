//! vLLM: one `vllm serve` command line.

use super::shell::{Cmd, script};
use super::{
    Drafter, EAGLE_HEAD, EmittedFile, Format, Serving, WeightsHow, draft_path, drafter_notes,
    header, python_engine_weights, refuse,
};
use crate::dtype::Format as Dtype;
use crate::error::Result;

/// The `vllm serve` command of `s` and the comments it needs (also what the k8s
/// manifest runs).
pub(crate) fn command(s: &Serving, format: Format) -> Result<(Cmd, Vec<String>)> {
    let mut notes = Vec::new();
    let mut cmd = Cmd::new(&["vllm", "serve", &s.model_path()]);
    if super::hf_repo(&s.model).is_none() {
        notes.push(format!(
            "no Hugging Face repo is known for {}: replace the model path with its checkpoint",
            s.model.id
        ));
    }
    cmd.flag("--tensor-parallel-size", s.tp());
    cmd.flag("--pipeline-parallel-size", s.pp);
    if s.ep > 1 {
        cmd.flag("--data-parallel-size", s.ep);
        cmd.switch("--enable-expert-parallel");
        if s.group() > 1 {
            notes.push(format!(
                "ridgeline places the routed experts on {} groups of {} tensor-parallel devices; \
                 vLLM's expert parallelism spreads them over all {} devices (tp x dp)",
                s.ep,
                s.group(),
                s.gpus
            ));
        }
    }
    notes.extend(s.overlap_note(
        &format!("vLLM {}", format.version()),
        "has no dual-batch overlap switch (--enable-dbo came in a later release)",
    ));
    cmd.flag("--max-num-seqs", s.max_num_seqs);
    cmd.flag("--max-num-batched-tokens", s.max_batched_tokens);
    cmd.flag("--max-model-len", s.max_model_len);
    if let Some((k, who)) = s.drafter() {
        let config = match who {
            Drafter::Model(d) => serde_json::json!({
                "method": "draft_model",
                "model": draft_path(d),
                "num_speculative_tokens": k,
            }),
            Drafter::Mtp => serde_json::json!({
                "method": "deepseek_mtp",
                "num_speculative_tokens": k,
            }),
            Drafter::Eagle => serde_json::json!({
                "method": "eagle3",
                "model": EAGLE_HEAD,
                "num_speculative_tokens": k,
            }),
        };
        cmd.flag("--speculative-config", config);
        notes.extend(drafter_notes(s));
        if matches!(who, Drafter::Model(_)) {
            notes.push(
                "a separate draft model (method draft_model): vLLM's V1 engine of this \
                 version refuses it (vllm/engine/arg_utils.py, vllm-project/vllm pull 25142); \
                 later releases run it (docs: features/speculative_decoding/draft_model)"
                    .into(),
            );
        }
        if s.pp > 1 {
            notes.push(
                "vLLM's speculative decoding is not compatible with pipeline parallelism \
                 (docs/features/spec_decode.md of v0.10.0): serve the stages tensor-parallel"
                    .into(),
            );
        }
    }
    match s.kv {
        None => {}
        Some(Dtype::Fp8 | Dtype::Fp8Block) => {
            cmd.flag("--kv-cache-dtype", "fp8");
        }
        Some(k) => {
            return Err(refuse(
                format,
                format!("has no KV-cache format {} (vLLM: auto or fp8)", k.name()),
            ));
        }
    }
    match python_engine_weights(format, s)? {
        WeightsHow::Native => {}
        WeightsHow::Flag(f, v) => {
            cmd.flag(f, v);
            if matches!(v, "awq" | "gptq") {
                notes.push(format!(
                    "--quantization {v}: point the model path at a {} checkpoint of {}",
                    v.to_uppercase(),
                    s.model.id
                ));
            }
        }
        WeightsHow::Checkpoint(why) => notes.push(why),
    }
    if s.nodes() > 1 {
        cmd.flag("--distributed-executor-backend", "ray");
        notes.push(format!(
            "one replica spans {} nodes of {} devices: start a Ray cluster over them first",
            s.nodes(),
            s.devices_per_node
        ));
    }
    if s.replicas > 1 && format == Format::Vllm {
        notes.push(format!(
            "the plan needs {} replicas of this server behind a load balancer (or use --emit k8s)",
            s.replicas
        ));
    }
    Ok((cmd, notes))
}

/// `vllm.sh`.
pub(crate) fn emit(s: &Serving) -> Result<Vec<EmittedFile>> {
    let (cmd, notes) = command(s, Format::Vllm)?;
    let mut comments = header(Format::Vllm, &super::serving_summary(s));
    comments.extend(notes);
    Ok(vec![EmittedFile {
        name: "vllm.sh".into(),
        contents: script(&comments, &[&cmd]),
    }])
}
