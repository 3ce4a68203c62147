//! No crash, no lost byte: hostile files, write failures, interrupted writes and
//! conflicting flags end as exit 2 with one line naming the field, the old output file
//! intact and no temporary file left behind.

use crate::support::cli::one_line_error;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ridgeline"))
}

fn run(args: &[&str]) -> Output {
    bin().args(args).output().expect("binary runs")
}

fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ridgeline-rel-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Exit 2, nothing on stdout, one line on stderr containing every needle.
fn files_in(d: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    v.sort();
    v
}

#[test]
fn stdout_write_errors_are_errors_but_a_closed_pipe_is_not() {
    if !Path::new("/dev/full").exists() {
        return;
    }
    for args in [
        &[
            "predict",
            "--model",
            "llama-3-8b",
            "--gpu",
            "h100",
            "--json",
        ][..],
        &[
            "sweep",
            "--model",
            "llama-3-8b",
            "--gpu",
            "h100",
            "--batch",
            "1..50",
        ][..],
    ] {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let out = bin().args(args).stdout(full).output().unwrap();
        one_line_error(&out, &["cannot write <stdout>"]);
    }
    // `| head`: the reader goes away early; that is a quiet success
    let mut child = bin()
        .args([
            "sweep",
            "--model",
            "llama-3-8b",
            "--gpu",
            "h100",
            "--batch",
            "1..200000",
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 64];
    use std::io::Read;
    stdout.read_exact(&mut first).unwrap();
    drop(stdout);
    assert!(child.wait().unwrap().success());
}

#[test]
fn input_files_must_be_regular_and_small() {
    let d = scratch("inputs");
    let fifo = d.join("x.json");
    let made = Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .is_ok_and(|s| s.success());
    if made {
        // a FIFO would block forever if opened
        let out = run(&[
            "predict",
            "--model",
            fifo.to_str().unwrap(),
            "--gpu",
            "h100",
        ]);
        one_line_error(&out, &["not a regular file"]);
    }
    if Path::new("/dev/zero").exists() {
        let out = run(&["calibrate", "--measurements", "/dev/zero"]);
        one_line_error(&out, &["/dev/zero", "not a regular file"]);
    }
    let big = d.join("big.json");
    std::fs::write(&big, vec![b' '; 5 << 20]).unwrap();
    let out = run(&["predict", "--model", big.to_str().unwrap(), "--gpu", "h100"]);
    one_line_error(&out, &["larger than the 4 MiB"]);
    // a config.json with a byte-order mark reads like one without
    let cfg = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/data/models/llama-2-7b.json"
    ))
    .unwrap();
    let bom = d.join("bom.json");
    std::fs::write(&bom, format!("\u{feff}{cfg}")).unwrap();
    let out = run(&["predict", "--model", bom.to_str().unwrap(), "--gpu", "h100"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn an_interrupted_sweep_keeps_the_old_file_and_leaves_no_temporary() {
    let d = scratch("interrupt");
    let keep = d.join("keep.csv");
    std::fs::write(&keep, "old\n").unwrap();
    let mut child = bin()
        .args([
            "sweep",
            "--model",
            "llama-3-8b,llama-2-70b",
            "--gpu",
            "h100,a100",
            "--batch",
            "1..2000",
            "--prompt",
            "1..4000:+100",
            "--gen",
            "1..100:+10",
            "--out",
        ])
        .arg(&keep)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // wait until the temporary file exists, then interrupt
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while files_in(&d).len() < 2 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(
        files_in(&d).len(),
        2,
        "no temporary file appeared: {:?}",
        files_in(&d)
    );
    let _ = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    let status = child.wait().unwrap();
    assert!(!status.success());
    assert_eq!(std::fs::read_to_string(&keep).unwrap(), "old\n");
    assert_eq!(files_in(&d), vec!["keep.csv".to_string()]);
    // a completed sweep replaces it
    let out = run(&[
        "sweep",
        "--model",
        "llama-3-8b",
        "--gpu",
        "h100",
        "--out",
        keep.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    assert_eq!(std::fs::read_to_string(&keep).unwrap().lines().count(), 2);
    assert_eq!(files_in(&d), vec!["keep.csv".to_string()]);
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn output_files_that_cannot_be_written_name_the_flag() {
    let d = scratch("outputs");
    let missing = d.join("no-such-dir/out.csv");
    let out = run(&[
        "sweep",
        "--model",
        "llama-3-8b",
        "--gpu",
        "h100",
        "--out",
        missing.to_str().unwrap(),
    ]);
    one_line_error(&out, &["cannot write --out", "out.csv"]);
    let svg = d.join("no-such-dir/chart.svg");
    let out = run(&[
        "predict",
        "--model",
        "llama-3-8b",
        "--gpu",
        "h100",
        "--svg",
        svg.to_str().unwrap(),
    ]);
    one_line_error(&out, &["cannot write --svg"]);
    // the calibration target is checked before the fit
    let toml = d.join("no-such-dir/engines.toml");
    let csv = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/data/measurements/measurements.csv"
    );
    let out = run(&[
        "calibrate",
        "--measurements",
        csv,
        "--save",
        toml.to_str().unwrap(),
    ]);
    one_line_error(&out, &["cannot write --save"]);
    // charts are SVG: a .png name is refused, not filled with SVG
    let png = d.join("roof.png");
    let out = run(&[
        "roofline",
        "--model",
        "llama-3-8b",
        "--gpu",
        "h100",
        "--out",
        png.to_str().unwrap(),
    ]);
    one_line_error(&out, &["--out", "not an .svg file name"]);
    assert!(!png.exists());
    // and "wrote" goes to stderr, not into the output
    let ok = d.join("roof.svg");
    let out = run(&[
        "roofline",
        "--model",
        "llama-3-8b",
        "--gpu",
        "h100",
        "--out",
        ok.to_str().unwrap(),
    ]);
    assert!(out.status.success() && out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("wrote"));
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn parser_errors_are_one_line_naming_the_flag() {
    for (args, needles) in [
        (
            &[
                "predict",
                "--model",
                "llama-3-8b",
                "--gpu",
                "h100",
                "--batch",
                "-1",
            ][..],
            &["--batch"][..],
        ),
        (
            &[
                "predict",
                "--model",
                "llama-3-8b",
                "--gpu",
                "h100",
                "--flash",
                "--no-flash",
            ],
            &["--flash", "--no-flash"],
        ),
        (
            &[
                "predict",
                "--model",
                "llama-3-8b",
                "--gpu",
                "h100",
                "--markdown",
                "--json",
            ],
            &["--markdown", "--json"],
        ),
        (
            &[
                "train",
                "--model",
                "llama-2-7b",
                "--gpu",
                "a100",
                "--zero",
                "300",
            ],
            &["--zero", "300"],
        ),
        (
            &[
                "predict",
                "--model",
                "llama-3-8b",
                "--gpu",
                "h100",
                "--parallel",
                "xp",
            ],
            &["--parallel", "tp, pp"],
        ),
        (
            &["plan", "--model", "llama-3-8b", "--max-tpot-ms", "-3"],
            &["--max-tpot-ms", "> 0"],
        ),
        (&["predict", "--model", "llama-3-8b"], &["--gpu"]),
    ] {
        one_line_error(&run(args), needles);
    }
}

#[test]
fn sweep_rows_that_do_not_fit_have_no_cost() {
    // Llama-2-70B in bf16 does not fit one H100: no tokens, so no cost per token
    let out = run(&[
        "sweep",
        "--model",
        "llama-2-70b,llama-3-8b",
        "--gpu",
        "h100",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows[0]["fits"], false);
    assert!(rows[0]["usd_per_million_tokens"].is_null());
    assert_eq!(rows[1]["fits"], true);
    assert!(rows[1]["usd_per_million_tokens"].as_f64().unwrap() > 0.0);
}

#[test]
fn plan_over_a_million_device_counts_stays_small() {
    // layouts the model cannot use are counted, not built: under a 1 GB address-space
    // limit the search still runs (it used to build 5.5 GB of candidates first)
    let cmd = format!(
        "ulimit -v 1000000 && exec {} plan --model llama-3-8b --gpu h100,l4 --gpus 1..1000000 --json",
        env!("CARGO_BIN_EXE_ridgeline")
    );
    let out = Command::new("sh").args(["-c", &cmd]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // llama-3-8b: tensor parallel over 1, 2, 4, 8 (divisors of 32 heads within a node),
    // pipeline parallel over 2..=32 devices (one layer each at most): every other count
    // is impossible
    assert!(v["skipped_layouts"].as_u64().unwrap() > 1_000_000);
    assert!(v["best"].is_object());
}

#[test]
fn replacing_a_built_in_device_or_engine_needs_override_and_says_so() {
    let d = scratch("override");
    let h100 = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/data/hardware/h100-sxm.toml"
    ))
    .unwrap();
    let file = d.join("h100.toml");
    std::fs::write(&file, &h100).unwrap();
    let args = |f: &Path| {
        vec![
            "predict".to_string(),
            "--model".into(),
            "llama-3-8b".into(),
            "--gpu".into(),
            "h100".into(),
            "--hardware-file".into(),
            f.display().to_string(),
        ]
    };
    let out = bin().args(args(&file)).output().unwrap();
    one_line_error(&out, &["h100.toml", "override = true"]);
    std::fs::write(&file, format!("override = true\n{h100}")).unwrap();
    let out = bin().args(args(&file)).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("replaces the built-in device h100-sxm"));

    let engines = d.join("engines.toml");
    let profile = "memory_efficiency = { default = 0.5 }\ncompute_efficiency = 0.5\n";
    for (text, needle) in [
        (format!("[ideal]\n{profile}"), "cannot be replaced"),
        (format!("[vllm]\n{profile}"), "override = true"),
        (
            format!("[mine]\n{profile}prefill_layer_overhead_s = 1.5\n"),
            "prefill_layer_overhead_s",
        ),
    ] {
        std::fs::write(&engines, text).unwrap();
        let out = run(&[
            "predict",
            "--model",
            "llama-3-8b",
            "--gpu",
            "h100",
            "--engine-file",
            engines.to_str().unwrap(),
        ]);
        one_line_error(&out, &[needle]);
    }
    std::fs::write(&engines, format!("[vllm]\noverride = true\n{profile}")).unwrap();
    let out = run(&[
        "predict",
        "--model",
        "llama-3-8b",
        "--gpu",
        "h100",
        "--engine",
        "vllm",
        "--engine-file",
        engines.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("replaces the built-in engine vllm"));
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn model_configs_are_read_or_refused_with_a_reason() {
    let d = scratch("models");
    let llama: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/data/models/llama-2-7b.json"
        ))
        .unwrap(),
    )
    .unwrap();
    let write = |name: &str, edit: &dyn Fn(&mut serde_json::Map<String, serde_json::Value>)| {
        let mut v = llama.clone();
        let m = v.as_object_mut().unwrap();
        m.remove("ridgeline_id");
        edit(m);
        let p = d.join(name);
        std::fs::write(&p, serde_json::to_string(&v).unwrap()).unwrap();
        p
    };
    let predict = |p: &Path| run(&["predict", "--model", p.to_str().unwrap(), "--gpu", "h100"]);
    // an empty name is not a near miss of anything
    one_line_error(
        &run(&["predict", "--model", "", "--gpu", "h100"]),
        &["--model", "is empty"],
    );
    // a model folder holding config.json is read through it
    let folder = d.join("my-model");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::copy(write("plain.json", &|_| {}), folder.join("config.json")).unwrap();
    let out = predict(&folder);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // an unknown dtype and a missing MLP width are errors naming the field
    let p = write("dtype.json", &|m| {
        m.insert("torch_dtype".into(), "float8_e4m3".into());
    });
    one_line_error(&predict(&p), &["torch_dtype", "float8_e4m3"]);
    let p = write("noffn.json", &|m| {
        m.remove("intermediate_size");
    });
    one_line_error(&predict(&p), &["intermediate_size"]);
    // an architecture that is not modelled is refused, not read as Llama
    let p = write("mamba.json", &|m| {
        m.insert("ssm_cfg".into(), serde_json::json!({"d_state": 128}));
    });
    one_line_error(&predict(&p), &["ssm_cfg", "state-space"]);
    // latent attention is modelled: an incomplete MLA config names what it lacks
    let p = write("mla.json", &|m| {
        m.insert("kv_lora_rank".into(), 512.into());
    });
    one_line_error(&predict(&p), &["missing field qk_nope_head_dim"]);
    // an unknown family is read as Llama-style, and the prediction says so
    let p = write("other.json", &|m| {
        m.insert("model_type".into(), "internlm2".into());
    });
    let out = run(&[
        "predict",
        "--model",
        p.to_str().unwrap(),
        "--gpu",
        "h100",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let notes = v["notes"].to_string();
    assert!(
        notes.contains("internlm2") && notes.contains("Llama-style"),
        "{notes}"
    );
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn absurd_but_finite_quantities_are_refused() {
    let d = scratch("absurd");
    let h100 = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/data/hardware/h100-sxm.toml"
    ))
    .unwrap();
    // a bandwidth of 1e-300 bytes/s would print a ridge of inf
    let odd = h100
        .replace("id = \"h100-sxm\"", "id = \"odd\"")
        .replace("aliases = [", "aliases = [\"odd-alias\", ")
        .replace(
            "bandwidth_bytes_per_s = 3.35e12",
            "bandwidth_bytes_per_s = 1e-300",
        );
    assert_ne!(odd, h100, "the test edits the file");
    let file = d.join("odd.toml");
    std::fs::write(&file, odd).unwrap();
    let out = run(&[
        "hardware",
        "show",
        "odd",
        "--hardware-file",
        file.to_str().unwrap(),
    ]);
    one_line_error(&out, &["memory.bandwidth_bytes_per_s", "physical range"]);
    let engines = d.join("e.toml");
    // a bandwidth fraction of 1e-300, and a per-expert cost of a second (a typo for
    // microseconds), each named with its range
    for (profile, model, gpu, needles) in [
        (
            "memory_efficiency = { default = 1e-300 }\ncompute_efficiency = 0.5\n",
            "llama-3-8b",
            "h100",
            ["memory_efficiency.default", "[0.001, 1]"],
        ),
        (
            "memory_efficiency = { default = 0.5 }\ncompute_efficiency = 0.5\nrdna_expert_overhead_s = 1.0\n",
            "qwen3-30b-a3b",
            "ryzen-ai-max-395",
            ["rdna_expert_overhead_s", "[0, 1e-2]"],
        ),
    ] {
        std::fs::write(&engines, format!("[slow]\n{profile}")).unwrap();
        let out = run(&[
            "predict",
            "--model",
            model,
            "--gpu",
            gpu,
            "--engine-file",
            engines.to_str().unwrap(),
        ]);
        one_line_error(&out, &needles);
    }
    let out = run(&[
        "predict",
        "--model",
        "llama-3-8b",
        "--gpu",
        "h100",
        "--weights",
        "bpw:1e-300",
    ]);
    one_line_error(&out, &["bits per weight must be in [1, 64]"]);
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn the_first_token_comes_from_the_prefill() {
    // CONTRACT: with a prompt, total_s = ttft_s + (gen - 1) x tpot_s; --gen 1 has no
    // decode step; with --prompt 0 every output token is a decode step.
    let json = |args: &[&str]| -> serde_json::Value {
        let mut a = vec![
            "predict",
            "--model",
            "llama-3-8b",
            "--gpu",
            "h100",
            "--json",
        ];
        a.extend(args);
        serde_json::from_slice(&run(&a).stdout).unwrap()
    };
    let g = |v: &serde_json::Value, k: &str| v["generation"][k].as_f64().unwrap();
    let v = json(&["--prompt", "512", "--gen", "128"]);
    let expect = g(&v, "ttft_s") + 127.0 * g(&v, "tpot_s");
    assert!((g(&v, "total_s") - expect).abs() <= 1e-12 * expect);
    let one = json(&["--prompt", "512", "--gen", "1"]);
    assert_eq!(g(&one, "total_s"), g(&one, "ttft_s"));
    assert_eq!(g(&one, "tpot_s"), 0.0);
    assert_eq!(g(&one, "output_tokens_per_s"), 1.0 / g(&one, "ttft_s"));
    // llama-bench tg: no prompt, 128 decode steps, TTFT 0
    let tg = json(&["--prompt", "0", "--gen", "128"]);
    assert_eq!(g(&tg, "ttft_s"), 0.0);
    let expect = 128.0 * g(&tg, "tpot_s");
    assert!((g(&tg, "total_s") - expect).abs() <= 1e-12 * expect);
}
