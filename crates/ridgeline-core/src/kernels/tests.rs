use super::*;
use crate::engine::EngineDb;

const TABLE: &str = "# a comment
op,version,dtype,key,x,y,z,efficiency
gemm,1.0,bf16,-,1,1024,1024,0.2
gemm,1.0,bf16,-,16,1024,1024,0.4
gemm,1.0,bf16,-,1,4096,1024,0.3
gemm,1.0,bf16,-,16,4096,1024,0.6
attention_decode,1.0,fp8,32/8/128,1,128,-,0.1
attention_decode,1.0,fp8,32/8/128,1,8192,-,0.7
attention_decode,1.0,fp8,32/8/128,64,128,-,0.5
all_reduce,1.0,bf16,8,1024,-,-,0.01
all_reduce,1.0,bf16,8,1048576,-,-,0.5
";

fn db() -> KernelDb {
    let mut db = KernelDb::default();
    db.add_file("h100-sxm/vllm.csv", TABLE, "t.csv").unwrap();
    db
}

fn gemm(m: u64, n: u64, k: u64) -> Option<f64> {
    db().efficiency(
        "h100-sxm",
        "vllm",
        OpClass::Gemm,
        "bf16",
        &Shape::Gemm { m, n, k },
    )
}

#[test]
fn gemm_interpolates_in_the_logs_of_m_and_n() {
    assert_eq!(gemm(16, 4096, 1024), Some(0.6));
    // m = 4 is halfway from 1 to 16 in ln; n = 2048 halfway from 1024 to 4096:
    // n = 1024: 0.2 + 0.5·0.2 = 0.3; n = 4096: 0.3 + 0.5·0.3 = 0.45; mean 0.375
    assert!((gemm(4, 2048, 1024).unwrap() - 0.375).abs() < 1e-12);
    // k is measured at 1024 only: clamped; m beyond 16 clamped: n = 2048 -> (0.4+0.6)/2
    assert!((gemm(1000, 2048, 8192).unwrap() - 0.5).abs() < 1e-12);
    // other dtype, device or engine: not covered
    let d = db();
    let s = Shape::Gemm {
        m: 1,
        n: 1024,
        k: 1024,
    };
    assert_eq!(
        d.efficiency("h100-sxm", "vllm", OpClass::Gemm, "fp8", &s),
        None
    );
    assert_eq!(
        d.efficiency("h200-sxm", "vllm", OpClass::Gemm, "bf16", &s),
        None
    );
    assert_eq!(
        d.efficiency("h100-sxm", "vllm", OpClass::AllReduce, "bf16", &s),
        None
    );
}

#[test]
fn ragged_attention_and_all_reduce() {
    let d = db();
    let at = |batch, len, kv_heads| Shape::Attention {
        batch,
        len,
        heads: 32,
        kv_heads,
        head_dim: 128,
    };
    let dec = |s: &Shape| d.efficiency("h100-sxm", "vllm", OpClass::AttentionDecode, "fp8", s);
    // batch 8 is halfway from 1 to 64 in ln (8 = 64^0.5); kv_len 1024 is halfway from
    // 128 to 8192. batch 1: 0.1 + 0.5·0.6 = 0.4; batch 64 has only kv_len 128: 0.5;
    // halfway: 0.45
    assert!((dec(&at(8, 1024, 8)).unwrap() - 0.45).abs() < 1e-12);
    // another key (GQA group) is not covered; prefill is another class
    assert_eq!(dec(&at(8, 1024, 4)), None);
    let pre = d.efficiency(
        "h100-sxm",
        "vllm",
        OpClass::AttentionPrefill,
        "fp8",
        &at(1, 128, 8),
    );
    assert_eq!(pre, None);
    // 32 KiB is halfway from 1 KiB to 1 MiB in ln: 0.01 + 0.5·0.49 = 0.255
    let ar = Shape::AllReduce {
        gpus: 8,
        bytes: 32768.0,
    };
    let e = d.efficiency("h100-sxm", "vllm", OpClass::AllReduce, "bf16", &ar);
    assert!((e.unwrap() - 0.255).abs() < 1e-12);
}

#[test]
fn bad_tables_name_the_file_line_and_column() {
    let bad = |row: &str| {
        let text = format!("{HEADER}\ngemm,1.0,bf16,-,1,1024,1024,0.2\n{row}\n");
        KernelDb::default()
            .add_file("h100-sxm/vllm.csv", &text, "k/h100-sxm/vllm.csv")
            .unwrap_err()
            .to_string()
    };
    let e = bad("gemm,1.0,bf16,-,1,1024,zero,0.2");
    assert!(
        e.starts_with("k/h100-sxm/vllm.csv: line 3, column 7 (z)"),
        "{e}"
    );
    let e = bad("matmul,1.0,bf16,-,1,1024,1024,0.2");
    assert!(
        e.contains("line 3, column 1 (op): unknown op class 'matmul'"),
        "{e}"
    );
    let e = bad("attention_decode,1.0,bf16,32/5/128,1,128,-,0.2");
    assert!(
        e.contains("line 3, column 4 (key): kv_heads do not divide heads"),
        "{e}"
    );
    let e = bad("attention_decode,1.0,bf16,32/8/128,1,128,7,0.2");
    assert!(
        e.contains("line 3, column 7 (z): attention_decode rows leave it `-`"),
        "{e}"
    );
    let e = bad("gemm,1.0,bf16,-,1,1024,1024,-0.2");
    assert!(e.contains("line 3, column 8 (efficiency)"), "{e}");
    let e = bad("gemm,1.0,bf16,-,1,1024,1024,0.3");
    assert!(
        e.contains("line 3, column 5 (x): a second row for the same gemm point"),
        "{e}"
    );
    let e = bad("gemm,1.0,bf16,-,1,1024");
    assert!(e.contains("line 3: 6 fields, the header has 8"), "{e}");
    let e = bad("gemm,1.0,bf16,-,1,1024,1024,0.2,9");
    assert!(e.contains("line 3: 9 fields, the header has 8"), "{e}");
    // a grid's rows need not come together: a point met again after another grid's
    // rows is named at its second row
    let e = bad("attention_decode,1.0,bf16,32/8/128,1,128,-,0.2\ngemm,1.0,bf16,-,1,1024,1024,0.3");
    assert!(
        e.contains("line 4, column 5 (x): a second row for the same gemm point"),
        "{e}"
    );
    let e = KernelDb::default()
        .add_file("a/b.csv", "op,dtype\n", "x.csv")
        .unwrap_err()
        .to_string();
    assert!(e.contains("line 1: the header must be"), "{e}");
}

#[test]
fn a_directory_adds_and_replaces_tables() {
    let dir = std::env::temp_dir().join(format!("ridgeline-kernels-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("h100-sxm")).unwrap();
    std::fs::write(dir.join("h100-sxm/vllm.csv"), TABLE).unwrap();
    let mut d = KernelDb::builtin().unwrap().clone();
    let read = d.load_dir(&dir).unwrap();
    assert_eq!(read.len(), 1);
    // the user's table replaced the built-in one: its value at (16, 4096, 1024)
    let s = Shape::Gemm {
        m: 16,
        n: 4096,
        k: 1024,
    };
    assert_eq!(
        d.efficiency("h100-sxm", "vllm", OpClass::Gemm, "bf16", &s),
        Some(0.6)
    );
    std::fs::write(dir.join("h100-sxm/vllm.csv"), "op\n").unwrap();
    let e = d.load_dir(&dir).unwrap_err().to_string();
    assert!(e.contains("vllm.csv: line 1: the header must be"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
    let e = d.load_dir(&dir).unwrap_err().to_string();
    assert!(e.starts_with("cannot read"), "{e}");
}

#[test]
fn builtin_tables_parse_and_name_known_devices_and_engines() {
    let db = KernelDb::builtin().unwrap();
    let cov = db.coverage();
    // every file under data/kernels/<device>/ is embedded (gemm-dtypes.toml beside
    // the device folders is not a table)
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../data/kernels");
    let files: usize = std::fs::read_dir(root)
        .unwrap()
        .flatten()
        .filter(|d| d.path().is_dir())
        .map(|d| std::fs::read_dir(d.path()).unwrap().count())
        .sum();
    assert_eq!(cov.len(), files);
    let hw = crate::hardware::HardwareDb::builtin().unwrap();
    let engines = crate::engine::EngineDb::builtin().unwrap();
    for c in &cov {
        assert!(
            hw.get(&c.device).is_ok_and(|h| h.id == c.device),
            "{}",
            c.device
        );
        assert!(engines.get(&c.backend).is_ok(), "{}", c.backend);
        assert!(c.op_classes.contains(&OpClass::Gemm), "{c:?}");
    }
    // a measured grid point comes back as written: data/kernels/h100-sxm/trt-llm.csv,
    // `gemm,1.3.0rc20,bf16,-,4096,4096,4096,0.797`
    let s = Shape::Gemm {
        m: 4096,
        n: 4096,
        k: 4096,
    };
    assert_eq!(
        KernelDb::builtin()
            .unwrap()
            .efficiency("h100-sxm", "trt-llm", OpClass::Gemm, "bf16", &s),
        Some(0.797)
    );
}

/// The sibling of a device without a table, by hand from data/hardware (16-bit tensor
/// peak TFLOP/s, bandwidth TB/s):
/// - H100 PCIe (756.5, 2.0): H100 SXM (989.5, 3.35) at ln(989.5/756.5) + ln(3.35/2.0) =
///   0.269 + 0.516 = 0.784, nearer than H200 (989.5, 4.8) at 0.269 + 0.875 = 1.144;
/// - H100 NVL (835.5, 3.9): H100 SXM at 0.169 + 0.152 = 0.321, H200 at 0.169 + 0.208 =
///   0.377;
/// - RTX 4090 (165.2, 1.008): L40S (362.05, 0.864), 2.19x and 1.17x, within 2.5x;
/// - none for A10G (70 against A100's 312: 4.5x), DGX Spark (0.273 TB/s against the
///   RTX PRO 6000's 1.792: 6.6x), H20 (148 against 989.5), an AMD part (no table of
///   its architecture), and none for H100 SXM, which has its own table.
#[test]
fn a_device_without_a_table_borrows_its_nearest_sibling_s() {
    let hw = crate::hardware::HardwareDb::builtin().unwrap();
    let db = KernelDb::builtin().unwrap();
    let sib = |id: &str| {
        db.sibling(hw.get(id).unwrap(), hw, "trt-llm")
            .map(|h| h.id.clone())
    };
    assert_eq!(sib("h100-pcie").as_deref(), Some("h100-sxm"));
    assert_eq!(sib("h100-nvl").as_deref(), Some("h100-sxm"));
    assert_eq!(sib("rtx-4090").as_deref(), Some("l40s"));
    // same die or the same compute as a device with a table (docs/kernels.md)
    assert_eq!(sib("h800-sxm").as_deref(), Some("h100-sxm"));
    assert_eq!(sib("l40").as_deref(), Some("l40s"));
    assert_eq!(sib("rtx-5090").as_deref(), Some("rtx-pro-6000"));
    for none in ["a10g", "dgx-spark", "h20", "mi300x", "h100-sxm"] {
        assert_eq!(sib(none), None, "{none}");
    }
    // an engine without tables has no sibling either
    assert_eq!(
        db.sibling(hw.get("h100-pcie").unwrap(), hw, "llama.cpp"),
        None
    );
}

#[test]
fn lookup_says_whether_an_efficiency_is_measured_or_transferred() {
    let hw = crate::hardware::HardwareDb::builtin().unwrap();
    let db = KernelDb::builtin().unwrap();
    let shape = Shape::Gemm {
        m: 64,
        n: 4096,
        k: 4096,
    };
    let own = db.efficiency("h100-sxm", "vllm", OpClass::Gemm, "bf16", &shape);
    assert!(own.is_some());
    let look = |id: &str| {
        db.lookup(
            hw.get(id).unwrap(),
            hw,
            "vllm",
            OpClass::Gemm,
            "bf16",
            &shape,
        )
    };
    assert_eq!(look("h100-sxm"), own.map(|e| (e, Source::Measured)));
    assert_eq!(
        look("h100-pcie"),
        own.map(|e| (e, Source::Transferred("h100-sxm".into())))
    );
    assert_eq!(look("a10g"), None);
    // a dtype the sibling's table lacks is not covered
    let fp4 = db.lookup(
        hw.get("h100-pcie").unwrap(),
        hw,
        "vllm",
        OpClass::Gemm,
        "nvfp4",
        &shape,
    );
    assert_eq!(fp4, None);
}

/// `Shape::at` reads back the key and coordinates a shape is looked up by, and
/// refuses a key or point of the wrong form.
#[test]
fn a_grid_point_reads_back_as_the_shape_it_was_keyed_by() {
    let shapes = [
        (
            OpClass::Gemm,
            Shape::Gemm {
                m: 64,
                n: 4096,
                k: 8192,
            },
        ),
        (
            OpClass::AttentionDecode,
            Shape::Attention {
                batch: 16,
                len: 4096,
                heads: 64,
                kv_heads: 8,
                head_dim: 128,
            },
        ),
        (
            OpClass::AllReduce,
            Shape::AllReduce {
                gpus: 8,
                bytes: 1048576.0,
            },
        ),
    ];
    for (op, shape) in shapes {
        let (key, at) = shape.key(op).unwrap();
        assert_eq!(Shape::at(op, &key, &at), Some(shape), "{op:?}");
    }
    // two head counts where three are needed; a GEMM point with two coordinates
    assert_eq!(
        Shape::at(OpClass::AttentionPrefill, "64/8", &[1.0, 512.0]),
        None
    );
    assert_eq!(Shape::at(OpClass::Gemm, "-", &[64.0, 4096.0]), None);
    assert_eq!(Shape::at(OpClass::AllReduce, "eight", &[1024.0]), None);
}

/// Attention at 8 heads / 2 KV heads / 128 (Llama 3 8B on 4 devices), a key the H100
/// tables lack, is read at 16 / 4 / 128 (the same group of 4 query heads per KV head,
/// the nearest KV-head count) at half the batch (4 x 2 = 2 x 4 KV-head rows).
#[test]
fn attention_at_a_missing_head_count_reads_the_nearest_group_of_the_same_size() {
    let db = KernelDb::builtin().unwrap();
    let at_len = |batch, len, heads, kv_heads| {
        db.efficiency(
            "h100-sxm",
            "vllm",
            OpClass::AttentionDecode,
            "bf16",
            &Shape::Attention {
                batch,
                len,
                heads,
                kv_heads,
                head_dim: 128,
            },
        )
    };
    let at = |batch, heads, kv_heads| at_len(batch, 4096, heads, kv_heads);
    assert!(at(2, 16, 4).is_some());
    assert_eq!(at(4, 8, 2), at(2, 16, 4));
    // one sequence of 4,096 tokens at 8 / 2 is half a sequence at 16 / 4: read as one
    // sequence of 2,048 tokens there (the same bytes and pairs, and the kernel's fixed
    // time), not as a whole sequence of 4,096 at half its efficiency
    assert_eq!(at(1, 8, 2), at_len(1, 2048, 16, 4));
    assert!(at_len(1, 2048, 16, 4) < at(1, 16, 4));
    // 128 tokens there would be 64, under the shortest cache measured (128): the time of
    // that point, so half its efficiency
    let half = at_len(1, 128, 8, 2).unwrap();
    assert!(
        (half - at_len(1, 128, 16, 4).unwrap() / 2.0).abs() < 1e-12,
        "{half}"
    );
    // no key of group 3 at head dim 128
    assert_eq!(at(4, 6, 2), None);
}

#[test]
fn a_prediction_on_tables_takes_the_engine_s_profile_fitted_on_them() {
    // data/engines-kernels.toml refits trt-llm; a device a table covers (its own:
    // H200, a sibling's: H100 PCIe) takes that profile, one without (A10G, MI300X) and
    // an engine without tables (llama.cpp) keep their own
    let hw = crate::hardware::HardwareDb::builtin().unwrap();
    let db = KernelDb::builtin().unwrap();
    let engines = EngineDb::builtin().unwrap();
    let pick = |engine: &str, device: &str| {
        db.engine_for(
            engines.get(engine).unwrap(),
            engines,
            hw.get(device).unwrap(),
            hw,
        )
    };
    for device in ["h200-sxm", "h100-pcie"] {
        let e = pick("trt-llm", device);
        assert!(e.provenance.on_tables, "{device}");
        assert_eq!(e.overheads.layer_overhead_s, 0.0);
        assert_eq!(e, engines.on_tables("trt-llm").unwrap());
    }
    for device in ["a10g", "mi300x"] {
        let e = pick("trt-llm", device);
        assert!(!e.provenance.on_tables, "{device}");
        assert!(e.overheads.layer_overhead_s > 0.0);
    }
    assert!(!pick("llama.cpp", "h200-sxm").provenance.on_tables);
}

#[test]
fn a_replaced_engine_loses_its_profile_on_tables() {
    let mut engines = EngineDb::builtin().unwrap().clone();
    assert!(engines.on_tables("vllm").is_some());
    let dir = std::env::temp_dir().join(format!("ridgeline-on-tables-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("e.toml");
    std::fs::write(
        &path,
        "[vllm]\nbase = \"typical\"\noverride = true\ncompute_efficiency = 0.5\n",
    )
    .unwrap();
    assert_eq!(engines.load_file(&path).unwrap(), ["vllm"]);
    std::fs::remove_dir_all(&dir).ok();
    // the user's vllm was not fitted on the tables: it predicts with its own factors
    assert!(engines.on_tables("vllm").is_none());
    assert!(engines.on_tables("trt-llm").is_some());
    // a profile on tables must refit an engine of the database
    let err = EngineDb::builtin()
        .unwrap()
        .clone()
        .with_tables_toml("[nope]\nbase = \"typical\"\n", "t.toml")
        .unwrap_err()
        .to_string();
    assert!(err.contains("[nope] is no engine"), "{err}");
}

#[test]
fn decode_attention_carries_its_time_at_the_sm_rate_not_the_bandwidth() {
    // H100 PCIe reads H100 SXM's table. A fraction of the roof carries as it is for a
    // GEMM (above); a decode step's attention carries its time at the FP32 vector
    // peaks' ratio (51 / 67 TFLOP/s): the fraction of the (bandwidth) roof scales by
    // bw(SXM) / bw(PCIe) x 51 / 67 = 3.35 / 2.0 x 51 / 67 = 1.2750, capped at 1
    let hw = crate::hardware::HardwareDb::builtin().unwrap();
    let db = KernelDb::builtin().unwrap();
    let shape = Shape::Attention {
        batch: 16,
        len: 4096,
        heads: 32,
        kv_heads: 8,
        head_dim: 128,
    };
    let op = OpClass::AttentionDecode;
    let sxm = db
        .efficiency("h100-sxm", "vllm", op, "bf16", &shape)
        .unwrap();
    let (pcie, source) = db
        .lookup(hw.get("h100-pcie").unwrap(), hw, "vllm", op, "bf16", &shape)
        .unwrap();
    assert_eq!(source, Source::Transferred("h100-sxm".into()));
    let want = (sxm * 3.35 / 2.0 * 51.0 / 67.0).min(1.0);
    assert!(
        (pcie / want - 1.0).abs() < 1e-12,
        "{pcie} vs {want} (sxm {sxm})"
    );
    assert!(pcie > sxm);
    // so the PCIe card's time is the SXM's x 67 / 51 (where uncapped): the roof
    // (bytes / bandwidth) over the efficiency
    if want < 1.0 {
        let bytes = 1e9;
        let t = |bw: f64, e: f64| bytes / bw / e;
        let ratio = t(2.0e12, pcie) / t(3.35e12, sxm);
        assert!((ratio - 67.0 / 51.0).abs() < 1e-9, "{ratio}");
    }
    // between GDDR parts (RTX 4090 reading the L40S's table) the fraction carries as it is
    let l40s = db.efficiency("l40s", "vllm", op, "bf16", &shape).unwrap();
    let (rtx, _) = db
        .lookup(hw.get("rtx-4090").unwrap(), hw, "vllm", op, "bf16", &shape)
        .unwrap();
    assert_eq!(rtx, l40s);
}

#[test]
fn prompt_attention_carries_its_work_at_the_device_s_rates_and_the_rest_at_the_sm_rate() {
    let hw = crate::hardware::HardwareDb::builtin().unwrap();
    let op = OpClass::AttentionPrefill;
    let attention = |len| Shape::Attention {
        batch: 1,
        len,
        heads: 32,
        kv_heads: 8,
        head_dim: 128,
    };
    let carry = |from: &str, to: &str, e: f64, len: u64| {
        Transfer::between(hw.get(from).unwrap(), hw.get(to).unwrap()).carry(
            op,
            e,
            "bf16",
            &attention(len),
        )
    };
    // H100 SXM -> H200: the same tensor peak (989.5 TFLOP/s), FP32 rate (67 TFLOP/s)
    // and exponential rate, so the time carries unchanged. A 128-token prompt is
    // memory-bound on both: 2.62 MB (Q and O 128 x 32 x 128 x 2 B each, K and V
    // 128 x 8 x 128 x 2 B each) against 135 MFLOP (2 x 32 x 256 x 8,256 pairs), 0.78 us at
    // 3.35 TB/s over 0.14 us at the peak; so the fraction of the roof scales by
    // 3.35 / 4.8 (the H200's roof is that much shorter)
    let e = carry("h100-sxm", "h200-sxm", 0.1, 128);
    assert!((e / (0.1 * 3.35 / 4.8) - 1.0).abs() < 1e-12, "{e}");
    // B200 -> B300: the same tensor peak (2.25 PFLOP/s; no FP32 peak in the B200 file,
    // so the SM rates compare by it: 1), one exponential per 512 tensor FLOPs against one
    // per 256. At head_dim 128 a pair of tokens is 512 FLOPs and one exponential, so on
    // the B200 the exponentials take as long as the tensor work M: an 8,192-token prompt
    // (compute-bound) at 0.4 of its roof M takes 2.5 M, of which 2 M ideal work and
    // 0.5 M the rest; on the B300 0.5 M + M + M / 2 = 2 M, half its roof
    let e = carry("b200", "b300", 0.4, 8192);
    assert!((e - 0.5).abs() < 1e-9, "{e}");
    // and back: 0.5 of the B300's roof is 2 M, 1.5 M of work and 0.5 M the rest; on the
    // B200 0.5 M + 2 M = 2.5 M, 0.4 of its roof
    let e = carry("b300", "b200", 0.5, 8192);
    assert!((e - 0.4).abs() < 1e-9, "{e}");
    // a GDDR sibling (RTX 4090 from the L40S) carries the fraction as it is
    assert_eq!(carry("l40s", "rtx-4090", 0.3, 8192), 0.3);
    // never past the roof where the measurement was not
    assert!(carry("b200", "b300", 0.9, 8192) <= 1.0);
}

#[test]
fn fp8_factors_are_the_median_ratio_to_bf16_at_the_same_shape_per_regime() {
    // compute over m >= 1024, memory over m <= 8, n and k >= 4096 only: at m = 1 the
    // fp8 GEMVs reach 0.45 / 0.5 = 0.9 and 0.3 / 0.5 = 0.6 of the bf16 ones (median of
    // the two: 0.75); at m = 2048, 0.6 / 0.8 = 0.75; the 1024-wide shape and m = 64
    // count nowhere
    let table = "op,version,dtype,key,x,y,z,efficiency
gemm,1.0,bf16,-,1,4096,4096,0.5
gemm,1.0,bf16,-,1,8192,4096,0.5
gemm,1.0,bf16,-,64,4096,4096,0.6
gemm,1.0,bf16,-,2048,4096,4096,0.8
gemm,1.0,bf16,-,1,1024,4096,0.5
gemm,1.0,fp8,-,1,4096,4096,0.45
gemm,1.0,fp8,-,1,8192,4096,0.3
gemm,1.0,fp8,-,64,4096,4096,0.1
gemm,1.0,fp8,-,2048,4096,4096,0.6
gemm,1.0,fp8,-,1,1024,4096,0.05
";
    let mut db = KernelDb::default();
    db.add_file("h100-sxm/vllm.csv", table, "t.csv").unwrap();
    let hw = crate::hardware::HardwareDb::builtin().unwrap();
    let g = GemmDtypes::measure(&db, hw);
    let f = g.get("h100-sxm").unwrap().fp8.unwrap();
    assert_eq!((f.compute, f.compute_points), (0.75, 1));
    assert_eq!((f.memory, f.memory_points), (0.75, 2));
    assert_eq!(g.get("h100-sxm").unwrap().fp4, None);
    // the H100 PCIe (no table) takes its sibling's; the A100 (another architecture) none
    assert_eq!(
        g.get("h100-pcie").unwrap().from.as_deref(),
        Some("h100-sxm")
    );
    assert_eq!(g.get("h100-pcie").unwrap().fp8, Some(f));
    assert!(g.get("a100-80gb-sxm").is_none());
    // and the file's text reads back as what was measured
    let back = GemmDtypes::from_toml(&g.to_toml(), "t.toml").unwrap();
    assert_eq!(back, g);
    let bad = GemmDtypes::from_toml(
        "[x]\nfp8 = { compute = 0, memory = 1, compute_points = 1, memory_points = 1 }\n",
        "t.toml",
    )
    .unwrap_err()
    .to_string();
    assert!(bad.contains("[x] compute must lie in (0, 2]"), "{bad}");
}

#[test]
fn a_routed_expert_block_is_counted_as_the_graph_counts_it_and_carries_as_time() {
    // Qwen3-30B-A3B's experts (hidden 2048, inter 768, 8 of 128), one token, one device:
    // 8 rows, touching 128 x (1 - (1 - 8/128)^1) = 8 experts of bf16 weights
    let s = Shape::Moe {
        tokens: 1,
        hidden: 2048,
        inter: 768,
        topk: 8,
        experts: 128,
        ep: 1,
    };
    let [up, act, down] = s.moe_ops(16.0).unwrap();
    // gate/up: 2 x 8 x 2048 x 1536 FLOPs; 8 x 2048 x 2 in + 8 x 2048 x 1536 x 2 weights
    // + 8 x 1536 x 2 out = 32,768 + 50,331,648 + 24,576 bytes
    assert_eq!(up, (50_331_648.0, 50_388_992.0));
    // the gated activation reads 2 x 8 x 768 and writes 8 x 768 16-bit elements
    assert_eq!(act, (0.0, 36_864.0));
    // down: 2 x 8 x 768 x 2048; 12,288 in + 25,165,824 weights + 32,768 out
    assert_eq!(down, (25_165_824.0, 25_210_880.0));
    // expert parallel over 8: each device runs 1/8 of the rows and of the experts touched
    let ep8 = Shape::Moe {
        tokens: 1,
        hidden: 2048,
        inter: 768,
        topk: 8,
        experts: 128,
        ep: 8,
    };
    let [up8, _, _] = ep8.moe_ops(16.0).unwrap();
    assert_eq!(up8.0, up.0 / 8.0);
    assert!((up8.1 - up.1 / 8.0).abs() < 1e-6);
    // the key round-trips; a bad key is refused with what it should be
    let (key, at) = s.key(OpClass::Moe).unwrap();
    assert_eq!(key, "2048/768/8/128/1");
    assert_eq!(Shape::at(OpClass::Moe, &key, &at), Some(s));
    for (bad, says) in [
        ("2048/768/8/128/3", "ep does not divide"),
        ("2048/768/8", "is not hidden/inter/topk/experts/ep"),
    ] {
        let table = format!("{}\nmoe,1.0,bf16,{bad},1,-,-,0.5\n", parse::HEADER);
        let err = KernelDb::default()
            .add_file("h100-sxm/vllm.csv", &table, "t.csv")
            .unwrap_err()
            .to_string();
        assert!(err.contains(says), "{err}");
    }
    assert_eq!(
        moe_dtype("fp8-block").map(|d| d.1),
        Some(crate::dtype::ComputeDtype::Fp8)
    );
    assert_eq!(moe_dtype("q4_k_m"), None);
    // H100 SXM -> H200: the same FP32 rate (67 TFLOP/s), so the time beyond the roof
    // carries unchanged and the roof at each device's bandwidth (the block is
    // memory-bound: 75.6 MB against 75.5 MFLOP). At 0.5 of the H100's roof R the block
    // takes 2 R: R beyond it; on the H200 R + R x 3.35 / 4.8, of which its roof is
    // R x 3.35 / 4.8: 3.35 / (4.8 + 3.35)
    let hw = crate::hardware::HardwareDb::builtin().unwrap();
    let t = Transfer::between(hw.get("h100-sxm").unwrap(), hw.get("h200-sxm").unwrap());
    let e = t.carry(OpClass::Moe, 0.5, "bf16", &s);
    assert!((e - 3.35 / 8.15).abs() < 1e-6, "{e}");
}

#[test]
fn an_all_reduce_latency_is_the_fastest_small_message_and_siblings_take_it() {
    // 8 H100 SXM (3.35e12 B/s, NVLink 450e9 B/s per direction): a ring moves
    // 2 x 7/8 of the message over the link. 2 KiB: 3,584 B / 450e9 = 7.964 ns at 0.002 of
    // it = 3.98 us; 8 KiB: 31.86 ns / 0.01 = 3.19 us; 32 KiB: 127.4 ns / 0.02 = 6.37 us;
    // 1 MiB is past the small messages. The fastest, 3.19 us, kept to 0.1 us: 3.2 us
    let table = "op,version,dtype,key,x,y,z,efficiency
all_reduce,1.0,bf16,8,2048,-,-,0.002
all_reduce,1.0,bf16,8,8192,-,-,0.01
all_reduce,1.0,bf16,8,32768,-,-,0.02
all_reduce,1.0,bf16,8,1048576,-,-,0.9
all_reduce,1.0,bf16,4,2048,-,-,0.0005
all_reduce,1.0,bf16,2,2048,-,-,0.001
";
    let mut db = KernelDb::default();
    db.add_file("h100-sxm/vllm.csv", table, "t.csv").unwrap();
    let hw = crate::hardware::HardwareDb::builtin().unwrap();
    let l = AllReduceLatency::measure(&db, hw);
    let (s, from) = l.get("h100-sxm", "vllm", 8).unwrap();
    assert!((s - 3.2e-6).abs() < 1e-12, "{s}");
    assert_eq!(from, None);
    // 4 devices: 2 x 3/4 x 2,048 B / 450e9 = 6.83 ns at 0.0005 = 13.7 us, more than 8
    // devices take: 8's 3.2 us stands. 2 devices: 2,048 B / 450e9 = 4.55 ns at 0.001 =
    // 4.6 us, again more than 8 take: 3.2 us
    assert_eq!(l.get("h100-sxm", "vllm", 4), Some((s, None)));
    let (two, _) = l.get("h100-sxm", "vllm", 2).unwrap();
    assert!((two - 3.2e-6).abs() < 1e-12, "{two}");
    assert_eq!(l.get("h100-sxm", "sglang", 8), None);
    // the H100 NVL has no table: its sibling's time, named
    assert_eq!(l.get("h100-nvl", "vllm", 8), Some((s, Some("h100-sxm"))));
    // the text reads back as what was measured
    let back = AllReduceLatency::from_toml(&l.to_toml(), "t.toml").unwrap();
    assert_eq!(back, l);
    for (bad, says) in [
        (
            "[x]\nvllm = { 8 = 0 }\n",
            "[x] vllm.8 must be microseconds in (0, 1000)",
        ),
        (
            "[x]\nvllm = { 1 = 3.0 }\n",
            "'1' is not a device count of at least 2",
        ),
        ("[x]\nvllm = 3.0\n", "[x] vllm is a table of device counts"),
    ] {
        let e = AllReduceLatency::from_toml(bad, "t.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains(says), "{e}");
    }
}

#[test]
fn every_embedded_table_parses() {
    // the embedded tables are parsed on first use, where a failure would leave the
    // table absent: every one of them must parse, and hold points
    let db = KernelDb::builtin().unwrap();
    assert_eq!(db.tables.len(), crate::hardware::KERNEL_FILES.len());
    for ((device, backend), slot) in &db.tables {
        let t = slot
            .get(device, backend)
            .unwrap_or_else(|| panic!("{device}/{backend}"));
        assert_eq!(
            (t.device.as_str(), t.backend.as_str()),
            (device.as_str(), backend.as_str())
        );
        assert!(
            t.grids.values().map(Grid::len).sum::<usize>() > 0,
            "{device}/{backend}"
        );
    }
    // 9 devices under 3 engines (data/kernels/)
    assert_eq!(db.coverage().len(), 27);
}

#[test]
fn the_shortest_kernel_is_the_fastest_measured_16_bit_gemm() {
    let hw = crate::hardware::HardwareDb::builtin().unwrap();
    let h100 = hw.get("h100-sxm").unwrap();
    // TABLE's four GEMMs on H100 SXM (989.5e12 FLOP/s bf16, 3.35e12 B/s): each reads
    // its bytes far longer than it computes; 1 x 1024 x 1024 at 0.2 moves
    // 2 (1024 + 1024 * 1024 + 1024) = 2,101,248 B: 0.627238 us / 0.2 = 3.136 us; 16 x
    // 1024 x 1024 at 0.4 moves 2 (16384 + 1048576 + 16384) = 2,162,688 B: 1.61394 us;
    // 1 x 4096 x 1024 at 0.3 moves 2 (1024 + 4194304 + 4096) = 8,398,848 B: 8.357 us;
    // 16 x 4096 x 1024 at 0.6 moves 2 (16384 + 4194304 + 65536) = 8,552,448 B: 4.255 us
    let db = db();
    let t = db.table("h100-sxm", "vllm").unwrap();
    let got = t.shortest_kernel_s(h100).unwrap();
    let want = 2_162_688.0 / 3.35e12 / 0.4;
    assert!((got / want - 1.0).abs() < 1e-12, "{got} vs {want}");
    // asked again, the same (kept)
    assert_eq!(t.shortest_kernel_s(h100), Some(got));
    // a table without a 16-bit GEMM has none
    let mut other = KernelDb::default();
    let attention_only = "op,version,dtype,key,x,y,z,efficiency\n\
                          attention_decode,1.0,fp8,32/8/128,1,128,-,0.1\n";
    other
        .add_file("h100-sxm/vllm.csv", attention_only, "a.csv")
        .unwrap();
    let t = other.table("h100-sxm", "vllm").unwrap();
    assert_eq!(t.shortest_kernel_s(h100), None);
}

#[test]
fn a_latent_attention_point_counts_as_the_graph_does() {
    // DeepSeek-V3 over 8 devices: 16 heads, one sequence at 2,048 cached tokens
    let s = Shape::Mla {
        batch: 1,
        len: 2048,
        heads: 16,
        kv_lora: 512,
        rope: 64,
    };
    let a = s.attention(OpClass::MlaDecode, "bf16").unwrap();
    let c = crate::ops::attention_fused(&a);
    // 2 x 16 heads x (576 + 512) x 2,048 pairs
    assert_eq!(c.flops, 71_303_168.0);
    // latents 2,048 x 576 x 2 + query 16 x 576 x 2 + output 16 x 512 x 2
    assert_eq!(c.bytes(), 2_359_296.0 + 18_432.0 + 16_384.0);
    // an fp8 cache halves the latents alone
    let f = crate::ops::attention_fused(&s.attention(OpClass::MlaDecode, "fp8").unwrap());
    assert_eq!(f.bytes(), 1_179_648.0 + 18_432.0 + 16_384.0);
    // not the shape of another class
    assert_eq!(s.attention(OpClass::AttentionDecode, "bf16"), None);
    // the key round-trips; a bad key is refused with what it should be
    let (key, at) = s.key(OpClass::MlaDecode).unwrap();
    assert_eq!(
        (key.as_str(), at.as_slice()),
        ("16/512/64", &[1.0, 2048.0][..])
    );
    assert_eq!(Shape::at(OpClass::MlaDecode, &key, &at), Some(s));
    let table = format!(
        "{}\nmla_decode,1.0,bf16,16/512,1,2048,-,0.5\n",
        parse::HEADER
    );
    let err = KernelDb::default()
        .add_file("h100-sxm/sglang.csv", &table, "t.csv")
        .unwrap_err()
        .to_string();
    assert!(err.contains("is not heads/kv_lora/rope"), "{err}");
}
