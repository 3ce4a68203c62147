//! Option groups several commands flatten into theirs: how one configuration runs
//! (formats, engine, attention kernel) and expert parallelism with speculative decoding.

use super::MAX_DEVICES;
use crate::dtype::Format;
use clap::Args;

/// Options shared by predict, explain, roofline and simulate: how one configuration
/// runs (weight and KV-cache formats, engine, attention kernel).
#[derive(Args, Clone)]
pub struct RunArgs {
    /// Weight format: fp32, fp16, bf16, fp8, int8, int4, q8_0, q4_0, q4_k_m, q5_k_m, q6_k,
    /// nf4, awq-int4, gptq-int4, mxfp4, nvfp4, fp8-block, bpw:N (default: the model's
    /// native dtype).
    #[arg(long, value_parser = Format::parse)]
    pub weights: Option<Format>,
    /// Format of a mixture-of-experts model's routed experts, where it differs from the
    /// rest's (same names as --weights; default: --weights where given, else the
    /// checkpoint's expert format): `--weights q8_0 --expert-weights mxfp4` is
    /// llama.cpp's gpt-oss GGUF.
    #[arg(long, value_parser = Format::parse)]
    pub expert_weights: Option<Format>,
    /// KV-cache format (default: the activation dtype).
    #[arg(long, value_parser = Format::parse)]
    pub kv: Option<Format>,
    /// Efficiency profile: ideal, typical, llama.cpp, vllm, trt-llm, sglang, gpt-fast,
    /// lmdeploy, mlc, exllamav2, hf (simulate also takes its scheduler fields:
    /// max_num_seqs, max_batched_tokens, kv_block_tokens).
    #[arg(long, default_value = "typical")]
    pub engine: String,
    /// Fused or naive attention.
    #[command(flatten)]
    pub attention: AttentionArgs,
}

/// `--flash` / `--no-flash` (predict, explain, roofline, sweep, simulate).
#[derive(Args, Clone)]
pub struct AttentionArgs {
    /// Fused (flash) attention (the default).
    #[arg(long, conflicts_with = "no_flash")]
    pub flash: bool,
    /// Naive attention that materializes the score matrix.
    #[arg(long = "no-flash")]
    pub no_flash: bool,
}

impl AttentionArgs {
    /// Whether attention is fused (flash): unless `--no-flash`.
    pub fn fused(&self) -> bool {
        !self.no_flash
    }
}

/// Options shared by predict, explain, roofline and sweep: expert parallelism and
/// speculative decoding.
#[derive(Args, Clone)]
pub struct DecodingArgs {
    /// Expert-parallel groups for a mixture-of-experts model: the routed experts spread
    /// over N groups of --gpus/N tensor-parallel devices, attention data-parallel across
    /// the groups, tokens sent to their experts by all-to-all.
    #[arg(long, default_value_t = 1, allow_negative_numbers = true, value_parser = clap::value_parser!(u64).range(1..=MAX_DEVICES))]
    pub ep: u64,
    /// Speculative decoding.
    #[command(flatten)]
    pub spec: SpecArgs,
    /// Network bandwidth per device between scale-up domains (nodes), bytes/s per
    /// direction (400 Gb/s InfiniBand = 50e9): collectives and pipeline sends that
    /// cross domains run at it.
    #[arg(long = "inter-node-bw", allow_negative_numbers = true, default_value_t = crate::hardware::DEFAULT_INTER_NODE_BYTES_PER_S)]
    pub inter_node_bw: f64,
    /// Hide the expert all-to-all behind computation: each pass runs as two
    /// micro-batches, one's all-to-all beside the other's computation (SGLang's
    /// two-batch overlap, vLLM's dual-batch overlap); with --ep above 1.
    #[arg(long = "overlap-ep")]
    pub overlap_ep: bool,
    /// Routed rows on the busiest expert-parallel rank over the mean, as measured (an
    /// EPLB log, a profile): every layer waits for that rank, whose routed experts'
    /// rows and all-to-all bytes are at least F times the mean's, the experts it reads
    /// those of uniform routing; 1 (the default) leaves the uniform-routing expectation
    /// (1 ..= --ep; with --ep above 1).
    #[arg(
        long = "expert-imbalance",
        default_value_t = 1.0,
        allow_negative_numbers = true
    )]
    pub expert_imbalance: f64,
}

impl DecodingArgs {
    /// The speculative-decoding settings, if any.
    pub fn speculation(&self) -> Option<crate::predict::Speculation> {
        self.spec.speculation()
    }
}

/// Speculative decoding (predict, explain, roofline, sweep, simulate and plan).
#[derive(Args, Clone, Default)]
pub struct SpecArgs {
    /// Speculative decoding: draft tokens proposed per verify pass (needs --spec-accept).
    #[arg(long, requires = "spec_accept", allow_negative_numbers = true, value_parser = clap::value_parser!(u64).range(1..=crate::predict::MAX_SPEC_K))]
    pub spec_k: Option<u64>,
    /// Speculative decoding: probability that a draft token is accepted, 0..1 (needs
    /// --spec-k).
    #[arg(long, requires = "spec_k", allow_negative_numbers = true, value_parser = probability)]
    pub spec_accept: Option<f64>,
    /// Speculative decoding: draft model id or config.json (same vocabulary), on the
    /// same devices (its weights and cache take device memory); without it the drafts
    /// come from the model's own MTP or EAGLE-style head.
    #[arg(long, requires = "spec_k")]
    pub draft: Option<String>,
}

impl SpecArgs {
    /// The speculative-decoding settings, if any.
    pub fn speculation(&self) -> Option<crate::predict::Speculation> {
        Some(crate::predict::Speculation {
            k: self.spec_k?,
            accept: self.spec_accept?,
        })
    }
}

/// A probability on the command line: a finite number in 0..=1.
pub(super) fn probability(s: &str) -> std::result::Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a number"))?;
    if (0.0..=1.0).contains(&v) {
        Ok(v)
    } else {
        Err(format!("must be a probability in 0..1, got {s}"))
    }
}

/// `--emit FORMAT [--out FILE]` (predict, simulate, plan, train): the launch file(s) of
/// the configuration.
#[derive(Args, Clone, Default)]
pub struct EmitArgs {
    /// Print the launch file(s) of the configuration instead of the report: vllm, sglang,
    /// trt-llm, llama.cpp, k8s (serving: predict, simulate, plan's best) or deepspeed,
    /// fsdp, torchtune, megatron (training: train, plan --train's best). With --json, a
    /// document of the files.
    #[arg(long, value_name = "FORMAT", value_parser = crate::emit::Format::parse)]
    pub emit: Option<crate::emit::Format>,
    /// With --emit: write the launch script to FILE (atomically; its companion files,
    /// such as ds_config.json, beside it under their own names) and print the report
    /// as usual.
    #[arg(long, value_name = "FILE", requires = "emit")]
    pub out: Option<std::path::PathBuf>,
}
