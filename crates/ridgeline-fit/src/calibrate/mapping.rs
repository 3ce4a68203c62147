//! From the free text of a measurement row to ridgeline's ids: device names
//! (`RTX 3090 24GB` -> `rtx-3090`), model names (`LLaMA-7B (arch)` -> `llama-7b`),
//! precisions (`Q4_K_M/f16` -> weights q4_k_m, KV fp16) and frameworks (`TensorRT-LLM
//! v0.6.1` -> `trt-llm`). A name that cannot be mapped gives a reason, never a guess.

use crate::dtype::Format;
pub use crate::engine::on_vendor;
use crate::hardware::{Hardware, HardwareDb, PublicationName};
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

/// The lowercase letter-and-digit words of a name: `A100-SXM4-80GB (400W)` ->
/// `a100 sxm4 80gb 400w`.
pub fn name_words(s: &str) -> Vec<String> {
    s.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_ascii_lowercase)
        .collect()
}

/// Whether the words say the device ran power-capped (`330W cap`).
fn power_capped(words: &[String]) -> bool {
    let watts = |w: &String| {
        w.strip_suffix('w')
            .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
    };
    words.iter().any(|w| w == "cap") && words.iter().any(watts)
}

/// The publication names whose words all appear in `words`, the most specific (most
/// words) only, with their devices.
fn best_names<'a>(
    words: &[String],
    db: &'a HardwareDb,
) -> Vec<(&'a Hardware, &'a PublicationName)> {
    let mut best: Vec<(&Hardware, &PublicationName)> = Vec::new();
    let mut most = 0;
    for hw in db.devices() {
        for p in &hw.publication_names {
            let need = name_words(&p.words);
            if !need.iter().all(|w| words.contains(w)) || need.len() < most {
                continue;
            }
            if need.len() > most {
                most = need.len();
                best.clear();
            }
            best.push((hw, p));
        }
    }
    best
}

/// Maps a device name as publications write it to a hardware id.
///
/// An exact id resolves first; then the devices' [`publication_names`]: the entry whose
/// words all appear in the name, the one with the most words over all devices (`H100
/// PCIe 80GB` -> `h100-pcie` by `h100 pcie`, not `h100-sxm` by `h100`). An entry may
/// say what it assumes (an A100 whose variant is not stated is taken as the 80 GB SXM
/// part, noted in [`GpuMatch::note`]), the share of the device it means, or that the
/// name means a device the database lacks. Names no entry matches resolve as ids or
/// aliases. Two devices matching equally is an error, never a guess.
///
/// [`publication_names`]: crate::hardware::Hardware::publication_names
///
/// ```
/// use ridgeline_fit::calibrate::map_gpu;
/// use ridgeline_core::hardware::HardwareDb;
/// let db = HardwareDb::builtin().unwrap();
/// assert_eq!(map_gpu("RTX 3090 24GB", db).unwrap().id, "rtx-3090");
/// assert_eq!(map_gpu("A100 80GB", db).unwrap().id, "a100-80gb-sxm");
/// assert_eq!(map_gpu("H100 SXM5", db).unwrap().id, "h100-sxm");
/// assert!(map_gpu("Tesla P40 24GB", db).is_err());
/// ```
pub fn map_gpu(name: &str, db: &HardwareDb) -> std::result::Result<GpuMatch, String> {
    if let Some(hw) = db
        .devices()
        .iter()
        .find(|d| d.id.eq_ignore_ascii_case(name.trim()))
    {
        return Ok(GpuMatch {
            id: hw.id.clone(),
            share: 1.0,
            note: None,
        });
    }
    let words = name_words(name);
    let best = best_names(&words, db);
    let Some(&(hw, p)) = best.first() else {
        let slug = words.join("-");
        return match db.get(name).or_else(|_| db.get(&slug)) {
            Ok(hw) => Ok(GpuMatch {
                id: hw.id.clone(),
                share: 1.0,
                note: None,
            }),
            Err(_) => Err(format!(
                "'{name}': no device of that name in the hardware database (closest ids: {})",
                crate::error::closest(name, db.ids(), 3).join(", ")
            )),
        };
    };
    if let Some(other) = best.iter().find(|(h, _)| h.id != hw.id) {
        return Err(format!(
            "'{name}' reads as {} ('{}') and as {} ('{}'): the name does not say which",
            hw.id, p.words, other.0.id, other.1.words
        ));
    }
    if let Some(why) = &p.absent {
        return Err(format!("'{name}': {why}"));
    }
    let mut note = Vec::new();
    if power_capped(&words) {
        note.push("power-capped device: runs below the datasheet clocks".to_string());
    }
    note.extend(p.assumes.clone());
    Ok(GpuMatch {
        id: hw.id.clone(),
        share: p.share,
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
            &mut p.rates.fp64,
            &mut p.rates.fp32,
            &mut p.rates.tf32,
            &mut p.rates.fp16,
            &mut p.rates.bf16,
            &mut p.rates.fp8,
            &mut p.rates.int8,
            &mut p.rates.int4,
            &mut p.rates.fp4,
            &mut p.rates.fp16_acc16,
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
/// use ridgeline_fit::calibrate::map_model;
/// use ridgeline_core::model::ModelDb;
/// let db = ModelDb::builtin().unwrap();
/// assert_eq!(map_model("LLaMA-7B (arch)", db).unwrap(), "llama-7b");
/// assert_eq!(map_model("Qwen2.5-Coder-3B", db).unwrap(), "qwen2.5-coder-3b");
/// assert_eq!(map_model("Llama-3.3-70B-Instruct", db).unwrap(), "llama-3.3-70b");
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
    // a fine-tune of a bundled model has its architecture (`Llama-3.3-70B-Instruct`)
    for suffix in ["-instruct", "-chat", "-it", "-hf"] {
        if let Some(stem) = base.strip_suffix(suffix) {
            candidates.push(stem.to_string());
        }
    }
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
/// use ridgeline_fit::calibrate::map_precision;
/// use ridgeline_core::dtype::Format;
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

/// Engines whose rows together define `typical` ("a well-tuned engine"): the serving and
/// compiled engines, not llama.cpp (its own profile) nor eager PyTorch.
pub const TYPICAL_POOL: [&str; 9] = [
    "vllm",
    "vllm-rocm",
    "trt-llm",
    "sglang",
    "sglang-rocm",
    "gpt-fast",
    "lmdeploy",
    "mlc",
    "exllamav2",
];

/// Profiles of an engine's earlier releases: `(id, base, description)`. Each is its
/// base's profile as fitted (the same kernels) plus what the release did differently,
/// fitted on the rows that state that release ([`map_framework`]); it stays out of
/// [`TYPICAL_POOL`] (a well-tuned engine is the current release).
///
/// `vllm-0.5`: up to 0.5.x vLLM prepared each step's inputs, ran its scheduler and
/// processed each sequence's sampled token in Python on the host between one GPU step
/// and the next; v0.6.0 overlapped that work with the GPU's (the asynchronous output
/// processor, multi-step scheduling: "vLLM v0.6.0: 2.7x Throughput Improvement and 5x
/// Latency Reduction", <https://blog.vllm.ai/2024/09/05/perf-update.html>, which profiles
/// v0.5.3 on Llama 3 8B on one H100). The host time per running sequence per forward
/// pass, `sequence_overhead_s`, is the release's own factor.
pub const VERSION_PROFILES: [(&str, &str, &str); 1] = [(
    "vllm-0.5",
    "vllm",
    "vLLM before 0.6 (0.2-0.5.x, to August 2024): the vllm profile plus the host's Python \
     work per running sequence between steps (sequence_overhead_s), which 0.6 overlapped \
     with the GPU's.",
)];

/// The profile `id` derives from and its description, when it is a release's profile
/// ([`VERSION_PROFILES`]).
pub fn version_profile(id: &str) -> Option<(&'static str, &'static str)> {
    VERSION_PROFILES
        .iter()
        .find(|(v, _, _)| *v == id)
        .map(|&(_, base, description)| (base, description))
}

/// Whether a vLLM framework column states a release before 0.6: a version `0.N` (`v0.5.2`,
/// `~v0.5.4`) with `N <= 5`, or, without a version, a date before September 2024 (a year
/// 2023, or a month January to August of 2024).
fn vllm_before_0_6(l: &str) -> bool {
    let b = l.as_bytes();
    for (i, _) in l.match_indices("0.") {
        // `0.N` not inside a longer number (`10.5`, `2.0.5`)
        if i > 0 && (b[i - 1].is_ascii_digit() || b[i - 1] == b'.') {
            continue;
        }
        let digits: String = l[i + 2..]
            .chars()
            .take_while(|c| c.is_ascii_digit())
            .collect();
        if let Ok(minor) = digits.parse::<u32>() {
            return minor <= 5;
        }
    }
    // a month is a word of its own (`aug`, `august`), not part of one (`primary`)
    const MONTHS: [(&str, &str); 8] = [
        ("jan", "january"),
        ("feb", "february"),
        ("mar", "march"),
        ("apr", "april"),
        ("may", "may"),
        ("jun", "june"),
        ("jul", "july"),
        ("aug", "august"),
    ];
    let month = l
        .split(|c: char| !c.is_ascii_alphabetic())
        .any(|w| MONTHS.iter().any(|(short, long)| w == *short || w == *long));
    l.contains("2023") || (l.contains("2024") && month)
}

/// The engine ids ridgeline knows: `ideal`, `typical`, `llama.cpp`, the
/// [`TYPICAL_POOL`], `hf` and the releases' profiles ([`VERSION_PROFILES`]).
pub const ENGINE_IDS: [&str; 14] = {
    let mut ids = [
        "ideal",
        "typical",
        "llama.cpp",
        "",
        "",
        "",
        "",
        "",
        "",
        "",
        "",
        "",
        "hf",
        "",
    ];
    let mut i = 0;
    while i < TYPICAL_POOL.len() {
        ids[3 + i] = TYPICAL_POOL[i];
        i += 1;
    }
    let mut v = 0;
    while v < VERSION_PROFILES.len() {
        ids[13 + v] = VERSION_PROFILES[v].0;
        v += 1;
    }
    ids
};

/// Words that name each engine in a framework column, tried in this order.
const FRAMEWORK_WORDS: [(&str, &[&str]); 9] = [
    ("llama.cpp", &["llama.cpp", "llama-cpp", "llamacpp", "ggml"]),
    ("trt-llm", &["tensorrt", "trt-llm", "trtllm"]),
    ("vllm", &["vllm"]),
    ("sglang", &["sglang"]),
    ("gpt-fast", &["gpt-fast", "gpt fast"]),
    ("lmdeploy", &["lmdeploy", "turbomind"]),
    ("mlc", &["mlc"]),
    // before exllama: a kernel library called from transformers (`transformers +
    // AutoGPTQ (exllama kernel)`) runs inside its eager loop
    ("hf", &["eager", "transformers", "hugging"]),
    ("exllamav2", &["exllama"]),
];

/// Maps a framework column (`TensorRT-LLM v0.6.1`, `LMDeploy (TurboMind)`, `LitGPT
/// generate (eager PyTorch)`) to an engine id; `None` when no engine matches. A column
/// that names ROCm maps vLLM and SGLang to their ROCm profiles (see
/// [`on_vendor`]); one that states a vLLM release before 0.6 maps to `vllm-0.5`
/// ([`VERSION_PROFILES`]).
///
/// ```
/// use ridgeline_fit::calibrate::map_framework;
/// assert_eq!(map_framework("llama.cpp (Metal)"), Some("llama.cpp"));
/// assert_eq!(map_framework("TensorRT-LLM ~1.0"), Some("trt-llm"));
/// assert_eq!(map_framework("Megatron-LM (PTD-P)"), None);
/// assert_eq!(map_framework("vLLM v0.10.0 (ROCm 6.4.1, AITER)"), Some("vllm-rocm"));
/// assert_eq!(map_framework("SGLang (ROCm; version not stated)"), Some("sglang-rocm"));
/// assert_eq!(map_framework("transformers + AutoGPTQ (exllama kernel)"), Some("hf"));
/// assert_eq!(map_framework("ExLlamaV2 0.0.11"), Some("exllamav2"));
/// assert_eq!(map_framework("vLLM 0.5.2"), Some("vllm-0.5"));
/// assert_eq!(map_framework("vLLM v0.14.1"), Some("vllm"));
/// ```
pub fn map_framework(s: &str) -> Option<&'static str> {
    let l = s.to_ascii_lowercase();
    let id = FRAMEWORK_WORDS
        .iter()
        .find(|(_, words)| words.iter().any(|w| l.contains(w)))
        .map(|(id, _)| *id)
        .or_else(|| ENGINE_IDS.into_iter().find(|id| l.trim() == *id))?;
    Some(if l.contains("rocm") {
        on_vendor(id, "AMD")
    } else if id == "vllm" && vllm_before_0_6(&l) {
        "vllm-0.5"
    } else {
        id
    })
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
    fn every_publication_name_reads_as_its_own_device() {
        // no entry is shadowed by another device's entry with the same or more words
        let db = HardwareDb::builtin().unwrap();
        for hw in db.devices() {
            for p in &hw.publication_names {
                match (map_gpu(&p.words, db), &p.absent) {
                    (Ok(m), None) => assert_eq!(m.id, hw.id, "'{}'", p.words),
                    (Err(e), Some(why)) => assert!(e.ends_with(why.as_str()), "{e}"),
                    (got, _) => panic!("'{}' on {}: {got:?}", p.words, hw.id),
                }
            }
        }
    }

    #[test]
    fn names_two_devices_fit_equally_are_errors() {
        let db = HardwareDb::builtin().unwrap();
        let e = map_gpu("A100 40GB PCIe", db).unwrap_err();
        assert!(
            e.contains("a100-40gb-sxm") && e.contains("a100-80gb-pcie"),
            "{e}"
        );
        assert_eq!(
            name_words("A100-SXM4-80GB (400W)"),
            ["a100", "sxm4", "80gb", "400w"]
        );
    }

    #[test]
    fn partial_device_halves_the_package() {
        let db = HardwareDb::builtin().unwrap();
        let full = db.get("mi250x").unwrap();
        let half = partial_device(full, 0.5);
        assert_eq!(half.memory.bandwidth_bytes_per_s, 1.6e12);
        assert_eq!(half.peak_flops_per_s.rates.bf16, Some(191.5e12));
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
        assert_eq!(map_framework("vLLM (ROCm)"), Some("vllm-rocm"));
        assert_eq!(map_framework("vLLM 0.6.6"), Some("vllm"));
        assert_eq!(map_framework("gpt-fast"), Some("gpt-fast"));
        assert_eq!(map_framework("LitGPT generate (eager PyTorch)"), Some("hf"));
        assert_eq!(map_framework("gpu-stream (CUDA/HIP)"), None);
        assert_eq!(map_framework(" HF "), Some("hf"));
        assert_eq!(ENGINE_IDS[3..12], TYPICAL_POOL);
    }

    #[test]
    fn vllm_releases_before_0_6_map_to_their_profile() {
        // the rows' own cells (m371, m418) and the versions around 0.6
        assert_eq!(
            map_framework("vLLM (main, Aug 2024, ~v0.5.4)"),
            Some("vllm-0.5")
        );
        assert_eq!(
            map_framework("vLLM (version not stated, Jan-2024)"),
            Some("vllm-0.5")
        );
        assert_eq!(map_framework("vLLM 0.2.7"), Some("vllm-0.5"));
        assert_eq!(map_framework("vLLM v0.6.0"), Some("vllm"));
        assert_eq!(map_framework("vLLM v0.10.2"), Some("vllm"));
        assert_eq!(map_framework("vLLM (version not stated)"), Some("vllm"));
        assert_eq!(map_framework("vLLM (Sep 2024)"), Some("vllm"));
        assert_eq!(map_framework("vLLM (August 2024 build)"), Some("vllm-0.5"));
        // a month's letters inside another word are no month
        assert_eq!(map_framework("vLLM (primary build, 2024)"), Some("vllm"));
        assert_eq!(map_framework("vLLM (2024 market release)"), Some("vllm"));
        // a release's profile is for CUDA: ROCm rows keep theirs
        assert_eq!(map_framework("vLLM 0.5.0 (ROCm)"), Some("vllm-rocm"));
        assert_eq!(
            version_profile("vllm-0.5").map(|(base, _)| base),
            Some("vllm")
        );
        assert_eq!(version_profile("vllm"), None);
        assert!(ENGINE_IDS.contains(&"vllm-0.5"));
        assert!(!TYPICAL_POOL.contains(&"vllm-0.5"));
    }
}
