//! Iterations against the plain passes: a pure decode batch at one context is the
//! decode step, a batch of whole prompts of one length is the prefill.

use super::super::tests::{builtin, close_to, same_numbers};
use super::*;
use crate::engine::EngineDb;
use crate::hardware::HardwareDb;
use crate::memory::Parallel;
use crate::model::ModelDb;
use crate::ops;
use crate::predict::Scenario;

/// The iteration and the plain pass agree to 1e-9 in every number.
fn same(a: &PassResult, b: &PassResult, what: &str) {
    same_numbers(a, b, 1e-9, what);
}

/// Every bundled model (dense, GQA, MoE, windows, latent and linear attention), with
/// tensor and pipeline parallelism and naive attention on some.
#[test]
fn pure_batches_are_the_plain_passes() {
    let hw = HardwareDb::builtin().unwrap();
    let engine = EngineDb::builtin().unwrap().get("typical").unwrap();
    for (i, model) in ModelDb::builtin().unwrap().models().iter().enumerate() {
        let (gpus, parallel, flash) = match i % 4 {
            0 => (1, Parallel::Tp, true),
            1 => (2, Parallel::Tp, true),
            2 => (2, Parallel::Pp, true),
            _ => (1, Parallel::Tp, false),
        };
        let s = Scenario {
            gpus,
            parallel,
            flash,
            ..Scenario::default()
        };
        let Ok(p) = Predictor::new(model, hw.get("h100").unwrap(), engine, &s) else {
            continue;
        };
        let mut it = IterationCost::new(&p);
        for (b, l) in [(1u64, 1u64), (1, 700), (8, 4096), (64, 33_000), (5, 129)] {
            for _ in 0..b {
                it.add_decode(l);
            }
            let what = format!("{} decode b{b} L{l}", model.id);
            same(&it.finish(), &p.pass(&Step::decode(b, l), 0.0), &what);
        }
        for (b, prompt) in [(1u64, 2u64), (1, 512), (4, 3000), (16, 128)] {
            for _ in 0..b {
                it.add_chunk(prompt, prompt);
            }
            let what = format!("{} prefill b{b} P{prompt}", model.id);
            same(&it.finish(), &p.pass(&Step::prefill(b, prompt), 0.0), &what);
        }
        assert_eq!(it.finish(), PassResult::default());
    }
}

/// A decode group of different contexts costs the decode step at their mean context
/// where attention is affine in the context (no window): Llama-3-8B, 2 sequences at
/// 1000 and 3000 = 2 at 2000.
#[test]
fn decode_contexts_add_up() {
    let (model, hw, engine) = builtin("llama-3-8b", "a100", "vllm");
    let p = Predictor::new(&model, hw, engine, &Scenario::default()).unwrap();
    let mut it = IterationCost::new(&p);
    assert!(it.closed_form());
    it.add_decode(1000);
    it.add_decode(3000);
    same(
        &it.finish(),
        &p.pass(&Step::decode(2, 2000), 0.0),
        "mixed contexts",
    );
}

/// A mixed iteration reads the weights once: it costs more than either part alone and
/// less than both apart (Llama-3-8B on an H100: 64 decodes at 2,000 beside a prompt
/// chunk of 1,024 tokens).
#[test]
fn mixed_iterations_share_the_weights() {
    let (model, hw, engine) = builtin("llama-3-8b", "h100", "typical");
    let p = Predictor::new(&model, hw, engine, &Scenario::default()).unwrap();
    let mut it = IterationCost::new(&p);
    let decode = p.pass(&Step::decode(64, 2000), 0.0);
    let prefill = p.pass(&Step::prefill(1, 1024), 0.0);
    for _ in 0..64 {
        it.add_decode(2000);
    }
    it.add_chunk(1024, 1024);
    let both = it.finish();
    assert!(both.time_s > decode.time_s.max(prefill.time_s), "{both:?}");
    assert!(both.time_s < decode.time_s + prefill.time_s, "{both:?}");
    // weights once: the mixed pass reads the prefill's weight bytes and one more
    // embedding row (4,096 x 2 bytes) for each of the 64 decoded tokens
    close_to(
        both.weight_bytes,
        prefill.weight_bytes + 64.0 * 4096.0 * 2.0,
        1e-9,
        "weights",
    );
    // a second chunk over a cached prefix attends to it: more work than a first chunk
    it.add_chunk(1024, 2048);
    let second = it.finish();
    assert!(second.flops > prefill.flops && second.kv_bytes > prefill.kv_bytes);
}

/// Every bundled model's decode group has the closed form (windows, latent and linear
/// attention included), on one device and over two.
#[test]
fn decode_groups_are_closed_forms() {
    let hw = HardwareDb::builtin().unwrap().get("h200").unwrap();
    let engine = EngineDb::builtin().unwrap().get("typical").unwrap();
    for model in ModelDb::builtin().unwrap().models() {
        for (gpus, flash) in [(1, true), (2, false)] {
            let s = Scenario {
                gpus,
                flash,
                ..Scenario::default()
            };
            if let Ok(p) = Predictor::new(model, hw, engine, &s) {
                assert!(
                    IterationCost::new(&p).closed_form(),
                    "{} gpus {gpus} flash {flash}",
                    model.id
                );
            }
        }
    }
}

/// Every op classed as a token op costs the same in a decode pass of `n` sequences and
/// a prefill of one `n`-token prompt (it depends on the token count alone): a new op
/// kind that depends on the sequences fails here until it is classed.
#[test]
fn token_ops_depend_on_the_token_count_alone() {
    let hw = HardwareDb::builtin().unwrap().get("h100").unwrap();
    let engine = EngineDb::builtin().unwrap().get("typical").unwrap();
    for model in ModelDb::builtin().unwrap().models() {
        let Ok(p) = Predictor::new(model, hw, engine, &Scenario::default()) else {
            continue;
        };
        for n in [6u64, 300] {
            let of = |step: &Step| -> Vec<(OpKind, ops::Cost)> {
                p.graph(step)
                    .ops()
                    .iter()
                    .filter(|o| class(o.kind) == Class::Token)
                    .map(|o| (o.kind, o.total()))
                    .collect()
            };
            assert_eq!(
                of(&Step::decode(n, 1)),
                of(&Step::prefill(1, n)),
                "{}: token ops at {n} tokens",
                model.id
            );
        }
    }
}

/// With speculative decoding, a verify pass beside a prompt chunk runs in the chunk's
/// forward pass: Llama-3.1-8B drafted by Llama-3.2-1B (k = 3) on an H100, 16 sequences
/// verifying at 2,000 tokens beside a 1,024-token chunk. Apart, the target's weights
/// are read twice (the verify pass, the chunk's pass); together once: the two apart
/// read one plain decode pass's weight bytes more than together, less the one
/// embedding row (4,096 bf16 values) that pass reads for its token (the embedding rows
/// of the 64 verify tokens and the 1,024 prompt tokens are read either way, as are the
/// drafts and the draft's pass over the prompt).
#[test]
fn a_verify_pass_joins_the_prompt_chunks_pass() {
    let (model, hw, engine) = builtin("llama-3.1-8b", "h100", "typical");
    let draft = ModelDb::builtin().unwrap().resolve("llama-3.2-1b").unwrap();
    let s = Scenario {
        spec: Some(crate::predict::Speculation { k: 3, accept: 0.7 }),
        ..Scenario::default()
    };
    let p = Predictor::new(&model, hw, engine, &s)
        .unwrap()
        .with_draft(&draft)
        .unwrap();
    let mut it = IterationCost::new(&p);
    let verify = |it: &mut IterationCost| {
        for _ in 0..16 {
            it.add_decode(2000);
        }
    };
    verify(&mut it);
    let alone = it.finish();
    it.add_chunk(1024, 1024);
    let chunk = it.finish();
    verify(&mut it);
    it.add_chunk(1024, 1024);
    let both = it.finish();
    let target = p.pass(&Step::decode(1, 2000), 0.0).weight_bytes;
    close_to(
        alone.weight_bytes + chunk.weight_bytes - both.weight_bytes,
        target - 4096.0 * 2.0,
        1e-9,
        "weights once",
    );
    assert!(both.time_s < alone.time_s + chunk.time_s, "{both:?}");
    assert!(both.time_s > alone.time_s.max(chunk.time_s), "{both:?}");
    // without a chunk the speculating group is predict's decode step, as before
    verify(&mut it);
    same(&it.finish(), &alone, "verify alone");
}

/// The bundled devices, engines and kernel tables.
fn bundled_tables() -> (
    &'static HardwareDb,
    &'static EngineDb,
    crate::predict::Kernels<'static>,
) {
    let (hardware, engines) = (HardwareDb::builtin().unwrap(), EngineDb::builtin().unwrap());
    let db = crate::kernels::KernelDb::builtin().unwrap();
    (
        hardware,
        engines,
        crate::predict::Kernels {
            db,
            hardware,
            engines,
        },
    )
}

/// On kernel tables, pure batches are still exactly the plain passes on the same tables
/// (dense, MoE, windowed and latent-attention models under vLLM on an H100 SXM, whose
/// own tables cover them, on one device and over two), and the tables are read: a decode
/// batch costs other than on the engine's fitted costs.
#[test]
fn pure_batches_are_the_plain_passes_on_kernel_tables() {
    let (hw, engines, kernels) = bundled_tables();
    let gpu = hw.get("h100-sxm").unwrap();
    let engine = engines.get("vllm").unwrap();
    let models = ModelDb::builtin().unwrap();
    for id in ["llama-3-8b", "qwen3-30b-a3b", "gpt-oss-20b", "deepseek-v3"] {
        let model = models.resolve(id).unwrap();
        for gpus in [1u64, 2] {
            let s = Scenario {
                gpus,
                ..Scenario::default()
            };
            let p = kernels.predictor(&model, gpu, engine, &s).unwrap();
            assert!(p.kernels().is_some(), "{id}");
            let fitted = Predictor::new(&model, gpu, engine, &s).unwrap();
            let mut it = IterationCost::new(&p);
            for (b, l) in [(1u64, 700u64), (8, 4096), (5, 129)] {
                for _ in 0..b {
                    it.add_decode(l);
                }
                let what = format!("{id} x{gpus} decode b{b} L{l}");
                let got = it.finish();
                same(&got, &p.pass(&Step::decode(b, l), 0.0), &what);
                let off = fitted.pass(&Step::decode(b, l), 0.0).time_s;
                assert!((got.time_s / off - 1.0).abs() > 1e-3, "{what}: {off}");
            }
            for (b, prompt) in [(1u64, 512u64), (4, 3000), (16, 128)] {
                for _ in 0..b {
                    it.add_chunk(prompt, prompt);
                }
                let what = format!("{id} x{gpus} prefill b{b} P{prompt}");
                same(&it.finish(), &p.pass(&Step::prefill(b, prompt), 0.0), &what);
            }
            assert_eq!(it.finish(), PassResult::default());
        }
    }
}

/// On kernel tables, chunks of one length in one iteration run as one pass of them (the
/// tables' prefill attention at their batch), and a decode group at different contexts
/// as a decode step at their mean: Llama-3-8B under vLLM on an H100 SXM, 2 prompts of
/// 1,000 and 2 of 3,000 tokens beside 2 decodes at 1,000 and 3,000.
#[test]
fn kernel_tables_group_chunks_by_shape_and_decodes_at_their_mean() {
    let (hw, engines, kernels) = bundled_tables();
    let model = ModelDb::builtin().unwrap().resolve("llama-3-8b").unwrap();
    let (gpu, engine) = (hw.get("h100-sxm").unwrap(), engines.get("vllm").unwrap());
    let p = kernels
        .predictor(&model, gpu, engine, &Scenario::default())
        .unwrap();
    let mut it = IterationCost::new(&p);
    for (c, k) in [(1000, 1000), (3000, 3000), (1000, 1000), (3000, 3000)] {
        it.add_chunk(c, k);
    }
    it.add_decode(1000);
    it.add_decode(3000);
    let got = it.finish();
    // by hand: the token ops of 8,002 tokens, logits for 6 rows, the per-sequence ops
    // of 2 x 1,000-token prompts, 2 x 3,000-token prompts and 2 decodes at 2,000, and
    // the pass overheads of 6 sequences
    let token = class_pass(&p, &Step::prefill(1, 8002), Class::Token);
    let head = class_pass(&p, &Step::decode(6, 1), Class::Head);
    let a = class_pass(&p, &Step::prefill(2, 1000), Class::PerSequence);
    let b = class_pass(&p, &Step::prefill(2, 3000), Class::PerSequence);
    let d = class_pass(&p, &Step::decode(2, 2000), Class::PerSequence);
    let parts = add(add(add(token, head), add(a, b)), d);
    // of each layer's 11 launches the tables time the QKV, output, gate-up and down
    // projections (4 x 32) and the attention, placed three times (the two chunk groups
    // and the decodes) but launched once per layer in the count (32), and the 2 x 32
    // residual adds run inside the norms: 224 paid for, as in a plain pass
    assert_eq!(parts.measured_launches + parts.measured_attention, 224.0);
    let want = p.finish_pass(parts, 6, 8002, 0.0);
    same(&got, &want, "grouped");
}
