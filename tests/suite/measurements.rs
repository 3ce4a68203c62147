//! Published measurements (data/measurements/measurements.csv) against ridgeline's
//! predictions with the calibrated engines of data/engines.toml, one test per kind.
//!
//! Each test predicts every mappable row of its kind with the engine of the row's
//! framework (kind F ceilings with `typical`, or the engine whose authors measured
//! them), prints the median absolute % error next to the pure roofline (`ideal`), and
//! asserts a tolerance on the median. The tolerances are a few points above what the
//! committed profiles reach, so a change that worsens predictions fails here.

use crate::shared::{bundled_accuracy, calibration, mapped};

use ridgeline::calibrate::{Case, Kind, median_abs, predict_case};
use ridgeline::engine::{Engine, EngineDb};

fn errors(cases: &[&Case], engine: impl Fn(&Case) -> Engine) -> Vec<(String, f64)> {
    cases
        .iter()
        .map(|c| {
            let p = predict_case(c, &engine(c))
                .unwrap_or_else(|e| panic!("{}: prediction failed: {e}", c.id));
            assert!(p.is_finite() && p > 0.0, "{}: prediction {p}", c.id);
            (c.id.clone(), 100.0 * (p / c.measured - 1.0))
        })
        .collect()
}

/// Median |% error| of `kind` with the calibrated engines; prints it with the ideal
/// and per-row errors, and checks it is below `tolerance_pct`.
fn check_kind(kind: Kind, tolerance_pct: f64, min_rows: usize) {
    let m = mapped();
    let db = EngineDb::builtin().unwrap();
    let of: Vec<&Case> = m.cases.iter().filter(|c| c.kind == kind).collect();
    assert!(
        of.len() >= min_rows,
        "kind {kind}: only {} mappable rows (expected at least {min_rows})",
        of.len()
    );
    let fitted = errors(&of, |c| {
        db.get(&c.engine)
            .unwrap_or_else(|e| panic!("{}: engine {}: {e}", c.id, c.engine))
            .clone()
    });
    let ideal = errors(&of, |_| db.get("ideal").unwrap().clone());
    let med = median_abs(fitted.iter().map(|e| e.1));
    let med_ideal = median_abs(ideal.iter().map(|e| e.1));
    for ((id, e), (_, i)) in fitted.iter().zip(&ideal) {
        eprintln!("  {id} kind {kind}: calibrated {e:+7.1}%   ideal {i:+7.1}%");
    }
    eprintln!(
        "kind {kind}: {} rows, median |error| calibrated {med:.1}% (tolerance {tolerance_pct}%), ideal roofline {med_ideal:.1}%",
        of.len()
    );
    assert!(
        med <= tolerance_pct,
        "kind {kind}: median |error| {med:.1}% exceeds {tolerance_pct}%"
    );
}

#[test]
fn kind_a_single_stream_decode() {
    // in sample 7.8% (130 rows; 8.2% before the engines' all-reduce latencies were
    // measured on the kernel tables; 7.3% on the 114 before the SGLang cookbook's
    // single-stream rows over 8 GPUs, m723-m738; 6.9% before the measured fp8 / fp4
    // matmul factors; 7.5% before prompt passes paid their own per-layer overhead,
    // prefill_layer_overhead_s; 8.1% before the matmuls' roll-off at few rows,
    // gemm_half_rows; 7.1% before 53 prefill rows shared the engines' overheads)
    check_kind(Kind::A, 8.8, 25);
}

#[test]
fn kind_b_batched_throughput() {
    // in sample 15.4% (130 rows; 13.8% while latent attention's absorbed projections
    // re-read their weights for every sequence, which made TensorRT-LLM's DeepSeek-R1
    // max-load rows m185-m187 come out right and now leaves them about 2x fast; see
    // docs/calibration-log.md. MoE at TensorRT-LLM's max load, DeepSeek-R1 over 8 GPUs
    // tensor parallel and vLLM on ROCm at large batch are the largest misses)
    check_kind(Kind::B, 16.4, 10);
}

#[test]
fn kind_c_prefill_and_ttft() {
    // in sample 13.1% (151 rows, 13.3% before prefill_layer_overhead_s, 14.7% before
    // gemm_half_rows; 18.6% on 98 before
    // llama.cpp's per-expert cost on RDNA: SGLang's TTFT through its server,
    // TensorRT-LLM v0.9's Mixtral prompts on Hopper, prefill on the power-limited RTX
    // 6000 Ada and long gpt-oss prompts on Strix Halo are the largest misses)
    check_kind(Kind::C, 14.1, 10);
}

#[test]
fn kind_f_ceilings_match_typical_factors() {
    // typical's factors against achievable bandwidth (STREAM triad) and matmul rate
    // (MAMF): a well-tuned engine runs close to, mostly below, these ceilings.
    check_kind(Kind::F, 20.0, 12);
}

#[test]
fn calibrated_engines_beat_the_roofline_on_decode() {
    // batch-1 decode is where derating matters most: the fitted profiles must be much
    // closer than the ideal roofline, which is always too fast.
    let m = mapped();
    let db = EngineDb::builtin().unwrap();
    let a: Vec<&Case> = m.cases.iter().filter(|c| c.kind == Kind::A).collect();
    let ideal = errors(&a, |_| db.get("ideal").unwrap().clone());
    // too fast: a rate above the measured one, a time (per token, per request) below
    assert!(
        ideal
            .iter()
            .zip(&a)
            .all(|((_, e), c)| (*e > 0.0) == c.target.higher_is_faster()),
        "{ideal:?}"
    );
    let fitted = errors(&a, |c| db.get(&c.engine).unwrap().clone());
    let (mi, mf) = (
        median_abs(ideal.iter().map(|e| e.1)),
        median_abs(fitted.iter().map(|e| e.1)),
    );
    assert!(mf < mi / 3.0, "fitted {mf:.1}% vs ideal {mi:.1}%");
}

#[test]
fn every_row_is_mapped_or_skipped_with_a_reason() {
    let (rows, m) = (crate::shared::rows(), crate::shared::mapped());
    assert_eq!(m.cases.len() + m.skipped.len(), rows.len());
    for s in &m.skipped {
        assert!(!s.reason.trim().is_empty(), "{}", s.id);
    }
    let reason = |id: &str| {
        m.skipped
            .iter()
            .find(|s| s.id == id)
            .map(|s| s.reason.clone())
            .unwrap_or_default()
    };
    // a device the database lacks
    assert!(reason("m029").contains("P40"), "{}", reason("m029"));
    assert!(reason("m134").contains("GH200"), "{}", reason("m134"));
    // a multi-GPU row on PCIe-only A10Gs (AWS g5, tensor parallel over the host link) is
    // mapped now that a10g has its PCIe link
    let m042 = m
        .cases
        .iter()
        .find(|c| c.id == "m042")
        .expect("m042 is mapped");
    assert_eq!(m042.hardware.id, "a10g");
    assert_eq!(m042.scenario.gpus, 8);
    assert!(m042.hardware.scaleup_link.is_none() && m042.hardware.host_link.is_some());
    // training and memory rows are not engine measurements
    assert!(reason("m093").contains("kind D"));
    assert!(reason("m118").contains("kind E"));
    // AutoAWQ's own benchmark (transformers with fused modules) has no engine profile
    assert!(reason("m358").contains("AutoAWQ"), "{}", reason("m358"));
    // SGLang's DeepSeek-V3 over 4 and 9 HGX H100 nodes (EP32, EP72): the all-to-all
    // crosses the network, which inference predictions do not cost
    for id in ["m273", "m276"] {
        assert!(reason(id).contains("scale-up domains"), "{}", reason(id));
    }
    // TensorRT-LLM's `--tp 8 --ep 8` with attention DP is 8 expert-parallel groups of one
    // device each (DP attention); a row without EP stays tensor parallel
    let case = |id: &str| m.cases.iter().find(|c| c.id == id).expect(id);
    assert_eq!(
        (case("m185").scenario.gpus, case("m185").scenario.ep),
        (8, 8)
    );
    assert!(
        case("m185")
            .assumptions
            .iter()
            .any(|a| a.contains("expert parallel over 8"))
    );
    assert_eq!(case("m042").scenario.ep, 1);
    // a row that names gpt-oss's mxfp4 ran the checkpoint: under SGLang and Ollama as it
    // ships (None: the experts in mxfp4, the rest in bf16), under llama.cpp as its GGUF
    // (the experts in mxfp4, the rest in q8_0)
    use ridgeline::dtype::Format;
    for id in ["m373", "m284"] {
        let s = &case(id).scenario;
        assert_eq!((s.weights, s.expert_weights), (None, None), "{id}");
    }
    let s = &case("m156").scenario;
    assert_eq!(
        (s.weights, s.expert_weights),
        (Some(Format::Q8_0), Some(Format::Mxfp4))
    );
    assert!(
        case("m156")
            .assumptions
            .iter()
            .any(|a| a.contains("llama.cpp's GGUF"))
    );
    // every single-stream row is mapped but the P40's, AutoAWQ's (m358, m360, m364,
    // m366, m370), TinyChat's (m380), the Unsloth dynamic GGUF quants (UD-Q4_K_XL, no
    // format of ridgeline's: m411, m413, m417), the Medusa rows whose batch is not
    // stated (m494, m495) and SGLang's Kimi K2 with data-parallel attention over
    // tensor-parallel experts (m733: `--dp 4 --enable-dp-attention`, no `--ep`)
    let skipped_a: Vec<&str> = m
        .skipped
        .iter()
        .filter(|s| rows.iter().any(|r| r.id == s.id && r.kind == Kind::A))
        .map(|s| s.id.as_str())
        .collect();
    assert_eq!(
        skipped_a,
        [
            "m029", "m358", "m360", "m364", "m366", "m370", "m380", "m411", "m413", "m417", "m494",
            "m495", "m733"
        ]
    );
    assert!(
        reason("m733").contains("--enable-dp-attention"),
        "{}",
        reason("m733")
    );
    assert!(reason("m411").contains("ud-q4_k_xl"), "{}", reason("m411"));
    // a time per output token and an end-to-end latency are single-stream rows too
    assert_eq!(case("m431").target.name(), "tpot_s");
    assert_eq!(case("m447").target.name(), "e2e_s");
    // a fine-tune names its base model's architecture
    assert_eq!(case("m496").model.as_ref().unwrap().id, "llama-3.3-70b");
}

#[test]
fn engines_toml_has_every_engine_and_real_fitted_on_ids() {
    let db = EngineDb::builtin().unwrap();
    let m = crate::shared::mapped();
    for id in ridgeline::calibrate::ENGINE_IDS {
        let e = db.get(id).unwrap_or_else(|e| panic!("{id}: {e}"));
        assert!(!e.description.is_empty(), "{id}");
        for f in &e.provenance.fitted_on {
            let c = m
                .cases
                .iter()
                .find(|c| &c.id == f)
                .unwrap_or_else(|| panic!("{id}: fitted_on {f} is not a mapped row"));
            let pooled = ridgeline::calibrate::TYPICAL_POOL.contains(&c.engine.as_str());
            assert!(
                c.engine == id || (id == "typical" && pooled),
                "{id} lists {f}, a {} row",
                c.engine
            );
        }
    }
    assert!(db.get("ideal").unwrap().provenance.fitted_on.is_empty());
    assert!(!db.get("sglang").unwrap().provenance.fitted_on.is_empty());
    assert!(!db.get("llama.cpp").unwrap().provenance.fitted_on.is_empty());
}

/// Fails naming the first line where `text`, the fit's output, differs from the
/// bundled file `name`.
fn assert_fit_output(name: &str, text: &str, bundled: &str) {
    if text != bundled {
        let first = text
            .lines()
            .zip(bundled.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(0);
        panic!(
            "{name} is not the fit's output (first difference at line {}):\n  fit:     {}\n  bundled: {}",
            first + 1,
            text.lines().nth(first).unwrap_or(""),
            bundled.lines().nth(first).unwrap_or("")
        );
    }
}

#[test]
fn engines_toml_is_the_fit_of_the_bundled_measurements() {
    // data/engines.toml is exactly what `ridgeline calibrate --measurements
    // data/measurements/measurements.csv --save data/engines.toml` writes: every fitted
    // number and comment; a change to the predictor or the fit that moves a factor
    // shows up here (rewrite the file with that command and review the diff)
    let m = mapped();
    let db = EngineDb::builtin().unwrap();
    let cal = calibration();
    let bundled = ridgeline::engine::BUILTIN_ENGINES_TOML;
    let text = ridgeline::calibrate::engines_file(cal, m, db, Some(bundled)).unwrap();
    assert_fit_output("data/engines.toml", &text, bundled);
}

#[test]
fn sglang_is_fitted_on_its_own_rows() {
    // SGLang's published rows (its large-scale EP blog's GB200 NVL72 rows, gpt-oss on
    // H100, DGX Spark) fit its own factors; the blog's H100 rows over 4 and 9 nodes are
    // skipped (the network between scale-up domains is not costed); the profile keeps
    // its own memory footprint and chunk size
    let db = EngineDb::builtin().unwrap();
    let s = db.get("sglang").unwrap();
    assert!(
        s.provenance.fitted_on.len() >= 9,
        "{:?}",
        s.provenance.fitted_on
    );
    assert_eq!(s.scheduler.max_batched_tokens, Some(8192));
}

/// The memory efficiency of the device override of `e` that the fit names `name`
/// (`memory_efficiency (device = "dgx-spark")`).
fn keyed_memory(e: &ridgeline::engine::Engine, name: &str) -> f64 {
    use ridgeline::engine::DeviceFactor::MemoryEfficiency;
    e.devices
        .iter()
        .find(|o| MemoryEfficiency.name_under(&o.select) == name)
        .and_then(|o| o.memory_efficiency)
        .unwrap()
}

#[test]
fn the_written_database_holds_the_fit_as_rounded() {
    let m = mapped();
    let db = EngineDb::builtin().unwrap();
    let cal = calibration();
    let previous = ridgeline::engine::BUILTIN_ENGINES_TOML;
    let text = ridgeline::calibrate::engines_file(cal, m, db, Some(previous)).unwrap();
    let written = EngineDb::from_toml(&text, "written").unwrap();
    assert_eq!(written.engines().len(), db.engines().len());
    let close = |a: f64, b: f64| (a / b - 1.0).abs() < 5e-3;
    for f in &cal.engines {
        let e = written.get(&f.engine.id).unwrap();
        assert_eq!(e.provenance.fitted_on, f.engine.provenance.fitted_on);
        for p in &f.params {
            use ridgeline::calibrate::ParamKind::*;
            let v = match &p.kind {
                // a group's efficiency, or the device override it was keyed to
                Memory(g) if p.key == format!("memory_efficiency.{g}") => {
                    e.speed.memory_efficiency[g]
                }
                Memory(_) => keyed_memory(e, &p.key),
                Compute => e.speed.compute_efficiency,
                AppleCompute => apple_compute(e).unwrap(),
                RdnaCompute => rdna_compute(e).unwrap(),
                Dequant => e.speed.dequant_efficiency,
                Fp4 => e.speed.fp4_efficiency,
                Attention => e.speed.attention_efficiency,
                StepOverhead => e.overheads.step_overhead_s,
                LayerOverhead => e.overheads.layer_overhead_s,
                SequenceOverhead => e.overheads.sequence_overhead_s,
                RdnaExpertOverhead => rdna_expert(e).unwrap(),
                AppleGemv => apple_gemv(e).unwrap(),
                AppleExpertMemory => apple_expert_memory(e).unwrap(),
            };
            assert!(
                close(v, p.value),
                "{} {}: {v} vs {}",
                f.engine.id,
                p.key,
                p.value
            );
        }
        let n = f.rows.len();
        let rows = format!("{n} row{}", if n == 1 { "" } else { "s" });
        assert!(text.contains(&format!("# {}: fitted on {rows} (", f.engine.id)));
    }
    assert_eq!(written.get("ideal").unwrap(), db.get("ideal").unwrap());
    // written over itself, the file keeps its remarks and comes out the same
    let again = ridgeline::calibrate::engines_file(cal, m, db, Some(&text)).unwrap();
    assert_eq!(again, text);
}

#[test]
fn held_out_errors_per_kind() {
    // measured (this file, these engines; 395 A/B/C rows from 34 publications): leave
    // one row out A 7.4%, B 14.4%, C 14.0%; leave one source out A 8.1%, B 14.2%, C
    // 14.0%. Before prompt passes paid their own per-layer overhead
    // (prefill_layer_overhead_s 25 us; 10 us gave A 8.5%, B 14.0%, C 15.3%, 20 us 8.2 /
    // 14.4 / 14.0%, 40 us 7.6 / 14.7 / 14.0%, 60 us 7.1 / 15.5 / 14.5%) leave one row
    // out was A 7.8%, B 14.1%, C 13.9% and leave one source out A 8.6%, B 13.9%, C
    // 16.1%. Before the matmuls' roll-off at few rows (gemm_half_rows 36; 20 gave A
    // 8.8%, B 14.4%, C 16.9%, 32 8.7 / 14.2 / 16.7%, 40 8.6 / 13.9 / 16.2%, 44 8.8 /
    // 13.8 / 16.6%, 48 9.2 / 13.9 / 17.4%, 56 9.1 / 14.0 / 18.9%) leave one source out was A 9.1%, B 15.4%, C 18.0% (Huber threshold
    // 0.2: A 9.1%, B 15.0%, C 19.0%; 0.3: A 9.5%, B 15.1%, C 18.2%). On the 342 rows before the 53 prefill rows of TensorRT-LLM v0.9, the
    // SGLang cookbook, LMDeploy and ExLlamaV2 (m660-m712) they were A 7.9%, B 14.5%,
    // C 18.1% with the sustained tensor rates (power_reference) and A 7.9%, B 14.8%,
    // C 18.5% without. C was 24.6% before llama.cpp's per-expert cost on RDNA
    // (rdna_expert_overhead_s), with the Strix Halo MoE prompts 1.8-3x fast, and 19.6%
    // before its fp32 scores in unfused attention (fp32_scores). Limits:
    // measured + ~1 point, so that a change that makes the held-out error worse fails
    // here, capped at issue 13's targets, A 10%, B 15%, C 15%, which are met. (The largest
    // misses are TTFT through a server, MoE prompts of early TensorRT-LLM, prefill on
    // power-limited workstation cards and long gpt-oss prompts on Strix Halo, MoE at max
    // load and vLLM on ROCm; see README "Calibration".)
    // A rose from 7.6 / 7.8% (leave one out / one source out) to 9.0 / 10.5% when the
    // SGLang cookbook's single-stream decode rows came in (m723-m738: concurrency 1 over
    // 8 GPUs, DeepSeek-V3 on MI300X 3x and Kimi K2 on B200 2x slower than predicted,
    // gpt-oss-120b on B200 faster), a publication the fit had not seen, and came back
    // to 8.2 / 9.5% with each engine's all-reduce latency measured on the kernel tables
    // (data/kernels/all-reduce-latency.toml): issue 33's 8% target is not met on them
    // (docs/calibration-log.md)
    // B rose from 14.3% to 19.0% held out by source when a fit stopped starting from
    // the factors an earlier fit keyed to one device (the M2 Ultra's matrix-vector time
    // and expert kernels' efficiency, informed by one publication's rows alone, had
    // reached those rows held out; docs/calibration-log.md) and the M2 Ultra file's 19
    // MoE batched rows came in: 15.5% on the rows before them
    let limits = [
        (Kind::A, 9.2, 10.5),
        // B: above issue 13's 15% since the absorbed-projection fix (kind_b above)
        (Kind::B, 17.0, 20.0),
        (Kind::C, 15.0, 15.0),
    ];
    let a = bundled_accuracy();
    for (kind, loo_max, loso_max) in limits {
        let k = a.kinds.iter().find(|k| k.kind == kind).unwrap();
        eprintln!(
            "kind {kind}: {} rows, median |error| in sample {:.1}%, leave one out {:.1}%, leave one source out {:.1}%",
            k.rows, k.fitted_pct, k.leave_one_out_pct, k.leave_one_source_out_pct
        );
        assert!(
            k.leave_one_out_pct <= loo_max,
            "kind {kind}: leave-one-out {:.1}% exceeds {loo_max}%",
            k.leave_one_out_pct
        );
        assert!(
            k.leave_one_source_out_pct <= loso_max,
            "kind {kind}: leave-one-source-out {:.1}% exceeds {loso_max}%",
            k.leave_one_source_out_pct
        );
        // a fit that saw the row predicts it at least as well as one that did not
        assert!(k.fitted_pct <= k.leave_one_out_pct + 0.05, "{k:?}");
    }
    let n = |h: &[ridgeline::calibrate::HeldOut]| h.len();
    let fitted = mapped().cases.iter().filter(|c| c.kind != Kind::F).count();
    assert_eq!(
        (n(&a.leave_one_out), n(&a.leave_one_source_out)),
        (fitted, fitted)
    );
    assert!(a.sources >= 34, "{} sources", a.sources);
}

#[test]
fn readme_accuracy_table_is_this_code_s_output() {
    let table = ridgeline::report::calibration::accuracy_markdown(bundled_accuracy());
    let readme = include_str!("../../README.md");
    assert!(
        readme.contains(&table),
        "README.md's accuracy table is not current; replace it with the output of \
         `ridgeline calibrate --measurements data/measurements/measurements.csv --markdown`:\n{table}"
    );
}

/// The README's second accuracy table: the same rows priced as predictions are by
/// default, on the kernel tables where one covers the row's device and engine (with
/// the profiles refitted on them), held out the same way.
#[test]
fn readme_accuracy_table_on_the_tables_is_this_code_s_output() {
    let table = ridgeline::report::calibration::accuracy_markdown(crate::shared::tables_accuracy());
    let readme = include_str!("../../README.md");
    assert!(
        readme.contains(&table),
        "README.md's accuracy table on the tables is not current; replace it with the output of \
         `ridgeline calibrate --measurements data/measurements/measurements.csv --kernels bundled --markdown`:\n{table}"
    );
}

/// The prefill pass and decode step of `model` on `gpu` under `engine` (batch 1, the
/// given prompt, 128 generated tokens, weights `weights`).
fn passes(
    model: &str,
    gpu: &str,
    engine: &Engine,
    weights: Option<ridgeline::dtype::Format>,
    prompt: u64,
) -> ridgeline::predict::Summary {
    let m = ridgeline::model::ModelDb::builtin()
        .unwrap()
        .resolve(model)
        .unwrap();
    let hw = ridgeline::hardware::HardwareDb::builtin()
        .unwrap()
        .get(gpu)
        .unwrap();
    let s = ridgeline::predict::Scenario {
        weights,
        ..ridgeline::predict::Scenario::default()
    };
    ridgeline::predict::Predictor::new(&m, hw, engine, &s)
        .unwrap()
        .summary(1, prompt, 128)
}

#[test]
fn kernel_features_are_stated_physics() {
    let db = EngineDb::builtin().unwrap();
    let llama = db.get("llama.cpp").unwrap().clone();
    let with = |f: &dyn Fn(&mut Engine)| {
        let mut e = llama.clone();
        f(&mut e);
        e
    };
    // warp-level MMA on Hopper: half the tensor peak. llama.cpp's compute-bound
    // 4096-token prefill of Llama-3-8B f16 on an H100 SXM takes close to twice as long
    // as with warpgroup MMA (the memory-bound ops and overheads do not change); on an
    // H100 PCIe, whose board power sustains 0.868 of its tensor peaks, the lower of the
    // two ceilings binds: 0.5 against 0.868, about 1.6x; on an A100, which publishes no
    // warp_mma_fraction, nothing changes
    assert!(!llama.features.warpgroup_mma);
    let wgmma = with(&|e| e.features.warpgroup_mma = true);
    let ratio = |gpu: &str| {
        let slow = passes("llama-3-8b", gpu, &llama, None, 4096).prefill.time_s;
        slow / passes("llama-3-8b", gpu, &wgmma, None, 4096).prefill.time_s
    };
    assert!(
        (1.6..2.0).contains(&ratio("h100-sxm")),
        "{}",
        ratio("h100-sxm")
    );
    assert!(
        (1.4..1.75).contains(&ratio("h100-pcie")),
        "{}",
        ratio("h100-pcie")
    );
    assert_eq!(ratio("a100-80gb-pcie"), 1.0);
    // GGUF blocks dequantize to fp16 even for a bf16 model: on an RTX 4090 the fp16
    // accumulate rate (330 TFLOP/s against 165) applies to a Q4_K_M prefill too
    let q4 = Some(ridgeline::dtype::Format::parse("q4_k_m").unwrap());
    let acc32 = with(&|e| e.features.fp16_accumulate = false);
    let gguf = passes("llama-3-8b", "rtx-4090", &acc32, q4, 4096)
        .prefill
        .time_s
        / passes("llama-3-8b", "rtx-4090", &llama, q4, 4096)
            .prefill
            .time_s;
    assert!((1.6..2.0).contains(&gguf), "{gguf}");
    // Apple GPUs: the engine's own fraction of the ALU peak (0.77 for llama.cpp's
    // Metal kernels, 0.48 elsewhere); RDNA GPUs: its own fraction of the WMMA peak
    // (0.32 for its HIP and Vulkan kernels on Strix Halo)
    let hw = ridgeline::hardware::HardwareDb::builtin().unwrap();
    let apple = apple_compute(&llama).unwrap();
    assert_eq!(llama.efficiency(hw.get("m2-ultra").unwrap()).compute, apple);
    assert_eq!(
        llama.efficiency(hw.get("rtx-4090").unwrap()).compute,
        llama.speed.compute_efficiency
    );
    assert!(apple > llama.speed.compute_efficiency);
    let rdna = rdna_compute(&llama).unwrap();
    let strix = hw.get("ryzen-ai-max-395").unwrap();
    assert!(ridgeline::engine::is_rdna(strix));
    assert_eq!(llama.efficiency(strix).compute, rdna);
    assert!(rdna < llama.speed.compute_efficiency);
    // an engine without rows there keeps its tensor-core fraction on an RDNA GPU (and
    // typical's measured Apple fraction, Apple's MPS GEMM at 0.747, on an Apple GPU)
    // llama.cpp's expert matmuls on RDNA: a cost per routed expert matrix (the Strix
    // Halo MoE prompts of three publications were 1.8-3x fast without it; about 22 µs
    // before the matmuls' roll-off at few rows, gemm_half_rows, took its part: an
    // expert of a 512-token pass gets 512 x 8 / 128 = 32 rows, 32 / 68 of the large-M
    // rate), none on a CUDA device
    let per_expert = rdna_expert(&llama).unwrap();
    assert!((5e-6..40e-6).contains(&per_expert), "{per_expert}");
    assert_eq!(llama.expert_overhead_on(strix), per_expert);
    assert_eq!(llama.expert_overhead_on(hw.get("dgx-spark").unwrap()), 0.0);
    // ggml's unfused attention holds fp32 scores
    assert!(llama.features.fp32_scores);
    let typ = db.get("typical").unwrap();
    assert!(!typ.features.fp32_scores);
    assert_eq!(rdna_compute(typ), None);
    assert_eq!(typ.expert_overhead_on(strix), 0.0);
    assert_eq!(typ.efficiency(strix).compute, typ.speed.compute_efficiency);
    assert_eq!(typ.efficiency(hw.get("m1-max").unwrap()).compute, 0.747);
    // Hugging Face's dynamic cache: each decode step copies the cache (read and written
    // once more), so the step moves three times typical's KV bytes
    let hf = db.get("hf").unwrap();
    assert!(hf.features.kv_concat);
    let typ = db.get("typical").unwrap();
    let kv = |e: &Engine| passes("llama-3-8b", "h100", e, None, 2048).decode.kv_bytes;
    let new_token = |e: &Engine| {
        // the step at context 1 reads and writes only the new token's K and V
        passes("llama-3-8b", "h100", e, None, 0).decode.kv_bytes
    };
    let copied = (kv(hf) - new_token(hf)) / (kv(typ) - new_token(typ));
    assert!((2.9..3.1).contains(&copied), "{copied}");
}

/// The `class = "apple"` override's compute efficiency.
fn apple_compute(e: &ridgeline::engine::Engine) -> Option<f64> {
    use ridgeline::engine::{DeviceFactor, Selector};
    e.override_value(
        &Selector::class(ridgeline::hardware::DeviceClass::Apple),
        DeviceFactor::ComputeEfficiency,
    )
}

/// The RDNA override of `factor`: the `architecture = "rdna"` entry's, or Strix Halo's
/// own where the fit keyed it to that device (every RDNA row runs there).
fn rdna(e: &ridgeline::engine::Engine, factor: ridgeline::engine::DeviceFactor) -> Option<f64> {
    use ridgeline::engine::Selector;
    e.override_value(&Selector::architecture("rdna"), factor)
        .or_else(|| e.override_value(&Selector::device("ryzen-ai-max-395"), factor))
}

/// The RDNA override's compute efficiency.
fn rdna_compute(e: &ridgeline::engine::Engine) -> Option<f64> {
    rdna(e, ridgeline::engine::DeviceFactor::ComputeEfficiency)
}

/// The RDNA override's time per expert matrix.
fn rdna_expert(e: &ridgeline::engine::Engine) -> Option<f64> {
    rdna(e, ridgeline::engine::DeviceFactor::ExpertOverhead)
}

/// The fraction of the peak Apple GPUs' matrix-vector kernels do their further rows'
/// arithmetic at: the `class = "apple"` entry's, or the M2 Ultra's own where a fit
/// keyed it to that device (every row informing it running there).
fn apple_gemv(e: &ridgeline::engine::Engine) -> Option<f64> {
    use ridgeline::engine::{DeviceFactor, Selector};
    let f = DeviceFactor::GemvEfficiency;
    e.override_value(&Selector::class(ridgeline::hardware::DeviceClass::Apple), f)
        .or_else(|| e.override_value(&Selector::device("m2-ultra"), f))
}

/// The fraction of the memory efficiency Apple GPUs' expert kernels reach, as the family
/// override or (fitted on the M2 Ultra's rows alone) keyed to that device.
fn apple_expert_memory(e: &ridgeline::engine::Engine) -> Option<f64> {
    use ridgeline::engine::{DeviceFactor, Selector};
    let f = DeviceFactor::ExpertMemoryEfficiency;
    e.override_value(&Selector::class(ridgeline::hardware::DeviceClass::Apple), f)
        .or_else(|| e.override_value(&Selector::device("m2-ultra"), f))
}

#[test]
fn engines_kernels_toml_is_the_fit_on_the_kernel_tables() {
    // data/engines-kernels.toml is exactly what `ridgeline calibrate --measurements
    // data/measurements/measurements.csv --kernels bundled --save
    // data/engines-kernels.toml` writes; each of its engines fits a per-pass overhead
    // and no per-layer one, on the rows a table covers alone
    let m = mapped()
        .clone()
        .with_kernels(ridgeline::calibrate::CaseKernels {
            db: ridgeline::kernels::KernelDb::builtin().unwrap().clone(),
            hardware: ridgeline::hardware::HardwareDb::builtin().unwrap().clone(),
        });
    let db = EngineDb::builtin().unwrap();
    let cal = ridgeline::calibrate::calibrate(&m, db, None).unwrap();
    let text = ridgeline::calibrate::kernel_engines_toml(&cal, &m, "data/kernels").unwrap();
    let bundled = ridgeline::engine::BUILTIN_KERNEL_ENGINES_TOML;
    assert_fit_output("data/engines-kernels.toml", &text, bundled);
    for id in ["trt-llm", "vllm", "sglang"] {
        let f = cal.engines.iter().find(|f| f.engine.id == id).unwrap();
        let kinds: Vec<_> = f.params.iter().map(|p| &p.kind).collect();
        assert!(
            kinds.contains(&&ridgeline::calibrate::ParamKind::StepOverhead)
                && !kinds.contains(&&ridgeline::calibrate::ParamKind::LayerOverhead),
            "{id}: {kinds:?}"
        );
        let e = db.on_tables(id).unwrap();
        assert_eq!(e.overheads.layer_overhead_s, 0.0, "{id}");
        assert!(e.provenance.on_tables);
        // every row it is fitted on reads a table
        for r in &e.provenance.fitted_on {
            let c = m.cases.iter().find(|c| &c.id == r).unwrap();
            assert!(c.reads_tables(), "{id} {r}");
        }
    }
    // engines without tables are not refitted
    assert!(db.on_tables("llama.cpp").is_none() && db.on_tables("typical").is_none());
}

/// llama.cpp's decode on an Apple GPU (docs/calibration.md, "llama.cpp's batched decode on
/// an Apple GPU"): the M2 Ultra file's rows (m744-m802: 10 single streams; 29 batched,
/// 5 models at 2, 4, 8, 16 and 32 sequences and the two gpt-oss models at 8 and 32
/// after 4096-token prompts; 20 prompt rows) are all fitted. The expert kernels' share
/// of the memory efficiency, informed by that device's MoE rows alone, is keyed to it,
/// and it brings those rows closer than without it.
#[test]
fn llama_cpp_decode_of_moe_models_on_apple_is_fitted_with_the_expert_kernels_efficiency() {
    use ridgeline::engine::{DeviceFactor, Selector};
    use ridgeline::hardware::DeviceClass;
    let kept = fitted_rows(744..=802);
    let count = |k: Kind| kept.iter().filter(|c| c.kind == k).count();
    assert_eq!(
        (count(Kind::A), count(Kind::B), count(Kind::C)),
        (10, 29, 20)
    );
    assert!(
        kept.iter()
            .all(|c| c.engine == "llama.cpp" && c.hardware.id == "m2-ultra")
    );
    let db = EngineDb::builtin().unwrap();
    let e = db.get("llama.cpp").unwrap();
    let f = DeviceFactor::ExpertMemoryEfficiency;
    let x = e.override_value(&Selector::device("m2-ultra"), f).unwrap();
    assert!(x > 0.0 && x < 1.0, "{x}");
    assert!(
        e.override_value(&Selector::class(DeviceClass::Apple), f)
            .is_none()
    );
    let m3 = ridgeline::hardware::HardwareDb::builtin()
        .unwrap()
        .get("m3-max")
        .unwrap()
        .clone();
    assert_eq!(e.expert_memory_efficiency_on(&m3), 1.0);
    // the MoE decode rows (6 single streams, 19 batched), median |ln(predicted /
    // measured)| with the factor and with it set to 1
    let mut without = e.clone();
    without.set_override(&Selector::device("m2-ultra"), f, None);
    let moe: Vec<&Case> = (kept.iter().copied())
        .filter(|c| c.kind != Kind::C && c.model.as_ref().unwrap().is_moe())
        .collect();
    assert_eq!(moe.len(), 25);
    let (with, plain) = (median_log_error(&moe, e), median_log_error(&moe, &without));
    assert!(with < 0.12 && plain > 0.15, "{with} vs {plain}");
}

/// llama.cpp's matrix-vector kernels on an Apple GPU (docs/calibration.md): the fraction
/// of the peak at which they do the arithmetic of the rows past the first is fitted on
/// the M2 Ultra file's decode rows of 2 to 8 sequences and on the prompts of 2 to 8
/// tokens of ggml-org/llama.cpp#10581 (m803-m826, on the M2 Ultra and the M1 Pro): two
/// devices, so it is the `class = "apple"` family's, and every Apple GPU takes it. Those
/// prompts come closer with it than without it.
#[test]
fn llama_cpp_matrix_vector_efficiency_on_apple_is_the_family_s_fitted_on_two_chips() {
    use ridgeline::engine::{DeviceFactor, FactorTag, Selector};
    use ridgeline::hardware::DeviceClass;
    let prompts = fitted_rows(803..=826);
    assert_eq!(prompts.len(), 24);
    assert!(
        prompts
            .iter()
            .all(|c| c.kind == Kind::C && c.scenario.prompt <= 8)
    );
    let on = |gpu: &str| prompts.iter().filter(|c| c.hardware.id == gpu).count();
    assert_eq!((on("m2-ultra"), on("m1-pro")), (16, 8));
    let db = EngineDb::builtin().unwrap();
    let e = db.get("llama.cpp").unwrap();
    let f = DeviceFactor::GemvEfficiency;
    let apple = Selector::class(DeviceClass::Apple);
    let x = e.override_value(&apple, f).unwrap();
    assert!(x > 0.0 && x < 1.0, "{x}");
    assert!(e.override_value(&Selector::device("m2-ultra"), f).is_none());
    match e.provenance.factors.get(&f.name_under(&apple)) {
        Some(FactorTag::Fitted {
            devices,
            publications,
            ..
        }) => assert!(*devices >= 2 && *publications >= 2),
        other => panic!("{other:?}"),
    }
    let hw = ridgeline::hardware::HardwareDb::builtin().unwrap();
    assert_eq!(e.gemv_compute_efficiency_on(hw.get("m3-max").unwrap()), x);
    // the prompts of 2 to 8 tokens, median |ln(predicted / measured)| with the factor
    // and with none
    let mut without = e.clone();
    without.set_override(&apple, f, None);
    let short: Vec<&Case> = (prompts.iter().copied())
        .filter(|c| c.scenario.prompt > 1)
        .collect();
    let (with, plain) = (
        median_log_error(&short, e),
        median_log_error(&short, &without),
    );
    assert!(with < 0.2 && plain > 0.3, "{with} vs {plain}");
}

/// The bundled rows with ids `m<range>`, every one of them fitted (none skipped).
fn fitted_rows(range: std::ops::RangeInclusive<u32>) -> Vec<&'static Case> {
    let m = mapped();
    let ours = |id: &str| range.contains(&id[1..].parse::<u32>().unwrap_or(0));
    assert!(m.skipped.iter().all(|s| !ours(&s.id)));
    m.cases.iter().filter(|c| ours(&c.id)).collect()
}

/// The median |ln(predicted / measured)| of `cases` under `engine`.
fn median_log_error(cases: &[&Case], engine: &Engine) -> f64 {
    let logs: Vec<f64> = (cases.iter())
        .map(|c| (predict_case(c, engine).unwrap() / c.measured).ln())
        .collect();
    median_abs(logs)
}
