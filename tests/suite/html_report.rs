//! `predict --html FILE` and `explain --html FILE`: one self-contained file holding the
//! inputs, the explanation, the tables and the charts, with nothing loaded from
//! elsewhere, text escaped, written atomically; the command's own output unchanged.

use std::path::{Path, PathBuf};

use crate::support::cli;
use cli::run;

fn scratch(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ridgeline-html-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Text as the report escapes it.
fn escaped(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

/// The `<svg>...</svg>` documents of a page, each checked to parse as XML.
fn svgs(html: &str) -> usize {
    let mut n = 0;
    for part in html.split("<svg ").skip(1) {
        let end = part.find("</svg>").expect("an svg closes");
        let doc = format!("<svg {}</svg>", &part[..end]);
        roxmltree::Document::parse(&doc).expect("each chart is well-formed SVG");
        n += 1;
    }
    n
}

fn check_self_contained(html: &str) {
    assert!(html.starts_with("<!DOCTYPE html>\n<html lang=\"en\">"));
    assert!(html.trim_end().ends_with("</html>"));
    for outside in [" src=", " href=", "<script", "<link", "@import", "url("] {
        assert!(
            !html.contains(outside),
            "the report loads something ({outside})"
        );
    }
    assert!(html.contains("@media print"));
}

#[test]
fn predict_html_holds_everything_and_prints_as_before() {
    let dir = scratch("predict");
    let file = dir.join("report.html");
    let args = [
        "predict",
        "--model",
        "llama-3-8b",
        "--gpu",
        "h100",
        "--batch",
        "4",
        "--json",
    ];
    let plain = run(&args);
    let out = run(&[&args[..], &["--html", file.to_str().unwrap()]].concat());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        out.stdout, plain.stdout,
        "--html changed what predict prints"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("wrote HTML report to"));
    let html = std::fs::read_to_string(&file).unwrap();
    check_self_contained(&html);
    assert_eq!(svgs(&html), 3, "roofline, throughput and memory charts");
    assert!(html.contains(&format!("ridgeline {}", env!("CARGO_PKG_VERSION"))));
    assert!(
        html.contains("<code>ridgeline predict --model llama-3-8b --gpu h100 --batch 4</code>")
    );
    assert!(html.contains("<h1>Llama 3 8B on 1 x NVIDIA H100 SXM5 80GB</h1>"));
    // the explanation: the headline and every finding, as explain says them
    let e: serde_json::Value = serde_json::from_slice(
        &run(&[
            "explain",
            "--model",
            "llama-3-8b",
            "--gpu",
            "h100",
            "--batch",
            "4",
            "--json",
        ])
        .stdout,
    )
    .unwrap();
    assert!(html.contains(&escaped(e["headline"].as_str().unwrap())));
    for f in e["findings"].as_array().unwrap() {
        assert!(
            html.contains(&escaped(f["text"].as_str().unwrap())),
            "missing finding {f}"
        );
    }
    // every op of the prediction has a row
    let p: serde_json::Value = serde_json::from_slice(&plain.stdout).unwrap();
    let rows = html
        .split("<h2>Operators</h2>")
        .nth(1)
        .unwrap()
        .matches("<tr><td>")
        .count();
    assert_eq!(rows, p["ops"].as_array().unwrap().len());
}

#[test]
fn explain_html_matches_predict_html() {
    let dir = scratch("explain");
    let (a, b) = (dir.join("a.html"), dir.join("b.html"));
    let base = [
        "--model",
        "mixtral-8x7b",
        "--gpu",
        "rtx-4090",
        "--weights",
        "q4_k_m",
    ];
    let text = run(&[&["explain"], &base[..]].concat());
    let out = run(&[&["explain"], &base[..], &["--html", a.to_str().unwrap()]].concat());
    assert!(out.status.success());
    assert_eq!(out.stdout, text.stdout);
    assert!(
        run(&[&["predict"], &base[..], &["--html", b.to_str().unwrap()]].concat())
            .status
            .success()
    );
    let (ha, hb) = (
        std::fs::read_to_string(&a).unwrap(),
        std::fs::read_to_string(&b).unwrap(),
    );
    check_self_contained(&ha);
    assert!(ha.contains("does not fit"));
    // the same report but for the command line it names
    assert_eq!(ha.replace("ridgeline explain", "ridgeline predict"), hb);
}

#[test]
fn names_from_a_config_are_escaped() {
    let dir = scratch("escape");
    let config = dir.join("config.json");
    std::fs::write(
        &config,
        r#"{"model_type": "llama", "ridgeline_name": "<script>alert('x')</script> & co",
            "hidden_size": 2048, "num_hidden_layers": 16, "num_attention_heads": 32,
            "num_key_value_heads": 8, "intermediate_size": 8192, "vocab_size": 32000,
            "torch_dtype": "bfloat16"}"#,
    )
    .unwrap();
    let file = dir.join("r.html");
    let out = run(&[
        "predict",
        "--model",
        config.to_str().unwrap(),
        "--gpu",
        "l4",
        "--html",
        file.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(&file).unwrap();
    check_self_contained(&html);
    assert!(html.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; co"));
    assert_eq!(svgs(&html), 3);
}

/// `CMD --model llama-3-8b --gpu GPU --html PATH`.
fn html_run(cmd: &str, gpu: &str, path: &Path) -> std::process::Output {
    run(&[
        cmd,
        "--model",
        "llama-3-8b",
        "--gpu",
        gpu,
        "--html",
        path.to_str().unwrap(),
    ])
}

#[test]
fn a_bad_name_or_a_failed_run_leaves_files_alone() {
    let dir = scratch("atomic");
    let txt = dir.join("report.txt");
    let out = html_run("predict", "h100", &txt);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("error: invalid --html: "), "{err}");
    assert!(!txt.exists());
    // an existing report stays as it was when the run fails
    let file = dir.join("old.html");
    std::fs::write(&file, "old").unwrap();
    let out = html_run("explain", "h10", &file);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "old");
    // a folder that does not exist: the error names --html, nothing is left behind
    let missing = dir.join("no/such/dir/r.html");
    let out = html_run("predict", "h100", &missing);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--html"));
    let left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left.len(), 1, "{left:?}");
    assert!(Path::new(&dir).join("old.html").exists());
}
