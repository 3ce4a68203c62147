//! Hostile inputs: parsers return errors, never panic; mutated configs name the field.
//! (A libFuzzer target needs a nightly toolchain, which this project's machines lack; these
//! proptest-driven runs and the replayed corpus in tests/corpus/ take its place.)

use proptest::prelude::*;
use ridgeline::dtype::Format;
use ridgeline::engine::EngineDb;
use ridgeline::hardware::Hardware;
use ridgeline::model::ModelConfig;

const VALID: &str = r#"{"model_type": "llama", "hidden_size": 4096, "intermediate_size": 11008,
 "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 32, "vocab_size": 32000}"#;

const FIELDS: [&str; 6] = [
    "hidden_size",
    "intermediate_size",
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "vocab_size",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn config_parser_never_panics(s in ".{0,200}") {
        let _ = ModelConfig::from_json_str(&s, "x", "fuzz.json");
    }

    #[test]
    fn truncated_configs_are_errors(cut in 0usize..VALID.len()) {
        let s = &VALID[..cut];
        prop_assert!(ModelConfig::from_json_str(s, "x", "t.json").is_err());
    }

    #[test]
    fn bad_field_values_name_the_field(
        fi in 0usize..FIELDS.len(),
        value in prop::sample::select(vec!["0", "-1", "-4096", "1.5", "\"abc\"", "true", "[]", "1e40", "{}"]),
    ) {
        let field = FIELDS[fi];
        let mut v: serde_json::Value = serde_json::from_str(VALID).unwrap();
        v[field] = serde_json::from_str(value).unwrap();
        let e = ModelConfig::from_json_str(&v.to_string(), "x", "m.json").unwrap_err().to_string();
        prop_assert!(e.contains(field) || e.contains("parameters") || e.contains("num_attention_heads"), "{}: {}", field, e);
    }

    #[test]
    fn hardware_parser_never_panics(s in ".{0,300}") {
        let _ = Hardware::from_toml(&s, "fuzz.toml");
    }

    #[test]
    fn engine_parser_never_panics(s in ".{0,300}") {
        let _ = EngineDb::from_toml(&s, "fuzz.toml");
    }

    #[test]
    fn format_parser_never_panics(s in ".{0,30}") {
        if let Ok(f) = Format::parse(&s) {
            prop_assert!(f.bits() > 0.0 && f.bits().is_finite());
        }
    }
}

#[test]
fn missing_fields_are_named() {
    for field in [
        "hidden_size",
        "num_hidden_layers",
        "num_attention_heads",
        "vocab_size",
    ] {
        let mut v: serde_json::Value = serde_json::from_str(VALID).unwrap();
        v.as_object_mut().unwrap().remove(field);
        let e = ModelConfig::from_json_str(&v.to_string(), "x", "m.json")
            .unwrap_err()
            .to_string();
        assert!(e.contains(field) && e.contains("m.json"), "{e}");
    }
}

#[test]
fn gqa_constraints() {
    let mut v: serde_json::Value = serde_json::from_str(VALID).unwrap();
    v["num_key_value_heads"] = 64.into();
    let e = ModelConfig::from_json_str(&v.to_string(), "x", "m.json")
        .unwrap_err()
        .to_string();
    assert!(e.contains("more than"), "{e}");
    v["num_key_value_heads"] = 5.into();
    let e = ModelConfig::from_json_str(&v.to_string(), "x", "m.json")
        .unwrap_err()
        .to_string();
    assert!(e.contains("does not divide"), "{e}");
    v["num_key_value_heads"] = 8.into();
    v["hidden_size"] = 4000.into();
    v["num_attention_heads"] = 48.into();
    let e = ModelConfig::from_json_str(&v.to_string(), "x", "m.json")
        .unwrap_err()
        .to_string();
    assert!(e.contains("not divisible"), "{e}");
}

/// Replays the hand-written corpus and the libFuzzer corpora (fuzz/corpus, minimized with
/// `cargo fuzz cmin`) through the same checks as the fuzz targets.
#[test]
fn corpus_replays_without_panic() {
    use ridgeline::prelude::*;
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let gpu = HardwareDb::builtin().unwrap().get("h100").unwrap();
    let engine = EngineDb::builtin().unwrap().get("typical").unwrap();
    let s = Scenario {
        prompt: 64,
        gen_tokens: 16,
        ..Scenario::default()
    };
    let (mut n, mut parsed) = (0, 0);
    for dir in ["tests/corpus/config", "fuzz/corpus/config_json"] {
        for entry in std::fs::read_dir(root.join(dir)).unwrap() {
            let bytes = std::fs::read(entry.unwrap().path()).unwrap();
            n += 1;
            let Ok(text) = std::str::from_utf8(&bytes) else {
                continue;
            };
            let Ok(model) = ModelConfig::from_json_str(text, "x", "corpus") else {
                continue;
            };
            parsed += 1;
            if let Ok(p) = Predictor::new(&model, gpu, engine, &s) {
                let sum = p.summary(1, 64, 16);
                assert!(sum.decode.time_s.is_finite() && sum.memory.total_bytes.is_finite());
            }
        }
    }
    assert!(
        n >= 100 && parsed >= 5,
        "corpus is missing: {n} files, {parsed} parsed"
    );
    let mut lists = 0;
    for entry in std::fs::read_dir(root.join("fuzz/corpus/list")).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        if let Ok(text) = std::str::from_utf8(&bytes) {
            if let Ok(v) = ridgeline::list::parse_u64_list("--batch", text) {
                assert!(!v.is_empty());
            }
            lists += 1;
        }
    }
    assert!(lists >= 5);
}

#[test]
fn engine_file_errors_name_the_key() {
    let e = EngineDb::from_toml(
        "[x]\ncompute_efficiency = 1.5\n[x.memory_efficiency]\ndefault = 0.8\n",
        "e.toml",
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("e.toml") && e.contains("compute_efficiency"),
        "{e}"
    );
    let e = EngineDb::from_toml(
        "[x]\ncompute_efficiency = 0.5\n[x.memory_efficiency]\ngpu = 0.8\n",
        "e.toml",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("memory_efficiency.gpu"), "{e}");
}

#[test]
fn moe_top_k_above_experts_is_an_error() {
    let e = ModelConfig::from_json_str(
        r#"{"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 100, "intermediate_size": 128, "num_local_experts": 8, "num_experts_per_tok": 9}"#,
        "x",
        "moe.json",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("num_experts_per_tok"), "{e}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn list_parser_never_panics(s in "[0-9.,:x+ -]{0,40}") {
        if let Ok(v) = ridgeline::list::parse_u64_list("--batch", &s) {
            prop_assert!(!v.is_empty());
        }
    }

    #[test]
    fn list_parser_never_panics_on_any_text(s in ".{0,40}") {
        let _ = ridgeline::list::parse_u64_list("--batch", &s);
        let _ = ridgeline::list::parse_names("--gpu", &s);
    }

    #[test]
    fn ranges_expand_as_written(a in 0u64..1000, len in 0u64..500, step in 1u64..50) {
        let b = a + len;
        let v = ridgeline::list::parse_u64_list("--batch", &format!("{a}..{b}:+{step}")).unwrap();
        prop_assert_eq!(v[0], a);
        prop_assert!(v.windows(2).all(|w| w[1] == w[0] + step));
        prop_assert!(*v.last().unwrap() <= b && *v.last().unwrap() + step > b);
    }
}

#[test]
fn malformed_lists_name_the_token() {
    for (text, token) in [
        ("64..1", "64..1"),
        ("1..x", "1..x"),
        ("", ""),
        ("1,,2", ""),
        ("4..64:x1", "x1"),
    ] {
        let e = ridgeline::list::parse_u64_list("--batch", text)
            .unwrap_err()
            .to_string();
        assert!(e.contains("--batch") && e.contains(token), "{text}: {e}");
    }
}

const MEASUREMENTS_HEADER: &str = "id,kind,gpu,num_gpus,model,precision,batch,prompt_len,gen_len,framework,metric,value,unit,source_url_or_repo_path,notes";

/// Six llama.cpp decode rows (plausible values) with row `bad` (0-based) measured `value`.
fn six_rows_with(bad: usize, value: &str) -> String {
    let rows = [
        ("RTX 3090 24GB", "47.4"),
        ("RTX 4090 24GB", "54.3"),
        ("A100 80GB PCIe", "54.8"),
        ("A100 80GB SXM", "53.5"),
        ("H100 PCIe 80GB", "67.8"),
        ("L40S 48GB", "43.4"),
    ];
    let mut text = format!("{MEASUREMENTS_HEADER}\n");
    for (i, (gpu, v)) in rows.iter().enumerate() {
        let v = if i == bad { value } else { v };
        text.push_str(&format!(
            "r{},A,{gpu},1,Llama-3-8B,f16/f16,1,0,512,llama.cpp,decode tokens/s,{v},tok/s,https://example.org,\n",
            i + 1
        ));
    }
    text
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Whatever one row's value (zero, negative, subnormal, huge, off by any power of
    /// ten), calibrating either succeeds within the bounds, skips that row, or fails
    /// naming that row's line: never a panic, never another row.
    #[test]
    fn a_bad_value_is_blamed_on_its_own_row(
        bad in 0usize..6,
        mantissa in -9.99f64..9.99,
        exponent in -330i32..330,
    ) {
        let value = format!("{mantissa}e{exponent}");
        let text = six_rows_with(bad, &value);
        let rows = match ridgeline::calibrate::parse_measurements(&text, "six.csv") {
            Ok(rows) => rows,
            Err(e) => {
                let e = e.to_string();
                prop_assert!(e.contains(&format!("line {}, column 12 (value)", bad + 2)), "{}", e);
                return Ok(());
            }
        };
        let mapped = ridgeline::calibrate::cases(&rows).unwrap();
        match ridgeline::calibrate::calibrate(&mapped, EngineDb::builtin().unwrap(), None) {
            Ok(cal) => {
                for p in cal.engines.iter().flat_map(|f| &f.params) {
                    prop_assert!(p.value >= p.bounds.0 && p.value <= p.bounds.1, "{:?}", p);
                }
            }
            Err(e) => {
                let e = e.to_string();
                prop_assert!(
                    e.contains(&format!("six.csv: line {}, column 12 (value): r{}:", bad + 2, bad + 1)),
                    "{}: {}", value, e
                );
            }
        }
    }
}
