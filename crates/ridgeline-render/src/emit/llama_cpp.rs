//! llama.cpp: `llama-server` over a GGUF file of the model in the planned format.

use super::shell::{Cmd, script};
use super::{Drafter, EmittedFile, Format, Serving, draft_path, header, refuse};
use crate::dtype::Format as Dtype;
use crate::error::Result;

/// The GGUF type name of a weight format llama.cpp runs (`None`: not one of its).
pub(crate) fn gguf_type(w: Dtype) -> Option<&'static str> {
    Some(match w {
        Dtype::Q8_0 => "Q8_0",
        Dtype::Q4_0 => "Q4_0",
        Dtype::Q4KM => "Q4_K_M",
        Dtype::Q5KM => "Q5_K_M",
        Dtype::Q6K => "Q6_K",
        Dtype::Fp16 => "F16",
        Dtype::Bf16 => "BF16",
        Dtype::Fp32 => "F32",
        Dtype::Mxfp4 => "MXFP4",
        _ => return None,
    })
}

/// The KV-cache type of `--cache-type-k/v` (`None`: the default f16).
fn cache_type(kv: Option<Dtype>) -> Result<Option<&'static str>> {
    Ok(match kv {
        None => None,
        Some(Dtype::Q8_0) => Some("q8_0"),
        Some(Dtype::Q4_0) => Some("q4_0"),
        Some(k) => {
            return Err(refuse(
                Format::LlamaCpp,
                format!(
                    "has no KV-cache format {} (llama.cpp: f16, bf16, q8_0, q4_0)",
                    k.name()
                ),
            ));
        }
    })
}

/// `llama-server.sh`.
pub(crate) fn emit(s: &Serving) -> Result<Vec<EmittedFile>> {
    let f = Format::LlamaCpp;
    let Some(ty) = gguf_type(s.weights) else {
        return Err(refuse(
            f,
            format!(
                "runs GGUF files (q8_0, q4_0, q4_k_m, q5_k_m, q6_k, f16, bf16, f32, mxfp4); \
                 weights {} are not one",
                s.weights.name()
            ),
        ));
    };
    if s.ep > 1 {
        return Err(refuse(f, "has no expert parallelism (ep > 1)"));
    }
    if s.nodes() > 1 {
        return Err(refuse(
            f,
            format!(
                "runs on one machine; this replica spans {} nodes",
                s.nodes()
            ),
        ));
    }
    let kv = cache_type(s.kv)?;
    let gguf = format!("models/{}-{ty}.gguf", s.model.id);
    let mut comments = header(f, &super::serving_summary(s));
    comments.push(format!(
        "{gguf}: convert {} with convert_hf_to_gguf.py and llama-quantize to {ty}",
        s.model_path()
    ));
    comments.push(format!(
        "--ctx-size is shared by the --parallel slots: {} per slot",
        s.max_model_len
    ));
    let mut cmd = Cmd::new(&["llama-server"]);
    cmd.flag("--model", &gguf);
    cmd.flag("--n-gpu-layers", s.model.layers + 1);
    cmd.flag("--ctx-size", s.max_model_len * s.max_num_seqs);
    cmd.flag("--parallel", s.max_num_seqs);
    cmd.flag("--batch-size", s.max_batched_tokens);
    if s.gpus > 1 {
        let mode = if s.pp > 1 { "layer" } else { "row" };
        cmd.flag("--split-mode", mode);
        cmd.flag("--tensor-split", vec!["1"; s.gpus as usize].join(","));
    }
    match s.drafter() {
        None => {}
        Some((k, Drafter::Model(d))) => {
            let draft = format!("models/{}-{ty}.gguf", d.id);
            comments.push(format!(
                "{draft}: the draft {}, converted as the model is",
                draft_path(d)
            ));
            cmd.flag("--model-draft", &draft);
            cmd.flag("--draft-max", k);
            cmd.flag("--n-gpu-layers-draft", d.layers + 1);
        }
        Some((k, _)) => comments.push(format!(
            "speculative decoding from the model's own head (k {k}) is not written: \
             llama-server drafts with a separate model (--model-draft) only"
        )),
    }
    if let Some(t) = kv {
        cmd.flag("--cache-type-k", t);
        cmd.flag("--cache-type-v", t);
        comments.push("a quantized V cache needs flash attention (--flash-attn)".into());
    }
    if s.replicas > 1 {
        comments.push(format!(
            "the plan needs {} replicas of this server behind a load balancer",
            s.replicas
        ));
    }
    Ok(vec![EmittedFile {
        name: "llama-server.sh".into(),
        contents: script(&comments, &[&cmd]),
    }])
}
