//! SGLang: one `python -m sglang.launch_server` command line.

use super::shell::{Cmd, script};
use super::{
    Drafter, EAGLE_HEAD, EmittedFile, Format, Serving, WeightsHow, draft_path, drafter_notes,
    header, python_engine_weights, refuse,
};
use crate::dtype::Format as Dtype;
use crate::error::Result;

/// `sglang.sh`: SGLang's tensor parallelism spans every device of a stage; expert
/// groups are `--ep-size` (experts split over `ep`, each group tensor-parallel, as
/// ridgeline models them) with attention data-parallel over the groups.
pub(crate) fn emit(s: &Serving) -> Result<Vec<EmittedFile>> {
    let f = Format::Sglang;
    let mut comments = header(f, &super::serving_summary(s));
    let mut cmd = Cmd::new(&["python", "-m", "sglang.launch_server"]);
    cmd.flag("--model-path", s.model_path());
    if super::hf_repo(&s.model).is_none() {
        comments.push(format!(
            "no Hugging Face repo is known for {}: replace --model-path with its checkpoint",
            s.model.id
        ));
    }
    cmd.flag("--tp-size", s.tp() * s.ep);
    cmd.flag("--pp-size", s.pp);
    if s.ep > 1 {
        cmd.flag("--dp-size", s.ep);
        cmd.switch("--enable-dp-attention");
        cmd.flag("--ep-size", s.ep);
        if s.overlap_ep {
            // two micro-batches, one's all-to-all beside the other's computation
            cmd.switch("--enable-two-batch-overlap");
        }
    }
    cmd.flag("--max-running-requests", s.max_num_seqs);
    cmd.flag("--chunked-prefill-size", s.max_batched_tokens);
    cmd.flag("--context-length", s.max_model_len);
    if let Some((k, who)) = s.drafter() {
        // a chain of k drafts (top-k 1) verifies k + 1 tokens
        match who {
            Drafter::Model(d) => {
                cmd.flag("--speculative-algorithm", "STANDALONE");
                cmd.flag("--speculative-draft-model-path", draft_path(d));
                comments.push(
                    "STANDALONE (a separate draft model) is not in every release's \
                     --speculative-algorithm choices: check `python -m sglang.launch_server --help`"
                        .into(),
                );
            }
            Drafter::Mtp => {
                cmd.flag("--speculative-algorithm", "EAGLE");
            }
            Drafter::Eagle => {
                cmd.flag("--speculative-algorithm", "EAGLE3");
                cmd.flag("--speculative-draft-model-path", EAGLE_HEAD);
            }
        }
        cmd.flag("--speculative-num-steps", k);
        cmd.flag("--speculative-eagle-topk", 1);
        cmd.flag("--speculative-num-draft-tokens", k + 1);
        comments.extend(drafter_notes(s));
    }
    match s.kv {
        None => {}
        Some(Dtype::Fp8 | Dtype::Fp8Block) => {
            cmd.flag("--kv-cache-dtype", "fp8_e4m3");
        }
        Some(k) => {
            return Err(refuse(
                f,
                format!(
                    "has no KV-cache format {} (SGLang: auto, fp8_e4m3, fp8_e5m2)",
                    k.name()
                ),
            ));
        }
    }
    match python_engine_weights(f, s)? {
        WeightsHow::Native => {}
        WeightsHow::Flag(flag, v) => {
            cmd.flag(flag, v);
            if matches!(v, "awq" | "gptq") {
                comments.push(format!(
                    "--quantization {v}: point --model-path at a {} checkpoint of {}",
                    v.to_uppercase(),
                    s.model.id
                ));
            }
        }
        WeightsHow::Checkpoint(why) => comments.push(why),
    }
    if s.nodes() > 1 {
        cmd.flag("--nnodes", s.nodes());
        cmd.flag("--node-rank", "0");
        cmd.flag("--dist-init-addr", "LEADER_HOST:50000");
        comments.push(format!(
            "one replica spans {} nodes: run this on each with its own --node-rank (0..{}) and \
             the first node's address in --dist-init-addr",
            s.nodes(),
            s.nodes() - 1
        ));
    }
    if s.replicas > 1 {
        comments.push(format!(
            "the plan needs {} replicas of this server behind a router",
            s.replicas
        ));
    }
    Ok(vec![EmittedFile {
        name: "sglang.sh".into(),
        contents: script(&comments, &[&cmd]),
    }])
}
