//! From the free text of a measurement row to ridgeline's ids: device names
//! (`RTX 3090 24GB` -> `rtx-3090`), model names (`LLaMA-7B (arch)` -> `llama-7b`),
//! precisions (`Q4_K_M/f16` -> weights q4_k_m, KV fp16) and frameworks (`TensorRT-LLM
//! v0.6.1` -> `trt-llm`). A name that cannot be mapped gives a reason, never a guess.

use crate::dtype::Format;
use crate::hardware::{Hardware, HardwareDb};
use crate::model::ModelDb;

/// A device name mapped to the database.
#[derive(Debug, Clone, PartialEq)]
pub struct GpuMatch {
    /// Hardware id.
    pub id: String,
    /// Fraction of the database device that was measured (0.5 for one GCD of a
    /// two-die MI250X package; 1 otherwise).
    pub share: f64,
    /// What was assumed, if anything (variant not stated, power cap, ...).
    pub note: Option<String>,
}

fn squash(s: &str) -> String {
    s.to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { ' ' })
        .collect::<String>()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// Maps a device name as publications write it to a hardware id.
///
/// Exact ids and aliases resolve first; otherwise the device family and variant are read
/// from the words (`H100 PCIe 80GB` -> `h100-pcie`; an A100 whose variant is not stated
/// is taken as the 80 GB SXM part and says so in [`GpuMatch::note`]).
///
/// ```
/// use ridgeline::calibrate::map_gpu;
/// use ridgeline::hardware::HardwareDb;
/// let db = HardwareDb::builtin().unwrap();
/// assert_eq!(map_gpu("RTX 3090 24GB", db).unwrap().id, "rtx-3090");
/// assert_eq!(map_gpu("A100 80GB", db).unwrap().id, "a100-80gb-sxm");
/// assert_eq!(map_gpu("H100 SXM5", db).unwrap().id, "h100-sxm");
/// assert!(map_gpu("Tesla P40 24GB", db).is_err());
/// ```
pub fn map_gpu(name: &str, db: &HardwareDb) -> std::result::Result<GpuMatch, String> {
    let exact = |id: &str| GpuMatch {
        id: id.to_string(),
        share: 1.0,
        note: None,
    };
    // an id as such; aliases only after the family rules, which note what a short
    // name leaves open ("A100 80GB": SXM or PCIe?)
    if let Some(hw) = db
        .devices()
        .iter()
        .find(|d| d.id.eq_ignore_ascii_case(name.trim()))
    {
        return Ok(exact(&hw.id));
    }
    let slug = squash(name).replace(' ', "-");
    let s = format!(" {} ", squash(name));
    let has = |w: &str| s.contains(&format!(" {w} "));
    let sub = |w: &str| s.contains(w);
    let watts = s.split_whitespace().any(|w| {
        w.strip_suffix('w')
            .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
    });
    let capped = has("cap") && watts;
    let mut note = Vec::new();
    if capped {
        note.push("power-capped device: runs below the datasheet clocks".to_string());
    }
    let id: &str = if sub("gh200") {
        return Err(format!(
            "'{name}': GH200 is not in the hardware database (h200-sxm has the HBM3e but not the Grace host)"
        ));
    } else if sub("p40") {
        return Err(format!(
            "'{name}': Tesla P40 is not in the hardware database"
        ));
    } else if sub("h200") {
        "h200-sxm"
    } else if sub("h100") {
        if has("96gb") || sub("hbm2e") {
            return Err(format!(
                "'{name}': the 96 GB HBM2e H100 variant is not in the hardware database (h100-sxm is the 80 GB HBM3 part)"
            ));
        } else if has("pcie") {
            "h100-pcie"
        } else if has("nvl") {
            "h100-nvl"
        } else {
            if !has("sxm") && !has("sxm5") {
                note.push("H100 variant not stated: the SXM part is assumed".into());
            }
            "h100-sxm"
        }
    } else if sub("a100") {
        if has("40gb") {
            "a100-40gb-sxm"
        } else if has("pcie") {
            "a100-80gb-pcie"
        } else {
            if !(has("sxm") || has("sxm4")) {
                note.push("A100 variant not stated: the 80 GB SXM part is assumed".into());
            }
            "a100-80gb-sxm"
        }
    } else if sub("v100") {
        if has("pcie") {
            "v100-pcie-16gb"
        } else {
            "v100-sxm2-32gb"
        }
    } else if sub("mi300x") {
        "mi300x"
    } else if sub("mi325x") {
        "mi325x"
    } else if sub("mi210") {
        "mi210"
    } else if sub("mi250x") {
        if has("gcd") && (has("1") || has("one")) {
            let hw_id = "mi250x";
            return Ok(GpuMatch {
                id: hw_id.into(),
                share: 0.5,
                note: Some("one GCD = half of the two-die MI250X package".into()),
            });
        }
        "mi250x"
    } else if sub("l40s") {
        "l40s"
    } else if has("l40") {
        "l40"
    } else if has("l4") {
        "l4"
    } else if has("a10g") {
        "a10g"
    } else if has("a10") {
        "a10"
    } else if has("a40") {
        "a40"
    } else if has("t4") {
        "t4"
    } else if sub("3090") && (has("ti") || sub("3090ti")) {
        "rtx-3090-ti"
    } else if sub("3090") {
        "rtx-3090"
    } else if sub("3060") {
        "rtx-3060-12gb"
    } else if sub("4080") {
        "rtx-4080"
    } else if sub("4090") {
        "rtx-4090"
    } else if sub("5090") {
        "rtx-5090"
    } else if has("a6000") {
        "rtx-a6000"
    } else if sub("6000 ada") {
        "rtx-6000-ada"
    } else if has("b200") {
        "b200"
    } else if has("gb200") {
        "gb200"
    } else if let Some(chip) = ["m1", "m2", "m3", "m4"].iter().find(|c| has(c)) {
        let tier = if has("ultra") {
            "ultra"
        } else if has("max") {
            "max"
        } else {
            return Err(format!(
                "'{name}': only Max/Ultra Apple chips are in the database"
            ));
        };
        let id = format!("{chip}-{tier}");
        return match db.get(&id) {
            Ok(hw) => Ok(GpuMatch {
                id: hw.id.clone(),
                share: 1.0,
                note: None,
            }),
            Err(_) => Err(format!("'{name}': {id} is not in the hardware database")),
        };
    } else if let Ok(hw) = db.get(name).or_else(|_| db.get(&slug)) {
        return Ok(exact(&hw.id));
    } else {
        let near = crate::error::closest(name, db.ids(), 3);
        return Err(format!(
            "'{name}': no device of that name in the hardware database (closest ids: {})",
            near.join(", ")
        ));
    };
    let hw = db
        .get(id)
        .map_err(|e| format!("'{name}' read as '{id}': {e}"))?;
    Ok(GpuMatch {
        id: hw.id.clone(),
        share: 1.0,
        note: (!note.is_empty()).then(|| note.join("; ")),
    })
}

/// A copy of `hw` scaled to `share` of the device (memory, bandwidth and peaks), with
/// its id suffixed (`mi250x-gcd`): one die of a multi-die package.
pub fn partial_device(hw: &Hardware, share: f64) -> Hardware {
    if share == 1.0 {
        return hw.clone();
    }
    let mut d = hw.clone();
    d.id = format!("{}-gcd", hw.id);
    d.name = format!("{} (one die, {share} of the package)", hw.name);
    d.memory.capacity_bytes *= share;
    d.memory.bandwidth_bytes_per_s *= share;
    d.memory.l2_bytes = d.memory.l2_bytes.map(|b| b * share);
    let scale = |p: &mut crate::hardware::Peaks| {
        for v in [
            &mut p.fp64,
            &mut p.fp32,
            &mut p.tf32,
            &mut p.fp16,
            &mut p.bf16,
            &mut p.fp8,
            &mut p.int8,
            &mut p.int4,
            &mut p.fp4,
            &mut p.fp16_acc16,
        ] {
            *v = v.map(|x| x * share);
        }
    };
    scale(&mut d.peak_flops_per_s);
    if let Some(e) = d.estimated_peak_flops_per_s.as_mut() {
        scale(e);
    }
    d.tdp_w = d.tdp_w.map(|w| w * share);
    d
}

/// Maps a model name as publications write it (`Llama-3-8B`, `LLaMA-7B (arch)`,
/// `GPT-3 175B`) to a bundled model id.
///
/// ```
/// use ridgeline::calibrate::map_model;
/// use ridgeline::model::ModelDb;
/// let db = ModelDb::builtin().unwrap();
/// assert_eq!(map_model("LLaMA-7B (arch)", db).unwrap(), "llama-7b");
/// assert_eq!(map_model("Qwen2.5-Coder-3B", db).unwrap(), "qwen2.5-coder-3b");
/// assert!(map_model("LLaMA-65B", db).is_err());
/// ```
pub fn map_model(name: &str, db: &ModelDb) -> std::result::Result<String, String> {
    let ids: Vec<&str> = db.models().iter().map(|m| m.id.as_str()).collect();
    let mut base = name.to_ascii_lowercase();
    if let Some(i) = base.find('(') {
        base.truncate(i);
    }
    let base = base.trim().replace([' ', '_'], "-");
    let mut candidates = vec![base.clone()];
    candidates.push(base.replace("gpt-3", "gpt3"));
    candidates.push(base.replace("-style", ""));
    for c in &candidates {
        if let Some(id) = ids.iter().find(|id| *id == c) {
            return Ok(id.to_string());
        }
    }
    if name.trim_start().starts_with('(') {
        return Err(format!("'{name}' is not a model"));
    }
    Err(format!(
        "model '{name}' is not bundled (closest: {})",
        crate::error::closest(&base, ids, 3).join(", ")
    ))
}

fn one_format(part: &str) -> std::result::Result<Option<Format>, String> {
    let mut p = part.trim().to_ascii_lowercase();
    // "(fp8 kv likely)" -> "fp8 kv likely"; "q4f16_1 (4-bit)" -> "q4f16_1"
    if p.starts_with('(') && p.ends_with(')') {
        p = p[1..p.len() - 1].to_string();
    } else if let Some(i) = p.find('(') {
        p.truncate(i);
    }
    let p = p.trim();
    if p.is_empty() || p.starts_with("not stated") || p == "n/a" {
        return Ok(None);
    }
    let words: Vec<&str> = p.split_whitespace().collect();
    // EXL2 N bpw / N bpw
    if let Some(i) = words.iter().position(|w| *w == "bpw")
        && i > 0
        && let Ok(b) = words[i - 1].parse::<f64>()
    {
        return Format::parse(&format!("bpw:{b}"))
            .map(Some)
            .map_err(|e| e.to_string());
    }
    // MLC q4f16_N: 4-bit weights with an fp16 scale per group of 32 = 4.5 bits
    if words[0].starts_with("q4f16") || words[0].starts_with("q4f32") {
        return Ok(Some(Format::Bpw(4.5)));
    }
    if words[0].starts_with("q3f16") {
        return Ok(Some(Format::Bpw(3.5)));
    }
    // int4 gN (gpt-fast): 4-bit weights + a 16-bit scale and a 16-bit zero per N weights
    if words[0] == "int4"
        && let Some(g) = words.get(1).and_then(|w| w.strip_prefix('g'))
        && let Ok(g) = g.parse::<f64>()
        && g >= 1.0
    {
        return Ok(Some(Format::Bpw(4.0 + 32.0 / g)));
    }
    let first = words[0].trim_end_matches([',', ';']);
    Format::parse(first)
        .map(Some)
        .map_err(|e| format!("precision '{part}': {e}"))
}

/// Maps a precision column (`weights/kv`, e.g. `Q4_K_M/f16`, `fp8/(fp8 kv likely)`,
/// `EXL2 4.0 bpw/fp16`, `bf16`) to (weight format, KV format); `None` means the
/// model's native dtype (weights) or the activation dtype (KV).
///
/// ```
/// use ridgeline::calibrate::map_precision;
/// use ridgeline::dtype::Format;
/// assert_eq!(map_precision("Q4_K_M/f16").unwrap(), (Some(Format::Q4KM), Some(Format::Fp16)));
/// assert_eq!(map_precision("EXL2 2.5 bpw/fp16").unwrap().0, Some(Format::Bpw(2.5)));
/// assert_eq!(map_precision("fp8/(not stated)").unwrap(), (Some(Format::Fp8), None));
/// ```
pub fn map_precision(s: &str) -> std::result::Result<(Option<Format>, Option<Format>), String> {
    let t = s.trim().to_ascii_lowercase();
    if t.is_empty() || t == "n/a" || t == "na" || t == "-" {
        return Ok((None, None));
    }
    // split on the '/' that is not inside parentheses
    let mut depth = 0i32;
    let mut split = None;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            '/' if depth == 0 && split.is_none() => split = Some(i),
            _ => {}
        }
    }
    let (w, kv) = match split {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    let weights = one_format(w)?;
    let kv = match kv {
        Some(k) => one_format(k)?,
        None => None,
    };
    Ok((weights, kv))
}

/// The engine ids ridgeline knows.
pub const ENGINE_IDS: [&str; 11] = [
    "ideal",
    "typical",
    "llama.cpp",
    "vllm",
    "trt-llm",
    "sglang",
    "gpt-fast",
    "lmdeploy",
    "mlc",
    "exllamav2",
    "hf",
];

/// Maps a framework column (`TensorRT-LLM v0.6.1`, `LMDeploy (TurboMind)`, `LitGPT
/// generate (eager PyTorch)`) to an engine id; `None` when no engine matches.
///
/// ```
/// use ridgeline::calibrate::map_framework;
/// assert_eq!(map_framework("llama.cpp (Metal)"), Some("llama.cpp"));
/// assert_eq!(map_framework("TensorRT-LLM ~1.0"), Some("trt-llm"));
/// assert_eq!(map_framework("Megatron-LM (PTD-P)"), None);
/// ```
pub fn map_framework(s: &str) -> Option<&'static str> {
    let l = s.to_ascii_lowercase();
    let has = |w: &str| l.contains(w);
    Some(
        if has("llama.cpp") || has("llama-cpp") || has("llamacpp") || has("ggml") {
            "llama.cpp"
        } else if has("tensorrt") || has("trt-llm") || has("trtllm") {
            "trt-llm"
        } else if has("vllm") {
            "vllm"
        } else if has("sglang") {
            "sglang"
        } else if has("gpt-fast") || has("gpt fast") {
            "gpt-fast"
        } else if has("lmdeploy") || has("turbomind") {
            "lmdeploy"
        } else if has("mlc") {
            "mlc"
        } else if has("exllama") {
            "exllamav2"
        } else if has("eager") || has("transformers") || l.trim() == "hf" || has("hugging") {
            "hf"
        } else {
            ENGINE_IDS.iter().find(|id| l.trim() == **id)?
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_gpu_name_in_the_bundled_file_maps_or_says_why() {
        let db = HardwareDb::builtin().unwrap();
        let cases = [
            ("RTX 3090 24GB", "rtx-3090"),
            ("RTX 3090 Ti 24GB", "rtx-3090-ti"),
            ("A100 80GB PCIe", "a100-80gb-pcie"),
            ("A100 80GB SXM", "a100-80gb-sxm"),
            ("H100 PCIe 80GB", "h100-pcie"),
            ("L40S 48GB", "l40s"),
            ("L40 48GB", "l40"),
            ("Apple M2 Ultra 76-core GPU 192GB", "m2-ultra"),
            ("Apple M1 Max 32-core GPU 64GB", "m1-max"),
            ("Tesla V100-PCIE-16GB", "v100-pcie-16gb"),
            ("RTX 4090 24GB", "rtx-4090"),
            ("A100 80GB (SXM, 330W cap)", "a100-80gb-sxm"),
            ("AMD MI250X (1 GCD)", "mi250x"),
            ("A100 (size/variant not stated)", "a100-80gb-sxm"),
            ("A10G 24GB", "a10g"),
            ("A100-SXM4-40GB", "a100-40gb-sxm"),
            ("AMD MI300X", "mi300x"),
            ("H100 SXM 80GB", "h100-sxm"),
            ("H100 SXM5 80GB", "h100-sxm"),
            ("H200 SXM 141GB", "h200-sxm"),
            ("A100 40GB", "a100-40gb-sxm"),
            ("AMD MI210", "mi210"),
            ("A40 48GB", "a40"),
            ("h100", "h100-sxm"),
        ];
        for (name, id) in cases {
            assert_eq!(
                map_gpu(name, db).map(|m| m.id),
                Ok(id.to_string()),
                "{name}"
            );
        }
        assert_eq!(map_gpu("AMD MI250X (1 GCD)", db).unwrap().share, 0.5);
        assert!(map_gpu("A100 80GB", db).unwrap().note.is_some());
        assert!(
            map_gpu("A100 80GB (SXM, 330W cap)", db)
                .unwrap()
                .note
                .unwrap()
                .contains("power")
        );
        for bad in [
            "Tesla P40 24GB",
            "GH200 (141GB HBM3e, 900W)",
            "H100 96GB HBM2e (500W)",
            "Voodoo 5",
        ] {
            assert!(map_gpu(bad, db).is_err(), "{bad}");
        }
    }

    #[test]
    fn partial_device_halves_the_package() {
        let db = HardwareDb::builtin().unwrap();
        let full = db.get("mi250x").unwrap();
        let half = partial_device(full, 0.5);
        assert_eq!(half.memory.bandwidth_bytes_per_s, 1.6e12);
        assert_eq!(half.peak_flops_per_s.bf16, Some(191.5e12));
        assert_eq!(half.id, "mi250x-gcd");
    }

    #[test]
    fn precisions() {
        assert_eq!(
            map_precision("f16/f16").unwrap(),
            (Some(Format::Fp16), Some(Format::Fp16))
        );
        assert_eq!(
            map_precision("q8_0/f16").unwrap(),
            (Some(Format::Q8_0), Some(Format::Fp16))
        );
        assert_eq!(
            map_precision("int8 weight-only/bf16").unwrap(),
            (Some(Format::Int8), Some(Format::Bf16))
        );
        assert_eq!(
            map_precision("int4 g32 weight-only/bf16").unwrap().0,
            Some(Format::Bpw(5.0))
        );
        assert_eq!(
            map_precision("q4f16_1 (4-bit)/f16").unwrap().0,
            Some(Format::Bpw(4.5))
        );
        assert_eq!(
            map_precision("fp8/(fp8 kv likely)").unwrap(),
            (Some(Format::Fp8), Some(Format::Fp8))
        );
        assert_eq!(map_precision("bf16").unwrap(), (Some(Format::Bf16), None));
        assert_eq!(map_precision("n/a").unwrap(), (None, None));
        assert!(map_precision("q9_z/f16").is_err());
    }

    #[test]
    fn models_and_frameworks() {
        let db = ModelDb::builtin().unwrap();
        assert_eq!(map_model("Llama-3-8B", db).unwrap(), "llama-3-8b");
        assert_eq!(map_model("CodeLlama-7B", db).unwrap(), "codellama-7b");
        assert_eq!(map_model("Llama-3.1-405B", db).unwrap(), "llama-3.1-405b");
        assert_eq!(map_model("GPT-3 175B", db).unwrap(), "gpt3-175b");
        assert!(map_model("(matmul microbenchmark)", db).is_err());
        assert_eq!(map_framework("LMDeploy (TurboMind)"), Some("lmdeploy"));
        assert_eq!(map_framework("MLC-LLM"), Some("mlc"));
        assert_eq!(map_framework("ExLlamaV2"), Some("exllamav2"));
        assert_eq!(map_framework("vLLM (ROCm)"), Some("vllm"));
        assert_eq!(map_framework("gpt-fast"), Some("gpt-fast"));
        assert_eq!(map_framework("LitGPT generate (eager PyTorch)"), Some("hf"));
        assert_eq!(map_framework("gpu-stream (CUDA/HIP)"), None);
    }
}
