//! Training predictions: pinned hand arithmetic (ZeRO model states, the activation
//! formula), cross-checks against the published runs of kinds D and E in
//! `data/measurements/measurements.csv` (configured by
//! `data/measurements/training_runs.toml`), the calibration of `data/training.toml`, bad
//! input, and ZeRO monotonicity.

use ridgeline::Error;
use ridgeline::calibrate::Kind;
use ridgeline::hardware::{Hardware, HardwareDb};
use ridgeline::model::{ModelConfig, ModelDb};
use ridgeline::train::runs::{Metric, PublishedRuns, RunSetups, published_runs};
use ridgeline::train::{
    ActivationShape, EfficiencyTable, LoraTargets, Loss, Method, Offload, Optimizer, Recompute,
    TrainConfig, TrainEfficiency, TrainNote, TrainPrecision, TrainStack, Trainer,
    activation_bytes_per_layer, train, zero_stages,
};

fn model(id: &str) -> ModelConfig {
    ModelDb::builtin().unwrap().resolve(id).unwrap()
}

fn gpu(id: &str) -> Hardware {
    HardwareDb::builtin().unwrap().get(id).unwrap().clone()
}

const GIB: f64 = 1_073_741_824.0;

// ---------------------------------------------------------------------------------------
// Published runs: the training rows of data/measurements/measurements.csv, configured by
// data/measurements/training_runs.toml (ridgeline::train::runs).

fn measurements() -> Vec<ridgeline::calibrate::Measurement> {
    let csv =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("data/measurements/measurements.csv");
    ridgeline::calibrate::read_measurements(&csv).unwrap()
}

fn published() -> PublishedRuns {
    published_runs(&measurements(), RunSetups::builtin().unwrap())
}

/// torchtitan's Grand Teton H100 (96 GB HBM2e, 2.4 TB/s, 500 W), as training_runs.toml
/// defines it.
fn h100_96gb_500w() -> Hardware {
    RunSetups::builtin()
        .unwrap()
        .hardware("h100-96gb-hbm2e-500w")
        .unwrap()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn base(gpus: u64, seq: u64, global: u64, mb: u64) -> TrainConfig {
    TrainConfig {
        gpus,
        seq,
        global_batch: Some(global),
        micro_batch: mb,
        ..TrainConfig::default()
    }
}

#[test]
fn every_training_row_is_configured_or_skipped_with_a_reason() {
    let p = published();
    let ids = |kind| -> Vec<&str> {
        p.runs
            .iter()
            .filter(|r| r.kind == kind)
            .map(|r| r.id.as_str())
            .collect()
    };
    assert_eq!(
        ids(Kind::D),
        [
            "m093", "m095", "m096", "m098", "m099", "m100", "m101", "m102", "m103", "m107", "m109",
            "m110", "m112", "m113", "m114", "m115", "m287", "m288", "m289", "m290", "m291", "m292",
            "m293", "m294", "m295", "m296", "m298", "m299", "m300", "m301", "m302", "m303", "m304",
            "m305", "m306", "m307", "m308", "m309", "m311", "m312", "m313", "m314", "m315", "m316",
            "m317", "m318", "m319", "m321", "m322", "m323", "m324", "m325", "m326", "m327", "m328",
            "m330", "m331", "m332", "m352", "m353", "m354", "m355", "m526", "m530", "m534", "m536",
            "m560", "m561", "m562", "m563", "m564", "m565", "m566", "m567", "m568", "m569", "m570",
            "m571", "m572", "m573", "m574", "m583", "m584", "m585", "m586", "m587", "m588", "m589",
            "m590", "m591", "m592", "m593", "m594", "m595", "m612", "m613", "m614", "m615"
        ]
    );
    assert_eq!(
        ids(Kind::E),
        [
            "m118", "m119", "m120", "m125", "m127", "m128", "m130", "m297", "m527", "m529", "m531",
            "m535", "m537", "m539", "m541", "m543", "m547", "m575", "m576", "m599", "m607", "m611"
        ]
    );
    let skipped: Vec<&str> = p.skipped.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(
        skipped,
        [
            "m094", "m122", "m124", "m310", "m320", "m329", "m356", "m522", "m523", "m524", "m525",
            "m528", "m532", "m533", "m538", "m540", "m542", "m544", "m545", "m546", "m548", "m549",
            "m550", "m551", "m552", "m553", "m554", "m555", "m556", "m557", "m558", "m559", "m577",
            "m578", "m579", "m580", "m581", "m582", "m596", "m597", "m598", "m600", "m601", "m602",
            "m603", "m604", "m605", "m606", "m608", "m609", "m610"
        ]
    );
    assert!(p.skipped[0].reason.contains("CP16"));
    // every setup names a row of the CSV
    let rows = measurements();
    for id in RunSetups::builtin().unwrap().row_ids() {
        assert!(rows.iter().any(|r| r.id == id), "{id} is not in the CSV");
    }
    // the CSV's numbers are used: m096 reports 140 TFLOP/s with recomputation, m115
    // 85,000 tokens/s over its 8 GPUs, m128 82.4 GiB
    let run = |id: &str| p.runs.iter().find(|r| r.id == id).unwrap();
    assert_eq!(run("m096").measured, 140e12);
    assert_eq!(run("m096").metric, Metric::HardwareFlopsPerSPerGpu);
    assert_eq!(run("m096").config.precision, TrainPrecision::Fp16);
    assert_eq!(run("m115").measured, 85000.0);
    assert_eq!(run("m115").metric, Metric::TokensPerS);
    assert_eq!(run("m128").measured, 82.4 * GIB);
    assert_eq!(run("m093").config.global_batch, Some(2048));
    assert_eq!(run("m113").config.precision, TrainPrecision::Fp8);
    // expert-parallel rows take their layout from training_runs.toml (m316: DeepSeek-V3
    // on 256 GB200, PP4 VP4 EP64 with one MTP layer and the all-to-all overlapped) and
    // are kept out of the rows the factors are fitted on
    let ds = run("m316");
    assert_eq!(
        (ds.config.pp, ds.config.virtual_stages, ds.config.ep),
        (4, 4, 64)
    );
    assert_eq!((ds.config.mtp, ds.config.overlap_ep), (Some(1), true));
    let expert: Vec<&str> = p.expert_parallel().map(|r| r.id.as_str()).collect();
    assert_eq!(
        expert,
        [
            "m316", "m317", "m318", "m319", "m321", "m322", "m323", "m324", "m327", "m328"
        ]
    );
    assert!(p.throughput().all(|r| r.config.ep == 1 && r.config.cp == 1));
    // so are the context-parallel ones
    let context: Vec<&str> = p.context_parallel().map(|r| r.id.as_str()).collect();
    assert_eq!(
        context,
        [
            "m291", "m292", "m303", "m304", "m311", "m312", "m313", "m326", "m353", "m354", "m583",
            "m584", "m585", "m586", "m587", "m588"
        ]
    );
}

#[test]
fn published_training_throughput() {
    let mut errs = Vec::new();
    let p = published();
    for r in p.throughput() {
        let err = r.error(None).unwrap();
        let rep = train(&r.model, &r.hardware, &r.config).unwrap();
        println!(
            "{} {:<55} measured {:>12.4e} predicted {:>12.4e} err {:+6.1}%  mfu {:.3} bound {} fits {} ({:.1} GB) bubble {:.3} exposed {:.3}s time {:.3}s c {:.3} m {:.3} tp {:.3} dp {:.3} opt {:.3}",
            r.id,
            r.label,
            r.measured,
            r.predict(None).unwrap(),
            100.0 * err,
            rep.step.mfu,
            rep.step.bound,
            rep.memory.inner.fits,
            rep.memory.inner.total_bytes / 1e9,
            rep.step.bubble_fraction,
            rep.step.exposed_comm_time_s,
            rep.step.time_s,
            rep.step.compute_time_s,
            rep.step.memory_time_s,
            rep.step.tp_comm_time_s,
            rep.step.dp_comm_time_s,
            rep.step.optimizer_time_s
        );
        // tolerance per row: ±30 % (the spread of achieved efficiency within one
        // software stack on one GPU generation; data/training.toml fits the generic and
        // the Megatron stacks apart, NeMo/Megatron-Core reaching a much larger fraction
        // of the bf16 peak on Hopper than torchtitan, FSDP and MaxText), but for the
        // misses the model
        // cannot yet express, reported and not asserted: Meta's own 4D-parallel stack
        // for Llama 3.1 405B on 16,384 H100s (m093), costed as a generic stack but
        // tuned like Megatron's; torchao's float8 runs on 8 H100s (m570, m571), whose
        // measured gain over bf16 (+25% tensorwise, +10% rowwise) is far below the fp8
        // fraction the generic Hopper fit takes from torchtitan's fp8 runs (m113, m289).
        let known = ["m093", "m570", "m571"];
        if !known.contains(&r.id.as_str()) {
            assert!(err.abs() < 0.30, "{}: {:+.1}% off", r.id, 100.0 * err);
        }
        errs.push(err.abs());
    }
    assert_eq!(errs.len(), 72);
    let med = median(errs);
    println!("median |error| over kind D: {:.1}%", 100.0 * med);
    // measured 6.1 % over the 72 rows (issue 13's target for training: 12 %)
    assert!(med < 0.066, "median error {med}");
}

#[test]
fn published_training_memory() {
    let mut errs = Vec::new();
    let p = published();
    for r in p.memory() {
        let pred = r.predict(None).unwrap();
        let err = pred / r.measured - 1.0;
        let (m, d) = Trainer::new(&r.model, &r.hardware, &r.config)
            .unwrap()
            .memory();
        println!(
            "{} {:<60} {} measured {:6.2} GB predicted {:6.2} GB err {:+6.1}%  [params {:.2} grads {:.2} opt {:.2} act {:.2} (logits {:.2}) ovh {:.2}]",
            r.id,
            r.label,
            r.metric,
            r.measured / 1e9,
            pred / 1e9,
            100.0 * err,
            m.params_bytes / 1e9,
            m.grads_bytes / 1e9,
            m.optimizer_bytes / 1e9,
            m.activations_bytes / 1e9,
            d.logits_bytes / 1e9,
            m.overhead_bytes / 1e9
        );
        // known misses, reported and not asserted: m130 (405B FSDP8xTP8xPP8): with
        // pipelining, FSDP keeps the stage's weights and gradients unsharded across
        // micro-batches and float8 keeps casts, none of which ZeRO-3 accounting has;
        // m531 (torchtune QLoRA of Llama-3.1-8B on an RTX 4090, 7.9 GB), the smallest
        // footprint of the file, where the fixed terms (context, workspace, the caching
        // allocator's rounding) decide: +42%. m539 (Answer.AI's FSDP QLoRA over two RTX
        // 3090s, 5.6 GB) was -35% until its pure-bf16 rank-64 adapters and
        // transformers' fp32 logits were counted: now -13%.
        if !["m130", "m531"].contains(&r.id.as_str()) {
            assert!(err.abs() < 0.35, "{}: {:+.1}% off", r.id, 100.0 * err);
        }
        errs.push(err.abs());
    }
    assert_eq!(errs.len(), 22);
    let med = median(errs);
    println!("median |error| over kind E: {:.1}%", 100.0 * med);
    // measured 9.9 % over the 22 rows (issue 13's target for memory: 10 %)
    assert!(med < 0.105, "median error {med}");
}

/// The fit `ridgeline calibrate --train` runs, on the bundled CSV, gives back the factors
/// of data/training.toml (within one grid step) and the residuals written there, with
/// the median errors measured when the file was written: 6.0 % over all 72 throughput
/// rows; per entry 5.4 % over the 16 generic A100 rows, 6.4 % over the 2 Megatron A100
/// rows, 7.7 % over the 23 generic Hopper rows, 4.6 % over the 22 Megatron Hopper rows,
/// 3.3 % over the 4 Megatron Blackwell rows (all but the Megatron A100 entry with their
/// attention at the measured kernels, not fitted).
#[test]
fn calibration_reproduces_data_training_toml() {
    use ridgeline::train::calibrate::{COMPUTE_STEP, fit_rows, matches_table, training_toml};
    let fit = fit_rows(&measurements()).unwrap();
    let table = EfficiencyTable::builtin().unwrap();
    assert_eq!(fit.rows.len(), 72);
    assert_eq!(COMPUTE_STEP, 0.02);
    let entries = [
        ("ampere", 16, 0.055),
        ("ampere+megatron", 2, 0.065),
        ("hopper", 23, 0.078),
        ("hopper+megatron", 22, 0.047),
        ("blackwell+megatron", 4, 0.034),
    ];
    for (arch, rows, bound) in entries {
        let a = fit.architecture(arch).unwrap();
        let entry = table.get(arch).unwrap();
        println!("{arch}: fitted {:?}", a.efficiency);
        assert!(
            matches_table(&a.efficiency, &entry.efficiency),
            "{arch}: fitted {:?}, table {:?}",
            a.efficiency,
            entry.efficiency
        );
        assert_eq!(a.rows.len(), rows);
        assert_eq!(a.rows, entry.fitted_on);
        assert!(a.median_abs_error < bound, "{arch}: {}", a.median_abs_error);
        for r in fit.rows.iter().filter(|r| a.rows.contains(&r.id)) {
            let written = entry.residuals[&r.id];
            assert!(
                (r.error - written).abs() < 0.005,
                "{}: {} vs {written}",
                r.id,
                r.error
            );
        }
    }
    // the attention of Hopper, Blackwell and the generic A100 stacks is the measured
    // kernels' (data/kernels/training-attention.toml), the other entries' fitted
    for (arch, kernels) in [
        ("hopper", Some("flash-attention-2-hopper")),
        ("hopper+megatron", Some("cudnn-9-hopper")),
        ("blackwell+megatron", Some("cudnn-9-blackwell")),
        ("ampere", Some("flash-attention-2-ampere")),
        ("ampere+megatron", None),
    ] {
        let a = fit.architecture(arch).unwrap();
        assert_eq!(
            a.efficiency.attention_measured.as_deref(),
            kernels,
            "{arch}"
        );
        assert_eq!(
            table
                .get(arch)
                .unwrap()
                .efficiency
                .attention_measured
                .as_deref(),
            kernels
        );
    }
    assert!(!fit.architecture("ampere").unwrap().fp8_fitted);
    assert!(fit.architecture("hopper").unwrap().fp8_fitted);
    assert!(fit.architecture("hopper+megatron").unwrap().fp8_fitted);
    println!("median |error| over all rows: {:.4}", fit.median_abs_error);
    assert!(fit.median_abs_error < 0.066, "{}", fit.median_abs_error);
    // the same chips reach more under Megatron-Core than under the generic stacks on
    // Hopper (fused kernels, cuDNN attention, overlapped collectives)
    let compute = |k: &str| fit.architecture(k).unwrap().efficiency.compute;
    assert!(compute("hopper+megatron") > 1.5 * compute("hopper"));
    // the overlap scan covers 0..1 and the prior is among the best
    assert_eq!(fit.overlap_profile.len(), 11);
    // what --save writes reads back as the same factors (keys with a stack quoted),
    // with the fallback carried over
    let text = training_toml(&fit, table, "data/measurements/measurements.csv");
    assert!(
        text.contains("[architecture.\"hopper+megatron\"]"),
        "{text}"
    );
    let again = EfficiencyTable::from_toml(&text, "saved").unwrap();
    for (arch, _, _) in entries {
        assert_eq!(
            again.get(arch).unwrap().efficiency,
            table.get(arch).unwrap().efficiency
        );
    }
    assert_eq!(again.fallback.efficiency, table.fallback.efficiency);
}

/// The bundled training table's factors of `entry` (what the fit wrote).
fn fitted(entry: &str) -> ridgeline::train::TrainEfficiency {
    EfficiencyTable::builtin()
        .unwrap()
        .get(entry)
        .unwrap()
        .efficiency
        .clone()
}

#[test]
fn efficiency_by_architecture() {
    let eff = |id: &str| TrainEfficiency::for_hardware(&gpu(id)).unwrap();
    // every Ampere part gets the A100 fit, by architecture rather than by id
    for id in [
        "a100-80gb-sxm",
        "a10",
        "a10g",
        "a40",
        "rtx-3090",
        "rtx-a6000",
    ] {
        assert_eq!(eff(id).label, "ampere", "{id}");
        assert_eq!(eff(id).compute, fitted("ampere").compute, "{id}");
    }
    assert_eq!(eff("h200-sxm").label, "hopper");
    // every Blackwell run is Megatron's: the generic stack takes that entry
    assert_eq!(eff("b200").label, "blackwell+megatron");
    assert_eq!(eff("gb200").label, "blackwell+megatron");
    // Ada from torchtune's RTX 4090 runs, CDNA3 from torchtitan's MI300X runs
    assert_eq!(eff("rtx-4090").label, "ada");
    assert_eq!(eff("mi300x").label, "cdna3");
    for id in ["v100-sxm2-32gb", "tpu-v5p"] {
        assert_eq!(eff(id).label, "uncalibrated", "{id}");
        // the fallback uses the Hopper fit of the stack asked for
        assert_eq!(eff(id).compute, eff("h100-sxm").compute, "{id}");
        assert_eq!(eff(id).compute, fitted("hopper").compute, "{id}");
    }
    // the stack picks the entry: Megatron-Core on Hopper its own fit, the generic stacks
    // Hopper's; Ampere has both; a stack without an entry takes the architecture's other
    let table = EfficiencyTable::builtin().unwrap();
    let of = |id: &str, stack| table.for_stack(&gpu(id), stack);
    assert_eq!(
        of("h100-sxm", TrainStack::Megatron).label,
        "hopper+megatron"
    );
    assert_eq!(
        of("h100-sxm", TrainStack::Megatron).compute,
        fitted("hopper+megatron").compute
    );
    assert_eq!(
        of("a100-80gb-sxm", TrainStack::Megatron).label,
        "ampere+megatron"
    );
    assert_eq!(of("rtx-4090", TrainStack::Megatron).label, "ada");
    let v100 = of("v100-sxm2-32gb", TrainStack::Megatron);
    assert_eq!(
        (v100.label.as_str(), v100.compute),
        ("uncalibrated", fitted("hopper+megatron").compute)
    );
    // and `train` reports the stack it used
    let m = model("llama-3-8b");
    let cfg = TrainConfig {
        gpus: 8,
        zero: 3,
        stack: TrainStack::Megatron,
        ..TrainConfig::default()
    };
    let rep = train(&m, &gpu("h100-sxm"), &cfg).unwrap();
    assert_eq!(rep.efficiency.label, "hopper+megatron");
    let generic = train(
        &m,
        &gpu("h100-sxm"),
        &TrainConfig {
            stack: TrainStack::Generic,
            ..cfg
        },
    )
    .unwrap();
    // the ratio of the two matmul fractions bounds the speedup (the step is mostly
    // compute-bound, the memory-bound ops run alike): within 15% of it, never above
    let ratio = fitted("hopper+megatron").compute / fitted("hopper").compute;
    let speedup = rep.step.tokens_per_s / generic.step.tokens_per_s;
    assert!(speedup > 1.0, "{speedup}");
    assert!(
        speedup <= ratio + 1e-9 && speedup > 0.85 * ratio,
        "{speedup} against {ratio}"
    );
    let mut unknown = gpu("h100-sxm");
    unknown.architecture = String::new();
    assert_eq!(eff_of(&unknown).label, "uncalibrated");
    // a table entry needs all seven factors or `uses`
    let e = EfficiencyTable::from_toml("[fallback]\ncompute = 0.5\n", "t.toml").unwrap_err();
    assert!(
        e.to_string().contains("t.toml") && e.to_string().contains("overlap_tp"),
        "{e}"
    );
    let e = EfficiencyTable::from_toml("[fallback]\nuses = \"volta\"\n", "t.toml").unwrap_err();
    assert!(e.to_string().contains("volta"), "{e}");
}

fn eff_of(hw: &Hardware) -> TrainEfficiency {
    TrainEfficiency::for_hardware(hw).unwrap()
}

// ---------------------------------------------------------------------------------------
// Pinned hand arithmetic.

#[test]
fn zero_stages_llama2_7b_on_8_gpus() {
    // P = 6,738,415,616 parameters, dp = 8, mixed-precision AdamW (2 + 2 + 12 bytes):
    // ZeRO-0: 16 P              = 107,814,649,856 B = 107.8 GB
    // ZeRO-1: (2 + 2 + 12/8) P  = 5.5 P  = 37,061,285,888 B = 37.06 GB
    // ZeRO-2: (2 + 14/8) P      = 3.75 P = 25,269,058,560 B = 25.27 GB
    // ZeRO-3: 16/8 P            = 2 P    = 13,476,831,232 B = 13.48 GB
    let m = model("llama-2-7b");
    assert_eq!(m.params().total, 6_738_415_616);
    let cfg = TrainConfig {
        gpus: 8,
        global_batch: Some(8),
        ..TrainConfig::default()
    };
    let stages = zero_stages(&m, &gpu("a100-80gb-sxm"), &cfg).unwrap();
    let expect = [
        107_814_649_856.0,
        37_061_285_888.0,
        25_269_058_560.0,
        13_476_831_232.0,
    ];
    let gb = [107.8, 37.06, 25.27, 13.48];
    for k in 0..4 {
        let got = stages[k].model_states_bytes();
        assert!((got - expect[k]).abs() < 1.0, "ZeRO-{k}: {got}");
        let digits = if k == 0 { 10.0 } else { 100.0 };
        assert_eq!((got / 1e9 * digits).round() / digits, gb[k], "ZeRO-{k}");
    }
    // the parts: ZeRO-2 holds 2 P of weights, P/4 of gradients, 1.5 P of optimizer
    assert_eq!(stages[2].params_bytes, 2.0 * 6_738_415_616.0);
    assert_eq!(stages[2].grads_bytes, 2.0 * 6_738_415_616.0 / 8.0);
    assert_eq!(stages[2].optimizer_bytes, 12.0 * 6_738_415_616.0 / 8.0);
}

fn shape(
    seq: u64,
    tp: u64,
    sp: bool,
    flash: bool,
    dropout: bool,
    rc: Recompute,
) -> ActivationShape {
    ActivationShape {
        seq,
        micro_batch: 1,
        tp,
        sequence_parallel: sp,
        flash,
        dropout,
        recompute: rc,
        act_bytes: 2.0,
        eager: false,
    }
}

#[test]
fn activation_formula_reduces_to_korthikanti_for_gpt() {
    // GPT-3 175B layer, s = 2048, b = 1, h = 12288, a = 96 (Korthikanti et al. 2022):
    // sbh = 25,165,824; no recomputation sbh(34 + 5as/h) = sbh · (34 + 80) = 2,868,903,936;
    // selective 34 sbh = 855,638,016; full 2 sbh = 50,331,648;
    // TP 8 without SP: sbh(10 + 24/8 + 80/8) = 23 sbh = 578,813,952; with SP: / 8.
    let m = model("gpt3-175b");
    let sbh = 2048.0 * 12288.0;
    let f = |tp, sp, rc| activation_bytes_per_layer(&m, &shape(2048, tp, sp, false, true, rc));
    assert_eq!(f(1, false, Recompute::None), sbh * 114.0);
    assert_eq!(f(1, false, Recompute::None), 2_868_903_936.0);
    assert_eq!(f(1, false, Recompute::Selective), 855_638_016.0);
    assert_eq!(f(1, false, Recompute::Full), 50_331_648.0);
    assert_eq!(f(8, false, Recompute::None), 578_813_952.0);
    assert_eq!(f(8, true, Recompute::None), 2_868_903_936.0 / 8.0);
    assert_eq!(f(8, true, Recompute::Full), 50_331_648.0 / 8.0);
}

#[test]
fn activation_formula_one_llama_layer_by_hand() {
    // Llama-2-7B layer, s = 4096, b = 1, bf16, flash attention, no dropout:
    // e(4h + 2q + 2k + 3i) = 2 (16384 + 8192 + 8192 + 33024) = 131,584 bytes per token,
    // × 4096 = 538,968,064; + fp32 log-sum-exp 4 · 32 heads · 4096 = 524,288
    // = 539,492,352 bytes.
    let m = model("llama-2-7b");
    let none = shape(4096, 1, false, true, false, Recompute::None);
    assert_eq!(activation_bytes_per_layer(&m, &none), 539_492_352.0);
    // with flash there is no score matrix, so selective stores the same
    let sel = shape(4096, 1, false, true, false, Recompute::Selective);
    assert_eq!(activation_bytes_per_layer(&m, &sel), 539_492_352.0);
    // Llama-3-8B (GQA, 8 KV heads, SwiGLU 14336), s = 8192:
    // 2 (16384 + 8192 + 2048 + 43008) = 139,264 B/token · 8192 = 1,140,850,688
    // + 4 · 32 · 8192 = 1,048,576 -> 1,141,899,264; TP 8 with SP: / 8 = 142,737,408.
    let m = model("llama-3-8b");
    assert_eq!(
        activation_bytes_per_layer(&m, &shape(8192, 1, false, true, false, Recompute::None)),
        1_141_899_264.0
    );
    assert_eq!(
        activation_bytes_per_layer(&m, &shape(8192, 8, true, true, false, Recompute::None)),
        142_737_408.0
    );
}

#[test]
fn lora_trains_only_adapters() {
    // Llama-2-13B, rank 8 on q and v: 40 layers · 8 · ((5120 + 5120) + (5120 + 5120))
    // = 6,553,600 trainable (LitGPT prints 6.55M).
    let m = model("llama-2-13b");
    let hw = gpu("a100-80gb-sxm");
    let cfg = TrainConfig {
        method: Method::Lora,
        lora_targets: LoraTargets::QueryValue,
        seq: 512,
        ..TrainConfig::default()
    };
    let r = train(&m, &hw, &cfg).unwrap();
    assert_eq!(r.model.trainable_params, 6_553_600.0);
    // the default adapts every linear layer (PEFT's "all-linear"): per layer
    // q, k, v, o 4 · 8 · (5120 + 5120) = 327,680 and gate, up, down
    // 3 · 8 · (5120 + 13824) = 454,656; 40 · 782,336 = 31,293,440
    let all = TrainConfig {
        method: Method::Lora,
        seq: 512,
        ..TrainConfig::default()
    };
    assert_eq!(all.lora_targets, LoraTargets::AllLinear);
    assert_eq!(
        train(&m, &hw, &all).unwrap().model.trainable_params,
        31_293_440.0
    );
    let mem = r.memory.inner;
    // frozen bf16 base + bf16 adapters; gradients and AdamW states for adapters only
    let p = 13_015_864_320.0;
    assert!((mem.params_bytes - (2.0 * p + 2.0 * 6_553_600.0)).abs() < 1.0);
    assert_eq!(mem.grads_bytes, 2.0 * 6_553_600.0);
    assert_eq!(mem.optimizer_bytes, 12.0 * 6_553_600.0);
    // QLoRA: projections in NF4 (4.127 bits), embeddings, lm_head and norms in bf16
    let q = train(
        &m,
        &hw,
        &TrainConfig {
            method: Method::Qlora,
            ..cfg.clone()
        },
    )
    .unwrap();
    let c = m.params();
    let nf4 = (c.attention + c.mlp) as f64 * 4.126_953_125 / 8.0;
    let rest = (c.embedding + c.lm_head + c.norms) as f64 * 2.0;
    assert!((q.memory.inner.params_bytes - (nf4 + rest + 2.0 * 6_553_600.0)).abs() < 1.0);
    // LoRA backward skips weight gradients of the frozen matmuls: cheaper than full
    let full = train(
        &m,
        &hw,
        &TrainConfig {
            seq: 512,
            ..TrainConfig::default()
        },
    )
    .unwrap();
    assert!(r.step.time_s < 0.8 * full.step.time_s);
}

#[test]
fn optimizer_state_counts() {
    let m = model("llama-2-7b");
    let hw = gpu("h100-sxm");
    let p = 6_738_415_616.0;
    let opt = |o| {
        let cfg = TrainConfig {
            optimizer: o,
            seq: 256,
            ..TrainConfig::default()
        };
        train(&m, &hw, &cfg).unwrap().memory.inner.optimizer_bytes
    };
    assert_eq!(opt(Optimizer::Adamw), 12.0 * p);
    assert_eq!(opt(Optimizer::Sgd), 8.0 * p);
    // Adafactor: 4 B master + factored statistics (well under 0.01 B per parameter)
    let a = opt(Optimizer::Adafactor) / p;
    assert!(a > 4.0 && a < 4.01, "{a}");
    // 8-bit AdamW: fp32 master 4 + m 1 + v 1 + one fp32 absmax per 2048-value block of
    // each moment (2 · 4/2048): 6.00390625 B per parameter
    assert_eq!(opt(Optimizer::Adamw8bit), 6.003_906_25 * p);
}

#[test]
fn pure_bf16_keeps_no_master_copy() {
    // pure bf16 (torchtune's dtype bf16): weights 2 + gradients 2 + AdamW m and v in
    // bf16 (2 + 2) = 8 B per parameter, against mixed precision's 2 + 2 + 12 = 16
    let m = model("llama-2-7b");
    let hw = gpu("h100-sxm");
    let p = 6_738_415_616.0;
    let mem = |precision| {
        let cfg = TrainConfig {
            precision,
            seq: 256,
            ..TrainConfig::default()
        };
        train(&m, &hw, &cfg).unwrap().memory.inner
    };
    let (pure, mixed) = (mem(TrainPrecision::Bf16Pure), mem(TrainPrecision::Bf16));
    assert_eq!(pure.optimizer_bytes, 4.0 * p);
    assert_eq!(mixed.optimizer_bytes, 12.0 * p);
    assert_eq!(pure.params_bytes + pure.grads_bytes, 4.0 * p);
    assert_eq!(pure.activations_bytes, mixed.activations_bytes);
    // SGD: momentum only, 2 B; 8-bit AdamW: 1 + 1 + 2 · 4/2048 = 2.00390625 B
    for (o, bpp) in [(Optimizer::Sgd, 2.0), (Optimizer::Adamw8bit, 2.003_906_25)] {
        assert_eq!(
            o.state_bytes_per_param(0.0, TrainPrecision::Bf16Pure),
            bpp,
            "{o:?}"
        );
    }
    // the update reads weight, m, v and gradient (2 · 4) and writes weight, m, v (2 · 3)
    assert_eq!(
        Optimizer::Adamw.update_bytes_per_param(TrainPrecision::Bf16Pure),
        14.0
    );
}

#[test]
fn upcast_loss_holds_sixteen_bytes_per_logit() {
    // Llama-2-7B, seq 2048, micro-batch 1, vocabulary 32,000: 65,536,000 logits; the
    // fused loss keeps 2 + 4 = 6 B each (393,216,000 B), the fp32 upcast 16
    // (1,048,576,000 B): 655,360,000 B more in the activations
    let m = model("llama-2-7b");
    let hw = gpu("h100-sxm");
    let mem = |loss| {
        let cfg = TrainConfig {
            loss,
            ..TrainConfig::default()
        };
        train(&m, &hw, &cfg).unwrap().memory
    };
    let (fused, upcast) = (mem(Loss::Fused), mem(Loss::Upcast));
    assert_eq!(fused.detail.logits_bytes, 393_216_000.0);
    assert_eq!(upcast.detail.logits_bytes, 1_048_576_000.0);
    assert_eq!(
        upcast.inner.activations_bytes - fused.inner.activations_bytes,
        655_360_000.0
    );
}

#[test]
fn eager_gated_mlp_keeps_the_activation_output() {
    // Llama-3-8B, s = 8192, b = 1, flash, no dropout, no recomputation: compiled,
    // 2 · (4·4096 + 2·4096 + 2·1024 + 3·14336) + 4·32 = 139,392 B per token; eager
    // also keeps silu(gate), 2 · 14336 = 28,672 B more: 168,064 B per token,
    // 1,376,780,288 B per layer
    let m = model("llama-3-8b");
    let shape = |eager| ActivationShape {
        eager,
        ..shape(8192, 1, true, true, false, Recompute::None)
    };
    assert_eq!(
        activation_bytes_per_layer(&m, &shape(false)),
        1_141_899_264.0
    );
    assert_eq!(
        activation_bytes_per_layer(&m, &shape(true)),
        1_376_780_288.0
    );
    // a plain (GELU) MLP keeps the activation's input and output either way
    let gpt = model("gpt3-175b");
    assert_eq!(
        activation_bytes_per_layer(&gpt, &shape(true)),
        activation_bytes_per_layer(&gpt, &shape(false))
    );
}

#[test]
fn eight_bit_adam_moves_fewer_bytes_per_update() {
    // the update reads and writes master + m + v (4 + 1 + 1) and reads the bf16
    // gradient, writes the bf16 weight: 16 B per parameter against AdamW's 28
    assert_eq!(
        Optimizer::Adamw8bit.update_bytes_per_param(TrainPrecision::Bf16),
        16.0
    );
    let m = model("llama-2-7b");
    let hw = gpu("h100-sxm");
    let step = |o| {
        let cfg = TrainConfig {
            optimizer: o,
            seq: 256,
            ..TrainConfig::default()
        };
        train(&m, &hw, &cfg).unwrap().step.optimizer_time_s
    };
    // the update is bandwidth-bound: its time scales with the bytes, 16/28
    let ratio = step(Optimizer::Adamw8bit) / step(Optimizer::Adamw);
    assert!((ratio - 16.0 / 28.0).abs() < 1e-9, "{ratio}");
}

#[test]
fn optimizer_in_backward_holds_one_layers_gradients() {
    // Llama-2-7B full training on one device: without it every bf16 gradient,
    // 2 · 6,738,415,616 B; with it the largest of one layer (4 · 4096² + 3 · 4096 ·
    // 11008 + 2 · 4096 + 4096/32 = 202,383,488) and the two embedding tables
    // (2 · 32000 · 4096 = 262,144,000): 2 · 262,144,000 = 524,288,000 B
    let m = model("llama-2-7b");
    let hw = gpu("h100-sxm");
    let cfg = TrainConfig {
        seq: 256,
        ..TrainConfig::default()
    };
    let plain = train(&m, &hw, &cfg).unwrap().memory.inner.grads_bytes;
    assert_eq!(plain, 2.0 * 6_738_415_616.0);
    let fused = TrainConfig {
        optimizer_in_backward: true,
        ..cfg.clone()
    };
    let r = train(&m, &hw, &fused).unwrap();
    assert_eq!(r.memory.inner.grads_bytes, 524_288_000.0);
    // LoRA on q and v: one layer's adapters, 8 · (4096 + 4096) · 2 = 131,072 params
    let lora = TrainConfig {
        method: Method::Lora,
        lora_targets: LoraTargets::QueryValue,
        optimizer_in_backward: true,
        ..cfg.clone()
    };
    let r = train(&m, &hw, &lora).unwrap();
    assert_eq!(r.memory.inner.grads_bytes, 2.0 * 131_072.0);
    // gradient accumulation, a pipeline or host optimizer states cannot fuse the step
    for (bad, field) in [
        (
            TrainConfig {
                global_batch: Some(4),
                ..fused.clone()
            },
            "global_batch",
        ),
        (
            TrainConfig {
                gpus: 2,
                pp: 2,
                global_batch: Some(1),
                ..fused.clone()
            },
            "pp",
        ),
        (
            TrainConfig {
                offload: Offload::Cpu,
                ..fused.clone()
            },
            "offload",
        ),
    ] {
        let e = train(&m, &hw, &bad).unwrap_err();
        assert!(matches!(e, Error::Conflict { .. }), "{e}");
        assert!(e.to_string().contains(field), "{e}");
    }
}

#[test]
fn compiled_step_removes_the_fused_elementwise_traffic() {
    // torch.compile fuses the residual adds, the SwiGLU product and RoPE into their
    // neighbours: the FLOPs stay, their bytes go, so the step is faster and MFU's
    // model FLOPs are unchanged
    let m = model("llama-2-7b");
    let hw = gpu("h100-sxm");
    let cfg = TrainConfig {
        seq: 2048,
        ..TrainConfig::default()
    };
    let eager = train(&m, &hw, &cfg).unwrap();
    let compiled = train(
        &m,
        &hw,
        &TrainConfig {
            compile: true,
            ..cfg.clone()
        },
    )
    .unwrap();
    assert_eq!(compiled.step.flops, eager.step.flops);
    assert_eq!(compiled.step.executed_flops, eager.step.executed_flops);
    assert!(compiled.step.memory_time_s < eager.step.memory_time_s);
    assert!(compiled.step.time_s < eager.step.time_s);
}

#[test]
fn offload_moves_optimizer_to_host_and_costs_link_time() {
    let m = model("llama-2-7b");
    let hw = gpu("a100-80gb-sxm");
    let cfg = TrainConfig {
        gpus: 8,
        zero: 2,
        seq: 1024,
        global_batch: Some(8),
        ..TrainConfig::default()
    };
    let on = train(&m, &hw, &cfg).unwrap();
    let off = train(
        &m,
        &hw,
        &TrainConfig {
            offload: Offload::Cpu,
            ..cfg
        },
    )
    .unwrap();
    assert_eq!(off.memory.inner.optimizer_bytes, 0.0);
    assert_eq!(
        off.memory.detail.host_optimizer_bytes,
        on.memory.inner.optimizer_bytes
    );
    // 16-bit gradients of the shard down PCIe Gen4 (32 GB/s · 0.8):
    // 2 · 6,738,415,616 / 8 / 25.6e9 = 65.8 ms
    assert!((off.step.offload_time_s - 2.0 * 6_738_415_616.0 / 8.0 / 25.6e9).abs() < 1e-6);
    assert_eq!(off.step.optimizer_time_s, 0.0);
    assert!(on.step.optimizer_time_s > 0.0);
}

#[test]
fn pipeline_bubble_and_micro_batches() {
    let m = model("llama-2-13b");
    let hw = gpu("h100-sxm");
    let cfg = TrainConfig {
        gpus: 8,
        pp: 4,
        tp: 2,
        micro_batch: 1,
        global_batch: Some(16),
        seq: 2048,
        ..TrainConfig::default()
    };
    let r = train(&m, &hw, &cfg).unwrap();
    // dp = 1, m = 16 micro-batches, bubble (p-1)/(m+p-1) = 3/19
    assert_eq!(r.layout.dp, 1);
    assert_eq!(r.layout.micro_batches, 16);
    assert!((r.step.bubble_fraction - 3.0 / 19.0).abs() < 1e-12);
    assert!((r.step.bubble_time_s - 3.0 * r.step.micro_batch_time_s).abs() < 1e-12);
    // interleaving with 2 virtual stages halves the bubble: 1.5/17.5
    let v = train(
        &m,
        &hw,
        &TrainConfig {
            virtual_stages: 2,
            ..cfg.clone()
        },
    )
    .unwrap();
    assert!((v.step.bubble_fraction - 1.5 / 17.5).abs() < 1e-12);
    // first stage holds min(pp, m) = 4 micro-batches of activations
    assert!(r.memory.detail.micro_batches_in_flight == 4 || r.memory.detail.stage == "last");
}

/// `model` trained ZeRO-3 over 8 `hw` devices, one micro-batch of `micro_batch`
/// sequences of `seq` tokens per step, with `recompute`.
fn zero3_on_8(
    m: &ModelConfig,
    hw: &Hardware,
    micro_batch: u64,
    seq: u64,
    recompute: Recompute,
) -> ridgeline::train::TrainReport {
    let cfg = TrainConfig {
        gpus: 8,
        zero: 3,
        micro_batch,
        global_batch: Some(8 * micro_batch),
        seq,
        recompute,
        ..TrainConfig::default()
    };
    train(m, hw, &cfg).unwrap()
}

#[test]
fn recomputation_trades_memory_for_time_and_mfu_ignores_it() {
    let m = model("llama-2-7b");
    let hw = gpu("a100-80gb-sxm");
    let at = |rc| zero3_on_8(&m, &hw, 2, 4096, rc);
    let none = at(Recompute::None);
    let full = at(Recompute::Full);
    assert!(full.memory.inner.activations_bytes < 0.2 * none.memory.inner.activations_bytes);
    assert!(full.step.time_s > 1.2 * none.step.time_s);
    // same model FLOPs, lower MFU; HFU counts the extra forward (about 4/3)
    assert_eq!(full.step.flops, none.step.flops);
    assert!(full.step.mfu < none.step.mfu);
    let ratio = full.step.hfu / full.step.mfu;
    assert!(ratio > 1.25 && ratio < 1.36, "{ratio}");
    assert!((none.step.hfu - none.step.mfu).abs() < 1e-12);
    for r in [&none, &full] {
        assert!(r.step.mfu > 0.0 && r.step.mfu < 1.0);
        let parts = r.memory.inner.params_bytes
            + r.memory.inner.grads_bytes
            + r.memory.inner.optimizer_bytes
            + r.memory.inner.activations_bytes
            + r.memory.inner.overhead_bytes;
        assert!((parts - r.memory.inner.total_bytes).abs() < 1.0);
    }
}

#[test]
fn op_level_checkpointing_keeps_every_second_matmul_output() {
    // Llama-3-8B layer (h = q = 4096, kv width 1024, SwiGLU 14336, 32 heads), s = 8192,
    // b = 1, bf16, flash, no TP. torchtitan's op policy keeps the layer input (4096),
    // the outputs of the 1st, 3rd, 5th and 7th matmuls (q 4096, v 1024, gate 14336,
    // down 4096 = 23,552) and the attention output (4096) with its fp32 log-sum-exp
    // (4 · 32 bytes): 2 · (4096 + 23,552 + 4096) + 128 = 63,616 bytes per token,
    // 63,616 · 8192 = 521,142,272 bytes. Without recomputation: 2 · (4·4096 + 2·4096 +
    // 2·1024 + 3·14336) + 128 = 139,392 bytes per token, 1,141,899,264 bytes.
    let m = model("llama-3-8b");
    let shape = |recompute| shape(8192, 1, true, true, false, recompute);
    assert_eq!(
        activation_bytes_per_layer(&m, &shape(Recompute::Op)),
        521_142_272.0
    );
    assert_eq!(
        activation_bytes_per_layer(&m, &shape(Recompute::None)),
        1_141_899_264.0
    );
    // its step sits between none and full: it recomputes k (1024 of the fused
    // 6144-wide projection), o, the up half of gate/up and the elementwise ops, about a
    // third of the layer's matmul FLOPs where full recomputes all of them
    let hw = gpu("h100-sxm");
    let at = |recompute| zero3_on_8(&m, &hw, 1, 8192, recompute);
    let (none, op, full) = (at(Recompute::None), at(Recompute::Op), at(Recompute::Full));
    assert!(none.step.time_s < op.step.time_s && op.step.time_s < full.step.time_s);
    let extra = |r: &ridgeline::train::TrainReport| r.step.hfu / r.step.mfu - 1.0;
    assert!(extra(&op) > 0.25 * extra(&full) && extra(&op) < 0.5 * extra(&full));
    // memory: the kept tensors of the 32 layers, one layer rebuilt in full (what it did
    // not keep; the step is eager, so the rebuilt layer also holds silu(gate),
    // 2 · 14336 B per token more: 168,064 · 8192 = 1,376,780,288 bytes in all, less the
    // 521,142,272 kept) and the logits of the last stage, 8192 · 128,256 · (2 + 4)
    // bytes: 32 · 521,142,272 + 855,638,016 + 6,304,038,912 = 23,836,229,632 bytes
    assert_eq!(m.layers, 32);
    let act = op.memory.inner.activations_bytes;
    assert!((act - 23_836_229_632.0).abs() < 1.0, "{act}");
}

#[test]
fn mfu_counts_six_n_plus_attention() {
    // Llama-2-13B, seq 4096, 128 sequences: N excludes the input embedding lookup
    // (13,015,864,320 - 163,840,000 = 12,852,024,320); causal attention 6 · 40 · 5120 ·
    // 4096 = 5,033,164,800 per token (PaLM's full square: twice that); FLOPs = 524,288
    // tokens · (6N + attention).
    let m = model("llama-2-13b");
    let hw = gpu("a100-80gb-sxm");
    let t = Trainer::new(
        &m,
        &hw,
        &TrainConfig {
            gpus: 64,
            zero: 3,
            micro_batch: 2,
            global_batch: Some(128),
            seq: 4096,
            ..TrainConfig::default()
        },
    )
    .unwrap();
    let expect = 524_288.0 * (6.0 * 12_852_024_320.0 + 5_033_164_800.0);
    assert!((t.model_flops() / expect - 1.0).abs() < 1e-12);
    let square = 524_288.0 * (6.0 * 12_852_024_320.0 + 10_066_329_600.0);
    assert!((t.model_flops_full_square() / square - 1.0).abs() < 1e-12);
}

#[test]
fn largest_micro_batch_fits_and_the_next_does_not() {
    let m = model("llama-3-8b");
    let hw = gpu("h100-sxm");
    let cfg = TrainConfig {
        gpus: 8,
        zero: 3,
        seq: 4096,
        micro_batch: 1,
        global_batch: Some(1024),
        ..TrainConfig::default()
    };
    let t = Trainer::new(&m, &hw, &cfg).unwrap();
    let b = t.max_micro_batch();
    assert!(b >= 1);
    assert!(t.memory_at(b).0.fits);
    assert!(!t.memory_at(b + 1).0.fits);
    assert_eq!(t.memory().1.max_micro_batch, b);
    // 405B on one 24 GB card: nothing fits
    let (m405, g4090) = (model("llama-3.1-405b"), gpu("rtx-4090"));
    let big = Trainer::new(&m405, &g4090, &TrainConfig::default()).unwrap();
    assert_eq!(big.max_micro_batch(), 0);
    assert!(!big.memory().0.fits);
}

#[test]
fn inter_node_groups_use_the_network() {
    // 16 GPUs, ZeRO-0 data parallel over 2 nodes vs 1 node of 8: the gradient all-reduce
    // over the network (8 NICs in parallel rings, 8 · 50e9 < NVLink? no: 400e9 < 450e9)
    // is slower per byte than inside the node.
    let m = model("llama-2-7b");
    let hw = gpu("h100-sxm");
    let at = |gpus: u64, bw: f64| {
        let cfg = TrainConfig {
            gpus,
            zero: 1,
            seq: 2048,
            global_batch: Some(gpus),
            inter_node_bytes_per_s: bw,
            ..TrainConfig::default()
        };
        train(&m, &hw, &cfg).unwrap().step
    };
    let one_node = at(8, 50e9);
    let two_nodes = at(16, 50e9);
    let slow_net = at(16, 12.5e9);
    // ring bytes grow from 2·7/8 to 2·15/16 of the gradients, bandwidth drops to 400e9
    let per_byte_8 = one_node.dp_comm_time_s / (2.0 * 7.0 / 8.0);
    let per_byte_16 = two_nodes.dp_comm_time_s / (2.0 * 15.0 / 16.0);
    assert!((per_byte_16 / per_byte_8 - 450.0 / 400.0).abs() < 1e-9);
    assert!((slow_net.dp_comm_time_s / two_nodes.dp_comm_time_s - 4.0).abs() < 1e-9);
}

#[test]
fn context_parallelism_splits_each_sequence_by_hand() {
    // Llama 2 7B, seq 4096, one sequence per step, ZeRO-1, bf16 on H100 SXM: one GPU
    // against two context-parallel ranks
    let m = model("llama-2-7b");
    let hw = gpu("h100-sxm");
    let at = |gpus: u64, cp: u64, seq: u64| {
        let cfg = TrainConfig {
            gpus,
            cp,
            zero: 1,
            seq,
            global_batch: Some(1),
            ..TrainConfig::default()
        };
        train(&m, &hw, &cfg).unwrap()
    };
    let one = at(1, 1, 4096);
    let two = at(2, 2, 4096);
    assert_eq!((two.layout.cp, two.layout.dp), (2, 1));
    // every FLOP of the sequence runs once, half on each rank
    let rel = |a: f64, b: f64| (a / b - 1.0).abs();
    assert!(rel(two.step.executed_flops, one.step.executed_flops) < 1e-12);
    // each rank holds the activations (and logits) of 2,048 tokens: those of a
    // 2,048-token sequence on one GPU
    let half = at(1, 1, 2048);
    assert!(
        rel(
            two.memory.inner.activations_bytes,
            half.memory.inner.activations_bytes
        ) < 1e-12
    );
    // ZeRO-1 shards the optimizer over the two ranks that hold the same weights
    assert!(
        rel(
            2.0 * two.memory.inner.optimizer_bytes,
            one.memory.inner.optimizer_bytes
        ) < 1e-12
    );
    // the ring: 3 (forward, and in backward keys and values again and their gradients)
    // x 32 layers x 2,048 tokens of the other rank x 2 x 32 KV heads x 128 x 2 bytes
    // = 3,221,225,472 bytes, over NVLink at 450e9 B/s x 0.8 (link fraction) = 8.948 ms
    let bytes = 3.0 * 32.0 * 2048.0 * (2.0 * 32.0 * 128.0) * 2.0;
    assert_eq!(bytes, 3_221_225_472.0);
    let link = two.efficiency.link;
    assert!(rel(two.step.cp_comm_time_s, bytes / (450e9 * link)) < 1e-12);
    assert_eq!(one.step.cp_comm_time_s, 0.0);
    // and the step carries its caveat
    assert!(two.notes.contains(&TrainNote::ContextParallelOptimistic));
    assert!(!one.notes.contains(&TrainNote::ContextParallelOptimistic));
    // hidden behind the attention it feeds: what is exposed is the gradient
    // synchronisation's share alone
    assert!(two.step.exposed_comm_time_s <= two.step.dp_comm_time_s);
    assert!(two.step.exposed_comm_time_s > 0.0);
}

#[test]
fn context_parallel_layouts_that_cannot_run_are_conflicts() {
    let m = model("llama-2-7b");
    let hw = gpu("h100-sxm");
    let fields = |cfg: TrainConfig| match train(&m, &hw, &cfg).unwrap_err() {
        Error::Conflict { fields, .. } => fields,
        e => panic!("{e}"),
    };
    let base = TrainConfig {
        gpus: 8,
        cp: 2,
        seq: 4096,
        ..TrainConfig::default()
    };
    // 2 x cp = 4 chunks do not split 4,098 tokens
    assert_eq!(
        fields(TrainConfig {
            seq: 4098,
            ..base.clone()
        }),
        ["seq", "cp"]
    );
    // the ring needs fused attention
    assert_eq!(
        fields(TrainConfig {
            flash: false,
            ..base.clone()
        }),
        ["cp", "flash"]
    );
    // tp 2 x cp 8 x pp 1 = 16 does not divide 8 GPUs
    assert_eq!(
        fields(TrainConfig {
            tp: 2,
            cp: 8,
            ..base.clone()
        }),
        ["tp", "cp", "pp", "gpus"]
    );
    // seq / cp = 2,050 tokens per rank do not split over tp 4 under sequence parallelism
    assert_eq!(
        fields(TrainConfig {
            gpus: 8,
            tp: 4,
            seq: 4100,
            cp: 2,
            ..base.clone()
        }),
        ["seq", "cp", "tp"]
    );
    let out = cli(&[
        "train",
        "--model",
        "llama-2-7b",
        "--gpu",
        "h100-sxm",
        "--gpus",
        "8",
        "--cp",
        "0",
    ]);
    crate::support::cli::one_line_error(&out, &["--cp"]);
}

#[test]
fn without_expert_parallel_rows_the_fit_reports_none() {
    // the bundled CSV without the ten expert-parallel MoE rows: no median of nothing, in
    // the fit or its text
    use ridgeline::train::calibrate::fit_rows;
    let moe = [
        "m316", "m317", "m318", "m319", "m321", "m322", "m323", "m324", "m327", "m328",
    ];
    let rows: Vec<_> = measurements()
        .into_iter()
        .filter(|r| !moe.contains(&r.id.as_str()))
        .collect();
    let fit = fit_rows(&rows).unwrap();
    assert!(fit.expert_rows.is_empty());
    assert_eq!(fit.expert_median_abs_error, None);
    let text = ridgeline::report::train::calibration(&fit);
    assert!(!text.contains("Expert-parallel"), "{text}");
    assert!(!text.contains("NaN"), "{text}");
    // with them, the block lists each; the context-parallel rows have their own
    let all = fit_rows(&measurements()).unwrap();
    assert_eq!(all.expert_rows.len(), moe.len());
    assert!(all.expert_median_abs_error.is_some());
    assert_eq!(all.context_rows.len(), 16);
    let text = ridgeline::report::train::calibration(&all);
    assert!(text.contains("Context-parallel rows"), "{text}");
    assert!(
        fit.context_rows
            .iter()
            .all(|r| r.held_out_error.is_none() && r.id != "m290")
    );
}

#[test]
fn an_nvl72_rack_is_one_scale_up_domain() {
    // ZeRO-1 data parallel at 8 and 16 GPUs: on B200 (HGX boards of 8) the 16-GPU
    // gradient all-reduce crosses the network, 8 NICs x 50e9 = 400e9 B/s against
    // NVLink's 900e9; on GB200 the 72-GPU NVLink domain holds both, so a byte costs the
    // same at 16 as at 8. At 144 GPUs GB200 crosses racks: 72 NICs in parallel rings,
    // min(900e9, 72 x 50e9) = 900e9, still the NVLink rate.
    let m = model("llama-2-7b");
    let at = |hw: &Hardware, gpus: u64| {
        let cfg = TrainConfig {
            gpus,
            zero: 1,
            seq: 2048,
            global_batch: Some(gpus),
            ..TrainConfig::default()
        };
        let rep = train(&m, hw, &cfg).unwrap();
        // ring bytes per gradient byte: 2 (n - 1) / n
        let n = gpus as f64;
        (
            rep.step.dp_comm_time_s / (2.0 * (n - 1.0) / n),
            rep.hardware.devices_per_node,
        )
    };
    let (b200, gb200) = (gpu("b200"), gpu("gb200"));
    let (b8, b_node) = at(&b200, 8);
    let (b16, _) = at(&b200, 16);
    assert_eq!(b_node, 8);
    assert!((b16 / b8 - 900.0 / 400.0).abs() < 1e-9, "{}", b16 / b8);
    let (g8, g_node) = at(&gb200, 8);
    let (g16, _) = at(&gb200, 16);
    let (g144, _) = at(&gb200, 144);
    assert_eq!(g_node, 72);
    assert!((g16 / g8 - 1.0).abs() < 1e-9, "{}", g16 / g8);
    assert!((g144 / g8 - 1.0).abs() < 1e-9, "{}", g144 / g8);
}

#[test]
fn expert_parallel_training_carries_its_caveat() {
    // Qwen3-30B-A3B over 8 GPUs: with ep 8 the note is there, in the text and the JSON;
    // with the experts replicated (ep 1) it is not
    let m = model("qwen3-30b-a3b");
    let hw = gpu("b200");
    let notes = |ep: u64| {
        let cfg = TrainConfig {
            gpus: 8,
            ep,
            zero: 1,
            seq: 4096,
            global_batch: Some(64),
            ..TrainConfig::default()
        };
        train(&m, &hw, &cfg).unwrap().notes
    };
    assert!(notes(8).contains(&TrainNote::ExpertParallelOptimistic));
    assert!(!notes(1).contains(&TrainNote::ExpertParallelOptimistic));
    let out = cli(&[
        "train",
        "--model",
        "qwen3-30b-a3b",
        "--gpu",
        "b200",
        "--gpus",
        "8",
        "--ep",
        "8",
        "--zero",
        "1",
        "--seq",
        "4096",
        "--global-batch",
        "64",
        "--json",
    ]);
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        v["notes"].as_array().unwrap().iter().any(|n| n
            .as_str()
            .unwrap()
            .starts_with("expert-parallel MoE training")),
        "{}",
        v["notes"]
    );
}

// ---------------------------------------------------------------------------------------
// Property: a higher ZeRO stage never needs more memory per device.

mod props {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn zero_stage_never_increases_memory(
            mi in 0usize..4,
            dp_log in 0u32..5,
            tp_log in 0u32..3,
            pp_log in 0u32..3,
            mb in 1u64..5,
            seq_log in 8u32..14,
            method in 0usize..3,
            rc in 0usize..3,
            opt in 0usize..3,
            offload in proptest::bool::ANY,
        ) {
            let ids = ["llama-2-7b", "llama-3-8b", "mixtral-8x7b", "gpt3-2.7b"];
            let m = model(ids[mi]);
            let (dp, tp, pp) = (1u64 << dp_log, 1u64 << tp_log, 1u64 << pp_log);
            let cfg = TrainConfig {
                gpus: dp * tp * pp,
                tp,
                pp,
                micro_batch: mb,
                global_batch: Some(mb * dp * 2),
                seq: 1 << seq_log,
                method: [Method::Full, Method::Lora, Method::Qlora][method],
                recompute: [Recompute::None, Recompute::Selective, Recompute::Full][rc],
                optimizer: [Optimizer::Adamw, Optimizer::Sgd, Optimizer::Adafactor][opt],
                offload: if offload { Offload::Cpu } else { Offload::None },
                ..TrainConfig::default()
            };
            let s = zero_stages(&m, &gpu("h100-sxm"), &cfg).unwrap();
            for k in 0..3 {
                prop_assert!(s[k + 1].total_bytes <= s[k].total_bytes + 1e-6,
                    "stage {} {} > stage {} {}", k + 1, s[k + 1].total_bytes, k, s[k].total_bytes);
                prop_assert!(s[k + 1].model_states_bytes() <= s[k].model_states_bytes() + 1e-6);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Bad input: errors name the conflict, never panic.

fn err(cfg: TrainConfig) -> Error {
    Trainer::new(&model("llama-2-7b"), &gpu("a100-80gb-sxm"), &cfg).unwrap_err()
}

#[test]
fn impossible_layouts_are_conflicts() {
    // tp x pp x dp != gpus
    let e = err(TrainConfig {
        gpus: 8,
        tp: 3,
        ..TrainConfig::default()
    });
    assert!(matches!(e, Error::Conflict { .. }), "{e}");
    assert!(
        e.to_string().contains("tp 3") && e.to_string().contains("gpus 8"),
        "{e}"
    );
    // tp not dividing the heads (Llama-2-7B has 32)
    let e = err(TrainConfig {
        gpus: 6,
        tp: 6,
        ..TrainConfig::default()
    });
    assert!(e.to_string().contains("num_attention_heads"), "{e}");
    // more stages than layers
    let e = err(TrainConfig {
        gpus: 64,
        pp: 64,
        ..TrainConfig::default()
    });
    assert!(e.to_string().contains("pp 64"), "{e}");
    // micro-batch larger than global batch / dp
    let e = err(TrainConfig {
        gpus: 8,
        micro_batch: 4,
        global_batch: Some(16),
        ..TrainConfig::default()
    });
    assert!(matches!(e, Error::Conflict { .. }), "{e}");
    assert!(
        e.to_string().contains("micro_batch 4") && e.to_string().contains("global_batch 16"),
        "{e}"
    );
    // global batch not a multiple of micro-batch x dp
    let e = err(TrainConfig {
        gpus: 8,
        micro_batch: 2,
        global_batch: Some(24),
        ..TrainConfig::default()
    });
    assert!(e.to_string().contains("not a multiple"), "{e}");
}

#[test]
fn bad_values_are_named() {
    let e = err(TrainConfig {
        zero: 4,
        ..TrainConfig::default()
    });
    assert!(
        matches!(&e, Error::InvalidValue { field, .. } if field == "zero"),
        "{e}"
    );
    for (cfg, field) in [
        (
            TrainConfig {
                gpus: 0,
                ..TrainConfig::default()
            },
            "gpus",
        ),
        (
            TrainConfig {
                tp: 0,
                ..TrainConfig::default()
            },
            "tp",
        ),
        (
            TrainConfig {
                pp: 0,
                ..TrainConfig::default()
            },
            "pp",
        ),
        (
            TrainConfig {
                seq: 0,
                ..TrainConfig::default()
            },
            "seq",
        ),
        (
            TrainConfig {
                micro_batch: 0,
                ..TrainConfig::default()
            },
            "micro_batch",
        ),
        (
            TrainConfig {
                global_batch: Some(0),
                ..TrainConfig::default()
            },
            "global_batch",
        ),
        (
            TrainConfig {
                method: Method::Lora,
                lora_rank: Some(0),
                ..TrainConfig::default()
            },
            "lora_rank",
        ),
        (
            TrainConfig {
                inter_node_bytes_per_s: f64::NAN,
                ..TrainConfig::default()
            },
            "inter_node_bytes_per_s",
        ),
        (
            TrainConfig {
                inter_node_bytes_per_s: 0.0,
                ..TrainConfig::default()
            },
            "inter_node_bytes_per_s",
        ),
    ] {
        let e = err(cfg);
        assert!(
            matches!(&e, Error::InvalidValue { field: f, .. } if f == field),
            "{field}: {e}"
        );
    }
    let mut eff = TrainEfficiency::for_hardware(&gpu("a100-80gb-sxm")).unwrap();
    eff.compute = f64::NAN;
    let e = err(TrainConfig {
        efficiency: Some(eff),
        ..TrainConfig::default()
    });
    assert!(e.to_string().contains("efficiency.compute"), "{e}");
    // the attention core never runs closer to the peak than the matmuls (HFU <= compute)
    let mut eff = TrainEfficiency::for_hardware(&gpu("a100-80gb-sxm")).unwrap();
    eff.attention = eff.compute + 0.01;
    let e = err(TrainConfig {
        efficiency: Some(eff),
        ..TrainConfig::default()
    });
    assert!(
        matches!(&e, Error::InvalidValue { field, .. } if field == "efficiency.attention"),
        "{e}"
    );
    // unknown names suggest the valid ones
    let e = Method::parse("qlor").unwrap_err();
    assert!(e.to_string().contains("qlora"), "{e}");
    assert!(Recompute::parse("partial").is_err());
    assert!(TrainPrecision::parse("int4").is_err());
    assert!(Optimizer::parse("lion").is_err());
    assert!(Offload::parse("nvme").is_err());
}

// ---------------------------------------------------------------------------------------
// CLI.

fn cli(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_ridgeline"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn cli_train_json_has_the_contract_keys() {
    let out = cli(&[
        "train",
        "--model",
        "llama-2-7b",
        "--gpu",
        "a100",
        "--gpus",
        "8",
        "--zero",
        "3",
        "--micro-batch",
        "2",
        "--global-batch",
        "32",
        "--seq",
        "2048",
        "--recompute",
        "selective",
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for k in [
        "params_bytes",
        "grads_bytes",
        "optimizer_bytes",
        "activations_bytes",
        "overhead_bytes",
        "total_bytes",
        "capacity_bytes",
    ] {
        assert!(v["memory"][k].is_number(), "memory.{k}");
    }
    assert!(v["memory"]["fits"].is_boolean());
    for k in [
        "flops",
        "time_s",
        "tokens_per_s",
        "tokens_per_s_per_gpu",
        "mfu",
    ] {
        assert!(v["step"][k].is_number(), "step.{k}");
    }
    let bound = v["step"]["bound"].as_str().unwrap();
    assert!(["compute", "memory", "communication", "overhead"].contains(&bound));
    assert!(v["memory"]["total_bytes"].as_f64().unwrap() > 0.0);
}

#[test]
fn cli_train_text_and_bad_input_exit_2() {
    let out = cli(&[
        "train",
        "--model",
        "llama-2-7b",
        "--gpu",
        "h100",
        "--method",
        "qlora",
    ]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("Memory per device") && text.contains("MFU"),
        "{text}"
    );
    for (args, needle) in [
        (vec!["--zero", "4"], "--zero"),
        (vec!["--zero", "300"], "'300' for '--zero"),
        (
            vec!["--gpus", "8", "--tp", "3"],
            "conflicting --tp, --pp, --gpus: tp 3",
        ),
        (vec!["--gpus", "3", "--tp", "3"], "num_attention_heads"),
        (
            vec!["--gpus", "8", "--micro-batch", "4", "--global-batch", "16"],
            "--micro-batch",
        ),
        (vec!["--seq", "0"], "--seq"),
        (vec!["--method", "lorax"], "lora"),
        (vec!["--inter-node-bw", "NaN"], "--inter-node-bw"),
    ] {
        let mut a = vec!["train", "--model", "llama-2-7b", "--gpu", "a100"];
        a.extend(args.iter());
        let out = cli(&a);
        assert_eq!(out.status.code(), Some(2), "{a:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{a:?}: {err}");
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn cli_calibrate_train_fits_and_saves() {
    let csv = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/data/measurements/measurements.csv"
    );
    let dir = std::env::temp_dir().join(format!("ridgeline-train-cal-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let saved = dir.join("training.toml");
    let out = cli(&[
        "calibrate",
        "--train",
        "--measurements",
        csv,
        "--json",
        "--save",
        saved.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let arch = |name: &str| {
        v["architectures"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["architecture"] == name)
            .unwrap()
            .clone()
    };
    // the factors are the bundled table's (which is the fit's, see
    // calibration_reproduces_data_training_toml); the values a refit moves are in the data
    // file and tests/headline.tsv, not here
    assert_eq!(
        arch("ampere")["efficiency"]["compute"],
        fitted("ampere").compute
    );
    assert_eq!(
        arch("hopper")["efficiency"]["compute"],
        fitted("hopper").compute
    );
    assert_eq!(
        arch("hopper+megatron")["efficiency"]["compute_fp8"],
        fitted("hopper+megatron").compute_fp8
    );
    assert_eq!(v["rows"].as_array().unwrap().len(), 72);
    assert!(v["rows"][0]["error"].is_number());
    let saved_table =
        EfficiencyTable::from_toml(&std::fs::read_to_string(&saved).unwrap(), "saved").unwrap();
    let bundled = EfficiencyTable::builtin().unwrap();
    assert_eq!(saved_table.get("ampere"), bundled.get("ampere"));
    assert_eq!(saved_table.get("hopper"), bundled.get("hopper"));
    assert_eq!(
        saved_table.get("hopper+megatron"),
        bundled.get("hopper+megatron")
    );
    std::fs::remove_dir_all(&dir).unwrap();
    // text: the factors, the median and one line per row
    let out = cli(&["calibrate", "--train", "--measurements", csv]);
    let text = String::from_utf8(out.stdout).unwrap();
    let ampere = format!("ampere   compute {:.2}", fitted("ampere").compute);
    assert!(text.contains(&ampere), "{text}");
    let pct = |key: &str| format!("{:.1} %", 100.0 * v[key].as_f64().unwrap());
    let median = format!(
        "median |error| over all 72 rows: {} in sample, {} leave one source out",
        pct("median_abs_error"),
        pct("leave_one_source_out_median_abs_error")
    );
    assert!(text.contains(&median), "{text}");
    assert!(
        text.contains("m114") && text.contains("skipped m094"),
        "{text}"
    );
    // --train fits no engine
    let out = cli(&[
        "calibrate",
        "--train",
        "--engine",
        "vllm",
        "--measurements",
        csv,
    ]);
    assert_eq!(out.status.code(), Some(2));
}

/// Runs from the same sources that are not rows of measurements.csv, as a check that the
/// calibration generalises: torchtitan `docs/performance.md` (commit eaea6f6, Tables 1,
/// 3 and 5) and the Llama 3 paper's 8K-GPU configuration (Table 4: TP8 PP16 DP64, 430
/// TFLOP/s per GPU). Eager (uncompiled) torchtitan rows are printed but not asserted:
/// the model has no term for unfused elementwise kernels and overshoots them by ~45 %.
/// Tolerance ±35 %: torchtitan's "selective op" checkpointing also recomputes every
/// other matmul, which `Recompute::Selective` (Korthikanti's definition) does not.
#[test]
fn further_published_runs_outside_the_csv() {
    let tt = h100_96gb_500w();
    let h100 = gpu("h100-sxm");
    let tt405 = |v: u64| TrainConfig {
        tp: 8,
        pp: 8,
        virtual_stages: v,
        zero: 3,
        recompute: Recompute::Full,
        precision: TrainPrecision::Fp8,
        ..base(512, 8192, 256, 1)
    };
    let tt8b = |gpus: u64| TrainConfig {
        zero: 3,
        recompute: Recompute::Selective,
        ..base(gpus, 8192, 2 * gpus, 2)
    };
    // (label, model, device, config, measured, tokens/s/GPU (true) or model FLOP/s, asserted)
    let cases = [
        (
            "torchtitan 405B 3D 1F1B",
            "llama-3.1-405b",
            &tt,
            tt405(1),
            100.0,
            true,
            true,
        ),
        (
            "torchtitan 405B 3D interleaved (v=2 assumed)",
            "llama-3.1-405b",
            &tt,
            tt405(2),
            128.0,
            true,
            true,
        ),
        (
            "torchtitan 8B 128 GPUs compile",
            "llama-3.1-8b",
            &tt,
            tt8b(128),
            6514.0,
            true,
            true,
        ),
        (
            "torchtitan 8B 128 GPUs compile+float8",
            "llama-3.1-8b",
            &tt,
            TrainConfig {
                precision: TrainPrecision::Fp8,
                ..tt8b(128)
            },
            8380.0,
            true,
            // reported, not asserted: +59% since the Hopper fit follows NeMo's fp8 rows
            // (see published_training_throughput)
            false,
        ),
        (
            "torchtitan 8B 8 GPUs eager",
            "llama-3.1-8b",
            &tt,
            tt8b(8),
            5762.0,
            true,
            false,
        ),
        (
            "torchtitan 8B 128 GPUs eager",
            "llama-3.1-8b",
            &tt,
            tt8b(128),
            5605.0,
            true,
            false,
        ),
        (
            "Llama 3 405B 8K GPUs (v=4 assumed)",
            "llama-3.1-405b",
            &h100,
            TrainConfig {
                tp: 8,
                pp: 16,
                virtual_stages: 4,
                zero: 1,
                ..base(8192, 8192, 2048, 1)
            },
            430e12,
            false,
            true,
        ),
    ];
    let mut errs = Vec::new();
    for (label, id, hw, cfg, measured, tps, asserted) in cases {
        let r = train(&model(id), hw, &cfg).unwrap();
        // published TFLOP/s count attention over the full square
        let square = Trainer::new(&model(id), hw, &cfg)
            .unwrap()
            .model_flops_full_square()
            / r.step.flops;
        let p = if tps {
            r.step.tokens_per_s_per_gpu
        } else {
            r.step.model_flops_per_s_per_gpu * square
        };
        let err = p / measured - 1.0;
        println!(
            "{label:<48} measured {measured:>10.4e} predicted {p:>10.4e} err {:+6.1}%",
            100.0 * err
        );
        if asserted {
            assert!(err.abs() < 0.35, "{label}: {:+.1}%", 100.0 * err);
            errs.push(err.abs());
        }
    }
    let med = median(errs);
    println!("median |error| (asserted rows): {:.1}%", 100.0 * med);
    assert!(med < 0.15);
}

// ---------------------------------------------------------------------------------------
// Utilizations: 0 < MFU <= HFU <= the compute efficiency the step assumes <= 1, and no
// impossible number anywhere in the report.

/// Every number of a `train --json` document: finite (serde_json writes NaN and inf as
/// null), not negative, and the utilizations and fractions at most 1.
fn assert_sane_json(v: &serde_json::Value, path: &str) {
    match v {
        serde_json::Value::Null => panic!("{path} is null (NaN or inf)"),
        serde_json::Value::Number(n) => {
            let x = n.as_f64().unwrap();
            assert!(x.is_finite() && x >= 0.0, "{path} = {x}");
            let leaf = path.rsplit('.').next().unwrap();
            if ["mfu", "hfu", "bubble_fraction", "fragmentation"].contains(&leaf)
                || path.starts_with("efficiency.")
            {
                assert!(x <= 1.0, "{path} = {x}");
            }
        }
        serde_json::Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                assert_sane_json(x, &format!("{path}[{i}]"));
            }
        }
        serde_json::Value::Object(o) => {
            for (k, x) in o {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                assert_sane_json(x, &p);
            }
        }
        _ => {}
    }
}

/// The fastest rate, over the utilizations' peak, at which the step places any FLOP:
/// `compute` with 16-bit matmuls; with fp8 matmuls the fp8 fraction, or the 16-bit
/// attention core and adapters at `compute` of the 16-bit peak if that is faster.
fn utilization_ceiling(r: &ridgeline::train::TrainReport, hw: &Hardware) -> f64 {
    use ridgeline::dtype::ComputeDtype;
    let e = &r.efficiency;
    let p16 = hw.peak(r.config.precision.activations()).0;
    // full training, or LoRA on 16-bit frozen weights (cast to fp8 per matmul); QLoRA's
    // NF4 weights are dequantized to 16 bits
    let fp8_matmuls = r.config.precision == TrainPrecision::Fp8
        && r.config.method != Method::Qlora
        && r.config.frozen_format.is_none_or(|f| f.bits() >= 16.0)
        && hw.peak_flops_per_s.rates.fp8.is_some();
    if fp8_matmuls {
        assert_eq!(r.step.peak_flops_per_s, hw.peak(ComputeDtype::Fp8).0);
        e.compute_fp8.max(e.compute * p16 / r.step.peak_flops_per_s)
    } else {
        assert_eq!(r.step.peak_flops_per_s, p16);
        e.compute
    }
}

fn assert_utilizations(r: &ridgeline::train::TrainReport, hw: &Hardware) {
    let s = &r.step;
    let ceiling = utilization_ceiling(r, hw);
    assert!(s.mfu > 0.0, "mfu {}", s.mfu);
    assert!(
        s.mfu <= s.hfu * (1.0 + 1e-12),
        "mfu {} > hfu {}",
        s.mfu,
        s.hfu
    );
    assert!(
        s.hfu <= ceiling * (1.0 + 1e-9),
        "hfu {} > ceiling {ceiling}",
        s.hfu
    );
    assert!(ceiling <= 1.0);
    assert!(s.hardware_flops <= s.executed_flops * (1.0 + 1e-9));
    assert_sane_json(&serde_json::to_value(r).unwrap(), "");
}

#[test]
fn mfu_and_hfu_stay_below_the_efficiency_at_any_length() {
    // attention-dominated: 10^6 tokens per sequence on one A100
    let (m, hw) = (model("llama-2-7b"), gpu("a100-80gb-sxm"));
    let r = train(
        &m,
        &hw,
        &TrainConfig {
            seq: 1_000_000,
            ..TrainConfig::default()
        },
    )
    .unwrap();
    assert_utilizations(&r, &hw);
    assert!(r.step.mfu <= 0.64, "{}", r.step.mfu);
    // full recomputation at 128K on 8 GPUs: HFU at most the 0.64 it assumes
    let (m, hw) = (model("llama-3.1-8b"), gpu("a100-80gb-sxm"));
    let r = train(
        &m,
        &hw,
        &TrainConfig {
            gpus: 8,
            seq: 131_072,
            recompute: Recompute::Full,
            ..TrainConfig::default()
        },
    )
    .unwrap();
    assert_utilizations(&r, &hw);
    assert!(r.step.hfu <= r.efficiency.compute, "{}", r.step.hfu);
    // the largest sizes the model accepts, naive attention included
    for flash in [true, false] {
        let r = train(
            &m,
            &hw,
            &TrainConfig {
                seq: 100_000_000,
                micro_batch: 100_000_000,
                flash,
                ..TrainConfig::default()
            },
        )
        .unwrap();
        assert_utilizations(&r, &hw);
    }
}

mod utilization_properties {
    use super::*;
    use proptest::prelude::*;

    /// Tensor-parallel degrees up to 16 the model accepts.
    fn tp_degrees(m: &ModelConfig) -> Vec<u64> {
        (1..=16u64)
            .filter(|t| {
                m.heads.is_multiple_of(*t)
                    && (m.kv_heads.is_multiple_of(*t) || t.is_multiple_of(m.kv_heads))
            })
            .collect()
    }

    #[derive(Debug, Clone)]
    struct Pick {
        model: usize,
        gpu: usize,
        tp: usize,
        pp: u64,
        dp: u64,
        v: u64,
        seq: u64,
        mb: u64,
        acc: u64,
        zero: u64,
        kinds: (usize, usize, usize, usize),
        flags: (bool, bool, bool, bool),
        rank: u64,
        eff: (f64, f64, f64, f64, f64, f64, f64),
    }

    fn pick() -> impl Strategy<Value = Pick> {
        (
            (
                0usize..1000,
                0usize..1000,
                0usize..1000,
                1u64..=8,
                0u32..=12,
                1u64..=4,
            ),
            (
                0u32..=26,
                1u64..=7,
                0u32..=26,
                0u32..=16,
                0u64..=3,
                1u64..=64,
            ),
            (0usize..3, 0usize..3, 0usize..3, 0usize..3),
            (any::<bool>(), any::<bool>(), any::<bool>(), any::<bool>()),
            (0.05f64..=1.0, 0.1f64..=1.0, 0.05f64..=1.0, 0.05f64..=1.0),
            (0.05f64..=1.0, 0.0f64..=1.0, 0.0f64..=1.0),
        )
            .prop_map(|(a, b, kinds, flags, e1, e2)| Pick {
                model: a.0,
                gpu: a.1,
                tp: a.2,
                pp: a.3,
                dp: 1 << a.4,
                v: a.5,
                seq: (b.1 << b.0).min(100_000_000),
                mb: (1u64 << b.2).min(100_000_000),
                acc: 1 << b.3,
                zero: b.4,
                rank: b.5,
                kinds,
                flags,
                eff: (e1.0, e1.1, e1.2, e1.3, e2.0, e2.1, e2.2),
            })
    }

    /// A configuration the model and device accept, from the random picks.
    fn setup(p: &Pick) -> (ModelConfig, Hardware, TrainConfig) {
        // the models the training model takes (one layer kind, full-MLP experts)
        let models: Vec<&ModelConfig> = ModelDb::builtin()
            .unwrap()
            .models()
            .iter()
            .filter(|m| m.is_uniform())
            .collect();
        let devices = HardwareDb::builtin().unwrap().devices();
        let m = models[p.model % models.len()].clone();
        let hw = devices[p.gpu % devices.len()].clone();
        let linked = hw.device_link().is_some();
        let tps = tp_degrees(&m);
        let tp = if linked { tps[p.tp % tps.len()] } else { 1 };
        let pp = if linked { p.pp.min(m.layers) } else { 1 };
        let dp = if linked { p.dp } else { 1 };
        let v = if pp > 1 { p.v.min(m.layers / pp) } else { 1 };
        let (sp, flash, dropout, offload) = p.flags;
        let seq = (p.seq.div_ceil(tp) * tp).min(100_000_000 / tp * tp);
        let e = p.eff;
        let cfg = TrainConfig {
            gpus: tp * pp * dp,
            tp,
            pp,
            zero: p.zero,
            micro_batch: p.mb,
            global_batch: Some(p.mb * dp * p.acc),
            seq,
            method: [Method::Full, Method::Lora, Method::Qlora][p.kinds.0],
            recompute: [Recompute::None, Recompute::Selective, Recompute::Full][p.kinds.1],
            precision: [
                TrainPrecision::Bf16,
                TrainPrecision::Fp16,
                TrainPrecision::Fp8,
            ][p.kinds.2],
            optimizer: [Optimizer::Adamw, Optimizer::Sgd, Optimizer::Adafactor][p.kinds.3],
            offload: if offload && hw.host_link.is_some() {
                Offload::Cpu
            } else {
                Offload::None
            },
            sequence_parallel: sp,
            flash,
            dropout,
            virtual_stages: v,
            lora_rank: Some(p.rank),
            efficiency: Some(TrainEfficiency {
                label: "random".into(),
                compute: e.0,
                attention: e.0 * e.1,
                compute_fp8: e.2,
                memory: e.3,
                link: e.4,
                overlap_dp: e.5,
                overlap_tp: e.6,
                attention_measured: None,
            }),
            ..TrainConfig::default()
        };
        (m, hw, cfg)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        #[test]
        fn mfu_le_hfu_le_compute_efficiency_le_1(p in pick()) {
            let (m, hw, cfg) = setup(&p);
            let t = Trainer::new(&m, &hw, &cfg)
                .unwrap_or_else(|e| panic!("{} on {}: {e}\n{cfg:?}", m.id, hw.id));
            assert_utilizations(&t.report(), &hw);
        }
    }
}

// ---------------------------------------------------------------------------------------
// LoRA rank: bounded by the adapted matrices; ignored (with a note) by full training.

#[test]
fn lora_rank_is_bounded_by_the_smallest_adapted_dimension() {
    // Llama-3-8B: v_proj is 4096 x 1024 (8 KV heads of 128), so ranks above 1024 are
    // rank-deficient
    let (m, hw) = (model("llama-3-8b"), gpu("h100-sxm"));
    let at = |method, rank| {
        Trainer::new(
            &m,
            &hw,
            &TrainConfig {
                method,
                lora_rank: Some(rank),
                ..TrainConfig::default()
            },
        )
    };
    let ok = at(Method::Lora, 1024).unwrap().report();
    assert!(ok.model.trainable_params < m.params().total as f64);
    for (method, rank) in [(Method::Lora, 1025), (Method::Qlora, 99_999_999)] {
        let e = at(method, rank).unwrap_err();
        assert!(
            matches!(&e, Error::InvalidValue { field, .. } if field == "lora_rank"),
            "{e}"
        );
        assert!(e.to_string().contains("1024"), "{e}");
    }
    // the CLI names the flag and the limit, exit 2
    let out = cli(&[
        "train",
        "--model",
        "llama-2-7b",
        "--gpu",
        "a100",
        "--method",
        "lora",
        "--lora-rank",
        "99999999",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--lora-rank") && err.contains("4096"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

#[test]
fn lora_rank_with_full_training_is_a_note() {
    let run = |extra: &[&str]| -> serde_json::Value {
        let mut a = vec!["train", "--model", "llama-2-7b", "--gpu", "a100", "--json"];
        a.extend(extra);
        let out = cli(&a);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let notes = |v: &serde_json::Value| -> Vec<String> {
        v["notes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n.as_str().unwrap().to_string())
            .collect()
    };
    let given = run(&["--method", "full", "--lora-rank", "64"]);
    assert!(
        notes(&given).iter().any(|n| n.contains("rank 64")),
        "{:?}",
        notes(&given)
    );
    assert_eq!(given["config"]["lora_rank"], 0);
    // the default rank says nothing; LoRA uses it
    assert!(notes(&run(&[])).iter().all(|n| !n.contains("rank")));
    let lora = run(&["--method", "lora"]);
    assert_eq!(lora["config"]["lora_rank"], 8);
    assert!(notes(&lora).iter().all(|n| !n.contains("rank")));
}

// ---------------------------------------------------------------------------------------
// Interleaving: every model chunk (pp x virtual_stages of them) holds whole layers.

#[test]
fn virtual_stages_must_leave_a_layer_per_chunk() {
    // Llama-2-7B: 32 layers over pp 4, so at most 8 chunks per device
    let (m, hw) = (model("llama-2-7b"), gpu("a100-80gb-sxm"));
    let at = |v| {
        Trainer::new(
            &m,
            &hw,
            &TrainConfig {
                gpus: 4,
                pp: 4,
                virtual_stages: v,
                ..TrainConfig::default()
            },
        )
        .map(|t| t.step())
    };
    assert!(at(8).is_ok());
    for v in [9, 100] {
        let e = at(v).unwrap_err();
        assert!(
            matches!(&e, Error::Conflict { fields, .. } if fields[0] == "virtual_stages"),
            "{e}"
        );
        assert!(e.to_string().contains("1 to 8"), "{e}");
    }
    // uneven chunks: 30 layers over pp 4 (8 on the fullest stage) in 3 chunks of at
    // most 3 layers: the bubble is 3 · 3/8 of a micro-batch, not 3/3
    let cfg = TrainConfig {
        gpus: 4,
        pp: 4,
        virtual_stages: 3,
        global_batch: Some(16),
        ..TrainConfig::default()
    };
    let mut m = model("llama-2-7b");
    m.layers = 30;
    let r = train(&m, &gpu("a100-80gb-sxm"), &cfg).unwrap();
    let t = r.step.micro_batch_time_s;
    assert!(
        (r.step.bubble_time_s / (3.0 * 3.0 / 8.0 * t) - 1.0).abs() < 1e-12,
        "{} vs {}",
        r.step.bubble_time_s,
        t
    );
    // the CLI: exit 2 naming the flag
    let out = cli(&[
        "train",
        "--model",
        "llama-2-7b",
        "--gpu",
        "a100",
        "--gpus",
        "4",
        "--pp",
        "4",
        "--virtual-stages",
        "100",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--virtual-stages") && err.contains("1 to 8"),
        "{err}"
    );
}

// ---------------------------------------------------------------------------------------
// Hostile but valid inputs end as an error naming the field or as finite numbers.

#[test]
fn hostile_sizes_give_an_error_or_sane_numbers() {
    let (m, hw) = (model("llama-2-7b"), gpu("a100-80gb-sxm"));
    // a network too slow to time: the step would take longer than f64 holds
    let e = err(TrainConfig {
        gpus: 64,
        inter_node_bytes_per_s: 1e-300,
        ..TrainConfig::default()
    });
    assert!(
        matches!(&e, Error::InvalidValue { field, .. } if field == "inter_node_bytes_per_s"),
        "{e}"
    );
    // sequence parallelism splits each sequence over the tp ranks: whole tokens only
    let sp = |seq, sequence_parallel| {
        Trainer::new(
            &m,
            &hw,
            &TrainConfig {
                gpus: 8,
                tp: 8,
                seq,
                sequence_parallel,
                ..TrainConfig::default()
            },
        )
        .map(|t| t.report())
    };
    let e = sp(1, true).unwrap_err();
    assert!(
        matches!(&e, Error::Conflict { fields, .. } if fields == &["seq", "tp"]),
        "{e}"
    );
    assert!(
        e.to_string().contains("seq 1") && e.to_string().contains("tp 8"),
        "{e}"
    );
    assert!(sp(1, false).is_ok());
    assert!(sp(8, true).is_ok());
    // the extremes the value parsers allow
    for cfg in [
        TrainConfig {
            seq: 1,
            ..TrainConfig::default()
        },
        TrainConfig {
            micro_batch: 100_000_000,
            ..TrainConfig::default()
        },
        TrainConfig {
            gpus: 10_000_000,
            zero: 3,
            ..TrainConfig::default()
        },
        TrainConfig {
            gpus: 64,
            inter_node_bytes_per_s: 1e300,
            ..TrainConfig::default()
        },
        TrainConfig {
            global_batch: Some(100_000_000_000),
            ..TrainConfig::default()
        },
        TrainConfig {
            method: Method::Qlora,
            precision: TrainPrecision::Fp8,
            ..TrainConfig::default()
        },
    ] {
        let r = train(&m, &hw, &cfg).unwrap();
        assert_utilizations(&r, &hw);
    }
    for args in [
        vec!["--gpus", "64", "--inter-node-bw", "1e-300"],
        vec!["--gpus", "8", "--tp", "8", "--seq", "1"],
    ] {
        let mut a = vec!["train", "--model", "llama-2-7b", "--gpu", "a100", "--json"];
        a.extend(args.iter());
        let out = cli(&a);
        assert_eq!(out.status.code(), Some(2), "{a:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains(args[args.len() - 2]), "{a:?}: {err}");
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn fp8_lora_on_16_bit_weights_runs_its_matmuls_at_the_fp8_rate_and_qlora_does_not() {
    // NeMo's fp8 LoRA (m307: Llama-2-7B, 8x H100, TP1, 4096 tokens) runs the frozen
    // bf16 projections through TransformerEngine's fp8 GEMMs, like full fp8 training;
    // QLoRA's NF4 weights are dequantized to 16 bits first
    let (m, hw) = (model("llama-2-7b"), gpu("h100-sxm"));
    let cfg = |method| TrainConfig {
        method,
        precision: TrainPrecision::Fp8,
        seq: 4096,
        ..TrainConfig::default()
    };
    let lora = train(&m, &hw, &cfg(Method::Lora)).unwrap();
    let full = train(&m, &hw, &cfg(Method::Full)).unwrap();
    let qlora = train(&m, &hw, &cfg(Method::Qlora)).unwrap();
    let fp8_peak = hw.peak_flops_per_s.rates.fp8.unwrap();
    assert_eq!(lora.step.peak_flops_per_s, fp8_peak);
    assert_eq!(full.step.peak_flops_per_s, fp8_peak);
    assert!(qlora.step.peak_flops_per_s < fp8_peak);
    assert!(!lora.notes.contains(&TrainNote::AdapterMatmuls16Bit));
    assert!(qlora.notes.contains(&TrainNote::AdapterMatmuls16Bit));
    // the frozen weights stay 16-bit in memory: 2 bytes per base parameter plus the
    // bf16 adapters
    let p = m.params().total as f64;
    let adapters = lora.model.trainable_params;
    assert!((lora.memory.inner.params_bytes - 2.0 * (p + adapters)).abs() < 1.0);
    // LoRA executes 4·N per token on the frozen weights (no weight gradient) where full
    // training executes 6·N: at the same rate the step is at most 4/6 of full's plus the
    // adapters' and the optimizer's small share
    assert!(lora.step.time_s < full.step.time_s * 0.75);
    assert_utilizations(&lora, &hw);
}

#[test]
fn training_leave_one_source_out_holds_each_publication_out() {
    // measured (bundled CSV, 72 throughput rows from 17 publications): in sample 6.1%,
    // leave one source out 11.1% (issue 13's target: 12%; 11.9% before MaxText's JAX
    // runs were read as compiled). Limit: measured + ~0.5 point. Fitted with the 16
    // context-parallel rows it was 13.4% over all 88 and 13.0% over these 72: they are
    // listed apart (context_rows), not fitted on. Before the stacks were fitted apart it was 17.0% over 42 rows (24.8% over
    // these 72): torchtitan's, FSDP's and MaxText's Hopper runs reach 0.55-0.6 of the
    // rate NeMo/Megatron-Core's reach on the same H100s, and holding either out left the
    // other to fit hopper.
    use ridgeline::train::calibrate::fit_rows;
    let fit = fit_rows(&measurements()).unwrap();
    assert_eq!(fit.sources, 17);
    let held: Vec<_> = fit.rows.iter().filter_map(|r| r.held_out_error).collect();
    assert_eq!(held.len(), fit.rows.len());
    println!(
        "in sample {:.1}%, leave one source out {:.1}%",
        100.0 * fit.median_abs_error,
        100.0 * fit.leave_one_source_out_median_abs_error
    );
    assert!(fit.leave_one_source_out_median_abs_error < 0.116);
    assert!(fit.median_abs_error <= fit.leave_one_source_out_median_abs_error);
    // Blackwell's four rows all come from Megatron-Bridge's repository: held out, they
    // are predicted by the fallback's architecture for their stack (hopper+megatron)
    // fitted without them
    let blackwell: Vec<_> = fit
        .rows
        .iter()
        .filter(|r| r.architecture == "blackwell")
        .collect();
    assert_eq!(blackwell.len(), 4);
    assert!(blackwell.iter().all(|r| r.source == blackwell[0].source));
    assert!(blackwell.iter().all(|r| r.held_out_error.is_some()));
}

/// A Hopper step's attention core runs at the measured kernels' fraction for its query
/// length (data/kernels/training-attention.toml): the bundled entry gives the step that
/// the same factors with a fixed attention of that fraction give. Llama-3.1-8B on 8 H100
/// under the generic stack (FlashAttention-2): at 8,192 tokens 3.5 / (1 / 325.137 +
/// 2.5 / 277.443) = 289.58 TFLOP/s of 989.5, 0.29265; over two context-parallel ranks a
/// query of 4,096 tokens, 3.5 / (1 / 314.060 + 2.5 / 248.764) = 264.47, 0.26728.
#[test]
fn measured_attention_runs_at_the_kernels_fraction_for_the_query_length() {
    let (m, hw) = (model("llama-3.1-8b"), gpu("h100"));
    let entry = fitted("hopper");
    assert_eq!(
        entry.attention_measured.as_deref(),
        Some("flash-attention-2-hopper")
    );
    for (cp, fraction) in [(1, 289.5800342 / 989.5), (2, 264.4746093 / 989.5)] {
        let cfg = |eff: TrainEfficiency| TrainConfig {
            gpus: 8,
            seq: 8192,
            cp,
            efficiency: Some(eff),
            ..TrainConfig::default()
        };
        let measured = train(&m, &hw, &cfg(entry.clone())).unwrap().step;
        let fixed = TrainEfficiency {
            attention: fraction,
            attention_measured: None,
            ..entry.clone()
        };
        let by_hand = train(&m, &hw, &cfg(fixed)).unwrap().step;
        let rel = measured.time_s / by_hand.time_s - 1.0;
        assert!(rel.abs() < 1e-6, "cp {cp}: {rel}");
        // and the attention is not at the entry's scalar (the kernels' largest fraction)
        let scalar = TrainEfficiency {
            attention_measured: None,
            ..entry.clone()
        };
        let at_scalar = train(&m, &hw, &cfg(scalar)).unwrap().step;
        assert!(at_scalar.time_s < measured.time_s * 0.99, "cp {cp}");
    }
}

/// An entry naming measured kernels must name bundled ones and hold their largest
/// fraction; bad values name the field.
#[test]
fn measured_attention_entries_are_checked() {
    let text = |kernels: &str, attention: f64| {
        format!(
            "[architecture.hopper]\ncompute = 0.4\ncompute_fp8 = 0.4\nattention = {attention}\nmemory = 0.8\nlink = 0.8\noverlap_dp = 0.8\noverlap_tp = 0.0\nattention_measured = \"{kernels}\"\n[fallback]\nuses = \"hopper\"\n"
        )
    };
    // FlashAttention-2's largest, at 65,536 tokens: 328.503 / 989.5 = 0.332
    let ok = EfficiencyTable::from_toml(&text("flash-attention-2-hopper", 0.332), "t").unwrap();
    assert_eq!(
        ok.get("hopper")
            .unwrap()
            .efficiency
            .attention_measured
            .as_deref(),
        Some("flash-attention-2-hopper")
    );
    let e = EfficiencyTable::from_toml(&text("flash-attention-3", 0.332), "t")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("attention_measured") && e.contains("flash-attention-2-hopper"),
        "{e}"
    );
    let e = EfficiencyTable::from_toml(&text("flash-attention-2-hopper", 0.5), "t")
        .unwrap_err()
        .to_string();
    assert!(e.contains("efficiency.attention"), "{e}");
}
