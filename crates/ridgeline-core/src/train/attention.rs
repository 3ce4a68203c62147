//! Measured attention kernels of training (`data/kernels/training-attention.toml`): for a
//! training stack on a chip architecture, the fraction of the dense 16-bit peak its fused
//! causal attention reaches, forward and backward together, at each sequence length.
//!
//! An efficiency entry of `data/training.toml` that names one (`attention_measured`)
//! costs its attention core at [`MeasuredAttention::fraction_at`] the step's query length
//! (`seq / cp`), interpolated in `log(seq)` between the measured points and held at the
//! end points beyond them, instead of the scalar `attention` fraction; the fit leaves
//! that entry's `attention` at the kernels' largest fraction
//! ([`MeasuredAttention::max_fraction`], so that `attention <= compute` still bounds
//! the step) and fits the rest. The kernels' FLOPs are counted as ridgeline counts a
//! fused attention core: the causal half of the score matrix, the backward 2.5 times
//! the forward.

use super::{parse_error, parse_toml, parsed_once};
use crate::error::Result;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// The bundled `data/kernels/training-attention.toml`.
pub(crate) const BUILTIN_TRAINING_ATTENTION_TOML: &str =
    include_str!("../../../../data/kernels/training-attention.toml");

/// One library's measured attention (forward and backward) on one architecture.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MeasuredAttention {
    /// The efficiency entry it measures (`hopper+megatron`).
    pub entry: String,
    /// What ran: the library, formats, mask and head dimension.
    pub library: String,
    /// The dense 16-bit peak of the device measured, FLOP/s.
    pub peak_flops_per_s: f64,
    /// Sequence lengths measured, ascending.
    pub seq: Vec<u64>,
    /// Forward FLOP/s at each length (empty where the source publishes forward and
    /// backward together only: [`MeasuredAttention::fwd_bwd_flops_per_s`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fwd_flops_per_s: Vec<f64>,
    /// Backward FLOP/s at each length (the backward does 2.5 times the forward's FLOPs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bwd_flops_per_s: Vec<f64>,
    /// Forward and backward together, FLOP/s at each length, where the source publishes
    /// that figure instead of the two: 3.5 times the forward's FLOPs over the two passes'
    /// time (FlashAttention's benchmark's "fwd + bwd"), which is what
    /// `3.5 / (1 / fwd + 2.5 / bwd)` gives from the two.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fwd_bwd_flops_per_s: Vec<f64>,
}

impl MeasuredAttention {
    /// The fraction of the peak at measured length `i`, forward and backward together:
    /// `3.5 / (1 / fwd + 2.5 / bwd)` over the peak.
    fn fraction(&self, i: usize) -> f64 {
        let together = match self.fwd_bwd_flops_per_s.get(i) {
            Some(&f) => f,
            None => 3.5 / (1.0 / self.fwd_flops_per_s[i] + 2.5 / self.bwd_flops_per_s[i]),
        };
        together / self.peak_flops_per_s
    }

    /// The fraction of the peak reached at a query length of `seq` tokens: interpolated
    /// in `log(seq)` between the measured lengths, the end points' beyond them.
    ///
    /// ```
    /// use ridgeline_core::train::attention::kernels;
    /// let k = &kernels()?["cudnn-9-hopper"];
    /// // at 2,048 tokens forward 484 and backward 370 TFLOP/s: 3.5 / (1/484 + 2.5/370)
    /// // = 396.70 TFLOP/s together; at 4,096 591 and 474: 502.42
    /// let at = |s: u64| k.fraction_at(s) * 989.5;
    /// assert!((at(2048) - 396.70).abs() < 0.01 && (at(1024) - 396.70).abs() < 0.01);
    /// assert!((at(2896) - (396.70 + 502.42) / 2.0).abs() < 0.05); // 2^11.5
    /// # Ok::<(), ridgeline_core::Error>(())
    /// ```
    pub fn fraction_at(&self, seq: u64) -> f64 {
        let at = |i: usize| self.fraction(i);
        let x = (seq.max(1) as f64).log2();
        let xs = |i: usize| (self.seq[i] as f64).log2();
        let last = self.seq.len() - 1;
        if x <= xs(0) {
            return at(0);
        }
        if x >= xs(last) {
            return at(last);
        }
        // the last measured length at or below seq (validation keeps them ascending)
        let i = self.seq.partition_point(|&s| s <= seq) - 1;
        let t = (x - xs(i)) / (xs(i + 1) - xs(i));
        at(i) + t * (at(i + 1) - at(i))
    }

    /// The largest fraction measured (what `attention` in the entry holds).
    pub fn max_fraction(&self) -> f64 {
        (0..self.seq.len())
            .map(|i| self.fraction(i))
            .fold(0.0, f64::max)
    }

    fn validate(&self, id: &str) -> std::result::Result<(), String> {
        let n = self.seq.len();
        let (f, b, fb) = (
            self.fwd_flops_per_s.len(),
            self.bwd_flops_per_s.len(),
            self.fwd_bwd_flops_per_s.len(),
        );
        let two = f == n && b == n && fb == 0;
        let together = f == 0 && b == 0 && fb == n;
        if n < 2 || !(two || together) {
            return Err(format!(
                "{id}: needs seq and either fwd_flops_per_s and bwd_flops_per_s or fwd_bwd_flops_per_s, of the same length, at least 2 points"
            ));
        }
        if self.seq.windows(2).any(|w| w[0] >= w[1]) || self.seq[0] == 0 {
            return Err(format!("{id}: seq must be positive and ascending"));
        }
        if !(self.peak_flops_per_s.is_finite() && self.peak_flops_per_s > 0.0) {
            return Err(format!("{id}: peak_flops_per_s must be positive"));
        }
        let rates = (self.fwd_flops_per_s.iter())
            .chain(&self.bwd_flops_per_s)
            .chain(&self.fwd_bwd_flops_per_s);
        if rates
            .map(|f| f / self.peak_flops_per_s)
            .any(|f| !(f.is_finite() && f > 0.0 && f <= 1.0))
        {
            return Err(format!(
                "{id}: each rate must be positive and at most peak_flops_per_s"
            ));
        }
        Ok(())
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KernelsFile {
    kernels: BTreeMap<String, MeasuredAttention>,
}

/// Parses a training-attention file; `source_name` names it in errors.
pub fn from_toml(text: &str, source_name: &str) -> Result<BTreeMap<String, MeasuredAttention>> {
    let file: KernelsFile = parse_toml(text, source_name)?;
    for (id, k) in &file.kernels {
        k.validate(id).map_err(|m| parse_error(source_name, m))?;
    }
    Ok(file.kernels)
}

/// The bundled measured attention kernels by id (parsed once).
pub fn kernels() -> Result<&'static BTreeMap<String, MeasuredAttention>> {
    static KERNELS: OnceLock<Result<BTreeMap<String, MeasuredAttention>>> = OnceLock::new();
    parsed_once(&KERNELS, || {
        from_toml(
            BUILTIN_TRAINING_ATTENTION_TOML,
            "data/kernels/training-attention.toml",
        )
    })
}

/// The bundled kernels that measure the efficiency entry `entry` (`hopper+megatron`),
/// with their id.
pub fn for_entry(entry: &str) -> Result<Option<(&'static str, &'static MeasuredAttention)>> {
    Ok(kernels()?
        .iter()
        .find(|(_, k)| k.entry == entry)
        .map(|(id, k)| (id.as_str(), k)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bundled_kernels_parse_and_name_their_entries() {
        let k = kernels().unwrap();
        assert_eq!(k.len(), 4);
        for (entry, id) in [
            ("blackwell+megatron", "cudnn-9-blackwell"),
            ("hopper+megatron", "cudnn-9-hopper"),
            ("hopper", "flash-attention-2-hopper"),
            ("ampere", "flash-attention-2-ampere"),
        ] {
            assert_eq!(for_entry(entry).unwrap().unwrap().0, id, "{entry}");
        }
        assert!(for_entry("ada").unwrap().is_none());
    }

    #[test]
    fn fractions_by_hand() {
        let k = &kernels().unwrap()["flash-attention-2-hopper"];
        // forward and backward together is the file's own "fwd + bwd" column: at 65,536
        // tokens 3.5 / (1/342.655 + 2.5/323.165) = 328.503 TFLOP/s, of 989.5: 0.33199;
        // also beyond it
        assert!((k.fraction_at(65536) * 989.5 - 328.5032).abs() < 1e-3);
        assert!((k.fraction_at(1 << 20) * 989.5 - 328.5032).abs() < 1e-3);
        assert!((k.max_fraction() * 989.5 - 328.5032).abs() < 1e-3);
        // a quarter of the way from 16,384 (310.532) to 32,768 (324.813) in log2:
        // 2^14.25 = 19,484
        let want = 310.5322 + 0.25 * (324.8128 - 310.5322);
        assert!((k.fraction_at(19484) * 989.5 - want).abs() < 5e-3);
    }

    #[test]
    fn a_published_forward_and_backward_figure_is_the_fraction_itself() {
        let k = &kernels().unwrap()["flash-attention-2-ampere"];
        // the FlashAttention-2 paper's A100 bars: 155 TFLOP/s at 2k, 173 at 4k, of 312
        assert!((k.fraction_at(2048) - 155.0 / 312.0).abs() < 1e-12);
        assert!((k.fraction_at(4096) - 173.0 / 312.0).abs() < 1e-12);
        // half way in log2 (2^11.5 = 2,896 tokens): (155 + 173) / 2 = 164
        assert!((k.fraction_at(2896) * 312.0 - 164.0).abs() < 0.01);
        // held at the ends: 99 at 512 and below, 189 at 16k and beyond
        assert!((k.fraction_at(256) * 312.0 - 99.0).abs() < 1e-9);
        assert!((k.fraction_at(1 << 17) * 312.0 - 189.0).abs() < 1e-9);
        assert!((k.max_fraction() * 312.0 - 189.0).abs() < 1e-9);
    }

    #[test]
    fn bad_files_name_the_kernel() {
        let one = "[kernels.x]\nentry = \"e\"\nlibrary = \"l\"\npeak_flops_per_s = 100.0\nseq = [1, 2]\nfwd_flops_per_s = [10.0, 20.0]\nbwd_flops_per_s = [10.0, 20.0]\n";
        assert!(from_toml(one, "t").is_ok());
        let together = one.replace(
            "fwd_flops_per_s = [10.0, 20.0]\nbwd_flops_per_s",
            "fwd_bwd_flops_per_s",
        );
        assert!(from_toml(&together, "t").is_ok());
        for (bad, msg) in [
            (one.replace("[1, 2]", "[2, 1]"), "ascending"),
            (one.replacen("[10.0, 20.0]", "[10.0]", 1), "same length"),
            (one.replacen("20.0]", "200.0]", 1), "at most peak"),
            // one figure or the two, not both, and not one of the two alone
            (
                format!("{one}fwd_bwd_flops_per_s = [10.0, 20.0]\n"),
                "either",
            ),
            (
                one.replace("bwd_flops_per_s = [10.0, 20.0]\n", ""),
                "either",
            ),
        ] {
            let e = from_toml(&bad, "t").unwrap_err().to_string();
            assert!(e.contains("x:") && e.contains(msg), "{e}");
        }
    }
}
