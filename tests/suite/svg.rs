//! Structure of the SVG charts, parsed with roxmltree: roofs, points and labels, every
//! text element on the canvas and clear of every other, determinism, and the errors on
//! bad input (library and CLI).

use ridgeline::engine::EngineDb;
use ridgeline::hardware::HardwareDb;
use ridgeline::model::ModelDb;
use ridgeline::plot::memory::{MemoryBar, MemoryChart, memory};
use ridgeline::plot::roofline::{
    DECODE_COLOR, POINT_OPACITY, PREFILL_COLOR, ROOF_WIDTH, RooflineDevice, RooflineOptions,
    roofline,
};
use ridgeline::plot::text_width;
use ridgeline::plot::throughput::{ThroughputOptions, throughput};
use ridgeline::predict::{Prediction, Predictor, Scenario, predict};
use ridgeline::series::{
    ThroughputSeries, batch_limit, default_formats, format_comparison, throughput_series,
    throughput_titles,
};

/// The box a `<text>` element covers, from its attributes as plotters writes them.
#[derive(Debug, Clone)]
struct TextBox {
    text: String,
    x0: f64,
    y0: f64,
    x1: f64,
    y1: f64,
}

fn attr(n: &roxmltree::Node, name: &str) -> f64 {
    n.attribute(name)
        .unwrap_or_else(|| panic!("missing {name}"))
        .parse()
        .unwrap()
}

fn text_boxes(doc: &roxmltree::Document) -> Vec<TextBox> {
    doc.descendants()
        .filter(|n| n.has_tag_name("text"))
        .map(|n| {
            let text = n.text().unwrap_or("").trim().to_string();
            let (x, y) = (attr(&n, "x"), attr(&n, "y"));
            let size = attr(&n, "font-size");
            let bold = n.attribute("font-weight") == Some("bold");
            let w = text_width(&text, size) * if bold { 1.1 } else { 1.0 };
            let (dx0, dx1) = match n.attribute("text-anchor") {
                Some("middle") => (-w / 2.0, w / 2.0),
                Some("end") => (-w, 0.0),
                _ => (0.0, w),
            };
            // baseline offset per the dy the SVG backend writes; ascent 0.76em, descent 0.24em
            let baseline = match n.attribute("dy") {
                Some("0.76em") => 0.76 * size,
                Some("0.5ex") => 0.27 * size,
                Some("-0.5ex") => -0.27 * size,
                other => panic!("unexpected dy {other:?}"),
            };
            let (dy0, dy1) = (baseline - 0.76 * size, baseline + 0.24 * size);
            let (x0, y0, x1, y1) = match n.attribute("transform") {
                None => (x + dx0, y + dy0, x + dx1, y + dy1),
                Some(t) if t.starts_with("rotate(270") => (x + dy0, y - dx1, x + dy1, y - dx0),
                Some(t) if t.starts_with("rotate(90") => (x - dy1, y + dx0, x - dy0, y + dx1),
                Some(t) => panic!("unexpected transform {t}"),
            };
            TextBox {
                text,
                x0,
                y0,
                x1,
                y1,
            }
        })
        .collect()
}

fn view_box(doc: &roxmltree::Document) -> (f64, f64) {
    let v: Vec<f64> = doc
        .root_element()
        .attribute("viewBox")
        .unwrap()
        .split_whitespace()
        .map(|s| s.parse().unwrap())
        .collect();
    assert_eq!((v[0], v[1]), (0.0, 0.0));
    (v[2], v[3])
}

/// Every text inside the viewBox, and no two texts overlapping (0.5 px tolerance).
fn check_text_layout(svg: &str) -> Vec<TextBox> {
    let doc = roxmltree::Document::parse(svg).expect("well-formed SVG");
    let (w, h) = view_box(&doc);
    let boxes = text_boxes(&doc);
    assert!(!boxes.is_empty());
    for b in &boxes {
        assert!(
            b.x0 >= 0.0 && b.y0 >= 0.0 && b.x1 <= w && b.y1 <= h,
            "text {:?} leaves the {w}×{h} canvas: {b:?}",
            b.text
        );
    }
    let shrink = 0.5;
    for (i, a) in boxes.iter().enumerate() {
        if a.text.trim().is_empty() {
            continue;
        }
        for b in boxes.iter().skip(i + 1) {
            if b.text.trim().is_empty() {
                continue;
            }
            let overlap = a.x0 + shrink < b.x1
                && b.x0 + shrink < a.x1
                && a.y0 + shrink < b.y1
                && b.y0 + shrink < a.y1;
            assert!(!overlap, "texts overlap: {a:?} and {b:?}");
        }
    }
    boxes
}

fn texts(boxes: &[TextBox]) -> Vec<&str> {
    boxes.iter().map(|b| b.text.as_str()).collect()
}

fn hex(c: [u8; 3]) -> String {
    format!("#{:02X}{:02X}{:02X}", c[0], c[1], c[2])
}

fn count(doc: &roxmltree::Document, tag: &str, pred: impl Fn(&roxmltree::Node) -> bool) -> usize {
    doc.descendants()
        .filter(|n| n.has_tag_name(tag) && pred(n))
        .count()
}

fn scenario() -> Scenario {
    Scenario {
        batch: 8,
        prompt: 1024,
        gen_tokens: 256,
        ..Scenario::default()
    }
}

fn predictions(
    gpus: &[&str],
    s: &Scenario,
) -> Vec<(&'static ridgeline::hardware::Hardware, Prediction)> {
    let model = ModelDb::builtin().unwrap().resolve("llama-3-8b").unwrap();
    let engine = EngineDb::builtin().unwrap().get("typical").unwrap();
    gpus.iter()
        .map(|g| {
            let hw = HardwareDb::builtin().unwrap().get(g).unwrap();
            (hw, predict(&model, hw, engine, s).unwrap())
        })
        .collect()
}

fn render_roofline(gpus: &[&str], opts: &RooflineOptions) -> (String, Vec<Prediction>) {
    let preds = predictions(gpus, &scenario());
    let devices: Vec<RooflineDevice> = preds
        .iter()
        .map(|(hw, p)| RooflineDevice {
            hardware: hw,
            prediction: p,
        })
        .collect();
    let svg = roofline(&devices, opts).unwrap();
    (svg, preds.into_iter().map(|(_, p)| p).collect())
}

fn plotted(p: &Prediction, phase: &str) -> usize {
    p.ops
        .iter()
        .filter(|o| o.phase.name() == phase && o.flops > 0.0 && o.time_s > 0.0)
        .count()
}

#[test]
fn roofline_has_one_roof_per_device_and_every_op_point() {
    for gpus in [&["h100"][..], &["h100", "a100", "l40s"]] {
        let (svg, preds) = render_roofline(gpus, &RooflineOptions::default());
        let doc = roxmltree::Document::parse(&svg).unwrap();
        let width = ROOF_WIDTH.to_string();
        let roofs = count(&doc, "polyline", |n| {
            n.attribute("stroke-width") == Some(width.as_str())
        });
        assert_eq!(roofs, gpus.len(), "roofs for {gpus:?}");
        // each roof is a 3-point polyline: slope start, ridge, end of the flat roof
        for n in doc.descendants().filter(|n| {
            n.has_tag_name("polyline") && n.attribute("stroke-width") == Some(width.as_str())
        }) {
            assert_eq!(n.attribute("points").unwrap().split_whitespace().count(), 3);
        }
        let opacity = POINT_OPACITY.to_string();
        let prefill = count(&doc, "circle", |n| {
            n.attribute("fill") == Some(hex(PREFILL_COLOR).as_str())
                && n.attribute("opacity") == Some(opacity.as_str())
        });
        let decode = count(&doc, "polygon", |n| {
            n.attribute("fill") == Some(hex(DECODE_COLOR).as_str())
                && n.attribute("opacity") == Some(opacity.as_str())
        });
        assert_eq!(prefill, plotted(&preds[0], "prefill"));
        assert_eq!(decode, plotted(&preds[0], "decode"));
        assert!(prefill >= 10 && decode >= 10);
    }
}

#[test]
fn roofline_labels_axes_ridges_and_key() {
    let (svg, preds) = render_roofline(&["h100", "a100"], &RooflineOptions::default());
    let boxes = check_text_layout(&svg);
    let t = texts(&boxes);
    for want in [
        "Arithmetic intensity (FLOP/byte)",
        "Performance (FLOP/s)",
        "ridge 295 FLOP/B",
        "ridge 153 FLOP/B",
        "H100 SXM5 80GB",
        "A100 80GB SXM4",
        "0.1",
        "1",
        "10",
        "100",
        "1 k",
        "1 T",
        "100 T",
        "1 P",
    ] {
        assert!(t.contains(&want), "missing label {want:?} in {t:?}");
    }
    // title names model, format, batch and context
    assert!(
        t.iter()
            .any(|s| s.starts_with("Roofline: Llama 3 8B on H100 SXM5 80GB vs A100"))
    );
    assert!(t.iter().any(|s| s.contains("weights bf16")
        && s.contains("batch 8")
        && s.contains("context 1024 prompt + 256 generated")));
    // the key numbers the largest ops: "1" is the biggest prefill op
    let big = preds[0]
        .ops
        .iter()
        .filter(|o| o.phase.name() == "prefill")
        .max_by(|a, b| a.time_s.total_cmp(&b.time_s))
        .unwrap();
    assert!(
        t.iter()
            .any(|s| s.starts_with(big.kind.name()) && s.ends_with('%'))
    );
}

#[test]
fn roofline_subtitle_names_the_experts_format() {
    // gpt-oss ships its routed experts in mxfp4 and the rest in bf16; llama.cpp's GGUF
    // keeps the rest in q8_0: the subtitle names both formats, inside the canvas
    let model = ModelDb::builtin().unwrap().resolve("gpt-oss-120b").unwrap();
    let engine = EngineDb::builtin().unwrap().get("typical").unwrap();
    let hw = HardwareDb::builtin().unwrap().get("h100").unwrap();
    for (s, words) in [
        (
            Scenario::default(),
            "weights mxfp4 experts + bf16 · KV bf16",
        ),
        (
            Scenario {
                weights: Some(ridgeline::dtype::Format::Q8_0),
                expert_weights: Some(ridgeline::dtype::Format::Mxfp4),
                ..Scenario::default()
            },
            "weights mxfp4 experts + q8_0 · KV bf16",
        ),
    ] {
        let p = predict(&model, hw, engine, &s).unwrap();
        let device = RooflineDevice {
            hardware: hw,
            prediction: &p,
        };
        let svg = roofline(&[device], &RooflineOptions::default()).unwrap();
        let boxes = check_text_layout(&svg);
        assert!(
            texts(&boxes).iter().any(|t| t.starts_with(words)),
            "{words}"
        );
    }
}

#[test]
fn roofline_subtitle_says_when_ops_come_from_kernel_tables() {
    // Llama 3.1 70B over 4 H100s under vLLM: on the bundled tables (the CLI's default)
    // the subtitle says so, inside the canvas; with the fitted factors alone it does not
    let model = ModelDb::builtin()
        .unwrap()
        .resolve("llama-3.1-70b")
        .unwrap();
    let engines = EngineDb::builtin().unwrap();
    let hardware = HardwareDb::builtin().unwrap();
    let hw = hardware.get("h100").unwrap();
    let kernels = ridgeline::kernels::KernelDb::builtin().unwrap();
    let s = Scenario {
        gpus: 4,
        batch: 16,
        ..Scenario::default()
    };
    let vllm = engines.get("vllm").unwrap();
    let on = Predictor::new(
        &model,
        hw,
        kernels.engine_for(vllm, engines, hw, hardware),
        &s,
    )
    .unwrap()
    .with_kernels(kernels, hardware)
    .predict(16, s.prompt, s.gen_tokens)
    .unwrap();
    let off = predict(&model, hw, vllm, &s).unwrap();
    for (p, tables) in [(&on, true), (&off, false)] {
        let device = RooflineDevice {
            hardware: hw,
            prediction: p,
        };
        let svg = roofline(&[device], &RooflineOptions::default()).unwrap();
        let boxes = check_text_layout(&svg);
        let says = texts(&boxes)
            .iter()
            .any(|t| t.contains("engine vllm on kernel tables · 4× device"));
        assert_eq!(says, tables);
    }
}

#[test]
fn roofline_link_ceilings_are_optional() {
    let plain = render_roofline(&["h100"], &RooflineOptions::default()).0;
    let (links, _) = render_roofline(
        &["h100"],
        &RooflineOptions {
            host_link: true,
            scaleup_link: true,
            ..RooflineOptions::default()
        },
    );
    assert!(!plain.contains("GB/s (host link)") && !plain.contains("NVLink"));
    assert!(links.contains("(host link)") && links.contains("(scale-up link)"));
    check_text_layout(&links);
}

/// Expert parallelism over two NVLink domains: the chart draws the network roof the
/// all-to-alls meet between them (50 GB/s per device, the default `--inter-node-bw`),
/// and the explanation says the all-to-all crosses it; inside one node neither does.
#[test]
fn roofline_and_explanation_name_the_network_between_domains() {
    let model = ModelDb::builtin().unwrap().resolve("deepseek-v3").unwrap();
    let engine = EngineDb::builtin().unwrap().get("typical").unwrap();
    let hw = HardwareDb::builtin().unwrap().get("h100").unwrap();
    let opts = RooflineOptions {
        scaleup_link: true,
        ..RooflineOptions::default()
    };
    let chart = |gpus: u64| {
        let s = Scenario {
            gpus,
            ep: gpus,
            ..Scenario::default()
        };
        let p = predict(&model, hw, engine, &s).unwrap();
        let svg = roofline(
            &[RooflineDevice {
                hardware: hw,
                prediction: &p,
            }],
            &opts,
        )
        .unwrap();
        (svg, p)
    };
    let (two, p) = chart(16);
    assert_eq!(p.network(), Some((2, 50e9)));
    // the legend names it (wrapped to the panel), the slope carries its rate
    assert!(
        two.contains("network (between 2 scale-up domains)") && two.contains("network 50 GB/s"),
        "no network roof"
    );
    assert!(two.contains("NVLink"));
    check_text_layout(&two);
    let (one, p) = chart(8);
    assert_eq!(p.network(), None);
    assert!(!one.contains("network ("));
    let words = |gpus: &str| {
        let out = crate::support::cli::run(&[
            "explain",
            "--model",
            "deepseek-v3",
            "--gpu",
            "h100",
            "--gpus",
            gpus,
            "--ep",
            gpus,
        ]);
        String::from_utf8(out.stdout).unwrap()
    };
    assert!(
        words("16").contains(
            "over the scale-up link and, between its 2 scale-up domains, the network (50 GB/s per device)"
        )
    );
    assert!(words("8").contains("per decode step over the link,"));
}

#[test]
fn roofline_is_deterministic() {
    let opts = RooflineOptions {
        host_link: true,
        ..RooflineOptions::default()
    };
    let a = render_roofline(&["h100", "a100"], &opts).0;
    let b = render_roofline(&["h100", "a100"], &opts).0;
    assert_eq!(a, b);
}

#[test]
fn roofline_layouts_hold_across_devices_models_and_sizes() {
    let engine = EngineDb::builtin().unwrap().get("typical").unwrap();
    let db = HardwareDb::builtin().unwrap();
    for (model, gpus, batch, gen_tokens, n, w, h) in [
        ("llama-2-7b", &["l4"][..], 1, 128, 1, 1100, 680),
        (
            "llama-3-70b",
            &["h100", "a100", "l40s"][..],
            32,
            128,
            4,
            1100,
            680,
        ),
        (
            "mixtral-8x7b",
            &["mi300x", "h200-sxm"][..],
            64,
            512,
            1,
            800,
            500,
        ),
        (
            "qwen2.5-coder-3b",
            &["m2-ultra", "rtx-4090", "t4"][..],
            1,
            0,
            1,
            640,
            420,
        ),
    ] {
        let m = ModelDb::builtin().unwrap().resolve(model).unwrap();
        let s = Scenario {
            batch,
            gen_tokens,
            gpus: n,
            ..Scenario::default()
        };
        let preds: Vec<_> = gpus
            .iter()
            .map(|g| {
                let hw = db.get(g).unwrap();
                (hw, predict(&m, hw, engine, &s).unwrap())
            })
            .collect();
        let devices: Vec<_> = preds
            .iter()
            .map(|(hw, p)| RooflineDevice {
                hardware: hw,
                prediction: p,
            })
            .collect();
        let svg = roofline(
            &devices,
            &RooflineOptions {
                width: w,
                height: h,
                host_link: true,
                scaleup_link: n > 1,
                ..RooflineOptions::default()
            },
        )
        .unwrap();
        check_text_layout(&svg);
        // RIDGELINE_SVG_OUT=dir keeps the charts for a look
        if let Ok(dir) = std::env::var("RIDGELINE_SVG_OUT") {
            std::fs::write(format!("{dir}/roofline-{model}-{w}x{h}.svg"), &svg).unwrap();
        }
    }
}

#[test]
#[should_panic(expected = "texts overlap")]
fn layout_check_catches_overlaps() {
    let svg = r#"<svg width="200" height="100" viewBox="0 0 200 100" xmlns="http://www.w3.org/2000/svg">
<text x="10" y="10" dy="0.76em" text-anchor="start" font-size="12">overlapping</text>
<text x="20" y="14" dy="0.76em" text-anchor="start" font-size="12">texts</text>
</svg>"#;
    check_text_layout(svg);
}

#[test]
#[should_panic(expected = "leaves the")]
fn layout_check_catches_text_off_canvas() {
    let svg = r#"<svg width="200" height="100" viewBox="0 0 200 100" xmlns="http://www.w3.org/2000/svg">
<text x="150" y="10" dy="0.76em" text-anchor="start" font-size="12">too long for the edge</text>
</svg>"#;
    check_text_layout(svg);
}

#[test]
fn roofline_rejects_bad_input() {
    assert!(roofline(&[], &RooflineOptions::default()).is_err());
    let preds = predictions(&["h100"], &scenario());
    let d = [RooflineDevice {
        hardware: preds[0].0,
        prediction: &preds[0].1,
    }];
    let tiny = RooflineOptions {
        width: 10,
        height: 10,
        ..RooflineOptions::default()
    };
    assert!(roofline(&d, &tiny).is_err());
    // at most 7 devices on one chart, for library users as for the CLI
    assert!(roofline(&[d[0]; 7], &RooflineOptions::default()).is_ok());
    let err = roofline(&[d[0]; 8], &RooflineOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("gpu") && err.contains("8 devices on one chart; at most 7 stay readable"),
        "{err}"
    );
}

fn throughput_data(gpus: &[&str]) -> (Vec<String>, Vec<ThroughputSeries>) {
    let model = ModelDb::builtin().unwrap().resolve("llama-3-8b").unwrap();
    let engine = EngineDb::builtin().unwrap().get("typical").unwrap();
    let db = HardwareDb::builtin().unwrap();
    let s = Scenario {
        prompt: 128,
        gen_tokens: 128,
        ..Scenario::default()
    };
    let preds: Vec<Predictor> = gpus
        .iter()
        .map(|g| Predictor::new(&model, db.get(g).unwrap(), engine, &s).unwrap())
        .collect();
    let refs: Vec<&Predictor> = preds.iter().collect();
    let limit = batch_limit(&refs, s.prompt, s.gen_tokens).unwrap();
    let all: Vec<_> = preds
        .iter()
        .map(|p| throughput_series(p, s.prompt, s.gen_tokens, limit).unwrap())
        .collect();
    let (title, subtitle) = throughput_titles(&preds[0], s.prompt, s.gen_tokens);
    (vec![title, subtitle], all)
}

fn render_throughput(gpus: &[&str]) -> String {
    let (t, all) = throughput_data(gpus);
    throughput(
        &all,
        &ThroughputOptions {
            title: t[0].clone(),
            subtitle: t[1].clone(),
            ..ThroughputOptions::default()
        },
    )
    .unwrap()
}

#[test]
fn throughput_chart_structure() {
    let svg = render_throughput(&["h100", "a100", "l40s"]);
    let boxes = check_text_layout(&svg);
    let t = texts(&boxes);
    for want in [
        "Decode throughput (tokens/s)",
        "Per-token latency (ms)",
        "Batch (concurrent sequences, log2 scale)",
        "1",
        "2",
        "4",
        "64",
        "1024",
        // L40S (48 GiB = 51,539,607,552 B, 15/16 of it usable with ECC on: 48,318,382,080),
        // Llama-3-8B bf16, 128 + 128 tokens, typical engine: free = 48,318,382,080 -
        // 16,060,522,496 weights - 1e9 overhead - 838,860,800 (one 8192-token prefill
        // chunk x 102,400 B) = 30,418,998,784; per sequence 256 x 131,072 KV + 513,024
        // logits = 34,067,456; 30,418,998,784 / 34,067,456 = 892.9
        "memory full above batch 892",
        "compute-bound from batch 240",
    ] {
        assert!(t.contains(&want), "missing {want:?} in {t:?}");
    }
    // two panels × three devices: one solid prediction polyline each, with one vertex
    // per evaluated batch up to the memory cut
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let (_, all) = throughput_data(&["h100", "a100", "l40s"]);
    assert_eq!(all.len(), 3);
    for sr in &all {
        let vertices = sr.points.iter().filter(|q| q.batch <= sr.max_batch).count();
        let curves = count(&doc, "polyline", |n| {
            n.attribute("stroke-width") == Some("2")
                && n.attribute("opacity") == Some("1")
                && n.attribute("points").unwrap().split_whitespace().count() == vertices
        });
        assert!(
            curves >= 2,
            "{}: {curves} curves of {vertices} points",
            sr.label
        );
    }
    assert_eq!(
        svg,
        render_throughput(&["h100", "a100", "l40s"]),
        "deterministic"
    );
}

#[test]
fn throughput_series_values_and_cuts() {
    let model = ModelDb::builtin().unwrap().resolve("llama-3-8b").unwrap();
    let engine = EngineDb::builtin().unwrap().get("typical").unwrap();
    let hw = HardwareDb::builtin().unwrap().get("h100").unwrap();
    let s = Scenario::default();
    let p = Predictor::new(&model, hw, engine, &s).unwrap();
    let sr = throughput_series(&p, 512, 128, 2048).unwrap();
    assert!(sr.max_batch < 2048);
    assert!(
        sr.points.iter().any(|q| q.batch == sr.max_batch),
        "curve ends at the cut"
    );
    for w in sr.points.windows(2) {
        assert!(w[0].batch < w[1].batch);
        // more sequences, more tokens/s, never faster than the roofline
        assert!(w[1].tokens_per_s > w[0].tokens_per_s);
    }
    for q in &sr.points {
        assert!(q.tokens_per_s <= q.roofline_tokens_per_s * (1.0 + 1e-9));
        assert_eq!(q.fits, q.batch <= sr.max_batch);
    }
    // batch 1 matches the full prediction's generation figures
    let full = p.predict(1, 512, 128).unwrap();
    let one = sr.points[0];
    assert!(
        (one.tokens_per_s - full.generation.decode_tokens_per_s).abs() < 1e-9 * one.tokens_per_s
    );
    assert!((one.token_latency_s - full.generation.tpot_s).abs() < 1e-15);
    assert!(throughput_series(&p, 512, 128, 0).is_err());
    assert!(throughput(&[], &ThroughputOptions::default()).is_err());
}

#[test]
fn memory_chart_compares_formats() {
    let model = ModelDb::builtin().unwrap().resolve("llama-3-70b").unwrap();
    let hw = HardwareDb::builtin().unwrap().get("h200-sxm").unwrap();
    let engine = EngineDb::builtin().unwrap().get("typical").unwrap();
    let s = Scenario {
        batch: 16,
        prompt: 2048,
        gen_tokens: 512,
        ..Scenario::default()
    };
    let chart = format_comparison(&model, hw, engine, &s, &default_formats(&model)).unwrap();
    assert_eq!(chart.bars.len(), 4);
    // the bars are the predictor's own memory figures
    let fp8 = Predictor::new(
        &model,
        hw,
        engine,
        &Scenario {
            weights: Some(ridgeline::dtype::Format::Fp8),
            ..s
        },
    )
    .unwrap()
    .summary(16, 2048, 512)
    .memory;
    assert!((chart.bars[1].total_bytes() - fp8.total_bytes).abs() < 1.0);
    let svg = memory(&chart).unwrap();
    let boxes = check_text_layout(&svg);
    let t = texts(&boxes);
    assert!(t.contains(&"Memory per device (GB = 1e9 bytes)"));
    assert!(
        t.contains(&"does not fit"),
        "bf16 70B does not fit 141 GB: {t:?}"
    );
    for seg in ["weights", "KV cache", "activations", "engine overhead"] {
        assert!(t.contains(&seg));
    }
    // 4 bars × 4 segments, each a filled rect (plus the background, legend swatches and
    // label halos, which are white or translucent)
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let segments = count(&doc, "rect", |n| {
        n.attribute("opacity") == Some("1")
            && n.attribute("fill") != Some("#FFFFFF")
            && n.attribute("width").unwrap().parse::<f64>().unwrap() > 30.0
    });
    assert_eq!(segments, 16);
    assert_eq!(svg, memory(&chart).unwrap(), "deterministic");
}

#[test]
fn memory_chart_is_generic_for_training() {
    let bars: Vec<MemoryBar> = (0..4)
        .map(|stage| {
            let shard = |from: u32| if stage >= from { 8.0 } else { 1.0 };
            MemoryBar::new(
                &format!("ZeRO-{stage} with a long label that must wrap"),
                [
                    ("params", 14e9 / shard(3)),
                    ("grads", 14e9 / shard(2)),
                    ("optimizer", 84e9 / shard(1)),
                    ("activations", 20e9),
                ],
            )
        })
        .collect();
    let chart = MemoryChart {
        title: "Training".into(),
        bars,
        capacity_bytes: Some(80e9),
        capacity_label: "A100 80GB".into(),
        width: 640,
        height: 420,
        ..MemoryChart::default()
    };
    let svg = memory(&chart).unwrap();
    check_text_layout(&svg);
    assert!(svg.contains("optimizer") && svg.contains("A100 80GB: 80.0 GB capacity"));
    let bad = MemoryChart {
        bars: vec![MemoryBar::new("x", [("a", -1.0)])],
        ..MemoryChart::default()
    };
    assert!(memory(&bad).is_err());
    assert!(memory(&MemoryChart::default()).is_err());
}

fn cli(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_ridgeline"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn cli_writes_charts_and_rejects_bad_gpu_lists() {
    let dir = std::env::temp_dir().join(format!("ridgeline-svg-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("r.svg");
    let o = cli(&[
        "roofline",
        "--gpu",
        "h100,a100",
        "--model",
        "llama-3-8b",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let svg = std::fs::read_to_string(&out).unwrap();
    check_text_layout(&svg);
    assert_eq!(
        svg.matches(&format!("stroke-width=\"{ROOF_WIDTH}\""))
            .count(),
        2
    );

    for chart in ["throughput", "roofline", "memory"] {
        let f = dir.join(format!("{chart}.svg"));
        let o = cli(&[
            "predict",
            "--gpu",
            "h100",
            "--model",
            "llama-3-8b",
            "--json",
            "--chart",
            chart,
            "--svg",
            f.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        // stdout is still exactly one JSON document
        let _: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        check_text_layout(&std::fs::read_to_string(&f).unwrap());
    }

    let o = cli(&[
        "roofline",
        "--gpu",
        "h100,a10x",
        "--model",
        "llama-3-8b",
        "--out",
        "x.svg",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("a10x") && err.contains("did you mean"),
        "{err}"
    );
    let o = cli(&[
        "roofline",
        "--gpu",
        "h100,,a100",
        "--model",
        "llama-3-8b",
        "--out",
        "x.svg",
    ]);
    assert_eq!(o.status.code(), Some(2));
    // duplicates are dropped before the chart counts its devices
    let o = cli(&[
        "roofline",
        "--gpu",
        "h100,a100,l40s,l4,t4,mi300x,h200-sxm,rtx-4090,h100-sxm",
        "--model",
        "llama-3-8b",
        "--out",
        "x.svg",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--gpu") && err.contains("8 devices on one chart; at most 7"),
        "{err}"
    );
    let o = cli(&[
        "predict",
        "--gpu",
        "h100",
        "--model",
        "llama-3-8b",
        "--chart",
        "memory",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn small_canvases_keep_text_on_canvas_and_apart() {
    let (t, all) = throughput_data(&["h100", "a100", "l40s", "4090"]);
    let svg = throughput(
        &all,
        &ThroughputOptions {
            width: 560,
            height: 420,
            title: t[0].clone(),
            subtitle: t[1].clone(),
        },
    )
    .unwrap();
    check_text_layout(&svg);
    let bars: Vec<MemoryBar> = ["fp16", "fp8", "q8_0", "q6_k", "q5_k_m", "q4_k_m"]
        .iter()
        .map(|f| {
            MemoryBar::new(
                f,
                [("weights", 8e9), ("KV cache", 1e9), ("overhead", 0.5e9)],
            )
        })
        .collect();
    let svg = memory(&MemoryChart {
        title: "A title far too long for a chart this small, so it must shrink".into(),
        subtitle: "and a subtitle that is also much longer than the width of the canvas".into(),
        bars,
        capacity_bytes: Some(12e9),
        capacity_label: "RTX 3060 12GB".into(),
        width: 360,
        height: 300,
    })
    .unwrap();
    check_text_layout(&svg);
    if let Ok(dir) = std::env::var("RIDGELINE_SVG_OUT") {
        std::fs::write(format!("{dir}/small-memory.svg"), &svg).unwrap();
    }
}

/// The serving chart: both latency panels with the knee and its label, the timeline,
/// every text on the canvas and apart; one run draws the timeline alone.
#[test]
fn serving_chart_marks_the_knee_and_keeps_text_apart() {
    use ridgeline::plot::serving::{ServingOptions, serving};
    use ridgeline::simulate::{Arrivals, Dist, Serving, Workload, simulate_rates};
    let model = ModelDb::builtin().unwrap().resolve("llama-3-8b").unwrap();
    let hw = HardwareDb::builtin().unwrap().get("h100").unwrap();
    let engine = EngineDb::builtin().unwrap().get("vllm").unwrap();
    let w = Workload {
        arrivals: Arrivals::Poisson { rate: 1.0 },
        requests: 300,
        prompt: Dist::Fixed { tokens: 512 },
        gen_tokens: Dist::Fixed { tokens: 128 },
        seed: 3,
    };
    let rates = [2.0, 8.0, 20.0, 40.0, 80.0, 160.0];
    let mut sweep = simulate_rates(
        &model,
        hw,
        engine,
        &Scenario::default(),
        &Serving::default(),
        &w,
        &rates,
    )
    .unwrap();
    let knee = sweep.knee.expect("160 requests/s saturates one H100");
    for (width, height) in [(1000, 940), (640, 560)] {
        let opts = ServingOptions {
            width,
            height,
            ..ServingOptions::default()
        };
        let svg = serving(&sweep, &opts).unwrap();
        let boxes = check_text_layout(&svg);
        let t = texts(&boxes);
        assert!(t.contains(&"Serving latency vs request rate"), "{t:?}");
        let (long, short) = (
            format!("knee: saturates at {}", knee.rate_per_s),
            format!("knee {} req/s", knee.rate_per_s),
        );
        assert!(
            t.iter().any(|x| x.starts_with(&long) || *x == short),
            "no knee label in {t:?}"
        );
        if height > 900 {
            for title in ["Batch (sequences)", "KV cache in use (%)"] {
                assert!(t.contains(&title), "{title} not in {t:?}");
            }
        }
        // the footnote names the server's front end the TTFTs hold (a wrapped line
        // each, joined here)
        let front = ridgeline::units::fmt_seconds(sweep.rows[0].config.request_overhead_s);
        assert!(
            t.join(" ")
                .contains(&format!("{front} of the server's front end")),
            "{t:?}"
        );
    }
    sweep.rows.truncate(1);
    sweep.knee = None;
    let svg = serving(&sweep, &ServingOptions::default()).unwrap();
    let t = texts(&check_text_layout(&svg)).join("|");
    assert!(
        t.contains("Serving: batch and KV cache over time") && !t.contains("knee"),
        "{t}"
    );
}

// ---------------------------------------------------------------------------------
// Cost against time of a training plan

fn training_plan(
    model: &str,
    gpus: &[&str],
    counts: &[u64],
    targets: ridgeline::plan::train::TrainTargets,
) -> ridgeline::plan::train::TrainPlan {
    use ridgeline::plan::train::{Pool, TrainPlanRequest, plan_training};
    let db = HardwareDb::builtin().unwrap();
    let pools = gpus
        .iter()
        .map(|g| Pool::device(db.get(g).unwrap()))
        .collect();
    let mut req = TrainPlanRequest::new(
        ModelDb::builtin().unwrap().resolve(model).unwrap(),
        pools,
        200_000_000,
    );
    req.gpu_counts = counts.to_vec();
    req.targets = targets;
    plan_training(&req).unwrap()
}

#[test]
fn cost_time_chart_has_one_front_per_method_and_clear_labels() {
    use ridgeline::plan::train::TrainTargets;
    use ridgeline::plot::cost_time::cost_time;
    let open = TrainTargets::default();
    let tight = TrainTargets {
        max_hours: Some(10.0),
        budget_usd: Some(40.0),
    };
    for (model, gpus, counts, targets) in [
        (
            "llama-2-7b",
            &["rtx-4090", "a100", "h100"][..],
            &[1, 2, 4, 8, 16, 32, 64][..],
            open,
        ),
        ("llama-2-7b", &["rtx-4090", "a100"], &[1, 2, 3, 4, 8], tight),
        ("llama-2-70b", &["h100", "rtx-6000-ada"], &[8, 16, 32], open),
    ] {
        let plan = training_plan(model, gpus, counts, targets);
        let svg = cost_time(&plan).unwrap();
        let boxes = check_text_layout(&svg);
        let t = texts(&boxes);
        for f in plan
            .pareto_by_method
            .iter()
            .filter(|f| !f.entries.is_empty())
        {
            let name = ridgeline::report::train_plan::method_name(f.method);
            assert!(t.contains(&name), "{model}: legend lacks {name}: {t:?}");
        }
        assert!(t.iter().any(|s| s.starts_with("best: ")), "{model}: {t:?}");
        assert!(
            t.iter().any(|s| s.contains("Training time (hours")),
            "{t:?}"
        );
        let doc = roxmltree::Document::parse(&svg).unwrap();
        // one marker per front entry: circles, squares and triangles of the methods
        let points: usize = plan.pareto_by_method.iter().map(|f| f.entries.len()).sum();
        let shapes = count(&doc, "circle", |_| true) + count(&doc, "polygon", |_| true);
        assert!(shapes >= 2 * points, "{shapes} shapes for {points} points");
        assert_eq!(svg, cost_time(&plan).unwrap(), "deterministic");
    }
    // nothing to chart: no configuration qualifies
    let none = training_plan(
        "llama-2-7b",
        &["rtx-4090"],
        &[1],
        TrainTargets {
            max_hours: Some(0.01),
            budget_usd: None,
        },
    );
    let e = cost_time(&none).unwrap_err().to_string();
    assert!(e.contains("nothing to chart"), "{e}");
}

#[test]
fn units_of_one_rate_share_one_roof_label() {
    // The RTX 4090's fp16 and bf16 tensor rates are both 165 TFLOP/s (fp32 accumulate):
    // Mixtral q4_k_m runs matmuls of both, and the two roofs used to be drawn and
    // labelled on top of each other.
    let dir = std::env::temp_dir().join(format!("ridgeline-svg-units-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("r.svg");
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_ridgeline"))
        .args(["roofline", "--model", "mixtral-8x7b", "--weights", "q4_k_m"])
        .args(["--gpu", "rtx-4090", "--engine", "llama.cpp", "--out"])
        .arg(&out)
        .status()
        .unwrap();
    assert!(status.success());
    let svg = std::fs::read_to_string(&out).unwrap();
    assert!(
        svg.contains("fp16/bf16 matrix units 165 TFLOP/s"),
        "merged label"
    );
    // the text of each label stands on its own line
    for alone in ["bf16 matrix units", "fp16 matrix units"] {
        assert!(
            !svg.lines().any(|l| l.trim_start().starts_with(alone)),
            "a separate roof: {alone}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
