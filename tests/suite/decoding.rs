//! Expert parallelism and speculative decoding: the all-to-all ops and the expert share
//! of memory against hand arithmetic, the speculative step against its parts, where
//! speculation stops paying, and the errors of impossible combinations.

use ridgeline::dtype::Format;
use ridgeline::memory::{Layout, Share, device_weight_bytes};
use ridgeline::model::graph::{OpKind, Phase};
use ridgeline::predict::{Prediction, Speculation, resolve_formats};
use ridgeline::prelude::*;
use std::process::Command;

fn model(id: &str) -> ModelConfig {
    ModelDb::builtin().unwrap().resolve(id).unwrap()
}

/// The predictor of `m` on the bundled `gpu` under the bundled `engine` for `s`.
fn predictor<'a>(m: &'a ModelConfig, gpu: &str, engine: &str, s: &Scenario) -> Predictor<'a> {
    let hw = HardwareDb::builtin().unwrap().get(gpu).unwrap();
    let e = EngineDb::builtin().unwrap().get(engine).unwrap();
    Predictor::new(m, hw, e, s).unwrap()
}

fn run(
    m: &ModelConfig,
    gpu: &str,
    engine: &str,
    s: &Scenario,
    draft: Option<&ModelConfig>,
) -> Prediction {
    let mut p = predictor(m, gpu, engine, s);
    if let Some(d) = draft {
        p = p.with_draft(d).unwrap();
    }
    p.predict(s.batch, s.prompt, s.gen_tokens).unwrap()
}

/// `batch` sequences on `gpus` devices, each its own expert-parallel group.
fn expert_parallel(batch: u64, gpus: u64) -> Scenario {
    Scenario {
        batch,
        gpus,
        ep: gpus,
        ..Scenario::default()
    }
}

fn close(what: &str, a: f64, b: f64, rel: f64) {
    assert!(
        (a - b).abs() <= rel * a.abs().max(b.abs()),
        "{what}: {a} vs {b}"
    );
}

#[test]
fn expert_parallel_all_to_all_on_the_link() {
    // DeepSeek-V3 over 8 H200 with --ep 8, batch 64: each device serves 8 sequences and
    // sends each token once to every other device holding one of its 8 experts:
    // 8 · (1 - (7/8)^8) = 5.2511 devices, 7/8 of them remote, 7168 values each: the
    // combine returns bf16 (16 bits), the dispatch moves the fp8 experts' input
    // quantized, 8 bits and a 32-bit scale per 128 values (8.25 bits).
    let m = model("deepseek-v3");
    let s = Scenario {
        weights: Some(Format::Fp8),
        ..expert_parallel(64, 8)
    };
    // The step waits for the busiest of the 8 ranks, which receives more than the mean
    // rank's 64 · 8 / 8 = 64 rows: 64 + sd · (z + (z² - 1) · skew / 6), sd =
    // sqrt(64 · 8 · 1/8 · 7/8) = 7.48331, z = 1.43447 (Blom's expected maximum of 8
    // normals), skew = 0.75 / 7.48331 = 0.100223: 64 + 7.48331 · 1.452134 = 74.8668,
    // 1.169793x the mean's traffic; the prefill's 32768 rows, sd 169.328, skew
    // 0.0044293: 32768 + 169.328 · 1.435247 = 33011.03, 1.007417x.
    let load = |tokens| {
        let l = ridgeline::model::graph::expert_load(256, 8, tokens, 8);
        l.rows / l.mean_rows
    };
    close("decode imbalance", load(64), 1.169_793, 1e-5);
    close("prefill imbalance", load(64 * 512), 1.007_417, 1e-5);
    let p = run(&m, "h200", "ideal", &s, None);
    assert_eq!(p.config.ep, 8);
    let remote = 8.0 * (1.0 - 0.875f64.powi(8)) * 0.875;
    let per_layer = 8.0 * remote * 7168.0 * 2.0 * load(64);
    for (kind, bits) in [(OpKind::MoeDispatch, 8.25), (OpKind::MoeCombine, 16.0)] {
        let op = p
            .ops
            .iter()
            .find(|o| o.kind == kind && o.phase == Phase::Decode)
            .unwrap_or_else(|| panic!("{kind} missing"));
        // 58 MoE layers (the first 3 are dense)
        assert_eq!(op.count, 58.0);
        close(
            "link bytes",
            op.link_bytes,
            58.0 * per_layer * bits / 16.0,
            1e-12,
        );
        assert_eq!(op.bound.name(), "communication");
    }
    // prefill: 8 x 512 tokens per device
    let pre = p
        .ops
        .iter()
        .find(|o| o.kind == OpKind::MoeDispatch && o.phase == Phase::Prefill)
        .unwrap();
    close(
        "prefill link",
        pre.link_bytes,
        58.0 * 512.0 * per_layer / load(64) * load(64 * 512) * 8.25 / 16.0,
        1e-12,
    );
    // bf16 experts take their input at the activation width: dispatch = combine
    let bf16 = run(
        &m,
        "h200",
        "ideal",
        &Scenario {
            weights: Some(Format::Bf16),
            ..s
        },
        None,
    );
    let link = |kind: OpKind| {
        bf16.ops
            .iter()
            .find(|o| o.kind == kind && o.phase == Phase::Decode)
            .unwrap()
            .link_bytes
    };
    close(
        "bf16 dispatch",
        link(OpKind::MoeDispatch),
        58.0 * per_layer,
        1e-12,
    );
    assert_eq!(link(OpKind::MoeDispatch), link(OpKind::MoeCombine));
    // without --ep there is no all-to-all
    let tp = run(&m, "h200", "ideal", &Scenario { ep: 1, ..s }, None);
    assert!(tp.ops.iter().all(|o| o.kind != OpKind::MoeDispatch));
}

/// The SGLang deployment of DeepSeek-V3 on 96 H100 (LMSYS blog, 2025-05-05; rows
/// m273-m276 of data/measurements/measurements.csv, whose notes give the layouts):
/// prefill on 4 nodes with EP32 (16,384 tokens per device: 4,096-token prompts, 4 per
/// device, 128 in all; 1,024 and 2,048-token prompts at the same tokens per device) and
/// decode on 9 nodes with EP72 (256 sequences per device at 2,000 tokens of context),
/// over InfiniBand (the default 50 GB/s per device). The run overlaps two micro-batches
/// (the all-to-all of one beside the other's compute), and not perfectly: the published
/// throughput lies between the prediction with the all-to-all exposed and with it
/// hidden up to the rest of each pass (`overlap_ep`), and the exposed bound is within
/// 25% of it.
#[test]
fn published_multi_node_expert_parallel_serving_is_bracketed() {
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("data/measurements/measurements.csv"),
    )
    .unwrap();
    let rows = ridgeline::measurements::parse_measurements(&text, "measurements.csv").unwrap();
    let measured = |id: &str| rows.iter().find(|r| r.id == id).unwrap().value;
    let m = model("deepseek-v3");
    let cases = [
        // (row, devices, sequences, prompt, phase)
        ("m273", 32, 128, 4096, Phase::Prefill),
        ("m274", 32, 512, 1024, Phase::Prefill),
        ("m275", 32, 256, 2048, Phase::Prefill),
        ("m276", 72, 72 * 256, 2000, Phase::Decode),
    ];
    for (id, gpus, batch, prompt, phase) in cases {
        let s = Scenario {
            batch,
            prompt,
            gen_tokens: 1,
            gpus,
            ep: gpus,
            ..Scenario::default()
        };
        let rate = |overlap_ep: bool| {
            let p = run(&m, "h100", "sglang", &Scenario { overlap_ep, ..s }, None);
            match phase {
                Phase::Prefill => p.prefill.tokens_per_s,
                _ => p.decode.tokens_per_s,
            }
        };
        let (exposed, hidden) = (rate(false), rate(true));
        let published = measured(id);
        assert!(
            exposed < published && published < hidden,
            "{id}: {exposed:.0} .. {hidden:.0} tok/s against {published}"
        );
        assert!(
            exposed / published > 0.75,
            "{id}: {exposed:.0} vs {published}"
        );
    }
}

/// `overlap_ep` by hand: a pass whose all-to-all takes `A` and its other ops `C` costs
/// `max(A, C)` where it cost `A + C`, the per-pass overheads on top either way; so the
/// decode step is shorter by exactly `min(A, C)` (DeepSeek-V3 on 16 H100, ep 16, batch
/// 64, sglang), and without expert parallelism `overlap_ep` is refused naming both.
#[test]
fn overlapped_all_to_all_is_hidden_up_to_the_rest_of_the_pass() {
    let m = model("deepseek-v3");
    let s = expert_parallel(64, 16);
    let plain = run(&m, "h100", "sglang", &s, None);
    let over = run(
        &m,
        "h100",
        "sglang",
        &Scenario {
            overlap_ep: true,
            ..s
        },
        None,
    );
    let decode = plain.ops.iter().filter(|o| o.phase == Phase::Decode);
    let a2a: f64 = decode
        .clone()
        .filter(|o| matches!(o.kind, OpKind::MoeDispatch | OpKind::MoeCombine))
        .map(|o| o.time_s)
        .sum();
    let rest: f64 = decode.map(|o| o.time_s).sum::<f64>() - a2a;
    assert!(a2a > 0.0 && rest > 0.0);
    close(
        "hidden",
        plain.decode.time_per_step_s - over.decode.time_per_step_s,
        a2a.min(rest),
        1e-9,
    );
    // the op table is the same; a note says the step is less than its sum
    assert_eq!(plain.ops.len(), over.ops.len());
    assert!(
        over.notes
            .iter()
            .any(|n| n.to_string().contains("--overlap-ep"))
    );
    let hw = HardwareDb::builtin().unwrap().get("h100").unwrap();
    let e = EngineDb::builtin().unwrap().get("sglang").unwrap();
    let err = Predictor::new(
        &m,
        hw,
        e,
        &Scenario {
            gpus: 16,
            overlap_ep: true,
            ..Scenario::default()
        },
    )
    .err()
    .unwrap()
    .to_string();
    assert!(err.contains("overlap_ep") && err.contains("ep"), "{err}");
}

#[test]
fn collectives_between_nodes_run_at_the_network() {
    // DeepSeek-V3 on 16 H100 (two NVLink domains of 8), one device per expert group:
    // a device's all-to-all sends (16 - 8) / 15 = 8/15 of its bytes to the other node
    // over its own 50 GB/s NIC while 7/15 go over NVLink (450 GB/s) at the same time:
    // max(7/15 / 450e9, 8/15 / 50e9) = 1.0667e-11 s/byte, 93.75 GB/s
    let m = model("deepseek-v3");
    let s = Scenario {
        weights: Some(Format::Fp8),
        ..expert_parallel(64, 16)
    };
    // That is the decode step's all-to-all (the low-latency kernels send straight to
    // each expert); the prompt pass's (the high-throughput kernels) sends a token's
    // copies for the other node over the network once and forwards them there over
    // NVLink: top-8 routing from 4 of 8 expert groups, 4 groups per node, so a token
    // reaches 2 (1 - (1/2)^8) = 1.99219 nodes, 0.99609 of them remote, against
    // 16 (1 - (15/16)^8) (15/16) = 6.04921 remote copies: 0.164665 network bytes per
    // link byte, 1 / max(1 / 450e9, 0.164665 / 50e9) = 303.65 GB/s.
    let link_time = |p: &Prediction, kind: OpKind, phase: Phase| {
        let op = p
            .ops
            .iter()
            .find(|o| o.kind == kind && o.phase == phase)
            .unwrap();
        (op.link_bytes, op.roofline_time_s)
    };
    let p = run(&m, "h100", "ideal", &s, None);
    let (bytes, t) = link_time(&p, OpKind::MoeDispatch, Phase::Decode);
    close("a2a across nodes", bytes / t, 93.75e9, 1e-9);
    let (bytes, t) = link_time(&p, OpKind::MoeCombine, Phase::Prefill);
    close("forwarded a2a", bytes / t, 303.6465e9, 1e-6);
    // a 25 GB/s network halves both: max(7/15 / 450e9, 8/15 / 25e9) = 2.1333e-11 s/byte,
    // and 0.164665 / 25e9 = 6.5866e-12 s/byte
    let slow = Scenario {
        inter_node_bytes_per_s: 25e9,
        ..s
    };
    let slow = run(&m, "h100", "ideal", &slow, None);
    let (bytes, t) = link_time(&slow, OpKind::MoeDispatch, Phase::Decode);
    close("a2a at 25 GB/s", bytes / t, 46.875e9, 1e-9);
    let (bytes, t) = link_time(&slow, OpKind::MoeDispatch, Phase::Prefill);
    close("forwarded a2a at 25 GB/s", bytes / t, 151.8233e9, 1e-6);
    // within one node (8 devices) the all-to-all is NVLink's alone
    let node = Scenario {
        gpus: 8,
        ep: 8,
        ..s
    };
    let inside = run(&m, "h100", "ideal", &node, None);
    for phase in [Phase::Prefill, Phase::Decode] {
        let (bytes, t) = link_time(&inside, OpKind::MoeDispatch, phase);
        close("a2a in a node", bytes / t, 450e9, 1e-9);
    }
    // a tensor-parallel ring over 16 devices: the 8 members per node drive 8 NICs,
    // min(450e9, 8 x 50e9) = 400 GB/s
    let llama = model("llama-3.1-405b");
    let ring = Scenario {
        gpus: 16,
        weights: Some(Format::Fp8),
        ..Scenario::default()
    };
    let (bytes, t) = link_time(
        &run(&llama, "h100", "ideal", &ring, None),
        OpKind::AllreduceMlp,
        Phase::Prefill,
    );
    close("ring across nodes", bytes / t, 400e9, 1e-9);
    // pipeline stages over 16 devices: 14 sends over NVLink and 1 over the network, each
    // 512 tokens x 16384 wide x 2 bytes (bf16 activations); the ideal engine's link
    // efficiency is 1, so against a 450 GB/s network the prompt pass takes
    // 16,777,216 x (1 / 50e9 - 1 / 450e9) = 0.298 ms longer
    let pp = Scenario {
        gpus: 16,
        parallel: Parallel::Pp,
        weights: Some(Format::Fp8),
        ..Scenario::default()
    };
    let hw = HardwareDb::builtin().unwrap().get("h100").unwrap();
    let e = EngineDb::builtin().unwrap().get("ideal").unwrap();
    let pred = Predictor::new(&llama, hw, e, &pp).unwrap();
    let near = Predictor::new(
        &llama,
        hw,
        e,
        &Scenario {
            inter_node_bytes_per_s: 450e9,
            ..pp
        },
    )
    .unwrap();
    let bytes = 512.0 * 16384.0 * 2.0;
    let extra = bytes * (1.0 / 50e9 - 1.0 / 450e9);
    let (a, b) = (
        pred.predict(1, 512, 1).unwrap().prefill.time_s,
        near.predict(1, 512, 1).unwrap().prefill.time_s,
    );
    close("one stage send over the network", a - b, extra, 1e-6);
}

#[test]
fn expert_parallel_memory_holds_an_eighth_of_the_experts() {
    // DeepSeek-V3's routed experts: 58 layers x 256 x 3 x 7168 x 2048 =
    // 653,908,770,816 parameters, 1 byte each in fp8. A device of --ep 8 (one device per
    // group) holds 32 of each layer's 256, and all of everything else.
    let m = model("deepseek-v3");
    let p = resolve_formats(&m, Some(Format::Fp8), None);
    let bytes = |ep| {
        let layout = Layout {
            gpus: ep,
            parallel: Parallel::Tp,
            ep,
        };
        device_weight_bytes(&m, &p, &Share::stages(&m, &layout)[0])
    };
    let routed = 58.0 * 256.0 * 3.0 * 7168.0 * 2048.0;
    assert_eq!(routed, 653_908_770_816.0);
    close("ep 8 share", bytes(1) - bytes(8), routed * 7.0 / 8.0, 1e-12);
    // the KV cache of a device is its group's: 1/8 of the batch
    let s = Scenario {
        batch: 64,
        gpus: 8,
        weights: Some(Format::Fp8),
        ..Scenario::default()
    };
    let tp8 = run(&m, "h200", "ideal", &s, None);
    let ep8 = run(&m, "h200", "ideal", &Scenario { ep: 8, ..s }, None);
    close(
        "kv",
        ep8.memory.inner.kv_cache_bytes * 8.0,
        tp8.memory.inner.kv_cache_bytes,
        1e-12,
    );
}

#[test]
fn speculative_step_is_verify_plus_drafts_over_tokens_per_verify() {
    // Llama 3.1 70B on 4 H100 with Llama 3.2 1B drafting 4 tokens, 70% accepted:
    // 1 + 0.7 + 0.49 + 0.343 + 0.2401 = 2.7731 tokens per verify pass.
    let target = model("llama-3.1-70b");
    let draft = model("llama-3.2-1b");
    let s = Scenario {
        batch: 8,
        gpus: 4,
        spec: Some(Speculation { k: 4, accept: 0.7 }),
        ..Scenario::default()
    };
    let p = run(&target, "h100", "typical", &s, Some(&draft));
    let sp = p.speculative.as_ref().unwrap();
    assert_eq!(sp.draft, "llama-3.2-1b");
    close("tokens per verify", sp.tokens_per_verify, 2.7731, 1e-12);
    close(
        "step",
        p.decode.time_per_step_s,
        (sp.verify_time_s + sp.draft_time_s) / 2.7731,
        1e-9,
    );
    // the draft ops are listed under their own phase
    assert!(p.ops.iter().any(|o| o.phase == Phase::Draft));
    // the draft's weights (1,235,814,400 bf16 parameters, 4-way tensor parallel but the
    // 128,256 x 2048 embedding table held by every rank as the tied lm_head's shard)
    // are held beside the model's
    let plain = run(
        &target,
        "h100",
        "typical",
        &Scenario { spec: None, ..s },
        None,
    );
    let added = p.memory.inner.weights_bytes - plain.memory.inner.weights_bytes;
    assert!(
        added > 1.235e9 * 2.0 / 4.0 && added < 1.236e9 * 2.0,
        "draft weights per device {added}"
    );
    // speculation pays at batch 8 (decode is bandwidth-bound) ...
    assert!(sp.speedup > 1.5, "{}", sp.speedup);
    // ... and stops where the verify pass turns compute-bound
    let b = sp
        .break_even_batch
        .expect("a dense model's speculation stops paying");
    let at = |batch| {
        run(
            &target,
            "h100",
            "typical",
            &Scenario { batch, ..s },
            Some(&draft),
        )
        .speculative
        .unwrap()
        .speedup
    };
    assert!(at(b) <= 1.0 && at(b - 1) > 1.0, "break-even {b}");
}

#[test]
fn mtp_head_costs_one_layer_and_its_weights() {
    // DeepSeek-V3's MTP module: "11.5B unique parameters (excluding the shared 0.9B
    // Embedding and 0.9B output Head)" (README_WEIGHTS.md,
    // https://github.com/deepseek-ai/DeepSeek-V3): held in fp8 at about a byte each.
    let m = model("deepseek-v3");
    let s = Scenario {
        gpus: 8,
        weights: Some(Format::Fp8),
        spec: Some(Speculation { k: 1, accept: 0.9 }),
        ..Scenario::default()
    };
    let with = run(&m, "h200", "typical", &s, None);
    let without = run(&m, "h200", "typical", &Scenario { spec: None, ..s }, None);
    assert_eq!(with.speculative.as_ref().unwrap().draft, "mtp");
    let added = (with.memory.inner.weights_bytes - without.memory.inner.weights_bytes) * 8.0;
    close("MTP module", added, 11.5e9, 0.03);
    // acceptance 0.9 with one draft: 1.9 tokens per verify
    close(
        "tokens per verify",
        with.speculative.unwrap().tokens_per_verify,
        1.9,
        1e-12,
    );
    // a model without an MTP module drafts with an EAGLE-style head
    let q = run(&model("qwen3-8b"), "h100", "typical", &s_one(), None);
    assert_eq!(q.speculative.unwrap().draft, "eagle");
}

fn s_one() -> Scenario {
    Scenario {
        spec: Some(Speculation { k: 3, accept: 0.6 }),
        ..Scenario::default()
    }
}

#[test]
fn speculation_that_is_always_rejected_only_costs() {
    // accept = 0: one token per verify pass, and the drafts are waste
    let s = Scenario {
        spec: Some(Speculation { k: 3, accept: 0.0 }),
        ..Scenario::default()
    };
    let p = run(&model("llama-3.1-8b"), "h100", "typical", &s, None);
    assert!(p.speculative.unwrap().speedup < 1.0);
}

fn cli(args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_ridgeline"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

#[test]
fn impossible_combinations_exit_2_naming_the_flag() {
    for (args, needle) in [
        (
            &["--model", "llama-3-8b", "--gpus", "2", "--ep", "2"][..],
            "--ep",
        ),
        (
            &["--model", "deepseek-v3", "--gpus", "8", "--ep", "3"][..],
            "do not divide",
        ),
        (
            &["--model", "mixtral-8x7b", "--gpus", "16", "--ep", "16"][..],
            "exceed",
        ),
        (
            &[
                "--model",
                "qwen3-30b-a3b",
                "--gpus",
                "4",
                "--ep",
                "4",
                "--parallel",
                "pp",
            ][..],
            "--parallel tp",
        ),
        (
            &["--model", "llama-3-8b", "--spec-k", "3"][..],
            "--spec-accept",
        ),
        (
            &[
                "--model",
                "llama-3-8b",
                "--spec-k",
                "3",
                "--spec-accept",
                "1.5",
            ][..],
            "--spec-accept",
        ),
        (
            &[
                "--model",
                "llama-3-8b",
                "--spec-k",
                "0",
                "--spec-accept",
                "0.5",
            ][..],
            "--spec-k",
        ),
        (
            &["--model", "llama-3-8b", "--draft", "llama-3.2-1b"][..],
            "--spec-k",
        ),
        (
            &[
                "--model",
                "llama-3-8b",
                "--spec-k",
                "2",
                "--spec-accept",
                "0.5",
                "--draft",
                "qwen3-0.6b",
            ][..],
            "vocabulary",
        ),
    ] {
        let mut full = vec!["predict", "--gpu", "h100"];
        full.extend_from_slice(args);
        let (code, out, err) = cli(&full);
        assert_eq!(code, Some(2), "{full:?}: {err}");
        assert!(out.is_empty(), "{full:?}");
        assert!(err.contains(needle), "{full:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{full:?}: {err}");
    }
}

#[test]
fn a_stated_expert_imbalance_loads_the_busiest_rank() {
    // DeepSeek-V3 fp8 over 8 H200, --ep 8, batch 64: the mean rank runs 64 · 8 / 8 = 64
    // routed rows per MoE layer, the busiest 74.8668 under uniform routing (the test
    // above). A stated imbalance of 1.5 makes it 96 rows: its gate/up matmul does
    // 2 · 96 · 7168 · (2 · 2048) = 5,637,144,576 FLOPs per layer, over 58 MoE layers
    // 326,954,385,408, and its all-to-alls move 1.5 / 1.169793 times the uniform
    // busiest rank's bytes; the experts it reads stay those of uniform routing.
    let m = model("deepseek-v3");
    let at = |f: f64| {
        let s = Scenario {
            weights: Some(Format::Fp8),
            expert_imbalance: f,
            ..expert_parallel(64, 8)
        };
        run(&m, "h200", "ideal", &s, None)
    };
    let (uniform, stated, below) = (at(1.0), at(1.5), at(1.1));
    // the MoE layers' op (the 3 dense layers have a gate/up of their own)
    let op = |p: &Prediction, kind: OpKind, phase: Phase| {
        p.ops
            .iter()
            .find(|o| o.kind == kind && o.phase == phase && o.count == 58.0)
            .unwrap_or_else(|| panic!("{kind} missing"))
            .clone()
    };
    let up = op(&stated, OpKind::GateUpProj, Phase::Decode);
    close("busiest gate/up FLOPs", up.flops, 326_954_385_408.0, 1e-12);
    let rank = stated.architecture.experts.unwrap().busiest_rank.unwrap();
    let floor = uniform.architecture.experts.unwrap().busiest_rank.unwrap();
    assert_eq!(rank.rows, 96.0);
    assert_eq!(
        (rank.touched, rank.mean_rows),
        (floor.touched, floor.mean_rows)
    );
    for kind in [OpKind::MoeDispatch, OpKind::MoeCombine] {
        close(
            "all-to-all bytes",
            op(&stated, kind, Phase::Decode).link_bytes,
            op(&uniform, kind, Phase::Decode).link_bytes * 1.5 / 1.169_793,
            1e-5,
        );
    }
    // the weights read are the same: the extra bytes are the extra rows' activations
    // (96 - 74.8668 rows in of 7168 bf16 values and out of 4096, 58 layers)
    let extra = (96.0 - floor.rows) * (7168.0 + 4096.0) * 2.0 * 58.0;
    close(
        "gate/up bytes",
        up.bytes - op(&uniform, OpKind::GateUpProj, Phase::Decode).bytes,
        extra,
        1e-9,
    );
    // a prompt's 8 · 512 tokens per rank load the busiest rank 1.007417x under uniform
    // routing: 1.5 raises it too
    close(
        "prefill gate/up",
        op(&stated, OpKind::GateUpProj, Phase::Prefill).flops
            / op(&uniform, OpKind::GateUpProj, Phase::Prefill).flops,
        1.5 / 1.007_417,
        1e-5,
    );
    // below the uniform expectation (1.1 < 1.169793) a statement changes nothing
    assert_eq!(below.decode.time_per_step_s, uniform.decode.time_per_step_s);
    assert!(stated.decode.time_per_step_s > uniform.decode.time_per_step_s);
    assert_eq!(stated.config.expert_imbalance, 1.5);
    // out of range, or without expert parallelism: exit 2 naming the flag, one line
    for (extra, why) in [
        ("--ep 8 --expert-imbalance 9", "more than ep 8"),
        ("--ep 8 --expert-imbalance 0.9", "at least 1"),
        ("--expert-imbalance 2", "needs ep above 1"),
    ] {
        let mut args: Vec<&str> = "predict --model deepseek-v3 --gpu h200 --gpus 8"
            .split(' ')
            .collect();
        args.extend(extra.split(' '));
        let (code, out, err) = cli(&args);
        assert_eq!(code, Some(2), "{extra}: {err}");
        assert!(out.is_empty(), "{extra}");
        assert!(
            err.contains("--expert-imbalance") && err.contains(why),
            "{extra}: {err}"
        );
        assert_eq!(err.trim().lines().count(), 1, "{extra}: {err}");
    }
}

#[test]
fn explain_names_the_busiest_expert_parallel_rank() {
    // DeepSeek-V3 over 8 groups, batch 16: 16 · 8 = 128 picks, 16 rows on the mean
    // rank, 16 + 3.7417 · (1.4345 + 1.05778 · 0.20045 / 6) = 21.500 on the busiest (sd
    // sqrt(128 · 1/8 · 7/8) = 3.7417, skew 0.75 / 3.7417, Blom's z); each of a rank's
    // 32 experts touched with p = 1 - (31/32)^16 = 0.39829, 12.745 on the mean rank and
    // 16.712 on the busiest (the exact maximum of 8 Binomial(32, 0.39829) counts, in
    // ridgeline-core's graph tests)
    let out = explain_deepseek_on_8_h200(&["--ep", "8", "--batch", "16"]);
    assert!(
        out.contains("the busiest group runs 21.5 routed rows and reads 16.7 experts per layer where the mean runs 16.0 and reads 12.7"),
        "{out}"
    );
    // a stated imbalance of 2: at least 2 · 16 = 32 rows, the same experts read, and
    // the header and the sentence say it was stated
    let stated =
        explain_deepseek_on_8_h200(&["--ep", "8", "--batch", "16", "--expert-imbalance", "2"]);
    assert!(
        stated.contains("the busiest group runs 32.0 routed rows and reads 16.7 experts per layer where the mean runs 16.0 and reads 12.7 (tokens routed at random, or the stated imbalance of 2x the mean's rows where that is more)"),
        "{stated}"
    );
    let words = "predict --model deepseek-v3 --gpu h200 --gpus 8 --ep 8 --batch 16";
    let mut args: Vec<&str> = words.split(' ').collect();
    args.extend(["--expert-imbalance", "2"]);
    let (code, text, err) = cli(&args);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        text.contains("experts over 8 devices (busiest at least 2x the mean's routed rows)"),
        "{text}"
    );
    // and without expert parallelism nothing is said of it
    let tp = explain_deepseek_on_8_h200(&["--batch", "16"]);
    assert!(
        tp.contains("Mixture of experts") && !tp.contains("busiest group"),
        "{tp}"
    );
}

#[test]
fn explain_weighs_tensor_parallelism_against_expert_parallelism() {
    // The what-if of an expert-parallel layout is the same devices tensor parallel: its
    // summary is exactly the prediction at --ep 1
    let m = model("deepseek-v3");
    let s = expert_parallel(64, 8);
    let p = predictor(&m, "h200", "typical", &s);
    let t = p
        .what_ifs(64, s.prompt, s.gen_tokens, 4096)
        .without_ep
        .expect("expert parallel: the tensor-parallel what-if");
    assert_eq!((t.gpus, t.batch), (8, 64));
    let tp = predictor(&m, "h200", "typical", &Scenario { ep: 1, ..s });
    assert_eq!(t.summary, tp.summary(64, s.prompt, s.gen_tokens));
    // a tensor-parallel layout has none
    assert!(
        tp.what_ifs(64, s.prompt, s.gen_tokens, 4096)
            .without_ep
            .is_none()
    );
    let out = explain_deepseek_on_8_h200(&["--ep", "8", "--batch", "64"]);
    let line = out
        .lines()
        .find(|l| l.contains("Without expert parallelism (tensor parallel over the same 8 devices"))
        .unwrap_or_else(|| panic!("{out}"));
    // its tokens/s is the batch over the tensor-parallel decode step
    let rate = format!("({:.0} tok/s", 64.0 / t.summary.decode.time_s);
    assert!(line.contains(&rate), "{line} lacks {rate}");
}

/// `explain` of DeepSeek-V3 on 8 H200 with `extra` options: its stdout (exit 0).
fn explain_deepseek_on_8_h200(extra: &[&str]) -> String {
    let mut args: Vec<&str> = "explain --model deepseek-v3 --gpu h200 --gpus 8"
        .split(' ')
        .collect();
    args.extend_from_slice(extra);
    let (code, out, err) = cli(&args);
    assert_eq!(code, Some(0), "{err}");
    out
}

#[test]
fn a_large_moe_layer_pays_its_launches_and_explain_says_so() {
    // DeepSeek-V3 launches 3 x 17 + 58 x 23 = 1385 kernels per decode step over its 61
    // layers (latent attention 12, an MLP 5, experts with a shared one 11): 22.705 per
    // layer, where a dense layer launches 11
    let m = model("deepseek-v3");
    let s = Scenario {
        gpus: 8,
        weights: Some(Format::Fp8),
        ..Scenario::default()
    };
    let p = run(&m, "h200", "sglang", &s, None);
    close(
        "kernels per layer",
        p.architecture.kernels_per_layer,
        1385.0 / 61.0,
        1e-12,
    );
    let d = &p.decode;
    assert!(d.overhead_per_step_s > 0.5 * d.time_per_step_s, "{d:?}");
    assert!(d.overhead_per_step_s < d.time_per_step_s, "{d:?}");
    // the step pays sglang's per-layer time for 1385 / 11 dense layers' launches
    let e = EngineDb::builtin().unwrap().get("sglang").unwrap();
    let launches = e.overheads.layer_overhead_s * 1385.0 / 11.0;
    assert!(
        d.overhead_per_step_s > launches,
        "{} vs {launches}",
        d.overhead_per_step_s
    );
    let out = explain_deepseek_on_8_h200(&["--weights", "fp8", "--engine", "sglang"]);
    assert!(
        out.contains(
            "its 61 layers launching 22.7 kernels each on average where a dense layer launches 11"
        ),
        "{out}"
    );
    // Llama 3 8B: 11 kernels a layer, and a memory-bound step with nothing to say
    let l = run(
        &model("llama-3-8b"),
        "h100",
        "typical",
        &Scenario::default(),
        None,
    );
    assert_eq!(l.architecture.kernels_per_layer, 11.0);
    let (code, out, err) = cli(&["explain", "--model", "llama-3-8b", "--gpu", "h100"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(!out.contains("Fixed costs take"), "{out}");
}

#[test]
fn explain_names_vllm_0_5_s_host_work_per_sequence_among_the_fixed_costs() {
    // Llama 3 8B on one H100 at 128 sequences under vLLM before 0.6: the host time per
    // running sequence, times the 128 sequences, is part of each step's fixed cost
    let per_sequence = EngineDb::builtin()
        .unwrap()
        .get("vllm-0.5")
        .unwrap()
        .overheads
        .sequence_overhead_s;
    assert!(per_sequence > 0.0);
    let args = [
        "explain",
        "--model",
        "llama-3-8b",
        "--gpu",
        "h100",
        "--batch",
        "128",
        "--engine",
    ];
    let (code, out, err) = cli(&[&args[..], &["vllm-0.5"]].concat());
    assert_eq!(code, Some(0), "{err}");
    let t = ridgeline::units::fmt_seconds;
    let stated = format!(
        "its host work per sequence ({} for each of the 128 sequences: {})",
        t(per_sequence),
        t(128.0 * per_sequence)
    );
    assert!(out.contains(&stated), "{stated}\n{out}");
    // the same configuration under today's vllm has no such time
    let (_, plain, _) = cli(&[&args[..], &["vllm"]].concat());
    assert!(!plain.contains("host work per sequence"), "{plain}");
}

#[test]
fn apple_matrix_vector_rows_past_the_first_add_their_arithmetic_to_the_weights_loads() {
    // llama.cpp's Metal matrix-vector kernels (docs/calibration.md, "llama.cpp's batched decode on an Apple GPU"):
    // with a time per GFLOP s, each weight matmul of a decode step of b <= 8 sequences
    // (all memory-bound here) takes its weights' load plus (b - 1)/b of its 2·N·b FLOP
    // at s, so the step grows by 2·N·(b - 1)·s, N the matmuls' weight elements; one
    // sequence's step is unchanged
    let m = model("qwen2.5-7b");
    let hw = HardwareDb::builtin().unwrap().get("m2-ultra").unwrap();
    let apple = ridgeline::engine::Selector::class(ridgeline::hardware::DeviceClass::Apple);
    let gemv = ridgeline::engine::DeviceFactor::GemvTime;
    let s_per_gflop = 2e-4;
    let step = |b: u64, on: bool| {
        let mut e = llama_cpp_without_gemv();
        if on {
            e.set_override(&apple, gemv, Some(s_per_gflop));
        }
        let s = Scenario {
            batch: b,
            prompt: 512,
            gen_tokens: 32,
            weights: Some(Format::Q8_0),
            ..Scenario::default()
        };
        let p = Predictor::new(&m, hw, &e, &s).unwrap();
        p.predict(b, 512, 32).unwrap().decode.time_per_step_s
    };
    let params = m.params();
    let n = (params.total - params.embedding - params.norms) as f64;
    assert_eq!(step(1, true), step(1, false));
    for b in [2u64, 4, 8] {
        let grown = step(b, true) - step(b, false);
        let expected = 2.0 * n * (b - 1) as f64 * s_per_gflop * 1e-9;
        assert!(
            (grown / expected - 1.0).abs() < 0.01,
            "batch {b}: {grown} s against {expected} s"
        );
    }
    // past 8 sequences the matrix kernels run, and the time is not paid
    assert_eq!(step(16, true), step(16, false));
}

#[test]
fn apple_matrix_vector_arithmetic_as_a_fraction_of_the_peak_carries_across_chips() {
    // the same cost as a fraction f of the device's 16-bit peak P (docs/reference.md,
    // `gemv_compute_efficiency`): a prompt of t <= 8 tokens (llama-bench's ppN) grows by
    // 2·N·(t - 1)/(f·P) over what the loads take, N the matmuls' weight elements; with f
    // = 0.2 that is 2·N·(t - 1)/(0.2 · 27.2e12) s on the M2 Ultra and 2·N·(t - 1)/(0.2 ·
    // 5.2e12) s on the M1 Pro (their fp32 peaks, which their files read for 16 bits),
    // 27.2 / 5.2 = 5.23 times as long; where a time per GFLOP is set as well it wins
    let m = model("llama-7b");
    let db = HardwareDb::builtin().unwrap();
    let apple = ridgeline::engine::Selector::class(ridgeline::hardware::DeviceClass::Apple);
    let efficiency = ridgeline::engine::DeviceFactor::GemvEfficiency;
    let time = ridgeline::engine::DeviceFactor::GemvTime;
    let prompt = |gpu: &str, t: u64, f: f64, per_gflop: f64| {
        let mut e = llama_cpp_without_gemv();
        e.set_override(&apple, efficiency, (f > 0.0).then_some(f));
        e.set_override(&apple, time, (per_gflop > 0.0).then_some(per_gflop));
        let s = Scenario {
            prompt: t,
            gen_tokens: 1,
            weights: Some(Format::Q8_0),
            ..Scenario::default()
        };
        let hw = db.get(gpu).unwrap();
        let p = Predictor::new(&m, hw, &e, &s).unwrap();
        p.predict(1, t, 1).unwrap().prefill.time_s
    };
    let params = m.params();
    // the lm_head runs on the prompt's last token only
    let n = (params.total - params.embedding - params.norms - params.lm_head) as f64;
    for (gpu, peak) in [("m2-ultra", 27.2e12), ("m1-pro", 5.2e12)] {
        assert_eq!(prompt(gpu, 1, 0.2, 0.0), prompt(gpu, 1, 0.0, 0.0));
        for t in [2u64, 4, 8] {
            let grown = prompt(gpu, t, 0.2, 0.0) - prompt(gpu, t, 0.0, 0.0);
            let expected = 2.0 * n * (t - 1) as f64 / (0.2 * peak);
            assert!(
                (grown / expected - 1.0).abs() < 0.01,
                "{gpu}, {t} tokens: {grown} s against {expected} s"
            );
            // a time per GFLOP set beside it wins: 2·N·(t - 1)·2e-4·1e-9 s
            let timed = prompt(gpu, t, 0.2, 2e-4) - prompt(gpu, t, 0.0, 0.0);
            let expected = 2.0 * n * (t - 1) as f64 * 2e-4 * 1e-9;
            assert!(
                (timed / expected - 1.0).abs() < 0.01,
                "{timed} against {expected}"
            );
        }
    }
}

/// The bundled llama.cpp profile without a matrix-vector cost: its time per GFLOP and
/// fraction of the peak unset, as engine values and device entries.
fn llama_cpp_without_gemv() -> ridgeline::engine::Engine {
    use ridgeline::engine::DeviceFactor;
    let mut e = EngineDb::builtin()
        .unwrap()
        .get("llama.cpp")
        .unwrap()
        .clone();
    e.take_device_factor(DeviceFactor::GemvTime);
    e.take_device_factor(DeviceFactor::GemvEfficiency);
    e.overheads.gemv_s_per_gflop = 0.0;
    e.speed.gemv_compute_efficiency = 0.0;
    e
}

/// The decode step's op `kind` of `m` on `gpu` under llama.cpp at `batch` sequences
/// after a 512-token prompt, generating 32 (llama-batched-bench's shape).
fn llama_cpp_decode_op(
    m: &ModelConfig,
    gpu: &str,
    batch: u64,
    kind: OpKind,
) -> ridgeline::predict::OpReport {
    let s = Scenario {
        batch,
        prompt: 512,
        gen_tokens: 32,
        ..Scenario::default()
    };
    let p = predictor(m, gpu, "llama.cpp", &s)
        .predict(batch, 512, 32)
        .unwrap();
    (p.ops.into_iter())
        .find(|o| o.phase == Phase::Decode && o.kind == kind)
        .unwrap()
}

#[test]
fn an_apple_gpu_s_matrix_kernel_computes_whole_tiles_of_32_tokens() {
    // llama.cpp's Metal `kernel_mul_mm` multiplies a tile of weights against 32 tokens
    // (docs/calibration.md): on an Apple GPU a weight matmul of 9 to 32 rows computes
    // 32, so at batch 16 and 32 a compute-bound projection of a decode step takes the
    // same time (its compute that of 32 + gemm_half_rows rows)
    let m = model("qwen2.5-7b");
    let gate_up = |gpu: &str, b: u64| {
        let op = llama_cpp_decode_op(&m, gpu, b, OpKind::GateUpProj);
        (op.time_s, op.bound)
    };
    let (t16, b16) = gate_up("m2-ultra", 16);
    let (t32, b32) = gate_up("m2-ultra", 32);
    assert_eq!((b16, b32), (Bound::Compute, Bound::Compute));
    assert!((t16 / t32 - 1.0).abs() < 1e-9, "{t16} vs {t32}");
    // a third tile at 33 rows: (64 + H) / (32 + H) the time, H = 36
    let (t33, _) = gate_up("m2-ultra", 33);
    let h = EngineDb::builtin()
        .unwrap()
        .get("llama.cpp")
        .unwrap()
        .speed
        .gemm_half_rows;
    assert!(
        (t33 / t32 - (64.0 + h) / (32.0 + h)).abs() < 1e-9,
        "{t33} vs {t32}"
    );
    // on an H100 the roll-off is affine in the rows: at 512 and 520 sequences (both
    // compute-bound) the times are in the ratio (520 + H) / (512 + H), not a tile's
    let (n512, c512) = gate_up("h100", 512);
    let (n520, c520) = gate_up("h100", 520);
    assert_eq!((c512, c520), (Bound::Compute, Bound::Compute));
    assert!(
        (n520 / n512 - (520.0 + h) / (512.0 + h)).abs() < 1e-9,
        "{n520} vs {n512}"
    );
}

#[test]
fn an_apple_gpu_s_expert_kernels_read_an_expert_once_per_token_that_picks_it_below_32_tokens() {
    // llama.cpp's Metal expert matmul below 32 tokens (`kernel_mul_mv_id`) multiplies each
    // token by each expert it picks on its own, reading the expert's weights once per
    // pick; from 32 tokens (`kernel_mul_mm_id`) once per touched expert, as on a CUDA GPU
    // (docs/calibration.md: llama.cpp's batched decode on an Apple GPU)
    let m = model("qwen3-30b-a3b");
    assert_eq!(
        (
            m.hidden,
            m.expert_intermediate,
            m.experts,
            m.experts_per_token
        ),
        (2048, 768, 128, 8)
    );
    // one expert's down projection in bf16: 768 x 2048 x 2 = 3,145,728 bytes
    let expert = 3_145_728.0;
    let down = |gpu: &str, b: u64| llama_cpp_decode_op(&m, gpu, b, OpKind::DownProj).bytes;
    // 16 sequences: 16 x 8 = 128 reads per MoE layer on the M2 Ultra, against the
    // 128·(1 - (1 - 8/128)^16) = 82.42 distinct experts they touch on an H100; 48 layers
    let touched = 128.0 * (1.0 - (15.0f64 / 16.0).powi(16));
    assert!((touched - 82.42).abs() < 0.005, "{touched}");
    let diff = down("m2-ultra", 16) - down("h100", 16);
    let want = 48.0 * (128.0 - touched) * expert;
    assert!((diff / want - 1.0).abs() < 1e-9, "{diff} vs {want}");
    // one sequence's 8 experts are distinct, and 32 run the matrix kernel: the same
    // bytes on both
    for b in [1, 32] {
        let (apple, h100) = (down("m2-ultra", b), down("h100", b));
        assert!((apple / h100 - 1.0).abs() < 1e-12, "{b}: {apple} vs {h100}");
    }
}
