//! `ridgeline kernels`: the coverage of the measured kernel tables, and `--kernels DIR`.

use crate::support::cli::{json, ok, run};

#[test]
fn kernels_lists_every_bundled_table() {
    let v = json(&["kernels", "--json"]);
    let tables = v["tables"].as_array().unwrap();
    // 9 devices (a100-80gb-sxm, h100-sxm, h200-sxm, b200, b300, gb200, gb300, l40s,
    // rtx-pro-6000) under 3 engines (trt-llm, vllm, sglang)
    assert_eq!(tables.len(), 27);
    let h100 = tables
        .iter()
        .find(|t| t["device"] == "h100-sxm" && t["backend"] == "trt-llm")
        .unwrap();
    assert_eq!(h100["version"], "1.3.0rc20");
    assert_eq!(
        h100["op_classes"],
        serde_json::json!([
            "gemm",
            "attention_prefill",
            "attention_decode",
            "all_reduce"
        ])
    );
    // Hopper has no fp4 tensor cores: bf16 and fp8 only; Blackwell adds nvfp4
    assert_eq!(h100["dtypes"], serde_json::json!(["bf16", "fp8"]));
    let b200 = tables.iter().find(|t| t["device"] == "b200").unwrap();
    assert_eq!(b200["dtypes"], serde_json::json!(["bf16", "fp8", "nvfp4"]));
    assert_eq!(h100["source"], "data/kernels/h100-sxm/trt-llm.csv");
    let text = ok(&["kernels"]);
    assert!(text.contains("h100-sxm  "), "{text}");
    assert!(text.contains("aiconfigurator-core 0.12.0"), "{text}");
}

#[test]
fn a_kernels_directory_adds_a_table_or_names_the_bad_cell() {
    let dir = std::env::temp_dir().join(format!("ridgeline-kernels-cli-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("my-gpu")).unwrap();
    let file = dir.join("my-gpu/vllm.csv");
    let header = "op,version,dtype,key,x,y,z,efficiency\n";
    std::fs::write(&file, format!("{header}gemm,1,bf16,-,1,1024,1024,0.5\n")).unwrap();
    let d = dir.to_str().unwrap();
    let v = json(&["kernels", "--json", "--kernels", d]);
    let mine: Vec<_> = v["tables"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["device"] == "my-gpu")
        .collect();
    assert_eq!(mine.len(), 1);
    assert_eq!(mine[0]["points"], 1);
    assert_eq!(mine[0]["source"], file.to_str().unwrap());
    // a bad cell: line 3, column 6 (y)
    std::fs::write(
        &file,
        format!("{header}gemm,1,bf16,-,1,1024,1024,0.5\ngemm,1,bf16,-,2,n,1024,0.5\n"),
    )
    .unwrap();
    let out = run(&["kernels", "--kernels", d]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("vllm.csv: line 3, column 6 (y): 'n' is not a positive number"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
    let out = run(&["kernels", "--kernels", d]);
    assert_eq!(out.status.code(), Some(2));
}
