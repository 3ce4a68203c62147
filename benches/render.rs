//! Rendering speed of the SVG charts (target: the roofline chart in ≤ 5 ms).

use criterion::{Criterion, black_box, criterion_group, criterion_main};
use ridgeline::engine::EngineDb;
use ridgeline::hardware::HardwareDb;
use ridgeline::model::ModelDb;
use ridgeline::plot::memory::memory;
use ridgeline::plot::roofline::{RooflineDevice, RooflineOptions, roofline};
use ridgeline::plot::throughput::{ThroughputOptions, throughput};
use ridgeline::predict::{Predictor, Scenario, predict};
use ridgeline::series::{default_formats, format_comparison, throughput_series};

fn render(c: &mut Criterion) {
    let model = ModelDb::builtin().unwrap().resolve("llama-3-8b").unwrap();
    let db = HardwareDb::builtin().unwrap();
    let engine = EngineDb::builtin().unwrap().get("typical").unwrap();
    let s = Scenario {
        batch: 8,
        prompt: 1024,
        gen_tokens: 256,
        ..Scenario::default()
    };
    let h100 = db.get("h100-sxm").unwrap();
    let a100 = db.get("a100-80gb-sxm").unwrap();
    let p_h100 = predict(&model, h100, engine, &s).unwrap();
    let p_a100 = predict(&model, a100, engine, &s).unwrap();
    let one = [RooflineDevice {
        hardware: h100,
        prediction: &p_h100,
    }];
    let two = [
        one[0],
        RooflineDevice {
            hardware: a100,
            prediction: &p_a100,
        },
    ];
    let opts = RooflineOptions::default();
    c.bench_function("roofline_1_device", |b| {
        b.iter(|| roofline(black_box(&one), &opts).unwrap())
    });
    let links = RooflineOptions {
        host_link: true,
        scaleup_link: true,
        ..RooflineOptions::default()
    };
    c.bench_function("roofline_2_devices_links", |b| {
        b.iter(|| roofline(black_box(&two), &links).unwrap())
    });
    // the whole predict --chart roofline path: prediction + render
    c.bench_function("predict_and_roofline", |b| {
        b.iter(|| {
            let p = predict(&model, h100, engine, black_box(&s)).unwrap();
            roofline(
                &[RooflineDevice {
                    hardware: h100,
                    prediction: &p,
                }],
                &opts,
            )
            .unwrap()
        })
    });
    let pred = Predictor::new(&model, h100, engine, &s).unwrap();
    let sr = throughput_series(&pred, 1024, 256, 512).unwrap();
    let topts = ThroughputOptions::default();
    c.bench_function("throughput_render", |b| {
        b.iter(|| throughput(black_box(std::slice::from_ref(&sr)), &topts).unwrap())
    });
    c.bench_function("throughput_series_and_render", |b| {
        b.iter(|| {
            let sr = throughput_series(&pred, black_box(1024), 256, 512).unwrap();
            throughput(&[sr], &topts).unwrap()
        })
    });
    let chart = format_comparison(&model, h100, engine, &s, &default_formats(&model)).unwrap();
    c.bench_function("memory_render", |b| {
        b.iter(|| memory(black_box(&chart)).unwrap())
    });
}

criterion_group!(benches, render);
criterion_main!(benches);
