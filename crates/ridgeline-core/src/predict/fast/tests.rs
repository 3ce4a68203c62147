//! Equality of the cached paths with the plain ones.

use super::decode::Envelope;
use super::prefill::PrefillSegments;
use super::*;
use crate::dtype::Format;
use crate::engine::{Engine, EngineDb};
use crate::hardware::{Hardware, HardwareDb};
use crate::memory::Parallel;
use crate::model::{ModelConfig, ModelDb};
use crate::predict::Scenario;

/// `a` and `b` agree to the relative tolerance `tol`.
pub(super) fn close_to(a: f64, b: f64, tol: f64, what: &str) {
    let tol = tol * a.abs().max(b.abs()).max(1e-30);
    assert!((a - b).abs() <= tol, "{what}: {a} vs {b}");
}

fn close(a: f64, b: f64, what: &str) {
    close_to(a, b, 1e-12, what);
}

/// Every number of two passes agrees to the relative tolerance `tol`.
pub(super) fn same_numbers(a: &PassResult, b: &PassResult, tol: f64, what: &str) {
    let pairs = [
        (a.flops, b.flops, "flops"),
        (a.bytes, b.bytes, "bytes"),
        (a.weight_bytes, b.weight_bytes, "weight_bytes"),
        (a.kv_bytes, b.kv_bytes, "kv_bytes"),
        (a.time_s, b.time_s, "time_s"),
        (a.roofline_time_s, b.roofline_time_s, "roofline"),
    ];
    for (x, y, name) in pairs {
        close_to(x, y, tol, &format!("{what}.{name}"));
    }
    for i in 0..4 {
        close_to(
            a.by_bound[i],
            b.by_bound[i],
            tol,
            &format!("{what}.by_bound[{i}]"),
        );
    }
}

/// The built-in model, device and engine named.
pub(super) fn builtin(
    model: &str,
    gpu: &str,
    engine: &str,
) -> (ModelConfig, &'static Hardware, &'static Engine) {
    (
        ModelDb::builtin().unwrap().resolve(model).unwrap(),
        HardwareDb::builtin().unwrap().get(gpu).unwrap(),
        EngineDb::builtin().unwrap().get(engine).unwrap(),
    )
}

fn same_pass(a: &PassResult, b: &PassResult, what: &str) {
    same_numbers(a, b, 1e-12, what);
    assert_eq!(a.bound(), b.bound(), "{what}.bound");
}

/// Optimised and plain summaries agree over models (dense, GQA, MoE, learned
/// positions), devices, layouts, formats, engines, flash on and off, offload, and
/// batch / prompt / gen including the 0 and 1 edges.
#[test]
fn evaluator_equals_plain_summary() {
    let models = ModelDb::builtin().unwrap();
    let hw = HardwareDb::builtin().unwrap();
    // the built-ins plus one with every overhead term set
    let builtin = EngineDb::builtin().unwrap();
    let extra = EngineDb::from_toml(
        "[slow]\ncompute_efficiency = 0.5\nstep_overhead_s = 2e-4\nlayer_overhead_s = 6e-6\n\
             prefill_layer_overhead_s = 3e-5\n\
             collective_latency_s = 1e-5\nlink_efficiency = 0.7\noverhead_bytes = 2e9\n\
             reserve_fraction = 0.1\n[slow.memory_efficiency]\ndefault = 0.6\nconsumer = 0.9\n",
        "test",
    )
    .unwrap();
    let mut checked = 0;
    for (model, gpu, gpus, parallel, weights, flash, offload, engine) in [
        (
            "llama-3-8b",
            "rtx-4090",
            1,
            Parallel::Tp,
            Some(Format::Q4KM),
            true,
            false,
            "llama.cpp",
        ),
        (
            "llama-3-70b",
            "h100",
            4,
            Parallel::Tp,
            Some(Format::Fp8),
            true,
            false,
            "vllm",
        ),
        (
            "mixtral-8x7b",
            "a100",
            2,
            Parallel::Pp,
            None,
            true,
            false,
            "hf",
        ),
        (
            "mistral-7b",
            "l40s",
            1,
            Parallel::Tp,
            Some(Format::AwqInt4),
            true,
            false,
            "exllamav2",
        ),
        (
            "llama-2-7b",
            "h100",
            1,
            Parallel::Tp,
            None,
            true,
            false,
            "typical",
        ),
        (
            "llama-2-70b",
            "h100",
            4,
            Parallel::Tp,
            Some(Format::Fp8),
            true,
            false,
            "slow",
        ),
        (
            "llama-2-70b",
            "a100",
            8,
            Parallel::Pp,
            None,
            true,
            false,
            "typical",
        ),
        (
            "mixtral-8x7b",
            "h100",
            2,
            Parallel::Tp,
            None,
            false,
            false,
            "ideal",
        ),
        (
            "gpt3-2.7b",
            "rtx-4090",
            1,
            Parallel::Tp,
            Some(Format::Q4_0),
            false,
            false,
            "slow",
        ),
        (
            "llama-3-70b",
            "rtx-4090",
            1,
            Parallel::Tp,
            Some(Format::Q4KM),
            true,
            true,
            "slow",
        ),
        (
            "mpt-7b",
            "l4",
            1,
            Parallel::Tp,
            Some(Format::Int8),
            true,
            false,
            "slow",
        ),
        (
            "qwen2.5-7b",
            "mi300x",
            1,
            Parallel::Tp,
            None,
            true,
            false,
            "typical",
        ),
    ] {
        let m = models.resolve(model).unwrap();
        let h = hw.get(gpu).unwrap();
        let e = extra.get(engine).or_else(|_| builtin.get(engine)).unwrap();
        let s = Scenario {
            gpus,
            parallel,
            weights,
            flash,
            offload,
            ..Scenario::default()
        };
        let p = Predictor::new(&m, h, e, &s).unwrap();
        let mut ev = Evaluator::new(&p);
        for batch in [1u64, 3, 64, 1024] {
            for prompt in [0u64, 1, 17, 512, 8192] {
                for gen_tokens in [0u64, 1, 2, 128, 4000] {
                    let fast = ev.summary(batch, prompt, gen_tokens);
                    let plain = p.summary(batch, prompt, gen_tokens);
                    let what = format!("{model}/{gpu}x{gpus} b{batch} p{prompt} g{gen_tokens}");
                    same_pass(&fast.prefill, &plain.prefill, &format!("{what} prefill"));
                    same_pass(&fast.decode, &plain.decode, &format!("{what} decode"));
                    close(fast.decode_total_s, plain.decode_total_s, &what);
                    close(
                        fast.decode_total_roofline_s,
                        plain.decode_total_roofline_s,
                        &what,
                    );
                    assert_eq!(fast.memory, plain.memory, "{what}");
                    assert_eq!(fast.offloaded_bytes, plain.offloaded_bytes, "{what}");
                    checked += 1;
                }
            }
        }
    }
    assert_eq!(checked, 12 * 4 * 5 * 5);
}

/// Jamba-1.5-Mini's shapes (its config.json's fields that set them): Mamba-1 blocks,
/// attention every eighth layer, experts every other layer.
const JAMBA: &str = r#"{"model_type":"jamba","attn_layer_offset":4,"attn_layer_period":8,
    "expert_layer_offset":1,"expert_layer_period":2,"hidden_size":4096,
    "intermediate_size":14336,"mamba_d_conv":4,"mamba_d_state":16,"mamba_dt_rank":256,
    "mamba_expand":2,"num_attention_heads":32,"num_experts":16,"num_experts_per_tok":2,
    "num_hidden_layers":32,"num_key_value_heads":8,"vocab_size":65536,
    "max_position_embeddings":262144,"tie_word_embeddings":false}"#;

/// The same with the models of 2025-26: windows, latent attention, linear attention,
/// Mamba-2 blocks with MLP-only layers (Nemotron-H), Mamba-1 blocks with experts
/// (Jamba), expert parallelism and speculative decoding (which takes the plain path).
#[test]
fn evaluator_equals_plain_for_new_architectures() {
    use crate::predict::Speculation;
    let models = ModelDb::builtin().unwrap();
    let hw = HardwareDb::builtin().unwrap();
    let engines = EngineDb::builtin().unwrap();
    let spec = Some(Speculation { k: 3, accept: 0.7 });
    for (model, gpu, gpus, ep, spec) in [
        ("gpt-oss-20b", "h100", 1, 1, None),
        ("gemma-3-4b", "l4", 1, 1, None),
        ("deepseek-v3", "h200", 8, 1, None),
        ("deepseek-v3", "h200", 16, 8, None),
        ("qwen3-30b-a3b", "h100", 4, 4, None),
        ("qwen3-next-80b-a3b", "h200", 2, 1, None),
        ("nemotron-h-56b", "h100", 1, 1, None),
        ("nemotron-h-56b", "h200", 4, 1, spec),
        ("jamba", "h100", 2, 1, None),
        ("llama-3.1-8b", "h100", 1, 1, spec),
        ("qwen3-30b-a3b", "h100", 4, 2, spec),
    ] {
        let m = match model {
            "jamba" => crate::model::ModelConfig::from_json_str(JAMBA, model, "c").unwrap(),
            id => models.resolve(id).unwrap(),
        };
        let s = Scenario {
            gpus,
            ep,
            spec,
            weights: Some(Format::Fp8),
            ..Scenario::default()
        };
        let p = Predictor::new(
            &m,
            hw.get(gpu).unwrap(),
            engines.get("typical").unwrap(),
            &s,
        )
        .unwrap();
        let mut ev = Evaluator::new(&p);
        for batch in [1u64, 3, 64, 1024] {
            for prompt in [0u64, 17, 512, 8192] {
                for gen_tokens in [0u64, 1, 128, 4000] {
                    let (fast, plain) = (
                        ev.summary(batch, prompt, gen_tokens),
                        p.summary(batch, prompt, gen_tokens),
                    );
                    let what = format!("{model} ep{ep} b{batch} p{prompt} g{gen_tokens}");
                    same_pass(&fast.prefill, &plain.prefill, &format!("{what} prefill"));
                    same_pass(&fast.decode, &plain.decode, &format!("{what} decode"));
                    close(fast.decode_total_s, plain.decode_total_s, &what);
                    close(fast.speedup, plain.speedup, &what);
                    assert_eq!(fast.memory, plain.memory, "{what}");
                }
            }
        }
    }
}

#[test]
fn envelope_sums_match_sum_max_affine() {
    use crate::predict::affine::sum_max_affine;
    for lines in [
        [(1.0, 0.5), (10.0, 0.1), (3.0, 0.0)],
        [(5.0, 0.0), (0.0, 0.0), (1.0, 0.0)],
        [(0.0, 1.0), (100.0, 0.0), (0.0, 0.0)],
        [(50.0, -0.1), (0.0, 0.2), (30.0, 0.0)],
        [(2.0, 1e-3), (2.0, 1e-3), (0.0, 0.0)],
    ] {
        let env = Envelope::new(&lines);
        for (lo, hi) in [
            (1u64, 1u64),
            (1, 1000),
            (5, 5),
            (20, 30),
            (100, 100_000),
            (499, 501),
        ] {
            let (a, b) = (env.sum(lo, hi), sum_max_affine(&lines, lo, hi));
            assert!(
                (a - b).abs() <= 1e-12 * b.abs().max(1.0),
                "{lines:?} {lo}..{hi}: {a} vs {b}"
            );
        }
    }
}

#[test]
fn prefill_lines_match_plain_passes_and_skip_moe_below_saturation() {
    let models = ModelDb::builtin().unwrap();
    let h = HardwareDb::builtin().unwrap().get("h100").unwrap();
    let e = EngineDb::builtin().unwrap().get("typical").unwrap();
    for (model, gpus, prompt, expect_lines) in [
        ("llama-2-7b", 1, 512, true),
        ("llama-2-70b", 4, 3000, true),
        ("gpt3-2.7b", 1, 100, true),
        ("gpt3-2.7b", 1, 700, true),
        ("mixtral-8x7b", 2, 4, false),
        ("mixtral-8x7b", 2, 8192, true),
    ] {
        let m = models.resolve(model).unwrap();
        let s = Scenario {
            gpus,
            ..Scenario::default()
        };
        let p = Predictor::new(&m, h, e, &s).unwrap();
        let mut segs = PrefillSegments::new(&p, prompt);
        let batches = [1u64, 2, 7, 8, 9, 62, 63, 64, 999, 100_000, 10_000_000];
        for b in batches {
            segs.lines(&p, b);
        }
        assert_eq!(
            segs.segs.iter().all(|s| s.2.is_some_and(|l| l.is_some())),
            expect_lines,
            "{model} prompt {prompt}: {:?}",
            segs.segs
                .iter()
                .map(|s| (s.0, s.1, s.2.map(|l| l.is_some())))
                .collect::<Vec<_>>()
        );
        for b in batches {
            let Some(lines) = segs.lines(&p, b).copied() else {
                continue;
            };
            let fast = p.finish_pass(lines.pass_ops(b), b, b * prompt, 0.0);
            let plain = p.pass(&Step::prefill(b, prompt), 0.0);
            same_pass(&fast, &plain, &format!("{model} b{b} p{prompt}"));
        }
    }
}

#[test]
fn decode_lines_have_one_varying_op_with_flash_and_three_without() {
    let (m, h, e) = builtin("llama-2-7b", "h100", "typical");
    for (flash, n) in [(true, 1), (false, 3)] {
        let s = Scenario {
            flash,
            ..Scenario::default()
        };
        let p = Predictor::new(&m, h, e, &s).unwrap();
        let d = DecodeLines::new(&p, 4).unwrap();
        assert_eq!(d.varying().len(), n);
        assert_eq!(d.batch, 4);
    }
}

/// The hybrid's decode steps take the lines (its Mamba-2 ops are constant in the
/// context, its attention affine), not the plain fallback the equality test would also
/// accept.
#[test]
fn decode_lines_serve_the_mamba_hybrid() {
    let models = ModelDb::builtin().unwrap();
    let hw = HardwareDb::builtin().unwrap();
    let engines = EngineDb::builtin().unwrap();
    let m = models.resolve("nemotron-h-56b").unwrap();
    let s = Scenario::default();
    let (gpu, engine) = (hw.get("h100").unwrap(), engines.get("typical").unwrap());
    let p = Predictor::new(&m, gpu, engine, &s).unwrap();
    for b in [1u64, 7, 256] {
        assert!(
            super::decode::DecodeLines::new(&p, b).is_some(),
            "decode {b}"
        );
    }
}

/// A predictor on kernel tables takes the plain path: the evaluator's summary is the
/// plain one exactly, and differs from the summary without tables (the tables are read).
#[test]
fn an_evaluator_on_kernel_tables_is_the_plain_summary() {
    let (hw_db, engines) = (HardwareDb::builtin().unwrap(), EngineDb::builtin().unwrap());
    let model = ModelDb::builtin().unwrap().resolve("llama-3.1-8b").unwrap();
    let hw = hw_db.get("h100-sxm").unwrap();
    let k = crate::predict::Kernels {
        db: crate::kernels::KernelDb::builtin().unwrap(),
        hardware: hw_db,
        engines,
    };
    let vllm = engines.get("vllm").unwrap();
    let s = Scenario::default();
    let on = k.predictor(&model, hw, vllm, &s).unwrap();
    assert!(on.kernels().is_some());
    let off = Predictor::new(&model, hw, vllm, &s).unwrap();
    let mut ev = Evaluator::new(&on);
    // (16, 512) twice: its prefill is the one kept from the generation before
    for (b, prompt, g) in [
        (1, 512, 128),
        (16, 512, 128),
        (16, 512, 900),
        (16, 2048, 64),
    ] {
        let (fast, plain) = (ev.summary(b, prompt, g), on.summary(b, prompt, g));
        assert_eq!(fast.decode_total_s, plain.decode_total_s);
        assert_eq!(fast.prefill.time_s, plain.prefill.time_s);
        assert_ne!(
            fast.decode_total_s,
            off.summary(b, prompt, g).decode_total_s
        );
    }
}
