//! `ridgeline serve`'s answers, measured in process ([`ridgeline::web::handle`]: words
//! from the query, the command as the CLI runs it, the JSON or SVG): what one page update
//! costs the server (a prediction per device, the explanation, a chart).

use criterion::{Criterion, black_box, criterion_group, criterion_main};
use ridgeline::web::{Request, handle};

fn web(c: &mut Criterion) {
    let routes = [
        (
            "predict",
            "/api/predict?model=llama-3-8b&gpu=h100-sxm&batch=8",
        ),
        (
            "explain",
            "/api/explain?model=llama-3-8b&gpu=h100-sxm&batch=8",
        ),
        (
            "roofline_3_devices",
            "/api/roofline.svg?model=llama-3-8b&gpu=h100-sxm,a100-80gb-sxm,l40s&batch=8",
        ),
        (
            "throughput_3_devices",
            "/api/throughput.svg?model=llama-3-8b&gpu=h100-sxm,a100-80gb-sxm,l40s&batch=8",
        ),
        (
            "memory",
            "/api/memory.svg?model=llama-3-8b&gpu=h100-sxm&batch=8",
        ),
        ("hardware_list", "/api/hardware"),
    ];
    for (name, target) in routes {
        let req = Request::get(target);
        assert_eq!(handle(&req).status, 200, "{target}");
        c.bench_function(&format!("web/{name}"), |b| {
            b.iter(|| handle(black_box(&req)))
        });
    }
}

criterion_group!(benches, web);
criterion_main!(benches);
