//! The command line as other programs use it: JSON shapes from CONTRACT.md, exit codes,
//! error messages with near matches.

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
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{args:?}: not one JSON document: {e}"))
}

/// A per-process scratch folder for config files written by a test.
fn scratch_dir(tag: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("ridgeline-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn fails_with(args: &[&str], needles: &[&str]) {
    let out = run(args);
    assert_eq!(out.status.code(), Some(2), "{args:?} should exit 2");
    assert!(out.stdout.is_empty(), "{args:?} printed to stdout on error");
    let err = String::from_utf8_lossy(&out.stderr);
    for n in needles {
        assert!(err.contains(n), "{args:?}: stderr lacks {n:?}: {err}");
    }
}

#[test]
fn hardware_json_lists_all_devices_with_sources() {
    let v = json(&["hardware", "--json"]);
    let list = v.as_array().unwrap();
    assert_eq!(list.len(), 50);
    for d in list {
        assert!(d["id"].is_string());
        assert!(!d["sources"].as_array().unwrap().is_empty(), "{}", d["id"]);
    }
}

#[test]
fn hardware_show_has_contract_keys() {
    let v = json(&["hardware", "show", "h100", "--json"]);
    for k in [
        "id",
        "name",
        "vendor",
        "memory",
        "peak_flops_per_s",
        "host_link_bytes_per_s",
        "scaleup_link_bytes_per_s",
        "tdp_w",
        "price_usd_per_hour",
        "sources",
    ] {
        assert!(v.get(k).is_some(), "missing {k}");
    }
    for k in ["type", "capacity_bytes", "bandwidth_bytes_per_s"] {
        assert!(v["memory"].get(k).is_some(), "missing memory.{k}");
    }
    for k in [
        "fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "int8", "int4", "fp4",
    ] {
        assert!(v["peak_flops_per_s"].get(k).is_some(), "missing peak {k}");
    }
    assert_eq!(v["id"], "h100-sxm");
    assert_eq!(v["peak_flops_per_s"]["bf16"].as_f64(), Some(989.5e12));
    assert!(v["peak_flops_per_s"]["fp4"].is_null());
    // 900 GB/s bidirectional NVLink = 450e9 per direction
    assert_eq!(v["scaleup_link_bytes_per_s"].as_f64(), Some(450e9));
}

#[test]
fn unknown_names_exit_2_with_suggestions() {
    fails_with(
        &["hardware", "show", "h10O"],
        &["unknown hardware id", "h100-sxm"],
    );
    fails_with(
        &["predict", "--model", "llama-2-7", "--gpu", "h100"],
        &["unknown model id", "llama-2-7b"],
    );
    fails_with(
        &["predict", "--model", "llama-2-7b", "--gpu", "a100-80gb-sx"],
        &["a100-80gb-sxm"],
    );
    fails_with(
        &[
            "predict",
            "--model",
            "llama-2-7b",
            "--gpu",
            "h100",
            "--weights",
            "q4km",
        ],
        &["q4_k_m"],
    );
    fails_with(
        &[
            "predict",
            "--model",
            "llama-2-7b",
            "--gpu",
            "h100",
            "--engine",
            "vlm",
        ],
        &["unknown engine"],
    );
}

#[test]
fn bad_values_exit_2_naming_the_field() {
    fails_with(
        &[
            "predict",
            "--model",
            "llama-2-7b",
            "--gpu",
            "h100",
            "--batch",
            "0",
        ],
        &["--batch"],
    );
    fails_with(
        &[
            "predict",
            "--model",
            "llama-2-7b",
            "--gpu",
            "h100",
            "--gpus",
            "0",
        ],
        &["--gpus"],
    );
    fails_with(
        &[
            "predict",
            "--model",
            "llama-2-7b",
            "--gpu",
            "h100",
            "--gpus",
            "3",
        ],
        &["num_attention_heads"],
    );
    fails_with(
        &[
            "predict",
            "--model",
            "llama-2-7b",
            "--gpu",
            "h100",
            "--weights",
            "bpw:-4",
        ],
        &["bpw"],
    );
    fails_with(
        &[
            "predict",
            "--model",
            "llama-2-7b",
            "--gpu",
            "h100",
            "--batch",
            "-4",
        ],
        &[],
    );
    fails_with(
        &[
            "predict",
            "--model",
            "llama-2-7b",
            "--gpu",
            "m2-ultra",
            "--gpus",
            "2",
        ],
        &["link"],
    );
}

#[test]
fn malformed_config_json_exits_2() {
    let dir = scratch_dir("cli");
    let truncated = dir.join("truncated.json");
    std::fs::write(&truncated, "{\"hidden_size\": 4096, \"num_hidden").unwrap();
    fails_with(
        &[
            "predict",
            "--model",
            truncated.to_str().unwrap(),
            "--gpu",
            "h100",
        ],
        &["truncated.json", "JSON"],
    );
    let bad_heads = dir.join("config.json");
    std::fs::write(
        &bad_heads,
        r#"{"hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 64, "vocab_size": 32000, "intermediate_size": 11008}"#,
    )
    .unwrap();
    fails_with(
        &[
            "predict",
            "--model",
            bad_heads.to_str().unwrap(),
            "--gpu",
            "h100",
        ],
        &["num_key_value_heads"],
    );
    fails_with(
        &[
            "predict",
            "--model",
            dir.join("missing.json").to_str().unwrap(),
            "--gpu",
            "h100",
        ],
        &["missing.json"],
    );
}

#[test]
fn user_config_json_predicts() {
    let dir = scratch_dir("cfg");
    let cfg = dir.join("config.json");
    // A TinyLlama-1.1B-shaped config: 22 layers, 2048 wide, 32 heads, 4 KV heads.
    std::fs::write(
        &cfg,
        r#"{"model_type": "llama", "hidden_size": 2048, "intermediate_size": 5632, "num_hidden_layers": 22,
            "num_attention_heads": 32, "num_key_value_heads": 4, "vocab_size": 32000, "torch_dtype": "bfloat16"}"#,
    )
    .unwrap();
    let v = json(&[
        "predict",
        "--model",
        cfg.to_str().unwrap(),
        "--gpu",
        "l4",
        "--json",
    ]);
    // embed 65.5M + lm_head 65.5M + 22 · (2048·2048·2 + 2048·256·2 + 3·2048·5632 + 2·2048) + 2048
    // = 65,536,000·2 + 22 · 44,044,288 + 2048 = 1,100,048,384 (TinyLlama's published 1.1B).
    assert_eq!(v["model"]["params"].as_u64(), Some(1_100_048_384));
}

#[test]
fn predict_json_has_contract_keys_and_no_nan() {
    let v = json(&[
        "predict",
        "--model",
        "llama-3-8b",
        "--gpu",
        "a100",
        "--batch",
        "4",
        "--json",
    ]);
    let keys: &[(&str, &[&str])] = &[
        ("model", &["id", "params", "active_params"]),
        ("hardware", &["id", "count"]),
        (
            "config",
            &[
                "batch", "prompt", "gen", "weights", "kv", "engine", "parallel",
            ],
        ),
        (
            "memory",
            &[
                "weights_bytes",
                "kv_cache_bytes",
                "activation_bytes",
                "overhead_bytes",
                "total_bytes",
                "capacity_bytes",
                "fits",
            ],
        ),
        (
            "prefill",
            &[
                "flops",
                "bytes",
                "arithmetic_intensity",
                "time_s",
                "roofline_time_s",
                "bound",
                "tokens_per_s",
            ],
        ),
        (
            "decode",
            &[
                "flops_per_step",
                "bytes_per_step",
                "arithmetic_intensity",
                "time_per_step_s",
                "roofline_time_per_step_s",
                "bound",
                "tokens_per_s",
                "roofline_tokens_per_s",
            ],
        ),
        (
            "generation",
            &[
                "ttft_s",
                "tpot_s",
                "total_s",
                "output_tokens_per_s",
                "decode_tokens_per_s",
            ],
        ),
    ];
    for (obj, ks) in keys {
        for k in *ks {
            assert!(v[obj].get(k).is_some(), "missing {obj}.{k}");
        }
    }
    assert_eq!(v["hardware"]["id"], "a100-80gb-sxm");
    assert_eq!(v["config"]["gen"], 128);
    for op in v["ops"].as_array().unwrap() {
        for k in [
            "name",
            "phase",
            "count",
            "flops",
            "bytes",
            "arithmetic_intensity",
            "attainable_flops_per_s",
            "time_s",
            "bound",
        ] {
            assert!(op.get(k).is_some(), "op lacks {k}");
        }
        let b = op["bound"].as_str().unwrap();
        assert!(["compute", "memory", "communication", "overhead"].contains(&b));
    }
    let text = serde_json::to_string(&v).unwrap();
    assert!(!text.contains("NaN") && !text.contains("inf"));
}

#[test]
fn odd_but_valid_inputs() {
    for args in [
        &[
            "predict",
            "--model",
            "llama-2-7b",
            "--gpu",
            "h100",
            "--prompt",
            "0",
            "--json",
        ][..],
        &[
            "predict",
            "--model",
            "llama-2-7b",
            "--gpu",
            "h100",
            "--gen",
            "0",
            "--json",
        ][..],
        &[
            "predict",
            "--model",
            "llama-2-7b",
            "--gpu",
            "h100",
            "--batch",
            "100000",
            "--json",
        ][..],
        &[
            "predict",
            "--model",
            "mixtral-8x7b",
            "--gpu",
            "h100",
            "--gpus",
            "2",
            "--parallel",
            "pp",
            "--json",
        ][..],
        &[
            "predict",
            "--model",
            "llama-2-70b",
            "--gpu",
            "rtx-4090",
            "--weights",
            "q4_k_m",
            "--offload",
            "cpu",
            "--json",
        ][..],
    ] {
        let v = json(args);
        assert!(!serde_json::to_string(&v).unwrap().contains("NaN"));
        for section in ["prefill", "decode", "generation", "memory"] {
            for (k, x) in v[section].as_object().unwrap() {
                if let Some(f) = x.as_f64() {
                    assert!(f.is_finite() && f >= 0.0, "{args:?}: {section}.{k} = {f}");
                }
            }
        }
    }
    let big = json(&[
        "predict",
        "--model",
        "llama-2-7b",
        "--gpu",
        "h100",
        "--batch",
        "100000",
        "--json",
    ]);
    assert_eq!(big["memory"]["fits"], false);
    let off = json(&[
        "predict",
        "--model",
        "llama-2-70b",
        "--gpu",
        "rtx-4090",
        "--weights",
        "q4_k_m",
        "--offload",
        "cpu",
        "--json",
    ]);
    assert_eq!(off["memory"]["fits"], true);
    assert!(off["memory"]["offloaded_bytes"].as_f64().unwrap() > 10e9);
}

#[test]
fn human_output_and_explain() {
    let out = run(&["explain", "--model", "llama-2-7b", "--gpu", "h100"]);
    assert!(out.status.success());
    let s = String::from_utf8(out.stdout).unwrap();
    assert!(
        s.contains("memory-bound") && s.contains("ridge point is 295"),
        "{s}"
    );
    let out = run(&[
        "predict",
        "--model",
        "llama-2-7b",
        "--gpu",
        "h100",
        "--markdown",
    ]);
    assert!(
        String::from_utf8(out.stdout)
            .unwrap()
            .contains("| prefill |")
    );
    let out = run(&["models"]);
    assert!(
        String::from_utf8(out.stdout)
            .unwrap()
            .contains("mixtral-8x7b")
    );
}

#[test]
fn huge_inputs_are_rejected_not_wrapped() {
    let dir = scratch_dir("huge");
    let huge = dir.join("huge.json");
    std::fs::write(
        &huge,
        r#"{"hidden_size": 1e14, "num_hidden_layers": 1e14, "num_attention_heads": 1, "vocab_size": 1e14, "intermediate_size": 1e14}"#,
    )
    .unwrap();
    fails_with(
        &[
            "predict",
            "--model",
            huge.to_str().unwrap(),
            "--gpu",
            "h100",
        ],
        &["parameters"],
    );
    let e40 = dir.join("e40.json");
    std::fs::write(&e40, r#"{"hidden_size": 1e40, "num_hidden_layers": 2, "num_attention_heads": 2, "vocab_size": 10}"#).unwrap();
    fails_with(
        &["predict", "--model", e40.to_str().unwrap(), "--gpu", "h100"],
        &["hidden_size"],
    );
    fails_with(
        &[
            "predict",
            "--model",
            "llama-2-7b",
            "--gpu",
            "h100",
            "--prompt",
            "18446744073709551615",
        ],
        &["--prompt"],
    );
    fails_with(
        &[
            "predict",
            "--model",
            "llama-2-7b",
            "--gpu",
            "h100",
            "--batch",
            "1000000000",
            "--prompt",
            "1000000000",
        ],
        &["--batch"],
    );
}

#[test]
fn a10g_runs_tensor_parallel_over_pcie() {
    // AWS g5.12xlarge: 4 x A10G joined by PCIe only (no NVLink); the host link carries the
    // all-reduces. PCIe Gen4 x16 = 64 GB/s bidirectional = 32 GB/s per direction.
    let hw = json(&["hardware", "show", "a10g", "--json"]);
    assert_eq!(hw["host_link_bytes_per_s"].as_f64(), Some(32e9));
    assert!(hw["scaleup_link_bytes_per_s"].is_null());
    for gpus in ["2", "4"] {
        let v = json(&[
            "predict",
            "--model",
            "llama-2-7b",
            "--gpu",
            "a10g",
            "--gpus",
            gpus,
            "--engine",
            "ideal",
            "--json",
        ]);
        assert_eq!(v["hardware"]["count"].as_f64(), Some(gpus.parse().unwrap()));
        assert_eq!(v["config"]["parallel"], "tp");
        let comm: Vec<&Value> = v["ops"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|o| o["link_bytes"].as_f64().unwrap_or(0.0) > 0.0)
            .collect();
        assert!(!comm.is_empty(), "--gpus {gpus}: no all-reduce");
        for o in comm {
            // the ideal roofline moves link bytes at exactly the link's 32 GB/s
            let rate = o["link_bytes"].as_f64().unwrap() / o["time_s"].as_f64().unwrap();
            assert!((rate / 32e9 - 1.0).abs() < 1e-9, "{}: {rate}", o["name"]);
        }
    }
}

#[test]
fn quiet_silences_the_progress_line_on_a_terminal() {
    // `script` gives the sweep a terminal for stderr, where the progress line is drawn
    // every 200 ms; --quiet draws none, and the rows are the same. The grid must outlast
    // 200 ms: 200,000 configurations do in a debug build, a release build needs ten
    // times as many (it evaluates several million a second)
    let bin = env!("CARGO_BIN_EXE_ridgeline");
    let prompts = if cfg!(debug_assertions) { 100 } else { 1000 };
    let sweep = format!(
        "{bin} sweep --model llama-3-8b --gpu h100 --batch 1..2000 --prompt 1..{prompts} > /dev/null"
    );
    use crate::support::net::on_tty;
    assert!(on_tty(&sweep).contains("sweep: "), "no progress line drawn");
    assert!(!on_tty(&format!("{sweep} --quiet")).contains("sweep: "));
}
