//! The serving simulation against what it must agree with: static batching (predict),
//! batch-1 latency at a vanishing rate, Little's law, monotone percentiles, the static
//! maximum throughput, a trace replayed request by request, prefix hits, the KV
//! transfer of disaggregation, determinism, and hostile inputs.

use proptest::prelude::*;
use ridgeline::model::graph::Step;
use ridgeline::predict::{IterationCost, Speculation};
use ridgeline::prelude::*;
use ridgeline::simulate::*;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_ridgeline");

struct Setup {
    model: ModelConfig,
    gpu: &'static Hardware,
    engine: &'static Engine,
}

fn setup(model: &str, gpu: &str, engine: &str) -> Setup {
    Setup {
        model: ModelDb::builtin().unwrap().resolve(model).unwrap(),
        gpu: HardwareDb::builtin().unwrap().get(gpu).unwrap(),
        engine: EngineDb::builtin().unwrap().get(engine).unwrap(),
    }
}

fn fixed(arrivals: Arrivals, requests: u64, prompt: u64, gen_tokens: u64) -> Workload {
    Workload {
        arrivals,
        requests,
        prompt: Dist::Fixed { tokens: prompt },
        gen_tokens: Dist::Fixed { tokens: gen_tokens },
        seed: 7,
    }
}

impl Setup {
    fn run(&self, serving: &Serving, w: &Workload) -> Run {
        simulate(
            &self.model,
            self.gpu,
            self.engine,
            &Scenario::default(),
            serving,
            w,
        )
        .unwrap()
    }

    fn predictor(&self) -> Predictor<'_> {
        Predictor::new(&self.model, self.gpu, self.engine, &Scenario::default()).unwrap()
    }
}

/// The server's front-end time per request every simulated TTFT and end-to-end
/// latency holds (data/front-end.toml) where a test does not set one.
fn front() -> f64 {
    ridgeline::engine::front_end::FrontEnd::builtin()
        .unwrap()
        .request_overhead_s
}

fn within(got: f64, want: f64, tol: f64, what: &str) {
    assert!(
        (got / want - 1.0).abs() <= tol,
        "{what}: simulated {got} vs {want} (more than {:.0}% apart)",
        tol * 100.0
    );
}

/// A closed loop of C users with fixed lengths is static batching: every request
/// starts with the others and ends with them. Its output tokens/s is predict's
/// `batch x gen / total_s` at batch C within 15%.
#[test]
fn closed_loop_is_static_batching() {
    let s = setup("llama-3-8b", "h100", "typical");
    let p = s.predictor();
    for c in [1u64, 8, 32] {
        let run = s.run(
            &Serving::default(),
            &fixed(Arrivals::Closed { concurrency: c }, 10 * c, 512, 128),
        );
        let static_ = p
            .predict(c, 512, 128)
            .unwrap()
            .generation
            .output_tokens_per_s;
        within(
            run.throughput.output_tokens_per_s,
            static_,
            0.15,
            &format!("concurrency {c}"),
        );
        assert_eq!(run.completed, 10 * c);
    }
}

/// At a vanishing rate every request runs alone: p50 TTFT and TPOT are batch-1
/// predict's within 10% (Llama-3-8B on an H100, 0.01 requests/s).
#[test]
fn vanishing_rate_is_batch_one() {
    let s = setup("llama-3-8b", "h100", "vllm");
    let g = s.predictor().predict(1, 512, 128).unwrap().generation;
    let run = s.run(
        &Serving::default(),
        &fixed(Arrivals::Poisson { rate: 0.01 }, 60, 512, 128),
    );
    within(run.ttft_s.p50, g.ttft_s + front(), 0.10, "TTFT p50");
    within(run.tpot_s.p50, g.tpot_s, 0.10, "TPOT p50");
    // and the mean batch is ~1, nobody queues behind a whole request
    assert!(run.mean_batch < 1.05 && run.queue_s.p50 == 0.0, "{run:?}");
}

/// Little's law: the time average of the requests in the system (integrated event by
/// event) equals throughput x mean end-to-end time (from the per-request latencies)
/// within 5% over a long run.
#[test]
fn littles_law_holds() {
    let s = setup("llama-3-8b", "a100", "vllm");
    let w = Workload {
        prompt: Dist::Lognormal {
            median: 400.0,
            sigma: 0.6,
        },
        gen_tokens: Dist::Uniform { lo: 16, hi: 256 },
        ..fixed(Arrivals::Poisson { rate: 12.0 }, 3000, 0, 1)
    };
    let run = s.run(&Serving::default(), &w);
    let little = run.throughput.requests_per_s * run.e2e_s.mean;
    within(run.mean_requests_in_system, little, 0.05, "Little's law");
    assert!(
        run.mean_requests_in_system > 2.0,
        "a loaded run: {}",
        run.mean_requests_in_system
    );
}

/// The same requests closer together never get faster: every percentile of TTFT, TPOT
/// and E2E is non-decreasing in the rate, and the knee is where throughput stops
/// following the rate.
#[test]
fn percentiles_never_fall_as_the_rate_rises() {
    let s = setup("llama-3-8b", "h100", "vllm");
    let w = Workload {
        prompt: Dist::Uniform { lo: 200, hi: 1200 },
        gen_tokens: Dist::Lognormal {
            median: 120.0,
            sigma: 0.5,
        },
        ..fixed(Arrivals::Poisson { rate: 1.0 }, 800, 0, 1)
    };
    let rates = [1.0, 4.0, 10.0, 20.0, 30.0, 40.0, 60.0, 90.0];
    let sweep = simulate_rates(
        &s.model,
        s.gpu,
        s.engine,
        &Scenario::default(),
        &Serving::default(),
        &w,
        &rates,
    )
    .unwrap();
    let pick = |r: &Run| -> Vec<f64> {
        [r.ttft_s, r.tpot_s, r.e2e_s]
            .iter()
            .flat_map(|x| [x.p50, x.p90, x.p99])
            .collect()
    };
    for pair in sweep.rows.windows(2) {
        let (a, b) = (pick(&pair[0]), pick(&pair[1]));
        for (k, (x, y)) in a.iter().zip(&b).enumerate() {
            // a higher rate draws other arrivals: allow 2% of sampling noise
            assert!(
                *y >= 0.98 * x,
                "percentile {k} fell from {x} to {y} between {:?} and {:?}",
                pair[0].rate_per_s,
                pair[1].rate_per_s
            );
        }
    }
    let knee = sweep
        .knee
        .expect("90 requests/s saturates one H100 at these lengths");
    assert!(knee.rate_per_s > 4.0 && knee.capacity_requests_per_s < knee.rate_per_s);
    assert!(sweep.rows.iter().all(|r| r.completed == 800));
    // saturation is monotone in the rate (the same requests, closer together), and the
    // capacity is what the saturated runs completed per second, not a start-up burst:
    // no saturated run completed more, and every one at or above the knee is flagged
    let flags: Vec<bool> = sweep.rows.iter().map(|r| r.saturated).collect();
    assert!(flags.windows(2).all(|w| w[0] <= w[1]), "{flags:?}");
    for r in sweep.rows.iter().filter(|r| r.saturated) {
        assert!(
            r.throughput.requests_per_s <= knee.capacity_requests_per_s,
            "{r:?}"
        );
        assert!(r.rate_per_s.unwrap() >= knee.rate_per_s);
    }
}

/// No rate serves more than static batching at the largest batch that fits, +15%: here
/// with max_num_seqs lifted so memory alone limits the batch.
#[test]
fn throughput_stays_under_the_static_maximum() {
    let s = setup("llama-2-7b", "a100", "typical");
    let p = s.predictor();
    let top = p.max_batch(512, 128);
    let ceiling = p
        .predict(top, 512, 128)
        .unwrap()
        .generation
        .output_tokens_per_s;
    let serving = Serving {
        max_num_seqs: Some(1 << 20),
        ..Serving::default()
    };
    for rate in [20.0, 80.0, 400.0] {
        let run = s.run(&serving, &fixed(Arrivals::Poisson { rate }, 1500, 512, 128));
        assert!(
            run.throughput.output_tokens_per_s <= 1.15 * ceiling,
            "{rate}/s: {} > 1.15 x {ceiling} (batch {top})",
            run.throughput.output_tokens_per_s
        );
    }
}

/// A trace replays exactly its requests: spaced far apart, each runs alone, and its
/// end-to-end time is predict's TTFT plus all its decode steps at its own lengths.
#[test]
fn traces_replay_their_requests() {
    let s = setup("qwen2.5-7b", "l40s", "vllm");
    let p = s.predictor();
    let rows: Vec<TraceRequest> = [(300u64, 40u64), (1500, 7), (64, 200), (4000, 1), (900, 33)]
        .iter()
        .enumerate()
        .map(|(i, &(prompt, gen_tokens))| TraceRequest {
            arrival_s: 100.0 * i as f64 + 3.0,
            prompt,
            gen_tokens,
        })
        .collect();
    let want: f64 = rows
        .iter()
        .map(|r| {
            let sm = p.summary(1, r.prompt, r.gen_tokens);
            sm.prefill.time_s + sm.decode_total_s
        })
        .sum::<f64>()
        / rows.len() as f64;
    let w = Workload {
        requests: rows.len() as u64,
        ..fixed(Arrivals::Trace(rows.clone()), 1, 1, 1)
    };
    let run = s.run(&Serving::default(), &w);
    assert_eq!((run.requests, run.completed, run.rejected), (5, 5, 0));
    within(run.e2e_s.mean, want + front(), 1e-9, "mean end-to-end");
    // every prompt and output token was served: Σ prompt = 6,764, Σ gen = 281
    within(
        run.throughput.input_tokens_per_s * run.duration_s,
        6764.0,
        1e-9,
        "input tokens",
    );
    within(
        run.throughput.output_tokens_per_s * run.duration_s,
        281.0,
        1e-9,
        "output tokens",
    );
    // from the first arrival (3 s) to the last completion
    let last = rows.last().unwrap();
    let sm = p.summary(1, last.prompt, last.gen_tokens);
    within(
        run.duration_s,
        400.0 + sm.prefill.time_s + sm.decode_total_s,
        1e-9,
        "duration",
    );
}

/// Prefix hits skip prompt tokens: TTFT falls, close to the prefill of the rest.
#[test]
fn prefix_hits_shorten_ttft() {
    let s = setup("llama-3-8b", "h100", "vllm");
    let w = fixed(Arrivals::Poisson { rate: 0.05 }, 40, 4096, 16);
    let cold = s.run(&Serving::default(), &w);
    let warm = s.run(
        &Serving {
            prefix_hit: 0.75,
            ..Serving::default()
        },
        &w,
    );
    assert!(
        warm.ttft_s.p50 < 0.5 * cold.ttft_s.p50,
        "{} vs {}",
        warm.ttft_s.p50,
        cold.ttft_s.p50
    );
    // 3,072 tokens cached: the prefill of the last 1,024 over a 4,096-token context
    let p = s.predictor();
    let mut it = IterationCost::new(&p);
    it.add_chunk(1024, 4096);
    within(
        warm.ttft_s.p50,
        it.finish().time_s + front(),
        0.01,
        "warm TTFT",
    );
    within(
        cold.ttft_s.p50,
        p.pass(&Step::prefill(1, 4096), 0.0).time_s + front(),
        0.01,
        "cold TTFT",
    );
}

/// Disaggregation pays its transfer: Llama-3-8B's KV cache is 131,072 bytes per token
/// (2 x 32 layers x 8 KV heads x 128 x 2 bytes), 67,108,864 bytes for 512 tokens;
/// over the H100's NVLink (450 GB/s per direction x link efficiency 0.8) plus 8 µs
/// of latency that is 67,108,864 / 360e9 + 8e-6 = 194.4 µs, added to the TTFT.
#[test]
fn disaggregation_pays_the_kv_transfer() {
    let s = setup("llama-3-8b", "h100", "typical");
    let serving = Serving {
        disagg: Some(Disagg {
            prefill_gpus: 1,
            decode_gpus: 1,
        }),
        ..Serving::default()
    };
    let w = fixed(Arrivals::Poisson { rate: 0.05 }, 30, 512, 64);
    let run = s.run(&serving, &w);
    let xfer = run.kv_transfer_s.expect("a transfer per request");
    let want = 67_108_864.0 / (450e9 * 0.8) + 8e-6;
    within(xfer.mean, want, 1e-9, "transfer");
    let prefill = s.predictor().pass(&Step::prefill(1, 512), 0.0).time_s;
    within(
        run.ttft_s.p50,
        prefill + want + front(),
        0.005,
        "TTFT = prefill + transfer",
    );
    let unified = s.run(&Serving::default(), &w);
    assert!(run.ttft_s.p50 > unified.ttft_s.p50 && run.config.gpus == 2);
}

/// The KV cache is what the memory model leaves: Llama-3-8B bf16 on an H100 with vLLM
/// (reserve 0.1, overhead 1 GB): 85,899,345,920 - 8,589,934,592 - 1e9 - 16,060,522,496
/// weights - the workspace of 8,192 tokens x 102,400 bytes and 256 logits rows x
/// 128,256 x 4 bytes = 59,278,944,256 bytes.
#[test]
fn the_kv_pool_is_the_memory_left() {
    let s = setup("llama-3-8b", "h100", "vllm");
    let run = s.run(
        &Serving::default(),
        &fixed(Arrivals::Poisson { rate: 1.0 }, 3, 16, 2),
    );
    let want = 85_899_345_920.0
        - 8_589_934_592.0
        - 1e9
        - 16_060_522_496.0
        - 8192.0 * 102_400.0
        - 256.0 * 128_256.0 * 4.0;
    within(run.config.kv_cache_bytes, want, 1e-9, "KV pool");
}

/// A cache too small for the load preempts and recomputes, and still serves everyone.
#[test]
fn a_full_cache_preempts_and_recovers() {
    let s = setup("llama-3-8b", "l4", "vllm");
    let run = s.run(
        &Serving::default(),
        &fixed(Arrivals::Poisson { rate: 50.0 }, 300, 1000, 600),
    );
    assert_eq!(run.completed, 300);
    assert!(
        run.preemptions > 0 && run.kv_peak_fraction > 0.95,
        "{run:?}"
    );
    assert!(run.binding.kv_cache > 0.0);
}

fn cli(args: &[&str]) -> std::process::Output {
    Command::new(BIN).args(args).output().unwrap()
}

/// The same seed gives the same bytes; another seed other requests.
#[test]
fn the_same_seed_gives_the_same_output() {
    let args = [
        "simulate",
        "--model",
        "llama-3-8b",
        "--gpu",
        "a100",
        "--rate",
        "5,15",
        "--requests",
        "200",
        "--prompt",
        "lognormal:300:0.8",
        "--gen",
        "uniform:10..200",
        "--json",
    ];
    let a = cli(&args);
    let b = cli(&args);
    assert!(a.status.success());
    assert_eq!(a.stdout, b.stdout);
    let c = cli(&[&args[..], &["--seed", "9"]].concat());
    assert_ne!(a.stdout, c.stdout);
    let v: serde_json::Value = serde_json::from_slice(&a.stdout).unwrap();
    assert_eq!(v["rows"].as_array().unwrap().len(), 2);
}

/// Bad input exits 2 with one line naming the option; nothing hangs.
#[test]
fn hostile_inputs_name_the_flag() {
    let dir = std::env::temp_dir().join(format!("ridgeline-sim-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad_trace = dir.join("bad.csv");
    std::fs::write(&bad_trace, "arrival_s,prompt,gen\n0.5,100,10\n1.0,abc,5\n").unwrap();
    let trace = bad_trace.to_str().unwrap();
    let base = ["simulate", "--model", "llama-3-8b", "--gpu", "h100"];
    for (extra, needle) in [
        (vec!["--rate", "0"], "--rate"),
        (vec!["--rate", "-3"], "--rate"),
        (vec!["--rate", "NaN"], "--rate"),
        (vec!["--rate", "inf"], "--rate"),
        (vec!["--rate", "1e300"], "--rate"),
        (vec!["--rate", "1,,2"], "--rate"),
        (vec!["--concurrency", "0"], "--concurrency"),
        (vec!["--rate", "1", "--requests", "0"], "--requests"),
        (
            vec!["--rate", "1", "--requests", "99999999999"],
            "--requests",
        ),
        (
            vec![
                "--rate",
                "1",
                "--requests",
                "10000000",
                "--prompt",
                "10000000",
            ],
            "--requests",
        ),
        (vec!["--rate", "1", "--gen", "0"], "--gen"),
        (vec!["--rate", "1", "--prompt", "lognormal:5"], "--prompt"),
        (vec!["--rate", "1", "--prefix-hit", "1"], "--prefix-hit"),
        (vec!["--rate", "1", "--prefix-hit", "NaN"], "--prefix-hit"),
        (vec!["--rate", "1", "--disagg", "2"], "--disagg"),
        (vec!["--rate", "1", "--disagg", "0:1"], "--disagg"),
        (vec!["--rate", "1", "--max-num-seqs", "0"], "--max-num-seqs"),
        (vec!["--rate", "1", "--slo-ttft-ms", "-1"], "--slo-ttft-ms"),
        (vec!["--rate", "1", "--concurrency", "2"], "--concurrency"),
        (vec!["--trace", trace], "line 3, column prompt"),
        (vec!["--trace", "/no/such/trace.csv"], "/no/such/trace.csv"),
        (vec!["--rate", "1", "--svg", "out.png"], "--svg"),
    ] {
        let out = cli(&[&base[..], &extra[..]].concat());
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {err}");
        assert!(err.contains(needle), "{extra:?}: '{err}' lacks {needle}");
        assert_eq!(err.trim().lines().count(), 1, "{extra:?}: {err}");
        assert!(out.stdout.is_empty());
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// A request larger than the whole KV cache is refused, not waited for forever.
#[test]
fn impossible_requests_are_refused() {
    let s = setup("llama-3-8b", "rtx-4090", "typical");
    let rows = vec![
        TraceRequest {
            arrival_s: 0.0,
            prompt: 100,
            gen_tokens: 10,
        },
        TraceRequest {
            arrival_s: 0.1,
            prompt: 5_000_000,
            gen_tokens: 10,
        },
    ];
    let w = Workload {
        requests: 2,
        ..fixed(Arrivals::Trace(rows), 1, 1, 1)
    };
    let run = s.run(&Serving::default(), &w);
    assert_eq!((run.completed, run.rejected), (1, 1));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// The iteration cost of `b` sequences decoding at context `L` is predict's decode
    /// step at batch `b`, context `L`; of `b` whole prompts of `P` tokens, its prefill.
    #[test]
    fn pure_iterations_are_predict_passes(
        m in 0usize..64, g in 0usize..64, b in 1u64..300, l in 1u64..200_000, prompt in 2u64..20_000,
        tp in prop::sample::select(vec![1u64, 2, 4]), flash in any::<bool>(),
    ) {
        let models = ModelDb::builtin().unwrap().models();
        let devices = HardwareDb::builtin().unwrap().devices();
        let model = &models[m % models.len()];
        let hw = &devices[g % devices.len()];
        let engine = EngineDb::builtin().unwrap().get("typical").unwrap();
        let s = Scenario { gpus: tp, flash, ..Scenario::default() };
        if let Ok(p) = Predictor::new(model, hw, engine, &s) {
            let mut it = IterationCost::new(&p);
            for _ in 0..b {
                it.add_decode(l);
            }
            let (a, want) = (it.finish().time_s, p.pass(&Step::decode(b, l), 0.0).time_s);
            prop_assert!((a / want - 1.0).abs() < 1e-9, "{} decode b{b} L{l}: {a} vs {want}", model.id);
            let n = b.min(8);
            for _ in 0..n {
                it.add_chunk(prompt, prompt);
            }
            let (a, want) = (it.finish().time_s, p.pass(&Step::prefill(n, prompt), 0.0).time_s);
            prop_assert!((a / want - 1.0).abs() < 1e-9, "{} prefill b{n} P{prompt}: {a} vs {want}", model.id);
        }
    }
}

/// `plan --rate`: every entry's replicas cover the rate, its costs are the fleet's, and
/// one replica at its rate meets the p99 targets (the same simulation, re-run).
#[test]
fn rate_plans_size_fleets_that_meet_the_targets() {
    use ridgeline::plan::{PlanRequest, RateTarget, Targets, plan_rate};
    let hw = HardwareDb::builtin().unwrap();
    let s = setup("llama-3-8b", "h100", "typical");
    let req = PlanRequest {
        model: s.model.clone(),
        devices: vec![hw.get("h100").unwrap(), hw.get("l4").unwrap()],
        engines: vec![s.engine],
        prompt: 512,
        gen_tokens: 128,
        targets: Targets::default(),
        gpu_counts: vec![1],
        weights: Some(vec![None]),
        kv: Some(vec![None]),
        flash: true,
        ownership: Default::default(),
        price_basis: Default::default(),
        kernels: None,
        spec: None,
        draft: None,
        inter_node_bytes_per_s: 50e9,
        overlap_ep: false,
        expert_imbalance: 1.0,
        expert_weights: None,
    };
    let t = RateTarget {
        rate_per_s: 30.0,
        p99_ttft_s: Some(1.0),
        p99_tpot_s: Some(0.06),
        requests: 200,
        seed: 4,
        request_overhead_s: None,
    };
    let plan = plan_rate(&req, &t).unwrap();
    assert_eq!(plan.evaluated, 2);
    let best = plan.best.clone().expect("an H100 serves Llama-3-8B");
    assert!(!plan.pareto.is_empty());
    for e in plan.pareto.iter().chain([&best]) {
        let per = e.rate_per_replica.unwrap();
        let replicas = e.replicas.unwrap();
        assert_eq!(replicas, (30.0 / per).ceil() as u64, "{e:?}");
        let price = hw.get(&e.gpu).unwrap().price.as_ref().unwrap().usd_per_hour;
        within(
            e.usd_per_hour.unwrap(),
            price * replicas as f64,
            1e-12,
            "fleet price",
        );
        let per_m = e.usd_per_hour.unwrap() / (30.0 * 128.0 * 3600.0) * 1e6;
        within(
            e.usd_per_million_tokens.unwrap(),
            per_m,
            1e-12,
            "per million tokens",
        );
        // the run at the found rate meets both targets
        let gpu = hw.get(&e.gpu).unwrap();
        let w = fixed(Arrivals::Poisson { rate: per }, 200, 512, 128);
        let w = Workload { seed: 4, ..w };
        let run = simulate(
            &s.model,
            gpu,
            s.engine,
            &Scenario::default(),
            &Serving::default(),
            &w,
        )
        .unwrap();
        assert!(
            run.ttft_s.p99 <= 1.0 && run.tpot_s.p99 <= 0.06 && !run.saturated,
            "{e:?}: {run:?}"
        );
        within(
            run.ttft_s.p99,
            e.ttft_s,
            1e-12,
            "entry TTFT is the run's p99",
        );
    }
    // a front end given: with only a TPOT target (which the front end does not touch)
    // the same rate per replica, the entry's TTFT (a p99, read from log histograms of
    // 128 buckets per octave: each within 0.3%) the front end's difference later
    let tpot_only = |front: Option<f64>| {
        let t = RateTarget {
            p99_ttft_s: None,
            request_overhead_s: front,
            ..t
        };
        plan_rate(&req, &t).unwrap().best.unwrap()
    };
    let (fitted, given) = (tpot_only(None), tpot_only(Some(0.100)));
    assert_eq!(fitted.rate_per_replica, given.rate_per_replica);
    within(
        given.ttft_s - fitted.ttft_s,
        0.100 - front(),
        0.01,
        "the front end's difference",
    );
    // a front end the TTFT target cannot hold: one request alone misses it (the
    // check before any simulation adds the front end to predict's TTFT)
    let missed = plan_rate(
        &req,
        &RateTarget {
            request_overhead_s: Some(1.5),
            ..t
        },
    )
    .unwrap();
    assert!(missed.best.is_none(), "{missed:?}");
}

/// Expert parallelism (`--ep 8`, DeepSeek-V3 on 8 x H200): at a vanishing rate each
/// request runs alone and its TTFT and TPOT are batch-1 predict's with the same
/// layout; a closed loop of C users is predict's static batch of C within 15%, as for
/// dense models (the iteration gives each group its share of the sequences, the routed
/// experts the tokens of all groups).
#[test]
fn expert_parallel_serving_matches_predict() {
    let s = setup("deepseek-v3", "h200", "sglang");
    let scenario = Scenario {
        gpus: 8,
        ep: 8,
        ..Scenario::default()
    };
    let p = Predictor::new(&s.model, s.gpu, s.engine, &scenario).unwrap();
    let sim = |w: &Workload| {
        simulate(&s.model, s.gpu, s.engine, &scenario, &Serving::default(), w).unwrap()
    };
    let g = p.predict(1, 512, 128).unwrap().generation;
    let run = sim(&fixed(Arrivals::Poisson { rate: 0.001 }, 20, 512, 128));
    within(run.ttft_s.p50, g.ttft_s + front(), 0.01, "TTFT p50");
    within(run.tpot_s.p50, g.tpot_s, 0.01, "TPOT p50");
    for c in [16u64, 64] {
        let run = sim(&fixed(Arrivals::Closed { concurrency: c }, 4 * c, 512, 128));
        let static_ = p
            .predict(c, 512, 128)
            .unwrap()
            .generation
            .output_tokens_per_s;
        within(
            run.throughput.output_tokens_per_s,
            static_,
            0.15,
            &format!("concurrency {c}"),
        );
    }
    // across nodes (16 H100, two NVLink domains): a prompt's all-to-all runs the
    // high-throughput kernels (forwarded between nodes), a decode step's the low-latency
    // ones, in the simulator as in predict; with the all-to-all overlapped as well
    let h100 = setup("deepseek-v3", "h100", "sglang");
    for overlap_ep in [false, true] {
        let wide = Scenario {
            gpus: 16,
            ep: 16,
            overlap_ep,
            ..Scenario::default()
        };
        let p = Predictor::new(&h100.model, h100.gpu, h100.engine, &wide).unwrap();
        let g = p.predict(1, 512, 128).unwrap().generation;
        let run = simulate(
            &h100.model,
            h100.gpu,
            h100.engine,
            &wide,
            &Serving::default(),
            &fixed(Arrivals::Poisson { rate: 0.001 }, 20, 512, 128),
        )
        .unwrap();
        within(
            run.ttft_s.p50,
            g.ttft_s + front(),
            0.01,
            "TTFT p50 across nodes",
        );
        within(run.tpot_s.p50, g.tpot_s, 0.01, "TPOT p50 across nodes");
    }
    // and the CLI takes --ep
    let out = Command::new(BIN)
        .args([
            "simulate",
            "--model",
            "deepseek-v3",
            "--gpu",
            "h200",
            "--gpus",
            "8",
            "--ep",
            "8",
            "--rate",
            "0.5",
            "--requests",
            "20",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn speculative_serving_matches_predict() {
    // DeepSeek-V3's MTP module as the draft, k = 2 accepted 80% of the time: a verify
    // pass yields 1 + 0.8 + 0.64 = 2.44 tokens; alone and in a closed loop the simulator
    // gives predict's figures, dense (Llama 3.1 8B) and expert-parallel alike, and with
    // a separate draft model (Llama 3.2 1B drafting for Llama 3.1 70B on 4 H100)
    let draft = ModelDb::builtin().unwrap().resolve("llama-3.2-1b").unwrap();
    for (model, gpu, gpus, ep, d) in [
        ("deepseek-v3", "h200", 8, 8, None),
        ("llama-3.1-8b", "h100", 1, 1, None),
        ("llama-3.1-70b", "h100", 4, 1, Some(&draft)),
    ] {
        let s = setup(model, gpu, "sglang");
        let scenario = Scenario {
            gpus,
            ep,
            spec: Some(Speculation { k: 2, accept: 0.8 }),
            ..Scenario::default()
        };
        assert!((Speculation { k: 2, accept: 0.8 }.tokens_per_verify() - 2.44).abs() < 1e-12);
        let mut p = Predictor::new(&s.model, s.gpu, s.engine, &scenario).unwrap();
        if let Some(d) = d {
            p = p.with_draft(d).unwrap();
        }
        let serving = Serving {
            draft: d,
            ..Serving::default()
        };
        let sim =
            |w: &Workload| simulate(&s.model, s.gpu, s.engine, &scenario, &serving, w).unwrap();
        let g = p.predict(1, 512, 128).unwrap().generation;
        let run = sim(&fixed(Arrivals::Poisson { rate: 0.001 }, 20, 512, 128));
        within(run.ttft_s.p50, g.ttft_s + front(), 0.01, "TTFT p50");
        within(run.tpot_s.p50, g.tpot_s, 0.01, "TPOT p50");
        // speculation pays at batch 1: fewer seconds per token than plain decoding
        let plain = Predictor::new(
            &s.model,
            s.gpu,
            s.engine,
            &Scenario {
                spec: None,
                ..scenario
            },
        )
        .unwrap()
        .predict(1, 512, 128)
        .unwrap()
        .generation;
        assert!(
            run.tpot_s.p50 < plain.tpot_s,
            "{model}: {} vs {}",
            run.tpot_s.p50,
            plain.tpot_s
        );
        for c in [16u64, 64] {
            let run = sim(&fixed(Arrivals::Closed { concurrency: c }, 4 * c, 512, 128));
            let static_ = p
                .predict(c, 512, 128)
                .unwrap()
                .generation
                .output_tokens_per_s;
            within(
                run.throughput.output_tokens_per_s,
                static_,
                0.15,
                &format!("{model} concurrency {c}"),
            );
        }
    }
    // the CLI takes --spec-k and --spec-accept, and a separate draft model
    let args = |extra: &[&str]| {
        let mut a = vec![
            "simulate",
            "--model",
            "llama-3.1-8b",
            "--gpu",
            "h100",
            "--rate",
            "1",
            "--requests",
            "20",
            "--spec-k",
            "3",
            "--spec-accept",
            "0.7",
            "--json",
        ];
        a.extend_from_slice(extra);
        Command::new(BIN).args(a).output().unwrap()
    };
    let out = args(&[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let pool = |out: std::process::Output| {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        v["config"]["kv_cache_bytes"].as_f64().unwrap()
    };
    // the draft's weights replace the one-layer head's in the KV pool's room: Llama
    // 3.2 1B is 1,235,814,400 bf16 parameters (2,471,628,800 bytes); Llama 3.1 8B's head
    // is one layer (q, o 4096^2 = 16,777,216 each; k, v 4096 x 1024 = 4,194,304 each;
    // MLP 3 x 4096 x 14336 = 176,160,768; norms 8,192: 218,112,000) and the 2 x 4096^2
    // = 33,554,432 projection: 251,666,432 parameters, 503,332,864 bytes
    let shrink = pool(args(&[])) - pool(args(&["--draft", "llama-3.2-1b"]));
    assert_eq!(shrink, 2_471_628_800.0 - 503_332_864.0);
    // the serving chart's subtitle says who drafts
    let svg = std::env::temp_dir().join(format!("ridgeline-draft-{}.svg", std::process::id()));
    let out = args(&["--draft", "llama-3.2-1b", "--svg", svg.to_str().unwrap()]);
    assert!(out.status.success());
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.contains("speculative k 3, accept 0.7 (draft llama-3.2-1b)"));
    let _ = std::fs::remove_file(&svg);
    // a draft with another vocabulary is refused, naming it
    let out = args(&["--draft", "qwen3-0.6b"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("draft"));
}

/// A stated expert imbalance slows every iteration of an expert-parallel simulation
/// (its graphs are predict's, whose busiest rank `decoding.rs` checks by hand), and
/// without `--ep` it is refused naming the flag.
#[test]
fn a_stated_expert_imbalance_slows_the_expert_parallel_iterations() {
    let words = "simulate --model qwen3-30b-a3b --gpu h100 --gpus 4 --ep 4 --rate 40 \
                 --requests 300 --json";
    let tpot = |extra: &[&str]| {
        let args: Vec<&str> = words
            .split_whitespace()
            .chain(extra.iter().copied())
            .collect();
        let out = cli(&args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        v["tpot_s"]["p50"].as_f64().unwrap()
    };
    let (uniform, stated) = (tpot(&[]), tpot(&["--expert-imbalance", "2"]));
    assert!(stated > 1.02 * uniform, "{stated} vs {uniform}");
    let out = cli(&[
        "simulate",
        "--model",
        "qwen3-30b-a3b",
        "--gpu",
        "h100",
        "--gpus",
        "4",
        "--rate",
        "40",
        "--expert-imbalance",
        "2",
    ]);
    crate::support::cli::one_line_error(&out, &["--expert-imbalance"]);
}
