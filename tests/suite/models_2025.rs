//! Models of 2025-26: parameter counts against their publishers' figures (each test cites
//! its card), and what their layer kinds do to memory: latent KV (MLA), sliding windows,
//! linear-attention state, MXFP4 experts.

use ridgeline::dtype::Format;
use ridgeline::prelude::*;

fn model(id: &str) -> ModelConfig {
    ModelDb::builtin().unwrap().resolve(id).unwrap()
}

/// `value` within `pct` percent of `published`.
fn near(what: &str, value: f64, published: f64, pct: f64) {
    let err = (value / published - 1.0) * 100.0;
    assert!(
        err.abs() <= pct,
        "{what}: {value:.4e} vs published {published:.4e} ({err:+.2}%)"
    );
}

/// Active parameters as most cards count them (the token-embedding table, a lookup,
/// left out; OpenAI's gpt-oss card says so: "unembedding parameters are counted").
fn active_without_embedding(m: &ModelConfig) -> f64 {
    let p = m.params();
    (p.active - p.embedding) as f64
}

#[test]
fn deepseek_v3_and_r1_671b_with_37b_active() {
    // https://github.com/deepseek-ai/DeepSeek-V3 (README, Model Downloads): "671B total
    // parameters with 37B activated for each token", without the 14B MTP module.
    // Per layer: MLA q_a 7168·1536 + 1536 + q_b 1536·128·192 + kv_a 7168·576 + 512 +
    // kv_b 512·128·256 + o 128·128·7168 = 187,107,328; 58 MoE layers of 256 routed + 1
    // shared experts of 3·7168·2048 and a router 7168·256; 3 dense layers 3·7168·18432.
    for id in ["deepseek-v3", "deepseek-r1"] {
        let m = model(id);
        let p = m.params();
        assert_eq!(
            m.try_mixer_params(ridgeline::model::Mixer::Mla),
            Some(187_107_328)
        );
        near(id, p.total as f64, 671e9, 1.0);
        // "37B" has two significant digits (36.5..37.5B: 1.4%); DeepSeek's
        // README_WEIGHTS.md itemizes 36.7B with the embedding and head, which no
        // per-layer sum of the published config reproduces (ours: 37.55B with them)
        near(id, active_without_embedding(&m), 37e9, 1.4);
        assert_eq!(m.mtp_layers, 1);
        // the MTP module, reported beside the total: "The total size of DeepSeek-V3
        // models on Hugging Face is 685B, which includes 671B of the Main Model weights
        // and 14B of the Multi-Token Prediction (MTP) Module weights" (same README).
        // One block like layer 61: MLA 187,107,328 + 256 routed and 1 shared experts of
        // 3·7168·2048 (11,318,329,344) + router 7168·256 (1,835,008) + 2 norms 14,336
        // = 11,507,286,016; + eh_proj 2·7168·7168 = 102,760,448, 3 norms 21,504, and
        // its own embedding and head 2·129280·7168 = 1,853,358,080: 13,463,426,048.
        assert_eq!(p.mtp, 13_463_426_048);
        near(id, (p.total + p.mtp) as f64, 685e9, 0.5);
        // fp8 with 128 x 128 block scales (quantization_config.weight_block_size)
        assert_eq!(m.native_format, Format::Fp8Block);
    }
}

#[test]
fn kimi_k2_one_trillion_with_32b_active() {
    // Kimi K2 card (https://github.com/moonshotai/Kimi-K2): 1T total, 32B activated; the
    // checkpoint's safetensors hold 1,026,470,731,056 elements (a model-info report of
    // the HF snapshot, FP32 scales included).
    let m = model("kimi-k2");
    near(
        "kimi-k2 total",
        m.params().total as f64,
        1_026_470_731_056.0,
        0.1,
    );
    near("kimi-k2 active", active_without_embedding(&m), 32e9, 1.0);
}

#[test]
fn qwen3_moe_counts() {
    // https://huggingface.co/Qwen/Qwen3-30B-A3B: "30.5B in total and 3.3B activated";
    // https://huggingface.co/Qwen/Qwen3-235B-A22B: "235B in total and 22B activated".
    let m = model("qwen3-30b-a3b");
    near("qwen3-30b-a3b", m.params().total as f64, 30.5e9, 1.0);
    // 48 x (18.9M attention + 8 x 4.72M experts + 0.26M router) + 2 x 311M = 3.353B,
    // which the card writes as "3.3B" (two digits, truncated)
    near("qwen3-30b-a3b active", m.params().active as f64, 3.3e9, 1.7);
    let m = model("qwen3-235b-a22b");
    near("qwen3-235b-a22b", m.params().total as f64, 235e9, 1.0);
    near(
        "qwen3-235b-a22b active",
        m.params().active as f64,
        22e9,
        1.0,
    );
}

#[test]
fn gpt_oss_counts_and_native_mxfp4_experts() {
    // gpt-oss model card (arXiv 2508.10925, Table 1): 120b 116.83B total, 5.13B active;
    // 20b 20.91B total, 3.61B active ("unembedding parameters are counted").
    for (id, total, active) in [
        ("gpt-oss-120b", 116.83e9, 5.13e9),
        ("gpt-oss-20b", 20.91e9, 3.61e9),
    ] {
        let m = model(id);
        near(id, m.params().total as f64, total, 1.0);
        near(id, active_without_embedding(&m), active, 1.0);
        assert_eq!(m.native_expert_format, Some(Format::Mxfp4));
        assert_eq!(m.native_format, Format::Bf16);
    }
}

#[test]
fn llama_4_counts() {
    // https://huggingface.co/meta-llama/Llama-4-Scout-17B-16E-Instruct: "17B (Activated)
    // 109B (Total)"; Maverick "17B (Activated) 400B (Total)" (the totals include the
    // vision encoder, which is not counted here: Scout's text model is 1.1% smaller).
    let scout = model("llama-4-scout");
    near("scout", scout.params().total as f64, 109e9, 1.2);
    near("scout active", scout.params().active as f64, 17e9, 1.2);
    let maverick = model("llama-4-maverick");
    near("maverick", maverick.params().total as f64, 400e9, 1.0);
    near(
        "maverick active",
        maverick.params().active as f64,
        17e9,
        1.2,
    );
    // Maverick interleaves dense and MoE layers: 24 of each
    let moe = maverick
        .kind_counts()
        .iter()
        .filter(|(k, _)| k.is_moe())
        .map(|(_, n)| n)
        .sum::<u64>();
    assert_eq!(moe, 24);
}

#[test]
fn deepseek_caches_70272_bytes_per_token() {
    // 61 layers x (kv_lora_rank 512 + qk_rope_head_dim 64) x 2 bytes = 70,272 B in bf16;
    // the same 128 heads uncompressed would cache 61 x 2 x 128 x 192 x 2 = 5,996,544 B
    let m = model("deepseek-v3");
    let hw = HardwareDb::builtin().unwrap().get("h200").unwrap();
    let e = EngineDb::builtin().unwrap().get("ideal").unwrap();
    let s = Scenario {
        kv: Some(Format::Bf16),
        ..Scenario::default()
    };
    let p = predict(&m, hw, e, &s).unwrap();
    assert_eq!(p.memory.kv_bytes_per_token, 70_272.0);
}

#[test]
fn a_sliding_window_stops_the_kv_cache_from_growing() {
    // Mistral-7B v0.1: every layer attends to 4096 tokens. At 16k tokens its cache is
    // 32 x 2 x 8 x 128 x 2 x 4096 = 536,870,912 bytes, not 4x that.
    let m = model("mistral-7b");
    let hw = HardwareDb::builtin().unwrap().get("h100").unwrap();
    let e = EngineDb::builtin().unwrap().get("ideal").unwrap();
    let at = |prompt| {
        let s = Scenario {
            prompt,
            gen_tokens: 0,
            ..Scenario::default()
        };
        predict(&m, hw, e, &s).unwrap()
    };
    assert_eq!(at(16384).memory.inner.kv_cache_bytes, 536_870_912.0);
    assert_eq!(at(4096).memory.inner.kv_cache_bytes, 536_870_912.0);
    assert_eq!(at(2048).memory.inner.kv_cache_bytes, 268_435_456.0);
    // and decode reads stop growing too
    let step = |prompt| at(prompt).decode.kv_bytes_per_step;
    assert_eq!(step(16384), step(32000));
    // Gemma 3 27B: 5 of every 6 layers keep 1024 tokens
    let g = model("gemma-3-27b");
    let windows: Vec<Option<u64>> = g.kind_counts().iter().map(|(k, _)| k.window).collect();
    assert!(windows.contains(&Some(1024)) && windows.contains(&None));
}

#[test]
fn gpt_oss_fits_the_devices_its_publisher_names() {
    // "gpt-oss-120b ... fit into a single 80GB GPU (like NVIDIA H100 or AMD MI300X)";
    // "gpt-oss-20b ... run within 16GB of memory" (https://huggingface.co/openai/gpt-oss-*)
    let db = HardwareDb::builtin().unwrap();
    let e = EngineDb::builtin().unwrap().get("typical").unwrap();
    let fits = |id: &str, gpu: &str| {
        let p = predict(&model(id), db.get(gpu).unwrap(), e, &Scenario::default()).unwrap();
        p.memory.inner.fits
    };
    assert!(fits("gpt-oss-120b", "h100"));
    assert!(fits("gpt-oss-120b", "mi300x"));
    assert!(fits("gpt-oss-20b", "rtx-4080"));
    // in bf16 the 120b model does not fit one H100
    let bf16 = Scenario {
        weights: Some(Format::Bf16),
        ..Scenario::default()
    };
    let p = predict(&model("gpt-oss-120b"), db.get("h100").unwrap(), e, &bf16).unwrap();
    assert!(!p.memory.inner.fits);
}

/// gpt-oss-120b on an H100, on the command line.
const GPT_OSS_H100: [&str; 4] = ["--model", "gpt-oss-120b", "--gpu", "h100"];

/// llama.cpp's gpt-oss GGUF: the routed experts in mxfp4, the rest in q8_0.
const GGUF: [&str; 4] = ["--weights", "q8_0", "--expert-weights", "mxfp4"];

#[test]
fn llama_cpp_s_gpt_oss_gguf_is_mxfp4_experts_and_q8_0() {
    // ggml-org's gpt-oss GGUFs keep the routed experts in mxfp4 and write every other
    // tensor in q8_0; llama-bench prints their sizes, 59.02 GiB (120b) and 11.27 GiB
    // (20b): https://community.frame.work/t/will-the-ai-max-395-128gb-be-able-to-run-gpt-oss-120b/73280/26
    // (120b, against 60.87 GiB for the same experts with the rest in f16) and the
    // llama-bench rows of data/measurements/measurements.csv (m149, m154). The weights
    // `--weights q8_0 --expert-weights mxfp4` give are within 0.5% of each file (which
    // also holds the tokenizer and metadata).
    let db = HardwareDb::builtin().unwrap();
    let e = EngineDb::builtin().unwrap().get("typical").unwrap();
    let h100 = db.get("h100").unwrap();
    let gguf = Scenario {
        weights: Some(Format::Q8_0),
        expert_weights: Some(Format::Mxfp4),
        ..Scenario::default()
    };
    for (id, gib) in [("gpt-oss-120b", 59.02), ("gpt-oss-20b", 11.27)] {
        let m = model(id);
        let p = predict(&m, h100, e, &gguf).unwrap();
        near(id, p.memory.inner.weights_bytes, gib * 1024f64.powi(3), 0.5);
        // against the checkpoint as it ships, only the tensors outside the routed
        // experts (with their biases) and the router (kept in 16 bits) change: each of
        // them 2 bytes in bf16, 34 bytes a block of 32 in q8_0
        let native = predict(&m, h100, e, &Scenario::default()).unwrap();
        let (h, i) = (m.hidden, m.expert_intermediate);
        // gate, up and down of each expert (2880 x 2880 each in both sizes), with gpt-oss's
        // biases (2i + h), and the router (h per expert)
        let per_layer = (m.experts * (3 * h * i + 2 * i + h) + h * m.experts) as f64;
        let other = m.params().total as f64 - m.layers as f64 * per_layer;
        let saved = native.memory.inner.weights_bytes - p.memory.inner.weights_bytes;
        near(
            &format!("{id} q8_0 saving"),
            saved,
            other * (2.0 - 34.0 / 32.0),
            1.0,
        );
        assert_eq!(p.config.experts, Some(Format::Mxfp4));
        assert_eq!(p.config.weights, Format::Q8_0);
    }
    // the same post measures the two 120b files on one Strix Halo (llama-bench tg128,
    // ROCm): 41.52 tok/s with the rest in q8_0, 29.72 with it in f16, 1.397x; a decode
    // step reads 1.40x the bytes with the rest in 16 bits
    let m = model("gpt-oss-120b");
    let halo = db.get("ryzen-ai-max-395").unwrap();
    let f16 = Scenario {
        weights: Some(Format::Fp16),
        expert_weights: Some(Format::Mxfp4),
        ..gguf
    };
    let bytes = |s: &Scenario| predict(&m, halo, e, s).unwrap().decode.bytes_per_step;
    near(
        "f16 / q8_0 bytes",
        bytes(&f16) / bytes(&gguf),
        41.52 / 29.72,
        1.0,
    );
    // a dense model has no routed experts: the option changes nothing
    let l = model("llama-3-8b");
    let q8 = Scenario {
        weights: Some(Format::Q8_0),
        ..Scenario::default()
    };
    let with = predict(
        &l,
        h100,
        e,
        &Scenario {
            expert_weights: Some(Format::Mxfp4),
            ..q8
        },
    )
    .unwrap();
    let without = predict(&l, h100, e, &q8).unwrap();
    assert_eq!(
        with.memory.inner.weights_bytes,
        without.memory.inner.weights_bytes
    );
    assert_eq!(with.config.experts, None);
    // on the command line: the header names both formats
    let text = crate::support::cli::ok(&[&["predict"][..], &GPT_OSS_H100, &GGUF].concat());
    assert!(
        text.lines()
            .next()
            .unwrap()
            .contains("weights mxfp4 experts + q8_0"),
        "{text}"
    );
}

#[test]
fn sweep_and_plan_take_the_experts_format_as_predict_does() {
    use crate::support::cli::{json, ok};
    let (gguf, base) = (GGUF, GPT_OSS_H100);
    let with = |cmd: &str, extra: &[&str]| -> Vec<String> {
        [cmd]
            .iter()
            .chain(&base)
            .chain(&gguf)
            .chain(extra)
            .map(|s| s.to_string())
            .collect()
    };
    fn args(v: &[String]) -> Vec<&str> {
        v.iter().map(String::as_str).collect()
    }
    let p = json(&args(&with("predict", &["--json"])));
    // a sweep row is predict's configuration: the same memory and time per token
    let csv = ok(&args(&with("sweep", &["--csv"])));
    let (head, row) = (csv.lines().next().unwrap(), csv.lines().nth(1).unwrap());
    let cell = |name: &str| {
        let i = head.split(',').position(|h| h == name).unwrap();
        row.split(',').nth(i).unwrap().to_string()
    };
    assert_eq!(cell("weights"), "q8_0");
    assert_eq!(
        cell("total_bytes").parse::<f64>().unwrap(),
        p["memory"]["total_bytes"].as_f64().unwrap()
    );
    assert_eq!(
        cell("tpot_s").parse::<f64>().unwrap(),
        p["generation"]["tpot_s"].as_f64().unwrap()
    );
    // a plan states the experts' format; its best entry is predict's at that layout
    let plan = json(&args(&with("plan", &["--kv", "native", "--json"])));
    assert_eq!(plan["expert_weights"], "mxfp4");
    let best = &plan["best"];
    let (gpus, batch, ep) = (
        best["gpus"].to_string(),
        best["batch"].to_string(),
        best["ep"].to_string(),
    );
    let again = json(&args(&with(
        "predict",
        &["--gpus", &gpus, "--batch", &batch, "--ep", &ep, "--json"],
    )));
    assert_eq!(best["total_bytes"], again["memory"]["total_bytes"]);
    // without the option the plan says nothing of it
    let plain = json(&[&["plan"][..], &GPT_OSS_H100, &GGUF[..2], &["--json"]].concat());
    assert!(plain.get("expert_weights").is_none());
}

#[test]
fn what_ifs_keep_a_checkpoint_s_own_expert_format() {
    // gpt-oss ships its routed experts in mxfp4 and the rest in bf16. Twice the devices
    // keeps that mix: the per-device memory of the what-if is predict's with --gpus 2
    // (it was the all-bf16 model's, 117.88 GB, 3.5x); q4_k_m (4.85 bits) would make the
    // 4.25-bit experts larger, so it is not offered; the header names both formats.
    use ridgeline::predict::Predictor;
    let db = HardwareDb::builtin().unwrap();
    let e = EngineDb::builtin().unwrap().get("typical").unwrap();
    let m = model("gpt-oss-120b");
    let h100 = db.get("h100").unwrap();
    let s = Scenario::default();
    let p = Predictor::new(&m, h100, e, &s).unwrap();
    let w = p.what_ifs(1, 512, 128, p.max_batch(512, 128));
    let two = Scenario {
        gpus: 2,
        ..Scenario::default()
    };
    let direct = predict(&m, h100, e, &two).unwrap();
    let more = w.more_devices.expect("one device: the what-if of two");
    assert_eq!(
        more.summary.memory.total_bytes,
        direct.memory.inner.total_bytes
    );
    assert_eq!(w.experts, Some(Format::Mxfp4));
    assert!(w.quantized.is_none());
    let text = crate::support::cli::ok(&["predict", "--model", "gpt-oss-120b", "--gpu", "h100"]);
    assert!(
        text.lines()
            .next()
            .unwrap()
            .contains("weights mxfp4 experts + bf16"),
        "{text}"
    );
    // a model in one format still gets its q4_k_m what-if
    let l = model("llama-3-8b");
    let q = Predictor::new(&l, h100, e, &s).unwrap();
    let wq = q.what_ifs(1, 512, 128, q.max_batch(512, 128));
    let qz = wq.quantized.expect("bf16 weights: the q4_k_m what-if");
    assert!(qz.summary.memory.weights_bytes < q.summary(1, 512, 128).memory.weights_bytes);
    assert_eq!(wq.experts, None);
}

#[test]
fn linear_attention_keeps_a_fixed_state() {
    // Qwen3-Next: 36 of 48 layers are Gated DeltaNet with 32 value heads of 128 x 128
    // fp32 state; their memory does not grow with the context, the 12 attention layers'
    // KV cache does (2 KV heads of 256 x 2 x 2 bytes = 2048 B per token per layer).
    let m = model("qwen3-next-80b-a3b");
    let hw = HardwareDb::builtin().unwrap().get("h200").unwrap();
    let e = EngineDb::builtin().unwrap().get("ideal").unwrap();
    let at = |prompt| {
        let s = Scenario {
            prompt,
            gen_tokens: 0,
            ..Scenario::default()
        };
        predict(&m, hw, e, &s).unwrap().memory.inner.kv_cache_bytes
    };
    // state: 36 x (32 x 128 x 128 x 4 + 3 x (2 x 16 x 128 + 32 x 128) x 2)
    //      = 36 x (2,097,152 + 49,152) = 77,266,944
    let state =
        36.0 * (32.0 * 128.0 * 128.0 * 4.0 + 3.0 * (2.0 * 16.0 * 128.0 + 32.0 * 128.0) * 2.0);
    assert_eq!(state, 77_266_944.0);
    assert_eq!(at(1000), state + 12.0 * 2048.0 * 1000.0);
    assert_eq!(at(2000) - at(1000), 12.0 * 2048.0 * 1000.0);
}

#[test]
fn configs_the_llama_reading_got_wrong() {
    // Gemma-2-9B (https://huggingface.co/google/gemma-2-9b/blob/main/config.json; the
    // HF page lists 9.24B params): head_dim 256 is not 3584 / 16, embeddings are tied,
    // and each layer has four norms. 256000·3584 + 42·(3584·16·256·2 + 3584·8·256·2 +
    // 3·3584·14336 + 4·3584) + 3584 = 9,241,705,984.
    let gemma2 = r#"{"architectures":["Gemma2ForCausalLM"],"head_dim":256,
        "hidden_activation":"gelu_pytorch_tanh","hidden_size":3584,"intermediate_size":14336,
        "max_position_embeddings":8192,"model_type":"gemma2","num_attention_heads":16,
        "num_hidden_layers":42,"num_key_value_heads":8,"query_pre_attn_scalar":256,
        "sliding_window":4096,"torch_dtype":"float32","vocab_size":256000}"#;
    let g = ModelConfig::from_json_str(gemma2, "gemma-2-9b", "config.json").unwrap();
    assert_eq!(g.params().total, 9_241_705_984);
    // alternating: half the layers keep 4096 tokens
    let windows: Vec<(Option<u64>, u64)> = g
        .kind_counts()
        .iter()
        .map(|(k, n)| (k.window, *n))
        .collect();
    assert!(windows.contains(&(Some(4096), 21)) && windows.contains(&(None, 21)));

    // DeepSeek-V2-Lite (https://huggingface.co/deepseek-ai/DeepSeek-V2-Lite: "15.7B
    // total parameters, 2.4B activated"): MLA without q compression, 64 routed experts
    // top-6 plus 2 shared, first layer dense. Its cache: 27 x (512 + 64) x 2 = 31,104 B
    // per token.
    let v2 = r#"{"architectures":["DeepseekV2ForCausalLM"],"first_k_dense_replace":1,
        "hidden_act":"silu","hidden_size":2048,"intermediate_size":10944,"kv_lora_rank":512,
        "max_position_embeddings":163840,"model_type":"deepseek_v2",
        "moe_intermediate_size":1408,"moe_layer_freq":1,"n_routed_experts":64,
        "n_shared_experts":2,"num_attention_heads":16,"num_experts_per_tok":6,
        "num_hidden_layers":27,"num_key_value_heads":16,"q_lora_rank":null,
        "qk_nope_head_dim":128,"qk_rope_head_dim":64,"tie_word_embeddings":false,
        "torch_dtype":"bfloat16","v_head_dim":128,"vocab_size":102400}"#;
    let d = ModelConfig::from_json_str(v2, "deepseek-v2-lite", "config.json").unwrap();
    near("v2-lite total", d.params().total as f64, 15.7e9, 0.5);
    // "2.4B" has two significant digits; like the V3 card, without the embedding table
    near("v2-lite active", active_without_embedding(&d), 2.4e9, 2.5);
    let hw = HardwareDb::builtin().unwrap().get("h100").unwrap();
    let e = EngineDb::builtin().unwrap().get("ideal").unwrap();
    let p = predict(&d, hw, e, &Scenario::default()).unwrap();
    assert_eq!(p.memory.kv_bytes_per_token, 31_104.0);
}

/// Nemotron-H's layers by what they are: (Mamba-2, attention, MLP-only).
fn nemotron_layers(m: &ModelConfig) -> (u64, u64, u64) {
    use ridgeline::model::{Ffn, Mixer};
    let count = |f: &dyn Fn(&ridgeline::model::LayerKind) -> bool| {
        m.kind_counts()
            .iter()
            .filter(|(k, _)| f(k))
            .map(|(_, n)| n)
            .sum::<u64>()
    };
    (
        count(&|k| k.mixer == Mixer::Ssm && k.ffn == Ffn::None),
        count(&|k| k.mixer == Mixer::Attention && k.ffn == Ffn::None),
        count(&|k| k.mixer == Mixer::None && k.ffn == Ffn::Dense),
    )
}

#[test]
fn nemotron_h_56b_count_and_layout() {
    // https://huggingface.co/nvidia/Nemotron-H-56B-Base-8K: "This model has 56B model
    // parameters"; NVIDIA ADLR (https://research.nvidia.com/labs/adlr/nemotronh/):
    // "54 Mamba-2, 54 MLP, and 10 Self-Attention layers".
    let m = model("nemotron-h-56b");
    assert_eq!(nemotron_layers(&m), (54, 10, 54));
    // embedding and untied head 2 · 131072 · 8192 = 2,147,483,648; Mamba-2 blocks 54 ·
    // 438,424,320 (see SsmDims::try_params) = 23,674,913,280; MLP blocks (squared ReLU,
    // up and down) 54 · 2 · 8192 · 32768 = 28,991,029,248; attention 10 · (8192·8192 ·
    // 2 + 2 · 8192·1024) = 1,509,949,440; one norm per block and the final one 119 ·
    // 8192 = 974,848: 56,324,350,464.
    let p = m.params();
    assert_eq!(p.total, 56_324_350_464);
    assert_eq!(p.active, p.total);
    near("nemotron-h-56b", p.total as f64, 56e9, 1.0);
    assert!(!m.gated_mlp && !m.rope && m.norms_per_layer == 1);
}

/// The fields of Nemotron-H-8B-Base-8K's config.json that set its shapes
/// (https://huggingface.co/nvidia/Nemotron-H-8B-Base-8K/blob/main/config.json; no
/// verbatim copy was at hand, these values are the ones NVIDIA TensorRT-LLM's
/// Mamba-hybrid test quotes from it): 24 Mamba-2, 4 attention and 24 MLP blocks.
const NEMOTRON_H_8B: &str = r#"{"architectures":["NemotronHForCausalLM"],
    "attention_head_dim":128,"chunk_size":128,"conv_kernel":4,"expand":2,"hidden_size":4096,
    "hybrid_override_pattern":"M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-",
    "intermediate_size":21504,"mamba_head_dim":64,"mamba_num_heads":128,
    "max_position_embeddings":8192,"mlp_bias":false,"mlp_hidden_act":"relu2",
    "model_type":"nemotron_h","n_groups":8,"num_attention_heads":32,"num_hidden_layers":52,
    "num_key_value_heads":8,"ssm_state_size":128,"tie_word_embeddings":false,
    "time_step_limit":[0.0,Infinity],"torch_dtype":"bfloat16","use_bias":false,
    "use_conv_bias":true,"vocab_size":131072}"#;

#[test]
fn nemotron_h_8b_count_by_hand() {
    // in_proj 4096 · (2·8192 + 2·8·128 + 128) = 4096 · 18,560 = 76,021,760; conv 10,240
    // channels · (4 + 1) = 51,200; dt_bias, A_log, D 384; norm 8192; out_proj 8192 · 4096
    // = 33,554,432: 109,635,968 per Mamba-2 block, × 24 = 2,631,263,232. MLP 24 · 2 ·
    // 4096 · 21504 = 4,227,858,432; attention 4 · (2 · 4096² + 2 · 4096 · 1024) =
    // 167,772,160; embedding and head 2 · 131072 · 4096 = 1,073,741,824; norms 53 · 4096
    // = 217,088. Total 8,100,852,736, what a (third-party) per-tensor listing of the
    // checkpoint also sums to. The bare Infinity Python's json writes is read.
    let m = ModelConfig::from_json_str(NEMOTRON_H_8B, "nemotron-h-8b", "config.json").unwrap();
    assert_eq!(nemotron_layers(&m), (24, 4, 24));
    assert_eq!(m.params().total, 8_100_852_736);
}

#[test]
fn ssm_state_is_fixed_per_sequence() {
    // Nemotron-H-56B, bf16: each Mamba-2 block keeps 256 heads · 64 · 256 = 4,194,304
    // state values and a window of 3 · (16,384 + 2·8·256) = 61,440 inputs, 2 bytes each:
    // 8,511,488 B; × 54 blocks = 459,620,352 B per sequence at any context. Only the
    // 10 attention layers grow: 10 · 2 · 8 · 128 · 2 = 40,960 B per token.
    let m = model("nemotron-h-56b");
    let hw = HardwareDb::builtin().unwrap().get("h200").unwrap();
    let e = EngineDb::builtin().unwrap().get("ideal").unwrap();
    let at = |prompt| {
        let s = Scenario {
            prompt,
            gen_tokens: 0,
            ..Scenario::default()
        };
        predict(&m, hw, e, &s).unwrap()
    };
    let state = 54.0 * (4_194_304.0 + 61_440.0) * 2.0;
    assert_eq!(state, 459_620_352.0);
    let p = at(1000);
    assert_eq!(p.memory.inner.kv_cache_bytes, state + 40_960.0 * 1000.0);
    assert_eq!(
        at(8000).memory.inner.kv_cache_bytes - p.memory.inner.kv_cache_bytes,
        40_960.0 * 7000.0
    );
    assert_eq!(p.memory.kv_bytes_per_token, 40_960.0);
    let a = &p.architecture;
    let ssm = a.ssm.expect("ssm facts");
    assert_eq!(
        (ssm.layers, a.attention_layers, a.ffn_only_layers),
        (54, 10, 54)
    );
    assert_eq!(ssm.state_bytes_per_sequence, state);
    assert_eq!(ssm.state_format, Format::Bf16);
    // a config asking for an fp32 state (mamba_ssm_cache_dtype) doubles the SSM part:
    // 24 · (128 · 64 · 128 · 4 + 3 · 10,240 · 2) = 24 · 4,255,744 = 102,137,856 B
    let fp32 = NEMOTRON_H_8B.replace(
        "\"use_bias\"",
        "\"mamba_ssm_cache_dtype\":\"float32\",\"use_bias\"",
    );
    let m8 = ModelConfig::from_json_str(&fp32, "nemotron-h-8b", "config.json").unwrap();
    let s = Scenario {
        prompt: 1,
        gen_tokens: 0,
        ..Scenario::default()
    };
    let p8 = predict(&m8, hw, e, &s).unwrap();
    let ssm8 = p8.architecture.ssm.unwrap();
    assert_eq!(ssm8.state_bytes_per_sequence, 102_137_856.0);
    assert_eq!(ssm8.state_format, Format::Fp32);
}

#[test]
fn ssm_decode_does_not_grow_with_the_context() {
    // A decode step's Mamba-2 ops cost the same at context 1k and 100k (the state is
    // read and written once, whatever the context); the attention core grows with the
    // KV cache it reads.
    use ridgeline::dtype::ComputeDtype;
    use ridgeline::model::graph::{OpKind, Precision, Shard, Step, forward};
    let m = model("nemotron-h-56b");
    let p = Precision {
        weights: Format::Bf16,
        kv: Format::Bf16,
        activations: ComputeDtype::Bf16,
        experts: Format::Bf16,
        kernels: Default::default(),
    };
    let ops = |context| {
        forward(
            &m,
            &Step::decode(8, context),
            &p,
            &Shard::tp(1, m.layers),
            true,
        )
    };
    let (short, long) = (ops(1024), ops(100_000));
    let find = |g: &ridgeline::model::graph::Graph, kind| {
        g.ops()
            .iter()
            .filter(|o| o.kind == kind)
            .map(|o| o.total())
            .collect::<Vec<_>>()
    };
    for kind in [
        OpKind::SsmInProj,
        OpKind::ShortConv,
        OpKind::SsmScan,
        OpKind::SsmNorm,
    ] {
        let (a, b) = (find(&short, kind), find(&long, kind));
        assert_eq!(a.len(), 1, "{kind}");
        assert_eq!(a, b, "{kind}");
    }
    // 54 blocks · 8 sequences · 256 · 64 · 256 · 2 bytes of state read per step
    let scan = find(&short, OpKind::SsmScan)[0];
    assert_eq!(scan.read.kv, 54.0 * 8.0 * 4_194_304.0 * 2.0);
    let attn = |g| find(g, OpKind::Attention)[0];
    // 10 layers · 8 sequences · 2 · 8 KV heads · 128 · 2 bytes per token of context
    let per_token = 10.0 * 8.0 * 4096.0;
    assert_eq!(
        attn(&long).read.kv - attn(&short).read.kv,
        per_token * (100_000.0 - 1024.0)
    );
}

#[test]
fn explain_names_the_ssm_layers_and_their_state() {
    let m = model("nemotron-h-56b");
    let hw = HardwareDb::builtin().unwrap().get("h100").unwrap();
    let e = EngineDb::builtin().unwrap().get("typical").unwrap();
    let s = Scenario {
        gpus: 2,
        prompt: 4096,
        gen_tokens: 512,
        ..Scenario::default()
    };
    let pred = Predictor::new(&m, hw, e, &s).unwrap();
    let p = pred.predict(1, 4096, 512).unwrap();
    let w = pred.what_ifs(1, 4096, 512, p.memory.max_batch);
    let text = ridgeline::report::explain::render(&ridgeline::report::explain::explain(&p, &w));
    assert!(
        text.contains("54 of 118 layers are Mamba-2 state-space blocks")
            && text.contains("460 MB")
            && text
                .contains("only the 10 attention layers cache keys and values, 41.0 kB per token"),
        "{text}"
    );
}

#[test]
fn nemotron_h_moe_blocks() {
    // Nemotron-3-Nano-30B-A3B's config.json (https://huggingface.co/nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16):
    // 23 Mamba-2, 23 mixture-of-experts (E) and 6 attention blocks; experts are ungated
    // (up, squared ReLU, down), a shared expert of width 3712.
    let cfg = r#"{"architectures":["NemotronHForCausalLM"],"chunk_size":128,"conv_kernel":4,
        "expand":2,"head_dim":128,"hidden_size":2688,
        "hybrid_override_pattern":"MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME",
        "intermediate_size":1856,"mamba_head_dim":64,"mamba_num_heads":64,
        "mamba_ssm_cache_dtype":"float32","max_position_embeddings":262144,"mlp_bias":false,
        "mlp_hidden_act":"relu2","model_type":"nemotron_h","moe_intermediate_size":1856,
        "moe_shared_expert_intermediate_size":3712,"n_group":1,"n_groups":8,
        "n_routed_experts":128,"n_shared_experts":1,"num_attention_heads":32,
        "num_experts_per_tok":6,"num_hidden_layers":52,"num_key_value_heads":2,
        "ssm_state_size":128,"tie_word_embeddings":false,"torch_dtype":"bfloat16",
        "use_bias":false,"use_conv_bias":true,"vocab_size":131072}"#;
    let m = ModelConfig::from_json_str(cfg, "nemotron-3-nano", "config.json").unwrap();
    // embedding and head 2 · 131072 · 2688 = 704,643,072; Mamba-2 23 · (2688 · 10,304 +
    // 6,144 · 5 + 192 + 4,096 + 4,096 · 2688) = 23 · 38,742,208 = 891,070,784; attention
    // 6 · (2 · 2688 · 4096 + 2 · 2688 · 256) = 140,378,112; MoE 23 · (128 · 2 · 2688 ·
    // 1856 + 2688 · 128 + 2 · 2688 · 3712) = 23 · 1,297,465,344 = 29,841,702,912; norms
    // 53 · 2688 = 142,464: 31,577,937,344 (31.6B). Active: 6 of 128 experts, 23 ·
    // (6 · 9,977,856 + 344,064 + 19,955,712) = 1,843,838,976 instead: 3,580,073,408
    // (3.6B with the embedding table, 3.2B without).
    let p = m.params();
    assert_eq!(p.total, 31_577_937_344);
    assert_eq!(p.active, 3_580_073_408);
    assert_eq!(m.shared_intermediate, 3712);
    // a decode step of batch 1 reads the active weights but the unused embedding rows
    use ridgeline::dtype::ComputeDtype;
    use ridgeline::model::graph::{Precision, Shard, Step, forward};
    let bf16 = Precision {
        weights: Format::Bf16,
        kv: Format::Bf16,
        activations: ComputeDtype::Bf16,
        experts: Format::Bf16,
        kernels: Default::default(),
    };
    let g = forward(
        &m,
        &Step::decode(1, 1),
        &bf16,
        &Shard::tp(1, m.layers),
        true,
    );
    // weights read: active params less the embedding table (one row read), with the
    // conv weights and biases, A, D, dt_bias and norms read at 16 bits like the rest
    let w = g.total().read.weights;
    let expect = (3_580_073_408.0 - 352_321_536.0 + 2688.0) * 2.0;
    assert!((w / expect - 1.0).abs() < 1e-9, "{w} vs {expect}");
}

#[test]
fn jamba_mamba1_and_experts() {
    // Jamba (arXiv 2403.19887, Table 1: "52B" available, "12B" active parameters) and
    // Jamba-1.5-Mini, "12B active parameters" (arXiv 2408.12570), same shapes. Config:
    // https://huggingface.co/ai21labs/AI21-Jamba-1.5-Mini/blob/main/config.json.
    let cfg = r#"{"architectures":["JambaForCausalLM"],"attn_layer_offset":4,
        "attn_layer_period":8,"expert_layer_offset":1,"expert_layer_period":2,
        "hidden_act":"silu","hidden_size":4096,"intermediate_size":14336,
        "mamba_conv_bias":true,"mamba_d_conv":4,"mamba_d_state":16,"mamba_dt_rank":256,
        "mamba_expand":2,"mamba_proj_bias":false,"max_position_embeddings":262144,
        "model_type":"jamba","num_attention_heads":32,"num_experts":16,
        "num_experts_per_tok":2,"num_hidden_layers":32,"num_key_value_heads":8,
        "rms_norm_eps":1e-06,"tie_word_embeddings":false,"torch_dtype":"bfloat16",
        "vocab_size":65536}"#;
    let m = ModelConfig::from_json_str(cfg, "jamba-1.5-mini", "config.json").unwrap();
    // Mamba-1 block: in_proj 4096 · 16384 = 67,108,864; conv 8192 · (4 + 1) = 40,960;
    // x_proj 8192 · (256 + 32) = 2,359,296 and its norms 288; dt_proj 256 · 8192 + 8192 =
    // 2,105,344; A 8192 · 16 = 131,072; D 8192; out_proj 33,554,432: 105,308,448, × 28.
    // 4 attention layers (offset 4, period 8) of 41,943,040; 16 MoE layers (odd) of 16
    // experts 3 · 4096 · 14336 and a router 4096 · 16, 16 dense MLPs; embedding and head
    // 2 · 65536 · 4096; norms 65 · 4096: 51,570,323,328 in all; with 2 of 16 experts
    // 12,110,311,296 active.
    use ridgeline::model::Mixer;
    assert_eq!(m.try_mixer_params(Mixer::Mamba1), Some(105_308_448));
    let p = m.params();
    assert_eq!((p.total, p.active), (51_570_323_328, 12_110_311_296));
    near("jamba total", p.total as f64, 52e9, 1.0);
    near("jamba active", p.active as f64, 12e9, 1.0);
    assert!(!m.rope);
    // state: 28 · (8192 · 16 + 3 · 8192) · 2 bytes = 28 · 311,296 = 8,716,288 per
    // sequence; the 4 attention layers cache 4 · 2 · 8 · 128 · 2 = 16,384 B per token
    let hw = HardwareDb::builtin().unwrap().get("h100").unwrap();
    let e = EngineDb::builtin().unwrap().get("ideal").unwrap();
    let at = |prompt| {
        let s = Scenario {
            gpus: 2,
            prompt,
            gen_tokens: 0,
            ..Scenario::default()
        };
        predict(&m, hw, e, &s).unwrap()
    };
    let (short, long) = (at(1000), at(100_000));
    let ssm = short.architecture.ssm.unwrap();
    assert_eq!((ssm.version, ssm.layers, ssm.heads), (1, 28, 8192));
    assert_eq!(ssm.state_bytes_per_sequence, 8_716_288.0);
    // per device (tp 2): half of the state and of the KV cache
    assert_eq!(
        short.memory.inner.kv_cache_bytes,
        (8_716_288.0 + 16_384.0 * 1000.0) / 2.0
    );
    assert_eq!(
        long.memory.inner.kv_cache_bytes - short.memory.inner.kv_cache_bytes,
        16_384.0 * 99_000.0 / 2.0
    );
}

/// DeepSeek-V3's ops of one pass on one device (the mean expert-parallel rank), every
/// tensor in bf16.
fn deepseek_ops(
    step: &ridgeline::model::graph::Step,
    tp: u64,
    ep: u64,
) -> Vec<ridgeline::model::graph::OpInstance> {
    deepseek_ops_on(step, tp, ep, false)
}

/// [`deepseek_ops`] on the busiest expert-parallel rank (`busiest`) or the mean one.
fn deepseek_ops_on(
    step: &ridgeline::model::graph::Step,
    tp: u64,
    ep: u64,
    busiest: bool,
) -> Vec<ridgeline::model::graph::OpInstance> {
    use ridgeline::dtype::ComputeDtype;
    use ridgeline::model::graph::{Precision, Shard, forward};
    let m = model("deepseek-v3");
    let p = Precision {
        weights: Format::Bf16,
        kv: Format::Bf16,
        activations: ComputeDtype::Bf16,
        experts: Format::Bf16,
        kernels: Default::default(),
    };
    let shard = Shard {
        tp,
        ep,
        layers: m.layers,
        busiest,
        imbalance: 1.0,
        pair_reads_below: 0,
    };
    forward(&m, step, &p, &shard, true).ops().to_vec()
}

fn total_of(
    ops: &[ridgeline::model::graph::OpInstance],
    kind: ridgeline::model::graph::OpKind,
) -> ridgeline::ops::Cost {
    ops.iter()
        .filter(|o| o.kind == kind)
        .map(|o| o.total())
        .fold(ridgeline::ops::Cost::default(), |a, b| a + b)
}

#[test]
fn absorbed_latent_projections_read_their_weights_once_per_step() {
    // A decode step maps each query into the latent space with W_UK and the output back
    // with W_UV: one matmul per head over all the step's tokens, each head's weights
    // read once, whatever the batch. 8-way tensor parallel: 128 / 8 = 16 heads, each
    // W_UK 128 x 512 and W_UV 512 x 128, bf16, 61 layers:
    // 16 * 128 * 512 * 2 bytes * 61 = 127,926,272 bytes each.
    use ridgeline::model::graph::{OpKind, Step};
    for batch in [1, 4096] {
        let ops = deepseek_ops(&Step::decode(batch, 4096), 8, 1);
        for kind in [OpKind::MlaQAbsorb, OpKind::MlaVAbsorb] {
            let c = total_of(&ops, kind);
            assert_eq!(c.read.weights, 127_926_272.0, "{kind} at batch {batch}");
            // 2 * batch * 16 heads * 128 * 512 FLOPs per layer
            assert_eq!(
                c.flops,
                2.0 * batch as f64 * 16.0 * 65_536.0 * 61.0,
                "{kind}"
            );
        }
    }
}

#[test]
fn expert_parallel_groups_route_the_real_batch() {
    // DeepSeek-V3 over 8 expert-parallel groups (attention data-parallel). One token
    // routes to 8 of 256 experts: 256 * (1 - (1 - 8/256)^1) / 8 = 1 expert per device
    // and MoE layer, 3 matrices of 7168 x 2048 in bf16 over 61 - 3 = 58 MoE layers:
    // 58 * 3 * 14,680,064 * 2 bytes = 5,108,662,272 bytes (the 8 groups' ceil(1/8) = 1
    // sequence each routed 8 tokens: 256 * (1 - (31/32)^8) / 8 = 7.2 experts, 7.2x).
    use ridgeline::model::graph::{OpKind, Step};
    // the 58 MoE layers' expert matmuls (the 3 dense layers' MLP has the same op kinds)
    let moe = |ops: Vec<ridgeline::model::graph::OpInstance>| -> Vec<_> {
        ops.into_iter().filter(|o| o.count == 58.0).collect()
    };
    let ops = moe(deepseek_ops(&Step::decode(1, 1000), 1, 8));
    let experts = total_of(&ops, OpKind::GateUpProj) + total_of(&ops, OpKind::DownProj);
    assert!(
        (experts.read.weights / 5_108_662_272.0 - 1.0).abs() < 1e-12,
        "{}",
        experts.read.weights
    );
    // a batch of 9 routes 9 tokens: 9 * 8 / 8 = 9 rows per device, not the 8 groups'
    // ceil(9/8) = 2 sequences each (16 rows), 9/16 of a batch of 16's matmul FLOPs:
    // 2 * 9 * 7168 * 4096 * 58 for the gate and up projections
    let flops = |b| {
        total_of(
            &moe(deepseek_ops(&Step::decode(b, 1000), 1, 8)),
            OpKind::GateUpProj,
        )
        .flops
    };
    assert_eq!(flops(9), 2.0 * 9.0 * 7168.0 * 4096.0 * 58.0);
    assert_eq!(flops(9) / flops(16), 9.0 / 16.0);
    // attention stays per group: the most loaded group's 2 sequences
    let attn = |b| {
        total_of(
            &deepseek_ops(&Step::decode(b, 1000), 1, 8),
            OpKind::MlaAttention,
        )
        .flops
    };
    assert_eq!(attn(9), attn(16));
    // the busiest of the 8 ranks: one token's 8 picks land 2.43796 on it (the expected
    // maximum of 8 Binomial(8, 1/8) counts, in ridgeline-core's graph tests), each a
    // distinct expert: 2.43796x the mean rank's rows and expert weights; attention and
    // the shared expert are the same
    let all = deepseek_ops_on(&Step::decode(1, 1000), 1, 8, true);
    let busiest = moe(all.clone());
    let heavy = total_of(&busiest, OpKind::GateUpProj) + total_of(&busiest, OpKind::DownProj);
    assert!((heavy.read.weights / experts.read.weights / 2.437_96 - 1.0).abs() < 1e-5);
    assert!((heavy.flops / experts.flops / 2.437_96 - 1.0).abs() < 1e-5);
    let mean = deepseek_ops(&Step::decode(1, 1000), 1, 8);
    for kind in [OpKind::MlaAttention, OpKind::SharedExperts] {
        let c = total_of(&all, kind);
        assert!(c.flops > 0.0, "{kind}");
        assert_eq!(c, total_of(&mean, kind), "{kind}");
    }
}

#[test]
fn a_verify_pass_of_latent_attention_is_absorbed_like_decode() {
    // Speculative verification extends the cached context by k + 1 tokens through the
    // decode kernels: the absorbed form (attention over the cached latents), not the
    // prompt's expanded one (every cached latent turned back into per-head keys and
    // values). At 32K context on 8 x H200 with --ep 8, k = 2, acceptance 0.8 the verify
    // pass was 5.7x the decode step (speed-up 0.57); now it reads the same weights and
    // cache as one step, with 3 queries per sequence instead of 1.
    use ridgeline::model::graph::{OpKind, Step};
    let verify = Step {
        new_tokens: 3,
        context: 32_770,
        logits_per_sequence: 3,
        ..Step::decode(1, 32_768)
    };
    let ops = deepseek_ops(&verify, 1, 8);
    assert!(ops.iter().any(|o| o.kind == OpKind::MlaQAbsorb));
    assert!(!ops.iter().any(|o| o.kind == OpKind::MlaKvBProj));
    let args = [
        "predict",
        "--model",
        "deepseek-v3",
        "--gpu",
        "h200-sxm",
        "--gpus",
        "8",
        "--ep",
        "8",
        "--prompt",
        "32768",
        "--gen",
        "256",
        "--json",
    ];
    let plain = crate::support::cli::json(&args);
    let step = plain["decode"]["time_per_step_s"].as_f64().unwrap();
    let spec = ["--spec-k", "2", "--spec-accept", "0.8"];
    let v = crate::support::cli::json(&[&args[..], &spec[..]].concat());
    let verify_s = v["speculative"]["verify_time_s"].as_f64().unwrap();
    assert!(
        verify_s > step && verify_s < 1.5 * step,
        "verify {verify_s} vs step {step}"
    );
    assert!(v["speculative"]["speedup"].as_f64().unwrap() > 1.0);
}

#[test]
fn listing_names_the_checkpoint_as_it_ships() {
    // DeepSeek-V3's card counts 685B: 671,026,404,352 of the model and 13,463,426,048 of
    // its multi-token-prediction module, 684,489,830,400 in all
    let v = crate::support::cli::json(&["models", "--json"]);
    let rows = v.as_array().unwrap();
    let row = |id: &str| rows.iter().find(|m| m["id"] == id).unwrap().clone();
    let ds = row("deepseek-v3");
    assert_eq!(ds["params_with_mtp"], 684_489_830_400u64);
    assert_eq!(ds["format"], "fp8-block");
    // gpt-oss ships its routed experts in MXFP4, the rest in BF16; Llama 3 has no MTP
    let oss = row("gpt-oss-120b");
    assert_eq!(
        oss["format"],
        serde_json::json!({"experts": "mxfp4", "other": "bf16"})
    );
    assert!(row("llama-3-8b").get("params_with_mtp").is_none());
}
