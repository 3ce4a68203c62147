//! The embedded hardware database: every contract id present, every number sourced,
//! peaks dense (cross-checked against datasheet values).

use ridgeline::dtype::ComputeDtype;
use ridgeline::hardware::HardwareDb;

const CONTRACT_IDS: [&str; 50] = [
    "a100-40gb-sxm",
    "a100-80gb-sxm",
    "a100-80gb-pcie",
    "h100-sxm",
    "h100-pcie",
    "h100-nvl",
    "h200-sxm",
    "h800-sxm",
    "b200",
    "gb200",
    "l40s",
    "l40",
    "l4",
    "a10g",
    "a10",
    "a40",
    "t4",
    "v100-sxm2-32gb",
    "v100-pcie-16gb",
    "rtx-3060-12gb",
    "rtx-3090",
    "rtx-3090-ti",
    "rtx-4080",
    "rtx-4090",
    "rtx-5090",
    "rtx-a6000",
    "rtx-6000-ada",
    "mi210",
    "mi250x",
    "mi300x",
    "mi325x",
    "tpu-v4",
    "tpu-v5e",
    "tpu-v5p",
    "gaudi2",
    "gaudi3",
    "m1-max",
    "m2-ultra",
    "m3-max",
    "m4-max",
    // devices of 2025-26
    "b300",
    "gb300",
    "mi355x",
    "rtx-pro-6000",
    "dgx-spark",
    "ryzen-ai-max-395",
    "tpu-v6e",
    "h20",
    "rtx-5080",
    // added beyond the contract's list (an extension): the M1 Pro of
    // ggml-org/llama.cpp#10581's small-batch rows
    "m1-pro",
];

#[test]
fn every_contract_id_is_present_with_sources() {
    let db = HardwareDb::builtin().unwrap();
    for id in CONTRACT_IDS {
        let d = db.get(id).unwrap_or_else(|e| panic!("{id}: {e}"));
        assert_eq!(d.id, id);
        assert!(d.memory.capacity_bytes > 1e9, "{id} capacity");
        assert!(d.memory.bandwidth_bytes_per_s > 1e10, "{id} bandwidth");
        assert!(
            d.sources.iter().any(|s| s.starts_with("http")),
            "{id} needs a URL source"
        );
        assert!(!d.memory.source.is_empty(), "{id} memory.source");
        let any_peak = ComputeDtype::ALL
            .iter()
            .any(|&t| d.peak_flops_per_s.get(t).is_some())
            || d.estimated_peak_flops_per_s.is_some();
        assert!(any_peak, "{id} needs a peak");
    }
    assert_eq!(db.devices().len(), CONTRACT_IDS.len());
}

#[test]
fn aliases_resolve() {
    let db = HardwareDb::builtin().unwrap();
    assert_eq!(db.get("h100").unwrap().id, "h100-sxm");
    assert_eq!(db.get("a100").unwrap().id, "a100-80gb-sxm");
    assert_eq!(db.get("4090").unwrap().id, "rtx-4090");
    assert_eq!(db.get("H100-SXM").unwrap().id, "h100-sxm");
}

#[test]
fn unknown_id_suggests_three_closest() {
    let db = HardwareDb::builtin().unwrap();
    match db.get("h100-sxm6") {
        Err(ridgeline::Error::UnknownName { suggestions, .. }) => {
            assert_eq!(suggestions.len(), 3);
            assert_eq!(suggestions[0], "h100-sxm");
        }
        other => panic!("expected UnknownName, got {other:?}"),
    }
}

#[test]
fn peaks_are_dense_datasheet_values() {
    // Dense values; the sparse datasheet figures are exactly twice these.
    let db = HardwareDb::builtin().unwrap();
    let bf16 = |id: &str| db.get(id).unwrap().peak_flops_per_s.rates.bf16.unwrap();
    assert_eq!(bf16("h100-sxm"), 989.5e12); // datasheet 1,979* with sparsity
    assert_eq!(bf16("a100-80gb-sxm"), 312e12); // A100 datasheet dense
    assert_eq!(bf16("l4"), 121e12); // datasheet 242* with sparsity
    assert_eq!(bf16("h200-sxm"), 989.5e12);
    assert_eq!(bf16("b200"), 2250e12); // HGX B200 4.5 PF* with sparsity
    assert_eq!(bf16("rtx-4090"), 165.2e12); // Ada WP: fp32-accumulate rate, not 330.3
    assert_eq!(bf16("mi300x"), 1307.4e12);
    let h100 = db.get("h100-sxm").unwrap();
    assert_eq!(h100.memory.bandwidth_bytes_per_s, 3.35e12);
    assert_eq!(h100.peak_flops_per_s.rates.fp8, Some(1979e12));
    assert_eq!(
        db.get("a100-80gb-sxm")
            .unwrap()
            .memory
            .bandwidth_bytes_per_s,
        2.039e12
    );
}

#[test]
fn peaks_are_ordered_sensibly() {
    let db = HardwareDb::builtin().unwrap();
    for d in db.devices() {
        let p = &d.peak_flops_per_s;
        if let (Some(f8), Some(b16)) = (p.rates.fp8, p.rates.bf16) {
            assert!(f8 >= b16, "{}: fp8 < bf16", d.id);
        }
        if let (Some(b16), Some(f32_)) = (p.rates.bf16, p.rates.fp32) {
            assert!(b16 >= f32_, "{}: bf16 < fp32", d.id);
        }
        if let Some(acc16) = p.rates.fp16_acc16 {
            assert!(acc16 >= p.rates.fp16.unwrap_or(0.0), "{}", d.id);
        }
    }
}

#[test]
fn ridge_points() {
    let db = HardwareDb::builtin().unwrap();
    // 312e12 / 2.039e12 = 153.0; 989.5e12 / 3.35e12 = 295.4
    let a100 = db
        .get("a100-80gb-sxm")
        .unwrap()
        .ridge_point(ComputeDtype::Bf16);
    assert!((a100 - 153.0).abs() < 0.05, "{a100}");
    let h100 = db.get("h100-sxm").unwrap().ridge_point(ComputeDtype::Bf16);
    assert!((h100 - 295.4).abs() < 0.05, "{h100}");
}

#[test]
fn user_file_errors_name_the_key() {
    let bad = "id = \"x\"\nname = \"X\"\nvendor = \"V\"\nclass = \"datacenter\"\nsources = [\"http://x\"]\n[memory]\ntype = \"HBM\"\ncapacity_bytes = -1.0\nbandwidth_bytes_per_s = 1e12\nsource = \"s\"\n[peak_flops_per_s]\nbf16 = 1e12\n";
    let e = ridgeline::hardware::Hardware::from_toml(bad, "my.toml")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("my.toml") && e.contains("memory.capacity_bytes"),
        "{e}"
    );
    let typo = bad.replace("capacity_bytes = -1.0", "capacity_byte = 1e9");
    let e = ridgeline::hardware::Hardware::from_toml(&typo, "my.toml")
        .unwrap_err()
        .to_string();
    assert!(e.contains("capacity_byte"), "{e}");
    assert!(ridgeline::hardware::Hardware::from_toml("id = ", "t.toml").is_err());
}

#[test]
fn units_are_si_base_units() {
    // Catches numbers entered in GB, GB/s or TFLOP/s instead of bytes, bytes/s, FLOP/s.
    let db = HardwareDb::builtin().unwrap();
    for d in db.devices() {
        let m = &d.memory;
        assert!(
            (4e9..=1e12).contains(&m.capacity_bytes),
            "{}: capacity {}",
            d.id,
            m.capacity_bytes
        );
        assert!(
            (1e11..=1e14).contains(&m.bandwidth_bytes_per_s),
            "{}: bandwidth",
            d.id
        );
        if let Some(l2) = m.l2_bytes {
            assert!((1e6..=1e9).contains(&l2), "{}: l2 {l2}", d.id);
        }
        let peaks =
            std::iter::once(&d.peak_flops_per_s).chain(d.estimated_peak_flops_per_s.as_ref());
        for p in peaks {
            for t in ComputeDtype::ALL {
                if let Some(v) = p.get(t) {
                    assert!(
                        (1e12..=1e17).contains(&v),
                        "{}: {} peak {v}",
                        d.id,
                        t.name()
                    );
                }
            }
        }
        for l in [&d.host_link, &d.scaleup_link].into_iter().flatten() {
            assert!(
                (1e9..=1e13).contains(&l.bytes_per_s_per_direction),
                "{}: link {}",
                d.id,
                l.name
            );
            assert!(!l.source.is_empty(), "{}: link source", d.id);
        }
        if let Some(t) = d.tdp_w {
            assert!((10.0..=2000.0).contains(&t), "{}: tdp {t}", d.id);
        }
    }
}

#[test]
fn sparse_halving_is_declared_where_datasheets_print_sparse() {
    // NVIDIA Hopper/Ada/Blackwell datasheets print tensor rates with sparsity; the files
    // must say they halved them.
    let db = HardwareDb::builtin().unwrap();
    for id in [
        "h100-sxm",
        "h100-pcie",
        "h100-nvl",
        "h200-sxm",
        "b200",
        "gb200",
        "l4",
        "b300",
        "gb300",
        "rtx-pro-6000",
        "rtx-5080",
        "dgx-spark",
    ] {
        assert!(db.get(id).unwrap().peak_flops_per_s.sparse_halved, "{id}");
    }
}

const GIB: f64 = 1073741824.0;

/// Every peak of a device that is present, as (dtype name, FLOP/s).
fn peaks(d: &ridgeline::hardware::Hardware) -> Vec<(&'static str, f64)> {
    ComputeDtype::ALL
        .iter()
        .filter_map(|&t| d.peak_flops_per_s.get(t).map(|v| (t.name(), v)))
        .collect()
}

#[test]
fn b300_pins_the_hgx_b300_per_gpu_figures() {
    let db = HardwareDb::builtin().unwrap();
    let d = db.get("b300").unwrap();
    assert_eq!(db.get("hgx-b300").unwrap().id, "b300");
    // HGX B300 per GPU: 270 GB HBM3e at 7.7 TB/s (Blackwell Ultra datasheet HGX column, NVIDIA exemplar)
    assert_eq!(d.memory.capacity_bytes, 270.0 * GIB);
    assert_eq!(d.memory.bandwidth_bytes_per_s, 7.7e12);
    let p = &d.peak_flops_per_s;
    // BF16 36 PF* per 8-GPU board: 36 / 8 / 2 = 2.25 PF dense (exemplar: 2250)
    assert_eq!(p.rates.bf16, Some(2250e12));
    // FP8 72 PF* per board: 72 / 8 / 2 = 4.5 PF dense (exemplar: 4500)
    assert_eq!(p.rates.fp8, Some(4500e12));
    // FP4 printed sparse | dense 144 | 108 PF per board: 108 / 8 = 13.5 PF dense, not halved (exemplar: 13500)
    assert_eq!(p.rates.fp4, Some(13500e12));
    // Blackwell Ultra's INT8 is a narrow path: 307 TOPS* / 2, far below FP8
    assert_eq!(p.rates.int8, Some(153.5e12));
    assert!(p.sparse_halved);
    assert_eq!(d.tdp_w, Some(1100.0));
    // NVLink 5: 1.8 TB/s bidirectional = 900 GB/s per direction
    assert_eq!(
        d.scaleup_link.as_ref().unwrap().bytes_per_s_per_direction,
        900e9
    );
    assert_eq!(d.architecture, "blackwell");
}

#[test]
fn gb300_pins_the_nvl72_per_gpu_figures() {
    let db = HardwareDb::builtin().unwrap();
    let d = db.get("gb300").unwrap();
    // 279 GB HBM3e at 8 TB/s per GPU (exemplar GB300 reference, datasheet GB300 column)
    assert_eq!(d.memory.capacity_bytes, 279.0 * GIB);
    assert_eq!(d.memory.bandwidth_bytes_per_s, 8e12);
    let p = &d.peak_flops_per_s;
    // GB300 dense FP4 = 15 PFLOPS per GPU: NVL72 prints 1,440 | 1,080 PF (sparse | dense); 1,080 / 72 = 15
    assert_eq!(p.rates.fp4, Some(15000e12));
    // FP8/FP6 720 PF* / 72 / 2 = 5 PF; FP16/BF16 360 PF* / 72 / 2 = 2.5 PF; TF32 180 PF* / 72 / 2 = 1.25 PF
    assert_eq!(p.rates.fp8, Some(5000e12));
    assert_eq!(p.rates.bf16, Some(2500e12));
    assert_eq!(p.rates.tf32, Some(1250e12));
    // INT8 330 TOPS* / 2 (NVL72: 24 POPS* / 72 = 333*)
    assert_eq!(p.rates.int8, Some(165e12));
    assert!(p.sparse_halved);
    assert_eq!(d.tdp_w, Some(1400.0));
    // the scale-up domain is the 72-GPU NVLink rack; the host is Grace over C2C, no PCIe host link
    assert_eq!(d.devices_per_node, Some(72));
    assert!(d.host_link.is_none());
    assert_eq!(
        d.scaleup_link.as_ref().unwrap().bytes_per_s_per_direction,
        900e9
    );
}

#[test]
fn mi355x_pins_amd_dense_rows() {
    let db = HardwareDb::builtin().unwrap();
    let d = db.get("mi355x").unwrap();
    // ROCm gpu-specs: 'VRAM (GiB) 288'; 8 TB/s; L2 4 MiB per XCD x 8
    assert_eq!(d.memory.capacity_bytes, 288.0 * GIB);
    assert_eq!(d.memory.bandwidth_bytes_per_s, 8e12);
    assert_eq!(d.memory.l2_bytes, Some(32.0 * 1048576.0));
    let p = &d.peak_flops_per_s;
    // AMD's dense rows (sparse listed separately): FP16/BF16 2.5 PF, OCP-FP8 5.0 PF, MXFP4 10.1 PF
    // (256 CU x 2.4 GHz: 2516.6 / 5033 / 10066 TF)
    assert_eq!(p.rates.bf16, Some(2500e12));
    assert_eq!(p.rates.fp8, Some(5000e12));
    assert_eq!(p.rates.fp4, Some(10100e12));
    assert_eq!(p.rates.fp32, Some(157.3e12));
    assert_eq!(p.rates.fp64, Some(78.6e12));
    // CDNA4 has no native TF32 matrix path: not carried over from MI300X
    assert_eq!(p.rates.tf32, None);
    assert!(!p.sparse_halved);
    assert_eq!(d.tdp_w, Some(1400.0));
    assert_eq!(d.architecture, "cdna4");
    // Infinity Fabric: 7 links x 153.6 GB/s each direction (OLCF Lux guide)
    let l = d.scaleup_link.as_ref().unwrap().bytes_per_s_per_direction;
    assert!((l - 7.0 * 153.6e9).abs() < 1.0, "{l}");
    assert_eq!(
        d.host_link.as_ref().unwrap().bytes_per_s_per_direction,
        64e9
    );
}

#[test]
fn rtx_pro_6000_pins_the_workstation_edition() {
    let db = HardwareDb::builtin().unwrap();
    let d = db.get("rtx-pro-6000").unwrap();
    assert_eq!(db.get("rtx-pro-6000-blackwell").unwrap().id, "rtx-pro-6000");
    assert_eq!(d.class, ridgeline::hardware::DeviceClass::Workstation);
    // 96 GB GDDR7 ECC = 96 GiB; 512-bit x 28 Gbps / 8 = 1,792 GB/s
    assert_eq!(d.memory.capacity_bytes, 96.0 * GIB);
    assert_eq!(d.memory.bandwidth_bytes_per_s, 1792e9);
    let p = &d.peak_flops_per_s;
    // '4,000 AI TOPS' = FP4 4,030.4* -> 2,015.2 dense; BF16 (FP32 acc, no penalty on RTX PRO) 503.8 dense
    // = 188 SM x 2.617 GHz x 1,024
    assert_eq!(p.rates.fp4, Some(2015.2e12));
    assert_eq!(p.rates.fp8, Some(1007.6e12));
    assert_eq!(p.rates.bf16, Some(503.8e12));
    // professional cards accumulate fp16 in fp32 at full rate: no separate fp16_acc16
    assert_eq!(p.rates.fp16_acc16, None);
    assert!(p.sparse_halved);
    assert_eq!(d.tdp_w, Some(600.0));
    assert!(d.scaleup_link.is_none());
    assert_eq!(
        d.host_link.as_ref().unwrap().bytes_per_s_per_direction,
        64e9
    );
}

#[test]
fn rtx_5080_pins_geforce_rates() {
    let db = HardwareDb::builtin().unwrap();
    let d = db.get("rtx-5080").unwrap();
    assert_eq!(db.get("5080").unwrap().id, "rtx-5080");
    // 16 GB GDDR7 = 16 GiB; 256-bit x 30 Gbps / 8 = 960 GB/s
    assert_eq!(d.memory.capacity_bytes, 16.0 * GIB);
    assert_eq!(d.memory.bandwidth_bytes_per_s, 960e9);
    let p = &d.peak_flops_per_s;
    // '1,801 AI TOPS' is FP4 with sparsity: 1,801 / 2 = 900.4 dense
    assert_eq!(p.rates.fp4, Some(900.4e12));
    // GeForce: bf16 is the FP32-accumulate rate, half the FP16-accumulate 225.1
    // (84 SM x 2.617 GHz x 1,024 = 225.1 TF)
    assert_eq!(p.rates.bf16, Some(112.6e12));
    assert_eq!(p.rates.fp16_acc16, Some(225.1e12));
    assert_eq!(d.tdp_w, Some(360.0));
    assert_eq!(d.class, ridgeline::hardware::DeviceClass::Consumer);
}

#[test]
fn unified_memory_machines_hold_128_gib_and_publish_little() {
    let db = HardwareDb::builtin().unwrap();
    let spark = db.get("dgx-spark").unwrap();
    assert_eq!(db.get("gb10").unwrap().id, "dgx-spark");
    // 128 GB LPDDR5X = 128 GiB, 273 GB/s
    assert_eq!(spark.memory.capacity_bytes, 128.0 * GIB);
    assert_eq!(spark.memory.bandwidth_bytes_per_s, 273e9);
    // NVIDIA publishes '1 PFLOP' FP4 with sparsity: 500 TF dense; no BF16/FP8 rate, so
    // the vendor fields stay empty and the estimates follow Blackwell's published ratio
    // (dense FP4 = 2 x FP8 = 4 x BF16, B200 9000 / 4500 / 2250 TF): 250 and 125 TF
    assert_eq!(spark.peak_flops_per_s.rates.fp4, Some(500e12));
    assert_eq!(spark.peak_flops_per_s.rates.bf16, None);
    assert_eq!(spark.peak_flops_per_s.rates.fp8, None);
    let est = spark.estimated_peak_flops_per_s.as_ref().unwrap();
    assert_eq!(
        (est.rates.fp8, est.rates.bf16, est.rates.fp16),
        (Some(250e12), Some(125e12), Some(125e12))
    );
    // a bf16 matmul runs at the estimate, not at the 31 TF FP32 fallback
    assert_eq!(spark.peak(ComputeDtype::Bf16), (125e12, ComputeDtype::Bf16));
    // one pool for CPU and GPU: nothing to offload over; Sparks pair over ConnectX-7 200 GbE
    assert!(spark.host_link.is_none());
    assert_eq!(
        spark
            .scaleup_link
            .as_ref()
            .unwrap()
            .bytes_per_s_per_direction,
        25e9
    );
    assert_eq!(spark.devices_per_node, Some(1));

    let halo = db.get("ryzen-ai-max-395").unwrap();
    assert_eq!(db.get("strix-halo").unwrap().id, "ryzen-ai-max-395");
    // 128 GB LPDDR5X-8000 on 256 bits: 128 GiB, 8000e6 x 32 bytes = 256 GB/s
    assert_eq!(halo.memory.capacity_bytes, 128.0 * GIB);
    assert_eq!(halo.memory.bandwidth_bytes_per_s, 256e9);
    assert_eq!(halo.architecture, "rdna3.5");
    // AMD publishes no GPU FLOP/s: no vendor peak, a third-party estimate only
    // (40 CU x 2.9 GHz x 512 = 59.4 TF fp16)
    assert!(peaks(halo).is_empty(), "{:?}", peaks(halo));
    let est = halo.estimated_peak_flops_per_s.as_ref().unwrap();
    assert_eq!(est.rates.fp16, Some(59.4e12));
    assert!(!est.source.is_empty());
    assert_eq!(halo.peak(ComputeDtype::Bf16), (59.4e12, ComputeDtype::Fp16));
    assert!(halo.host_link.is_none() && halo.scaleup_link.is_none());
    for d in [spark, halo] {
        assert!(
            d.notes.to_ascii_lowercase().contains("gpu-addressable"),
            "{}: notes say what the GPU can address",
            d.id
        );
    }
}

#[test]
fn tpu_v6e_pins_googles_table() {
    let db = HardwareDb::builtin().unwrap();
    let d = db.get("trillium").unwrap();
    assert_eq!(d.id, "tpu-v6e");
    // 918 TFLOPs bf16, 1836 TOPs int8, 32 GB HBM (read as GiB, as v5e), 1638 GBps
    assert_eq!(d.peak_flops_per_s.rates.bf16, Some(918e12));
    assert_eq!(d.peak_flops_per_s.rates.int8, Some(1836e12));
    assert_eq!(d.peak_flops_per_s.rates.fp8, None);
    assert_eq!(d.memory.capacity_bytes, 32.0 * GIB);
    assert_eq!(d.memory.bandwidth_bytes_per_s, 1638e9);
    // ICI 800 GB/s bidirectional per chip = 400 GB/s per direction
    assert_eq!(
        d.scaleup_link.as_ref().unwrap().bytes_per_s_per_direction,
        400e9
    );
}

#[test]
fn h20_pins_the_compiled_figures() {
    let db = HardwareDb::builtin().unwrap();
    let d = db.get("h20").unwrap();
    // 96 GB HBM3 = 96 GiB at 4.0 TB/s; dense BF16 148, FP8 296 (secondary sources; NVIDIA publishes none)
    assert_eq!(d.memory.capacity_bytes, 96.0 * GIB);
    assert_eq!(d.memory.bandwidth_bytes_per_s, 4.0e12);
    assert_eq!(d.peak_flops_per_s.rates.bf16, Some(148e12));
    assert_eq!(d.peak_flops_per_s.rates.fp8, Some(296e12));
    assert_eq!(d.tdp_w, Some(400.0));
    assert_eq!(d.architecture, "hopper");
    // NVLink 4 as the H100: 900 GB/s bidirectional = 450 GB/s per direction
    assert_eq!(
        d.scaleup_link.as_ref().unwrap().bytes_per_s_per_direction,
        450e9
    );
    // a name with 'h200' is not an H20
    assert_ne!(db.get("h200").unwrap().id, "h20");
}

#[test]
fn fp4_peaks_only_on_blackwell_and_cdna4() {
    // FP4 (NVFP4 / MXFP4) tensor rates exist from Blackwell and CDNA4 on; older parts fall back
    let db = HardwareDb::builtin().unwrap();
    for d in db.devices() {
        if let Some(fp4) = d.peak_flops_per_s.rates.fp4 {
            assert!(
                d.architecture == "blackwell" || d.architecture == "cdna4",
                "{}: fp4 on {}",
                d.id,
                d.architecture
            );
            let below = d
                .peak_flops_per_s
                .rates
                .fp8
                .or(d.peak_flops_per_s.rates.bf16)
                .or(d.peak_flops_per_s.rates.fp32)
                .unwrap();
            assert!(fp4 >= below, "{}: fp4 below the next wider rate", d.id);
        }
    }
}

#[test]
fn scale_up_domains_and_the_note_when_devices_span_several() {
    let db = HardwareDb::builtin().unwrap();
    let domain = |id: &str| {
        db.get(id)
            .unwrap()
            .scaleup_link
            .as_ref()
            .and_then(|l| l.domain_devices)
    };
    // HGX boards join 8 GPUs over NVSwitch; GB200 NVL72 one domain of 72
    assert_eq!(domain("h100-sxm"), Some(8));
    assert_eq!(domain("b200"), Some(8));
    assert_eq!(domain("gb200"), Some(72));
    assert_eq!(domain("mi300x"), Some(8));
    let h100 = db.get("h100-sxm").unwrap();
    // 16 / 8 = 2 domains, 17 devices need 3; 72 GB200s are one
    assert_eq!(h100.scaleup_domains(8), 1);
    assert_eq!(h100.scaleup_domains(16), 2);
    assert_eq!(h100.scaleup_domains(17), 3);
    assert_eq!(db.get("gb200").unwrap().scaleup_domains(72), 1);
    // no stated domain (PCIe cards): never more than one
    assert_eq!(db.get("rtx-4090").unwrap().scaleup_domains(64), 1);
    let model = ridgeline::model::ModelDb::builtin()
        .unwrap()
        .resolve("llama-3-70b")
        .unwrap();
    let engine = ridgeline::engine::EngineDb::builtin()
        .unwrap()
        .get("typical")
        .unwrap();
    let note = |gpus| {
        let s = ridgeline::predict::Scenario {
            gpus,
            ..Default::default()
        };
        ridgeline::predict::predict(&model, h100, engine, &s)
            .unwrap()
            .notes
            .iter()
            .any(|n| {
                matches!(
                    n,
                    ridgeline::predict::Note::BeyondScaleUp {
                        gpus: 16,
                        domain: 8,
                        ..
                    }
                )
            })
    };
    assert!(note(16));
    assert!(!note(8));
}

/// A device whose board power per tensor FLOP/s is below its die's reference part's
/// cannot hold the rated clock: its tensor peaks are derated by the cube root of the
/// ratio (dynamic power ~ f V^2, V ~ f).
#[test]
fn board_power_derates_the_tensor_peaks_of_same_die_siblings() {
    let db = HardwareDb::builtin().unwrap();
    let f = |id: &str| db.get(id).unwrap().sustained_tensor_fraction;
    // RTX 6000 Ada: 300 W for 364.0e12 FLOP/s against the RTX 4090's 450 W for its
    // fp16-accumulate 330.3e12: (300 / 364.0) / (450 / 330.3) = 0.824176 / 1.362398
    // = 0.604945, cube root 0.845743
    assert!((f("rtx-6000-ada") - 0.845743).abs() < 1e-6);
    // A100 PCIe against A100 SXM: (300 / 312) / (400 / 312) = 0.75, cube root 0.908560
    // (MAMF measured 252.9 / 271.2 = 0.933 between the two, rows m131-m132)
    assert!((f("a100-80gb-pcie") - 0.908560).abs() < 1e-6);
    // H100 PCIe against H100 SXM: (350 / 756.5) / (700 / 989.5) = 0.5 x 989.5 / 756.5
    // = 0.653999, cube root 0.868012
    assert!((f("h100-pcie") - 0.868012).abs() < 1e-6);
    // the references themselves, and devices without one, run at their rated clock
    for id in [
        "rtx-4090",
        "a100-80gb-sxm",
        "h100-sxm",
        "mi325x",
        "b200",
        "rtx-4080",
    ] {
        assert_eq!(f(id), 1.0, "{id}");
    }
    // the fraction reaches predictions: a compute-bound matmul's rate is peak x it
    let hw = db.get("rtx-6000-ada").unwrap();
    assert_eq!(
        hw.sustained_peak(ComputeDtype::Bf16).0,
        364.0e12 * f("rtx-6000-ada")
    );
    // vector units are left alone
    assert_eq!(
        hw.sustained_peak(ComputeDtype::Fp32).0,
        hw.peak(ComputeDtype::Fp32).0
    );
}

fn device_toml(id: &str, extra: &str) -> String {
    format!(
        "id = \"{id}\"\nname = \"X\"\nvendor = \"V\"\nclass = \"datacenter\"\nsources = [\"http://x\"]\ntdp_w = 225\n{extra}\n[memory]\ntype = \"HBM\"\ncapacity_bytes = 8e10\nbandwidth_bytes_per_s = 2e12\nsource = \"s\"\n[peak_flops_per_s]\nbf16 = 312e12\n"
    )
}

#[test]
fn power_references_resolve_in_user_files_or_are_refused_naming_the_field() {
    let dir = std::env::temp_dir().join(format!("ridgeline-power-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut db = HardwareDb::builtin().unwrap().clone();
    // 225 W for 312e12 against the A100 SXM's 400 W for 312e12: 225 / 400 = 0.5625,
    // cube root 0.825482
    let ok = dir.join("ok.toml");
    std::fs::write(
        &ok,
        device_toml("a100-capped", "power_reference = \"a100-80gb-sxm\""),
    )
    .unwrap();
    let (hw, _) = db.load_file(&ok).unwrap();
    assert!((hw.sustained_tensor_fraction - 0.5625f64.cbrt()).abs() < 1e-15);
    // refused, naming the field, the database unchanged: an unknown reference (with the
    // near ids), and a reference without board power
    for (id, reference, named) in [
        ("typo", "a100-80gb-sx", "a100-80gb-sxm"),
        ("other", "m1-max", "m1-max"),
    ] {
        let path = dir.join(format!("{id}.toml"));
        let line = format!("power_reference = \"{reference}\"");
        std::fs::write(&path, device_toml(id, &line)).unwrap();
        let e = db.load_file(&path).unwrap_err().to_string();
        assert!(e.contains("power_reference") && e.contains(named), "{e}");
        assert!(db.get(id).is_err());
    }
    // overriding the reference re-derives its dependents: an A100 SXM at 450 W makes
    // the 225 W part (225 / 312e12) / (450 / 312e12) = 0.5, cube root 0.793701
    let sxm = HardwareDb::builtin().unwrap().get("a100-80gb-sxm").unwrap();
    let text = toml::to_string(sxm)
        .unwrap()
        .replace("tdp_w = 400.0", "tdp_w = 450.0");
    let text = format!("override = true\n{text}");
    let over = dir.join("sxm.toml");
    std::fs::write(&over, text).unwrap();
    db.load_file(&over).unwrap();
    let capped = db.get("a100-capped").unwrap().sustained_tensor_fraction;
    assert!((capped - 0.5f64.cbrt()).abs() < 1e-15);
    // (300 / 450)^(1/3) for the PCIe card
    let pcie = db.get("a100-80gb-pcie").unwrap().sustained_tensor_fraction;
    assert!((pcie - (300.0f64 / 450.0).cbrt()).abs() < 1e-12);
    std::fs::remove_dir_all(&dir).ok();
}

/// On the pure roofline a compute-bound prefill's compute time scales with 1 / the
/// sustained fraction; memory-bound time does not change. With Hopper's warp-level
/// `mma.sync` share (0.5) below the H100 PCIe's power fraction (0.868), the lower
/// ceiling binds: llama.cpp (no warpgroup MMA) keeps 0.5, an engine with it gets 0.868.
#[test]
fn predictions_run_tensor_matmuls_at_the_sustained_rate() {
    use ridgeline::engine::EngineDb;
    use ridgeline::model::ModelDb;
    use ridgeline::model::graph::Step;
    use ridgeline::predict::{Predictor, Scenario};
    let model = ModelDb::builtin().unwrap().resolve("llama-3-8b").unwrap();
    let engines = EngineDb::builtin().unwrap();
    let ideal = engines.get("ideal").unwrap();
    let db = HardwareDb::builtin().unwrap();
    let capped = db.get("rtx-6000-ada").unwrap();
    let mut rated = capped.clone();
    rated.sustained_tensor_fraction = 1.0;
    let s = Scenario {
        batch: 1,
        prompt: 4096,
        gen_tokens: 1,
        ..Scenario::default()
    };
    let pass = |hw| {
        Predictor::new(&model, hw, ideal, &s)
            .unwrap()
            .pass(&Step::prefill(1, 4096), 0.0)
    };
    let (a, b) = (pass(capped), pass(&rated));
    // by_bound: [compute, memory, communication, overhead]
    let ratio = a.by_bound[0] / b.by_bound[0];
    assert!((ratio - 1.0 / 0.845743).abs() < 1e-5, "{ratio}");
    assert!(
        a.by_bound[0] > 0.8 * a.time_s,
        "{:?} of {}",
        a.by_bound,
        a.time_s
    );
    // the H100 PCIe: min(0.5, 0.868) for llama.cpp, 0.868 for a wgmma engine
    let h = db.get("h100-pcie").unwrap();
    let mut full = h.clone();
    full.sustained_tensor_fraction = 1.0;
    let llama = engines.get("llama.cpp").unwrap();
    let typical = engines.get("typical").unwrap();
    let compute = |hw, e| {
        Predictor::new(&model, hw, e, &s)
            .unwrap()
            .pass(&Step::prefill(1, 4096), 0.0)
            .by_bound[0]
    };
    assert!((compute(h, llama) / compute(&full, llama) - 1.0).abs() < 1e-9);
    let r = compute(h, typical) / compute(&full, typical);
    assert!((r - 1.0 / 0.868012).abs() < 1e-5, "{r}");
}
