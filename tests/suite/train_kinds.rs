//! Training every architecture the predictor reads: latent and linear attention,
//! state-space blocks, dense and MoE layers with shared experts, and expert parallelism
//! (`--ep`). Hand arithmetic on the per-kind counts, the closed form on dense models,
//! and published anchors (the DeepSeek-V3 technical report's training throughput,
//! Axolotl's gpt-oss-20b LoRA memory).

use super::support::cli::{json, one_line_error, run, run_line};
use ridgeline::hardware::{Hardware, HardwareDb};
use ridgeline::model::{ModelConfig, ModelDb};
use ridgeline::train::{
    ActivationShape, LoraTargets, Method, Optimizer, Recompute, TrainConfig, TrainPrecision,
    TrainStack, Trainer, activation_bytes_per_layer, lora_params_in, max_lora_rank,
};

fn model(id: &str) -> ModelConfig {
    ModelDb::builtin().unwrap().resolve(id).unwrap()
}

fn gpu(id: &str) -> Hardware {
    HardwareDb::builtin().unwrap().get(id).unwrap().clone()
}

const GIB: f64 = 1_073_741_824.0;

/// `ridgeline train --model qwen3-30b-a3b --gpu h100 --gpus 8` with `extra` flags.
fn train_qwen3_on_8_h100(extra: &[&str]) -> std::process::Output {
    run_line("train --model qwen3-30b-a3b --gpu h100 --gpus 8", extra)
}

/// `ridgeline train --model deepseek-v3 --gpu h100` with `extra` flags.
fn train_deepseek_on_h100(extra: &[&str]) -> std::process::Output {
    run_line("train --model deepseek-v3 --gpu h100", extra)
}

/// Every bundled model trains: a finite, positive memory and step, `0 < MFU <= HFU <=
/// 1`, on 64 H100s with ZeRO-3 and full recomputation (a layout every model admits).
#[test]
fn every_bundled_model_trains() {
    let hw = gpu("h100");
    let cfg = TrainConfig {
        gpus: 64,
        zero: 3,
        recompute: Recompute::Full,
        seq: 4096,
        ..TrainConfig::default()
    };
    let mut mixed = 0;
    for m in ModelDb::builtin().unwrap().models() {
        if m.kinds.len() > 1 || !m.is_uniform() {
            mixed += 1;
        }
        let r = Trainer::new(m, &hw, &cfg)
            .unwrap_or_else(|e| panic!("{}: {e}", m.id))
            .report();
        let (mem, st) = (r.memory.inner, r.step);
        assert!(
            mem.total_bytes.is_finite() && mem.total_bytes > 0.0,
            "{}: {mem:?}",
            m.id
        );
        assert!(
            st.time_s.is_finite() && st.time_s > 0.0,
            "{}: {}",
            m.id,
            st.time_s
        );
        assert!(
            st.mfu > 0.0 && st.mfu <= st.hfu && st.hfu <= 1.0,
            "{}: mfu {} hfu {}",
            m.id,
            st.mfu,
            st.hfu
        );
    }
    // the 14 models of 2025-26 that the closed form refused, among others
    assert!(mixed >= 14, "{mixed} mixed-kind models");
}

/// On every dense single-kind model the per-kind activation count is the closed form
/// of the module docs, `s·b·[e·(4h + 2q + 2k + m·i)] + 4·a·s·b` (flash, no dropout,
/// no sequence-parallel split at tp 1, m = 3 gated or 2 plain): the graph-era count
/// and the formula agree exactly where both apply.
#[test]
fn dense_models_keep_the_closed_form_activations() {
    let shape = ActivationShape {
        seq: 4096,
        micro_batch: 2,
        tp: 1,
        sequence_parallel: true,
        flash: true,
        dropout: false,
        recompute: Recompute::None,
        act_bytes: 2.0,
        eager: false,
    };
    let mut checked = 0;
    for m in ModelDb::builtin().unwrap().models() {
        if !m.is_uniform() || m.is_moe() || m.attention_gate {
            continue;
        }
        let (s, b, e) = (4096.0, 2.0, 2.0);
        let (h, q, k, i) = (
            m.hidden as f64,
            m.q_width() as f64,
            m.kv_width() as f64,
            m.intermediate as f64,
        );
        let mm = if m.gated_mlp { 3.0 } else { 2.0 };
        let want =
            s * b * e * (4.0 * h + 2.0 * q + 2.0 * k + mm * i) + 4.0 * m.heads as f64 * s * b;
        let got = activation_bytes_per_layer(m, &shape);
        assert!(
            (got / want - 1.0).abs() < 1e-12,
            "{}: {got} vs {want}",
            m.id
        );
        checked += 1;
    }
    assert!(checked >= 20, "{checked} dense models");
}

/// LoRA on every projection of Qwen3-30B-A3B, by hand: h = 2048, q = 32·128 = 4096,
/// k = 4·128 = 512, 128 routed experts of width 768, gated, 48 layers, r = 8. Per layer
/// attention (h+q) + 2(h+k) + (q+h) = 6144 + 5120 + 6144 = 17,408, the experts
/// 3·(2048+768)·128 = 1,081,344; 8 · 1,098,752 · 48 = 421,920,768 adapter parameters.
#[test]
fn lora_on_moe_experts_by_hand() {
    let m = model("qwen3-30b-a3b");
    let n = m.layer_kinds.len();
    assert_eq!(
        lora_params_in(&m, 0..n, 8, LoraTargets::AllLinear),
        421_920_768.0
    );
    // q and v only: 8 · ((2048 + 4096) + (2048 + 512)) · 48 = 3,342,336
    assert_eq!(
        lora_params_in(&m, 0..n, 8, LoraTargets::QueryValue),
        3_342_336.0
    );
}

/// Latent attention's query_value adapters are q_b (1536 x 128·192 = 24,576) and kv_b
/// (512 x 128·(128 + 128) = 32,768): the largest useful rank is 512, kv_b's input.
#[test]
fn latent_attention_lora_targets_q_b_and_kv_b() {
    let m = model("deepseek-v3");
    let (limit, matrix) = max_lora_rank(&m, LoraTargets::QueryValue);
    assert_eq!(limit, 512);
    assert_eq!(matrix, "kv_b_proj (512 x 32768)");
    let out = train_deepseek_on_h100(&[
        "--gpus",
        "64",
        "--zero",
        "3",
        "--method",
        "lora",
        "--lora-targets",
        "query_value",
        "--lora-rank",
        "513",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--lora-rank") && err.contains("kv_b_proj (512 x 32768)"),
        "{err}"
    );
}

/// Qwen3-30B-A3B trained on 8 H100 (the defaults otherwise) with `ep` expert groups and
/// the busiest rank's routed tokens `expert_imbalance` times the mean.
fn qwen3_moe_on_8_h100(ep: u64, expert_imbalance: f64) -> ridgeline::train::TrainReport {
    let cfg = TrainConfig {
        gpus: 8,
        ep,
        expert_imbalance,
        ..TrainConfig::default()
    };
    Trainer::new(&model("qwen3-30b-a3b"), &gpu("h100"), &cfg)
        .unwrap()
        .report()
}

/// Expert parallelism splits only the routed experts: Qwen3-30B-A3B's are 48 layers x
/// 128 experts x 3 x 2048 x 768 = 28,991,029,248 parameters; on 8 devices without ZeRO
/// `--ep 8` keeps 1/8 of them, so the 16-bit weights shrink by 28,991,029,248 x 7/8 x 2
/// = 50,734,301,184 bytes per device, and so do the gradients.
#[test]
fn expert_parallelism_shards_the_routed_experts() {
    let (one, eight) = (qwen3_moe_on_8_h100(1, 1.0), qwen3_moe_on_8_h100(8, 1.0));
    let saved = one.memory.inner.params_bytes - eight.memory.inner.params_bytes;
    assert!((saved - 50_734_301_184.0).abs() < 1.0, "{saved}");
    let saved = one.memory.inner.grads_bytes - eight.memory.inner.grads_bytes;
    assert!((saved - 50_734_301_184.0).abs() < 1.0, "{saved}");
    // the all-to-all appears, and only with ep
    assert_eq!(one.step.ep_comm_time_s, 0.0);
    assert!(eight.step.ep_comm_time_s > 0.0);
    let j: serde_json::Value =
        serde_json::from_slice(&train_qwen3_on_8_h100(&["--ep", "8", "--json"]).stdout).unwrap();
    assert_eq!(j["layout"]["ep"], 8);
}

/// Token imbalance between expert-parallel ranks (`--expert-imbalance`): Qwen3-30B-A3B
/// on 8 H100 with `--ep 8`, micro-batch 1 of 2,048 tokens per rank. The busiest rank
/// runs 1.5x the mean's routed tokens, so its all-to-all moves 1.5x the bytes and its
/// experts do 1.5x the work; everything else stays. The routed FLOPs per token per
/// layer and pick: gate_up 2 x 2048 x 1536 = 6,291,456, down 2 x 768 x 2048 =
/// 3,145,728, the SiLU-and-multiply (5 + 1) x 768 = 4,608: 9,441,792; 8 picks, 48
/// layers, 2,048 tokens: 7.425e12 forward per rank, 3x that with the backward (inputs'
/// and weights' gradients, the activation's twice); over the 8 ranks the step
/// executes 0.5 x 8 x 3 x 7.425e12 FLOPs more.
#[test]
fn expert_imbalance_scales_the_busiest_ranks_experts() {
    let (even, busy) = (qwen3_moe_on_8_h100(8, 1.0), qwen3_moe_on_8_h100(8, 1.5));
    let ratio = busy.step.ep_comm_time_s / even.step.ep_comm_time_s;
    assert!((ratio - 1.5).abs() < 1e-9, "{ratio}");
    let routed = 2048.0 * 48.0 * 8.0 * 9_441_792.0;
    let more = busy.step.executed_flops - even.step.executed_flops;
    assert!(
        (more / (0.5 * 8.0 * 3.0 * routed) - 1.0).abs() < 1e-9,
        "{more}"
    );
    // model FLOPs (the MFU numerator) are the model's, not the busiest rank's
    assert_eq!(busy.step.flops, even.step.flops);
    assert!(busy.step.time_s > even.step.time_s && busy.step.mfu < even.step.mfu);
    // bad values exit 2 naming the flag
    for (args, needle) in [
        (
            &["--ep", "8", "--expert-imbalance", "0.9"][..],
            "--expert-imbalance",
        ),
        (
            &["--ep", "8", "--expert-imbalance", "9"][..],
            "--expert-imbalance",
        ),
        (&["--expert-imbalance", "1.2"][..], "--ep"),
    ] {
        one_line_error(&train_qwen3_on_8_h100(args), &[needle]);
    }
}

#[test]
fn bad_expert_parallelism_exits_2_naming_ep() {
    for (args, needle) in [
        (
            &["--model", "qwen3-30b-a3b", "--gpus", "8", "--ep", "3"][..],
            "routed experts",
        ),
        (
            &["--model", "llama-3-8b", "--gpus", "8", "--ep", "2"][..],
            "has none",
        ),
        (
            &["--model", "qwen3-30b-a3b", "--gpus", "4", "--ep", "8"][..],
            "data-parallel degree",
        ),
    ] {
        let base = ["train", "--gpu", "h100"];
        one_line_error(&run(&[&base[..], args].concat()), &["--ep", needle]);
    }
}

/// DeepSeek-V3's pre-training (arXiv 2412.19437, section 1 and 3.1-3.2): 2,048 H800
/// GPUs, 16-way pipeline, 64-way expert parallelism over 8 nodes, ZeRO-1 data
/// parallelism, FP8 mixed precision, 4K sequences, a batch of 15,360 sequences, and
/// "180K H800 GPU hours" per trillion tokens: 1e12 / (180e3 · 3600) = 1,543 tokens/s
/// per GPU. Its dispatch crosses the 50 GB/s InfiniBand once per node, to at most 4
/// nodes, and is forwarded over NVLink (section 3.2.2); DualPipe overlaps it with
/// computation. The published rate lies between ridgeline's two bounds, the all-to-all
/// exposed and hidden behind the adjacent micro-batch's computation, and the exposed
/// bound is within 25% of it.
#[test]
fn deepseek_v3_pretraining_throughput_per_gpu() {
    let m = model("deepseek-v3");
    let hw = gpu("h800-sxm");
    let ratio = |overlap_ep| {
        let cfg = TrainConfig {
            gpus: 2048,
            pp: 16,
            ep: 64,
            zero: 1,
            seq: 4096,
            global_batch: Some(15_360),
            precision: TrainPrecision::Fp8,
            recompute: Recompute::Selective,
            stack: TrainStack::Megatron,
            overlap_ep,
            ..TrainConfig::default()
        };
        let r = Trainer::new(&m, &hw, &cfg).unwrap().report();
        r.step.tokens_per_s_per_gpu / (1e12 / (180e3 * 3600.0))
    };
    let (exposed, hidden) = (ratio(false), ratio(true));
    assert!(exposed < 1.0 && 1.0 < hidden, "{exposed} {hidden}");
    assert!(exposed > 0.75, "{exposed}");
}

/// Training's expert all-to-all between nodes (DeepSeek-V3, `--ep 64` over 8 H800
/// nodes): a token's copies for another node cross the network once per node, and its
/// top-8 experts lie in 4 of the 8 nodes (`topk_group` of `n_group`), so per link byte
/// the network carries q = (4 (1 - 0.75^8) · 7/8) / (64 (1 - (63/64)^8) · 63/64) =
/// 0.42234 bytes. At 50 GB/s the all-to-all runs at 1 / max(1 / 200e9, q / 50e9) =
/// 118.4 GB/s; at 400 GB/s at the NVLink's 200 GB/s: the time falls by 4q = 1.689 (a
/// ring model: not at all). Inside one node (`--ep 8`) the network does not matter.
#[test]
fn training_all_to_all_between_nodes_runs_at_the_network() {
    let m = model("deepseek-v3");
    let hw = gpu("h800-sxm");
    let ep_time = |ep, net| {
        let cfg = TrainConfig {
            gpus: 64,
            ep,
            seq: 4096,
            precision: TrainPrecision::Fp8,
            stack: TrainStack::Megatron,
            inter_node_bytes_per_s: net,
            ..TrainConfig::default()
        };
        Trainer::new(&m, &hw, &cfg)
            .unwrap()
            .report()
            .step
            .ep_comm_time_s
    };
    let q = (4.0 * (1.0 - 0.75f64.powi(8)) * 7.0 / 8.0)
        / (64.0 * (1.0 - (63.0f64 / 64.0).powi(8)) * 63.0 / 64.0);
    let fall = ep_time(64, 50e9) / ep_time(64, 400e9);
    assert!((fall - 4.0 * q).abs() < 1e-9, "{fall} against {}", 4.0 * q);
    assert!((ep_time(8, 50e9) / ep_time(8, 400e9) - 1.0).abs() < 1e-12);
    // `--overlap-ep` hides it behind the micro-batches' computation (the Megatron stack
    // overlaps no other collective, and one stage has no bubble): the exposed
    // communication falls by min(all-to-all, compute + memory-bound ops)
    let train = |extra: &[&str]| {
        let base = [
            "train",
            "--model",
            "deepseek-v3",
            "--gpu",
            "h800-sxm",
            "--gpus",
            "64",
            "--seq",
            "4096",
            "--precision",
            "fp8",
            "--stack",
            "megatron",
            "--json",
        ];
        json(&[&base[..], extra].concat())
    };
    let (off, on) = (
        train(&["--ep", "64"]),
        train(&["--ep", "64", "--overlap-ep"]),
    );
    let f = |v: &serde_json::Value, k: &str| v["step"][k].as_f64().unwrap();
    let ops = f(&off, "compute_time_s") + f(&off, "memory_time_s") - f(&off, "optimizer_time_s");
    let hidden = f(&off, "ep_comm_time_s").min(ops);
    let fell = f(&off, "exposed_comm_time_s") - f(&on, "exposed_comm_time_s");
    assert!((fell / hidden - 1.0).abs() < 1e-9, "{fell} vs {hidden}");
    assert!(f(&on, "time_s") < f(&off, "time_s"));
    // without expert parallelism there is nothing to hide: exit 2 naming the flag
    let out = train_deepseek_on_h100(&["--overlap-ep"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--overlap-ep"));
}

/// DeepSeek-V3's multi-token-prediction module in training (`--mtp 1`): one more layer
/// of the last kind (latent attention and MoE), a `2·7168 → 7168` projection and the
/// shared lm_head run again. On 8 H100s, tensor parallel, 4K sequences: the model FLOPs
/// grow by tokens · (6 · (the layer's active parameters + 2 · 7168² + 129,280 · 7168) +
/// 6 · q · 4096), with latent attention's q = 128 heads · (192 + 128) / 2 = 20,480; the
/// weights by the layer's parameters and the projection over tp 8 and its norms, in bf16.
#[test]
fn deepseek_v3_trains_its_mtp_module_when_asked() {
    let m = model("deepseek-v3");
    let hw = gpu("h100");
    let cfg = |mtp| TrainConfig {
        gpus: 8,
        tp: 8,
        seq: 4096,
        mtp,
        ..TrainConfig::default()
    };
    let r0 = Trainer::new(&m, &hw, &cfg(None)).unwrap().report();
    let r1 = Trainer::new(&m, &hw, &cfg(Some(1))).unwrap().report();
    let kind = m.kinds[*m.layer_kinds.last().unwrap() as usize];
    let mixer = m.try_mixer_params(kind.mixer).unwrap() as f64;
    let (ffn_all, ffn_active) = m.try_ffn_params(kind.ffn).unwrap();
    let (h, v) = (7168.0, 129_280.0);
    let tokens = r0.step.tokens;
    let flops = tokens
        * (6.0 * (mixer + ffn_active as f64 + 2.0 * h * h + v * h) + 6.0 * 20_480.0 * 4096.0);
    let got = r1.step.flops - r0.step.flops;
    assert!((got / flops - 1.0).abs() < 1e-9, "{got} vs {flops}");
    // RMSNorm scales of 7168 each: the layer's own and the module's two input norms
    let norms = (m.norms_per_layer + 2) as f64 * h;
    let weights = 2.0 * ((mixer + ffn_all as f64 + 2.0 * h * h) / 8.0 + norms);
    let got = r1.memory.inner.params_bytes - r0.memory.inner.params_bytes;
    assert!((got / weights - 1.0).abs() < 1e-9, "{got} vs {weights}");
    // slower, and a step of the same tokens: the published report trains with one
    assert!(r1.step.time_s > r0.step.time_s);
    assert_eq!(r1.step.tokens, r0.step.tokens);
    // from the CLI, and a count beyond what is modelled exits 2 naming --mtp
    let v = json(&[
        "train",
        "--model",
        "deepseek-v3",
        "--gpu",
        "h100",
        "--gpus",
        "8",
        "--tp",
        "8",
        "--seq",
        "4096",
        "--mtp",
        "1",
        "--json",
    ]);
    assert_eq!(v["step"]["flops"].as_f64().unwrap(), r1.step.flops);
    for bad in [&["--mtp", "99"][..], &["--mtp", "1", "--method", "lora"]] {
        let out = train_deepseek_on_h100(bad);
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("--mtp"),
            "{bad:?}"
        );
    }
    // a training plan's full-training configurations carry it
    let plan = |mtp: &str| {
        json(&[
            "plan",
            "--train",
            "--model",
            "deepseek-v3",
            "--gpu",
            "h100",
            "--gpus",
            "64",
            "--tokens",
            "1e9",
            "--method",
            "full",
            "--mtp",
            mtp,
            "--json",
        ])
    };
    let (p0, p1) = (plan("0"), plan("1"));
    let hours = |p: &serde_json::Value| p["best"]["hours"].as_f64().unwrap();
    assert!(hours(&p1) > hours(&p0), "{} vs {}", hours(&p1), hours(&p0));
}

/// Axolotl's gpt-oss-20b LoRA example (docs.axolotl.ai/docs/models/gpt-oss.html:
/// "LoRA SFT linear layers (1x48GB @ ~44GiB)", device_mem_reserved; the config
/// examples/gpt-oss/gpt-oss-20b-sft-lora-singlegpu.yaml: MXFP4 dequantized to bf16,
/// r = 8 on the linear layers, 4096-token sequences, micro-batch 1, 8-bit AdamW,
/// gradient checkpointing). Within 15% of 44 GiB.
#[test]
fn gpt_oss_20b_lora_memory_on_one_gpu() {
    let m = model("gpt-oss-20b");
    let hw = gpu("h100");
    let cfg = TrainConfig {
        method: Method::Lora,
        lora_rank: Some(8),
        seq: 4096,
        optimizer: Optimizer::Adamw8bit,
        recompute: Recompute::Full,
        ..TrainConfig::default()
    };
    let r = Trainer::new(&m, &hw, &cfg).unwrap().report();
    let gib = r.memory.inner.total_bytes / GIB;
    assert!((gib / 44.0 - 1.0).abs() < 0.15, "{gib} GiB");
}

/// `plan --train` searches expert-parallel layouts for MoE models: powers of two that
/// divide dp and the experts. On 8 H100s (tp in 1, 2, 4, 8 within the node; pp the
/// divisors of 8 / tp), each layout is searched with 3 methods x 2 recomputations x
/// (ZeRO 2 and 3 when dp > 1, else 0) x (CPU offload or not for full training): 16
/// options when dp > 1, 8 when dp = 1. Dense Llama-3-8B: dp 8 (1 layout), dp 4 (2),
/// dp 2 (3), dp 1 (4): 6 x 16 + 4 x 8 = 128. Qwen3-30B-A3B (128 experts) adds ep 2, 4, 8
/// at dp 8, ep 2, 4 at dp 4 and ep 2 at dp 2: 4 x 16 + 6 x 16 + 6 x 16 + 4 x 8 = 288.
#[test]
fn train_plan_searches_expert_parallel_layouts() {
    let plan = |m: &str| {
        json(&[
            "plan", "--train", "--model", m, "--gpu", "h100", "--gpus", "8", "--tokens", "1e9",
            "--json",
        ])
    };
    let (moe, dense) = (plan("qwen3-30b-a3b"), plan("llama-3-8b"));
    assert_eq!(moe["evaluated"], 288);
    assert_eq!(dense["evaluated"], 128);
    for e in dense["pareto"].as_array().unwrap() {
        assert_eq!(e["ep"], 1);
    }
}
