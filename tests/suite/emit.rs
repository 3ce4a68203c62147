//! Launch files (`--emit`) read back: each emitted script, JSON and YAML file is parsed
//! again and must give the configuration exactly (tp, pp, ep, dp, ZeRO stage,
//! micro-batch, accumulation, formats), and every flag or key written must be in the
//! tool's checked-in list (`data/emit/<tool>.toml`). Expected values are computed by
//! hand in the comments.

use crate::support::cli::{json, run};
use ridgeline::emit::{Format, Launch, Serving, emit};
use ridgeline::prelude::*;
use std::collections::{BTreeMap, BTreeSet};

/// One parsed command line: its leading words, `--flag [value]` pairs and `key=value`
/// words (torchtune's overrides).
#[derive(Debug, Default)]
struct Line {
    words: Vec<String>,
    flags: BTreeMap<String, Option<String>>,
    overrides: BTreeMap<String, String>,
    positional: Vec<String>,
}

impl Line {
    fn get(&self, flag: &str) -> &str {
        match self.flags.get(flag) {
            Some(Some(v)) => v,
            Some(None) => panic!("{flag} is a switch here"),
            None => panic!("no {flag} in {:?}", self.flags),
        }
    }
    fn has(&self, flag: &str) -> bool {
        self.flags.contains_key(flag)
    }
    fn num(&self, flag: &str) -> u64 {
        self.get(flag)
            .parse()
            .unwrap_or_else(|_| panic!("{flag} not a number"))
    }
}

/// Splits shell words: single quotes group (and are dropped), `\` newline joins lines.
fn shell_words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let (mut quoted, mut any) = (false, false);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                quoted = !quoted;
                any = true;
            }
            '\\' if !quoted && chars.peek() == Some(&'\n') => {
                chars.next();
            }
            c if c.is_whitespace() && !quoted => {
                if any || !cur.is_empty() {
                    words.push(std::mem::take(&mut cur));
                    any = false;
                }
            }
            c => cur.push(c),
        }
    }
    if any || !cur.is_empty() {
        words.push(cur);
    }
    words
}

/// The commands of a script (comment lines dropped), each parsed: words up to the first
/// flag, then a flag takes the next word as its value unless that is a flag too.
fn commands(script: &str) -> Vec<Line> {
    let body: String = script
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .map(|l| format!("{l}\n"))
        .collect();
    // one command per line once continuations are joined
    body.replace("\\\n", " ")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| parse_words(&shell_words(l)))
        .collect()
}

fn parse_words(words: &[String]) -> Line {
    let mut line = Line::default();
    let mut i = 0;
    while i < words.len() && !words[i].starts_with("--") {
        line.words.push(words[i].clone());
        i += 1;
    }
    while i < words.len() {
        let w = &words[i];
        if let Some((flag, value)) = w.split_once('=').filter(|_| w.starts_with("--")) {
            line.flags.insert(flag.to_string(), Some(value.to_string()));
            i += 1;
        } else if let Some(flag) = w.strip_prefix("--").map(|_| w.clone()) {
            let value = words.get(i + 1).filter(|v| !v.starts_with("--")).cloned();
            // a value that is a key=value override or a script is positional instead
            let value = value.filter(|v| !v.contains('='));
            i += 1 + usize::from(value.is_some());
            line.flags.insert(flag, value);
        } else if let Some((k, v)) = w.split_once('=') {
            line.overrides.insert(k.to_string(), v.to_string());
            i += 1;
        } else {
            line.positional.push(w.clone());
            i += 1;
        }
    }
    line
}

/// The one command of a script.
fn command(script: &str) -> Line {
    let mut c = commands(script);
    assert_eq!(c.len(), 1, "one command expected in\n{script}");
    c.remove(0)
}

/// Minimal YAML: `key: value` lines by indentation into dotted paths; list items
/// (`- x`) are collected under their key.
fn yaml(text: &str) -> (BTreeMap<String, String>, BTreeMap<String, Vec<String>>) {
    let mut values = BTreeMap::new();
    let mut lists: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut stack: Vec<(usize, String)> = Vec::new();
    for line in text.lines() {
        let t = line.trim_start();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let indent = line.len() - t.len();
        if let Some(item) = t.strip_prefix("- ") {
            while stack.last().is_some_and(|(i, _)| *i >= indent) {
                stack.pop();
            }
            let path = stack
                .iter()
                .map(|s| s.1.as_str())
                .collect::<Vec<_>>()
                .join(".");
            let item = item.trim();
            if let Some((k, v)) = item.split_once(": ") {
                // a mapping in a list: its first key opens a level
                values.insert(format!("{path}.{k}"), unquote(v));
                stack.push((indent + 2, k.to_string()));
            } else {
                lists.entry(path).or_default().push(unquote(item));
            }
            continue;
        }
        let Some((k, v)) = t.split_once(':') else {
            panic!("not YAML: {line}")
        };
        while stack.last().is_some_and(|(i, _)| *i >= indent) {
            stack.pop();
        }
        let path = stack
            .iter()
            .map(|s| s.1.as_str())
            .chain([k])
            .collect::<Vec<_>>()
            .join(".");
        let v = v.trim();
        if v.is_empty() {
            stack.push((indent, k.to_string()));
        } else {
            values.insert(path, unquote(v));
        }
    }
    (values, lists)
}

fn unquote(s: &str) -> String {
    let s = s.trim();
    s.strip_prefix('"')
        .and_then(|x| x.strip_suffix('"'))
        .map(|x| x.replace("\\\"", "\""))
        .unwrap_or_else(|| s.to_string())
}

/// The files `ridgeline ... --emit FORMAT --json` prints, by name.
fn emitted(args: &[&str]) -> BTreeMap<String, String> {
    let doc = json(args);
    let format = args[args.iter().position(|a| *a == "--emit").unwrap() + 1];
    assert_eq!(doc["emit"], format);
    doc["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let text = f["contents"].as_str().unwrap().to_string();
            check_listed(format, f["name"].as_str().unwrap(), &text);
            (f["name"].as_str().unwrap().to_string(), text)
        })
        .collect()
}

/// The checked-in list of one tool.
fn listed(tool: &str) -> (BTreeSet<String>, BTreeSet<String>) {
    let path = format!("{}/data/emit/{tool}.toml", env!("CARGO_MANIFEST_DIR"));
    let doc: toml::Value = toml::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let set = |k: &str| -> BTreeSet<String> {
        doc.get(k)
            .and_then(|v| v.as_array())
            .map(|a| a.iter().map(|x| x.as_str().unwrap().to_string()).collect())
            .unwrap_or_default()
    };
    for k in ["tool", "version", "source"] {
        assert!(
            doc.get(k)
                .and_then(|v| v.as_str())
                .is_some_and(|s| !s.is_empty()),
            "{path}: no {k}"
        );
    }
    (set("flags"), set("keys"))
}

/// The values a tool's list allows for a flag or key that takes a choice (`None`: any).
fn choices(tool: &str, flag_or_key: &str) -> Option<BTreeSet<String>> {
    let list = match flag_or_key {
        "--kv-cache-dtype" | "kv_cache_config.dtype" => "kv_cache_dtype",
        "--quantization" => "quantization",
        "--split-mode" => "split_mode",
        "--cache-type-k" | "--cache-type-v" => "cache_type",
        "--fp8-format" => "fp8_format",
        "--optimizer" => "optimizer",
        "--moe-token-dispatcher-type" => "moe_token_dispatcher_type",
        "fsdp_config.fsdp_sharding_strategy" => "sharding_strategy",
        "mixed_precision" => "mixed_precision",
        "--speculative-algorithm" => "speculative_algorithm",
        "speculative_config.decoding_type" => "decoding_type",
        _ => return None,
    };
    let path = format!("{}/data/emit/{tool}.toml", env!("CARGO_MANIFEST_DIR"));
    let doc: toml::Value = toml::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let values = doc.get(list)?.as_array()?;
    Some(
        values
            .iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect(),
    )
}

/// Values outside the tool's choices, as `flag=value`.
fn bad_choices<'a>(
    tool: &str,
    pairs: impl IntoIterator<Item = (&'a String, Option<&'a String>)>,
) -> Vec<String> {
    pairs
        .into_iter()
        .filter_map(|(k, v)| {
            let v = v?;
            let allowed = choices(tool, k)?;
            (!allowed.contains(v)).then(|| format!("{k}={v}"))
        })
        .collect()
}

/// vLLM's `--speculative-config` JSON of a command line: its keys not in vllm.toml's
/// `speculative_config_keys`, its method not in `speculative_method`.
fn bad_speculative_config(line: &Line) -> Vec<String> {
    let Some(Some(text)) = line.flags.get("--speculative-config") else {
        return Vec::new();
    };
    let path = format!("{}/data/emit/vllm.toml", env!("CARGO_MANIFEST_DIR"));
    let doc: toml::Value = toml::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let list = |k: &str| -> BTreeSet<String> {
        doc[k]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect()
    };
    let (keys, methods) = (list("speculative_config_keys"), list("speculative_method"));
    let v: serde_json::Value = serde_json::from_str(text).unwrap();
    let mut bad: Vec<String> = v
        .as_object()
        .unwrap()
        .keys()
        .filter(|k| !keys.contains(*k))
        .map(|k| format!("--speculative-config.{k}"))
        .collect();
    if let Some(m) = v["method"].as_str().filter(|m| !methods.contains(*m)) {
        bad.push(format!("--speculative-config.method={m}"));
    }
    bad
}

/// Flags and keys of one emitted file not in the tool's list (empty: all listed), and
/// values outside the choices it lists.
fn unlisted(format: &str, name: &str, text: &str) -> Vec<String> {
    let (mut flags, keys) = listed(format);
    if format == "k8s" {
        // the manifest runs vLLM
        flags.extend(listed("vllm").0);
    }
    let mut bad = Vec::new();
    if name.ends_with(".sh") {
        for c in commands(text) {
            bad.extend(c.flags.keys().filter(|f| !flags.contains(*f)).cloned());
            bad.extend(c.overrides.keys().filter(|k| !keys.contains(*k)).cloned());
            let tool = if format == "k8s" { "vllm" } else { format };
            bad.extend(bad_choices(
                tool,
                c.flags.iter().map(|(k, v)| (k, v.as_ref())),
            ));
            bad.extend(bad_speculative_config(&c));
        }
    } else if name.ends_with(".json") {
        fn walk(v: &serde_json::Value, at: &str, out: &mut Vec<String>) {
            if let Some(m) = v.as_object() {
                for (k, v) in m {
                    let p = if at.is_empty() {
                        k.clone()
                    } else {
                        format!("{at}.{k}")
                    };
                    out.push(p.clone());
                    walk(v, &p, out);
                }
            }
        }
        let mut paths = Vec::new();
        walk(&serde_json::from_str(text).unwrap(), "", &mut paths);
        bad.extend(paths.into_iter().filter(|p| !keys.contains(p)));
    } else {
        let (values, lists) = yaml(text);
        bad.extend(bad_choices(
            format,
            values.iter().map(|(k, v)| (k, Some(v))),
        ));
        let leaf_keys: BTreeSet<String> = values
            .keys()
            .chain(lists.keys())
            .flat_map(|p| p.split('.').map(String::from).collect::<Vec<_>>())
            .collect();
        if format == "k8s" {
            // `nvidia.com/gpu` is one key with dots in it
            let known = |k: &str| keys.contains(k) || k == "nvidia" || k == "com/gpu";
            bad.extend(leaf_keys.into_iter().filter(|k| !known(k)));
            for (p, items) in &lists {
                if p.ends_with("command") && items.first().map(String::as_str) == Some("vllm") {
                    let line = parse_words(items);
                    bad.extend(line.flags.keys().filter(|f| !flags.contains(*f)).cloned());
                    bad.extend(bad_choices(
                        "vllm",
                        line.flags.iter().map(|(k, v)| (k, v.as_ref())),
                    ));
                    bad.extend(bad_speculative_config(&line));
                }
                if p.ends_with("command") && items.first().map(String::as_str) == Some("sh") {
                    for part in items[2].split("&&") {
                        let line = parse_words(&shell_words(part));
                        bad.extend(line.flags.keys().filter(|f| !flags.contains(*f)).cloned());
                    }
                }
            }
        } else {
            let paths: BTreeSet<&String> = values.keys().chain(lists.keys()).collect();
            // every path and every parent of one must be listed
            for p in paths {
                let parts: Vec<&str> = p.split('.').collect();
                for n in 1..=parts.len() {
                    let prefix = parts[..n].join(".");
                    if !keys.contains(&prefix) {
                        bad.push(prefix);
                    }
                }
            }
        }
    }
    bad.sort();
    bad.dedup();
    bad
}

fn check_listed(format: &str, name: &str, text: &str) {
    let bad = unlisted(format, name, text);
    assert!(
        bad.is_empty(),
        "{format} {name}: not in data/emit/{format}.toml: {bad:?}\n{text}"
    );
}

/// `ridgeline ARGS` fails with exit 2 and one stderr line naming `--emit`.
fn refused(args: &[&str], why: &str) {
    let out = run(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(out.stdout.is_empty(), "{args:?} printed on stdout");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("--emit") && err.contains(why),
        "{args:?}: {err}"
    );
}

#[test]
fn the_flag_checker_rejects_what_is_not_listed() {
    let script =
        "#!/bin/sh\nvllm serve m \\\n  --tensor-parallel-size 2 \\\n  --tensor-paralel-size 2\n";
    assert_eq!(
        unlisted("vllm", "vllm.sh", script),
        vec!["--tensor-paralel-size"]
    );
    let script = "#!/bin/sh\nvllm serve m \\\n  --kv-cache-dtype int8\n";
    assert_eq!(
        unlisted("vllm", "vllm.sh", script),
        vec!["--kv-cache-dtype=int8"]
    );
    let cfg = r#"{"train_batch_size": 8, "zero_optimisation": {"stage": 2}}"#;
    assert_eq!(
        unlisted("deepspeed", "ds_config.json", cfg),
        vec!["zero_optimisation", "zero_optimisation.stage"]
    );
    // every format has its list, with a version and a source
    for f in Format::ALL {
        listed(f.name());
        assert_eq!(Format::parse(f.name()).unwrap(), f);
        assert!(!f.version().is_empty() && f.version() != "unknown");
    }
}

#[test]
fn vllm_reads_back_the_layout_and_formats() {
    // llama-3-8b on 2 x H100, tensor parallel, batch 16 of 1000 + 200 tokens, fp8 KV:
    // tp 2, pp 1, 16 sequences, 16 x 1000 = 16000 batched tokens, 1200 tokens per request
    let files = emitted(&[
        "predict",
        "--model",
        "llama-3-8b",
        "--gpu",
        "h100",
        "--gpus",
        "2",
        "--batch",
        "16",
        "--prompt",
        "1000",
        "--gen",
        "200",
        "--kv",
        "fp8",
        "--emit",
        "vllm",
        "--json",
    ]);
    let c = command(&files["vllm.sh"]);
    assert_eq!(c.words, ["vllm", "serve", "meta-llama/Meta-Llama-3-8B"]);
    assert_eq!(c.num("--tensor-parallel-size"), 2);
    assert_eq!(c.num("--pipeline-parallel-size"), 1);
    assert_eq!(c.num("--max-num-seqs"), 16);
    assert_eq!(c.num("--max-num-batched-tokens"), 16_000);
    assert_eq!(c.num("--max-model-len"), 1200);
    assert_eq!(c.get("--kv-cache-dtype"), "fp8");
    assert!(!c.has("--quantization") && !c.has("--data-parallel-size"));

    // pipeline parallel over 4 devices, fp8 weights on a bf16 checkpoint: tp 1, pp 4
    let files = emitted(&[
        "predict",
        "--model",
        "llama-3-70b",
        "--gpu",
        "h100",
        "--gpus",
        "4",
        "--parallel",
        "pp",
        "--weights",
        "fp8",
        "--emit",
        "vllm",
        "--json",
    ]);
    let c = command(&files["vllm.sh"]);
    assert_eq!(c.num("--tensor-parallel-size"), 1);
    assert_eq!(c.num("--pipeline-parallel-size"), 4);
    assert_eq!(c.get("--quantization"), "fp8");
    assert!(!c.has("--kv-cache-dtype"));

    // MoE on 8 devices in 4 expert groups: each group tp 8 / 4 = 2, attention dp 4
    let files = emitted(&[
        "predict",
        "--model",
        "qwen3-30b-a3b",
        "--gpu",
        "h100",
        "--gpus",
        "8",
        "--ep",
        "4",
        "--batch",
        "32",
        "--emit",
        "vllm",
        "--json",
    ]);
    let c = command(&files["vllm.sh"]);
    assert_eq!(c.num("--tensor-parallel-size"), 2);
    assert_eq!(c.num("--data-parallel-size"), 4);
    assert!(c.has("--enable-expert-parallel"));
}

#[test]
fn sglang_and_trt_llm_read_back_expert_groups() {
    // qwen3-30b-a3b, 8 devices, ep 4: SGLang's tp spans all 8, dp attention over the 4
    // groups, experts over 4 groups (moe tp 8 / 4 = 2, the group size)
    let base = [
        "predict",
        "--model",
        "qwen3-30b-a3b",
        "--gpu",
        "h100",
        "--gpus",
        "8",
        "--ep",
        "4",
        "--batch",
        "32",
        "--prompt",
        "2000",
        "--gen",
        "500",
        "--kv",
        "fp8",
        "--json",
        "--emit",
    ];
    let files = emitted(&[&base[..], &["sglang"]].concat());
    let c = command(&files["sglang.sh"]);
    assert_eq!(c.words, ["python", "-m", "sglang.launch_server"]);
    assert_eq!(c.get("--model-path"), "Qwen/Qwen3-30B-A3B");
    assert_eq!(c.num("--tp-size"), 8);
    assert_eq!(c.num("--dp-size"), 4);
    assert_eq!(c.num("--ep-size"), 4);
    assert!(c.has("--enable-dp-attention"));
    assert_eq!(c.num("--max-running-requests"), 32);
    // 32 x 2000 prompt tokens in one prefill
    assert_eq!(c.num("--chunked-prefill-size"), 64_000);
    assert_eq!(c.num("--context-length"), 2500);
    assert_eq!(c.get("--kv-cache-dtype"), "fp8_e4m3");

    let files = emitted(&[&base[..], &["trt-llm"]].concat());
    let c = command(&files["trtllm-serve.sh"]);
    assert_eq!(c.words, ["trtllm-serve", "Qwen/Qwen3-30B-A3B"]);
    assert_eq!(c.num("--tp_size"), 8);
    assert_eq!(c.num("--pp_size"), 1);
    assert_eq!(c.num("--ep_size"), 4);
    assert_eq!(c.num("--max_batch_size"), 32);
    assert_eq!(c.num("--max_num_tokens"), 64_000);
    assert_eq!(c.num("--max_seq_len"), 2500);
    let extra = c.get("--extra_llm_api_options");
    let (values, _) = yaml(&files[extra]);
    assert_eq!(values["kv_cache_config.dtype"], "fp8");
    assert_eq!(values["enable_attention_dp"], "true");
    assert!(!c.has("--enable-two-batch-overlap"));

    // with the all-to-all overlapped: SGLang's two-batch overlap (a listed flag), and
    // where a tool has no switch for it, a comment instead of silence
    let over = [
        &base[..base.len() - 2],
        &["--overlap-ep", "--json", "--emit"],
    ]
    .concat();
    let files = emitted(&[&over[..], &["sglang"]].concat());
    let c = command(&files["sglang.sh"]);
    assert!(c.has("--enable-two-batch-overlap") && c.num("--ep-size") == 4);
    for (format, file) in [("vllm", "vllm.sh"), ("trt-llm", "trtllm-serve.sh")] {
        let files = emitted(&[&over[..], &[format]].concat());
        assert!(
            files[file].contains("# the plan overlaps the expert all-to-all"),
            "{format}"
        );
    }
}

#[test]
fn llama_cpp_reads_back_and_refuses_what_it_cannot_run() {
    // llama-3-8b q4_k_m on 2 x RTX 4090, 4 slots of 512 + 128 tokens: --ctx-size is
    // shared by the slots, 4 x 640 = 2560; all 32 layers + output on the GPUs; rows
    // split evenly (tensor parallel)
    let files = emitted(&[
        "predict",
        "--model",
        "llama-3-8b",
        "--gpu",
        "rtx4090",
        "--gpus",
        "2",
        "--weights",
        "q4_k_m",
        "--kv",
        "q8_0",
        "--batch",
        "4",
        "--emit",
        "llama.cpp",
        "--json",
    ]);
    let c = command(&files["llama-server.sh"]);
    assert_eq!(c.words, ["llama-server"]);
    assert!(c.get("--model").ends_with("-Q4_K_M.gguf"));
    assert_eq!(c.num("--n-gpu-layers"), 33);
    assert_eq!(c.num("--ctx-size"), 2560);
    assert_eq!(c.num("--parallel"), 4);
    assert_eq!(c.get("--split-mode"), "row");
    assert_eq!(c.get("--tensor-split"), "1,1");
    assert_eq!(c.get("--cache-type-k"), "q8_0");
    assert_eq!(c.get("--cache-type-v"), "q8_0");
    // pipeline parallel splits by layer
    let files = emitted(&[
        "predict",
        "--model",
        "llama-3-8b",
        "--gpu",
        "rtx4090",
        "--gpus",
        "2",
        "--parallel",
        "pp",
        "--weights",
        "q8_0",
        "--emit",
        "llama.cpp",
        "--json",
    ]);
    assert_eq!(
        command(&files["llama-server.sh"]).get("--split-mode"),
        "layer"
    );

    let p = [
        "predict",
        "--model",
        "llama-3-8b",
        "--gpu",
        "h100",
        "--emit",
        "llama.cpp",
    ];
    refused(&[&p[..], &["--weights", "fp8"]].concat(), "weights fp8");
    refused(&[&p[..], &["--kv", "fp8"]].concat(), "KV-cache format fp8");
    refused(
        &[
            "predict",
            "--model",
            "qwen3-30b-a3b",
            "--gpu",
            "h100",
            "--gpus",
            "2",
            "--ep",
            "2",
            "--emit",
            "llama.cpp",
        ],
        "expert parallelism",
    );
    // and the Python engines refuse GGUF weights
    refused(
        &[
            "predict",
            "--model",
            "llama-3-8b",
            "--gpu",
            "h100",
            "--weights",
            "q4_k_m",
            "--emit",
            "vllm",
        ],
        "llama.cpp",
    );
}

fn serving(gpus: u64, replicas: u64) -> Serving {
    Serving {
        model: ModelDb::builtin()
            .unwrap()
            .resolve("llama-3.1-405b")
            .unwrap(),
        gpu: "h100-sxm".into(),
        gpus,
        devices_per_node: 8,
        pp: 1,
        ep: 1,
        replicas,
        weights: ridgeline::dtype::Format::Fp8,
        kv: Some(ridgeline::dtype::Format::Fp8),
        engine: "vllm".into(),
        max_num_seqs: 64,
        max_batched_tokens: 8192,
        max_model_len: 8192,
        spec: None,
        overlap_ep: false,
    }
}

#[test]
fn k8s_reads_back_replicas_and_devices() {
    // one node per replica: a Deployment of 3 replicas, 8 devices each, running vLLM tp 8
    let files = emit(Format::K8s, Launch::Serving(&serving(8, 3))).unwrap();
    check_listed("k8s", &files[0].name, &files[0].contents);
    let (values, lists) = yaml(&files[0].contents);
    assert_eq!(values["kind"], "Deployment");
    assert_eq!(values["spec.replicas"], "3");
    assert_eq!(
        values["spec.template.spec.containers.resources.limits.nvidia.com/gpu"],
        "8"
    );
    let argv = &lists["spec.template.spec.containers.command"];
    let c = parse_words(argv);
    assert_eq!(c.words, ["vllm", "serve", "meta-llama/Llama-3.1-405B"]);
    assert_eq!(c.num("--tensor-parallel-size"), 8);
    assert_eq!(c.get("--quantization"), "fp8");

    // 16 devices per replica on 8-device nodes: a LeaderWorkerSet of 2 pods per replica,
    // 8 devices each; vLLM tp 16 over Ray
    let files = emit(Format::K8s, Launch::Serving(&serving(16, 2))).unwrap();
    check_listed("k8s", &files[0].name, &files[0].contents);
    let (values, lists) = yaml(&files[0].contents);
    assert_eq!(values["apiVersion"], "leaderworkerset.x-k8s.io/v1");
    assert_eq!(values["kind"], "LeaderWorkerSet");
    assert_eq!(values["spec.replicas"], "2");
    assert_eq!(values["spec.leaderWorkerTemplate.size"], "2");
    for role in ["leaderTemplate", "workerTemplate"] {
        let key = format!(
            "spec.leaderWorkerTemplate.{role}.spec.containers.resources.limits.nvidia.com/gpu"
        );
        assert_eq!(values[&key], "8", "{role}");
    }
    let leader = &lists["spec.leaderWorkerTemplate.leaderTemplate.spec.containers.command"];
    let serve = leader[2].split("&&").nth(1).unwrap();
    let c = parse_words(&shell_words(serve));
    assert_eq!(c.num("--tensor-parallel-size"), 16);
    assert_eq!(c.get("--distributed-executor-backend"), "ray");

    // from the CLI: one replica of a 2-device prediction
    let files = emitted(&[
        "predict",
        "--model",
        "llama-3-8b",
        "--gpu",
        "h100",
        "--gpus",
        "2",
        "--emit",
        "k8s",
        "--json",
    ]);
    let (values, _) = yaml(&files["k8s.yaml"]);
    assert_eq!(values["spec.replicas"], "1");
    assert_eq!(
        values["spec.template.spec.containers.resources.limits.nvidia.com/gpu"],
        "2"
    );
}

#[test]
fn deepspeed_reads_back_batch_zero_offload_and_precision() {
    // 8 devices data parallel, micro-batch 2, 64 sequences a step: 64 / (2 x 8) = 4
    // accumulation steps; ZeRO-2 with optimizer states on the host; fp16
    let files = emitted(&[
        "train",
        "--model",
        "llama-3.1-8b",
        "--gpu",
        "h100",
        "--gpus",
        "8",
        "--zero",
        "2",
        "--micro-batch",
        "2",
        "--global-batch",
        "64",
        "--offload",
        "cpu",
        "--precision",
        "fp16",
        "--emit",
        "deepspeed",
        "--json",
    ]);
    let c = command(&files["deepspeed.sh"]);
    assert_eq!(c.words, ["deepspeed"]);
    assert_eq!(c.num("--num_nodes"), 1);
    assert_eq!(c.num("--num_gpus"), 8);
    assert_eq!(c.positional, ["train.py"]);
    let cfg: serde_json::Value = serde_json::from_str(&files[c.get("--deepspeed")]).unwrap();
    assert_eq!(cfg["train_batch_size"], 64);
    assert_eq!(cfg["train_micro_batch_size_per_gpu"], 2);
    assert_eq!(cfg["gradient_accumulation_steps"], 4);
    assert_eq!(cfg["zero_optimization"]["stage"], 2);
    assert_eq!(
        cfg["zero_optimization"]["offload_optimizer"]["device"],
        "cpu"
    );
    assert_eq!(cfg["fp16"]["enabled"], true);
    assert!(cfg.get("bf16").is_none() && cfg.get("activation_checkpointing").is_none());

    // 16 devices, tp 2 (dp 8), full recomputation, bf16: two nodes of 8; micro-batch 1,
    // default global batch 1 x 8 = 8, one step each; tensor parallelism said in a comment
    let files = emitted(&[
        "train",
        "--model",
        "llama-3.1-8b",
        "--gpu",
        "h100",
        "--gpus",
        "16",
        "--tp",
        "2",
        "--zero",
        "1",
        "--recompute",
        "full",
        "--emit",
        "deepspeed",
        "--json",
    ]);
    let script = &files["deepspeed.sh"];
    let c = command(script);
    assert_eq!(c.num("--num_nodes"), 2);
    assert_eq!(c.num("--num_gpus"), 8);
    assert!(c.has("--hostfile"));
    assert!(
        script
            .lines()
            .any(|l| l.starts_with('#') && l.contains("tp 2 pp 1"))
    );
    let cfg: serde_json::Value = serde_json::from_str(&files["ds_config.json"]).unwrap();
    assert_eq!(cfg["train_batch_size"], 8);
    assert_eq!(cfg["gradient_accumulation_steps"], 1);
    assert_eq!(cfg["zero_optimization"]["stage"], 1);
    assert_eq!(cfg["bf16"]["enabled"], true);
    assert!(cfg.get("activation_checkpointing").is_some());
}

#[test]
fn fsdp_reads_back_sharding_per_zero_stage() {
    // ZeRO 3 / 2 / 0 are FULL_SHARD / SHARD_GRAD_OP / NO_SHARD; 4 devices, micro-batch 2,
    // 32 sequences: 32 / (2 x 4) = 4 accumulation steps
    for (zero, strategy) in [
        ("3", "FULL_SHARD"),
        ("2", "SHARD_GRAD_OP"),
        ("0", "NO_SHARD"),
    ] {
        let files = emitted(&[
            "train",
            "--model",
            "llama-3.1-8b",
            "--gpu",
            "h100",
            "--gpus",
            "4",
            "--zero",
            zero,
            "--micro-batch",
            "2",
            "--global-batch",
            "32",
            "--recompute",
            "full",
            "--emit",
            "fsdp",
            "--json",
        ]);
        let c = command(&files["fsdp.sh"]);
        assert_eq!(c.words, ["accelerate", "launch"]);
        assert_eq!(c.num("--per_device_train_batch_size"), 2);
        assert_eq!(c.num("--gradient_accumulation_steps"), 4);
        let (values, _) = yaml(&files[c.get("--config_file")]);
        assert_eq!(values["distributed_type"], "FSDP");
        assert_eq!(values["num_processes"], "4");
        assert_eq!(values["num_machines"], "1");
        assert_eq!(values["mixed_precision"], "bf16");
        assert_eq!(values["fsdp_config.fsdp_sharding_strategy"], strategy);
        assert_eq!(values["fsdp_config.fsdp_activation_checkpointing"], "true");
        assert_eq!(values["fsdp_config.fsdp_offload_params"], "false");
    }
}

#[test]
fn torchtune_reads_back_lora_and_refuses_models_without_a_config() {
    // LoRA rank 16 on q and v, 2 devices, micro-batch 2, 32 sequences: 32 / (2 x 2) = 8
    let files = emitted(&[
        "train",
        "--model",
        "llama-3.1-8b",
        "--gpu",
        "h100",
        "--gpus",
        "2",
        "--method",
        "lora",
        "--lora-rank",
        "16",
        "--lora-targets",
        "query_value",
        "--micro-batch",
        "2",
        "--global-batch",
        "32",
        "--zero",
        "3",
        "--emit",
        "torchtune",
        "--json",
    ]);
    let c = command(&files["torchtune.sh"]);
    assert_eq!(c.words, ["tune", "run"]);
    assert_eq!(c.num("--nproc_per_node"), 2);
    assert_eq!(c.num("--nnodes"), 1);
    assert_eq!(c.positional, ["lora_finetune_distributed"]);
    assert_eq!(c.get("--config"), "llama3_1/8B_lora");
    let o = &c.overrides;
    assert_eq!(o["batch_size"], "2");
    assert_eq!(o["gradient_accumulation_steps"], "8");
    assert_eq!(o["model.lora_rank"], "16");
    assert_eq!(o["model.lora_attn_modules"], "[q_proj,v_proj]");
    assert_eq!(o["model.apply_lora_to_mlp"], "False");
    assert_eq!(o["enable_activation_checkpointing"], "False");
    assert_eq!(o["dtype"], "bf16");
    // ZeRO-3 is FSDP's default resharding: no override
    assert!(!o.contains_key("fsdp_reshard_after_forward"));

    // one device, full training: the single-device recipe and config
    let files = emitted(&[
        "train",
        "--model",
        "llama-3.2-1b",
        "--gpu",
        "h100",
        "--zero",
        "2",
        "--recompute",
        "full",
        "--emit",
        "torchtune",
        "--json",
    ]);
    let c = command(&files["torchtune.sh"]);
    // no launcher flags: the recipe follows `tune run` directly
    assert_eq!(c.words, ["tune", "run", "full_finetune_single_device"]);
    assert_eq!(c.get("--config"), "llama3_2/1B_full_single_device");
    assert_eq!(c.overrides["enable_activation_checkpointing"], "True");
    assert!(!c.has("--nproc_per_node"));

    refused(
        &[
            "train",
            "--model",
            "qwen3-8b",
            "--gpu",
            "h100",
            "--emit",
            "torchtune",
        ],
        "no recipe config",
    );
}

#[test]
fn megatron_reads_back_3d_layout_and_refuses_lora() {
    // llama-3-70b on 16 devices: tp 4 x pp 2 x dp 2; micro-batch 1, 64 sequences a step;
    // ZeRO-1 is the distributed optimizer; full recomputation; fp8 on bf16
    let files = emitted(&[
        "train",
        "--model",
        "llama-3-70b",
        "--gpu",
        "h100",
        "--gpus",
        "16",
        "--tp",
        "4",
        "--pp",
        "2",
        "--zero",
        "1",
        "--recompute",
        "full",
        "--precision",
        "fp8",
        "--micro-batch",
        "1",
        "--global-batch",
        "64",
        "--emit",
        "megatron",
        "--json",
    ]);
    let c = command(&files["megatron.sh"]);
    assert_eq!(c.words, ["torchrun"]);
    assert_eq!(c.positional, ["pretrain_gpt.py"]);
    assert_eq!(c.num("--nproc_per_node"), 8);
    assert_eq!(c.num("--nnodes"), 2);
    assert_eq!(c.num("--tensor-model-parallel-size"), 4);
    assert_eq!(c.num("--pipeline-model-parallel-size"), 2);
    assert!(c.has("--sequence-parallel"));
    assert!(!c.has("--expert-model-parallel-size"));
    assert_eq!(c.num("--micro-batch-size"), 1);
    assert_eq!(c.num("--global-batch-size"), 64);
    assert_eq!(c.num("--seq-length"), 2048);
    assert!(c.has("--bf16"));
    assert_eq!(c.get("--fp8-format"), "hybrid");
    assert_eq!(c.get("--recompute-granularity"), "full");
    assert!(c.has("--use-distributed-optimizer"));
    // the model's shape: 80 layers of 8192, 64 heads in 8 groups
    assert_eq!(c.num("--num-layers"), 80);
    assert_eq!(c.num("--hidden-size"), 8192);
    assert_eq!(c.num("--num-attention-heads"), 64);
    assert_eq!(c.num("--num-query-groups"), 8);

    // Mixtral on 8 devices, ep 2 over dp 8: 8 experts, top 2
    let files = emitted(&[
        "train",
        "--model",
        "mixtral-8x7b",
        "--gpu",
        "h100",
        "--gpus",
        "8",
        "--ep",
        "2",
        "--zero",
        "1",
        "--emit",
        "megatron",
        "--json",
    ]);
    let c = command(&files["megatron.sh"]);
    assert_eq!(c.num("--expert-model-parallel-size"), 2);
    assert_eq!(c.num("--num-experts"), 8);
    assert_eq!(c.num("--moe-router-topk"), 2);
    assert_eq!(c.num("--tensor-model-parallel-size"), 1);
    // inside a node the plain all-to-all dispatcher, no MTP, no overlap
    assert_eq!(c.get("--moe-token-dispatcher-type"), "alltoall");
    assert!(!c.has("--moe-enable-deepep") && !c.has("--mtp-num-layers"));
    assert!(!c.has("--moe-router-num-groups"));
    assert!(!c.has("--overlap-moe-expert-parallel-comm"));

    // DeepSeek-V3 with its MTP module, ep 16 over two H100 nodes, the all-to-all
    // overlapped: DeepEP's dispatcher (it forwards per node, as costed), one MTP layer,
    // the combined 1F1B switch; pipelined without an interleaved schedule, Megatron
    // refuses the overlap, so a comment says so and the switch stays off
    let deepseek = |format: &str, extra: &[&str]| {
        let base = [
            "train",
            "--model",
            "deepseek-v3",
            "--gpu",
            "h100",
            "--ep",
            "16",
            "--mtp",
            "1",
            "--overlap-ep",
            "--emit",
            format,
            "--json",
        ];
        emitted(&[&base[..], extra].concat())
    };
    let text = deepseek("megatron", &["--gpus", "16"])["megatron.sh"].clone();
    let c = command(&text);
    assert_eq!(c.num("--expert-model-parallel-size"), 16);
    assert_eq!(c.get("--moe-token-dispatcher-type"), "flex");
    assert!(c.has("--moe-enable-deepep"));
    assert_eq!(c.num("--mtp-num-layers"), 1);
    assert!(c.has("--overlap-moe-expert-parallel-comm"));
    // its node-limited routing: top-8 experts from 4 of 8 groups
    assert_eq!(c.num("--moe-router-num-groups"), 8);
    assert_eq!(c.num("--moe-router-group-topk"), 4);
    let text = deepseek("megatron", &["--gpus", "32", "--pp", "2"])["megatron.sh"].clone();
    assert!(!command(&text).has("--overlap-moe-expert-parallel-comm"));
    assert!(text.contains("# overlap-ep: --overlap-moe-expert-parallel-comm not set"));
    // a tool without either says so
    let files = deepseek("deepspeed", &["--gpus", "16", "--zero", "3"]);
    let script = files.values().find(|t| t.contains("deepspeed ")).unwrap();
    assert!(script.contains("mtp 1: DeepSpeed trains no multi-token-prediction"));
    assert!(script.contains("overlap-ep: DeepSpeed has no switch"));

    refused(
        &[
            "train",
            "--model",
            "llama-3.1-8b",
            "--gpu",
            "h100",
            "--method",
            "lora",
            "--emit",
            "megatron",
        ],
        "lora",
    );
}

#[test]
fn plans_emit_their_best() {
    // the serving plan's best, as its own JSON gives it
    let args = [
        "plan",
        "--model",
        "llama-3-8b",
        "--gpu",
        "h100",
        "--gpus",
        "1,2,4",
    ];
    let plan = json(&[&args[..], &["--json"]].concat());
    let best = &plan["best"];
    let gpus = best["gpus"].as_u64().unwrap();
    let (tp, pp) = match best["parallel"].as_str().unwrap() {
        "tp" => (gpus, 1),
        _ => (1, gpus),
    };
    let files = emitted(&[&args[..], &["--emit", "vllm", "--json"]].concat());
    let c = command(&files["vllm.sh"]);
    assert_eq!(c.num("--tensor-parallel-size"), tp);
    assert_eq!(c.num("--pipeline-parallel-size"), pp);
    assert_eq!(c.num("--max-num-seqs"), best["batch"].as_u64().unwrap());
    assert_eq!(
        c.num("--max-model-len"),
        best["prompt"].as_u64().unwrap() + best["gen"].as_u64().unwrap()
    );

    // the training plan's best, as deepspeed: stage, micro-batch and accumulation
    let args = [
        "plan",
        "--train",
        "--model",
        "llama-3.2-1b",
        "--gpu",
        "h100",
        "--gpus",
        "1,2,4",
        "--tokens",
        "1B",
        "--method",
        "full",
    ];
    let plan = json(&[&args[..], &["--json"]].concat());
    let best = &plan["best"];
    let files = emitted(&[&args[..], &["--emit", "deepspeed", "--json"]].concat());
    let cfg: serde_json::Value = serde_json::from_str(&files["ds_config.json"]).unwrap();
    let (mb, dp) = (
        best["micro_batch"].as_u64().unwrap(),
        best["dp"].as_u64().unwrap(),
    );
    assert_eq!(cfg["zero_optimization"]["stage"], best["zero"]);
    assert_eq!(cfg["train_micro_batch_size_per_gpu"], mb);
    assert_eq!(cfg["train_batch_size"], best["global_batch"]);
    assert_eq!(
        cfg["gradient_accumulation_steps"].as_u64().unwrap(),
        best["global_batch"].as_u64().unwrap() / (mb * dp)
    );

    // a plan for a rate: the Deployment runs its replicas (400 requests/s needs 4 of
    // one H100 each at these targets)
    let args = [
        "plan",
        "--model",
        "llama-3-8b",
        "--gpu",
        "h100",
        "--gpus",
        "1,2",
        "--rate",
        "400",
        "--p99-ttft-ms",
        "1000",
        "--p99-tpot-ms",
        "50",
    ];
    let best = json(&[&args[..], &["--json"]].concat())["best"].clone();
    let files = emitted(&[&args[..], &["--emit", "k8s", "--json"]].concat());
    let (values, _) = yaml(&files["k8s.yaml"]);
    assert_eq!(values["spec.replicas"], best["replicas"].to_string());
    assert!(best["replicas"].as_u64().unwrap() > 1);
    assert_eq!(
        values["spec.template.spec.containers.resources.limits.nvidia.com/gpu"],
        best["gpus"].to_string()
    );

    // bad combinations: a training launch of a serving plan, a plan with no best
    refused(
        &[
            "plan",
            "--model",
            "llama-3-8b",
            "--gpu",
            "h100",
            "--emit",
            "deepspeed",
        ],
        "training launch",
    );
    refused(
        &[
            "train",
            "--model",
            "llama-3-8b",
            "--gpu",
            "h100",
            "--emit",
            "vllm",
        ],
        "serving launch",
    );
    refused(
        &[
            "plan",
            "--model",
            "llama-3-70b",
            "--gpu",
            "l4",
            "--gpus",
            "1",
            "--emit",
            "vllm",
        ],
        "no best",
    );
}

#[test]
fn simulate_emits_its_scheduler_limits() {
    // the simulated deployment's scheduler: 64 sequences, the default 8192-token budget;
    // the longest request is a 900-token prompt (uniform 100..900) + 128 generated
    let files = emitted(&[
        "simulate",
        "--model",
        "llama-3-8b",
        "--gpu",
        "h100",
        "--rate",
        "2",
        "--requests",
        "30",
        "--max-num-seqs",
        "64",
        "--prompt",
        "uniform:100..900",
        "--emit",
        "vllm",
        "--json",
    ]);
    let c = command(&files["vllm.sh"]);
    assert_eq!(c.num("--max-num-seqs"), 64);
    assert_eq!(c.num("--max-num-batched-tokens"), 8192);
    assert_eq!(c.num("--max-model-len"), 1028);
    assert_eq!(c.num("--tensor-parallel-size"), 1);
    // two pools and a KV transfer are not one server
    refused(
        &[
            "simulate",
            "--model",
            "llama-3-8b",
            "--gpu",
            "h100",
            "--disagg",
            "1:1",
            "--rate",
            "1",
            "--requests",
            "20",
            "--emit",
            "vllm",
        ],
        "disaggregated",
    );
}

#[test]
fn out_writes_the_files_atomically_beside_each_other() {
    let dir = std::env::temp_dir().join(format!("ridgeline-emit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("launch.sh");
    let out = run(&[
        "train",
        "--model",
        "llama-3.1-8b",
        "--gpu",
        "h100",
        "--gpus",
        "8",
        "--zero",
        "3",
        "--emit",
        "deepspeed",
        "--out",
        script.to_str().unwrap(),
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // stdout is the report as usual, the files are on disk
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(report.get("step").is_some());
    let launch = std::fs::read_to_string(&script).unwrap();
    assert_eq!(command(&launch).get("--deepspeed"), "ds_config.json");
    let cfg: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("ds_config.json")).unwrap())
            .unwrap();
    assert_eq!(cfg["zero_optimization"]["stage"], 3);
    // no temporary file left beside them
    let names: BTreeSet<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        ["ds_config.json", "launch.sh"].map(String::from).into()
    );

    // a folder that does not exist: refused before anything runs, nothing written
    let missing = dir.join("no-such-folder").join("vllm.sh");
    let out = run(&[
        "predict",
        "--model",
        "llama-3-8b",
        "--gpu",
        "h100",
        "--emit",
        "vllm",
        "--out",
        missing.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--out"));
    // a script named as its companion file would be overwritten by it: refused
    let clash = dir.join("ds_config.json");
    let out = run(&[
        "train",
        "--model",
        "llama-3.1-8b",
        "--gpu",
        "h100",
        "--emit",
        "deepspeed",
        "--out",
        clash.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--out"));
    let cfg: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&clash).unwrap()).unwrap();
    assert_eq!(
        cfg["zero_optimization"]["stage"], 3,
        "the earlier file is untouched"
    );
    // --out needs --emit
    let out = run(&[
        "predict",
        "--model",
        "llama-3-8b",
        "--gpu",
        "h100",
        "--out",
        "x.sh",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--emit"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn speculative_decoding_reads_back_from_every_serving_format() {
    // Llama 3.1 70B on 4 H100 drafting 4 tokens a pass with Llama 3.2 1B
    let draft: &[&str] = &[
        "predict",
        "--model",
        "llama-3.1-70b",
        "--gpu",
        "h100",
        "--gpus",
        "4",
        "--spec-k",
        "4",
        "--spec-accept",
        "0.7",
        "--draft",
        "llama-3.2-1b",
    ];
    let repo = "meta-llama/Llama-3.2-1B-Instruct";
    let script = |args: &[&str], f: &str, name: &str| {
        emitted(&[args, &["--emit", f, "--json"]].concat())[name].clone()
    };
    let spec_config = |c: &Line| -> serde_json::Value {
        serde_json::from_str(c.get("--speculative-config")).unwrap()
    };
    let text = script(draft, "vllm", "vllm.sh");
    let v = spec_config(&command(&text));
    assert_eq!(v["method"], "draft_model");
    assert_eq!(v["model"], repo);
    assert_eq!(v["num_speculative_tokens"], 4);
    assert!(text.contains("acceptance 0.7 assumed"), "{text}");
    // k drafts in a chain (top-k 1) verify k + 1 = 5 tokens
    let c = command(&script(draft, "sglang", "sglang.sh"));
    assert_eq!(c.get("--speculative-algorithm"), "STANDALONE");
    assert_eq!(c.get("--speculative-draft-model-path"), repo);
    assert_eq!(c.num("--speculative-num-steps"), 4);
    assert_eq!(c.num("--speculative-eagle-topk"), 1);
    assert_eq!(c.num("--speculative-num-draft-tokens"), 5);
    // the draft converted as the model is (BF16), its 16 layers and output on the devices
    let c = command(&script(draft, "llama.cpp", "llama-server.sh"));
    assert_eq!(c.get("--model-draft"), "models/llama-3.2-1b-BF16.gguf");
    assert_eq!(c.num("--draft-max"), 4);
    assert_eq!(c.num("--n-gpu-layers-draft"), 17);
    // TensorRT-LLM 1.0's LLM API has no draft/target config: said, not written
    let files = emitted(&[draft, &["--emit", "trt-llm", "--json"]].concat());
    assert!(!files["extra_llm_api_options.yaml"].contains("speculative_config"));
    assert!(
        files["trtllm-serve.sh"].contains("draft llama-3.2-1b (k 4) is not written"),
        "{}",
        files["trtllm-serve.sh"]
    );
    let files = emitted(&[draft, &["--emit", "k8s", "--json"]].concat());
    let (_, lists) = yaml(&files["k8s.yaml"]);
    let c = parse_words(&lists["spec.template.spec.containers.command"]);
    assert_eq!(spec_config(&c)["num_speculative_tokens"], 4);

    // DeepSeek-V3's own MTP module drafts 2 tokens on 8 H200
    let mtp: &[&str] = &[
        "predict",
        "--model",
        "deepseek-v3",
        "--gpu",
        "h200",
        "--gpus",
        "8",
        "--spec-k",
        "2",
        "--spec-accept",
        "0.8",
    ];
    let v = spec_config(&command(&script(mtp, "vllm", "vllm.sh")));
    assert_eq!(v["method"], "deepseek_mtp");
    assert_eq!(v["num_speculative_tokens"], 2);
    assert!(v.get("model").is_none(), "{v}");
    let c = command(&script(mtp, "sglang", "sglang.sh"));
    assert_eq!(c.get("--speculative-algorithm"), "EAGLE");
    assert!(!c.has("--speculative-draft-model-path"));
    assert_eq!(c.num("--speculative-num-draft-tokens"), 3);
    let (values, _) = yaml(&script(mtp, "trt-llm", "extra_llm_api_options.yaml"));
    assert_eq!(values["speculative_config.decoding_type"], "MTP");
    assert_eq!(values["speculative_config.num_nextn_predict_layers"], "2");

    // a model without a draft head: the EAGLE head is a placeholder, said so; llama.cpp
    // drafts only with a separate model
    let head: &[&str] = &[
        "predict",
        "--model",
        "llama-3.1-8b",
        "--gpu",
        "h100",
        "--spec-k",
        "3",
        "--spec-accept",
        "0.7",
    ];
    let text = script(head, "vllm", "vllm.sh");
    let v = spec_config(&command(&text));
    assert_eq!(
        (v["method"].as_str(), v["model"].as_str()),
        (Some("eagle3"), Some("EAGLE_HEAD_PATH"))
    );
    assert!(
        text.contains("# EAGLE_HEAD_PATH: llama-3.1-8b ships no draft head"),
        "{text}"
    );
    let text = script(head, "llama.cpp", "llama-server.sh");
    assert!(!command(&text).has("--draft-max"));
    assert!(text.contains("(k 3) is not written"), "{text}");

    // plan and simulate emit the speculation they planned and simulated
    let plan = [
        "plan",
        "--model",
        "llama-3.1-70b",
        "--gpu",
        "h100",
        "--gpus",
        "4",
        "--weights",
        "fp8",
        "--kv",
        "fp8",
        "--spec-k",
        "4",
        "--spec-accept",
        "0.7",
        "--draft",
        "llama-3.2-1b",
    ];
    let v = spec_config(&command(&script(&plan, "vllm", "vllm.sh")));
    assert_eq!(
        (v["model"].as_str(), v["num_speculative_tokens"].as_u64()),
        (Some(repo), Some(4))
    );
    let sim = [
        "simulate",
        "--model",
        "llama-3.1-70b",
        "--gpu",
        "h100",
        "--gpus",
        "4",
        "--rate",
        "1",
        "--requests",
        "20",
        "--spec-k",
        "2",
        "--spec-accept",
        "0.6",
    ];
    let v = spec_config(&command(&script(&sim, "vllm", "vllm.sh")));
    assert_eq!(
        (v["method"].as_str(), v["num_speculative_tokens"].as_u64()),
        (Some("eagle3"), Some(2))
    );
}

#[test]
fn every_flag_of_every_format_is_listed() {
    // a spread of configurations through each format (the listing is checked inside
    // `emitted` for every file)
    let serving: [&[&str]; 4] = [
        &[
            "predict",
            "--model",
            "llama-3-8b",
            "--gpu",
            "h100",
            "--gpus",
            "2",
            "--kv",
            "fp8",
        ],
        &[
            "predict",
            "--model",
            "llama-3-70b",
            "--gpu",
            "h100",
            "--gpus",
            "4",
            "--weights",
            "awq-int4",
        ],
        &[
            "predict",
            "--model",
            "qwen3-30b-a3b",
            "--gpu",
            "h100",
            "--gpus",
            "8",
            "--ep",
            "4",
        ],
        &[
            "predict",
            "--model",
            "gpt-oss-20b",
            "--gpu",
            "h100",
            "--weights",
            "mxfp4",
        ],
    ];
    for args in serving {
        for f in ["vllm", "sglang", "trt-llm", "k8s"] {
            emitted(&[args, &["--emit", f, "--json"]].concat());
        }
    }
    emitted(&[
        "predict",
        "--model",
        "llama-3-8b",
        "--gpu",
        "rtx4090",
        "--gpus",
        "2",
        "--weights",
        "q4_k_m",
        "--kv",
        "q8_0",
        "--emit",
        "llama.cpp",
        "--json",
    ]);
    let training: [&[&str]; 4] = [
        &[
            "train",
            "--model",
            "llama-3.1-8b",
            "--gpu",
            "h100",
            "--gpus",
            "8",
            "--zero",
            "3",
            "--offload",
            "cpu",
            "--recompute",
            "selective",
        ],
        &[
            "train",
            "--model",
            "llama-3-70b",
            "--gpu",
            "h100",
            "--gpus",
            "16",
            "--tp",
            "4",
            "--pp",
            "2",
            "--virtual-stages",
            "2",
            "--zero",
            "2",
            "--precision",
            "fp8",
        ],
        &[
            "train",
            "--model",
            "llama-3.1-8b",
            "--gpu",
            "h100",
            "--gpus",
            "2",
            "--method",
            "qlora",
            "--optimizer",
            "sgd",
        ],
        &[
            "train",
            "--model",
            "mixtral-8x7b",
            "--gpu",
            "h100",
            "--gpus",
            "8",
            "--ep",
            "2",
            "--zero",
            "1",
            "--compile",
        ],
    ];
    for args in training {
        for f in ["deepspeed", "fsdp", "torchtune", "megatron"] {
            let all = [args, &["--emit", f, "--json"]].concat();
            let out = run(&all);
            if out.status.success() {
                emitted(&all);
            } else {
                // a refusal names --emit (megatron has no QLoRA, torchtune no Mixtral)
                let err = String::from_utf8_lossy(&out.stderr);
                assert!(err.contains("--emit"), "{all:?}: {err}");
            }
        }
    }
}

#[test]
fn the_json_document_is_the_documented_one() {
    let doc = json(&[
        "train",
        "--model",
        "llama-3.1-8b",
        "--gpu",
        "h100",
        "--emit",
        "deepspeed",
        "--json",
    ]);
    let mut produced = BTreeSet::new();
    for (k, v) in doc.as_object().unwrap() {
        produced.insert(k.clone());
        if let Some(items) = v.as_array() {
            for item in items {
                for key in item.as_object().unwrap().keys() {
                    produced.insert(format!("{k}[].{key}"));
                }
            }
        }
    }
    let reference = include_str!("../../docs/reference.md");
    let section = reference
        .split("### --emit --json")
        .nth(1)
        .expect("docs/reference.md has a ### --emit --json section");
    let documented: BTreeSet<String> = section
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .filter_map(|l| l.split('`').nth(1).map(String::from))
        .collect();
    assert_eq!(documented, produced);
    assert_eq!(doc["version"], Format::Deepspeed.version());
}
