use ridgeline::prelude::*;
use ridgeline::simulate::*;

#[test]
fn smoke() {
    let model = ModelDb::builtin().unwrap().resolve("llama-3-8b").unwrap();
    let gpu = HardwareDb::builtin().unwrap().get("h100").unwrap();
    let engine = EngineDb::builtin().unwrap().get("vllm").unwrap();
    let w = Workload {
        arrivals: Arrivals::Poisson { rate: 5.0 },
        requests: 2000,
        prompt: Dist::Fixed { tokens: 512 },
        gen_tokens: Dist::Fixed { tokens: 128 },
        seed: 1,
    };
    let t0 = std::time::Instant::now();
    let s = simulate_rates(
        &model,
        gpu,
        engine,
        &Scenario::default(),
        &Serving::default(),
        &w,
        &[1.0, 5.0, 20.0, 40.0, 60.0, 80.0, 120.0],
    )
    .unwrap();
    eprintln!("{:?}", t0.elapsed());
    for r in &s.rows {
        eprintln!(
            "rate {:?} done {} dur {:.1} thr {:.2} sust {:.2} sat {} ttft p50 {:.4} p99 {:.4} tpot p50 {:.4} p99 {:.4} batch {:.1} kv {:.2} pre {} N {:.2} it {} bind {:?}",
            r.rate_per_s,
            r.completed,
            r.duration_s,
            r.throughput.requests_per_s,
            r.sustained_requests_per_s,
            r.saturated,
            r.ttft_s.p50,
            r.ttft_s.p99,
            r.tpot_s.p50,
            r.tpot_s.p99,
            r.mean_batch,
            r.kv_peak_fraction,
            r.preemptions,
            r.mean_requests_in_system,
            r.iterations,
            r.binding
        );
    }
    eprintln!("{:?}", s.knee);
    let p = Predictor::new(&model, gpu, engine, &Scenario::default())
        .unwrap()
        .predict(1, 512, 128)
        .unwrap();
    eprintln!(
        "predict ttft {} tpot {}",
        p.generation.ttft_s, p.generation.tpot_s
    );
    let serving = Serving {
        disagg: Some(Disagg {
            prefill_gpus: 1,
            decode_gpus: 1,
        }),
        ..Default::default()
    };
    let r = simulate(
        &model,
        gpu,
        engine,
        &Scenario::default(),
        &serving,
        &Workload {
            arrivals: Arrivals::Poisson { rate: 20.0 },
            ..w.clone()
        },
    )
    .unwrap();
    eprintln!(
        "disagg ttft {:?} tpot {:?} transfer {:?} done {}",
        r.ttft_s, r.tpot_s, r.kv_transfer_s, r.completed
    );
}
