//! The embedded hardware database: every contract id present, every number sourced,
//! peaks dense (cross-checked against datasheet values).

use ridgeline::dtype::ComputeDtype;
use ridgeline::hardware::HardwareDb;

const CONTRACT_IDS: [&str; 39] = [
    "a100-40gb-sxm",
    "a100-80gb-sxm",
    "a100-80gb-pcie",
    "h100-sxm",
    "h100-pcie",
    "h100-nvl",
    "h200-sxm",
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
    let bf16 = |id: &str| db.get(id).unwrap().peak_flops_per_s.bf16.unwrap();
    assert_eq!(bf16("h100-sxm"), 989.5e12); // datasheet 1,979* with sparsity
    assert_eq!(bf16("a100-80gb-sxm"), 312e12); // A100 datasheet dense
    assert_eq!(bf16("l4"), 121e12); // datasheet 242* with sparsity
    assert_eq!(bf16("h200-sxm"), 989.5e12);
    assert_eq!(bf16("b200"), 2250e12); // HGX B200 4.5 PF* with sparsity
    assert_eq!(bf16("rtx-4090"), 165.2e12); // Ada WP: fp32-accumulate rate, not 330.3
    assert_eq!(bf16("mi300x"), 1307.4e12);
    let h100 = db.get("h100-sxm").unwrap();
    assert_eq!(h100.memory.bandwidth_bytes_per_s, 3.35e12);
    assert_eq!(h100.peak_flops_per_s.fp8, Some(1979e12));
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
        if let (Some(f8), Some(b16)) = (p.fp8, p.bf16) {
            assert!(f8 >= b16, "{}: fp8 < bf16", d.id);
        }
        if let (Some(b16), Some(f32_)) = (p.bf16, p.fp32) {
            assert!(b16 >= f32_, "{}: bf16 < fp32", d.id);
        }
        if let Some(acc16) = p.fp16_acc16 {
            assert!(acc16 >= p.fp16.unwrap_or(0.0), "{}", d.id);
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
    ] {
        assert!(db.get(id).unwrap().peak_flops_per_s.sparse_halved, "{id}");
    }
}
