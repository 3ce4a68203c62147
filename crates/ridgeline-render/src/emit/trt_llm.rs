//! TensorRT-LLM: `trtllm-serve` (PyTorch backend) and its `--extra_llm_api_options`
//! YAML (the KV-cache dtype, attention data parallelism).

use super::shell::{Cmd, script};
use super::{
    Drafter, EAGLE_HEAD, EmittedFile, Format, Serving, drafter_notes, header, is_gguf, refuse,
};
use crate::dtype::Format as Dtype;
use crate::error::Result;

/// The YAML file the command names.
pub(crate) const EXTRA: &str = "extra_llm_api_options.yaml";

/// `trtllm-serve.sh` and `extra_llm_api_options.yaml`.
pub(crate) fn emit(s: &Serving) -> Result<Vec<EmittedFile>> {
    let f = Format::TrtLlm;
    let mut comments = header(f, &super::serving_summary(s));
    if is_gguf(s.weights) {
        return Err(refuse(
            f,
            format!(
                "does not serve weights {} (a llama.cpp GGUF format); use --emit llama.cpp",
                s.weights.name()
            ),
        ));
    }
    let native =
        s.weights == s.model.native_format || s.model.mixed_expert_format() == Some(s.weights);
    if !native {
        comments.push(format!(
            "weights {}: point the model at a checkpoint quantized to {} with TensorRT Model \
             Optimizer (trtllm-serve reads the format from its config)",
            s.weights.name(),
            s.weights.name()
        ));
    }
    if super::hf_repo(&s.model).is_none() {
        comments.push(format!(
            "no Hugging Face repo is known for {}: replace the model with its checkpoint",
            s.model.id
        ));
    }
    let kv = match s.kv {
        None => "auto",
        Some(Dtype::Fp8 | Dtype::Fp8Block) => "fp8",
        Some(k) => {
            return Err(refuse(
                f,
                format!(
                    "has no KV-cache format {} (TensorRT-LLM: auto or fp8)",
                    k.name()
                ),
            ));
        }
    };
    let mut cmd = Cmd::new(&["trtllm-serve", &s.model_path()]);
    cmd.flag("--backend", "pytorch");
    cmd.flag("--tp_size", s.tp() * s.ep);
    cmd.flag("--pp_size", s.pp);
    if s.ep > 1 {
        cmd.flag("--ep_size", s.ep);
        if s.group() > 1 {
            comments.push(format!(
                "enable_attention_dp runs attention data-parallel over all {} ranks; ridgeline \
                 modelled {} groups of {} tensor-parallel devices",
                s.tp() * s.ep,
                s.ep,
                s.group()
            ));
        }
    }
    cmd.flag("--max_batch_size", s.max_num_seqs);
    cmd.flag("--max_num_tokens", s.max_batched_tokens);
    cmd.flag("--max_seq_len", s.max_model_len);
    cmd.flag("--extra_llm_api_options", EXTRA);
    if s.nodes() > 1 {
        comments.push(format!(
            "one replica spans {} nodes: start it under MPI or Slurm over them \
             (trtllm-llmapi-launch)",
            s.nodes()
        ));
    }
    if s.replicas > 1 {
        comments.push(format!(
            "the plan needs {} replicas of this server behind a load balancer",
            s.replicas
        ));
    }
    let mut yaml = format!(
        "# ridgeline --emit trt-llm: LLM API options of {} (TensorRT-LLM {})\nkv_cache_config:\n  dtype: {kv}\n",
        s.model.id,
        f.version()
    );
    if s.ep > 1 {
        yaml.push_str("enable_attention_dp: true\n");
    }
    comments.extend(s.overlap_note(
        &format!("TensorRT-LLM {}", f.version()),
        "has no documented switch for it in trtllm-serve's options",
    ));
    match s.drafter() {
        None => {}
        Some((k, Drafter::Mtp)) => yaml.push_str(&format!(
            "speculative_config:\n  decoding_type: MTP\n  num_nextn_predict_layers: {k}\n"
        )),
        Some((k, Drafter::Eagle)) => {
            yaml.push_str(&format!(
                "speculative_config:\n  decoding_type: Eagle\n  max_draft_len: {k}\n  speculative_model_dir: {EAGLE_HEAD}\n"
            ));
            comments.extend(drafter_notes(s));
        }
        Some((k, Drafter::Model(d))) => comments.push(format!(
            "speculative decoding with draft {} (k {k}) is not written: the LLM API of this \
             version configures MTP, Eagle and NGram drafts (examples/llm_speculative_decoding \
             of {}); a draft/target speculative_config needs a later release",
            d.id,
            f.version()
        )),
    }
    Ok(vec![
        EmittedFile {
            name: "trtllm-serve.sh".into(),
            contents: script(&comments, &[&cmd]),
        },
        EmittedFile {
            name: EXTRA.into(),
            contents: yaml,
        },
    ])
}
