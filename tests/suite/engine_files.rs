//! Engine files: per-device overrides by selector, `base` inheritance, the keys of files
//! written before the selectors, and the errors of each (exit 2, one line naming the
//! key).

use ridgeline::engine::{DeviceFactor, Engine, EngineDb, Selector};
use ridgeline::hardware::{DeviceClass, Hardware, HardwareDb};
use std::path::PathBuf;
use std::process::Command;

fn hw(id: &str) -> &'static Hardware {
    HardwareDb::builtin().unwrap().get(id).unwrap()
}

/// `CMD --model llama-3-8b --gpu GPU --engine ENGINE`.
fn llama_3_8b<'a>(cmd: &'a str, gpu: &'a str, engine: &'a str) -> [&'a str; 7] {
    [
        cmd,
        "--model",
        "llama-3-8b",
        "--gpu",
        gpu,
        "--engine",
        engine,
    ]
}

fn builtin(id: &str) -> Engine {
    EngineDb::builtin().unwrap().get(id).unwrap().clone()
}

fn scratch(tag: &str, text: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ridgeline-eng-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    let p = d.join("engines.toml");
    std::fs::write(&p, text).unwrap();
    p
}

/// The built-in database with `text` loaded over it.
fn with_file(tag: &str, text: &str) -> ridgeline::Result<EngineDb> {
    let mut db = EngineDb::builtin().unwrap().clone();
    db.load_file(&scratch(tag, text))?;
    Ok(db)
}

#[test]
fn the_bundled_overrides_select_their_devices() {
    // llama.cpp's Strix Halo and Apple entries apply to that device (its RDNA rows all
    // come from it, so the fit keyed them to its id) and to the M-series, the general
    // factor to everything else; the values are the bundled file's own
    let llama = builtin("llama.cpp");
    let rdna = Selector::device("ryzen-ai-max-395");
    let apple = Selector::class(DeviceClass::Apple);
    assert!(
        llama
            .device_override(&Selector::architecture("rdna"))
            .is_none()
    );
    let r = llama
        .override_value(&rdna, DeviceFactor::ComputeEfficiency)
        .unwrap();
    let a = llama
        .override_value(&apple, DeviceFactor::ComputeEfficiency)
        .unwrap();
    let x = llama
        .override_value(&rdna, DeviceFactor::ExpertOverhead)
        .unwrap();
    assert_ne!(r, llama.speed.compute_efficiency);
    assert_eq!(llama.compute_efficiency_on(hw("ryzen-ai-max-395")), r);
    assert_eq!(llama.compute_efficiency_on(hw("m1-max")), a);
    assert_eq!(
        llama.compute_efficiency_on(hw("h100-sxm")),
        llama.speed.compute_efficiency
    );
    assert_eq!(llama.expert_overhead_on(hw("ryzen-ai-max-395")), x);
    assert_eq!(
        llama.expert_overhead_on(hw("m1-max")),
        llama.overheads.expert_overhead_s
    );
    // typical has an Apple entry and no RDNA one
    let typical = builtin("typical");
    assert!(typical.device_override(&apple).is_some());
    assert!(typical.device_override(&rdna).is_none());
    assert_eq!(
        typical.compute_efficiency_on(hw("ryzen-ai-max-395")),
        typical.speed.compute_efficiency
    );
}

#[test]
fn keys_of_older_files_load_as_the_same_overrides() {
    let old = "[x]\nmemory_efficiency = { default = 0.5 }\ncompute_efficiency = 0.5\n\
               apple_compute_efficiency = 0.8\nrdna_compute_efficiency = 0.4\n\
               rdna_expert_overhead_s = 0.00001\n";
    let new = "[x]\nmemory_efficiency = { default = 0.5 }\ncompute_efficiency = 0.5\n\
               [[x.device]]\nclass = \"apple\"\ncompute_efficiency = 0.8\n\
               [[x.device]]\narchitecture = \"rdna\"\ncompute_efficiency = 0.4\n\
               expert_overhead_s = 0.00001\n";
    let a = EngineDb::from_toml(old, "old").unwrap();
    let b = EngineDb::from_toml(new, "new").unwrap();
    let (a, b) = (a.get("x").unwrap(), b.get("x").unwrap());
    assert!(a.same_factors(b));
    assert_eq!(a.compute_efficiency_on(hw("m2-ultra")), 0.8);
    assert_eq!(a.compute_efficiency_on(hw("ryzen-ai-max-395")), 0.4);
    assert_eq!(a.compute_efficiency_on(hw("a100-80gb-sxm")), 0.5);
    assert_eq!(a.expert_overhead_on(hw("ryzen-ai-max-395")), 1e-5);
    assert_eq!(a.expert_overhead_on(hw("m2-ultra")), 0.0);
    // the JSON form keeps the old keys beside the entries
    let v = serde_json::to_value(a).unwrap();
    assert_eq!(v["apple_compute_efficiency"], 0.8);
    assert_eq!(v["rdna_expert_overhead_s"], 1e-5);
    assert_eq!(v["device"][1]["architecture"], "rdna");
}

#[test]
fn a_base_gives_every_field_the_table_leaves_out() {
    let text = "[my-vllm]\nbase = \"vllm\"\ncompute_efficiency = 0.55\n\
                [my-vllm.memory_efficiency]\nhbm = 0.7\n\
                [[my-vllm.device]]\ndevice = \"m2-ultra\"\ncompute_efficiency = 0.6\n\
                [same]\nbase = \"vllm\"\n";
    let db = with_file("base", text).unwrap();
    let vllm = builtin("vllm");
    let same = db.get("same").unwrap();
    assert!(
        same.same_factors(&vllm),
        "an empty table with a base is its base"
    );
    assert!(
        same.provenance.fitted_on.is_empty(),
        "the rows a profile was fitted on are not inherited"
    );
    // the tags of the factors a table leaves out are its base's, and a derived profile
    // reads its base's measured all-reduce latency where none is measured under its id
    assert_eq!(same.provenance.factors, vllm.provenance.factors);
    let ids = |e: &Engine| e.kernel_ids().map(String::from).collect::<Vec<_>>();
    assert_eq!(ids(same), ["same", "vllm"]);
    assert_eq!(ids(&vllm), ["vllm"]);
    let mine = db.get("my-vllm").unwrap();
    assert_eq!(mine.provenance.base.as_deref(), Some("vllm"));
    assert_eq!(ids(mine), ["my-vllm", "vllm"]);
    let tags = &mine.provenance.factors;
    assert!(vllm.provenance.factors.contains_key("compute_efficiency"));
    assert!(!tags.contains_key("compute_efficiency"), "given: no tag");
    assert!(!tags.contains_key("memory_efficiency.hbm"), "given: no tag");
    assert_eq!(
        tags.get("layer_overhead_s"),
        vllm.provenance.factors.get("layer_overhead_s")
    );
    assert_eq!(mine.speed.compute_efficiency, 0.55);
    assert_eq!(mine.overheads, vllm.overheads);
    assert_eq!(mine.scheduler, vllm.scheduler);
    assert_eq!(mine.footprint, vllm.footprint);
    // memory efficiencies merge key by key
    assert_eq!(mine.speed.memory_efficiency["hbm"], 0.7);
    for (k, v) in &vllm.speed.memory_efficiency {
        if k != "hbm" {
            assert_eq!(mine.speed.memory_efficiency[k], *v, "{k}");
        }
    }
    // the table's own device entry first, then the base's (its Apple entry)
    assert_eq!(mine.compute_efficiency_on(hw("m2-ultra")), 0.6);
    assert_eq!(
        mine.compute_efficiency_on(hw("m1-max")),
        vllm.compute_efficiency_on(hw("m1-max"))
    );
    assert_eq!(mine.compute_efficiency_on(hw("h100-sxm")), 0.55);
    // and it predicts: the CLI reads it by id
    let p = scratch("base-cli", text);
    let out = Command::new(env!("CARGO_BIN_EXE_ridgeline"))
        .args([
            "--engine-file",
            p.to_str().unwrap(),
            "predict",
            "--model",
            "llama-3-8b",
        ])
        .args(["--gpu", "h100-sxm", "--engine", "my-vllm", "--json"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_base_within_the_file_resolves_in_any_order() {
    // b is written before the a it inherits from; c inherits from b
    let text = "[b]\nbase = \"a\"\nlayer_overhead_s = 0.0002\n\
                [a]\nmemory_efficiency = { default = 0.5 }\ncompute_efficiency = 0.4\n\
                [c]\nbase = \"b\"\ncompute_efficiency = 0.3\n";
    let db = EngineDb::from_toml(text, "t").unwrap();
    let c = db.get("c").unwrap();
    // through the chain c -> b -> a, the measured kernels are c's own, else a's
    assert_eq!(c.kernel_ids().collect::<Vec<_>>(), ["c", "a"]);
    assert_eq!(db.get("a").unwrap().kernel_ids().collect::<Vec<_>>(), ["a"]);
    assert_eq!(c.speed.compute_efficiency, 0.3);
    assert_eq!(c.overheads.layer_overhead_s, 0.0002);
    assert_eq!(c.speed.memory_efficiency["default"], 0.5);
}

fn error_of(text: &str) -> String {
    match EngineDb::from_toml(text, "f.toml") {
        Ok(_) => panic!("accepted: {text}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn malformed_overrides_and_bases_name_the_key() {
    let head = "[x]\nmemory_efficiency = { default = 0.5 }\ncompute_efficiency = 0.5\n";
    for (tail, needles) in [
        (
            "[[x.device]]\ncompute_efficiency = 0.4\n",
            &["device[0]", "selects no device"][..],
        ),
        (
            "[[x.device]]\nclass = \"gpu\"\ncompute_efficiency = 0.4\n",
            &["device[0]", "class 'gpu'", "apple"],
        ),
        (
            "[[x.device]]\nmemory = \"ddr5\"\ncompute_efficiency = 0.4\n",
            &["memory 'ddr5'", "lpddr"],
        ),
        (
            "[[x.device]]\nclass = \"apple\"\n",
            &["device[0] (class = \"apple\")", "sets no factor"],
        ),
        (
            "[[x.device]]\nclass = \"apple\"\ncompute_efficiency = 1.5\n",
            &[
                "device[0] (class = \"apple\").compute_efficiency",
                "[0.001, 1]",
            ],
        ),
        (
            "[[x.device]]\nclass = \"apple\"\ncompute_efficiency = 0.4\n\
             [[x.device]]\nclass = \"apple\"\nexpert_overhead_s = 0.0\n",
            &["device[1]", "same devices"],
        ),
        (
            "[[x.device]]\nclass = \"apple\"\nflops = 1\n",
            &["unknown field `flops`"],
        ),
        (
            "apple_compute_efficiency = 0\n",
            &["apple_compute_efficiency", "[0.001, 1]"],
        ),
    ] {
        let e = error_of(&format!("{head}{tail}"));
        for n in needles {
            assert!(e.contains(n), "{e} lacks {n}");
        }
    }
    let e = error_of("[x]\nbase = \"vllm\"\n[vllm]\nbase = \"x\"\n");
    assert!(e.contains("inherits from itself"), "{e}");
    let e = error_of("[x]\nbase = \"x\"\n");
    assert!(e.contains("base = \"x\" inherits from itself"), "{e}");
    let e = error_of(
        "[x]\nbase = \"vlm\"\n[vllm2]\nmemory_efficiency = { default = 0.5 }\ncompute_efficiency = 0.5\n",
    );
    assert!(
        e.contains("base = \"vlm\" is no engine") && e.contains("vllm2"),
        "{e}"
    );
    let e = error_of("[x]\ncompute_efficiency = 0.5\n");
    assert!(
        e.contains("engine 'x': missing field `memory_efficiency`"),
        "{e}"
    );
    // an unknown base on the command line: exit 2, one line, the near match
    let p = scratch("bad-base", "[mine]\nbase = \"vlm\"\n");
    let out = Command::new(env!("CARGO_BIN_EXE_ridgeline"))
        .args([
            "--engine-file",
            p.to_str().unwrap(),
            "predict",
            "--model",
            "llama-3-8b",
        ])
        .args(["--gpu", "h100-sxm"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("did you mean vllm"), "{err}");
}

/// Each fitted factor carries its tag from data/engines.toml into `predict --json`'s
/// `factors` and into `explain`; a tag that is not one of the two sentences is an error
/// naming `factors.KEY`; `ideal` has nothing but physics.
#[test]
fn factor_tags_travel_from_the_file_to_predict_and_explain() {
    use crate::support::cli::{json, ok, one_line_error, run};
    use ridgeline::engine::FactorTag;
    // the bundled file's own line for trt-llm's HBM efficiency
    let trt = builtin("trt-llm");
    let tag = &trt.provenance.factors["memory_efficiency.hbm"];
    let FactorTag::Fitted {
        rows,
        devices,
        publications,
        ..
    } = tag
    else {
        panic!("{tag}")
    };
    let text = include_str!("../../data/engines.toml");
    assert!(text.contains(&format!("\"memory_efficiency.hbm\" = \"{tag}\"")));
    let words = llama_3_8b;
    // the plain profiles' tags (`--kernels none`; by default a device a kernel table
    // covers takes the profile refitted on the tables, whose tags are its own)
    let factors = |gpu, engine| {
        let v = json(
            &[
                &words("predict", gpu, engine)[..],
                &["--json", "--kernels", "none"],
            ]
            .concat(),
        );
        v["factors"].as_array().unwrap().clone()
    };
    let explain = |gpu, engine| ok(&words("explain", gpu, engine));
    let f = factors("h100", "trt-llm");
    let hbm = f
        .iter()
        .find(|x| x["name"] == "memory_efficiency.hbm")
        .unwrap();
    assert_eq!(hbm["source"], "fitted");
    assert_eq!(hbm["rows"].as_u64(), Some(*rows as u64));
    assert_eq!(hbm["devices"].as_u64(), Some(*devices as u64));
    assert_eq!(hbm["publications"].as_u64(), Some(*publications as u64));
    assert_eq!(
        hbm["value"].as_f64(),
        Some(trt.memory_efficiency(hw("h100-sxm")))
    );
    // by default the H100's table is read, and so are the tags of trt-llm refitted on it
    let on_tables = EngineDb::builtin().unwrap().on_tables("trt-llm").unwrap();
    let v = json(&[&words("predict", "h100", "trt-llm")[..], &["--json"]].concat());
    let step = v["factors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["name"] == "step_overhead_s")
        .unwrap()
        .clone();
    assert_eq!(
        step["value"].as_f64(),
        Some(on_tables.overheads.step_overhead_s)
    );
    assert_eq!(
        step["rows"].as_u64().map(|r| r as usize),
        Some(on_tables.provenance.fitted_on.len())
    );
    // on an Apple GPU llama.cpp's matmuls are priced by its Apple override
    assert!(
        factors("m2-ultra", "llama.cpp")
            .iter()
            .any(|x| x["name"] == "apple_compute_efficiency")
    );
    // llama.cpp's RDNA rows all come from one device (Strix Halo): its factors are keyed
    // to that device, not to the family, and explain names them so
    let e = explain("ryzen-ai-max-395", "llama.cpp");
    let line = e.lines().find(|l| l.contains("[factors]")).unwrap();
    assert!(
        line.contains("compute_efficiency (device = \"ryzen-ai-max-395\")")
            && line.contains("from 1 device"),
        "{line}"
    );
    assert!(!line.contains("rdna_"), "{line}");
    // another RDNA device (the same file under another id) takes the general factors
    let lcpp = builtin("llama.cpp");
    let strix = hw("ryzen-ai-max-395");
    let other = ridgeline::hardware::Hardware {
        id: "another-rdna".into(),
        ..strix.clone()
    };
    assert!(other.architecture.starts_with("rdna"));
    assert!(lcpp.compute_efficiency_on(strix) < lcpp.speed.compute_efficiency);
    assert_eq!(
        lcpp.compute_efficiency_on(&other),
        lcpp.speed.compute_efficiency
    );
    // ideal: every factor is physics, and explain has no factors finding
    assert!(
        factors("h100", "ideal")
            .iter()
            .all(|x| x["source"] == "physics")
    );
    assert!(!explain("h100", "ideal").contains("[factors]"));
    // a malformed tag
    let p = scratch(
        "badtag",
        "[mine]\nbase = \"typical\"\n\n[mine.factors]\ncompute_efficiency = \"fitted on many rows\"\n",
    );
    let out = run(&[
        "predict",
        "--model",
        "llama-3-8b",
        "--gpu",
        "h100",
        "--engine",
        "mine",
        "--engine-file",
        p.to_str().unwrap(),
    ]);
    one_line_error(&out, &["factors.compute_efficiency", "fitted on N rows"]);
}

/// A factor whose rows are all from one device names it in its tag; on another device
/// `explain` calls it an assumption there, and `predict --json` carries the device.
/// The first of `predict --json`'s `factors` whose name `pick` accepts, for Llama 3 8B on
/// `gpu` under vllm-rocm.
fn rocm_factor(gpu: &str, pick: impl Fn(&str) -> bool) -> serde_json::Value {
    let v = crate::support::cli::json(
        &[&llama_3_8b("predict", gpu, "vllm-rocm")[..], &["--json"]].concat(),
    );
    v["factors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| pick(f["name"].as_str().unwrap()))
        .unwrap()
        .clone()
}

#[test]
fn a_factor_fitted_on_one_device_names_it() {
    use crate::support::cli::ok;
    use ridgeline::engine::FactorTag;
    // vllm-rocm's rows are all MI300X's (data/engines.toml)
    let rocm = builtin("vllm-rocm");
    let tag = &rocm.provenance.factors["compute_efficiency"];
    assert!(
        matches!(tag, FactorTag::Fitted { devices: 1, device: Some(d), .. } if d == "mi300x"),
        "{tag}"
    );
    assert!(
        tag.to_string().contains("from 1 device (mi300x) in"),
        "{tag}"
    );
    assert_eq!(tag.to_string().parse::<FactorTag>().as_ref(), Ok(tag));
    // several devices are counted, not named; a name needs exactly one device
    let many = "fitted on 9 rows from 3 devices in 2 publications";
    assert!(matches!(
        many.parse::<FactorTag>(),
        Ok(FactorTag::Fitted { device: None, .. })
    ));
    for bad in [
        "fitted on 9 rows from 3 devices (mi300x) in 2 publications",
        "fitted on 9 rows from 1 device () in 2 publications",
        "fitted on 9 rows from 1 device mi300x in 2 publications",
    ] {
        assert!(bad.parse::<FactorTag>().is_err(), "{bad}");
    }
    let factor = |gpu: &str| rocm_factor(gpu, |name| name == "compute_efficiency");
    assert_eq!(factor("mi325x")["device"], "mi300x");
    let line = |gpu: &str| {
        let e = ok(&llama_3_8b("explain", gpu, "vllm-rocm"));
        e.lines()
            .find(|l| l.contains("[factors]"))
            .unwrap()
            .to_string()
    };
    let other = line("mi325x");
    assert!(
        other.contains("compute_efficiency")
            && other.contains("from 1 device (mi300x) in")
            && other.contains("publications: on mi325x an assumption"),
        "{other}"
    );
    assert!(!line("mi300x").contains("an assumption"));
}

#[test]
fn a_cuda_profile_on_an_amd_device_names_its_rocm_profile() {
    use crate::support::cli::json;
    let notes = |gpu: &str, engine: &str| {
        let v = json(&[&llama_3_8b("predict", gpu, engine)[..], &["--json"]].concat());
        v["notes"].as_array().unwrap().clone()
    };
    let names = |gpu, engine, profile: &str| {
        notes(gpu, engine)
            .iter()
            .any(|n| n.as_str().unwrap().contains(&format!("--engine {profile}")))
    };
    // vLLM and SGLang on an MI300X: their CUDA factors, and a note naming the ROCm ones
    assert!(names("mi300x", "sglang", "sglang-rocm"));
    assert!(names("mi300x", "vllm", "vllm-rocm"));
    // the ROCm profiles themselves, the CUDA ones on NVIDIA, and engines with one
    // profile everywhere say nothing of it
    for (gpu, engine) in [
        ("mi300x", "sglang-rocm"),
        ("mi300x", "vllm-rocm"),
        ("h100", "sglang"),
        ("mi300x", "llama.cpp"),
        ("mi300x", "typical"),
    ] {
        assert!(
            !notes(gpu, engine)
                .iter()
                .any(|n| n.as_str().unwrap().contains("--engine")),
            "{gpu} {engine}"
        );
    }
    // explain says it beside the factors it priced the prediction with
    let e = crate::support::cli::ok(&llama_3_8b("explain", "mi300x", "sglang"));
    let line = e.lines().find(|l| l.contains("[factors]")).unwrap();
    assert!(line.contains("`--engine sglang-rocm`"), "{line}");
    // and the ROCm profile is what the note says: fitted on the MI300X rows
    let rocm = builtin("sglang-rocm");
    assert!(rocm.provenance.fitted_on.iter().any(|id| id == "m726"));
    assert!(
        !builtin("sglang")
            .provenance
            .fitted_on
            .iter()
            .any(|id| id == "m726")
    );
}

#[test]
fn a_memory_group_fitted_on_one_device_is_keyed_to_it() {
    use ridgeline::engine::FactorTag;
    // vllm-rocm's HBM rows are all MI300X's (data/engines.toml): the fit keyed that
    // group's efficiency to the MI300X, and the hbm key holds what typical's carries
    // over (typical's times the engine's ratio to it, here the same value)
    let rocm = builtin("vllm-rocm");
    let v = rocm
        .override_value(&Selector::device("mi300x"), DeviceFactor::MemoryEfficiency)
        .unwrap();
    assert_eq!(rocm.memory_efficiency(hw("mi300x")), v);
    let tags = &rocm.provenance.factors;
    assert!(
        matches!(
            &tags["memory_efficiency (device = \"mi300x\")"],
            FactorTag::Fitted { devices: 1, device: Some(d), .. } if d == "mi300x"
        ),
        "{tags:?}"
    );
    assert!(matches!(
        tags["memory_efficiency.hbm"],
        FactorTag::Carried { .. }
    ));
    // predict names the override on the MI300X and the group's key on the MI325X
    let name = |gpu: &str| rocm_factor(gpu, |n| n.starts_with("memory_efficiency"))["name"].clone();
    assert_eq!(name("mi300x"), "memory_efficiency (device = \"mi300x\")");
    assert_eq!(name("mi325x"), "memory_efficiency.hbm");
    // a file may set one: it applies before the memory keys, on its devices only
    let text = "[mine]\nbase = \"typical\"\n[[mine.device]]\ndevice = \"h100-sxm\"\n\
                memory_efficiency = 0.5\n";
    let db = with_file("memdev", text).unwrap();
    let mine = db.get("mine").unwrap();
    let typical = builtin("typical");
    assert_eq!(mine.memory_efficiency(hw("h100-sxm")), 0.5);
    assert_eq!(
        mine.memory_efficiency(hw("h200-sxm")),
        typical.memory_efficiency(hw("h200-sxm"))
    );
    // out of range, it is named
    let e = error_of(
        "[x]\nmemory_efficiency = { default = 0.5 }\ncompute_efficiency = 0.5\n\
         [[x.device]]\ndevice = \"h100-sxm\"\nmemory_efficiency = 1.5\n",
    );
    assert!(
        e.contains("device[0]") && e.contains("memory_efficiency"),
        "{e}"
    );
}

#[test]
fn taking_a_device_factor_clears_it_and_drops_emptied_entries() {
    // llama.cpp's Strix Halo entry sets compute_efficiency and expert_overhead_s, its
    // Apple entry compute_efficiency and gemv_compute_efficiency: taking
    // compute_efficiency returns both and keeps both entries for their other factor;
    // taking gemv_compute_efficiency then drops the emptied Apple entry
    let mut e = builtin("llama.cpp");
    let rdna = Selector::device("ryzen-ai-max-395");
    let apple = Selector::class(DeviceClass::Apple);
    let (r, a) = (
        e.override_value(&rdna, DeviceFactor::ComputeEfficiency),
        e.override_value(&apple, DeviceFactor::ComputeEfficiency),
    );
    let mut taken = e.take_device_factor(DeviceFactor::ComputeEfficiency);
    taken.sort_by(|x, y| x.1.total_cmp(&y.1));
    let mut want = vec![(rdna.clone(), r.unwrap()), (apple.clone(), a.unwrap())];
    want.sort_by(|x, y| x.1.total_cmp(&y.1));
    assert_eq!(taken, want);
    let gemv = e.override_value(&apple, DeviceFactor::GemvEfficiency);
    assert!(gemv.is_some());
    assert_eq!(
        e.take_device_factor(DeviceFactor::GemvEfficiency),
        vec![(apple.clone(), gemv.unwrap())]
    );
    assert!(e.device_override(&apple).is_none());
    let kept = e.device_override(&rdna).unwrap();
    assert_eq!(kept.compute_efficiency, None);
    assert!(kept.expert_overhead_s.is_some());
    // nothing left to take
    assert!(
        e.take_device_factor(DeviceFactor::ComputeEfficiency)
            .is_empty()
    );
}

#[test]
fn a_derived_profile_reads_its_own_measured_all_reduce_else_its_bases() {
    // four H100s all-reduce within their NVLink domain: the latency measured under the
    // engine's id (data/kernels/all-reduce-latency.toml) where there is one, else under
    // the root of its bases; a profile whose bases measured none pays its
    // collective_latency_s
    let text = "[my-vllm]\nbase = \"vllm\"\n\
                [trt-llm]\nbase = \"typical\"\noverride = true\n\
                [plain]\nbase = \"typical\"\n";
    let p = scratch("all-reduce", text);
    let factor = |engine: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_ridgeline"))
            .args(["--engine-file", p.to_str().unwrap(), "predict", "--model"])
            .args(["llama-3-8b", "--gpu", "h100-sxm", "--gpus", "4", "--json"])
            .args(["--engine", engine])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{engine}");
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let f = v["factors"].as_array().unwrap().iter();
        f.filter(|f| f["name"] == "all_reduce_latency_s")
            .map(|f| {
                (
                    f["value"].as_f64().unwrap(),
                    f["tag"].as_str().unwrap().to_string(),
                )
            })
            .next()
    };
    let (vllm, tag) = factor("vllm").expect("vllm's all-reduce is measured on the H100");
    assert!(tag.contains("vllm's all-reduce of 4 devices"), "{tag}");
    let (mine, tag) = factor("my-vllm").expect("a derived profile reads its base's");
    assert!(tag.contains("vllm's all-reduce of 4 devices"), "{tag}");
    assert_eq!(mine, vllm);
    // trt-llm replaced with typical's factors is still trt-llm: its own measurement
    let (_, tag) = factor("trt-llm").expect("measured under its own id");
    assert!(tag.contains("trt-llm's all-reduce"), "{tag}");
    assert!(factor("plain").is_none(), "typical measured none");
    std::fs::remove_dir_all(p.parent().unwrap()).unwrap();
}
