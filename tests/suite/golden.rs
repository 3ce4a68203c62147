//! Golden outputs: a fixed set of commands whose stdout (and chart files) are pinned in
//! `tests/golden/`. They pin format and structure: every command that takes an engine
//! runs under `--engine ideal` (the pure roofline, no fitted factor), so that a refit of
//! `data/engines.toml` moves none of them; the calibrated numbers are pinned in one
//! table instead ([`super::headline`]). A refactor must leave them unchanged; a deliberate change of output
//! (a bug fixed on purpose) is re-blessed with `RIDGELINE_BLESS=1 cargo test --test
//! suite golden::` and the diff of `tests/golden/` is reviewed and named in the commit.
//!
//! Text is compared token by token: everything but numbers must match exactly, and
//! numbers must agree to 1e-9 relative (a reordered floating-point sum may move the last
//! digit; a changed formula moves far more).

use std::path::{Path, PathBuf};
use std::process::Command;

/// One pinned command: a name, its arguments, the flag (if any) after which it writes a
/// chart file (the file is pinned too), and whether its numbers are pinned: a command
/// whose numbers are fitted factors with no ideal mode (`train` reads
/// `data/training.toml`; `calibrate` is the fit) pins its text and structure only, and
/// its calibrated numbers are in `tests/headline.tsv`.
struct Case {
    name: &'static str,
    args: &'static [&'static str],
    file_flag: Option<&'static str>,
    numbers: bool,
}

const fn case(name: &'static str, args: &'static [&'static str]) -> Case {
    Case {
        name,
        args,
        file_flag: None,
        numbers: true,
    }
}

const fn chart(name: &'static str, args: &'static [&'static str], flag: &'static str) -> Case {
    Case {
        name,
        args,
        file_flag: Some(flag),
        numbers: true,
    }
}

/// `c` with its numbers left unpinned (see [`Case`]).
const fn fitted(c: Case) -> Case {
    Case {
        numbers: false,
        ..c
    }
}

const CASES: &[Case] = &[
    case("hardware_json", &["hardware", "--json"]),
    case("hardware_show_h100", &["hardware", "show", "h100"]),
    case("models_json", &["models", "--json"]),
    case("models_text", &["models"]),
    case(
        "predict_llama3_8b_h100_json",
        &[
            "predict",
            "--model",
            "llama-3-8b",
            "--gpu",
            "h100",
            "--json",
            "--engine",
            "ideal",
        ],
    ),
    case(
        "predict_llama2_70b_a100x2_json",
        &[
            "predict",
            "--model",
            "llama-2-70b",
            "--gpu",
            "a100",
            "--gpus",
            "2",
            "--batch",
            "8",
            "--json",
            "--engine",
            "ideal",
        ],
    ),
    case(
        "predict_mixtral_4090_offload_json",
        &[
            "predict",
            "--model",
            "mixtral-8x7b",
            "--gpu",
            "rtx-4090",
            "--weights",
            "q4_k_m",
            "--offload",
            "cpu",
            "--engine",
            "ideal",
            "--json",
        ],
    ),
    case(
        "predict_llama2_70b_pp4_nf_json",
        &[
            "predict",
            "--model",
            "llama-2-70b",
            "--gpu",
            "l40s",
            "--gpus",
            "4",
            "--parallel",
            "pp",
            "--no-flash",
            "--batch",
            "3",
            "--prompt",
            "1000",
            "--gen",
            "0",
            "--engine",
            "ideal",
            "--json",
        ],
    ),
    case(
        "predict_gen1_prompt0_json",
        &[
            "predict",
            "--model",
            "qwen2.5-7b",
            "--gpu",
            "mi300x",
            "--prompt",
            "0",
            "--gen",
            "1",
            "--kv",
            "fp8",
            "--json",
            "--engine",
            "ideal",
        ],
    ),
    case(
        "predict_text",
        &[
            "predict",
            "--model",
            "llama-3-8b",
            "--gpu",
            "rtx-4090",
            "--engine",
            "ideal",
        ],
    ),
    case(
        "predict_markdown",
        &[
            "predict",
            "--model",
            "mistral-7b",
            "--gpu",
            "l4",
            "--weights",
            "awq-int4",
            "--markdown",
            "--engine",
            "ideal",
        ],
    ),
    case(
        "predict_max_json",
        &[
            "predict",
            "--model",
            "llama-3-8b",
            "--gpu",
            "rtx-4090",
            "--max",
            "--json",
            "--engine",
            "ideal",
        ],
    ),
    case(
        "predict_max_text",
        &[
            "predict",
            "--model",
            "llama-3-70b",
            "--gpu",
            "h100",
            "--gpus",
            "2",
            "--max",
            "--engine",
            "ideal",
        ],
    ),
    case(
        "explain_json",
        &[
            "explain",
            "--model",
            "llama-3-8b",
            "--gpu",
            "rtx-4090",
            "--batch",
            "4",
            "--json",
            "--engine",
            "ideal",
        ],
    ),
    case(
        "explain_text",
        &[
            "explain",
            "--model",
            "llama-2-70b",
            "--gpu",
            "a100",
            "--gpus",
            "4",
            "--engine",
            "ideal",
        ],
    ),
    fitted(case(
        "train_7b_zero3_json",
        &[
            "train",
            "--model",
            "llama-2-7b",
            "--gpu",
            "a100",
            "--gpus",
            "8",
            "--zero",
            "3",
            "--micro-batch",
            "4",
            "--seq",
            "4096",
            "--json",
        ],
    )),
    fitted(case(
        "train_qlora_json",
        &[
            "train",
            "--model",
            "llama-2-13b",
            "--gpu",
            "a100-40gb-sxm",
            "--method",
            "qlora",
            "--json",
        ],
    )),
    fitted(case(
        "train_3d_text",
        &[
            "train",
            "--model",
            "llama-3-70b",
            "--gpu",
            "h100",
            "--gpus",
            "64",
            "--tp",
            "8",
            "--pp",
            "4",
            "--zero",
            "1",
            "--recompute",
            "selective",
            "--seq",
            "8192",
        ],
    )),
    fitted(case(
        "train_offload_json",
        &[
            "train",
            "--model",
            "mistral-7b",
            "--gpu",
            "rtx-4090",
            "--method",
            "lora",
            "--lora-rank",
            "16",
            "--recompute",
            "full",
            "--optimizer",
            "adafactor",
            "--offload",
            "cpu",
            "--json",
        ],
    )),
    case(
        "sweep_csv",
        &[
            "sweep",
            "--model",
            "llama-3-8b,mixtral-8x7b",
            "--gpu",
            "h100,rtx-4090",
            "--gpus",
            "1,2",
            "--batch",
            "1,16",
            "--prompt",
            "128,2048",
            "--gen",
            "0,256",
            "--weights",
            "native,q4_k_m",
            "--engine",
            "ideal",
        ],
    ),
    case(
        "sweep_json",
        &[
            "sweep",
            "--model",
            "llama-2-70b",
            "--gpu",
            "a100,mi300x",
            "--gpus",
            "1..8:x2",
            "--batch",
            "1,64",
            "--kv",
            "native,fp8",
            "--engine",
            "ideal",
            "--json",
        ],
    ),
    case(
        "plan_json",
        &[
            "plan",
            "--model",
            "llama-2-70b",
            "--prompt",
            "1024",
            "--gen",
            "256",
            "--max-tpot-ms",
            "50",
            "--max-ttft-ms",
            "2000",
            "--json",
            "--engine",
            "ideal",
        ],
    ),
    case(
        "plan_text",
        &[
            "plan",
            "--model",
            "llama-3-8b",
            "--min-throughput",
            "3000",
            "--budget-usd-per-hour",
            "10",
            "--engine",
            "ideal",
        ],
    ),
    fitted(case(
        "calibrate_json",
        &[
            "calibrate",
            "--measurements",
            "data/measurements/measurements.csv",
            "--json",
        ],
    )),
    chart(
        "roofline_svg",
        &[
            "roofline",
            "--gpu",
            "h100,a100,l40s",
            "--model",
            "llama-3-70b",
            "--gpus",
            "4",
            "--batch",
            "32",
            "--engine",
            "ideal",
            "--out",
        ],
        "--out",
    ),
    chart(
        "predict_throughput_svg",
        &[
            "predict",
            "--model",
            "llama-3-8b",
            "--gpu",
            "h100",
            "--engine",
            "ideal",
            "--svg",
        ],
        "--svg",
    ),
    chart(
        "predict_memory_svg",
        &[
            "predict",
            "--model",
            "llama-3-70b",
            "--gpu",
            "h100",
            "--gpus",
            "2",
            "--chart",
            "memory",
            "--engine",
            "ideal",
            "--svg",
        ],
        "--svg",
    ),
    chart(
        "explain_roofline_svg",
        &[
            "explain",
            "--model",
            "llama-3-8b",
            "--gpu",
            "rtx-4090",
            "--batch",
            "4",
            "--engine",
            "ideal",
            "--svg",
        ],
        "--svg",
    ),
    fitted(chart(
        "train_zero_svg",
        &[
            "train",
            "--model",
            "llama-3-8b",
            "--gpu",
            "h100",
            "--gpus",
            "8",
            "--seq",
            "8192",
            "--svg",
        ],
        "--svg",
    )),
];

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

/// Splits text into alternating non-number and number tokens.
fn tokens(s: &str) -> Vec<(bool, &str)> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let mut start = 0;
    while i < b.len() {
        let starts_number =
            b[i].is_ascii_digit() || (b[i] == b'-' && i + 1 < b.len() && b[i + 1].is_ascii_digit());
        if starts_number {
            if start < i {
                out.push((false, &s[start..i]));
            }
            let n0 = i;
            i += 1;
            while i < b.len()
                && (b[i].is_ascii_digit()
                    || b[i] == b'.'
                    || ((b[i] == b'e' || b[i] == b'E')
                        && i + 1 < b.len()
                        && (b[i + 1].is_ascii_digit() || b[i + 1] == b'-' || b[i + 1] == b'+'))
                    || ((b[i] == b'-' || b[i] == b'+') && (b[i - 1] == b'e' || b[i - 1] == b'E')))
            {
                i += 1;
            }
            out.push((true, &s[n0..i]));
            start = i;
        } else {
            i += 1;
        }
    }
    if start < b.len() {
        out.push((false, &s[start..]));
    }
    out
}

/// `None` when equal (numbers to 1e-9 relative), else the first difference.
fn difference(expected: &str, actual: &str, numbers: bool) -> Option<String> {
    let (e, a) = (tokens(expected), tokens(actual));
    for (i, (x, y)) in e.iter().zip(&a).enumerate() {
        let same = match (x, y) {
            ((true, _), (true, _)) if !numbers => true,
            ((true, p), (true, q)) => match (p.parse::<f64>(), q.parse::<f64>()) {
                (Ok(u), Ok(v)) => u == v || (u - v).abs() <= 1e-9 * u.abs().max(v.abs()),
                _ => p == q,
            },
            _ => x == y,
        };
        if !same {
            let context: String = e[i.saturating_sub(6)..i]
                .iter()
                .map(|t| t.1)
                .collect::<String>();
            let tail: String = context.chars().rev().take(160).collect();
            let tail: String = tail.chars().rev().collect();
            return Some(format!(
                "after ...{tail}\n  expected {:?}\n  actual   {:?}",
                x.1, y.1
            ));
        }
    }
    if e.len() != a.len() {
        return Some(format!(
            "token counts differ: expected {}, actual {}",
            e.len(),
            a.len()
        ));
    }
    None
}

fn run_case(c: &Case, scratch: &Path) -> Vec<(String, String)> {
    let mut args: Vec<String> = c.args.iter().map(|s| s.to_string()).collect();
    let file = c.file_flag.map(|_| scratch.join(format!("{}.svg", c.name)));
    if let Some(f) = &file {
        args.push(f.display().to_string());
    }
    let out = Command::new(env!("CARGO_BIN_EXE_ridgeline"))
        .args(&args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("binary runs");
    assert!(
        out.status.success(),
        "{}: exit {:?}: {}",
        c.name,
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    // the scratch folder's name holds the process id: not part of the output
    let stdout = String::from_utf8(out.stdout).expect("utf-8 stdout");
    let stdout = stdout.replace(&scratch.display().to_string(), "<scratch>");
    let mut files = vec![(format!("{}.out", c.name), stdout)];
    if let Some(f) = file {
        let text = std::fs::read_to_string(&f).expect("chart written");
        files.push((format!("{}.svg", c.name), text));
    }
    files
}

#[test]
fn outputs_match_golden_files() {
    let bless = std::env::var_os("RIDGELINE_BLESS").is_some();
    let scratch = std::env::temp_dir().join(format!("ridgeline-golden-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).unwrap();
    let dir = golden_dir();
    let mut failures = Vec::new();
    for c in CASES {
        for (name, text) in run_case(c, &scratch) {
            let path = dir.join(&name);
            if bless {
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::write(&path, &text).unwrap();
                continue;
            }
            match std::fs::read_to_string(&path) {
                Ok(expected) => {
                    if let Some(d) = difference(&expected, &text, c.numbers) {
                        failures.push(format!("{name}: {d}"));
                    }
                }
                Err(e) => failures.push(format!("{name}: no golden file ({e})")),
            }
        }
    }
    let _ = std::fs::remove_dir_all(&scratch);
    assert!(
        failures.is_empty(),
        "outputs differ from tests/golden (RIDGELINE_BLESS=1 re-blesses after review):\n{}",
        failures.join("\n")
    );
}

#[test]
fn comparison_tolerates_rounding_but_not_changes() {
    let d = |a, b| difference(a, b, true);
    assert!(d("t 1.0000000000001 s", "t 1.0000000000002 s").is_none());
    assert!(d("t 1.5e-3 s", "t 0.0015 s").is_none());
    assert!(d("t 1.0 s", "t 1.001 s").is_some());
    assert!(d("bound memory", "bound compute").is_some());
    assert!(d("a 1", "a 1 b").is_some());
    assert!(d("x=-2.5e+3", "x=-2500").is_none());
    // a fitted case pins the words and the structure, not the numbers
    let words = |a, b| difference(a, b, false);
    assert!(words("compute 0.64 of 2 rows", "compute 0.66 of 2 rows").is_none());
    assert!(words("compute 0.64 of 2 rows", "memory 0.64 of 2 rows").is_some());
    assert!(words("a 1", "a 1 2").is_some());
}
