//! `ridgeline sweep` and the sweep library: LIST parsing on the command line, row counts
//! and order, CSV/JSON shapes from CONTRACT.md, invalid combinations, and the cached
//! evaluation path against the plain one.

use proptest::prelude::*;
use ridgeline::predict::Evaluator;
use ridgeline::prelude::*;
use ridgeline::sweep::{COLUMNS, Sweep, SweepLists};
use serde_json::Value;

use crate::support::cli;
use cli::{ok, run};

fn sweep_csv(args: &[&str]) -> (Vec<String>, Vec<Vec<String>>) {
    let mut all = vec!["sweep"];
    all.extend_from_slice(args);
    let out = run(&all);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let mut lines = text.lines();
    let header = lines.next().unwrap().split(',').map(String::from).collect();
    let rows = lines.map(csv_cells).collect();
    (header, rows)
}

/// The cells of one CSV line (RFC 4180: a quoted field may hold commas; quotes kept,
/// as the callers compare them trimmed).
fn csv_cells(line: &str) -> Vec<String> {
    let mut cells = vec![String::new()];
    let mut quoted = false;
    for ch in line.chars() {
        match ch {
            '"' => {
                quoted = !quoted;
                cells.last_mut().unwrap().push(ch);
            }
            ',' if !quoted => cells.push(String::new()),
            _ => cells.last_mut().unwrap().push(ch),
        }
    }
    assert_eq!(cells.len(), COLUMNS.len(), "{line}");
    cells
}

fn col(header: &[String], name: &str) -> usize {
    header
        .iter()
        .position(|h| h == name)
        .unwrap_or_else(|| panic!("no column {name}"))
}

#[test]
fn csv_header_has_the_contract_columns() {
    let (header, rows) = sweep_csv(&["--model", "llama-2-7b", "--gpu", "h100"]);
    for k in [
        "model",
        "gpu",
        "gpus",
        "batch",
        "prompt",
        "gen",
        "weights",
        "kv",
        "fits",
        "ttft_s",
        "tpot_s",
        "decode_tokens_per_s",
        "output_tokens_per_s",
        "total_bytes",
    ] {
        col(&header, k);
    }
    // defaults: one row at batch 1, prompt 512, gen 128
    assert_eq!(rows.len(), 1);
    let r = &rows[0];
    assert_eq!(r[col(&header, "batch")], "1");
    assert_eq!(r[col(&header, "prompt")], "512");
    assert_eq!(r[col(&header, "gen")], "128");
    assert_eq!(r[col(&header, "weights")], "fp16");
    assert_eq!(r[col(&header, "fits")], "true");
}

#[test]
fn rows_come_outer_to_inner_in_axis_order() {
    let (h, rows) = sweep_csv(&[
        "--model",
        "llama-2-7b,llama-3-8b",
        "--gpu",
        "h100,l4",
        "--batch",
        "1,4",
        "--prompt",
        "0,256",
        "--gen",
        "1,32",
        "--weights",
        "native,q4_0",
    ]);
    assert_eq!(rows.len(), 2 * 2 * 2 * 2 * 2 * 2);
    let key = |r: &Vec<String>| {
        (
            r[col(&h, "model")].clone(),
            r[col(&h, "gpu")].clone(),
            r[col(&h, "batch")].clone(),
            r[col(&h, "prompt")].clone(),
            r[col(&h, "gen")].clone(),
            r[col(&h, "weights")].clone(),
        )
    };
    let mut expect = Vec::new();
    for m in ["llama-2-7b", "llama-3-8b"] {
        for g in ["h100-sxm", "l4"] {
            for b in ["1", "4"] {
                for p in ["0", "256"] {
                    for t in ["1", "32"] {
                        for w in ["native", "q4_0"] {
                            let w = match (w, m) {
                                ("native", "llama-2-7b") => "fp16",
                                ("native", _) => "bf16",
                                _ => w,
                            };
                            expect.push((
                                m.to_string(),
                                g.to_string(),
                                b.to_string(),
                                p.to_string(),
                                t.to_string(),
                                w.to_string(),
                            ));
                        }
                    }
                }
            }
        }
    }
    let got: Vec<_> = rows.iter().map(key).collect();
    assert_eq!(got, expect);
}

#[test]
fn list_syntax_expands_on_the_command_line() {
    let (h, rows) = sweep_csv(&[
        "--model",
        "llama-2-7b",
        "--gpu",
        "h100",
        "--batch",
        "1..3,8..32:x2,100",
        "--prompt",
        "0..100:+50",
    ]);
    let batches: Vec<&str> = rows
        .iter()
        .map(|r| r[col(&h, "batch")].as_str())
        .step_by(3)
        .collect();
    assert_eq!(batches, ["1", "2", "3", "8", "16", "32", "100"]);
    let prompts: Vec<&str> = rows[..3]
        .iter()
        .map(|r| r[col(&h, "prompt")].as_str())
        .collect();
    assert_eq!(prompts, ["0", "50", "100"]);
}

#[test]
fn malformed_lists_exit_2_naming_the_item() {
    for (flag, value, needles) in [
        ("--batch", "64..1", vec!["--batch", "'64..1'", "backwards"]),
        (
            "--prompt",
            "1..x",
            vec!["--prompt", "'1..x'", "not a whole number"],
        ),
        ("--gen", "1,,2", vec!["--gen", "empty item"]),
        ("--batch", ":x1", vec!["--batch", "':x1'"]),
        (
            "--batch",
            "1..64:x1",
            vec!["--batch", "'1..64:x1'", "at least x2"],
        ),
        (
            "--prompt",
            "0..100:+0",
            vec!["--prompt", "'0..100:+0'", "at least +1"],
        ),
        (
            "--batch",
            "99999999999999999999999",
            vec!["--batch", "too large"],
        ),
        ("--gen", "1..100000000", vec!["--gen", "more than"]),
        ("--batch", "0", vec!["--batch", "'0'"]),
        ("--gpus", "0,1", vec!["--gpus", "'0'"]),
        (
            "--gpu",
            "h100,h10x",
            vec!["unknown hardware id 'h10x'", "h100-sxm"],
        ),
        (
            "--weights",
            "fp16,q4km",
            vec!["unknown format 'q4km'", "q4_k_m"],
        ),
        (
            "--engine",
            "typicl",
            vec!["unknown engine 'typicl'", "typical"],
        ),
        ("--model", "llama-2-7b,llama-99", vec!["llama-99"]),
    ] {
        let mut args = vec!["sweep"];
        for (f, v) in [("--model", "llama-2-7b"), ("--gpu", "h100")] {
            if f != flag {
                args.extend([f, v]);
            }
        }
        args.extend([flag, value]);
        let out = run(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            out.stdout.is_empty(),
            "{args:?} printed rows before failing"
        );
        let err = String::from_utf8_lossy(&out.stderr);
        for n in needles {
            assert!(err.contains(n), "{args:?}: stderr lacks {n:?}: {err}");
        }
    }
}

#[test]
fn invalid_combinations_become_rows_with_an_error() {
    let out = run(&[
        "sweep",
        "--model",
        "llama-2-7b",
        "--gpu",
        "h100",
        "--gpus",
        "1..4",
        "--batch",
        "1,2",
    ]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1 + 4 * 2);
    // 3 devices cannot split 32 heads: both batch rows of gpus 3 carry the reason
    let bad: Vec<&&str> = lines.iter().filter(|l| l.contains(",3,")).collect();
    assert_eq!(bad.len(), 2);
    for l in bad {
        assert!(l.contains("does not divide"), "{l}");
        assert!(l.contains(",false,,"), "{l}");
    }
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("2 of 8 configurations are invalid"), "{err}");
}

#[test]
fn json_rows_have_the_contract_keys() {
    let out = run(&[
        "sweep",
        "--model",
        "llama-2-7b",
        "--gpu",
        "h100,rtx-4090",
        "--gpus",
        "1,3",
        "--batch",
        "1..4",
        "--json",
    ]);
    assert!(out.status.success());
    assert!(
        out.stderr.iter().all(|&b| b != b'\r'),
        "no progress off a terminal"
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2 * 2 * 4);
    for r in rows {
        for k in COLUMNS {
            assert!(r.get(k).is_some(), "row lacks {k}: {r}");
        }
        if r["error"].is_null() {
            assert!(r["tpot_s"].as_f64().unwrap() > 0.0);
            assert!(r["total_bytes"].as_f64().unwrap() > 13e9);
        } else {
            assert!(r["tpot_s"].is_null());
            assert_eq!(r["gpus"], 3);
        }
    }
    // the 4090 has a price in the database: cost per token is known
    assert!(rows[8]["usd_per_million_tokens"].as_f64().unwrap() > 0.0);
    // --csv and --json together are a conflict
    let out = run(&[
        "sweep",
        "--model",
        "llama-2-7b",
        "--gpu",
        "h100",
        "--csv",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn out_file_receives_the_rows() {
    let dir = std::env::temp_dir().join(format!("ridgeline-sweep-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("grid.csv");
    let out = run(&[
        "sweep",
        "--model",
        "llama-3-8b",
        "--gpu",
        "l4",
        "--batch",
        "1..10",
        "--out",
        path.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    assert!(out.stdout.is_empty());
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.lines().count(), 11);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn cli_rows_match_predict_json() {
    let (h, rows) = sweep_csv(&[
        "--model",
        "llama-2-70b",
        "--gpu",
        "h100",
        "--gpus",
        "4",
        "--batch",
        "16",
        "--prompt",
        "1000",
        "--gen",
        "300",
        "--weights",
        "fp8",
    ]);
    let out = run(&[
        "predict",
        "--model",
        "llama-2-70b",
        "--gpu",
        "h100",
        "--gpus",
        "4",
        "--batch",
        "16",
        "--prompt",
        "1000",
        "--gen",
        "300",
        "--weights",
        "fp8",
        "--json",
    ]);
    let p: Value = serde_json::from_slice(&out.stdout).unwrap();
    let r = &rows[0];
    let num = |c: &str| r[col(&h, c)].parse::<f64>().unwrap();
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 * a.abs().max(b.abs());
    let g = &p["generation"];
    assert!(close(num("ttft_s"), g["ttft_s"].as_f64().unwrap()));
    assert!(close(num("tpot_s"), g["tpot_s"].as_f64().unwrap()));
    assert!(close(
        num("output_tokens_per_s"),
        g["output_tokens_per_s"].as_f64().unwrap()
    ));
    assert!(close(
        num("decode_tokens_per_s"),
        g["decode_tokens_per_s"].as_f64().unwrap()
    ));
    assert!(close(
        num("total_bytes"),
        p["memory"]["total_bytes"].as_f64().unwrap()
    ));
    assert_eq!(r[col(&h, "fits")], p["memory"]["fits"].to_string());
    // an expert-parallel layout with its all-to-all overlapped (the plain path)
    let words = [
        "--model",
        "deepseek-v3",
        "--gpu",
        "h100",
        "--gpus",
        "16",
        "--ep",
        "16",
        "--batch",
        "64",
        "--overlap-ep",
    ];
    let (h, rows) = sweep_csv(&words);
    let out = run(&[&["predict"][..], &words, &["--json"]].concat());
    let p: Value = serde_json::from_slice(&out.stdout).unwrap();
    let r = &rows[0];
    let num = |c: &str| r[col(&h, c)].parse::<f64>().unwrap();
    for key in ["ttft_s", "tpot_s", "output_tokens_per_s"] {
        assert!(
            close(num(key), p["generation"][key].as_f64().unwrap()),
            "{key}"
        );
    }
}

#[test]
fn grid_cells_follow_the_csv_order() {
    let (hw, en) = (HardwareDb::builtin().unwrap(), EngineDb::builtin().unwrap());
    let lists = SweepLists {
        model: "llama-2-7b,mistral-7b",
        gpu: "h100,a100",
        gpus: "1,2",
        batch: "1,8,64",
        prompt: "128,1024",
        gen_tokens: "16,256",
        kv: "native,fp8",
        ..SweepLists::default()
    };
    let s = Sweep::from_lists(&lists, hw, en).unwrap();
    let grid = s.grid().unwrap();
    assert_eq!(grid.tpot_s.shape(), &[2, 2, 2, 3, 2, 2, 1, 2, 1]);
    let mut csv = Vec::new();
    s.write_csv(&mut csv, &Default::default()).unwrap();
    let text = String::from_utf8(csv).unwrap();
    let tpot_col = COLUMNS.iter().position(|c| *c == "tpot_s").unwrap();
    let from_csv: Vec<f64> = text
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(tpot_col).unwrap().parse().unwrap())
        .collect();
    let from_grid: Vec<f64> = grid.tpot_s.iter().copied().collect();
    assert_eq!(from_csv, from_grid);
    // more batch, same everything else: slower per token, more tokens per second
    let t = &grid.tpot_s;
    let o = &grid.output_tokens_per_s;
    assert!(t[[0, 0, 0, 2, 0, 0, 0, 0, 0]] > t[[0, 0, 0, 0, 0, 0, 0, 0, 0]]);
    assert!(o[[0, 0, 0, 2, 0, 0, 0, 0, 0]] > o[[0, 0, 0, 0, 0, 0, 0, 0, 0]]);
    // fp8 KV halves the cache: less memory
    assert!(
        grid.total_bytes[[0, 0, 0, 2, 1, 1, 0, 1, 0]]
            < grid.total_bytes[[0, 0, 0, 2, 1, 1, 0, 0, 0]]
    );
}

#[test]
fn columns_hold_the_csv_cells() {
    use ridgeline::sweep::Column;
    // 2 x 2 x 50 x 100 = 20,000 rows: three chunks of 8,192, invalid rows (3 devices
    // divide neither model's heads) in all of them, each model with its own message
    let args = [
        "--model",
        "llama-2-7b,qwen3-8b",
        "--gpu",
        "h100",
        "--gpus",
        "1,3",
        "--batch",
        "1..50",
        "--prompt",
        "1..100",
        "--gen",
        "128",
    ];
    let (header, rows) = sweep_csv(&args);
    assert_eq!(rows.len(), 20_000);
    let (hw, en) = (HardwareDb::builtin().unwrap(), EngineDb::builtin().unwrap());
    let lists = SweepLists {
        model: "llama-2-7b,qwen3-8b",
        gpu: "h100",
        gpus: "1,3",
        batch: "1..50",
        prompt: "1..100",
        ..SweepLists::default()
    };
    let c = Sweep::from_lists(&lists, hw, en)
        .unwrap()
        .columns()
        .unwrap();
    assert_eq!(c.rows, rows.len());
    let names: Vec<&str> = c.columns.iter().map(|(n, _)| *n).collect();
    assert_eq!(names, header);
    let mut errors = std::collections::BTreeSet::new();
    for (j, (name, column)) in c.columns.iter().enumerate() {
        assert_eq!(column.len(), rows.len(), "{name}");
        for (i, row) in rows.iter().enumerate() {
            let cell = &row[j];
            match column {
                Column::Text { labels, codes } => {
                    let label = labels[codes[i] as usize].as_deref().unwrap_or("");
                    // the CSV quotes a field with a comma
                    assert_eq!(label, cell.trim_matches('"'), "{name} row {i}");
                    if *name == "error" && !label.is_empty() {
                        errors.insert(label.to_string());
                    }
                }
                Column::Count(v) => assert_eq!(v[i].to_string(), *cell, "{name} row {i}"),
                Column::Flag(v) => assert_eq!(v[i].to_string(), *cell, "{name} row {i}"),
                Column::Number(v) if cell.is_empty() => assert!(v[i].is_nan(), "{name} row {i}"),
                Column::Number(v) => {
                    assert_eq!(v[i], cell.parse::<f64>().unwrap(), "{name} row {i}")
                }
            }
        }
    }
    assert_eq!(errors.len(), 2, "{errors:?}");
    // the error labels are distinct: renumbered, not repeated, across chunks
    let Some(Column::Text { labels, .. }) = c.get("error") else {
        panic!("error column")
    };
    assert_eq!(labels.len(), 3);
}

const FORMATS: [Option<Format>; 7] = [
    None,
    Some(Format::Fp8),
    Some(Format::Int8),
    Some(Format::Q4KM),
    Some(Format::AwqInt4),
    Some(Format::Mxfp4),
    Some(Format::Nvfp4),
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// The cached evaluator used by sweeps and plans equals `Predictor::summary` on
    /// random models, devices and engines (drawn from every bundled one: latent and
    /// windowed attention, MoE with shared experts, state-space hybrids), layouts,
    /// formats and shapes (to rounding: 1e-12).
    #[test]
    fn optimised_summary_equals_plain(
        m in 0usize..1000,
        g in 0usize..1000,
        tp in 0u32..3,
        pp in any::<bool>(),
        w in 0..FORMATS.len(),
        kv8 in any::<bool>(),
        flash in any::<bool>(),
        e in 0usize..100,
        shapes in proptest::collection::vec((1u64..4096, 0u64..40_000, 0u64..9_000), 1..6),
    ) {
        let models = ModelDb::builtin().unwrap().models();
        let model = models[m % models.len()].clone();
        let devices = HardwareDb::builtin().unwrap().devices();
        let hw = &devices[g % devices.len()];
        let engines = EngineDb::builtin().unwrap().engines();
        let engine = &engines[e % engines.len()];
        let s = Scenario {
            gpus: 1 << tp,
            parallel: if pp { Parallel::Pp } else { Parallel::Tp },
            weights: FORMATS[w],
            kv: kv8.then_some(Format::Fp8),
            flash,
            ..Scenario::default()
        };
        let Ok(p) = Predictor::new(&model, hw, engine, &s) else { return Ok(()) };
        let mut ev = Evaluator::new(&p);
        for (b, prompt, gen_tokens) in shapes {
            // same batch twice in a row exercises the caches
            for _ in 0..2 {
                let (fast, plain) = (ev.summary(b, prompt, gen_tokens), p.summary(b, prompt, gen_tokens));
                let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 * a.abs().max(b.abs()).max(1e-300);
                prop_assert!(close(fast.prefill.time_s, plain.prefill.time_s));
                prop_assert!(close(fast.decode.time_s, plain.decode.time_s));
                prop_assert!(close(fast.decode.bytes, plain.decode.bytes));
                prop_assert!(close(fast.decode_total_s, plain.decode_total_s),
                    "{} vs {}", fast.decode_total_s, plain.decode_total_s);
                prop_assert!(close(fast.decode_total_roofline_s, plain.decode_total_roofline_s));
                prop_assert_eq!(fast.memory, plain.memory);
            }
        }
    }
}

#[test]
fn rate_sweep_rows_are_the_simulations_of_their_deployments() {
    use ridgeline::simulate::{Arrivals, Dist, Serving, Workload, simulate};
    use ridgeline::sweep::{RateOptions, Sweep, SweepLists};
    let (hw, engines) = (HardwareDb::builtin().unwrap(), EngineDb::builtin().unwrap());
    let lists = SweepLists {
        model: "llama-3-8b",
        gpu: "h100,a100",
        gpus: "1,2",
        prompt: "512",
        gen_tokens: "128",
        ..SweepLists::default()
    };
    let sweep = Sweep::from_lists(&lists, hw, engines).unwrap();
    let opts = RateOptions {
        requests: 100,
        seed: 7,
        ..RateOptions::default()
    };
    let rows = sweep.rate_rows(&[4.0, 30.0], opts).unwrap();
    // 2 devices x 2 counts x 2 rates, the rate varying fastest
    assert_eq!(rows.len(), 8);
    let order: Vec<(&str, u64, f64)> = rows
        .iter()
        .map(|r| (r.gpu.as_str(), r.gpus, r.rate_per_s))
        .collect();
    assert_eq!(
        order[..3],
        [
            ("h100-sxm", 1, 4.0),
            ("h100-sxm", 1, 30.0),
            ("h100-sxm", 2, 4.0)
        ]
    );
    // each row is exactly `simulate` of its deployment at its rate
    let model = ridgeline::model::ModelDb::builtin()
        .unwrap()
        .resolve("llama-3-8b")
        .unwrap();
    for r in &rows {
        let scenario = ridgeline::predict::Scenario {
            prompt: 512,
            gen_tokens: 128,
            gpus: r.gpus,
            ..Default::default()
        };
        let workload = Workload {
            arrivals: Arrivals::Poisson { rate: r.rate_per_s },
            requests: 100,
            prompt: Dist::Fixed { tokens: 512 },
            gen_tokens: Dist::Fixed { tokens: 128 },
            seed: 7,
        };
        let run = simulate(
            &model,
            hw.get(&r.gpu).unwrap(),
            engines.get("typical").unwrap(),
            &scenario,
            &Serving::default(),
            &workload,
        )
        .unwrap();
        assert_eq!(
            r.run.as_ref().unwrap(),
            &run,
            "{} x{} at {}",
            r.gpu,
            r.gpus,
            r.rate_per_s
        );
    }
    // the front end given (0 ms here): each row is its simulation with that front
    // end, every TTFT the fitted one's less it, nothing else moved
    let bare = sweep
        .rate_rows(
            &[4.0, 30.0],
            RateOptions {
                request_overhead_s: Some(0.0),
                ..opts
            },
        )
        .unwrap();
    for (a, b) in rows.iter().zip(&bare) {
        let (a, b) = (a.run.as_ref().unwrap(), b.run.as_ref().unwrap());
        let front = a.config.request_overhead_s;
        assert!(front > 0.0 && b.config.request_overhead_s == 0.0);
        assert!((a.ttft_s.mean - b.ttft_s.mean - front).abs() < 1e-12);
        assert!((a.e2e_s.mean - b.e2e_s.mean - front).abs() < 1e-9);
        // a time per output token is (e2e - ttft) / (gen - 1), each time shifted by the
        // front end: equal up to the rounding of that shift
        let (x, y) = (a.tpot_s, b.tpot_s);
        for (p, q) in [
            (x.mean, y.mean),
            (x.p50, y.p50),
            (x.p90, y.p90),
            (x.p99, y.p99),
        ] {
            assert!((p - q).abs() <= 1e-12 * q, "{p} vs {q}");
        }
        assert_eq!(
            a.throughput.output_tokens_per_s,
            b.throughput.output_tokens_per_s
        );
    }
    // with a draft model the rows are the simulations of the deployment drafting
    // with it (Llama 3.2 1B for Llama 3 8B, k = 3 accepted 70% of the time)
    let spec = ridgeline::predict::Speculation { k: 3, accept: 0.7 };
    let drafted = SweepLists {
        gpu: "h100",
        gpus: "1",
        spec: Some(spec),
        draft: "llama-3.2-1b",
        ..lists
    };
    let rows = Sweep::from_lists(&drafted, hw, engines)
        .unwrap()
        .rate_rows(&[4.0], opts)
        .unwrap();
    let draft = ridgeline::model::ModelDb::builtin()
        .unwrap()
        .resolve("llama-3.2-1b")
        .unwrap();
    let scenario = ridgeline::predict::Scenario {
        prompt: 512,
        gen_tokens: 128,
        spec: Some(spec),
        ..Default::default()
    };
    let sim = |draft| {
        simulate(
            &model,
            hw.get("h100").unwrap(),
            engines.get("typical").unwrap(),
            &scenario,
            &Serving {
                draft,
                ..Serving::default()
            },
            &Workload {
                arrivals: Arrivals::Poisson { rate: 4.0 },
                requests: 100,
                prompt: Dist::Fixed { tokens: 512 },
                gen_tokens: Dist::Fixed { tokens: 128 },
                seed: 7,
            },
        )
        .unwrap()
    };
    let with_draft = sim(Some(&draft));
    assert_eq!(rows[0].run.as_ref().unwrap(), &with_draft);
    // and the draft is felt: its steps are slower than the model's own head's
    assert!(with_draft.tpot_s.p50 > sim(None).tpot_s.p50);
    // the scheduler chooses the batch: a batch axis is refused, naming both
    let batched = SweepLists {
        batch: "1,8",
        ..lists
    };
    let e = Sweep::from_lists(&batched, hw, engines)
        .unwrap()
        .rate_rows(&[1.0], opts)
        .unwrap_err();
    assert!(
        e.to_string().contains("batch") && e.to_string().contains("rate"),
        "{e}"
    );
}

#[test]
fn rate_sweep_rows_that_cannot_serve_say_why() {
    // Llama-2-70B in bf16 (138 GB) on one 24 GiB card: an error row, not an abort
    let text = ok(&[
        "sweep",
        "--model",
        "llama-2-70b",
        "--gpu",
        "rtx-4090,h200",
        "--rate",
        "1",
        "--requests",
        "20",
    ]);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert!(lines[0].ends_with(",error"));
    // the 4090 row: its result columns empty, the error says what does not fit
    assert!(
        lines[1].starts_with("llama-2-70b,rtx-4090,1,"),
        "{}",
        lines[1]
    );
    assert!(lines[1].contains(",,,,,,,,,,,,"), "{}", lines[1]);
    // the H200 (141 GB) serves it: 20 requests completed, no error
    let h200: Vec<&str> = lines[2].split(',').collect();
    assert_eq!((h200[1], h200[9], h200[20]), ("h200-sxm", "20", ""));
}

/// The cached evaluator equals `Predictor::summary` for every bundled model under every
/// bundled engine (each on H200s, tensor parallel over as many of 8, 4, 2, 1 as its
/// heads divide over, in native formats and, where the engine runs them, fp8 weights
/// and KV), at shapes that cross the passes, windows and caches: prompt 0,
/// 1 and past a window, batches from 1 to past the matrix-vector rows.
#[test]
fn optimised_summary_equals_plain_for_every_model_and_engine() {
    let hw = HardwareDb::builtin().unwrap().get("h200").unwrap();
    let engines = EngineDb::builtin().unwrap().engines();
    let shapes = [
        (1, 0, 1),
        (1, 1, 2),
        (3, 1000, 7),
        (9, 5000, 300),
        (64, 4096, 129),
        (257, 9000, 2),
    ];
    let mut checked = 0;
    for model in ModelDb::builtin().unwrap().models() {
        for engine in engines {
            for fp8 in [false, true] {
                // the most devices (of 8, 4, 2, 1) the model's heads divide over
                let built = [8, 4, 2, 1].into_iter().find_map(|gpus| {
                    let s = Scenario {
                        gpus,
                        weights: fp8.then_some(Format::Fp8),
                        kv: fp8.then_some(Format::Fp8),
                        ..Scenario::default()
                    };
                    Predictor::new(model, hw, engine, &s).ok()
                });
                let Some(p) = built else {
                    assert!(fp8, "{} under {} builds on no layout", model.id, engine.id);
                    continue;
                };
                let mut ev = Evaluator::new(&p);
                for &(b, prompt, gen_tokens) in &shapes {
                    for _ in 0..2 {
                        let (fast, plain) = (
                            ev.summary(b, prompt, gen_tokens),
                            p.summary(b, prompt, gen_tokens),
                        );
                        let close = |a: f64, b: f64| {
                            (a - b).abs() <= 1e-12 * a.abs().max(b.abs()).max(1e-300)
                        };
                        let what = format!(
                            "{} under {} (fp8 {fp8}), batch {b}, prompt {prompt}, gen {gen_tokens}",
                            model.id, engine.id
                        );
                        assert!(close(fast.prefill.time_s, plain.prefill.time_s), "{what}");
                        assert!(close(fast.decode.time_s, plain.decode.time_s), "{what}");
                        assert!(
                            close(fast.decode_total_s, plain.decode_total_s),
                            "{what}: {} vs {}",
                            fast.decode_total_s,
                            plain.decode_total_s
                        );
                        assert_eq!(fast.memory, plain.memory, "{what}");
                    }
                }
                checked += 1;
            }
        }
    }
    // every model under every engine in native formats, and most in fp8 too
    let native = ModelDb::builtin().unwrap().models().len() * engines.len();
    assert!(
        checked >= native + native / 2,
        "{checked} of {}",
        2 * native
    );
}
