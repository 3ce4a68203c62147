//! `ridgeline kernels`: the coverage of the measured kernel tables, and `--kernels DIR`.

use crate::support::cli::{json, ok, one_line_error, run};

#[test]
fn kernels_lists_every_bundled_table() {
    let v = json(&["kernels", "--json"]);
    let tables = v["tables"].as_array().unwrap();
    // 9 devices (a100-80gb-sxm, h100-sxm, h200-sxm, b200, b300, gb200, gb300, l40s,
    // rtx-pro-6000) under 3 engines (trt-llm, vllm, sglang)
    assert_eq!(tables.len(), 27);
    let h100 = tables
        .iter()
        .find(|t| t["device"] == "h100-sxm" && t["backend"] == "trt-llm")
        .unwrap();
    assert_eq!(h100["version"], "1.3.0rc20");
    assert_eq!(
        h100["op_classes"],
        serde_json::json!([
            "gemm",
            "attention_prefill",
            "attention_decode",
            "all_reduce",
            "moe",
            "mla_decode"
        ])
    );
    // Hopper has no fp4 tensor cores: its GEMMs are bf16 and fp8, its MoE blocks add
    // DeepSeek's fp8-block and gpt-oss's mxfp4 (16-bit activations); Blackwell adds
    // nvfp4
    assert_eq!(
        h100["dtypes"],
        serde_json::json!(["bf16", "fp8", "fp8-block", "mxfp4"])
    );
    let b200 = tables.iter().find(|t| t["device"] == "b200").unwrap();
    assert_eq!(
        b200["dtypes"],
        serde_json::json!(["bf16", "fp8", "fp8-block", "mxfp4", "nvfp4"])
    );
    assert_eq!(h100["source"], "data/kernels/h100-sxm/trt-llm.csv");
    let text = ok(&["kernels"]);
    assert!(text.contains("h100-sxm  "), "{text}");
    assert!(text.contains("aiconfigurator-core 0.12.0"), "{text}");
    // the listing says the tables are read by default, and how not to
    assert!(
        text.contains("reads them by default") && text.contains("`--kernels none` reads none"),
        "{text}"
    );
}

#[test]
fn a_kernels_directory_adds_a_table_or_names_the_bad_cell() {
    let dir = std::env::temp_dir().join(format!("ridgeline-kernels-cli-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("my-gpu")).unwrap();
    let file = dir.join("my-gpu/vllm.csv");
    let header = "op,version,dtype,key,x,y,z,efficiency\n";
    std::fs::write(&file, format!("{header}gemm,1,bf16,-,1,1024,1024,0.5\n")).unwrap();
    let d = dir.to_str().unwrap();
    let v = json(&["kernels", "--json", "--kernels", d]);
    let mine: Vec<_> = v["tables"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["device"] == "my-gpu")
        .collect();
    assert_eq!(mine.len(), 1);
    assert_eq!(mine[0]["points"], 1);
    assert_eq!(mine[0]["source"], file.to_str().unwrap());
    // a bad cell: line 3, column 6 (y)
    std::fs::write(
        &file,
        format!("{header}gemm,1,bf16,-,1,1024,1024,0.5\ngemm,1,bf16,-,2,n,1024,0.5\n"),
    )
    .unwrap();
    let out = run(&["kernels", "--kernels", d]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("vllm.csv: line 3, column 6 (y): 'n' is not a positive number"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
    let out = run(&["kernels", "--kernels", d]);
    assert_eq!(out.status.code(), Some(2));
}

/// `predict --kernels DIR`: a table of the user's replaces the bundled one of its device
/// and engine. One GEMM point at efficiency 0.5 (a grid of one point holds everywhere):
/// Llama 3 8B's decode o_proj on an H100 SXM at batch 1 reads (4096 x 2 + 4096 x 4096 x
/// 2 + 4096 x 2) = 33,570,816 B, 10.0211 us at 3.35e12 B/s, / 0.5 x 32 layers =
/// 641.35 us; attention, which the table does not cover, stays `fitted`.
#[test]
fn predict_reads_the_kernel_tables_it_is_given_and_says_so_per_op() {
    let dir =
        std::env::temp_dir().join(format!("ridgeline-kernels-predict-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("h100-sxm")).unwrap();
    std::fs::write(
        dir.join("h100-sxm/vllm.csv"),
        "op,version,dtype,key,x,y,z,efficiency\ngemm,1,bf16,-,1,4096,4096,0.5\n",
    )
    .unwrap();
    let base = [
        "predict",
        "--model",
        "llama-3-8b",
        "--gpu",
        "h100-sxm",
        "--engine",
        "vllm",
        "--json",
    ];
    let with = |k: &str| {
        let mut a = base.to_vec();
        a.extend(["--kernels", k]);
        json(&a)
    };
    let op = |v: &serde_json::Value, phase: &str, name: &str| {
        v["ops"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["phase"] == phase && o["name"] == name)
            .unwrap()
            .clone()
    };
    let mine = with(dir.to_str().unwrap());
    let o = op(&mine, "decode", "o_proj");
    assert_eq!(o["source"], "measured");
    let t = o["time_s"].as_f64().unwrap();
    assert!((t - 641.35e-6).abs() < 0.01e-6, "{t}");
    assert_eq!(op(&mine, "decode", "attention")["source"], "fitted");
    // the bundled tables cover attention too; without tables every op is fitted
    assert_eq!(
        op(&with("bundled"), "decode", "attention")["source"],
        "measured"
    );
    // the bundled tables are the default
    assert_eq!(json(&base), with("bundled"));
    let plain = json(&[&base[..], &["--kernels", "none"]].concat());
    assert!(
        plain["ops"]
            .as_array()
            .unwrap()
            .iter()
            .all(|o| o["source"] == "fitted")
    );
    assert_eq!(plain, with("none"));
    // the contract's key beside `source`, in its words: `ideal` for the pure roofline
    assert_eq!(o["efficiency_source"], "measured");
    assert_eq!(
        op(&mine, "decode", "attention")["efficiency_source"],
        "fitted"
    );
    let mut ideal = base.to_vec();
    ideal[6] = "ideal";
    for (v, want) in [(&plain, "fitted"), (&json(&ideal), "ideal")] {
        let ops = v["ops"].as_array().unwrap();
        assert!(!ops.is_empty());
        assert!(ops.iter().all(|o| o["efficiency_source"] == want), "{want}");
    }
    // a directory that is not there: exit 2, one line naming the option
    let nope = dir.join("nope");
    let gone = [
        "predict",
        "--model",
        "llama-3-8b",
        "--gpu",
        "h100",
        "--kernels",
    ];
    let out = run(&[&gone[..], &[nope.to_str().unwrap()]].concat());
    one_line_error(&out, &["kernels", "nope"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--kernels` on a device a table covers prices the rest with the engine's profile
/// refitted on the tables (data/engines-kernels.toml): TensorRT-LLM on 4 x H200 at
/// batch 16 pays one step overhead per decode step (data/engines-kernels.toml's
/// `step_overhead_s`) on top of its ops, no fitted per-layer term, and the table's
/// shortest kernel for each launch no table covers; a user's `--engine-file` that
/// replaces trt-llm predicts with its own factors and the note says so.
#[test]
fn kernel_predictions_use_the_engine_refitted_on_the_tables() {
    let on_tables = ridgeline::engine::EngineDb::builtin()
        .unwrap()
        .on_tables("trt-llm")
        .unwrap()
        .clone();
    assert_eq!(on_tables.overheads.layer_overhead_s, 0.0);
    let base = [
        "predict",
        "--model",
        "llama-3.1-70b",
        "--gpu",
        "h200-sxm",
        "--gpus",
        "4",
        "--batch",
        "16",
        "--engine",
        "trt-llm",
        "--kernels",
        "bundled",
        "--json",
    ];
    let v = json(&base);
    let ops: f64 = v["ops"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["phase"] == "decode")
        .map(|o| o["time_s"].as_f64().unwrap())
        .sum();
    let step = v["decode"]["time_per_step_s"].as_f64().unwrap();
    // the shortest 16-bit GEMM of data/kernels/h200-sxm/trt-llm.csv: 2 x 2048 x 1024
    // at efficiency 0.22 of the roof, its bytes 2 (2 * 1024 + 1024 * 2048 + 2 * 2048) =
    // 4,206,592 at 4.8e12 B/s = 0.876373 us (its FLOPs 8.4e6 at 989.5e12 FLOP/s take
    // 0.008 us) / 0.22 = 3.983515 us
    let shortest = 4_206_592.0 / 4.8e12 / 0.22;
    // of a Llama layer's 11 launches the tables time the QKV, output, gate-up and down
    // projections and the attention, and the two residual adds run in the next norm's
    // kernel: the two norms, the rotary embedding and the activation are left, 4 x 80
    // layers
    let overhead = on_tables.overheads.step_overhead_s + 320.0 * shortest;
    assert!(
        (step - ops - overhead).abs() < 1e-9,
        "{step} = {ops} + {overhead}?"
    );
    assert!((v["decode"]["overhead_per_step_s"].as_f64().unwrap() - overhead).abs() < 1e-12);
    let note = v["notes"][0].as_str().unwrap();
    assert!(
        note.contains("trt-llm's factors refitted on the tables"),
        "{note}"
    );
    // the same engine replaced by a user's file: its own factors, its per-layer term
    let dir = std::env::temp_dir().join(format!("ridgeline-on-tables-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("e.toml");
    std::fs::write(
        &file,
        "[trt-llm]\nbase = \"typical\"\noverride = true\nlayer_overhead_s = 0.0001\n",
    )
    .unwrap();
    let mut a = base.to_vec();
    a.extend(["--engine-file", file.to_str().unwrap()]);
    let mine = json(&a);
    let note = mine["notes"][0].as_str().unwrap();
    assert!(
        note.contains("the rest with trt-llm's own factors"),
        "{note}"
    );
    let step_mine = mine["decode"]["time_per_step_s"].as_f64().unwrap();
    // its per-layer term is paid for the launches no table times: 320 of 11 per dense
    // layer, 320 / 11 x 100 us = 2.909 ms more than on the bundled profile (whose step
    // overhead is within 1 us of the file's 100 us)
    assert!(
        (step_mine - step - 320.0 / 11.0 * 1e-4).abs() < 1e-5,
        "{step_mine} vs {step}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `predict --model llama-3.1-8b --kernels bundled --json` with `args`.
fn predict_on_tables(args: &[&str]) -> serde_json::Value {
    let mut a = vec![
        "predict",
        "--model",
        "llama-3.1-8b",
        "--kernels",
        "bundled",
        "--json",
    ];
    a.extend_from_slice(args);
    json(&a)
}

/// `sweep --kernels bundled`: a row on a device a table covers is the `predict
/// --kernels bundled` of its configuration (the refitted profile, the tables read), a
/// row on a device no table covers is the row without tables.
#[test]
fn sweep_reads_the_tables_row_by_row_as_predict_does() {
    let sweep = |kernels: &str| {
        json(&[
            "sweep",
            "--model",
            "llama-3.1-8b",
            "--gpu",
            "h100-sxm,mi300x",
            "--batch",
            "1,16",
            "--prompt",
            "1000",
            "--gen",
            "200",
            "--engine",
            "vllm",
            "--kernels",
            kernels,
            "--json",
        ])["rows"]
            .as_array()
            .unwrap()
            .clone()
    };
    let (on, off) = (sweep("bundled"), sweep("none"));
    assert_eq!(on.len(), 4);
    for (r, plain) in on.iter().zip(&off) {
        let (gpu, batch) = (r["gpu"].as_str().unwrap(), r["batch"].as_u64().unwrap());
        let b = batch.to_string();
        let p = predict_on_tables(&[
            "--gpu", gpu, "--batch", &b, "--prompt", "1000", "--gen", "200", "--engine", "vllm",
        ]);
        for (col, key) in [("ttft_s", "ttft_s"), ("tpot_s", "tpot_s")] {
            let (s, q) = (
                r[col].as_f64().unwrap(),
                p["generation"][key].as_f64().unwrap(),
            );
            assert!(
                (s / q - 1.0).abs() < 1e-12,
                "{gpu} b{batch} {col}: {s} vs {q}"
            );
        }
        let same = r["tpot_s"] == plain["tpot_s"];
        // no table covers the MI300X (nor a sibling of it): the row is unchanged
        assert_eq!(same, gpu == "mi300x", "{gpu} b{batch}");
    }
}

/// `simulate --kernels bundled` costs each iteration on the tables: at a vanishing rate
/// every request runs alone, so its p50 TTFT and TPOT are `predict --kernels bundled`'s
/// at batch 1 (within 10%, as without tables: tests/suite/simulate.rs), and not the
/// figures without tables; `sweep --rate --kernels` gives the same run row by row.
#[test]
fn simulate_and_sweep_rate_read_the_tables() {
    // the same deployment and requests for simulate and sweep --rate
    const RUN: [&str; 18] = [
        "--model",
        "llama-3.1-8b",
        "--gpu",
        "h100-sxm",
        "--engine",
        "vllm",
        "--rate",
        "0.01",
        "--requests",
        "40",
        "--seed",
        "3",
        "--prompt",
        "1000",
        "--gen",
        "200",
        "--json",
        "--kernels",
    ];
    let with = |command: &str, kernels: &str| {
        let mut a = vec![command];
        a.extend_from_slice(&RUN);
        a.push(kernels);
        json(&a)
    };
    let (on, off) = (with("simulate", "bundled"), with("simulate", "none"));
    // the run names the table it read: the H100 SXM's own
    assert_eq!(on["config"]["kernel_table"], "h100-sxm");
    assert!(off["config"]["kernel_table"].is_null());
    let p = predict_on_tables(&[
        "--gpu", "h100-sxm", "--prompt", "1000", "--gen", "200", "--engine", "vllm",
    ]);
    // the server's front end: part of the simulated TTFT, not of predict's
    let front = on["config"]["request_overhead_s"].as_f64().unwrap();
    for (col, key, front) in [("ttft_s", "ttft_s", front), ("tpot_s", "tpot_s", 0.0)] {
        let (got, want) = (
            on[col]["p50"].as_f64().unwrap(),
            p["generation"][key].as_f64().unwrap() + front,
        );
        assert!((got / want - 1.0).abs() < 0.10, "{col}: {got} vs {want}");
        let plain = off[col]["p50"].as_f64().unwrap();
        assert!((got / plain - 1.0).abs() > 0.05, "{col}: {got} vs {plain}");
    }
    let rows = with("sweep", "bundled");
    let row = &rows["rows"][0];
    for col in ["ttft_s", "tpot_s"] {
        let key = format!("{}_p50_s", col.trim_end_matches("_s"));
        assert_eq!(row[key.as_str()], on[col]["p50"], "{col}: {row}");
    }
}

/// `plan --kernels bundled`: the best entry is the `predict --kernels bundled` of its
/// configuration; with `--rate` the simulated iterations read the tables too.
#[test]
fn plan_ranks_on_the_tables() {
    let v = json(&[
        "plan",
        "--model",
        "llama-3.1-8b",
        "--gpu",
        "h100-sxm",
        "--engine",
        "trt-llm",
        "--max-tpot-ms",
        "30",
        "--kernels",
        "bundled",
        "--json",
    ]);
    let best = &v["best"];
    let (gpus, batch) = (
        best["gpus"].as_u64().unwrap(),
        best["batch"].as_u64().unwrap(),
    );
    let (w, kv) = (
        best["weights"].as_str().unwrap(),
        best["kv"].as_str().unwrap(),
    );
    let (g, b) = (gpus.to_string(), batch.to_string());
    let p = predict_on_tables(&[
        "--gpu",
        "h100-sxm",
        "--gpus",
        &g,
        "--batch",
        &b,
        "--weights",
        w,
        "--kv",
        kv,
        "--engine",
        "trt-llm",
    ]);
    let (plan_tpot, tpot) = (
        best["tpot_s"].as_f64().unwrap(),
        p["generation"]["tpot_s"].as_f64().unwrap(),
    );
    assert!(
        (plan_tpot / tpot - 1.0).abs() < 1e-12,
        "{plan_tpot} vs {tpot}"
    );
    assert!(plan_tpot <= 0.030);
    // with --rate the simulated iterations read the tables: one layout (bf16 on one
    // H100 SXM under vLLM) serves another rate per replica than without them
    let per_replica = |kernels: &str| {
        json(&[
            "plan",
            "--model",
            "llama-3.1-8b",
            "--gpu",
            "h100-sxm",
            "--gpus",
            "1",
            "--engine",
            "vllm",
            "--weights",
            "bf16",
            "--kv",
            "bf16",
            "--rate",
            "2",
            "--kernels",
            kernels,
            "--json",
        ])["best"]["rate_per_replica"]
            .as_f64()
            .unwrap()
    };
    let (on, off) = (per_replica("bundled"), per_replica("none"));
    assert!((on / off - 1.0).abs() > 0.02, "{on} vs {off}");
}

#[test]
fn each_op_class_carries_to_a_held_out_device_within_ten_percent_as_the_readme_says() {
    // issue 33's kernel-level target: per op class, against measured kernels held out by
    // device, median |error| <= 10%
    let check = ridgeline::kernel_transfer::held_out_by_device(
        ridgeline::kernels::KernelDb::builtin().unwrap(),
        ridgeline::hardware::HardwareDb::builtin().unwrap(),
    );
    let classes = check.by_op_class();
    assert_eq!(classes.len(), 6, "{classes:?}");
    for (op, n, _, error) in &classes {
        assert!(*n >= 400, "{op:?}: {n} points");
        assert!(*error <= 0.10, "{op:?}: median |error| {error}");
    }
    // the six held-out pairs each predicted from the other
    let pairs: std::collections::BTreeSet<_> = check
        .lines
        .iter()
        .map(|l| (l.device.as_str(), l.sibling.as_str()))
        .collect();
    for (a, b) in [
        ("h100-sxm", "h200-sxm"),
        ("b200", "b300"),
        ("gb200", "gb300"),
    ] {
        assert!(
            pairs.contains(&(a, b)) && pairs.contains(&(b, a)),
            "{pairs:?}"
        );
    }
    let readme = include_str!("../../README.md");
    let generated = "<!-- generated by `cargo run --release -q --example kernel_check -- --transfer` (tests/suite/kernels.rs checks it) -->\n";
    let start = readme
        .find(generated)
        .expect("the README's kernel-level table")
        + generated.len();
    let end = start + readme[start..].find("<!-- end generated -->").unwrap();
    assert_eq!(
        &readme[start..end],
        check.markdown(),
        "README's kernel-level table is stale: rerun the example"
    );
}

#[test]
fn a_moe_model_s_routed_experts_read_the_measured_blocks_with_kernels() {
    // Qwen3-30B-A3B on one H100 SXM under vLLM: its routed experts (gate_up_proj,
    // act_mul, down_proj of the MoE layers) cost the measured blocks (the tables' `moe`
    // class at key 2048/768/8/128/1), the router keeps the engine's costs; split over 2
    // devices by tensor parallelism, the block of experts 384 wide (key 2048/384/8/128/1)
    let sources = |gpus: &str| {
        let v = crate::support::cli::json(&[
            "predict",
            "--model",
            "qwen3-30b-a3b",
            "--gpu",
            "h100-sxm",
            "--gpus",
            gpus,
            "--engine",
            "vllm",
            "--kernels",
            "bundled",
            "--json",
        ]);
        let ops = v["ops"].as_array().unwrap().clone();
        ops.iter()
            .filter(|o| o["phase"] == "decode")
            .map(|o| (o["name"].as_str().unwrap().to_string(), o["source"].clone()))
            .collect::<Vec<_>>()
    };
    let one = sources("1");
    for name in ["gate_up_proj", "act_mul", "down_proj"] {
        assert!(
            one.iter().any(|(n, s)| n == name && s == "measured"),
            "{name}: {one:?}"
        );
    }
    assert!(
        one.iter().any(|(n, s)| n == "router" && s == "fitted"),
        "{one:?}"
    );
    // over two devices each runs the experts half as wide, a point of the table too
    let two = sources("2");
    for name in ["gate_up_proj", "act_mul", "down_proj"] {
        assert!(
            two.iter().any(|(n, s)| n == name && s == "measured"),
            "{name}: {two:?}"
        );
    }
}

#[test]
fn the_measured_all_reduce_latencies_are_the_tables_and_predictions_name_them() {
    // data/kernels/all-reduce-latency.toml is what the tables give
    let measured = ridgeline::kernels::AllReduceLatency::measure(
        ridgeline::kernels::KernelDb::builtin().unwrap(),
        ridgeline::hardware::HardwareDb::builtin().unwrap(),
    );
    assert_eq!(
        measured.to_toml(),
        include_str!("../../data/kernels/all-reduce-latency.toml"),
        "rerun `cargo run --release -q --example kernel_check -- --latency > data/kernels/all-reduce-latency.toml`"
    );
    let factor = |args: &str| {
        let v = crate::support::cli::json(&args.split_whitespace().collect::<Vec<_>>());
        v["factors"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["name"] == "all_reduce_latency_s")
            .cloned()
    };
    // TensorRT-LLM's all-reduce of 8 H100 SXM, measured (the file's 3.4 us)
    let f = factor("predict --model llama-3.1-70b --gpu h100-sxm --gpus 8 --engine trt-llm --json")
        .expect("measured latency");
    assert_eq!(f["source"], "measured");
    assert!((f["value"].as_f64().unwrap() - 3.4e-6).abs() < 1e-12, "{f}");
    // two H100 NVL over their bridge take the H100 SXM's 2-device time
    let f = factor("predict --model llama-3.1-8b --gpu h100-nvl --gpus 2 --engine vllm --json")
        .expect("transferred latency");
    assert_eq!(f["source"], "transferred");
    // one device all-reduces nothing; the ideal roofline has no latency
    assert!(factor("predict --model llama-3.1-8b --gpu h100-sxm --engine vllm --json").is_none());
    assert!(
        factor("predict --model llama-3.1-70b --gpu h100-sxm --gpus 8 --engine ideal --json")
            .is_none()
    );
}

#[test]
fn the_measured_fp8_and_fp4_factors_are_the_tables_and_predictions_name_them() {
    // data/kernels/gemm-dtypes.toml is what the tables give
    let measured = ridgeline::kernels::GemmDtypes::measure(
        ridgeline::kernels::KernelDb::builtin().unwrap(),
        ridgeline::hardware::HardwareDb::builtin().unwrap(),
    );
    assert_eq!(
        measured.to_toml(),
        include_str!("../../data/kernels/gemm-dtypes.toml"),
        "rerun `cargo run --release -q --example kernel_check -- --dtypes > data/kernels/gemm-dtypes.toml`"
    );
    let factors = |args: &[&str]| -> Vec<(String, String)> {
        json(
            &[
                &[
                    "predict",
                    "--json",
                    "--model",
                    "llama-3-8b",
                    "--engine",
                    "vllm",
                ],
                args,
            ]
            .concat(),
        )["factors"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                (
                    f["name"].as_str().unwrap().to_string(),
                    f["source"].as_str().unwrap().to_string(),
                )
            })
            .filter(|(n, _)| n.contains("_gemm_"))
            .collect()
    };
    let pair = |n: &str, s: &str| (n.to_string(), s.to_string());
    // fp8 weights on the H100: its own tables' memory factor (the compute one is not applied)
    assert_eq!(
        factors(&["--gpu", "h100", "--weights", "fp8"]),
        [pair("fp8_gemm_memory_efficiency", "measured")]
    );
    // on the H100 PCIe, the H100 SXM's
    assert_eq!(
        factors(&["--gpu", "h100-pcie", "--weights", "fp8"]),
        [pair("fp8_gemm_memory_efficiency", "transferred")]
    );
    // nvfp4 on the B200: both
    assert_eq!(
        factors(&["--gpu", "b200", "--weights", "nvfp4"]),
        [
            pair("fp4_gemm_compute_efficiency", "measured"),
            pair("fp4_gemm_memory_efficiency", "measured")
        ]
    );
    // bf16 weights, or a device nobody measured: none
    assert!(factors(&["--gpu", "h100"]).is_empty());
    assert!(factors(&["--gpu", "mi300x", "--weights", "fp8"]).is_empty());
    // an fp8 GEMV's time: its bytes over the bandwidth x vLLM's HBM share x the factor.
    // Llama-3-8B on one H100 at batch 1, decode's qkv_proj (32 layers, 4096 x 6144 fp8
    // weights): 32 x 25,165,824 B = 805.3 MB (and its few activations) at 3.35 TB/s x
    // memory_efficiency.hbm x 0.858
    let p =
        predict_json("--model llama-3-8b --gpu h100 --weights fp8 --engine vllm --kernels none");
    let hbm = p["factors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "memory_efficiency.hbm")
        .unwrap()["value"]
        .as_f64()
        .unwrap();
    let op = op_in(&p, "qkv_proj", "decode");
    assert_eq!(op["bound"], "memory");
    let want = op["bytes"].as_f64().unwrap() / (3.35e12 * hbm * 0.858);
    let got = op["time_s"].as_f64().unwrap();
    assert!(((got - want) / want).abs() < 0.02, "{got} vs {want} ({op})");
    assert!(op["bytes"].as_f64().unwrap() > 32.0 * 25_165_824.0);
}

#[test]
fn a_prompt_s_attention_on_a_sibling_s_table_costs_what_the_transfer_says() {
    // Llama-3-8B on an H100 PCIe (no table: the H100 SXM's) under vLLM, a 512-token
    // prompt: the prefill attention op's time is its roof on the PCIe card (bf16 peak
    // 756 TFLOP/s, 2.0 TB/s) over the efficiency KernelDb::lookup carries over, per layer
    let p = predict_json("--model llama-3-8b --gpu h100-pcie --engine vllm --kernels bundled");
    let op = op_in(&p, "attention", "prefill");
    assert_eq!(op["source"], "transferred");
    let hw_db = ridgeline::hardware::HardwareDb::builtin().unwrap();
    let pcie = hw_db.get("h100-pcie").unwrap();
    let shape = ridgeline::kernels::Shape::Attention {
        batch: 1,
        len: 512,
        heads: 32,
        kv_heads: 8,
        head_dim: 128,
    };
    let (eff, source) = ridgeline::kernels::KernelDb::builtin()
        .unwrap()
        .lookup(
            pcie,
            hw_db,
            "vllm",
            ridgeline::kernels::OpClass::AttentionPrefill,
            "bf16",
            &shape,
        )
        .unwrap();
    assert_eq!(
        source,
        ridgeline::kernels::Source::Transferred("h100-sxm".into())
    );
    let f = |k: &str| op[k].as_f64().unwrap();
    let roof = (f("flops") / 756e12).max(f("bytes") / 2.0e12);
    let want = roof / eff;
    assert!(
        (f("time_s") / want - 1.0).abs() < 1e-9,
        "{} vs {want}",
        f("time_s")
    );
}

/// The op `name` of `phase` in a `predict --json` document.
fn op_in<'a>(p: &'a serde_json::Value, name: &str, phase: &str) -> &'a serde_json::Value {
    p["ops"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["name"] == name && o["phase"] == phase)
        .unwrap_or_else(|| panic!("no {phase} op {name}"))
}

/// `ridgeline predict --json ARGS` (ARGS split at spaces).
fn predict_json(args: &str) -> serde_json::Value {
    let args: Vec<&str> = ["predict", "--json"]
        .into_iter()
        .chain(args.split(' '))
        .collect();
    json(&args)
}

/// On the tables every kernel of the layers no table times takes at least the table's
/// shortest measured one: `predict --json` lists it in `factors[]` (measured on the
/// device's own table, transferred from a sibling's) and `explain` says so.
#[test]
fn the_shortest_kernel_is_a_measured_factor_and_explain_names_it() {
    let shortest = |gpu: &str, kernels: &str| {
        let v = json(&[
            "predict",
            "--model",
            "llama-3.1-8b",
            "--gpu",
            gpu,
            "--engine",
            "vllm",
            "--kernels",
            kernels,
            "--json",
        ]);
        v["factors"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["name"] == "shortest_kernel_s")
            .cloned()
    };
    // data/kernels/h100-sxm/vllm.csv's fastest 16-bit GEMM, 2 x 1024 x 1024 at 0.161 of
    // the roof: 2 (2 * 1024 + 1024 * 1024 + 2 * 1024) = 2,105,344 B at 3.35e12 B/s =
    // 0.628461 us / 0.161 = 3.9035 us
    let sxm = shortest("h100-sxm", "bundled").unwrap();
    let want = 2_105_344.0 / 3.35e12 / 0.161;
    assert!(
        (sxm["value"].as_f64().unwrap() / want - 1.0).abs() < 1e-9,
        "{sxm}"
    );
    assert_eq!(sxm["source"], "measured");
    // H100 PCIe has no table of its own: its sibling's, the same time
    let pcie = shortest("h100-pcie", "bundled").unwrap();
    assert_eq!(pcie["source"], "transferred");
    assert_eq!(pcie["value"], sxm["value"]);
    // without the tables there is none
    assert_eq!(shortest("h100-sxm", "none"), None);
    let text = ok(&[
        "explain",
        "--model",
        "llama-3.1-8b",
        "--gpu",
        "h100-sxm",
        "--engine",
        "vllm",
        "--kernels",
        "bundled",
    ]);
    assert!(
        text.contains("each kernel of the layers that no table times (norms, rotary embedding, activations, routing) takes at least the table's shortest, 3.90 µs"),
        "{text}"
    );
    // where fixed costs take most of a step (DeepSeek-R1 on 8 B200 at one sequence),
    // the decode finding names the shortest kernel as the per-layer time on the tables
    let r1 = |kernels: &str| {
        ok(&[
            "explain",
            "--model",
            "deepseek-r1",
            "--gpu",
            "b200",
            "--gpus",
            "8",
            "--weights",
            "fp8",
            "--engine",
            "sglang",
            "--kernels",
            kernels,
        ])
    };
    let on = r1("bundled");
    assert!(
        on.contains("for each kernel no table times, and the collectives"),
        "{on}"
    );
    let off = r1("none");
    assert!(
        off.contains("engine's time per step and per layer, for its 61 layers"),
        "{off}"
    );
}
