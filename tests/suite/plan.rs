//! `ridgeline plan`: a plan checkable by hand (Llama-2-70B in fp16 does not fit one 80 GB
//! device), impossible targets, the cheapest and the Pareto front, budgets, and the JSON
//! shape from CONTRACT.md.

use ridgeline::memory::model_weight_bytes;
use ridgeline::plan::{PlanRequest, Targets, plan};
use ridgeline::prelude::*;
use serde_json::Value;
use std::process::{Command, Output};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ridgeline"))
        .args(args)
        .output()
        .expect("binary runs")
}

fn plan_json(args: &[&str]) -> Value {
    let mut all = vec!["plan", "--json"];
    all.extend_from_slice(args);
    let out = run(&all);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("one JSON document")
}

fn entries(v: &Value) -> Vec<&Value> {
    let mut e: Vec<&Value> = v["pareto"].as_array().unwrap().iter().collect();
    if !v["best"].is_null() {
        e.push(&v["best"]);
    }
    e
}

#[test]
fn llama2_70b_fp16_needs_two_80gb_devices() {
    // 68,976,648,192 parameters x 2 bytes = 137.95 GB of weights > 80 GB
    let m = ModelDb::builtin().unwrap().resolve("llama-2-70b").unwrap();
    let w = model_weight_bytes(&m, Format::Fp16);
    assert!((w / 1e9 - 137.95).abs() < 0.01, "{w}");

    // fp16 only: every feasible configuration on h100-sxm uses >= 2 devices
    let v = plan_json(&[
        "--model",
        "llama-2-70b",
        "--gpu",
        "h100-sxm",
        "--weights",
        "fp16",
        "--kv",
        "native",
    ]);
    assert!(v["feasible"].as_u64().unwrap() > 0);
    let all = entries(&v);
    assert!(!all.is_empty());
    for e in &all {
        assert!(e["gpus"].as_u64().unwrap() >= 2, "{e}");
        assert_eq!(e["fits"], true);
        // an "80GB" H100 holds 80 GiB
        assert_eq!(e["capacity_bytes"].as_f64().unwrap(), 85_899_345_920.0);
        assert!(e["total_bytes"].as_f64().unwrap() <= 85_899_345_920.0);
    }

    // every format: one device only with a format smaller than fp16
    let v = plan_json(&["--model", "llama-2-70b", "--gpu", "h100-sxm"]);
    for e in entries(&v) {
        assert!(
            e["gpus"].as_u64().unwrap() >= 2 || e["weights"] != "fp16",
            "{e}"
        );
    }
    // and one device does work with a quantized format
    let v = plan_json(&["--model", "llama-2-70b", "--gpu", "h100-sxm", "--gpus", "1"]);
    let best = &v["best"];
    assert_eq!(best["gpus"], 1);
    assert_ne!(best["weights"], "fp16");
    assert!(best["total_bytes"].as_f64().unwrap() <= 85_899_345_920.0);
}

#[test]
fn json_has_the_contract_keys_and_costs() {
    let v = plan_json(&[
        "--model",
        "llama-3-8b",
        "--gpu",
        "h100,l4",
        "--prompt",
        "1024",
        "--gen",
        "256",
        "--max-tpot-ms",
        "40",
    ]);
    for k in ["evaluated", "feasible", "best", "pareto"] {
        assert!(v.get(k).is_some(), "no {k}");
    }
    let (evaluated, feasible) = (
        v["evaluated"].as_u64().unwrap(),
        v["feasible"].as_u64().unwrap(),
    );
    assert!(feasible > 0 && feasible <= evaluated);
    let best = &v["best"];
    for k in [
        "gpu",
        "gpus",
        "parallel",
        "weights",
        "kv",
        "engine",
        "batch",
        "prompt",
        "gen",
        "ttft_s",
        "tpot_s",
        "output_tokens_per_s",
        "usd_per_million_tokens",
    ] {
        assert!(best.get(k).is_some(), "best lacks {k}");
    }
    // USD per million output tokens = price x gpus / tokens per hour x 1e6
    let tokens_per_hour = best["output_tokens_per_s"].as_f64().unwrap() * 3600.0;
    let cost = best["usd_per_hour"].as_f64().unwrap() / tokens_per_hour * 1e6;
    assert!((cost / best["usd_per_million_tokens"].as_f64().unwrap() - 1.0).abs() < 1e-12);
    // the best is the cheapest feasible and sits on the Pareto front
    let pareto = v["pareto"].as_array().unwrap();
    let c = |e: &Value| e["usd_per_million_tokens"].as_f64().unwrap();
    assert!(pareto.iter().all(|e| c(e) >= c(best)));
    assert_eq!(&pareto[0], best);
    // targets are met; no front entry dominates another
    for e in pareto {
        assert!(e["tpot_s"].as_f64().unwrap() <= 0.040);
        for o in pareto {
            let dominates = c(o) <= c(e)
                && o["tpot_s"].as_f64() <= e["tpot_s"].as_f64()
                && o["output_tokens_per_s"].as_f64().unwrap()
                    >= e["output_tokens_per_s"].as_f64().unwrap()
                && o != e;
            assert!(!dominates, "{o} dominates {e}");
        }
    }
}

#[test]
fn the_best_is_what_predict_says_of_it() {
    let v = plan_json(&[
        "--model",
        "mistral-7b",
        "--gpu",
        "rtx-4090",
        "--prompt",
        "256",
        "--gen",
        "64",
        "--max-ttft-ms",
        "400",
    ]);
    let b = &v["best"];
    let batch = b["batch"].to_string();
    let gpus = b["gpus"].to_string();
    let weights = b["weights"].as_str().unwrap();
    let kv = b["kv"].as_str().unwrap();
    let out = run(&[
        "predict",
        "--model",
        "mistral-7b",
        "--gpu",
        "rtx-4090",
        "--gpus",
        &gpus,
        "--parallel",
        b["parallel"].as_str().unwrap(),
        "--batch",
        &batch,
        "--prompt",
        "256",
        "--gen",
        "64",
        "--weights",
        weights,
        "--kv",
        kv,
        "--json",
    ]);
    let p: Value = serde_json::from_slice(&out.stdout).unwrap();
    let g = &p["generation"];
    for (a, k) in [("ttft_s", "ttft_s"), ("tpot_s", "tpot_s")] {
        let (x, y) = (b[a].as_f64().unwrap(), g[k].as_f64().unwrap());
        assert!((x - y).abs() <= 1e-12 * y, "{a}: {x} vs {y}");
    }
    assert!(b["ttft_s"].as_f64().unwrap() <= 0.4);
    assert_eq!(p["memory"]["fits"], true);
    // the batch is the largest that fits or a power of two below it
    let n = b["batch"].as_u64().unwrap();
    assert!(n.is_power_of_two() || n == b["max_batch"].as_u64().unwrap());
}

#[test]
fn a_speculating_plan_is_what_predict_says_of_its_best() {
    // Llama 3.1 70B on 4 H100, Llama 3.2 1B drafting 4 tokens a pass at acceptance 0.7
    let spec = [
        "--spec-k",
        "4",
        "--spec-accept",
        "0.7",
        "--draft",
        "llama-3.2-1b",
    ];
    let args = [
        "--model",
        "llama-3.1-70b",
        "--gpu",
        "h100",
        "--gpus",
        "4",
        "--weights",
        "fp8",
        "--kv",
        "fp8",
        "--gen",
        "256",
        "--max-tpot-ms",
        "30",
    ];
    let v = plan_json(&[&args[..], &spec[..]].concat());
    assert_eq!(v["speculative"]["k"], 4);
    assert_eq!(v["speculative"]["accept"], 0.7);
    assert_eq!(v["speculative"]["draft"], "llama-3.2-1b");
    let b = &v["best"];
    let batch = b["batch"].to_string();
    let out = run(&[
        &[
            "predict",
            "--model",
            "llama-3.1-70b",
            "--gpu",
            "h100",
            "--gpus",
            "4",
            "--parallel",
            b["parallel"].as_str().unwrap(),
            "--weights",
            "fp8",
            "--kv",
            "fp8",
            "--batch",
            &batch,
            "--gen",
            "256",
            "--json",
        ][..],
        &spec[..],
    ]
    .concat());
    let p: Value = serde_json::from_slice(&out.stdout).unwrap();
    for k in ["ttft_s", "tpot_s"] {
        let (x, y) = (b[k].as_f64().unwrap(), p["generation"][k].as_f64().unwrap());
        assert!((x - y).abs() <= 1e-12 * y, "{k}: {x} vs {y}");
    }
    // the draft's weights and cache are in the plan's bytes per device, as in predict's
    let total = p["memory"]["total_bytes"].as_f64().unwrap();
    assert!((b["total_bytes"].as_f64().unwrap() - total).abs() <= 1e-9 * total);
    let plain = plan_json(&args);
    assert!(plain.get("speculative").is_none());
    assert!(plain["best"]["tpot_s"].as_f64().unwrap() <= 0.030);

    // a rate plan simulates the same speculation: one replica serving 2 req/s at p99
    // TPOT 40 ms runs below predict's batch-1 time per token with the draft (a vanishing
    // rate is batch 1), and says it speculates
    let rate = [
        "--rate",
        "2",
        "--p99-tpot-ms",
        "40",
        "--requests",
        "100",
        "--gen",
        "256",
    ];
    let v = plan_json(&[&args[..10], &rate[..], &spec[..]].concat());
    assert_eq!(v["speculative"]["draft"], "llama-3.2-1b");
    let one = run(&[
        &[
            "predict",
            "--model",
            "llama-3.1-70b",
            "--gpu",
            "h100",
            "--gpus",
            "4",
            "--weights",
            "fp8",
            "--kv",
            "fp8",
            "--gen",
            "256",
            "--json",
        ][..],
        &spec[..],
    ]
    .concat());
    let one: Value = serde_json::from_slice(&one.stdout).unwrap();
    let p99 = v["best"]["tpot_s"].as_f64().unwrap();
    let floor = one["generation"]["tpot_s"].as_f64().unwrap();
    assert!(
        p99 <= 0.040 && p99 >= 0.999 * floor,
        "{p99} vs batch-1 {floor}"
    );

    // speculation is a serving choice: a training plan refuses it, naming the flags; a
    // draft with another vocabulary is refused once, naming --draft
    let out = run(&[
        "plan",
        "--model",
        "llama-3-8b",
        "--train",
        "--tokens",
        "1e9",
        "--spec-k",
        "2",
        "--spec-accept",
        "0.5",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--spec-k") && err.contains("--train"), "{err}");
    let out = run(&[
        "plan",
        "--model",
        "llama-3.1-70b",
        "--gpu",
        "h100",
        "--spec-k",
        "2",
        "--spec-accept",
        "0.5",
        "--draft",
        "mistral-7b",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("draft") && err.contains("vocabulary"), "{err}");
}

#[test]
fn impossible_targets_name_the_binding_one() {
    let v = plan_json(&[
        "--model",
        "llama-2-70b",
        "--gpu",
        "h100",
        "--max-tpot-ms",
        "0.5",
    ]);
    assert!(v["best"].is_null());
    assert_eq!(v["feasible"], 0);
    assert!(v["evaluated"].as_u64().unwrap() > 0);
    assert!(v["pareto"].as_array().unwrap().is_empty());
    let b = &v["binding"][0];
    assert_eq!(b["target"], "max_tpot_s");
    assert_eq!(b["limit"].as_f64().unwrap(), 0.0005);
    assert!(b["best_reachable"].as_f64().unwrap() > 0.0005);

    // the text says which target and what is reachable
    let out = run(&[
        "plan",
        "--model",
        "llama-2-70b",
        "--gpu",
        "h100",
        "--max-tpot-ms",
        "0.5",
    ]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("No configuration meets the targets"),
        "{text}"
    );
    assert!(text.contains("--max-tpot-ms"), "{text}");
    assert!(text.contains("best reachable is TPOT"), "{text}");

    // nothing fits at all: memory binds
    let v = plan_json(&["--model", "llama-3.1-405b", "--gpu", "l4", "--gpus", "1"]);
    assert!(v["best"].is_null());
    assert_eq!(v["binding"][0]["target"], "memory");
}

#[test]
fn winner_text_says_why() {
    let out = run(&[
        "plan",
        "--model",
        "llama-3-8b",
        "--gpu",
        "h100",
        "--gpus",
        "1,2",
        "--max-tpot-ms",
        "15",
    ]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Best: "), "{text}");
    assert!(text.contains("per million output tokens"), "{text}");
    assert!(text.contains("Why this one: "), "{text}");
    assert!(text.contains("Pareto front"), "{text}");
}

#[test]
fn budget_and_unpriced_devices() {
    let v = plan_json(&[
        "--model",
        "llama-3-8b",
        "--gpu",
        "h100,l4",
        "--budget-usd-per-hour",
        "3",
    ]);
    for e in entries(&v) {
        assert!(e["usd_per_hour"].as_f64().unwrap() <= 3.0, "{e}");
    }
    // a device without a price: chosen by tokens/s per device, cost null
    let v = plan_json(&["--model", "llama-3-8b", "--gpu", "h800-sxm", "--gpus", "1"]);
    assert_eq!(v["best_by"], "output_tokens_per_s_per_gpu");
    assert!(v["best"]["usd_per_million_tokens"].is_null());
    // bad targets are rejected with exit 2, naming the flag
    let out = run(&["plan", "--model", "llama-3-8b", "--max-tpot-ms", "0"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--max-tpot-ms"));
    let out = run(&["plan", "--model", "llama-3-8b", "--gen", "0"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--gen"));
}

#[test]
fn library_plan_counts_and_layouts() {
    let hw = HardwareDb::builtin().unwrap();
    let req = PlanRequest {
        model: ModelDb::builtin().unwrap().resolve("llama-2-7b").unwrap(),
        devices: vec![hw.get("h100").unwrap()],
        engines: vec![EngineDb::builtin().unwrap().get("typical").unwrap()],
        prompt: 512,
        gen_tokens: 128,
        targets: Targets::default(),
        gpu_counts: vec![1, 3, 16],
        weights: Some(vec![None]),
        kv: Some(vec![None]),
        flash: true,
        ownership: Default::default(),
        price_basis: Default::default(),
        kernels: None,
        spec: None,
        draft: None,
        inter_node_bytes_per_s: 50e9,
        overlap_ep: false,
        expert_imbalance: 1.0,
        expert_weights: None,
    };
    let p = plan(&req).unwrap();
    // 1: tp; 3: tp (32 heads: skipped) and pp; 16: beyond a node of 8, pp only
    assert_eq!(p.skipped_layouts, 1);
    assert!(p.evaluated > 0);
    assert_eq!(
        p.evaluated, p.feasible,
        "no targets: everything evaluated fits"
    );
    assert!(
        p.pareto
            .iter()
            .all(|e| e.gpus != 16 || e.parallel == ridgeline::memory::Parallel::Pp)
    );
}

/// One H100, two and four in bf16: the layouts the expert-parallel plans below search.
const BF16_ON_1_2_4_H100: [&str; 8] = [
    "--gpu",
    "h100",
    "--gpus",
    "1,2,4",
    "--weights",
    "bf16",
    "--kv",
    "bf16",
];

#[test]
fn a_moe_plan_also_tries_expert_parallelism() {
    // on 1, 2 or 4 devices in bf16: 1 x (tp); 2 x tp, 2 x pp; 4 x tp, 4 x pp; and for a
    // mixture-of-experts model 2 x tp with its experts over both (ep 2), 4 x tp with its
    // experts over two groups of two (ep 2) or over all four (ep 4): 8 layouts, 5 for a
    // dense model
    let count = |model: &str| {
        plan_json(
            &[
                &BF16_ON_1_2_4_H100[..],
                &["--rate", "1", "--requests", "30", "--model", model],
            ]
            .concat(),
        )
    };
    let moe = count("qwen3-30b-a3b");
    assert_eq!(moe["evaluated"], 8);
    assert_eq!(count("llama-3-8b")["evaluated"], 5);
    let mut all: Vec<&serde_json::Value> = moe["pareto"].as_array().unwrap().iter().collect();
    all.extend(moe["unserved"].as_array().unwrap());
    all.push(&moe["best"]);
    assert!(
        all.iter()
            .all(|e| e["ep"] == 1 || e["ep"] == 2 || e["ep"] == 4 && e["gpus"] == 4),
        "{moe}"
    );

    // beyond a node (16 H100, nodes of 8): pp, and for the MoE model expert groups whose
    // tensor parallelism fits a node, ep 2 (tp 8), 4, 8 and 16: 5 layouts, 1 dense
    let wide = |model: &str| {
        plan_json(&[
            "--gpu",
            "h100",
            "--gpus",
            "16",
            "--weights",
            "bf16",
            "--kv",
            "bf16",
            "--rate",
            "1",
            "--requests",
            "30",
            "--model",
            model,
        ])
    };
    let moe = wide("qwen3-30b-a3b");
    assert_eq!(moe["evaluated"], 5);
    assert_eq!(wide("llama-3-70b")["evaluated"], 1);
    let mut all: Vec<&serde_json::Value> = moe["pareto"].as_array().unwrap().iter().collect();
    all.extend(moe["unserved"].as_array().unwrap());
    assert!(
        all.iter().all(|e| e["parallel"] == "pp" && e["ep"] == 1
            || e["parallel"] == "tp" && [2, 4, 8, 16].contains(&e["ep"].as_u64().unwrap())),
        "{moe}"
    );
}

/// `--expert-imbalance F` in a serving plan: each expert-parallel layout is costed as
/// `predict --ep N --expert-imbalance F` costs it, the others as before, and a layout
/// of fewer groups than F (more than every routed row on one rank) is not searched.
#[test]
fn a_stated_expert_imbalance_costs_the_expert_parallel_layouts() {
    let at = |f: &str| {
        plan_json(
            &[
                &BF16_ON_1_2_4_H100[..],
                &[
                    "--model",
                    "qwen3-30b-a3b",
                    "--max-tpot-ms",
                    "30",
                    "--expert-imbalance",
                    f,
                ],
            ]
            .concat(),
        )
    };
    let even = at("1");
    assert!(even.get("expert_imbalance").is_none(), "{even}");
    assert_eq!(even["skipped_layouts"], 0);
    let two = at("2");
    assert_eq!(two["expert_imbalance"], 2.0);
    let e = entries(&two)
        .into_iter()
        .find(|e| e["ep"] == 4)
        .expect("an expert-parallel entry");
    let batch = e["batch"].as_u64().unwrap().to_string();
    let tpot = |f: &str| {
        let out = run(&[
            "predict",
            "--json",
            "--model",
            "qwen3-30b-a3b",
            "--gpu",
            "h100",
            "--gpus",
            "4",
            "--ep",
            "4",
            "--weights",
            "bf16",
            "--kv",
            "bf16",
            "--batch",
            &batch,
            "--prompt",
            "512",
            "--gen",
            "128",
            "--expert-imbalance",
            f,
        ]);
        assert!(out.status.success());
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        v["generation"]["tpot_s"].as_f64().unwrap()
    };
    let planned = e["tpot_s"].as_f64().unwrap();
    assert!((planned / tpot("2") - 1.0).abs() < 1e-9, "{planned}");
    assert!(planned > tpot("1") * 1.01, "{planned}");
    // at 3 the two layouts of two groups (2 devices, ep 2; 4 devices, ep 2) cannot hold
    // it: not built, counted with the impossible ones
    let three = at("3");
    assert_eq!(three["skipped_layouts"], 2);
    let mut all = entries(&three);
    all.extend(three["unpriced"].as_array().into_iter().flatten());
    assert!(all.iter().all(|e| e["ep"] != 2), "{three}");
    // a dense model has no experts to imbalance, and F is at least 1: exit 2 naming it
    for (model, f) in [("llama-3-8b", "2"), ("qwen3-30b-a3b", "0.5")] {
        let out = run(&[
            "plan",
            "--model",
            model,
            "--gpu",
            "h100",
            "--expert-imbalance",
            f,
        ]);
        crate::support::cli::one_line_error(&out, &["--expert-imbalance"]);
    }
}
