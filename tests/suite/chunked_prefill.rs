//! Prefill in passes of the engine's `max_batched_tokens` (llama.cpp's 512-token physical
//! batch, chunked prefill): the FLOPs of a chunked prefill are those of one pass (causal
//! attention pairs add up the same), the weights are read once per pass, and the fast
//! path, the `ops` table and the one-pass case agree with it.

use ridgeline::engine::EngineDb;
use ridgeline::hardware::HardwareDb;
use ridgeline::model::ModelDb;
use ridgeline::model::graph::Step;
use ridgeline::predict::{Evaluator, Predictor, Scenario, predict};

fn close(a: f64, b: f64) -> bool {
    (a / b - 1.0).abs() < 1e-9
}

fn scenario(batch: u64, prompt: u64) -> Scenario {
    Scenario {
        batch,
        prompt,
        gen_tokens: 16,
        ..Scenario::default()
    }
}

#[test]
fn a_long_prompt_runs_in_budget_sized_passes_reading_the_weights_each_time() {
    let model = ModelDb::builtin().unwrap().resolve("llama-3-8b").unwrap();
    let gpu = HardwareDb::builtin().unwrap().get("rtx-4090").unwrap();
    let engines = EngineDb::builtin().unwrap();
    let llama = engines.get("llama.cpp").unwrap();
    assert_eq!(llama.scheduler.max_batched_tokens, Some(512));
    let s = scenario(1, 2048);
    let p = Predictor::new(&model, gpu, llama, &s).unwrap();
    assert!(p.prefill_is_chunked(1, 2048) && !p.prefill_is_chunked(1, 512));
    // 2048 tokens in 512-token passes: contexts 512, 1024, 1536, 2048, logits on the last
    let mut steps = Vec::new();
    p.prefill_chunks(1, 2048, |step, w| steps.push((*step, w)));
    let want: Vec<(u64, u64, u64)> = vec![
        (512, 512, 0),
        (512, 1024, 0),
        (512, 1536, 0),
        (512, 2048, 1),
    ];
    let got: Vec<(u64, u64, u64)> = steps
        .iter()
        .map(|(s, _)| (s.new_tokens, s.context, s.logits_per_sequence))
        .collect();
    assert_eq!(got, want);
    let chunked = p.prefill_pass(1, 2048, 0.0);
    let whole = p.pass(&Step::prefill(1, 2048), 0.0);
    // the same work: linear layers see 2048 tokens either way, and causal attention
    // pairs add up the same (chunk i of 512 attends to 512·i earlier tokens plus its own
    // 512·513/2: 4·512·513/2 + 512²·(0+1+2+3) = 2048·2049/2)
    assert!(
        close(chunked.flops, whole.flops),
        "{} vs {}",
        chunked.flops,
        whole.flops
    );
    // the weights are read once per pass: 4 times, except what only the last pass
    // (final norm and lm_head: Llama 3 8B's 4,096 and 128,256 x 4,096 bf16 weights,
    // untied) or only each token (embedding rows: 2,048 x 4,096 bf16 in all) reads
    assert!(!model.tied_embeddings);
    let once = (4096.0 + 128_256.0 * 4096.0) * 2.0;
    let rows = 2048.0 * 4096.0 * 2.0;
    let per_pass = whole.weight_bytes - once - rows;
    let want = 4.0 * per_pass + once + rows;
    assert!(
        close(chunked.weight_bytes, want),
        "{} vs {want}",
        chunked.weight_bytes
    );
    assert!(chunked.time_s > whole.time_s);
    // whole prompts: 8 sequences of 128 with a budget of 512 go 4 to a pass, 2 passes
    let mut steps = Vec::new();
    p.prefill_chunks(8, 128, |step, w| {
        steps.push((step.batch, step.new_tokens, w))
    });
    assert_eq!(steps, vec![(4, 128, 2.0)]);
    // 6 sequences: a pass of 4 and one of 2
    let mut steps = Vec::new();
    p.prefill_chunks(6, 128, |step, w| {
        steps.push((step.batch, step.new_tokens, w))
    });
    assert_eq!(steps, vec![(4, 128, 1.0), (2, 128, 1.0)]);
    // no budget (the pure roofline): one pass
    let ideal = engines.get("ideal").unwrap();
    let q = Predictor::new(&model, gpu, ideal, &s).unwrap();
    assert!(!q.prefill_is_chunked(1, 2048));
    assert_eq!(
        q.prefill_pass(1, 2048, 0.0).time_s,
        q.pass(&Step::prefill(1, 2048), 0.0).time_s
    );
}

#[test]
fn fast_path_ops_table_and_report_agree_with_the_chunked_prefill() {
    let model = ModelDb::builtin().unwrap().resolve("llama-3-8b").unwrap();
    let gpu = HardwareDb::builtin().unwrap().get("rtx-4090").unwrap();
    let llama = EngineDb::builtin().unwrap().get("llama.cpp").unwrap();
    for (batch, prompt) in [(1, 2048), (3, 700), (8, 128), (1, 300)] {
        let s = scenario(batch, prompt);
        let p = Predictor::new(&model, gpu, llama, &s).unwrap();
        let plain = p.summary(batch, prompt, 16);
        let mut ev = Evaluator::new(&p);
        let fast = ev.summary(batch, prompt, 16);
        assert!(
            close(fast.prefill.time_s, plain.prefill.time_s),
            "{batch} x {prompt}"
        );
        assert!(
            close(fast.prefill.flops, plain.prefill.flops),
            "{batch} x {prompt}"
        );
        let r = predict(&model, gpu, llama, &s).unwrap();
        assert!(close(r.prefill.time_s, plain.prefill.time_s));
        // the prefill rows of `ops` sum to the prefill's FLOPs and bytes
        let rows = r.ops.iter().filter(|o| o.phase.to_string() == "prefill");
        let (flops, bytes) = rows.fold((0.0, 0.0), |(f, b), o| (f + o.flops, b + o.bytes));
        assert!(
            close(flops, r.prefill.flops),
            "{flops} vs {}",
            r.prefill.flops
        );
        assert!(
            close(bytes, r.prefill.bytes),
            "{bytes} vs {}",
            r.prefill.bytes
        );
    }
}

#[test]
fn with_expert_parallelism_each_attention_group_has_its_own_budget() {
    let model = ModelDb::builtin()
        .unwrap()
        .resolve("qwen3-30b-a3b")
        .unwrap();
    let gpu = HardwareDb::builtin().unwrap().get("h100-sxm").unwrap();
    let typical = EngineDb::builtin().unwrap().get("typical").unwrap();
    assert_eq!(typical.scheduler.max_batched_tokens, Some(8192));
    let on_two = |ep: u64| Scenario {
        gpus: 2,
        ep,
        ..scenario(4, 4096)
    };
    let tp = Predictor::new(&model, gpu, typical, &on_two(1)).unwrap();
    let ep = Predictor::new(&model, gpu, typical, &on_two(2)).unwrap();
    // 4 x 4096 = 16,384 tokens: over one scheduler's 8,192, but 2 x 4096 = 8,192 per
    // group with two data-parallel attention groups
    assert!(tp.prefill_is_chunked(4, 4096));
    assert!(!ep.prefill_is_chunked(4, 4096));
    let steps = |p: &Predictor, batch, prompt| {
        let mut v = Vec::new();
        p.prefill_chunks(batch, prompt, |s, w| {
            v.push((s.batch, s.new_tokens, s.context, w))
        });
        v
    };
    assert_eq!(steps(&ep, 4, 4096), vec![(4, 4096, 4096, 1.0)]);
    assert_eq!(steps(&tp, 4, 4096), vec![(2, 4096, 4096, 2.0)]);
    // 8 prompts: 8192 / 4096 = 2 per group per pass, 4 per pass over both groups
    assert_eq!(steps(&ep, 8, 4096), vec![(4, 4096, 4096, 2.0)]);
    // a 16,384-token prompt per group: two chunks of 8,192, both groups at once
    assert_eq!(
        steps(&ep, 2, 16384),
        vec![(2, 8192, 8192, 1.0), (2, 8192, 16384, 1.0)]
    );
    // 3 such prompts: chunks run for two sequences at a time, 1.5 times
    assert_eq!(
        steps(&ep, 3, 16384),
        vec![(2, 8192, 8192, 1.5), (2, 8192, 16384, 1.5)]
    );
    // the fast path agrees
    for (batch, prompt) in [(4, 4096), (8, 4096), (2, 16384), (5, 3000)] {
        let s = Scenario {
            batch,
            prompt,
            ..on_two(2)
        };
        let p = Predictor::new(&model, gpu, typical, &s).unwrap();
        let plain = p.summary(batch, prompt, 16);
        let fast = Evaluator::new(&p).summary(batch, prompt, 16);
        assert!(
            close(fast.prefill.time_s, plain.prefill.time_s),
            "{batch} x {prompt}"
        );
    }
}
