//! docs/reference.md against the program, both ways, so that the reference cannot drift:
//!
//! - every key path of the `--json` documents of a fixed set of commands is listed in the
//!   key table of its command's section, with a type that allows the value printed; every
//!   key listed for `predict`, `predict --max`, `plan` and `calibrate --report` is printed
//!   by one of them;
//! - the `sweep` CSV columns are `ridgeline::sweep::COLUMNS`, in order, and the
//!   measurements CSV columns are `ridgeline::calibrate::COLUMNS`;
//! - the identifier tables (devices, models, formats, engines) are the built-in ones;
//! - the option tables hold every flag of `--help`, and nothing else;
//! - the hardware and engine TOML examples load;
//! - every `ridgeline ...` command of the README's sh blocks exits 0 when run from a
//!   scratch folder holding a copy of `examples/data` (and `data/measurements`).
//!
//! Key tables are Markdown tables whose header starts with `key`; their first cell is
//! one backticked path: objects joined by `.`, `[]` for the elements of an array (a
//! document that is an array starts with `[]`), `*` for any key of a map. Sections are
//! the headings; a table belongs to the section of the nearest heading above it, and a
//! section runs to the next heading of the same or a higher level.

use ridgeline::dtype::{FORMAT_NAMES, Format};
use ridgeline::engine::EngineDb;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_ridgeline");
const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const DOC: &str = include_str!("../../docs/reference.md");
const README: &str = include_str!("../../README.md");

// ---------------------------------------------------------------------------------
// Running the binary

fn run_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .output()
        .expect("the binary runs")
}

/// Runs `args` from the repository root and parses its one JSON document.
fn json_args(args: &[&str]) -> Value {
    let out = run_in(Path::new(ROOT), args);
    assert!(
        out.status.success(),
        "ridgeline {}: exit {:?}: {}",
        args.join(" "),
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("ridgeline {}: not one JSON document: {e}", args.join(" ")))
}

/// [`json_args`] of a command line without quoting (words split at spaces).
fn json(line: &str) -> Value {
    json_args(&line.split_whitespace().collect::<Vec<_>>())
}

/// A fresh scratch folder outside the repository.
fn scratch(tag: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("ridgeline-reference-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}

// ---------------------------------------------------------------------------------
// Reading the reference

/// The text of a heading line (`### `predict --json`` -> `predict --json`) and its level.
fn heading(line: &str) -> Option<(usize, String)> {
    let level = line.chars().take_while(|&c| c == '#').count();
    if level == 0 || !line[level..].starts_with(' ') {
        return None;
    }
    Some((level, line[level..].trim().replace('`', "")))
}

/// The lines of the document outside fenced code blocks, with their heading (if any).
fn prose(doc: &str) -> Vec<(&str, Option<(usize, String)>)> {
    let mut fenced = false;
    let mut out = Vec::new();
    for line in doc.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            out.push((line, heading(line)));
        }
    }
    out
}

/// The lines of the section titled `title` (its heading excluded).
fn section<'d>(doc: &'d str, title: &str) -> Vec<&'d str> {
    let lines = prose(doc);
    let start = lines
        .iter()
        .position(|(_, h)| h.as_ref().is_some_and(|(_, t)| t == title))
        .unwrap_or_else(|| panic!("docs/reference.md has no heading '{title}'"));
    let level = lines[start].1.as_ref().unwrap().0;
    lines[start + 1..]
        .iter()
        .take_while(|(_, h)| h.as_ref().is_none_or(|(l, _)| *l > level))
        .map(|(l, _)| *l)
        .collect()
}

/// The Markdown tables among `lines`: each its header cells and rows of cells.
fn tables(lines: &[&str]) -> Vec<(Vec<String>, Vec<Vec<String>>)> {
    let cells = |l: &str| -> Vec<String> {
        let l = l.trim().trim_start_matches('|').trim_end_matches('|');
        l.split('|').map(|c| c.trim().to_string()).collect()
    };
    let mut out = Vec::new();
    let mut i = 0;
    while i + 1 < lines.len() {
        if lines[i].starts_with('|') && lines[i + 1].starts_with("|--") {
            let header = cells(lines[i]);
            let mut rows = Vec::new();
            let mut j = i + 2;
            while j < lines.len() && lines[j].starts_with('|') {
                let row = cells(lines[j]);
                assert_eq!(
                    row.len(),
                    header.len(),
                    "docs/reference.md: a row with {} cells under a header of {}: {}",
                    row.len(),
                    header.len(),
                    lines[j]
                );
                rows.push(row);
                j += 1;
            }
            out.push((header, rows));
            i = j;
        } else {
            i += 1;
        }
    }
    out
}

/// The rows of the tables of `title` whose first header cell is `first`.
fn rows(title: &str, first: &str) -> Vec<Vec<String>> {
    let rows: Vec<Vec<String>> = tables(&section(DOC, title))
        .into_iter()
        .filter(|(h, _)| h[0] == first)
        .flat_map(|(_, r)| r)
        .collect();
    assert!(!rows.is_empty(), "section '{title}' has no '{first}' table");
    rows
}

/// The one backticked name of a first cell (`` `ops[].name` `` -> `ops[].name`).
fn ticked(cell: &str) -> String {
    let inner = cell
        .strip_prefix('`')
        .and_then(|c| c.strip_suffix('`'))
        .filter(|c| !c.contains('`'))
        .unwrap_or_else(|| panic!("docs/reference.md: '{cell}' is not one `name`"));
    inner.to_string()
}

/// The backticked names of a cell (`` `a`, `b` `` -> [a, b]).
fn all_ticked(cell: &str) -> Vec<String> {
    cell.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// The documented keys of a section: path -> type.
fn keys(title: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for r in rows(title, "key") {
        let key = ticked(&r[0]);
        let ty = r[1].clone();
        assert!(
            out.insert(key.clone(), ty).is_none(),
            "section '{title}' lists `{key}` twice"
        );
    }
    out
}

/// Whether the type cell `ty` (`number or null`) allows `v`.
fn type_allows(ty: &str, v: &Value) -> bool {
    ty.split(" or ")
        .any(|alt| match alt.split_whitespace().next().unwrap_or("") {
            "string" => v.is_string(),
            "integer" => v.is_u64() || v.is_i64(),
            "number" => v.is_number(),
            "boolean" => v.is_boolean(),
            "object" => v.is_object(),
            "array" => v.is_array(),
            "null" => v.is_null(),
            other => panic!("docs/reference.md: unknown type '{other}' in '{ty}'"),
        })
}

/// Whether the documented `pattern` (`*` for any map key) names `path`.
fn names(pattern: &str, path: &str) -> bool {
    let (p, q): (Vec<&str>, Vec<&str>) = (pattern.split('.').collect(), path.split('.').collect());
    p.len() == q.len() && p.iter().zip(&q).all(|(a, b)| *a == "*" || a == b)
}

// ---------------------------------------------------------------------------------
// Key paths of documents

/// Every key path of `v` with the values found there: objects recursively, arrays by
/// their elements (`ops[].name`; a root array gives `[].id`).
fn paths(v: &Value) -> BTreeMap<String, Vec<Value>> {
    fn walk(v: &Value, path: &str, out: &mut BTreeMap<String, Vec<Value>>) {
        match v {
            Value::Object(m) => {
                for (k, x) in m {
                    let p = if path.is_empty() {
                        k.clone()
                    } else {
                        format!("{path}.{k}")
                    };
                    out.entry(p.clone()).or_default().push(x.clone());
                    walk(x, &p, out);
                }
            }
            Value::Array(a) => {
                for x in a.iter().filter(|x| x.is_object()) {
                    walk(x, &format!("{path}[]"), out);
                }
            }
            _ => {}
        }
    }
    let mut out = BTreeMap::new();
    walk(v, "", &mut out);
    out
}

/// Problems of the paths of `produced` against the keys of section `title`: paths not
/// documented, values the documented type does not allow.
fn undocumented(title: &str, produced: &BTreeMap<String, Vec<Value>>, problems: &mut Vec<String>) {
    let doc = keys(title);
    for (path, values) in produced {
        match doc.iter().find(|(k, _)| names(k, path)) {
            None => problems.push(format!("`{path}` is printed but not in '{title}'")),
            Some((k, ty)) => {
                for v in values.iter().filter(|v| !type_allows(ty, v)) {
                    problems.push(format!(
                        "`{path}`: {v} is not '{ty}' as '{title}' says for `{k}`"
                    ));
                }
            }
        }
    }
}

/// Problems of the keys of section `title` that none of `produced` prints.
fn unproduced(title: &str, produced: &BTreeMap<String, Vec<Value>>, problems: &mut Vec<String>) {
    for k in keys(title).keys() {
        if !produced.keys().any(|p| names(k, p)) {
            problems.push(format!(
                "`{k}` is in '{title}' but no command of the test prints it"
            ));
        }
    }
}

/// The paths of several documents together.
fn union(docs: &[Value]) -> BTreeMap<String, Vec<Value>> {
    let mut out: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for d in docs {
        for (k, mut v) in paths(d) {
            out.entry(k).or_default().append(&mut v);
        }
    }
    out
}

/// `produced` with `prefix` taken off the paths that have it (the others dropped).
fn strip(produced: &BTreeMap<String, Vec<Value>>, prefix: &str) -> BTreeMap<String, Vec<Value>> {
    produced
        .iter()
        .filter_map(|(k, v)| k.strip_prefix(prefix).map(|k| (k.to_string(), v.clone())))
        .collect()
}

fn assert_none(problems: &[String]) {
    assert!(
        problems.is_empty(),
        "docs/reference.md and the program disagree:\n  {}",
        problems.join("\n  ")
    );
}

// ---------------------------------------------------------------------------------
// JSON documents

fn repo(p: &str) -> String {
    Path::new(ROOT).join(p).display().to_string()
}

#[test]
fn predict_and_explain_keys_are_documented_both_ways() {
    let model = repo("examples/data/my-model/config.json");
    let predictions = [
        json("predict --model llama-3-8b --gpu h100 --json"),
        // offload and notes
        json("predict --model llama-2-70b --gpu rtx-4090 --offload cpu --weights q4_k_m --json"),
        // pipeline parallel, no prompt, MoE, naive attention, a nearest peak
        json(
            "predict --model mixtral-8x7b --gpu t4 --gpus 2 --parallel pp --prompt 0 --weights fp8 --no-flash --json",
        ),
        json_args(&[
            "predict", "--model", &model, "--gpu", "l40s", "--batch", "8", "--json",
        ]),
        // sliding windows
        json("predict --model gemma-3-4b --gpu l4 --json"),
        // expert parallelism and speculative decoding
        json(
            "predict --model qwen3-30b-a3b --gpu h100 --gpus 4 --ep 4 --spec-k 3 --spec-accept 0.7 --json",
        ),
        // Mamba-2 state-space blocks
        json("predict --model nemotron-h-56b --gpu h200 --gpus 2 --json"),
        // a checkpoint's own expert format (mxfp4 experts + bf16)
        json("predict --model gpt-oss-20b --gpu h100 --json"),
        // chunked attention (Llama 4)
        json("predict --model llama-4-scout --gpu h100 --gpus 8 --json"),
        // factors fitted on one device (vLLM on ROCm: MI300X), on another
        json("predict --model llama-3-8b --gpu mi325x --engine vllm-rocm --json"),
    ];
    let mut problems = Vec::new();
    let all = union(&predictions);
    undocumented("predict --json", &all, &mut problems);
    unproduced("predict --json", &all, &mut problems);
    assert!(
        predictions[1]["notes"]
            .as_array()
            .is_some_and(|n| !n.is_empty()),
        "the offload prediction should carry a note"
    );

    let limits = [
        json("predict --model llama-3-8b --gpu rtx-4090 --max --json"),
        json("predict --model llama-2-7b --gpu a100 --gpus 2 --max --json"),
    ];
    let all = union(&limits);
    undocumented("predict --max --json", &all, &mut problems);
    unproduced("predict --max --json", &all, &mut problems);

    let explained = json("explain --model llama-3-8b --gpu rtx-4090 --batch 4 --json");
    undocumented("explain --json", &paths(&explained), &mut problems);

    // roofline --json: `out`, and a predict document per device
    let dir = scratch("roofline");
    let svg = dir.join("roof.svg").display().to_string();
    let roof = json_args(&[
        "roofline",
        "--gpu",
        "h100,a100",
        "--model",
        "llama-3-8b",
        "--out",
        &svg,
        "--json",
    ]);
    let p = paths(&roof);
    let own: BTreeMap<String, Vec<Value>> = p
        .iter()
        .filter(|(k, _)| !k.starts_with("predictions[]."))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    undocumented("roofline --json", &own, &mut problems);
    undocumented(
        "predict --json",
        &strip(&p, "predictions[]."),
        &mut problems,
    );
    let _ = std::fs::remove_dir_all(dir);
    assert_none(&problems);
}

#[test]
fn simulate_keys_are_documented_both_ways() {
    let runs = [
        json(
            "simulate --model llama-3-8b --gpu h100 --rate 5 --requests 50 --slo-ttft-ms 100 --slo-tpot-ms 20 --json",
        ),
        json("simulate --model llama-3-8b --gpu a100 --disagg 1:1 --rate 2 --requests 30 --json"),
        json("simulate --model llama-3-8b --gpu l4 --concurrency 4 --requests 20 --json"),
    ];
    let sweep = json("simulate --model llama-3-8b --gpu h100 --rate 5,200 --requests 100 --json");
    assert!(
        sweep["knee"].is_object(),
        "200 requests/s saturates one H100"
    );
    let mut problems = Vec::new();
    let mut all = union(&runs);
    for (k, mut v) in strip(&paths(&sweep), "rows[].") {
        all.entry(k).or_default().append(&mut v);
    }
    undocumented("simulate --json", &all, &mut problems);
    unproduced("simulate --json", &all, &mut problems);
    let top: BTreeMap<String, Vec<Value>> = paths(&sweep)
        .into_iter()
        .filter(|(k, _)| !k.starts_with("rows[]."))
        .collect();
    undocumented("simulate --json (several rates)", &top, &mut problems);
    unproduced("simulate --json (several rates)", &top, &mut problems);
    assert_none(&problems);
}

#[test]
fn every_op_name_is_in_the_enumeration() {
    use ridgeline::model::graph::OpKind;
    let row = rows("Enumerations in JSON", "where")
        .into_iter()
        .find(|r| r[0] == "`ops[].name`")
        .expect("an ops[].name row");
    let listed = all_ticked(&row[1]);
    let missing: Vec<&str> = OpKind::ALL
        .iter()
        .map(|k| k.name())
        .filter(|n| !listed.iter().any(|l| l == n))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/reference.md's ops[].name values lack {missing:?}"
    );
}

#[test]
fn train_keys_are_documented() {
    let reports = [
        json(
            "train --model llama-2-7b --gpu a100 --gpus 8 --zero 3 --micro-batch 4 --seq 4096 --json",
        ),
        json("train --model llama-2-13b --gpu a100-40gb-sxm --method lora --json"),
        // 3D parallel, interleaved, optimizer offload
        json(
            "train --model llama-3-70b --gpu h100 --gpus 64 --tp 8 --pp 4 --zero 1 --virtual-stages 2 --offload cpu --json",
        ),
    ];
    let mut problems = Vec::new();
    undocumented("train --json", &union(&reports), &mut problems);
    assert_none(&problems);
}

#[test]
fn plan_keys_are_documented_both_ways() {
    let plans = [
        json(
            "plan --model llama-2-70b --prompt 1024 --gen 256 --max-tpot-ms 50 --max-ttft-ms 2000 --json",
        ),
        // nothing meets the target
        json("plan --model llama-2-70b --prompt 1024 --gen 256 --max-tpot-ms 0.5 --json"),
        // devices without a price (best by tokens/s per device)
        json("plan --model llama-3-8b --gpu h800-sxm --gpus 1,2 --json"),
        // speculative decoding with a draft model
        json(
            "plan --model llama-3.1-8b --gpu h100 --gpus 1 --weights fp8 --kv fp8 --spec-k 3 --spec-accept 0.7 --draft llama-3.2-1b --json",
        ),
        // a rate: replicas, the rate per replica, what limits it
        json(
            "plan --model llama-3-8b --gpu l4,h800-sxm --gpus 1 --weights fp8 --kv fp8 --rate 10 --p99-ttft-ms 2000 --p99-tpot-ms 100 --requests 100 --json",
        ),
        // a rate a layout cannot serve: listed with its reason
        json(
            "plan --model llama-3-8b --gpu rtx-4080 --gpus 1 --weights bf16 --kv fp8 --rate 10 --p99-ttft-ms 2000 --p99-tpot-ms 100 --requests 30 --json",
        ),
        // expert-parallel layouts with their all-to-all overlapped, their routing uneven,
        // the routed experts in a format of their own
        json(
            "plan --model qwen3-30b-a3b --gpu h100 --gpus 8 --max-tpot-ms 50 --overlap-ep --expert-imbalance 1.5 --expert-weights fp8 --json",
        ),
    ];
    assert!(plans[0]["best"].is_object() && plans[1]["best"].is_null());
    let mut problems = Vec::new();
    let all = union(&plans);
    undocumented("plan --json", &all, &mut problems);
    unproduced("plan --json", &all, &mut problems);
    assert_none(&problems);
}

#[test]
fn plan_train_keys_are_documented_both_ways() {
    let base = "plan --train --model llama-2-7b --tokens 200M --gpus 1,2,4 --json";
    let plans = [
        // a deadline the cheapest misses: next cheaper configurations lacking time and memory
        json(&format!("{base} --gpu a100,rtx-4090 --max-hours 6")),
        // instance shapes
        json(&format!("{base} --instances --gpu a10g")),
        // nothing meets the deadline
        json(&format!("{base} --gpu rtx-4090 --max-hours 0.01")),
    ];
    assert!(plans[0]["best"].is_object() && plans[2]["best"].is_null());
    let mut problems = Vec::new();
    let all = union(&plans);
    undocumented("plan --train --json", &all, &mut problems);
    unproduced("plan --train --json", &all, &mut problems);
    assert_none(&problems);
}

#[test]
fn kernels_keys_are_documented_both_ways() {
    let list = json("kernels --json");
    let p = paths(&list);
    let mut problems = Vec::new();
    undocumented("kernels --json", &p, &mut problems);
    unproduced("kernels --json", &p, &mut problems);
    assert_none(&problems);
}

#[test]
fn instances_keys_are_documented_both_ways() {
    let dir = scratch("instances");
    let file = dir.join("override.toml");
    let example = code_blocks(DOC, "toml")[3].join("\n");
    std::fs::write(
        &file,
        example.replace("my-4x-h100", "p5.48xlarge") + "\noverride = true\n",
    )
    .unwrap();
    let list = json_args(&[
        "instances",
        "--json",
        "--instances-file",
        file.to_str().unwrap(),
    ]);
    let p = paths(&list);
    let mut problems = Vec::new();
    undocumented("instances --json", &p, &mut problems);
    unproduced("instances --json", &p, &mut problems);
    assert_none(&problems);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn sweep_columns_are_documented_in_order() {
    let columns: Vec<String> = rows("sweep columns", "column")
        .iter()
        .map(|r| ticked(&r[0]))
        .collect();
    assert_eq!(
        columns,
        ridgeline::sweep::COLUMNS.to_vec(),
        "docs/reference.md's sweep columns are not ridgeline::sweep::COLUMNS"
    );
    let types: BTreeMap<String, String> = rows("sweep columns", "column")
        .iter()
        .map(|r| (ticked(&r[0]), r[1].clone()))
        .collect();
    // llama-3-8b's 32 heads do not split over 3 devices: error rows
    let args: Vec<&str> = "sweep --model llama-3-8b,llama-2-70b --gpu h100,l4 --gpus 1,3 \
                           --batch 1,64 --prompt 0,512"
        .split_whitespace()
        .collect();
    let csv = run_in(Path::new(ROOT), &args);
    assert!(csv.status.success());
    let text = String::from_utf8(csv.stdout).unwrap();
    assert_eq!(
        text.lines().next(),
        Some(ridgeline::sweep::COLUMNS.join(",").as_str())
    );
    let v = json_args(&[&args[..], &["--json"]].concat());
    let mut problems = Vec::new();
    let p = paths(&v);
    let top: BTreeMap<String, Vec<Value>> = p
        .iter()
        .filter(|(k, _)| !k.starts_with("rows[]."))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    undocumented("sweep --json", &top, &mut problems);
    let rows_v = v["rows"].as_array().unwrap();
    assert_eq!(rows_v.len(), 2 * 2 * 2 * 2 * 2);
    assert!(
        rows_v.iter().any(|r| r["error"].is_string()),
        "no error row"
    );
    for (path, values) in strip(&p, "rows[].") {
        match types.get(&path) {
            None => problems.push(format!("`rows[].{path}` is printed but is no sweep column")),
            Some(ty) => {
                for v in values.iter().filter(|v| !type_allows(ty, v)) {
                    problems.push(format!("sweep column `{path}`: {v} is not '{ty}'"));
                }
            }
        }
    }
    for r in rows_v {
        assert_eq!(r.as_object().unwrap().len(), columns.len(), "{r}");
    }
    assert_none(&problems);
}

#[test]
fn hardware_and_model_keys_are_documented() {
    let mut problems = Vec::new();
    for id in ["h100", "4090", "m4-max"] {
        let v = json_args(&["hardware", "show", id, "--json"]);
        undocumented("hardware show ID --json", &paths(&v), &mut problems);
    }
    // `hardware --json` is an array of `hardware show` documents
    let list = json("hardware --json");
    let p = paths(&list);
    assert!(p.keys().all(|k| k.starts_with("[].")), "{:?}", p.keys());
    undocumented("hardware show ID --json", &strip(&p, "[]."), &mut problems);
    undocumented(
        "models --json",
        &paths(&json("models --json")),
        &mut problems,
    );
    assert_none(&problems);
}

#[test]
fn calibrate_keys_are_documented() {
    let mut problems = Vec::new();
    let fits = [
        json("calibrate --measurements examples/data/my-bench.csv --engine vllm-rocm --json"),
        // every engine, device ceilings, training rows skipped
        json("calibrate --measurements data/measurements/measurements.csv --json"),
    ];
    assert!(fits[1]["skipped"].as_array().is_some_and(|s| !s.is_empty()));
    undocumented("calibrate --json", &union(&fits), &mut problems);
    let train = json("calibrate --train --measurements data/measurements/measurements.csv --json");
    undocumented("calibrate --train --json", &paths(&train), &mut problems);
    assert_none(&problems);
}

#[test]
fn calibrate_report_keys_are_documented_both_ways() {
    let mut problems = Vec::new();
    // three publications, an engine with 3+ rows of each kind A, B, C
    let report = json("calibrate --report --measurements tests/data/report-subset.csv --json");
    assert!(report["engines"].as_array().is_some_and(|e| !e.is_empty()));
    let produced = paths(&report);
    undocumented("calibrate --report --json", &produced, &mut problems);
    unproduced("calibrate --report --json", &produced, &mut problems);
    assert_none(&problems);
}

// ---------------------------------------------------------------------------------
// Tables of names

#[test]
fn identifier_tables_are_the_built_in_ones() {
    let devices: Vec<String> = json("hardware --json")
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            let aliases: Vec<String> = d["aliases"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| format!("`{}`", a.as_str().unwrap()))
                .collect();
            format!(
                "| `{}` | {} | {} |",
                d["id"].as_str().unwrap(),
                aliases.join(", "),
                d["name"].as_str().unwrap()
            )
        })
        .collect();
    let documented: Vec<String> = rows("Hardware ids", "hardware id")
        .iter()
        .map(|r| format!("| {} | {} | {} |", r[0], r[1], r[2]))
        .collect();
    assert_eq!(
        documented,
        devices,
        "docs/reference.md's hardware table is not `ridgeline hardware`; these rows are:\n{}",
        devices.join("\n")
    );

    let models: Vec<String> = json("models --json")
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            format!(
                "| `{}` | {} |",
                m["id"].as_str().unwrap(),
                m["name"].as_str().unwrap()
            )
        })
        .collect();
    let documented: Vec<String> = rows("Model ids", "model id")
        .iter()
        .map(|r| format!("| {} | {} |", r[0], r[1]))
        .collect();
    assert_eq!(
        documented,
        models,
        "docs/reference.md's model table is not `ridgeline models`; these rows are:\n{}",
        models.join("\n")
    );

    let formats = rows("Formats", "format");
    let names: Vec<String> = formats.iter().map(|r| ticked(&r[0])).collect();
    assert_eq!(
        names,
        FORMAT_NAMES.to_vec(),
        "the format table is not FORMAT_NAMES"
    );
    for r in &formats {
        let f = Format::parse(&ticked(&r[0])).unwrap();
        for alias in all_ticked(&r[1]) {
            assert_eq!(Format::parse(&alias).unwrap(), f, "format alias {alias}");
        }
        let bits: f64 = r[2].parse().unwrap();
        assert!(
            (bits - f.bits()).abs() < 5e-4,
            "{}: {} bits, not {}",
            r[0],
            f.bits(),
            bits
        );
    }

    let db = EngineDb::builtin().unwrap();
    let engines = rows("Engines", "engine");
    let documented: BTreeSet<String> = engines.iter().map(|r| ticked(&r[0])).collect();
    let built_in: BTreeSet<String> = db.engines().iter().map(|e| e.id.clone()).collect();
    assert_eq!(
        documented, built_in,
        "the engine table is not data/engines.toml"
    );
    for r in &engines {
        for alias in all_ticked(&r[1]) {
            assert_eq!(
                db.get(&alias).unwrap().id,
                ticked(&r[0]),
                "engine alias {alias}"
            );
        }
    }
}

#[test]
fn csv_columns_of_the_measurements_are_documented() {
    let documented: BTreeSet<String> = rows("measurements CSV", "column")
        .iter()
        .map(|r| ticked(&r[0]))
        .collect();
    let columns: BTreeSet<String> = ridgeline::calibrate::COLUMNS
        .iter()
        .map(|c| c.to_string())
        .collect();
    assert_eq!(documented, columns);
}

/// The long flags `ridgeline <command> --help` lists.
fn help_flags(command: &[&str]) -> BTreeSet<String> {
    let out = run_in(Path::new(ROOT), &[command, &["--help"]].concat());
    assert!(out.status.success());
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| {
            let l = l.trim_start();
            let l = l
                .strip_prefix("-h, ")
                .or(l.strip_prefix("-V, "))
                .unwrap_or(l);
            let flag: String = l
                .strip_prefix("--")?
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            Some(format!("--{flag}"))
        })
        .collect()
}

/// The long flags of the option tables of a section.
fn doc_flags(title: &str) -> BTreeSet<String> {
    rows(title, "option")
        .iter()
        .flat_map(|r| all_ticked(&r[0]))
        .filter_map(|f| {
            f.split_whitespace()
                .next()
                .filter(|w| w.starts_with("--"))
                .map(str::to_string)
        })
        .collect()
}

#[test]
fn option_tables_hold_every_flag() {
    let global = doc_flags("Global options");
    assert_eq!(global, help_flags(&[]), "global options");
    let own = |command: &[&str]| -> BTreeSet<String> {
        help_flags(command).difference(&global).cloned().collect()
    };
    for command in [
        "predict",
        "train",
        "sweep",
        "plan",
        "simulate",
        "calibrate",
        "kernels",
        "serve",
    ] {
        assert_eq!(doc_flags(command), own(&[command]), "options of {command}");
    }
    // explain and roofline: their own table plus predict's options
    let predict = doc_flags("predict");
    for command in ["explain", "roofline"] {
        let documented = doc_flags(command);
        let flags = own(&[command]);
        assert!(
            documented.is_subset(&flags),
            "{command}: {documented:?} not all in --help"
        );
        let missing: Vec<&String> = flags
            .iter()
            .filter(|f| !documented.contains(*f) && !predict.contains(*f))
            .collect();
        assert!(missing.is_empty(), "{command}: {missing:?} undocumented");
    }
}

/// The fenced blocks of `lang` in `text`.
fn code_blocks<'t>(text: &'t str, lang: &str) -> Vec<Vec<&'t str>> {
    let mut out = Vec::new();
    // the block being read: whether it is in `lang`, and its lines
    let mut open: Option<(bool, Vec<&str>)> = None;
    for line in text.lines() {
        if let Some(info) = line.trim_start().strip_prefix("```") {
            match open.take() {
                None => open = Some((info.trim() == lang, Vec::new())),
                Some((true, block)) => out.push(block),
                Some((false, _)) => {}
            }
        } else if let Some((_, block)) = &mut open {
            block.push(line);
        }
    }
    out
}

#[test]
fn toml_examples_load() {
    let blocks = code_blocks(DOC, "toml");
    assert_eq!(
        blocks.len(),
        4,
        "a hardware, an engine, an inheriting engine and an instances example"
    );
    let dir = scratch("toml");
    let (hw, engine) = (dir.join("my-gpu.toml"), dir.join("my-engine.toml"));
    std::fs::write(&hw, blocks[0].join("\n")).unwrap();
    std::fs::write(&engine, blocks[1].join("\n")).unwrap();
    let v = json_args(&[
        "predict",
        "--model",
        "llama-3-8b",
        "--gpu",
        "my-gpu",
        "--engine",
        "my-engine",
        "--hardware-file",
        hw.to_str().unwrap(),
        "--engine-file",
        engine.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(v["hardware"]["id"], "my-gpu");
    assert_eq!(v["config"]["engine"], "my-engine");
    // the inheriting profile: vllm's factors but for the ones it gives
    let derived = dir.join("my-vllm.toml");
    std::fs::write(&derived, blocks[2].join("\n")).unwrap();
    let mine = json_args(&[
        "predict",
        "--model",
        "llama-3-8b",
        "--gpu",
        "m2-ultra",
        "--engine",
        "my-vllm",
        "--engine-file",
        derived.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(mine["config"]["engine"], "my-vllm");
    let shapes = dir.join("my-instances.toml");
    std::fs::write(&shapes, blocks[3].join("\n")).unwrap();
    let shapes = shapes.to_str().unwrap();
    let t = json_args(&[
        "train",
        "--model",
        "llama-3-8b",
        "--instance",
        "my-4x-h100",
        "--gpus",
        "8",
        "--zero",
        "3",
        "--instances-file",
        shapes,
        "--json",
    ]);
    // 1e11 bytes/s between instances over 4 devices
    assert_eq!(t["config"]["inter_node_bytes_per_s"], 2.5e10);
    assert_eq!(t["layout"]["devices_per_node"], 4);
    let _ = std::fs::remove_dir_all(dir);
}

// ---------------------------------------------------------------------------------
// The README's commands

/// A README command line split into words, `[...]` groups kept as one optional item.
#[derive(Debug, Clone, PartialEq)]
enum Word {
    Plain(String),
    Optional(Vec<String>),
}

/// The `ridgeline ...` commands of the README's sh blocks: comments after ` #` cut,
/// `\` continuations joined.
fn readme_commands() -> Vec<String> {
    let mut out = Vec::new();
    for block in code_blocks(README, "sh") {
        let mut pending = String::new();
        for line in block {
            let line = line.split(" #").next().unwrap().trim_end();
            let (text, more) = match line.strip_suffix('\\') {
                Some(t) => (t, true),
                None => (line, false),
            };
            pending.push_str(text.trim());
            pending.push(' ');
            if !more {
                let cmd = pending.trim().to_string();
                pending.clear();
                if let Some(rest) = cmd.strip_prefix("ridgeline ") {
                    out.push(rest.to_string());
                }
            }
        }
    }
    out
}

/// Words of a command; `[a b]` is one optional group.
fn words(cmd: &str) -> Vec<Word> {
    assert!(
        cmd.split_whitespace().next() != Some("serve"),
        "README command '{cmd}': serve runs until stopped; show it in a text block"
    );
    let mut out = Vec::new();
    let mut group: Option<Vec<String>> = None;
    for w in cmd.split_whitespace() {
        assert!(
            !w.contains(['"', '\'', '|', '$', '&', ';']),
            "README command '{cmd}': quoting, pipes and shell variables are not run by this test"
        );
        match (&mut group, w.strip_prefix('[')) {
            (None, Some(w)) => {
                let mut g = Vec::new();
                if let Some(w) = w.strip_suffix(']') {
                    out.push(Word::Optional(vec![w.to_string()]));
                    continue;
                }
                g.push(w.to_string());
                group = Some(g);
            }
            (Some(g), _) => match w.strip_suffix(']') {
                Some(w) => {
                    g.push(w.to_string());
                    out.push(Word::Optional(group.take().unwrap()));
                }
                None => g.push(w.to_string()),
            },
            (None, None) => out.push(Word::Plain(w.to_string())),
        }
    }
    assert!(group.is_none(), "README command '{cmd}': unclosed [");
    out
}

/// The argument lists of a command: without its optional groups, and with all of them;
/// and the file `> FILE` sends stdout to, if any.
fn variants(cmd: &str) -> Vec<(Vec<String>, Option<String>)> {
    let ws = words(cmd);
    let has_optional = ws.iter().any(|w| matches!(w, Word::Optional(_)));
    let mut out = Vec::new();
    for with in [false, true].into_iter().filter(|&w| !w || has_optional) {
        let mut args = Vec::new();
        for w in &ws {
            match w {
                Word::Plain(w) => args.push(w.clone()),
                Word::Optional(g) if with => args.extend(g.iter().cloned()),
                Word::Optional(_) => {}
            }
        }
        let redirect = args.iter().position(|a| a == ">").map(|i| {
            assert_eq!(i + 2, args.len(), "README command '{cmd}': '>' must end it");
            let file = args.pop().unwrap();
            args.pop();
            file
        });
        out.push((args, redirect));
    }
    out
}

#[test]
fn readme_commands_run_as_written_from_a_copy_of_the_samples() {
    assert!(
        README.contains("docs/reference.md"),
        "the README should point at docs/reference.md"
    );
    let commands = readme_commands();
    assert!(
        commands.len() >= 15,
        "only {} README commands found",
        commands.len()
    );
    for needle in [
        "examples/data/my-model/config.json",
        "examples/data/my-bench.csv",
    ] {
        assert!(
            commands.iter().any(|c| c.contains(needle)),
            "no README command uses {needle}"
        );
    }
    // a scratch folder with what the commands read: the samples and the bundled
    // measurements; everything they write lands there
    let dir = scratch("readme");
    copy_dir(
        &Path::new(ROOT).join("examples/data"),
        &dir.join("examples/data"),
    );
    copy_dir(
        &Path::new(ROOT).join("data/measurements"),
        &dir.join("data/measurements"),
    );
    let mut failures = Vec::new();
    let mut ran = 0;
    for cmd in &commands {
        for (args, redirect) in variants(cmd) {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let out = run_in(&dir, &args);
            ran += 1;
            if !out.status.success() {
                failures.push(format!(
                    "ridgeline {}: exit {:?}: {}",
                    args.join(" "),
                    out.status.code(),
                    String::from_utf8_lossy(&out.stderr).trim()
                ));
            } else if let Some(file) = redirect {
                std::fs::write(dir.join(file), &out.stdout).unwrap();
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        failures.is_empty(),
        "{} of {ran} README commands failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn readme_command_parsing() {
    assert_eq!(
        variants("hardware [--json]"),
        vec![
            (vec!["hardware".to_string()], None),
            (vec!["hardware".to_string(), "--json".to_string()], None),
        ]
    );
    assert_eq!(
        variants("sweep --model m > grid.csv"),
        vec![(
            vec!["sweep".to_string(), "--model".to_string(), "m".to_string()],
            Some("grid.csv".to_string())
        )]
    );
    let cmds = readme_commands();
    // the sweep example spans two lines joined at the backslash
    assert!(
        cmds.iter()
            .any(|c| c.starts_with("sweep ") && c.contains("--weights native,fp8 > grid.csv")),
        "{cmds:?}"
    );
    assert!(
        cmds.iter().all(|c| !c.contains('#') && !c.contains('\\')),
        "{cmds:?}"
    );
}
