//! `ridgeline calibrate` end to end: JSON on stdout, `--save` output that
//! `--engine-file` accepts (one engine, or the whole database with its remarks kept),
//! the Markdown accuracy table, and bad input that exits 2 naming the line and column.

use std::process::Command;

fn ridgeline() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ridgeline"))
}

fn tmp(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("ridgeline-calibrate-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// Runs `cmd`, checks it succeeded, and returns its stdout.
fn stdout_of(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

const HEADER: &str = "id,kind,gpu,num_gpus,model,precision,batch,prompt_len,gen_len,framework,metric,value,unit,source_url_or_repo_path,notes";

#[test]
fn json_is_one_document_with_fits_rows_and_skips() {
    let out = ridgeline()
        .args([
            "calibrate",
            "--measurements",
            "data/measurements/measurements.csv",
            "--engine",
            "llama.cpp",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
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
    // the prior (typical, worth 3 rows) keeps one row from pulling all the way to half
    assert!(
        refit < typical * 0.95 && refit > typical * 0.5,
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
    assert_eq!(e.fitted_on, ["y1", "y2"]);
    // no rows of the pool here: typical is as given, and an engine without rows
    // (sglang) takes its speed factors
    let (t, s) = (db.get("typical").unwrap(), db.get("sglang").unwrap());
    assert_eq!(t, builtin.get("typical").unwrap());
    assert_eq!(
        (s.compute_efficiency, &s.memory_efficiency),
        (t.compute_efficiency, &t.memory_efficiency)
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
