//! `ridgeline calibrate` end to end: JSON on stdout, `--save` output that
//! `--engine-file` accepts (one engine, or the whole database with its remarks kept),
//! the Markdown accuracy table, and bad input that exits 2 naming the line and column.

use crate::support::cli;
use cli::{json, ridgeline, stdout_of};

fn tmp(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("ridgeline-calibrate-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

const HEADER: &str = "id,kind,gpu,num_gpus,model,precision,batch,prompt_len,gen_len,framework,metric,value,unit,source_url_or_repo_path,notes";

#[test]
fn json_is_one_document_with_fits_rows_and_skips() {
    let v = json(&[
        "calibrate",
        "--measurements",
        "data/measurements/measurements.csv",
        "--engine",
        "llama.cpp",
        "--json",
    ]);
    let engines = v["engines"].as_array().unwrap();
    assert_eq!(engines.len(), 1);
    assert_eq!(engines[0]["engine"]["id"], "llama.cpp");
    let params = engines[0]["params"].as_array().unwrap();
    assert!(params.iter().any(|p| p["key"] == "memory_efficiency.gddr"));
    let rows = v["rows"].as_array().unwrap();
    assert!(rows.iter().all(|r| r["engine"] == "llama.cpp"));
    assert!(rows.len() >= 20);
    assert!(
        v["skipped"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["id"] == "m029")
    );
}

#[test]
fn saved_profiles_load_with_engine_file_and_change_predictions() {
    // one made-up engine measured at half of what typical predicts on an RTX 4090
    let csv = tmp("half.csv");
    let toml = tmp("half.toml");
    let predict = |extra: &[&str]| {
        let mut args = vec![
            "predict",
            "--model",
            "llama-2-7b",
            "--gpu",
            "rtx-4090",
            "--prompt",
            "0",
            "--gen",
            "128",
            "--json",
        ];
        args.extend_from_slice(extra);
        let out = ridgeline().args(&args).output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        v["generation"]["decode_tokens_per_s"].as_f64().unwrap()
    };
    let typical = predict(&["--engine", "exllamav2"]);
    std::fs::write(
        &csv,
        format!(
            "{HEADER}\nx1,A,RTX 4090 24GB,1,Llama-2-7B,f16/f16,1,0,128,ExLlamaV2,decode tokens/s,{},tok/s,synthetic,\"half, on purpose\"\n",
            typical / 2.0
        ),
    )
    .unwrap();
    let text = stdout_of(
        ridgeline()
            .args(["calibrate", "--measurements"])
            .arg(&csv)
            .args(["--engine", "exllamav2", "--save"])
            .arg(&toml),
    );
    assert!(text.contains("memory_efficiency.gddr"), "{text}");
    let saved = std::fs::read_to_string(&toml).unwrap();
    assert!(
        saved.contains("[exllamav2]") && saved.contains("fitted_on = [\"x1\"]"),
        "{saved}"
    );
    let refit = predict(&[
        "--engine",
        "exllamav2",
        "--engine-file",
        toml.to_str().unwrap(),
    ]);
    // the prior (typical, worth 3 rows) and the Huber loss (a row more than 22% off
    // counts linearly) keep one row from pulling all the way to half: it moves the
    // profile toward the row, a few percent
    assert!(
        refit < typical * 0.97 && refit > typical * 0.5,
        "{refit} vs {typical}"
    );
}

#[test]
fn bad_csv_exits_2_naming_line_and_column() {
    let csv = tmp("bad.csv");
    std::fs::write(
        &csv,
        format!(
            "{HEADER}\nx1,A,RTX 4090,1,Llama-2-7B,f16/f16,1,0,128,llama.cpp,tg,fast,tok/s,u,n\n"
        ),
    )
    .unwrap();
    let out = ridgeline()
        .args(["calibrate", "--measurements"])
        .arg(&csv)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("line 2, column 12 (value)") && err.contains("bad.csv"),
        "{err}"
    );
    let out = ridgeline()
        .args(["calibrate", "--measurements", "no/such/file.csv"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = ridgeline()
        .args([
            "calibrate",
            "--measurements",
            "data/measurements/measurements.csv",
            "--engine",
            "vlm",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("vllm"));
}

/// Two llama.cpp rows (made up), on an RTX 4090 and an A100.
fn two_rows_csv(name: &str) -> std::path::PathBuf {
    let csv = tmp(name);
    std::fs::write(
        &csv,
        format!(
            "{HEADER}\ny1,A,RTX 4090 24GB,1,Llama-2-7B,f16/f16,1,0,128,llama.cpp,decode tokens/s,40,tok/s,https://github.com/a/b/blob/1/x.md,\n\
             y2,A,A100 80GB SXM,1,Llama-2-7B,f16/f16,1,0,128,llama.cpp,decode tokens/s,60,tok/s,https://example.org/post,\n"
        ),
    )
    .unwrap();
    csv
}

#[test]
fn saving_without_engine_writes_the_whole_database_and_keeps_remarks() {
    let csv = two_rows_csv("db.csv");
    let toml = tmp("db.toml");
    std::fs::write(
        &toml,
        "## kept at the top\n[\"llama.cpp\"]\n## also about vllm\n## about vllm\n[vllm]\n",
    )
    .unwrap();
    stdout_of(
        ridgeline()
            .args(["calibrate", "--measurements"])
            .arg(&csv)
            .arg("--save")
            .arg(&toml),
    );
    let saved = std::fs::read_to_string(&toml).unwrap();
    assert!(saved.starts_with("## kept at the top\n# "), "{saved}");
    assert!(
        saved.contains("## also about vllm\n## about vllm\n# vllm: no rows"),
        "{saved}"
    );
    let db = ridgeline::engine::EngineDb::from_toml(&saved, "db.toml").unwrap();
    let ids: Vec<&str> = db.engines().iter().map(|e| e.id.as_str()).collect();
    let builtin = ridgeline::engine::EngineDb::builtin().unwrap();
    assert_eq!(ids.len(), builtin.engines().len(), "{ids:?}");
    let e = db.get("llama.cpp").unwrap();
    assert_eq!(e.provenance.fitted_on, ["y1", "y2"]);
    // no rows of the pool here: typical is as given, and an engine without rows
    // (sglang) takes its speed factors
    let (t, s) = (db.get("typical").unwrap(), db.get("sglang").unwrap());
    assert_eq!(t, builtin.get("typical").unwrap());
    assert_eq!(
        (s.speed.compute_efficiency, &s.speed.memory_efficiency),
        (t.speed.compute_efficiency, &t.speed.memory_efficiency)
    );
    assert!(
        saved.contains("# llama.cpp: fitted on 2 rows (kind A 2) on rtx-4090, a100-80gb-sxm;"),
        "{saved}"
    );
}

#[test]
fn markdown_prints_the_accuracy_table() {
    let csv = two_rows_csv("md.csv");
    let text = stdout_of(
        ridgeline()
            .args(["calibrate", "--markdown", "--measurements"])
            .arg(&csv),
    );
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "| median \\|error\\| | decode (A) |", "{text}");
    assert_eq!(lines[2], "| rows | 2 |", "{text}");
    assert!(lines[6].starts_with("| leave one source out | "), "{text}");
}

/// Runs `calibrate` on `csv` (with `extra` arguments), checks it exits 2 with one line
/// on stderr, and returns that line.
fn bad_input_line(csv: &std::path::Path, extra: &[&str]) -> String {
    let out = ridgeline()
        .args(["calibrate", "--measurements"])
        .arg(csv)
        .args(extra)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(out.stdout.is_empty());
    err
}

/// A kind A llama.cpp row on `gpu`, measured `value` tok/s.
fn decode_row(id: &str, gpu: &str, value: &str) -> String {
    format!(
        "{id},A,{gpu},1,Llama-3-8B,f16/f16,1,0,512,llama.cpp,decode tokens/s (tg512),{value},tok/s,https://example.org/{id},"
    )
}

#[test]
fn a_ceiling_far_below_the_datasheet_is_an_error_naming_the_row_and_the_spec() {
    // an L40 triad given in TB/s under a GB/s unit: 0.803 of 864 GB/s is 0.09%; with
    // the only GDDR ceiling below the fit's lowest efficiency (2%) the bounds crossed
    // and calibrate panicked ("min > max")
    let csv = tmp("tb-as-gb.csv");
    std::fs::write(
        &csv,
        format!(
            "{HEADER}\n{}\nf1,F,L40 48GB,1,(STREAM-like microbenchmark),n/a,,,,gpu-stream,triad bandwidth (max),0.803,GB/s,https://example.org/f1,\n",
            decode_row("r1", "RTX 4090 24GB", "50"),
        ),
    )
    .unwrap();
    let err = bad_input_line(&csv, &[]);
    assert!(
        err.contains("tb-as-gb.csv: line 3, column 12 (value): f1:")
            && err.contains("0.803 GB/s")
            && err.contains("l40")
            && err.contains("864 GB/s"),
        "{err}"
    );
    // a matmul ceiling in GFLOP/s under a TFLOP/s unit
    std::fs::write(
        &csv,
        format!(
            "{HEADER}\n{}\nf2,F,A100 SXM 80GB,1,(matmul microbenchmark),bf16,,,,PyTorch,MAMF,0.2712,TFLOP/s,https://example.org/f2,\n",
            decode_row("r1", "A100 80GB SXM", "50"),
        ),
    )
    .unwrap();
    let err = bad_input_line(&csv, &["--engine", "llama.cpp"]);
    assert!(
        err.contains("line 3, column 12 (value): f2:") && err.contains("312 TFLOP/s"),
        "{err}"
    );
}

#[test]
fn every_value_at_1e_300_is_an_error_not_a_panic() {
    let text = std::fs::read_to_string("data/measurements/measurements.csv").unwrap();
    let mut rows = csv_rows(&text);
    for r in rows.iter_mut().skip(1) {
        r[11] = "1e-300".into();
    }
    let csv = tmp("tiny.csv");
    std::fs::write(&csv, write_rows(&rows)).unwrap();
    for extra in [&[][..], &["--engine", "llama.cpp"], &["--markdown"]] {
        let err = bad_input_line(&csv, extra);
        assert!(err.contains("column 12 (value)"), "{err}");
    }
}

/// The fields of each record of `text` (the test CSVs quote with `"`).
fn csv_rows(text: &str) -> Vec<Vec<String>> {
    let mut rows = vec![];
    let (mut row, mut field, mut quoted) = (vec![], String::new(), false);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            ',' if !quoted => row.push(std::mem::take(&mut field)),
            '\n' if !quoted => {
                row.push(std::mem::take(&mut field));
                rows.push(std::mem::take(&mut row));
            }
            c => field.push(c),
        }
    }
    rows
}

fn write_rows(rows: &[Vec<String>]) -> String {
    let mut out = String::new();
    for r in rows {
        let cells: Vec<String> = r
            .iter()
            .map(|f| {
                if f.contains([',', '"', '\n']) {
                    format!("\"{}\"", f.replace('"', "\"\""))
                } else {
                    f.clone()
                }
            })
            .collect();
        out.push_str(&cells.join(","));
        out.push('\n');
    }
    out
}

/// Six llama.cpp decode rows; the fourth measured `fourth` tok/s.
fn six_rows(name: &str, fourth: &str) -> std::path::PathBuf {
    let gpus = [
        ("RTX 3090 24GB", "47.4"),
        ("RTX 4090 24GB", "54.3"),
        ("A100 80GB PCIe", "54.8"),
        ("A100 80GB SXM", fourth),
        ("H100 PCIe 80GB", "67.8"),
        ("L40S 48GB", "43.4"),
    ];
    let rows: Vec<String> = gpus
        .iter()
        .enumerate()
        .map(|(i, (gpu, v))| decode_row(&format!("r{}", i + 1), gpu, v))
        .collect();
    let csv = tmp(name);
    std::fs::write(&csv, format!("{HEADER}\n{}\n", rows.join("\n"))).unwrap();
    csv
}

#[test]
fn the_row_at_fault_is_named_not_the_first_row() {
    // 1e-310 tok/s (subnormal): prediction / measured overflowed to inf, the fit's step
    // became NaN and the first row's prediction was blamed ("r1: prediction 0",
    // internal error, exit 1)
    for (fourth, says) in [("1e-310", "1e-310 tok/s"), ("0.0001", "0.0001 tok/s")] {
        let csv = six_rows("fourth.csv", fourth);
        let err = bad_input_line(&csv, &[]);
        assert!(
            err.contains("fourth.csv: line 5, column 12 (value): r4:") && err.contains(says),
            "{err}"
        );
        assert!(!err.contains("r1"), "{err}");
    }
    // the same rows with a plausible fourth row fit
    let csv = six_rows("fourth-ok.csv", "53.5");
    stdout_of(ridgeline().args(["calibrate", "--measurements"]).arg(&csv));
}

#[test]
fn a_low_but_plausible_ceiling_bounds_the_fit() {
    // a GDDR ceiling at 5% of the datasheet (above the fit's 2% floor) is data, not an
    // error: the fitted GDDR efficiency stays under it
    let csv = tmp("low-ceiling.csv");
    std::fs::write(
        &csv,
        format!(
            "{HEADER}\n{}\n{}\nf1,F,L40 48GB,1,(STREAM-like microbenchmark),n/a,,,,gpu-stream,triad bandwidth (max),43.2,GB/s,https://example.org/f1,\n",
            decode_row("r1", "RTX 4090 24GB", "50"),
            decode_row("r2", "RTX 3090 24GB", "45"),
        ),
    )
    .unwrap();
    let out = stdout_of(
        ridgeline()
            .args(["calibrate", "--json", "--measurements"])
            .arg(&csv),
    );
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let fit = v["engines"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["engine"]["id"] == "llama.cpp")
        .unwrap();
    let gddr = fit["engine"]["memory_efficiency"]["gddr"].as_f64().unwrap();
    assert!((0.02..=0.05 + 1e-12).contains(&gddr), "{gddr}");
}

use crate::support::synthetic_measurements as synthetic;

#[test]
fn eight_thousand_rows_calibrate_like_the_bundled_file() {
    // the file the calibrate bench times, left in target/tmp for timing the command
    // (cargo build --release; time ./target/release/ridgeline calibrate --measurements
    // target/tmp/calibrate-8000.csv)
    let csv = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("calibrate-8000.csv");
    std::fs::write(&csv, synthetic::synthetic_measurements(8000, false)).unwrap();
    let fitted = |path: &std::path::Path| {
        let out = stdout_of(
            ridgeline()
                .args(["calibrate", "--json", "--measurements"])
                .arg(path),
        );
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        let typical = v["engines"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["engine"]["id"] == "typical")
            .unwrap()["engine"]
            .clone();
        let rows = v["rows"].as_array().unwrap().len() + v["skipped"].as_array().unwrap().len();
        (typical, rows)
    };
    let (many, rows) = fitted(&csv);
    assert_eq!(rows, 8000);
    let (bundled, _) = fitted(std::path::Path::new("data/measurements/measurements.csv"));
    // values jittered by up to ±5%: the factors move by a few percent at most
    for key in ["compute_efficiency", "layer_overhead_s"] {
        let (a, b) = (many[key].as_f64().unwrap(), bundled[key].as_f64().unwrap());
        assert!((a / b - 1.0).abs() < 0.1, "{key}: {a} vs {b}");
    }
    let (a, b) = (
        many["memory_efficiency"]["hbm"].as_f64().unwrap(),
        bundled["memory_efficiency"]["hbm"].as_f64().unwrap(),
    );
    assert!((a / b - 1.0).abs() < 0.05, "hbm: {a} vs {b}");
}
