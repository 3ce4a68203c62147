//! The calibrated headline numbers, in one reviewed table (`tests/headline.tsv`): what
//! the bundled engine profiles (`data/engines.toml`) and training factors
//! (`data/training.toml`) make of a few typical questions. The golden files pin format
//! and structure under `--engine ideal`, which no refit moves; a refit moves these
//! numbers, and only here: rewrite the table with `RIDGELINE_BLESS=1 cargo test --test
//! suite headline::` and review its diff with the data files' in the same commit.
//!
//! Values are compared to 1e-9 relative (a reordered floating-point sum may move the
//! last digits; a changed factor moves far more).

use crate::support::cli::json;
use std::fmt::Write as _;
use std::path::Path;

/// One question: a name, the command's words (its `--json` output is read) and the
/// JSON pointers of the numbers it pins.
struct Headline {
    name: &'static str,
    args: &'static str,
    keys: &'static [&'static str],
}

const PREDICT_KEYS: &[&str] = &[
    "/generation/ttft_s",
    "/generation/tpot_s",
    "/generation/output_tokens_per_s",
    "/decode/tokens_per_s",
    "/prefill/tokens_per_s",
    "/memory/total_bytes",
    "/memory/max_batch",
];

const TRAIN_KEYS: &[&str] = &[
    "/step/time_s",
    "/step/tokens_per_s_per_gpu",
    "/step/mfu",
    "/memory/total_bytes",
];

const HEADLINES: &[Headline] = &[
    Headline {
        name: "llama-3-8b on h100, typical",
        args: "predict --model llama-3-8b --gpu h100",
        keys: PREDICT_KEYS,
    },
    Headline {
        name: "llama-2-70b on 2 x a100, batch 8, typical",
        args: "predict --model llama-2-70b --gpu a100 --gpus 2 --batch 8",
        keys: PREDICT_KEYS,
    },
    Headline {
        name: "mixtral-8x7b q4_k_m on rtx-4090, experts offloaded, llama.cpp",
        args: "predict --model mixtral-8x7b --gpu rtx-4090 --weights q4_k_m --offload cpu --engine llama.cpp",
        keys: PREDICT_KEYS,
    },
    Headline {
        name: "llama-2-70b on 4 x l40s, pipeline parallel, vllm",
        args: "predict --model llama-2-70b --gpu l40s --gpus 4 --parallel pp --batch 3 --prompt 1000 --engine vllm",
        keys: PREDICT_KEYS,
    },
    Headline {
        name: "deepseek-v3 fp8 on 8 x h200, expert parallel, batch 64, sglang",
        args: "predict --model deepseek-v3 --gpu h200 --gpus 8 --ep 8 --weights fp8 --batch 64 --engine sglang",
        keys: PREDICT_KEYS,
    },
    Headline {
        name: "gpt-oss-120b on h100, trt-llm",
        args: "predict --model gpt-oss-120b --gpu h100 --engine trt-llm",
        keys: PREDICT_KEYS,
    },
    Headline {
        name: "llama-2-7b ZeRO-3 on 8 x a100",
        args: "train --model llama-2-7b --gpu a100 --gpus 8 --zero 3 --micro-batch 4 --seq 4096",
        keys: TRAIN_KEYS,
    },
    Headline {
        name: "llama-3-70b 3D parallel on 64 x h100, megatron",
        args: "train --model llama-3-70b --gpu h100 --gpus 64 --tp 4 --pp 4 --stack megatron",
        keys: TRAIN_KEYS,
    },
    Headline {
        name: "llama-2-13b QLoRA on a100-40gb-sxm",
        args: "train --model llama-2-13b --gpu a100-40gb-sxm --method qlora",
        keys: TRAIN_KEYS,
    },
    Headline {
        name: "plan llama-2-70b within 50 ms per token and 2 s to the first",
        args: "plan --model llama-2-70b --prompt 1024 --gen 256 --max-tpot-ms 50 --max-ttft-ms 2000",
        keys: &[
            "/best/gpus",
            "/best/batch",
            "/best/tpot_s",
            "/best/usd_per_million_tokens",
        ],
    },
];

const TABLE: &str = "tests/headline.tsv";

/// The table as this code computes it: `name<TAB>key<TAB>value` lines.
fn computed() -> String {
    let mut out = String::from(
        "# The calibrated headline numbers (tests/suite/headline.rs): question, JSON key, value.\n\
         # Rewritten by RIDGELINE_BLESS=1 cargo test --test suite headline:: after a refit.\n",
    );
    for h in HEADLINES {
        let mut args: Vec<&str> = h.args.split_whitespace().collect();
        args.push("--json");
        let v = json(&args);
        for key in h.keys {
            let x = v
                .pointer(key)
                .and_then(serde_json::Value::as_f64)
                .unwrap_or_else(|| panic!("{}: no number at {key}", h.name));
            writeln!(out, "{}\t{key}\t{x:?}", h.name).unwrap();
        }
    }
    out
}

/// `(name, key) -> value` of a table's lines.
fn parse(text: &str) -> Vec<(String, String, f64)> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            assert_eq!(f.len(), 3, "{TABLE}: {l}");
            (f[0].into(), f[1].into(), f[2].parse().unwrap())
        })
        .collect()
}

/// The differences beyond 1e-9 relative between two tables, one line each.
fn differences(expected: &str, actual: &str) -> Vec<String> {
    let (e, a) = (parse(expected), parse(actual));
    let mut out = Vec::new();
    for (name, key, x) in &a {
        match e.iter().find(|(n, k, _)| n == name && k == key) {
            None => out.push(format!("{name} {key}: {x} is not in the table")),
            Some((_, _, y)) if (x - y).abs() > 1e-9 * y.abs().max(1e-300) => out.push(format!(
                "{name} {key}: {x} (table {y}, {:+.3}%)",
                100.0 * (x / y - 1.0)
            )),
            Some(_) => {}
        }
    }
    for (name, key, _) in &e {
        if !a.iter().any(|(n, k, _)| n == name && k == key) {
            out.push(format!("{name} {key}: in the table, no longer computed"));
        }
    }
    out
}

#[test]
fn headline_numbers_are_the_reviewed_table() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(TABLE);
    let now = computed();
    if std::env::var_os("RIDGELINE_BLESS").is_some() {
        std::fs::write(&path, &now).unwrap();
        return;
    }
    let table = std::fs::read_to_string(&path).unwrap();
    let diff = differences(&table, &now);
    assert!(
        diff.is_empty(),
        "{TABLE} is not what the bundled profiles give (after a deliberate refit, rewrite it \
         with RIDGELINE_BLESS=1 and review the diff):\n{}",
        diff.join("\n")
    );
}

#[test]
fn a_moved_number_or_a_missing_row_is_a_difference() {
    let table = "q\t/a\t2.0\nq\t/b\t1e-3\n";
    assert!(differences(table, table).is_empty());
    // 2.0 -> 2.000000001 is 5e-10 relative: rounding, not a change
    assert!(differences(table, "q\t/a\t2.000000001\nq\t/b\t1e-3\n").is_empty());
    let moved = differences(table, "q\t/a\t2.02\nq\t/b\t1e-3\n");
    assert_eq!(moved.len(), 1);
    assert!(moved[0].contains("+1.000%"), "{moved:?}");
    assert_eq!(differences(table, "q\t/a\t2.0\n").len(), 1);
    assert_eq!(
        differences(table, "q\t/a\t2.0\nq\t/b\t1e-3\nq\t/c\t1\n").len(),
        1
    );
}
