//! Numeric formats: the compute dtypes a device publishes peaks for, and the storage
//! formats weights and KV caches come in, with their real bits per element including
//! quantization scales.

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::fmt;

/// A datatype the hardware executes matrix math in: the keys of `peak_flops_per_s`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum ComputeDtype {
    /// IEEE double.
    Fp64,
    /// IEEE single (vector units; no TF32).
    Fp32,
    /// NVIDIA TensorFloat-32 tensor-core math.
    Tf32,
    /// IEEE half (tensor rate with fp32 accumulation).
    Fp16,
    /// bfloat16 (tensor rate with fp32 accumulation).
    Bf16,
    /// 8-bit floating point (e4m3/e5m2).
    Fp8,
    /// 8-bit integer.
    Int8,
    /// 4-bit integer.
    Int4,
    /// 4-bit floating point (NVFP4/MXFP4).
    Fp4,
}

impl ComputeDtype {
    /// All compute dtypes, in the order of the JSON keys.
    pub const ALL: [ComputeDtype; 9] = [
        ComputeDtype::Fp64,
        ComputeDtype::Fp32,
        ComputeDtype::Tf32,
        ComputeDtype::Fp16,
        ComputeDtype::Bf16,
        ComputeDtype::Fp8,
        ComputeDtype::Int8,
        ComputeDtype::Int4,
        ComputeDtype::Fp4,
    ];

    /// The lowercase key (`"bf16"`).
    pub fn name(self) -> &'static str {
        match self {
            ComputeDtype::Fp64 => "fp64",
            ComputeDtype::Fp32 => "fp32",
            ComputeDtype::Tf32 => "tf32",
            ComputeDtype::Fp16 => "fp16",
            ComputeDtype::Bf16 => "bf16",
            ComputeDtype::Fp8 => "fp8",
            ComputeDtype::Int8 => "int8",
            ComputeDtype::Int4 => "int4",
            ComputeDtype::Fp4 => "fp4",
        }
    }

    /// Parses a lowercase key.
    pub fn parse(s: &str) -> Result<Self> {
        let lower = s.trim().to_ascii_lowercase();
        Self::ALL
            .into_iter()
            .find(|d| d.name() == lower)
            .ok_or_else(|| Error::unknown("compute dtype", s, Self::ALL.map(|d| d.name())))
    }

    /// Bytes per element of activations held in this dtype.
    pub fn bytes(self) -> f64 {
        match self {
            ComputeDtype::Fp64 => 8.0,
            ComputeDtype::Fp32 | ComputeDtype::Tf32 => 4.0,
            ComputeDtype::Fp16 | ComputeDtype::Bf16 => 2.0,
            ComputeDtype::Fp8 | ComputeDtype::Int8 => 1.0,
            ComputeDtype::Int4 | ComputeDtype::Fp4 => 0.5,
        }
    }
}

impl fmt::Display for ComputeDtype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A storage format for weights or KV cache (`--weights`, `--kv`).
///
/// Bits per element include block scales and zero points:
///
/// | format | bits | why |
/// |---|---|---|
/// | `fp32` / `fp16` / `bf16` | 32 / 16 / 16 | |
/// | `fp8`, `int8` | 8 | per-channel / per-tensor scales are negligible |
/// | `int4` | 4 | plain 4-bit, scales ignored |
/// | `q8_0` | 8.5 | GGUF: 32 int8 + one fp16 scale = 34 bytes per 32 |
/// | `q4_0` | 4.5 | GGUF: 32 nibbles + one fp16 scale = 18 bytes per 32 |
/// | `q4_k_m` | 4.85 | GGUF mix (mostly q4_K at 4.5, some q6_K at 6.5625); llama.cpp's 7B file is 4.08 GB for 6.74 B weights |
/// | `q5_k_m` | 5.69 | GGUF mix of q5_K (5.5) and q6_K; 7B file 4.78 GB |
/// | `q6_k` | 6.5625 | GGUF q6_K super-block: 210 bytes per 256 weights |
/// | `nf4` | 4.127 | bitsandbytes NF4 with double quantization: 4 + 8/64 + 32/(64·256) (QLoRA paper) |
/// | `awq-int4`, `gptq-int4` | 4.156 | group 128: fp16 scale + packed int4 zero per group: 4 + 20/128 |
/// | `mxfp4` | 4.25 | OCP microscaling: 32 fp4 (e2m1) values share an 8-bit power-of-two scale |
/// | `nvfp4` | 4.5 | NVIDIA: 16 fp4 values share an fp8 (e4m3) scale (the per-tensor fp32 scale is negligible) |
/// | `fp8-block` | 8.002 | fp8 (e4m3) with one fp32 scale per 128 x 128 block: 8 + 32/16384 (DeepSeek-V3's checkpoint) |
/// | `bpw:N` | N | any bits per weight, e.g. EXL2 `bpw:4.0` |
///
/// Which layers stay in higher precision: AWQ, GPTQ, bitsandbytes (nf4, int8) and fp8
/// checkpoints keep the token embedding and `lm_head` in 16-bit; GGUF formats quantize
/// them too (counted at the same bits here); `bpw:N` applies to every weight.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Format {
    /// IEEE single.
    Fp32,
    /// IEEE half.
    Fp16,
    /// bfloat16.
    Bf16,
    /// 8-bit float (W8A8 on hardware with fp8 tensor cores).
    Fp8,
    /// 8-bit integer (W8A8 when the device has an int8 peak).
    Int8,
    /// Plain 4-bit integer.
    Int4,
    /// GGUF q8_0.
    Q8_0,
    /// GGUF q4_0.
    Q4_0,
    /// GGUF q4_K_M.
    Q4KM,
    /// GGUF q5_K_M.
    Q5KM,
    /// GGUF q6_K.
    Q6K,
    /// bitsandbytes NF4 (double-quant).
    Nf4,
    /// AWQ int4, group 128.
    AwqInt4,
    /// GPTQ int4, group 128.
    GptqInt4,
    /// OCP MXFP4: fp4 e2m1 with an 8-bit shared scale per 32 values.
    Mxfp4,
    /// NVIDIA NVFP4: fp4 e2m1 with an fp8 scale per 16 values.
    Nvfp4,
    /// fp8 with an fp32 scale per 128 x 128 block (W8A8 at the fp8 peak).
    Fp8Block,
    /// Any bits per weight.
    Bpw(f64),
}

/// Names accepted by [`Format::parse`] (besides `bpw:N`).
pub const FORMAT_NAMES: [&str; 17] = [
    "fp32",
    "fp16",
    "bf16",
    "fp8",
    "int8",
    "int4",
    "q8_0",
    "q4_0",
    "q4_k_m",
    "q5_k_m",
    "q6_k",
    "nf4",
    "awq-int4",
    "gptq-int4",
    "mxfp4",
    "nvfp4",
    "fp8-block",
];

impl Format {
    /// Parses a format name (`q4_k_m`, `bf16`, `bpw:4.65`); case-insensitive.
    pub fn parse(s: &str) -> Result<Self> {
        let lower = s.trim().to_ascii_lowercase();
        if let Some(n) = lower.strip_prefix("bpw:") {
            let bits: f64 = n.parse().map_err(|_| {
                Error::invalid(
                    "format",
                    format!("'{s}': bpw:N needs a number of bits, e.g. bpw:4.0"),
                )
            })?;
            if !(bits.is_finite() && (1.0..=64.0).contains(&bits)) {
                return Err(Error::invalid(
                    "format",
                    format!("'{s}': bits per weight must be in [1, 64]"),
                ));
            }
            return Ok(Format::Bpw(bits));
        }
        Ok(match lower.as_str() {
            "fp32" | "f32" | "float32" => Format::Fp32,
            "fp16" | "f16" | "float16" | "half" => Format::Fp16,
            "bf16" | "bfloat16" => Format::Bf16,
            "fp8" | "f8" | "fp8_e4m3" | "e4m3" => Format::Fp8,
            "int8" | "i8" | "w8a8" => Format::Int8,
            "int4" | "i4" => Format::Int4,
            "q8_0" => Format::Q8_0,
            "q4_0" => Format::Q4_0,
            "q4_k_m" | "q4_k" => Format::Q4KM,
            "q5_k_m" | "q5_k" => Format::Q5KM,
            "q6_k" => Format::Q6K,
            "nf4" => Format::Nf4,
            "awq-int4" | "awq" => Format::AwqInt4,
            "gptq-int4" | "gptq" => Format::GptqInt4,
            "mxfp4" => Format::Mxfp4,
            "nvfp4" => Format::Nvfp4,
            "fp8-block" | "fp8_block" => Format::Fp8Block,
            _ => return Err(Error::unknown("format", s, FORMAT_NAMES)),
        })
    }

    /// The canonical name (`"q4_k_m"`, `"bpw:4"`).
    pub fn name(self) -> String {
        match self {
            Format::Fp32 => "fp32".into(),
            Format::Fp16 => "fp16".into(),
            Format::Bf16 => "bf16".into(),
            Format::Fp8 => "fp8".into(),
            Format::Int8 => "int8".into(),
            Format::Int4 => "int4".into(),
            Format::Q8_0 => "q8_0".into(),
            Format::Q4_0 => "q4_0".into(),
            Format::Q4KM => "q4_k_m".into(),
            Format::Q5KM => "q5_k_m".into(),
            Format::Q6K => "q6_k".into(),
            Format::Nf4 => "nf4".into(),
            Format::AwqInt4 => "awq-int4".into(),
            Format::GptqInt4 => "gptq-int4".into(),
            Format::Mxfp4 => "mxfp4".into(),
            Format::Nvfp4 => "nvfp4".into(),
            Format::Fp8Block => "fp8-block".into(),
            Format::Bpw(b) => format!("bpw:{b}"),
        }
    }

    /// Bits per element including scales (see the table on [`Format`]).
    pub fn bits(self) -> f64 {
        match self {
            Format::Fp32 => 32.0,
            Format::Fp16 | Format::Bf16 => 16.0,
            Format::Fp8 | Format::Int8 => 8.0,
            Format::Int4 => 4.0,
            Format::Q8_0 => 8.5,
            Format::Q4_0 => 4.5,
            Format::Q4KM => 4.85,
            Format::Q5KM => 5.69,
            Format::Q6K => 6.5625,
            Format::Nf4 => 4.0 + 8.0 / 64.0 + 32.0 / (64.0 * 256.0),
            Format::AwqInt4 | Format::GptqInt4 => 4.0 + 20.0 / 128.0,
            Format::Mxfp4 => 4.0 + 8.0 / 32.0,
            Format::Nvfp4 => 4.0 + 8.0 / 16.0,
            Format::Fp8Block => 8.0 + 32.0 / (128.0 * 128.0),
            Format::Bpw(b) => b,
        }
    }

    /// Bytes per element including scales.
    pub fn bytes(self) -> f64 {
        self.bits() / 8.0
    }

    /// Whether this format keeps the token embedding and lm_head in 16-bit.
    pub(crate) fn keeps_embeddings_16bit(self) -> bool {
        matches!(
            self,
            Format::Fp8
                | Format::Fp8Block
                | Format::Int8
                | Format::Int4
                | Format::Nf4
                | Format::AwqInt4
                | Format::GptqInt4
                | Format::Mxfp4
                | Format::Nvfp4
        )
    }

    /// A GGUF block format (`q8_0`, `q4_0`, `q4_k_m`, `q5_k_m`, `q6_k`).
    pub(crate) fn is_gguf(self) -> bool {
        matches!(
            self,
            Format::Q8_0 | Format::Q4_0 | Format::Q4KM | Format::Q5KM | Format::Q6K
        )
    }

    /// Whether this is a floating format that activations can be held in.
    pub fn as_activation_dtype(self) -> Option<ComputeDtype> {
        match self {
            Format::Fp32 => Some(ComputeDtype::Fp32),
            Format::Fp16 => Some(ComputeDtype::Fp16),
            Format::Bf16 => Some(ComputeDtype::Bf16),
            _ => None,
        }
    }

    /// The dtype matrix math runs in for weights of this format with activations in
    /// `activation`: fp8 and int8 weights run W8A8 at the fp8/int8 peak, everything else
    /// is dequantized and multiplied at the activation dtype.
    pub fn compute_dtype(self, activation: ComputeDtype) -> ComputeDtype {
        match self {
            Format::Fp8 | Format::Fp8Block => ComputeDtype::Fp8,
            Format::Int8 => ComputeDtype::Int8,
            Format::Fp32 => ComputeDtype::Fp32,
            // fp4 tensor cores where the device has them (Blackwell); elsewhere the
            // kernels dequantize to 16 bits (see `Hardware::peak`'s fallback)
            Format::Mxfp4 | Format::Nvfp4 => ComputeDtype::Fp4,
            _ => activation,
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

impl Serialize for Format {
    /// By name (`"q4_k_m"`, `"bpw:4.5"`), as on the command line.
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Format {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Format::parse(&s).map_err(serde::de::Error::custom)
    }
}

/// Weight formats in words: `mxfp4 experts + bf16` when the routed experts use their own
/// format, else the one format (`bf16`).
pub fn formats_label(weights: Format, experts: Option<Format>) -> String {
    match experts {
        Some(e) if e != weights => format!("{} experts + {}", e.name(), weights.name()),
        _ => weights.name(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_name_parses_and_round_trips() {
        for n in FORMAT_NAMES {
            let f = Format::parse(n).unwrap();
            assert_eq!(f.name(), n);
        }
    }

    #[test]
    fn gguf_bits_include_scales() {
        // q4_0: 32 x 4 bits + 16-bit scale = 144 bits per 32 weights = 4.5.
        assert_eq!(Format::Q4_0.bits(), 4.5);
        // q8_0: 32 x 8 + 16 = 272 / 32 = 8.5.
        assert_eq!(Format::Q8_0.bits(), 8.5);
        // q6_K: 210 bytes per 256 weights = 1680 / 256 = 6.5625.
        assert_eq!(Format::Q6K.bits(), 1680.0 / 256.0);
        // NF4 double quant: 4 + 0.125 + 0.001953125 = 4.126953125.
        assert!((Format::Nf4.bits() - 4.126_953_125).abs() < 1e-12);
    }

    #[test]
    fn bpw_parses_and_rejects_bad_values() {
        assert_eq!(Format::parse("bpw:4.0").unwrap().bits(), 4.0);
        assert!(Format::parse("bpw:-4").is_err());
        assert!(Format::parse("bpw:nan").is_err());
        assert!(Format::parse("bpw:").is_err());
        match Format::parse("q4km") {
            Err(Error::UnknownName { suggestions, .. }) => {
                assert!(suggestions.contains(&"q4_k_m".to_string()))
            }
            other => panic!("expected unknown name, got {other:?}"),
        }
    }

    #[test]
    fn w8a8_uses_low_precision_peak() {
        assert_eq!(
            Format::Fp8.compute_dtype(ComputeDtype::Bf16),
            ComputeDtype::Fp8
        );
        assert_eq!(
            Format::Q4KM.compute_dtype(ComputeDtype::Fp16),
            ComputeDtype::Fp16
        );
    }
}
