//! Inference memory per device: the most loaded pipeline stage, tensor-parallel
//! replication, and the planning limits. Expected values are hand arithmetic.

use ridgeline::dtype::{ComputeDtype, Format};
use ridgeline::memory::{Layout, Share, device_weight_bytes, model_weight_bytes};
use ridgeline::predict::resolve_formats;
use ridgeline::prelude::*;

fn bf16(m: &ModelConfig) -> ridgeline::model::graph::Precision {
    resolve_formats(m, Some(Format::Bf16), None)
}

fn model(id: &str) -> ModelConfig {
    ModelDb::builtin().unwrap().resolve(id).unwrap()
}

#[test]
fn pipeline_memory_is_the_most_loaded_stage() {
    // Llama-3-70B over 6 pipeline stages: 80 = 14 + 14 + 13 + 13 + 13 + 13 layers.
    // One layer: q 8192·8192 + k, v 2·8192·1024 + o 8192·8192 = 150,994,944 params,
    // MLP 3·8192·28672 = 704,643,072: 855,638,016 params, 1,711,276,032 bytes in bf16.
    // First stage: 14 layers 23,957,864,448 + 28 norms · 8192 · 2 = 458,752 + the
    // embedding 128256 · 8192 · 2 = 2,101,346,304 bytes: 26,059,669,504.
    // Last stage: 13 layers 22,246,588,416 + 27 norms 442,368 + lm_head 2,101,346,304 =
    // 24,348,377,088. The first binds.
    let m = model("llama-3-70b");
    let stages = Share::stages(&m, &Layout::new(6, Parallel::Pp));
    let bytes: Vec<f64> = stages
        .iter()
        .map(|s| device_weight_bytes(&m, &bf16(&m), s))
        .collect();
    assert_eq!(bytes, vec![26_059_669_504.0, 24_348_377_088.0]);
    let hw = HardwareDb::builtin().unwrap().get("rtx-4090").unwrap();
    let ideal = EngineDb::builtin().unwrap().get("ideal").unwrap();
    let s = Scenario {
        gpus: 6,
        parallel: Parallel::Pp,
        ..Scenario::default()
    };
    let p = predict(&m, hw, ideal, &s).unwrap();
    assert_eq!(p.memory.inner.weights_bytes, 26_059_669_504.0);
    // 26.06 GB of weights on the first stage cannot fit a 24 GB card
    assert!(!p.memory.inner.fits);
}

#[test]
fn tensor_parallel_beyond_the_kv_heads_replicates_kv_projections_and_norms() {
    // Llama-3-70B has 8 KV heads: over 16 devices each holds one whole KV head, so the
    // K and V projections per layer are 2 · 8192 · 128 = 2,097,152 params instead of
    // 2 · 8192 · 1024 / 16 = 1,048,576: 1,048,576 · 80 layers · 2 bytes = 167,772,160
    // bytes more per device. Norms (161 · 8192 params, 2,637,824 bytes) are replicated
    // too: 2,637,824 · 15/16 = 2,472,960 more.
    let m = model("llama-3-70b");
    let share = Share::stages(&m, &Layout::new(16, Parallel::Tp))[0];
    let per_device = device_weight_bytes(&m, &bf16(&m), &share);
    let split_evenly = model_weight_bytes(&m, Format::Bf16) / 16.0;
    assert!(
        (per_device - split_evenly - 170_245_120.0).abs() < 1.0,
        "{per_device} {split_evenly}"
    );
    // one device holds exactly the whole model
    let one = Share::stages(&m, &Layout::new(1, Parallel::Tp))[0];
    assert_eq!(
        device_weight_bytes(&m, &bf16(&m), &one),
        model_weight_bytes(&m, Format::Bf16)
    );
}

#[test]
fn a_tied_embedding_is_held_again_by_the_last_stage() {
    // gpt3-2.7b ties the lm_head to the embedding: with 2 stages both hold the table.
    let m = model("gpt3-2.7b");
    assert!(m.tied_embeddings);
    let [first, last] = Share::stages(&m, &Layout::new(2, Parallel::Pp))[..] else {
        panic!("two stages")
    };
    let fp16 = resolve_formats(&m, Some(Format::Fp16), None);
    let w = |s: &Share| device_weight_bytes(&m, &fp16, s);
    let table = (m.vocab * m.hidden) as f64 * 2.0;
    let positions = (m.max_context * m.hidden) as f64 * 2.0;
    // equal layer counts (32 = 16 + 16): the stages differ by the position table the
    // first holds and the final norm the last holds
    let final_norm = 2.0 * m.hidden as f64 * 2.0;
    assert!((w(&first) - positions - (w(&last) - final_norm)).abs() < 1.0);
    assert!(w(&last) > table);
}

#[test]
fn max_context_stops_at_the_trained_window_and_kv_per_token_needs_no_tokens() {
    // Llama-3-8B on an H100: memory alone allows ~474k tokens at batch 1, but the model
    // was trained for 8,192.
    let m = model("llama-3-8b");
    let hw = HardwareDb::builtin().unwrap().get("h100").unwrap();
    let e = EngineDb::builtin().unwrap().get("typical").unwrap();
    let s = Scenario {
        prompt: 0,
        gen_tokens: 0,
        ..Scenario::default()
    };
    let p = predict(&m, hw, e, &s).unwrap();
    assert_eq!(p.memory.max_context, 8192);
    assert!(p.memory.max_context_in_memory > 400_000);
    // 2 · 32 layers · 8 KV heads · 128 · 2 bytes, even with no token in the cache
    assert_eq!(p.memory.kv_bytes_per_token, 131_072.0);
    assert_eq!(p.limits().kv_bytes_per_token, 131_072.0);
}

#[test]
fn an_fp32_checkpoint_cast_to_bf16_runs_bf16_and_fp32_norms_take_4_bytes() {
    let mut text: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/data/models/llama-2-7b.json"
        ))
        .unwrap(),
    )
    .unwrap();
    text["torch_dtype"] = "float32".into();
    let m = ModelConfig::from_json_str(&text.to_string(), "fp32-llama", "test").unwrap();
    assert_eq!(m.native_format, Format::Fp32);
    let hw = HardwareDb::builtin().unwrap().get("h100").unwrap();
    let e = EngineDb::builtin().unwrap().get("ideal").unwrap();
    let at = |weights| {
        predict(
            &m,
            hw,
            e,
            &Scenario {
                weights,
                ..Scenario::default()
            },
        )
        .unwrap()
    };
    // cast to bf16: activations and the KV cache follow the weights
    let bf16 = at(Some(Format::Bf16));
    assert_eq!(bf16.config.activations, ComputeDtype::Bf16);
    assert_eq!(bf16.config.kv, Format::Bf16);
    // native fp32: 6,738,415,616 params x 4 bytes, norms (65 x 4096) included at 4 bytes
    let fp32 = at(None);
    assert_eq!(fp32.config.kv, Format::Fp32);
    assert_eq!(fp32.memory.inner.weights_bytes, 6_738_415_616.0 * 4.0);
    // bf16: everything at 2 bytes
    assert_eq!(bf16.memory.inner.weights_bytes, 6_738_415_616.0 * 2.0);
}

#[test]
fn offload_streams_the_experts_a_pass_uses() {
    // Mixtral 8x7B q4_k_m on one RTX 4090 with --offload cpu: the weights that do not
    // fit live in host memory, routed experts first. A decode step of one sequence
    // routes its token to 2 of the 8 experts per layer: it streams 8 * (1 - (6/8)^1) / 8
    // = 1/4 of the offloaded bytes; the 512-token prompt (one pass of llama.cpp's 512)
    // touches every expert: 1 - (6/8)^512 = 1 to double precision. The op table shows
    // the stream as host_offload.
    let v = crate::support::cli::json(&[
        "predict",
        "--model",
        "mixtral-8x7b",
        "--weights",
        "q4_k_m",
        "--gpu",
        "rtx-4090",
        "--offload",
        "cpu",
        "--engine",
        "llama.cpp",
        "--json",
    ]);
    let offloaded = v["memory"]["offloaded_bytes"].as_f64().unwrap();
    assert!(offloaded > 1e9, "{offloaded}");
    let row = |phase: &str| {
        v["ops"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["name"] == "host_offload" && o["phase"] == phase)
            .unwrap_or_else(|| panic!("no host_offload row in {phase}"))
            .clone()
    };
    let (decode, prefill) = (row("decode"), row("prefill"));
    assert!((decode["link_bytes"].as_f64().unwrap() / (0.25 * offloaded) - 1.0).abs() < 1e-12);
    assert!((prefill["link_bytes"].as_f64().unwrap() / offloaded - 1.0).abs() < 1e-12);
    assert_eq!(decode["bound"], "communication");
    // the row is the step's host time: the step minus the graph's ops and the
    // per-pass overheads is what the row says (within the overheads' share)
    let step = v["decode"]["time_per_step_s"].as_f64().unwrap();
    let t = decode["time_s"].as_f64().unwrap();
    assert!(t < step && t > 0.5 * step, "{t} of {step}");
}

#[test]
fn the_simulator_s_cache_line_is_memory_s() {
    // The serving simulator's KV pool reads one sequence's bytes from the memory
    // model's own line (Predictor::sequence_cache): Gemma 3's sliding-window layers
    // cap at their window, its global layers grow with the context; equal to the
    // footprint's KV bytes of one sequence at every context. A pipeline has no one line.
    use ridgeline::memory::{CacheBytes, Parallel};
    use ridgeline::predict::Predictor;
    let models = ModelDb::builtin().unwrap();
    let db = HardwareDb::builtin().unwrap();
    let e = EngineDb::builtin().unwrap().get("typical").unwrap();
    let m = models.resolve("gemma-3-4b").unwrap();
    let p = Predictor::new(&m, db.get("l4").unwrap(), e, &Scenario::default()).unwrap();
    let line = p.sequence_cache().expect("one device: one line");
    for l in [1u64, 1000, 1023, 1024, 1025, 5000, 70_000] {
        assert_eq!(
            line.at(l as f64),
            p.memory(1, l, 0).0.kv_cache_bytes,
            "context {l}"
        );
    }
    let pp = Scenario {
        gpus: 2,
        parallel: Parallel::Pp,
        ..Scenario::default()
    };
    let q = Predictor::new(&m, db.get("l4").unwrap(), e, &pp).unwrap();
    assert!(q.sequence_cache().is_none());
    // a draft's cache adds to the model's: per token 10 + 1, windows merged by size
    let a = CacheBytes {
        per_token: 10.0,
        windows: [(1024, 3.0), (0, 0.0), (0, 0.0), (0, 0.0)],
        n_windows: 1,
        per_sequence: 100.0,
    };
    let b = CacheBytes {
        per_token: 1.0,
        windows: [(1024, 2.0), (512, 4.0), (0, 0.0), (0, 0.0)],
        n_windows: 2,
        per_sequence: 0.0,
    };
    let c = a.plus(&b).unwrap();
    // at 2000 tokens: 11 * 2000 + 5 * 1024 + 4 * 512 + 100 = 29268
    assert_eq!(c.at(2000.0), 29_268.0);
    assert_eq!(c.at(2000.0), a.at(2000.0) + b.at(2000.0));
}
