//! Cached evaluation for sweeps and planning: [`Evaluator::summary`] returns the same
//! [`Summary`] as [`Predictor::summary`] (equal to floating-point rounding, checked by the
//! tests below) at a fraction of the cost, by keeping what neighbouring configurations
//! share instead of rebuilding layer graphs:
//!
//! - a decode step at batch `b` and context `L`: every op but attention depends on `b`
//!   only, and attention is affine in `L` (it streams `L` tokens of KV cache). For one
//!   batch, [`DecodeLines`] holds the summed times of the context-free ops and the
//!   compute / memory / link lines of the context-dependent ones, so a decode step and
//!   the closed-form sum over all `gen` steps cost a few multiply-adds;
//! - the prefill depends on (batch, prompt) only, so it is kept across `gen` values;
//!   and with the prompt fixed, every op of a dense model is affine in the batch between
//!   a few known kinks, so a prompt met again with another batch gets per-op lines in
//!   the batch (verified at an extra point; MoE layers below expert saturation are not
//!   affine and keep the plain path).
//!
//! The lines are measured on the same layer graph and placement the plain path uses,
//! so changes to op costs or efficiencies carry over; where a graph does not have the
//! expected shape, or a line fails its check, the evaluator falls back to the plain path
//! rather than guess. The Summary is therefore the plain one up to rounding (relative
//! differences of about 1e-15; the tests hold it to 1e-12).

mod decode;
mod iteration;
mod prefill;

use super::affine::{Line, at};
use super::{PassResult, Predictor, Summary};
use crate::model::graph::Step;
use crate::predict::pass::bound_index;
use crate::roofline::slowest;
pub(crate) use decode::DecodeLines;
pub use iteration::IterationCost;
use prefill::PrefillCache;

/// Adds one op, given as lines, at `x` to a pass: what [`crate::roofline::place`]
/// would give for it there.
#[inline]
pub(super) fn add_op_at(
    r: &mut PassResult,
    pred: &[Line; 3],
    ideal: &[Line; 3],
    overhead_s: f64,
    x: f64,
) {
    let (s, b) = slowest(at(pred[0], x), at(pred[1], x), at(pred[2], x), overhead_s);
    let t = s + overhead_s;
    r.time_s += t;
    r.by_bound[bound_index(b)] += t;
    r.roofline_time_s += at(ideal[0], x).max(at(ideal[1], x)).max(at(ideal[2], x));
}

/// A [`Predictor`] with memory of the last batch and (batch, prompt) it saw:
/// [`Evaluator::summary`] equals [`Predictor::summary`] but is much cheaper when
/// consecutive calls share the batch (and the prompt), as in a sweep whose inner axes
/// are prompt and gen. No allocation.
///
/// ```
/// use ridgeline_core::prelude::*;
/// use ridgeline_core::predict::Evaluator;
///
/// let model = ModelDb::builtin()?.resolve("llama-3-8b")?;
/// let gpu = HardwareDb::builtin()?.get("h100")?;
/// let engine = EngineDb::builtin()?.get("typical")?;
/// let p = Predictor::new(&model, gpu, engine, &Scenario::default())?;
/// let mut ev = Evaluator::new(&p);
/// for g in [1, 2, 128, 1024] {
///     let (fast, plain) = (ev.summary(8, 512, g), p.summary(8, 512, g));
///     assert!((fast.decode_total_s - plain.decode_total_s).abs() <= 1e-12 * plain.decode_total_s);
/// }
/// # Ok::<(), ridgeline_core::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Evaluator<'p, 'a> {
    predictor: &'p Predictor<'a>,
    /// Decode lines of the last batch (`None` inside: the plain path serves that batch).
    lines: Option<(u64, Option<DecodeLines>)>,
    /// Per-op prefill of the last (batch, prompt) (`None` inside: empty graph).
    prefill: Option<((u64, u64), Option<PassResult>)>,
    /// Prefill lines by prompt (`None`: not kept, see [`Evaluator::lean`]).
    prefill_lines: Option<Box<PrefillCache>>,
    /// The whole prefill (all its passes) of the last (batch, prompt, offloaded bytes):
    /// from the prefill lines, or on the plain path [`Predictor::whole_prefill`] (an
    /// evaluator takes one path for every batch, or the lines' for some and the plain
    /// path without this cache for the rest).
    prefill_done: Option<((u64, u64, u64), PassResult)>,
    /// Full passes of whole prompts (as many sequences as the engine's token budget
    /// holds: the same for every batch of a prompt), by a hash of the prompt:
    /// (sequences, prompt, offloaded bytes, the finished pass).
    full_passes: Vec<Option<(u64, u64, u64, PassResult)>>,
}

/// Slots of [`Evaluator`]'s cache of full prefill passes.
const FULL_SLOTS: usize = 64;

impl<'p, 'a> Evaluator<'p, 'a> {
    /// An evaluator with empty caches.
    pub fn new(predictor: &'p Predictor<'a>) -> Self {
        Evaluator {
            predictor,
            lines: None,
            prefill: None,
            prefill_lines: Some(Box::new(PrefillCache::new())),
            prefill_done: None,
            full_passes: Vec::new(),
        }
    }

    /// An evaluator without prefill lines by prompt (about 80 kB less once they are
    /// used): for many evaluators alive at once.
    pub fn lean(predictor: &'p Predictor<'a>) -> Self {
        Evaluator {
            prefill_lines: None,
            ..Evaluator::new(predictor)
        }
    }

    /// The predictor evaluated.
    pub fn predictor(&self) -> &'p Predictor<'a> {
        self.predictor
    }

    /// [`Predictor::summary`] with caching (speculative decoding, a predictor on
    /// kernel tables and one that hides its all-to-all take the plain path, their
    /// prefill kept across generation lengths).
    pub fn summary(&mut self, batch: u64, prompt: u64, gen_tokens: u64) -> Summary {
        let p = self.predictor;
        if p.speculation().is_some() || p.kernels().is_some() || p.overlap_ep() {
            // a sweep's inner axis is gen: the prefill of (batch, prompt) repeats
            let kept = &mut self.prefill_done;
            return p.summary_after(batch, prompt, gen_tokens, |offloaded| {
                let key = (batch, prompt, offloaded.to_bits());
                match *kept {
                    Some((k, r)) if k == key => r,
                    _ => {
                        let r = p.whole_prefill(batch, prompt, offloaded);
                        *kept = Some((key, r));
                        r
                    }
                }
            });
        }
        if !matches!(self.lines, Some((b, _)) if b == batch) {
            self.lines = Some((batch, DecodeLines::new(p, batch)));
        }
        if matches!(self.lines, Some((_, None))) {
            return p.summary(batch, prompt, gen_tokens);
        }
        let (memory, offloaded) = p.memory(batch, prompt, gen_tokens);
        let prefill = self.prefill(batch, prompt, offloaded);
        // borrowed, not copied: the lines are over a kilobyte
        let Some((_, Some(lines))) = &self.lines else {
            return p.summary(batch, prompt, gen_tokens);
        };
        let mid = super::decode_context(prompt, gen_tokens);
        let decode = p.finish_pass(lines.step_ops(mid), batch, batch, offloaded);
        let (lo, hi) = super::decode_steps(prompt, gen_tokens);
        let (decode_total_s, decode_total_roofline_s) = if hi < lo {
            (0.0, 0.0)
        } else {
            let (pred, ideal) = lines.sum_ops(lo, hi);
            let (tp, ti) = p.decode_sum_tail(batch, (hi - lo + 1) as f64, offloaded);
            (pred + tp, ideal + ti)
        };
        Summary {
            prefill,
            decode,
            decode_steps: (hi + 1).saturating_sub(lo),
            decode_total_s,
            decode_total_roofline_s,
            memory,
            offloaded_bytes: offloaded,
            speedup: 1.0,
        }
    }

    /// The whole prefill at (batch, prompt): the engine's passes
    /// ([`Predictor::prefill_chunks`]), a pass of whole prompts from the prefill lines;
    /// the last one again when asked twice.
    fn prefill(&mut self, batch: u64, prompt: u64, offloaded: f64) -> PassResult {
        let key = (batch, prompt, offloaded.to_bits());
        if let Some((k, r)) = self.prefill_done
            && k == key
        {
            return r;
        }
        let p = self.predictor;
        let mut sum = PassResult::default();
        p.prefill_chunks(batch, prompt, |step, w| {
            let whole = *step == Step::prefill(step.batch, step.new_tokens);
            // a pass of whole prompts that repeats is one filled to the budget (per
            // attention group); the remainder pass runs once
            let full = whole && w > 1.0;
            // Fibonacci hashing: prompts on a grid (multiples of 64) spread over the slots
            let slot = (prompt.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 58) as usize % FULL_SLOTS;
            let id = (step.batch, prompt, offloaded.to_bits());
            if full
                && let Some(Some((b, pr, off, r))) = self.full_passes.get(slot)
                && (*b, *pr, *off) == id
            {
                return sum.add_scaled(r, w);
            }
            let ops = if whole {
                self.prefill_ops(step.batch, step.new_tokens)
            } else {
                p.pass_ops(step)
            };
            let tokens = step.batch.saturating_mul(step.new_tokens);
            let r = ops.map_or(PassResult::default(), |r| {
                p.finish_pass(r, step.batch, tokens, offloaded)
            });
            if full {
                if self.full_passes.is_empty() {
                    self.full_passes = vec![None; FULL_SLOTS];
                }
                self.full_passes[slot] = Some((id.0, id.1, id.2, r));
            }
            sum.add_scaled(&r, w);
        });
        self.prefill_done = Some((key, sum));
        sum
    }

    /// The per-op part of the single-pass prefill at (batch, prompt): the last one
    /// again, else from the prefill lines.
    fn prefill_ops(&mut self, batch: u64, prompt: u64) -> Option<PassResult> {
        if let Some((key, r)) = self.prefill
            && key == (batch, prompt)
        {
            return r;
        }
        let p = self.predictor;
        // expert parallelism splits the batch into groups (a step function of the
        // batch): no lines in the batch
        let r = match self.prefill_lines.as_deref_mut() {
            Some(cache) if p.ep == 1 => cache.pass_ops(p, batch, prompt),
            _ => p.pass_ops(&Step::prefill(batch, prompt)),
        };
        self.prefill = Some(((batch, prompt), r));
        r
    }
}

#[cfg(test)]
mod tests;
