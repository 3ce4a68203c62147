//! Invariants that must hold for any input, checked with proptest.

use proptest::prelude::*;
use ridgeline::model::graph::{Precision, Shard, Step, forward};
use ridgeline::ops::{AttentionShape, Operand, attention_fused, gemm};
use ridgeline::prelude::*;
use ridgeline::roofline::{Ceilings, Efficiency, place};

const MODELS: [&str; 5] = [
    "llama-2-7b",
    "llama-3-8b",
    "mixtral-8x7b",
    "mpt-7b",
    "qwen2.5-coder-3b",
];
const GPUS: [&str; 5] = ["h100-sxm", "rtx-4090", "l4", "mi300x", "m2-ultra"];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn placed_time_never_beats_either_roof(
        m in 1u64..4096, n in 1u64..16384, k in 1u64..16384,
        wbits in prop::sample::select(vec![4.5, 8.0, 16.0]),
        eff_c in 0.1f64..=1.0, eff_m in 0.1f64..=1.0, overhead in 0.0f64..1e-4,
    ) {
        let c = gemm(1, m, n, k, Operand::activations(16.0), Operand::weights(wbits), Operand::activations(16.0));
        let roof = Ceilings { peak_flops_per_s: 989.5e12, memory_bytes_per_s: 3.35e12, link_bytes_per_s: None };
        let p = place(&c, &roof, &Efficiency { compute: eff_c, memory: eff_m, link: 1.0, overhead_s: overhead });
        prop_assert!(p.time_s >= c.flops / roof.peak_flops_per_s);
        prop_assert!(p.time_s >= c.bytes() / roof.memory_bytes_per_s);
        prop_assert!(p.time_s >= p.roofline_time_s);
        prop_assert!(p.attainable_flops_per_s <= roof.peak_flops_per_s);
    }

    #[test]
    fn kv_bytes_linear_in_context(l in 1u64..100_000, batch in 1u64..64, kv_heads in prop::sample::select(vec![1u64, 8, 32])) {
        let s = |kv_len| AttentionShape::gqa(batch, 1, kv_len, 32, kv_heads, 128, 16.0, 16.0);
        let one = attention_fused(&s(l)).read.kv;
        let two = attention_fused(&s(2 * l)).read.kv;
        prop_assert_eq!(two, 2.0 * one);
    }

    #[test]
    fn decode_intensity_never_drops_with_batch(
        mi in 0usize..MODELS.len(), context in 1u64..8192, batch in 1u64..256,
    ) {
        let model = ModelDb::builtin().unwrap().resolve(MODELS[mi]).unwrap();
        let p = Precision { weights: Format::Bf16, kv: Format::Bf16, activations: ComputeDtype::Bf16, experts: Format::Bf16, kernels: Default::default() };
        let at = |b| forward(&model, &Step::decode(b, context), &p, &Shard::tp(1, model.layers), true).total().intensity();
        prop_assert!(at(batch + 1) >= at(batch) * (1.0 - 1e-12));
    }

    #[test]
    fn memory_monotone_in_batch_and_context(
        mi in 0usize..MODELS.len(), gi in 0usize..GPUS.len(), batch in 1u64..512, prompt in 0u64..8192, gen_tokens in 0u64..2048,
    ) {
        let model = ModelDb::builtin().unwrap().resolve(MODELS[mi]).unwrap();
        let gpu = HardwareDb::builtin().unwrap().get(GPUS[gi]).unwrap();
        let engine = EngineDb::builtin().unwrap().get("typical").unwrap();
        let p = Predictor::new(&model, gpu, engine, &Scenario::default()).unwrap();
        let (a, _) = p.memory(batch, prompt, gen_tokens);
        let (b, _) = p.memory(batch + 1, prompt, gen_tokens);
        let (c, _) = p.memory(batch, prompt + 1, gen_tokens);
        prop_assert!(b.total_bytes >= a.total_bytes);
        prop_assert!(c.total_bytes >= a.total_bytes);
        prop_assert!(a.fits || !b.fits);
    }

    #[test]
    fn predictions_are_finite(
        mi in 0usize..MODELS.len(), gi in 0usize..GPUS.len(), batch in 1u64..100_000,
        prompt in 0u64..100_000, gen_tokens in 0u64..10_000, flash in any::<bool>(),
        fmt in prop::sample::select(vec!["bf16", "fp8", "q4_k_m", "nf4", "bpw:3.5"]),
        engine in prop::sample::select(vec!["ideal", "typical"]),
    ) {
        let model = ModelDb::builtin().unwrap().resolve(MODELS[mi]).unwrap();
        let gpu = HardwareDb::builtin().unwrap().get(GPUS[gi]).unwrap();
        let engine = EngineDb::builtin().unwrap().get(engine).unwrap();
        let s = Scenario { batch, prompt, gen_tokens, weights: Some(Format::parse(fmt).unwrap()), flash, ..Scenario::default() };
        let pred = predict(&model, gpu, engine, &s).unwrap();
        let json = serde_json::to_value(&pred).unwrap();
        fn check(v: &serde_json::Value, path: &str) -> std::result::Result<(), TestCaseError> {
            match v {
                serde_json::Value::Number(n) => {
                    let f = n.as_f64().unwrap();
                    prop_assert!(f.is_finite() && f >= 0.0, "{} = {}", path, f);
                }
                serde_json::Value::Object(m) => for (k, x) in m { check(x, &format!("{path}.{k}"))?; },
                serde_json::Value::Array(a) => for x in a { check(x, path)?; },
                _ => {}
            }
            Ok(())
        }
        check(&json, "")?;
        prop_assert!(pred.generation.decode_tokens_per_s <= pred.generation.roofline_decode_tokens_per_s * (1.0 + 1e-9) || gen_tokens == 0);
    }

    #[test]
    fn generation_closed_form_equals_step_sum(
        mi in 0usize..MODELS.len(), batch in 1u64..64, prompt in 0u64..4096, gen_tokens in 1u64..300,
    ) {
        let model = ModelDb::builtin().unwrap().resolve(MODELS[mi]).unwrap();
        let gpu = HardwareDb::builtin().unwrap().get("h100").unwrap();
        let engine = EngineDb::builtin().unwrap().get("typical").unwrap();
        let p = Predictor::new(&model, gpu, engine, &Scenario::default()).unwrap();
        // what production runs: the generation sum inside `summary` (and the sweep's
        // Evaluator, held equal to it by its own test)
        let closed = p.summary(batch, prompt, gen_tokens).decode_total_s;
        let (lo, hi) = ridgeline::predict::decode_steps(prompt, gen_tokens);
        let looped: f64 = (lo..=hi).map(|l| p.pass(&Step::decode(batch, l), 0.0).time_s).sum();
        prop_assert!((closed - looped).abs() <= 1e-9 * looped, "{} vs {}", closed, looped);
    }
}
