//! ridgeline against NVIDIA AIConfigurator's static-mode estimates
//! (data/reference/aiconfigurator-static.csv, `ridgeline::reference`): the grid is what
//! the issue asks of it, every row is predicted (none dropped), the file is consistent
//! with AIConfigurator's own definitions, the README's table is the one the rows give,
//! and the medians on the kernel tables stay under their tolerances.

use ridgeline::engine::EngineDb;
use ridgeline::hardware::HardwareDb;
use ridgeline::kernels::KernelDb;
use ridgeline::model::ModelDb;
use ridgeline::reference::{
    BUILTIN_AICONFIGURATOR_CSV, Compared, ReferenceRow, compare, markdown, parse_reference,
    summarize,
};
use std::collections::BTreeSet;

const README: &str = include_str!("../../README.md");

fn rows() -> Vec<ReferenceRow> {
    parse_reference(BUILTIN_AICONFIGURATOR_CSV, "aiconfigurator-static.csv").unwrap()
}

fn compared() -> Vec<Compared> {
    compare(
        &rows(),
        ModelDb::builtin().unwrap(),
        HardwareDb::builtin().unwrap(),
        EngineDb::builtin().unwrap(),
        KernelDb::builtin().unwrap(),
    )
    .unwrap()
}

#[test]
fn the_grid_spans_models_devices_backends_and_formats() {
    let rows = rows();
    assert!(rows.len() >= 50, "{} rows", rows.len());
    let distinct = |f: fn(&ReferenceRow) -> String| rows.iter().map(f).collect::<BTreeSet<_>>();
    assert!(distinct(|r| r.model.clone()).len() >= 3);
    assert!(distinct(|r| r.device.clone()).len() >= 2);
    assert_eq!(distinct(|r| r.engine.clone()).len(), 3);
    assert!(distinct(|r| r.tp.to_string()).len() >= 3);
    assert!(distinct(|r| r.batch.to_string()).len() >= 3);
    for f in ["bf16", "fp8"] {
        assert!(rows.iter().filter(|r| r.formats == f).count() >= 25, "{f}");
    }
    let configs = distinct(|r| r.label());
    assert_eq!(configs.len(), rows.len(), "a configuration appears twice");
    assert!(BUILTIN_AICONFIGURATOR_CSV.contains("aiconfigurator-core==0.12.0"));
}

#[test]
fn each_row_follows_the_reference_definition_of_tokens_per_gpu() {
    // tokens/s per GPU = batch x osl / (TTFT + (osl - 1) x TPOT) / tp; e.g. Llama-3.1-70B on
    // 4 x H200 under TensorRT-LLM, batch 16: 16 x 500 / (3.977 s + 499 x 14.57 ms) / 4 =
    // 177.8. The file rounds to 4 significant figures.
    for r in rows() {
        let t = (r.batch * r.osl) as f64 / (r.ttft_s + (r.osl - 1) as f64 * r.tpot_s) / r.tp as f64;
        assert!(
            (t / r.tokens_s_gpu - 1.0).abs() < 2e-3,
            "{}: {t} against {}",
            r.label(),
            r.tokens_s_gpu
        );
    }
}

#[test]
fn every_row_is_predicted_and_the_readme_table_is_current() {
    let c = compared();
    assert_eq!(c.len(), rows().len());
    // every device of the grid has a kernel table under every engine of the grid
    assert!(c.iter().all(|x| x.tables.is_some()));
    let table = markdown(&c);
    assert!(
        README.contains(&table),
        "the README's AIConfigurator table is not current; it should be:\n{table}"
    );
}

#[test]
fn on_the_kernel_tables_the_medians_stay_near_the_reference() {
    let c = compared();
    for (formats, limits) in [("bf16", [10.0, 10.0, 10.0]), ("fp8", [10.0, 10.0, 10.0])] {
        let ratios: Vec<[f64; 3]> = c
            .iter()
            .filter(|x| x.row.formats == formats)
            .map(|x| x.tables.unwrap().ratios(&x.row))
            .collect();
        // issue 33's target, a few points above today's medians (README, section Accuracy)
        for (m, ((_, err), limit)) in summarize(&ratios).iter().zip(limits).enumerate() {
            assert!(
                *err <= limit,
                "{formats} metric {m}: median |ratio - 1| {err:.1}% over {limit}%"
            );
        }
    }
}

#[test]
fn on_the_kernel_tables_tensor_parallel_decode_steps_match_under_every_engine() {
    // a decode step over 2 to 8 devices all-reduces twice per layer; vLLM and SGLang run
    // their custom all-reduce inside the CUDA graph they replay (2.4-7.5 us at a few
    // kilobytes, data/kernels/all-reduce-latency.toml), as AIConfigurator reads it.
    // Each engine's time per token over those rows, on the tables, within issue 33's 10%
    // (with the eager rows mixed in, 12-17 us, SGLang's was 1.13-1.66x)
    let c = compared();
    for engine in ["trt-llm", "vllm", "sglang"] {
        let ratios: Vec<[f64; 3]> = (c.iter())
            .filter(|x| x.row.engine == engine && x.row.tp > 1)
            .map(|x| x.tables.unwrap().ratios(&x.row))
            .collect();
        assert!(ratios.len() >= 30, "{engine}: {} rows", ratios.len());
        let (_, err) = summarize(&ratios)[1];
        assert!(err <= 10.0, "{engine}: time per token {err:.1}% off");
    }
}
