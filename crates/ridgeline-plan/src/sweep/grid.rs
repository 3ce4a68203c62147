//! A sweep gathered into `ndarray` arrays indexed by the swept axes.

use super::Sweep;
use crate::dtype::Format;
use crate::error::{Error, Result};
use ndarray::{ArrayD, IxDyn};
use rayon::prelude::*;

/// Labels of a [`Grid`]'s axes (the order of [`super::AXES`]).
#[derive(Debug, Clone, PartialEq)]
pub struct GridAxes {
    /// Model ids.
    pub model: Vec<String>,
    /// Device ids.
    pub gpu: Vec<String>,
    /// Device counts.
    pub gpus: Vec<u64>,
    /// Batch sizes.
    pub batch: Vec<u64>,
    /// Prompt lengths.
    pub prompt: Vec<u64>,
    /// Generation lengths.
    pub gen_tokens: Vec<u64>,
    /// Weight formats as requested (`native` where the model's own).
    pub weights: Vec<String>,
    /// KV formats as requested (`native` for the activation dtype).
    pub kv: Vec<String>,
    /// Engine ids.
    pub engine: Vec<String>,
}

/// A sweep's results as arrays with one dimension per axis of [`super::AXES`]
/// (`[model, gpu, gpus, batch, prompt, gen, weights, kv, engine]`). Invalid
/// combinations hold `NaN` and `valid = false`.
#[derive(Debug, Clone)]
pub struct Grid {
    /// What each index of each axis stands for.
    pub axes: GridAxes,
    /// Time to first token, s.
    pub ttft_s: ArrayD<f64>,
    /// Mean time per output token, s.
    pub tpot_s: ArrayD<f64>,
    /// batch x gen / decode time.
    pub decode_tokens_per_s: ArrayD<f64>,
    /// batch x gen / (TTFT + decode time).
    pub output_tokens_per_s: ArrayD<f64>,
    /// Memory per device, bytes.
    pub total_bytes: ArrayD<f64>,
    /// USD per million output tokens (`NaN` where the device has no price or the
    /// configuration does not fit).
    pub usd_per_million_tokens: ArrayD<f64>,
    /// Fits in device memory.
    pub fits: ArrayD<bool>,
    /// A valid combination (false: see [`Sweep::for_each`] for the reason).
    pub valid: ArrayD<bool>,
}

impl Sweep<'_> {
    /// Evaluates every configuration into arrays indexed by the axes (see [`Grid`]), in
    /// parallel. At most [`super::MAX_GRID_CELLS`] configurations.
    ///
    /// ```
    /// use ridgeline_core::prelude::*;
    /// use ridgeline_plan::sweep::{Sweep, SweepLists};
    ///
    /// let lists = SweepLists {
    ///     model: "llama-3-8b",
    ///     gpu: "h100,a100",
    ///     batch: "1..64:x2",
    ///     prompt: "512,2048",
    ///     ..SweepLists::default()
    /// };
    /// let (hw, engines) = (HardwareDb::builtin()?, EngineDb::builtin()?);
    /// let grid = Sweep::from_lists(&lists, hw, engines)?.grid()?;
    /// assert_eq!(grid.tpot_s.shape(), &[1, 2, 1, 7, 2, 1, 1, 1, 1]);
    /// // the H100 (index 0) decodes faster than the A100 at every batch and prompt
    /// let (h100, a100) = (grid.tpot_s.index_axis(ndarray::Axis(1), 0), grid.tpot_s.index_axis(ndarray::Axis(1), 1));
    /// assert!(h100.iter().zip(a100.iter()).all(|(h, a)| h < a));
    /// # Ok::<(), ridgeline_core::Error>(())
    /// ```
    pub fn grid(&self) -> Result<Grid> {
        let n = self.in_memory()?;
        self.charge()?;
        const PER: usize = 4096;
        let nan = || vec![f64::NAN; n];
        let (mut ttft, mut tpot, mut dec, mut out, mut bytes, mut usd) =
            (nan(), nan(), nan(), nan(), nan(), nan());
        let (mut fits, mut valid) = (vec![false; n], vec![false; n]);
        let w = ridgeline_core::work::current();
        ridgeline_core::work::start("sweep", n as u64);
        (
            ttft.par_chunks_mut(PER),
            tpot.par_chunks_mut(PER),
            dec.par_chunks_mut(PER),
            out.par_chunks_mut(PER),
            bytes.par_chunks_mut(PER),
            usd.par_chunks_mut(PER),
            fits.par_chunks_mut(PER),
            valid.par_chunks_mut(PER),
        )
            .into_par_iter()
            .enumerate()
            .for_each(|(j, (a, b, c, d, e, u, f, v))| {
                // once stopped, the rest is skipped; the check below reports it
                if w.as_ref().is_some_and(|w| w.check().is_err()) {
                    return;
                }
                let start = j * PER;
                let mut i = 0;
                self.for_each(start..start + a.len(), |_, r| {
                    if let Ok(p) = r {
                        a[i] = p.ttft_s;
                        b[i] = p.tpot_s;
                        c[i] = p.decode_tokens_per_s;
                        d[i] = p.output_tokens_per_s;
                        e[i] = p.total_bytes();
                        u[i] = p.usd_per_million_tokens_if_fits().unwrap_or(f64::NAN);
                        f[i] = p.fits();
                        v[i] = true;
                    }
                    i += 1;
                });
                if let Some(w) = &w {
                    w.advance(a.len() as u64);
                }
            });
        ridgeline_core::work::check()?;
        let shape = IxDyn(&self.shape());
        let arr = |v: Vec<f64>| {
            ArrayD::from_shape_vec(shape.clone(), v).map_err(|e| Error::internal("sweep grid", e))
        };
        let arr_b = |v: Vec<bool>| {
            ArrayD::from_shape_vec(shape.clone(), v).map_err(|e| Error::internal("sweep grid", e))
        };
        let fmt_name = |f: &Option<Format>| f.map_or("native".to_string(), |f| f.name());
        Ok(Grid {
            axes: GridAxes {
                model: self.models.iter().map(|m| m.id.clone()).collect(),
                gpu: self.devices.iter().map(|d| d.id.clone()).collect(),
                gpus: self.gpus.clone(),
                batch: self.batch.clone(),
                prompt: self.prompt.clone(),
                gen_tokens: self.gen_tokens.clone(),
                weights: self.weights.iter().map(fmt_name).collect(),
                kv: self.kv.iter().map(fmt_name).collect(),
                engine: self.engines.iter().map(|e| e.id.clone()).collect(),
            },
            ttft_s: arr(ttft)?,
            tpot_s: arr(tpot)?,
            decode_tokens_per_s: arr(dec)?,
            output_tokens_per_s: arr(out)?,
            total_bytes: arr(bytes)?,
            usd_per_million_tokens: arr(usd)?,
            fits: arr_b(fits)?,
            valid: arr_b(valid)?,
        })
    }
}
