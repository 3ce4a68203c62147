//! `ridgeline plan --train`: QLoRA of a 7B model fits one 24 GB card, a full fine-tune of
//! a 70B model is never offered on fewer devices than its model states need, every entry
//! is what `train` predicts for the same options (library and CLI), hours and cost follow
//! their formulas, targets nothing meets give `best: null` with the binding limit, and
//! bad input exits 2 naming the flag.

use ridgeline::hardware::HardwareDb;
use ridgeline::instances::InstanceDb;
use ridgeline::model::ModelDb;
use ridgeline::plan::train::{
    Pool, TrainEntry, TrainPlan, TrainPlanRequest, TrainTargets, plan_training,
};
use ridgeline::train::{Method, Offload, TrainConfig, train};
use serde_json::Value;
use std::process::{Command, Output};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ridgeline"))
        .args(args)
        .output()
        .expect("binary runs")
}

fn json(args: &[&str]) -> Value {
    let out = run(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("one JSON document")
}

fn request(model: &str, gpus: &[&str], counts: &[u64], tokens: u64) -> TrainPlanRequest {
    let db = HardwareDb::builtin().unwrap();
    let pools = gpus
        .iter()
        .map(|g| Pool::device(db.get(g).unwrap()))
        .collect();
    let mut req = TrainPlanRequest::new(
        ModelDb::builtin().unwrap().resolve(model).unwrap(),
        pools,
        tokens,
    );
    req.gpu_counts = counts.to_vec();
    req
}

/// Every entry a plan offers: best, fastest, the fronts, the options and their next
/// cheaper configurations.
fn offered(p: &TrainPlan) -> Vec<&TrainEntry> {
    let mut out: Vec<&TrainEntry> = p.best.iter().chain(&p.fastest).chain(&p.pareto).collect();
    for f in &p.pareto_by_method {
        out.extend(&f.entries);
    }
    for o in &p.options {
        out.push(&o.entry);
        out.extend(o.next_cheaper.as_ref().map(|n| &n.entry));
    }
    out
}

#[test]
fn qlora_of_a_7b_model_fits_one_24gb_card() {
    // Llama-2-7B, 6,738,415,616 parameters. QLoRA keeps the projections in NF4 (4.127
    // bits = 0.516 bytes each, 6.48e9 of them: 3.34 GB) and the 32000 x 4096 embedding
    // and lm_head at 16 bits (2 x 131,072,000 x 2 bytes = 0.52 GB): 3.87 GB; rank-8
    // adapters on every linear layer, 32 x 8 x (4 x 8192 + 3 x (4096 + 11008)) =
    // 19,988,480 parameters at 16 bytes (bf16 weight 2 + gradient 2 + AdamW 12) =
    // 0.32 GB: about 4.19 GB of model states, far under the 24 GiB = 25.77 GB of an
    // RTX 4090 or A10G.
    for gpu in ["rtx-4090", "a10g"] {
        let mut req = request("llama-2-7b", &[gpu], &[1], 200_000_000);
        req.methods = vec![Method::Qlora];
        let p = plan_training(&req).unwrap();
        let best = p.best.as_ref().expect("QLoRA of 7B fits one 24 GB card");
        assert_eq!((best.gpus, best.method), (1, Method::Qlora), "{gpu}");
        assert!(best.fits && best.memory_per_device_bytes <= best.capacity_bytes);
        let o = &p.options[0];
        assert!(
            (o.model_states_bytes / 1e9 - 4.19).abs() < 0.02,
            "{}",
            o.model_states_bytes
        );
    }
}

#[test]
fn a_full_70b_fine_tune_is_never_offered_on_fewer_devices_than_its_states_need() {
    // Llama-2-70B, 68,976,648,192 parameters x 16 bytes (bf16 weights 2 + gradients 2 +
    // fp32 master, m, v 12) = 1,103.6 GB of model states. An A100 80GB holds 80 GiB =
    // 85.90 GB: 1103.6 / 85.90 = 12.8, so at least 13 devices keep them on the GPUs;
    // with the optimizer states offloaded to the CPU 4 bytes per parameter stay (275.9
    // GB / 85.90 = 3.2): at least 4 devices.
    let params = 68_976_648_192f64;
    let cap = 80.0 * 1024f64.powi(3);
    assert!((params * 16.0 / cap).ceil() == 13.0 && (params * 4.0 / cap).ceil() == 4.0);
    let mut req = request("llama-2-70b", &["a100-80gb-sxm"], &[1, 2, 3], 1_000_000_000);
    req.methods = vec![Method::Full];
    let none = plan_training(&req).unwrap();
    assert!(none.best.is_none() && none.feasible == 0);
    assert_eq!(none.binding[0].target.name(), "memory");

    req.gpu_counts = (1..=16).collect();
    let p = plan_training(&req).unwrap();
    let best = p.best.as_ref().expect("16 A100 80GB train 70B fully");
    assert!(best.gpus >= 4);
    for e in offered(&p).into_iter().filter(|e| e.fits) {
        let per_param = if e.offload == Offload::Cpu { 4.0 } else { 16.0 };
        assert!(
            e.gpus as f64 * cap >= params * per_param,
            "{} devices offered for {per_param} bytes per parameter",
            e.gpus
        );
    }
}

/// The pool's device as the entry's configuration sees it.
fn device(e: &TrainEntry) -> ridgeline::hardware::Hardware {
    let db = HardwareDb::builtin().unwrap();
    match &e.instance {
        Some(name) => InstanceDb::builtin()
            .unwrap()
            .get(name)
            .unwrap()
            .hardware(db)
            .unwrap(),
        None => db.get(&e.gpu).unwrap().clone(),
    }
}

#[test]
fn every_entry_is_what_train_predicts_and_follows_the_formulas() {
    let mut req = request(
        "llama-2-7b",
        &["rtx-4090", "a100-80gb-sxm", "h100-sxm"],
        &[1, 2, 3, 4, 8, 16],
        200_000_000,
    );
    req.targets = TrainTargets {
        max_hours: Some(20.0),
        budget_usd: None,
    };
    let mut inst = req.clone();
    // two instances each: the network between them matters
    inst.gpu_counts = vec![16];
    let db = HardwareDb::builtin().unwrap();
    inst.pools = ["p4de.24xlarge", "g5.48xlarge", "gpu_8x_h100_sxm5"]
        .iter()
        .map(|n| Pool::instance(InstanceDb::builtin().unwrap().get(n).unwrap(), db).unwrap())
        .collect();
    let model = req.model.clone();
    let (mut checked, mut multi_instance) = (0, 0);
    for r in [&req, &inst] {
        let p = plan_training(r).unwrap();
        assert!(!p.pareto.is_empty());
        for e in offered(&p) {
            let hw = device(e);
            let cfg: TrainConfig = e.train_config(&r.base);
            let t = train(&model, &hw, &cfg).unwrap();
            // the same numbers to the bit: memory, capacity and tokens/s
            assert_eq!(
                t.memory.inner.total_bytes, e.memory_per_device_bytes,
                "{e:?}"
            );
            assert_eq!(t.memory.inner.capacity_bytes, e.capacity_bytes);
            assert_eq!(
                t.memory.detail.host_optimizer_bytes,
                e.host_bytes_per_device
            );
            assert_eq!(t.step.tokens_per_s, e.tokens_per_s);
            assert_eq!(t.layout.global_batch, e.global_batch);
            // hours = tokens / (tokens/s x 3600); usd = hours x price x devices
            assert_eq!(e.hours, 200e6 / (e.tokens_per_s * 3600.0));
            let price = hw.price.as_ref().unwrap().usd_per_hour;
            assert_eq!(e.usd, Some(e.hours * price * e.gpus as f64));
            assert_eq!(e.usd_per_hour, Some(price * e.gpus as f64));
            checked += 1;
            multi_instance += usize::from(e.instances.is_some_and(|k| k > 1));
        }
    }
    assert!(
        checked > 20 && multi_instance > 0,
        "{checked} {multi_instance}"
    );
}

/// `train` flags that reproduce an entry of `plan --train --json`.
fn train_args(e: &Value, model: &str) -> Vec<String> {
    let mut a: Vec<String> = ["train", "--json", "--model", model]
        .iter()
        .map(|s| s.to_string())
        .collect();
    match e["instance"].as_str() {
        Some(i) => a.extend(["--instance".into(), i.into()]),
        None => a.extend(["--gpu".into(), e["gpu"].as_str().unwrap().into()]),
    }
    for (flag, key) in [
        ("--gpus", "gpus"),
        ("--tp", "tp"),
        ("--pp", "pp"),
        ("--cp", "cp"),
        ("--zero", "zero"),
        ("--micro-batch", "micro_batch"),
        ("--global-batch", "global_batch"),
    ] {
        a.extend([flag.into(), e[key].to_string()]);
    }
    for (flag, key) in [
        ("--method", "method"),
        ("--recompute", "recompute"),
        ("--offload", "offload"),
    ] {
        a.extend([flag.into(), e[key].as_str().unwrap().into()]);
    }
    a
}

#[test]
fn the_cli_entries_reproduce_the_train_command() {
    for extra in [
        &["--gpu", "a100,rtx-4090"][..],
        &["--instances", "--gpu", "h100"],
    ] {
        let mut args = vec![
            "plan",
            "--train",
            "--json",
            "--model",
            "llama-2-7b",
            "--tokens",
            "5e8",
            "--gpus",
            "1..8",
        ];
        args.extend_from_slice(extra);
        let p = json(&args);
        assert_eq!(p["tokens"], 500_000_000);
        let mut entries: Vec<&Value> = p["pareto"].as_array().unwrap().iter().collect();
        entries.extend([&p["best"], &p["fastest"]]);
        for e in entries {
            let args = train_args(e, "llama-2-7b");
            let t = json(&args.iter().map(String::as_str).collect::<Vec<_>>());
            assert_eq!(
                t["memory"]["total_bytes"], e["memory_per_device_bytes"],
                "{args:?}"
            );
            assert_eq!(t["step"]["tokens_per_s"], e["tokens_per_s"], "{args:?}");
            assert_eq!(t["memory"]["capacity_bytes"], e["capacity_bytes"]);
        }
    }
}

#[test]
fn context_parallel_degrees_are_searched_when_asked() {
    // Llama 3.1 8B on 128k-token sequences over 8 or 16 H100s, Megatron stack: without
    // context parallelism no full fine-tune fits (the best is LoRA); with --cp 1,2,4,8 the
    // best is a full fine-tune whose sequence is split, and every offered entry is what
    // `train` predicts with its flags
    let base = [
        "plan",
        "--train",
        "--json",
        "--model",
        "llama-3.1-8b",
        "--gpu",
        "h100",
        "--gpus",
        "8,16",
        "--seq",
        "131072",
        "--tokens",
        "1e9",
        "--global-batch",
        "16",
        "--stack",
        "megatron",
    ];
    let plain = json(&base);
    assert_eq!(plain["best"]["cp"], 1);
    assert_eq!(plain["best"]["method"], "lora");
    let mut args = base.to_vec();
    args.extend(["--cp", "1,2,4,8"]);
    let p = json(&args);
    let best = &p["best"];
    assert!(best["cp"].as_u64().unwrap() > 1, "{best}");
    assert_eq!(best["method"], "full");
    // gpus = tp x cp x pp x dp
    let n = |k: &str| best[k].as_u64().unwrap();
    assert_eq!(n("gpus"), n("tp") * n("cp") * n("pp") * n("dp"));
    assert!(p["evaluated"].as_u64() > plain["evaluated"].as_u64());
    let mut entries: Vec<&Value> = p["pareto"].as_array().unwrap().iter().collect();
    entries.extend([&p["best"], &p["fastest"]]);
    for e in entries {
        let args = train_args(e, "llama-3.1-8b");
        let mut args: Vec<&str> = args.iter().map(String::as_str).collect();
        args.extend(["--seq", "131072", "--stack", "megatron"]);
        let t = json(&args);
        assert_eq!(t["step"]["tokens_per_s"], e["tokens_per_s"], "{args:?}");
        assert_eq!(t["layout"]["cp"], e["cp"]);
    }
    // a degree the sequence does not split is counted, not planned
    let out = run(&[
        "plan",
        "--train",
        "--model",
        "llama-3.1-8b",
        "--gpu",
        "h100",
        "--gpus",
        "8",
        "--seq",
        "4098",
        "--tokens",
        "1e9",
        "--cp",
        "0",
    ]);
    crate::support::cli::one_line_error(&out, &["--cp"]);
}

#[test]
fn targets_nothing_meets_give_no_best_and_name_the_limit() {
    let base = [
        "plan",
        "--train",
        "--json",
        "--model",
        "llama-2-7b",
        "--tokens",
        "200M",
        "--gpu",
        "a100,rtx-4090",
        "--gpus",
        "1,2,4",
    ];
    // a deadline of 36 seconds
    let p = json(&[&base[..], &["--max-hours", "0.01"]].concat());
    assert!(p["best"].is_null() && p["fastest"].is_null());
    assert_eq!(p["feasible"], 0);
    let b = &p["binding"].as_array().unwrap()[0];
    assert_eq!(
        (b["answer"].as_str(), b["target"].as_str()),
        (Some("none"), Some("max_hours"))
    );
    assert_eq!(b["limit"], 0.01);
    let reached = b["best_reachable"].as_f64().unwrap();
    assert!(reached > 0.01, "{reached}");
    // the best reachable is the fastest configuration that fits
    let open = json(&base);
    assert_eq!(reached, open["fastest"]["hours"].as_f64().unwrap());
    assert!(
        b["message"]
            .as_str()
            .unwrap()
            .contains("shortest reachable")
    );

    // a budget of one cent
    let p = json(&[&base[..], &["--budget-usd", "0.01"]].concat());
    let b = &p["binding"].as_array().unwrap()[0];
    assert_eq!(b["target"], "budget_usd");
    assert_eq!(b["best_reachable"], open["best"]["usd"]);

    // text says so too
    let out = run(&[&base[..2], &base[3..], &["--max-hours", "0.01"]].concat());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("No configuration meets the targets"),
        "{text}"
    );
    assert!(text.contains("--max-hours binds"), "{text}");
}

#[test]
fn bad_input_exits_2_naming_the_flag() {
    let dir = std::env::temp_dir().join(format!("ridgeline-train-plan-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.toml");
    std::fs::write(
        &bad,
        "[[instance]]\nprovider = \"x\"\nname = \"x-1\"\ngpu = \"a100\"\ncount = 0\nhost_memory_bytes = 1e11\nprice = { usd_per_hour = 1.0, date = \"2026-01-01\", source = \"https://x\" }\nsources = [\"https://x\"]\n",
    )
    .unwrap();
    let bad = bad.to_str().unwrap();
    let base = ["plan", "--train", "--model", "llama-2-7b"];
    for (extra, needle) in [
        (&["--tokens", "1B", "--method", "fulll"][..], "--method"),
        (&["--tokens", "0"], "--tokens"),
        (&["--tokens", "1.5"], "--tokens"),
        (&["--tokens", "5X"], "--tokens"),
        (&[], "--tokens"),
        (&["--tokens", "1B", "--budget-usd", "-5"], "--budget-usd"),
        (&["--tokens", "1B", "--max-hours", "0"], "--max-hours"),
        (&["--tokens", "1B", "--max-tpot-ms", "5"], "--max-tpot-ms"),
        (&["--tokens", "1B", "--gpus", "0"], "--gpus"),
        (&["--tokens", "1B", "--gpus", "1..1000000"], "--gpus"),
        (&["--tokens", "1B", "--svg", "chart.png"], "--svg"),
        (&["--tokens", "1B", "--gpu", "h1000"], "h100"),
        (&["--tokens", "1B", "--instances-file", bad], "count"),
    ] {
        let out = run(&[&base[..], extra].concat());
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {err}");
        assert!(err.contains(needle), "{extra:?}: {err} lacks {needle}");
        assert_eq!(err.trim().lines().count(), 1, "{extra:?}: {err}");
        assert!(out.stdout.is_empty());
    }
    let out = run(&["plan", "--tokens", "1B", "--model", "llama-2-7b"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--train"));
    // with --prompt and --gen (a serving plan), a training option is refused too, not
    // ignored
    let serving = [
        "plan",
        "--model",
        "llama-2-7b",
        "--gpu",
        "h100",
        "--prompt",
        "8",
    ];
    for extra in [
        &["--gen", "8", "--tokens", "5"][..],
        &["--gen", "8", "--max-hours", "2"],
        &["--gen", "8", "--budget-usd", "9"],
        &["--gen", "8", "--instances"],
    ] {
        let out = run(&[&serving[..], extra].concat());
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {err}");
        assert!(err.contains(extra[2]) && err.contains("--train"), "{err}");
        assert!(out.stdout.is_empty());
    }
    for (args, needle) in [
        (
            &[
                "train",
                "--model",
                "llama-2-7b",
                "--instance",
                "p4d.24xlarg",
            ][..],
            "did you mean p4d.24xlarge",
        ),
        (
            &[
                "train",
                "--model",
                "llama-2-7b",
                "--instance",
                "p4d.24xlarge",
                "--gpus",
                "12",
            ],
            "--gpus",
        ),
        (
            &[
                "train",
                "--model",
                "llama-2-7b",
                "--instance",
                "gpu_8x_h100_sxm5",
                "--gpus",
                "16",
            ],
            "no cluster network",
        ),
        (&["train", "--model", "llama-2-7b"], "--gpu"),
    ] {
        let out = run(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err} lacks {needle}");
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn tokens_take_suffixes_on_the_command_line() {
    for (text, n) in [
        ("5e8", 500_000_000u64),
        ("500M", 500_000_000),
        ("1.5B", 1_500_000_000),
        ("2T", 2_000_000_000_000),
    ] {
        let p = json(&[
            "plan",
            "--train",
            "--json",
            "--model",
            "llama-2-7b",
            "--tokens",
            text,
            "--gpu",
            "h100",
            "--gpus",
            "8",
            "--method",
            "qlora",
        ]);
        assert_eq!(p["tokens"], n, "{text}");
        let best = &p["best"];
        let hours = n as f64 / (best["tokens_per_s"].as_f64().unwrap() * 3600.0);
        let printed = best["hours"].as_f64().unwrap();
        assert!(
            (printed / hours - 1.0).abs() < 1e-12,
            "{text}: {printed} vs {hours}"
        );
    }
}

#[test]
fn instances_are_listed_with_prices_and_planned_in_whole_instances() {
    let list = json(&["instances", "--json"]);
    let p4d = list
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["name"] == "p4d.24xlarge")
        .expect("p4d.24xlarge");
    assert_eq!(p4d["hardware_id"], "a100-40gb-sxm");
    assert_eq!(p4d["count"], 8);
    // $21.957642 per hour (after AWS's June 2025 cut) / 8 devices = $2.74470525 per
    // device-hour
    assert_eq!(p4d["usd_per_gpu_hour"], 21.957642 / 8.0);
    assert!(
        p4d["price"]["source"]
            .as_str()
            .unwrap()
            .starts_with("https://")
    );

    let p = json(&[
        "plan",
        "--train",
        "--json",
        "--instances",
        "--model",
        "llama-2-7b",
        "--tokens",
        "1B",
        "--gpu",
        "a100-40gb-sxm",
        "--gpus",
        "1..24",
    ]);
    let entries: Vec<&Value> = p["pareto"].as_array().unwrap().iter().collect();
    assert!(!entries.is_empty());
    for e in entries {
        let gpus = e["gpus"].as_u64().unwrap();
        assert_eq!(gpus % 8, 0, "{e}");
        assert_eq!(e["instances"].as_u64().unwrap() * 8, gpus);
        assert!(e["instance"].is_string());
        // host memory bounds offload: 1152 GiB / 8 devices
        let host = e["host_bytes_per_device"].as_f64().unwrap();
        assert!(host <= 1152.0 * 1024f64.powi(3) / 8.0);
    }
    let text = String::from_utf8_lossy(&run(&["instances"]).stdout).to_string();
    assert!(
        text.contains("p5.48xlarge") && text.contains("$/device-hour"),
        "{text}"
    );
}
