//! Issue 32's hostile cases: bounded work (no hang), no silent nonsense at the edges,
//! one-line messages that name the flag, outputs written all or nothing. Each case
//! asserts exit 2 with the flag in the one line on stderr, or the correct answer.

use crate::support::cli::ridgeline;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Generous bound on one run: a hang fails the test instead of stalling the suite.
const HANG_LIMIT: Duration = Duration::from_secs(120);

/// Runs `cmd`, killing it and failing the test if it outlives [`HANG_LIMIT`].
fn bounded(cmd: &mut Command) -> Output {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("binary runs");
    // drain the pipes on threads so that a chatty child cannot block on them
    let mut so = child.stdout.take().expect("stdout");
    let mut se = child.stderr.take().expect("stderr");
    let out_t = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut so, &mut v).ok();
        v
    });
    let err_t = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut se, &mut v).ok();
        v
    });
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if start.elapsed() > HANG_LIMIT {
            child.kill().ok();
            child.wait().ok();
            panic!("{cmd:?} ran past {HANG_LIMIT:?}: a hang");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: out_t.join().expect("stdout thread"),
        stderr: err_t.join().expect("stderr thread"),
    }
}

/// Runs the binary with `args`, bounded.
fn run(args: &[&str]) -> Output {
    bounded(ridgeline().args(args))
}

/// Asserts a run exits 2 with one line on stderr that contains every one of `names`;
/// returns that line.
fn refused(args: &[&str], names: &[&str]) -> String {
    let out = run(args);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    let line = err.trim_end();
    assert_eq!(line.lines().count(), 1, "{args:?}: not one line: {err}");
    for n in names {
        assert!(line.contains(n), "{args:?}: '{line}' does not name {n}");
    }
    line.to_string()
}

/// The JSON document of a successful bounded run.
fn json(args: &[&str]) -> serde_json::Value {
    let out = run(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("stdout is JSON")
}

// ---- 1. bounded work -------------------------------------------------------------

#[test]
fn plan_rate_marks_devices_that_leave_no_kv_cache_and_finishes() {
    // rtx-4080 and v100-pcie-16gb leave llama-3-8b (bf16) no KV cache: this hung
    let v = json(&[
        "plan",
        "--model",
        "llama-3-8b",
        "--gpu",
        "rtx-4080,v100-pcie-16gb",
        "--gpus",
        "1",
        "--weights",
        "bf16",
        "--kv",
        "bf16,fp8",
        "--rate",
        "10",
        "--p99-ttft-ms",
        "1000",
        "--p99-tpot-ms",
        "50",
        "--requests",
        "30",
        "--json",
    ]);
    let unserved = v["unserved"].as_array().expect("unserved listed");
    assert_eq!(
        unserved.len() as u64,
        v["evaluated"].as_u64().unwrap() - v["feasible"].as_u64().unwrap()
    );
    assert!(!unserved.is_empty());
    for u in unserved {
        let why = u["reason"].as_str().unwrap();
        assert!(!why.is_empty(), "{u}");
        assert!(
            why.contains("KV cache") || why.contains("do not fit") || why.contains("misses"),
            "{why}"
        );
    }
    assert!(v["best"].is_null());
}

#[test]
fn plan_rate_text_lists_the_layouts_that_serve_no_rate() {
    let out = run(&[
        "plan",
        "--model",
        "llama-3-8b",
        "--gpu",
        "rtx-4080",
        "--gpus",
        "1",
        "--weights",
        "bf16",
        "--kv",
        "fp8",
        "--rate",
        "10",
        "--p99-ttft-ms",
        "1000",
        "--p99-tpot-ms",
        "50",
        "--requests",
        "30",
    ]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("Serve no rate within the targets: 1 layout"),
        "{text}"
    );
    assert!(
        text.contains("rtx-4080") && text.contains("KV cache"),
        "{text}"
    );
}

#[test]
fn plan_rate_with_engines_without_a_token_budget_finishes() {
    let v = json(&[
        "plan",
        "--model",
        "qwen3-0.6b",
        "--gpu",
        "h100",
        "--gpus",
        "1",
        "--weights",
        "bf16",
        "--kv",
        "bf16",
        "--engine",
        "hf,ideal,gpt-fast",
        "--rate",
        "10",
        "--p99-ttft-ms",
        "1000",
        "--p99-tpot-ms",
        "50",
        "--requests",
        "30",
        "--json",
    ]);
    assert_eq!(v["evaluated"], 3);
    assert_eq!(v["feasible"], 3, "{}", v["unserved"]);
    assert!(v["best"]["rate_per_replica"].as_f64().unwrap() > 0.0);
}

#[test]
fn plan_rate_over_the_token_cap_names_requests() {
    refused(
        &[
            "plan",
            "--model",
            "llama-3-8b",
            "--gpu",
            "h100",
            "--gpus",
            "8",
            "--rate",
            "1",
            "--requests",
            "100000",
            "--prompt",
            "1000000",
        ],
        &["--requests"],
    );
}

#[test]
fn every_bundled_engine_simulates() {
    for engine in ["hf", "ideal", "gpt-fast"] {
        let v = json(&[
            "simulate",
            "--model",
            "qwen3-0.6b",
            "--gpu",
            "h100",
            "--engine",
            engine,
            "--rate",
            "2",
            "--requests",
            "20",
            "--prompt",
            "256",
            "--gen",
            "16",
            "--json",
        ]);
        assert_eq!(v["completed"], 20, "{engine}");
        assert_eq!(v["config"]["max_batched_tokens"], 8192, "{engine}");
    }
}

// ---- 2. no silent nonsense at the edges ------------------------------------------

#[test]
fn a_vanishing_rate_is_refused_naming_rate() {
    refused(
        &[
            "simulate",
            "--model",
            "qwen3-0.6b",
            "--gpu",
            "h100",
            "--rate",
            "1e-12",
            "--requests",
            "10",
        ],
        &["--rate"],
    );
}

#[test]
fn the_lowest_rate_allowed_keeps_latencies_exact() {
    // 10 requests at 1e-7 req/s: 1e8 s of arrivals, each request alone
    let shape = [
        "--model",
        "qwen3-0.6b",
        "--gpu",
        "h100",
        "--prompt",
        "512",
        "--gen",
        "128",
    ];
    let sim = json(
        &[
            &["simulate"][..],
            &shape,
            &["--rate", "1e-7", "--requests", "10", "--json"],
        ]
        .concat(),
    );
    let one = json(&[&["predict"][..], &shape, &["--json"]].concat());
    // the request's time besides the engine's: the server's front end
    let alone = one["generation"]["total_s"].as_f64().unwrap()
        + sim["config"]["request_overhead_s"].as_f64().unwrap();
    for k in ["mean", "p50", "p99"] {
        let e2e = sim["e2e_s"][k].as_f64().unwrap();
        assert!((e2e / alone - 1.0).abs() < 0.01, "{k}: {e2e} vs {alone}");
    }
}

#[test]
fn zero_devices_per_node_names_the_field_and_file() {
    let dir = std::env::temp_dir().join(format!("ridgeline-bar-dpn-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/data/hardware/h100-sxm.toml"
    ))
    .unwrap()
    .replace(
        "id = \"h100-sxm\"",
        "id = \"h100-zero\"\ndevices_per_node = 0",
    );
    let path = dir.join("zero.toml");
    std::fs::write(&path, text).unwrap();
    refused(
        &["--hardware-file", path.to_str().unwrap(), "hardware"],
        &["devices_per_node", "zero.toml"],
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn ecc_cards_leave_a_sixteenth_of_their_memory_to_ecc() {
    for gpu in ["l4", "l40s", "a10", "a10g", "t4"] {
        let hw = json(&["hardware", "show", gpu, "--json"]);
        assert_eq!(hw["memory"]["ecc_reserved_fraction"], 0.0625, "{gpu}");
        let physical = hw["memory"]["capacity_bytes"].as_f64().unwrap();
        let p = json(&["predict", "--model", "qwen3-0.6b", "--gpu", gpu, "--json"]);
        let usable = p["memory"]["capacity_bytes"].as_f64().unwrap();
        assert_eq!(usable, physical * 15.0 / 16.0, "{gpu}");
    }
    // HBM parts keep their whole capacity
    let hw = json(&["hardware", "show", "h100", "--json"]);
    assert!(hw["memory"].get("ecc_reserved_fraction").is_none());
}

// ---- 3. messages that name the field ---------------------------------------------

#[test]
fn unknown_names_name_their_flag() {
    let line = refused(
        &["predict", "--model", "llama-3-8b", "--gpu", "h1000"],
        &["--gpu", "h1000"],
    );
    assert!(line.contains("did you mean h100-sxm"), "{line}");
    refused(
        &["predict", "--model", "llama-3-8bx", "--gpu", "h100"],
        &["--model", "llama-3-8b"],
    );
    refused(
        &[
            "predict",
            "--model",
            "llama-3-8b",
            "--gpu",
            "h100",
            "--engine",
            "vlm",
        ],
        &["--engine", "vllm"],
    );
}

#[test]
fn malformed_counts_say_what_the_flag_expects() {
    for bad in ["-1", "8.5"] {
        let line = refused(
            &[
                "predict",
                "--model",
                "llama-3-8b",
                "--gpu",
                "h100",
                "--batch",
                bad,
            ],
            &["--batch", "whole number"],
        );
        assert!(!line.contains("invalid digit"), "{line}");
    }
    refused(
        &[
            "simulate",
            "--model",
            "llama-3-8b",
            "--gpu",
            "h100",
            "--rate",
            "1",
            "--seed",
            "-1",
        ],
        &["--seed", "whole number"],
    );
    refused(
        &[
            "plan",
            "--model",
            "llama-3-8b",
            "--gpu",
            "h100",
            "--rate",
            "1",
            "--seed",
            "-1",
        ],
        &["--seed", "whole number"],
    );
}

#[test]
fn a_huge_number_is_not_echoed_whole() {
    let huge = format!("1{}", "0".repeat(308));
    let line = refused(
        &[
            "predict",
            "--model",
            "llama-3-8b",
            "--gpu",
            "h100",
            "--batch",
            &huge,
        ],
        &["--batch", "…"],
    );
    assert!(line.chars().count() < 200, "{line}");
}

#[test]
fn prose_uses_words_not_keys() {
    let out = run(&[
        "plan",
        "--model",
        "llama-3-8b",
        "--gpu",
        "l4",
        "--gpus",
        "1",
        "--weights",
        "fp8",
        "--kv",
        "fp8",
        "--rate",
        "1",
        "--p99-ttft-ms",
        "2000",
        "--p99-tpot-ms",
        "100",
        "--requests",
        "30",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Evaluated 1 layout,"), "{text}");
    assert!(
        !text.contains("held by p99_") && !text.contains(" 1 devices"),
        "{text}"
    );
}

// ---- 4. the calibration example fits something -----------------------------------

#[test]
fn calibrating_an_engine_without_rows_names_engine_and_the_engines_there() {
    let dir = std::env::temp_dir().join(format!("ridgeline-bar-cal-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let save = dir.join("my-engines.toml");
    let csv = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/data/my-bench.csv");
    let save_s = save.to_str().unwrap();
    refused(
        &[
            "calibrate",
            "--measurements",
            csv,
            "--engine",
            "vllm",
            "--save",
            save_s,
        ],
        &["--engine", "vllm-rocm"],
    );
    assert!(!save.exists(), "a failed fit wrote its file");
    // the README's command fits the sample's engine
    let out = run(&[
        "calibrate",
        "--measurements",
        csv,
        "--engine",
        "vllm-rocm",
        "--save",
        save_s,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("saved 1 fitted engine profile"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

// ---- 5. outputs all or nothing -------------------------------------------------------

#[test]
fn a_bad_second_output_leaves_the_first_untouched() {
    let dir = std::env::temp_dir().join(format!("ridgeline-bar-out-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let svg = dir.join("a.svg");
    std::fs::write(&svg, "old").unwrap();
    let missing = dir.join("missing-dir").join("x.html");
    for cmd in ["predict", "explain"] {
        refused(
            &[
                cmd,
                "--model",
                "qwen3-0.6b",
                "--gpu",
                "h100",
                "--svg",
                svg.to_str().unwrap(),
                "--html",
                missing.to_str().unwrap(),
            ],
            &["--html", "missing-dir"],
        );
        assert_eq!(
            std::fs::read_to_string(&svg).unwrap(),
            "old",
            "{cmd} replaced a.svg"
        );
        let wrong = dir.join("report.txt");
        refused(
            &[
                cmd,
                "--model",
                "qwen3-0.6b",
                "--gpu",
                "h100",
                "--svg",
                svg.to_str().unwrap(),
                "--html",
                wrong.to_str().unwrap(),
            ],
            &["--html"],
        );
        assert_eq!(
            std::fs::read_to_string(&svg).unwrap(),
            "old",
            "{cmd} replaced a.svg"
        );
    }
    let left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(left.len(), 1, "{left:?}");
    std::fs::remove_dir_all(&dir).ok();
}
