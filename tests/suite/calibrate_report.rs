//! `ridgeline calibrate --report`: its columns are those of the accuracy table (the
//! pure roofline, leave one source out) and of the fit (in sample); the flat bandwidth
//! factor is the median measured / roofline of the kind A rows; the worst rows are the
//! largest held-out errors, largest first; bad flags exit 2.
//!
//! tests/data/report-subset.csv holds 17 rows of data/measurements/measurements.csv
//! as published (three sources, kinds A, B, C and two ceilings).

use crate::support::cli;
use cli::{json, ok, ridgeline};
use ridgeline::calibrate::{
    Case, Kind, Mapped, accuracy, calibrate, calibration_report, calibration_report_from, cases,
    flat_engine, flat_factor, leave_one_source_out, parse_measurements, predict_case,
};
use ridgeline::engine::{Engine, EngineDb};

const SUBSET: &str = "tests/data/report-subset.csv";

fn mapped(text: &str, name: &str) -> Mapped {
    cases(&parse_measurements(text, name).unwrap()).unwrap()
}

fn subset() -> Mapped {
    mapped(&std::fs::read_to_string(SUBSET).unwrap(), SUBSET)
}

fn quiet(_: &str, _: usize, _: usize) {}

#[test]
fn columns_are_the_accuracy_table_s_and_the_fit_s() {
    let m = subset();
    let db = EngineDb::builtin().unwrap();
    let r = calibration_report(&m, db, 10, &quiet).unwrap();
    let a = accuracy(&m, db).unwrap();
    let cal = calibrate(&m, db, None).unwrap();
    let kinds: Vec<Kind> = r.kinds.iter().map(|k| k.kind).collect();
    assert_eq!(kinds, [Kind::A, Kind::B, Kind::C]);
    for (k, acc) in r.kinds.iter().zip(&a.kinds) {
        assert_eq!((k.kind, k.rows), (acc.kind, acc.rows));
        // the same functions on the same rows: equal to the last bit
        assert_eq!(k.ideal.median_pct, acc.ideal_pct, "kind {}", k.kind);
        assert_eq!(
            k.leave_one_source_out.median_pct, acc.leave_one_source_out_pct,
            "kind {}",
            k.kind
        );
        let fit = cal.summary.iter().find(|s| s.kind == k.kind).unwrap();
        assert_eq!(k.fitted.median_pct, fit.median_abs_error_after_pct);
        for s in [&k.ideal, &k.flat, &k.fitted, &k.leave_one_source_out] {
            assert!(s.p90_pct >= s.median_pct, "kind {}: {s:?}", k.kind);
        }
    }
    assert_eq!(r.sources, a.sources);
    assert_eq!(r.sources, 3);
}

#[test]
fn on_the_bundled_file_the_rows_are_the_readme_s() {
    // the suite's one calibration and leave-one-source-out run of the bundled file
    let held = &crate::shared::bundled_accuracy().leave_one_source_out;
    let (m, cal) = (crate::shared::mapped(), crate::shared::calibration());
    let r = calibration_report_from(m, cal, held, 4).unwrap();
    let row = |label: &str, f: fn(&ridgeline::calibrate::KindErrors) -> f64| {
        let cells: Vec<String> = r.kinds.iter().map(|k| format!(" {:.1}% |", f(k))).collect();
        format!("| {label} |{}\n", cells.concat())
    };
    let readme = include_str!("../../README.md");
    for line in [
        row("`ideal` roofline", |k| k.ideal.median_pct),
        row("leave one source out", |k| {
            k.leave_one_source_out.median_pct
        }),
    ] {
        assert!(readme.contains(&line), "README lacks {line}");
    }
    // docs/calibration.md's paragraph on the report
    let calibration = include_str!("../../docs/calibration.md");
    let words = calibration.split_whitespace().collect::<Vec<_>>().join(" ");
    let [a, b, c] = [0, 1, 2].map(|i| r.kinds[i].flat.median_pct);
    let flat = format!(
        "the flat factor is {:.3}, with median errors of {a:.1}% (A), {b:.1}% (B) and {c:.1}% (C)",
        r.flat_memory_efficiency
    );
    assert!(words.contains(&flat), "docs/calibration.md lacks '{flat}'");
    assert!(words.contains(
        "the four worst held-out rows are optimum's transformers + AutoGPTQ runs of \
         Llama-2-13B on an A100 and dstack's DeepSeek-R1 served tensor parallel over eight \
         MI300X and H200, predicted 2.8-4.0x as fast as measured"
    ));
    let named = [
        ("hf", "a100-80gb-sxm"),
        ("sglang-rocm", "mi300x"),
        ("vllm", "h200-sxm"),
    ];
    for w in &r.worst {
        let at = (w.row.engine.as_str(), w.row.hardware.as_str());
        assert!(named.contains(&at), "{}: {at:?}", w.row.id);
        // "2.8-4.0x" to one decimal
        let times = w.predicted / w.row.measured;
        assert!((2.75..4.05).contains(&times), "{}: {times}", w.row.id);
    }
    // in sample: the engines fitted to the file here, data/engines.toml (the same
    // fit, rounded) in the README
    let fitted = readme
        .lines()
        .find_map(|l| l.strip_prefix("| fitted engines (in sample) |"))
        .unwrap();
    let readme_fitted: Vec<f64> = fitted
        .split('|')
        .filter_map(|c| c.trim().strip_suffix('%')?.parse().ok())
        .collect();
    assert_eq!(readme_fitted.len(), r.kinds.len());
    for (k, v) in r.kinds.iter().zip(readme_fitted) {
        assert!(
            (k.fitted.median_pct - v).abs() <= 0.2,
            "{} vs {v}",
            k.fitted.median_pct
        );
    }
}

/// A handmade kind A row of Llama 3 8B at fp16 on an RTX 3090, measured `value` tok/s.
fn handmade(id: &str, kind: &str, batch: &str, value: &str) -> String {
    format!(
        "{id},{kind},RTX 3090 24GB,1,Llama-3-8B,f16/f16,{batch},0,128,llama.cpp,decode tokens/s,{value},tok/s,https://example.org/{id},\n"
    )
}

#[test]
fn the_flat_factor_is_the_median_measured_over_roofline_of_kind_a() {
    // Three rows of one configuration measured at 40, 50 and 70 tok/s, and a batched
    // row (kind B) that does not count. The roofline reads every weight once per token
    // but the input embedding table (Llama 3 unties it from lm_head):
    // (8,030,261,248 - 128,256 x 4,096) x 2 bytes = 15,009,849,344 bytes;
    // 936e9 B/s / 15.0098e9 B = 62.36 tok/s (the KV cache read takes it a little
    // lower). The ratios 40/P, 50/P, 70/P have the median 50/P = 50 / 62.36 = 0.802.
    let text = format!(
        "{}{}{}{}{}",
        "id,kind,gpu,num_gpus,model,precision,batch,prompt_len,gen_len,framework,metric,value,unit,source_url_or_repo_path,notes\n",
        handmade("h1", "A", "1", "40"),
        handmade("h2", "A", "1", "70"),
        handmade("h3", "A", "1", "50"),
        handmade("h4", "B", "8", "300"),
    );
    let m = mapped(&text, "hand.csv");
    let rows: Vec<&Case> = m.cases.iter().collect();
    let (f, n) = flat_factor(&rows).unwrap().unwrap();
    assert_eq!(n, 3);
    assert!((f - 50.0 / 62.36).abs() < 0.002, "{f}");
    // exactly the middle ratio under the library's own roofline
    let roofline = predict_case(&m.cases[2], &Engine::ideal()).unwrap();
    assert!(
        (f - 50.0 / roofline).abs() < 1e-12,
        "{f} vs {}",
        50.0 / roofline
    );
    // decode at batch 1 is bandwidth-bound: the flat engine predicts the median row
    let flat = flat_engine(f);
    let p = predict_case(&m.cases[2], &flat).unwrap();
    assert!((p / 50.0 - 1.0).abs() < 0.005, "{p}");
    let r = calibration_report(&m, EngineDb::builtin().unwrap(), 10, &quiet).unwrap();
    assert_eq!((r.flat_memory_efficiency, r.flat_rows), (f, 3));
    let a = r.kinds.iter().find(|k| k.kind == Kind::A).unwrap();
    // |errors| under the flat factor: 50/40 - 1 = 25%, 0%, 50/70 - 1 = -28.6%
    assert!((a.flat.median_pct - 25.0).abs() < 0.5, "{:?}", a.flat);
}

#[test]
fn worst_rows_are_the_largest_held_out_errors_largest_first() {
    let v = json(&[
        "calibrate",
        "--report",
        "--json",
        "--worst",
        "4",
        "--measurements",
        SUBSET,
    ]);
    let worst = v["worst"].as_array().unwrap();
    assert_eq!(worst.len(), 4);
    let held = leave_one_source_out(&subset(), EngineDb::builtin().unwrap()).unwrap();
    let mut all: Vec<f64> = held.iter().map(|h| h.error_pct.abs()).collect();
    all.sort_by(|a, b| b.total_cmp(a));
    let errors: Vec<f64> = worst
        .iter()
        .map(|w| w["error_pct"].as_f64().unwrap().abs())
        .collect();
    assert_eq!(errors, all[..4], "largest first");
    for w in worst {
        let h = held.iter().find(|h| h.id == w["id"]).unwrap();
        assert_eq!(w["error_pct"].as_f64().unwrap(), h.error_pct);
        assert_eq!(w["engine"], h.engine.as_str());
        // predicted is the held-out prediction: its error is error_pct
        let (p, m) = (
            w["predicted"].as_f64().unwrap(),
            w["measured"].as_f64().unwrap(),
        );
        assert!((100.0 * (p / m - 1.0) - h.error_pct).abs() < 1e-9);
    }
    // engines with at least 3 rows of a kind: llama.cpp A (6) and C (4), trt-llm B (4)
    let engines: Vec<(String, String, u64)> = v["engines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let s = |k: &str| e[k].as_str().unwrap().to_string();
            (s("kind"), s("engine"), e["rows"].as_u64().unwrap())
        })
        .collect();
    let want = [
        ("A", "llama.cpp", 6),
        ("B", "trt-llm", 4),
        ("C", "llama.cpp", 4),
    ];
    let want: Vec<(String, String, u64)> = want
        .iter()
        .map(|(k, e, n)| (k.to_string(), e.to_string(), *n))
        .collect();
    assert_eq!(engines, want);
}

#[test]
fn text_names_the_flat_factor_and_lists_ten_rows_by_default() {
    let text = ok(&["calibrate", "--report", "--measurements", SUBSET]);
    let m = subset();
    let rows: Vec<&Case> = m.cases.iter().collect();
    let (f, _) = flat_factor(&rows).unwrap().unwrap();
    assert!(
        text.contains(&format!("memory efficiency {f:.3} on every device")),
        "{text}"
    );
    assert!(text.contains("\n10 rows held out worst"), "{text}");
    let header = text.lines().find(|l| l.starts_with("kind  rows")).unwrap();
    for col in [
        "ideal roofline",
        &format!("flat {f:.3}"),
        "fitted (in sample)",
        "leave one source out",
    ] {
        assert!(header.contains(col), "{header}");
    }
}

#[test]
fn bad_flags_exit_2_with_one_line_naming_the_flag() {
    let cases: [(&[&str], &str); 8] = [
        (&["--report", "--save", "x.toml"], "--save"),
        (
            &["--report", "--save-intervals", "x.toml"],
            "--save-intervals",
        ),
        (&["--report", "--markdown"], "--markdown"),
        (&["--report", "--train"], "--train"),
        (&["--report", "--engine", "vllm"], "--engine"),
        (&["--worst", "3"], "--report"),
        (&["--report", "--worst", "0"], "--worst"),
        (&["--report", "--worst", "2.5"], "--worst"),
    ];
    for (args, flag) in cases {
        let out = ridgeline()
            .args(["calibrate", "--measurements", SUBSET])
            .args(args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(flag), "{args:?}: {err}");
        assert!(out.stdout.is_empty());
        assert!(!std::path::Path::new("x.toml").exists());
    }
}
