//! Prefills as lines in the batch: with the prompt fixed, every op of a dense model is
//! affine in the batch between known kinks ([`PrefillSegments`]), so a prompt met again
//! with another batch costs a few multiply-adds ([`PrefillCache`]).

use super::add_op_at;
use crate::model::graph::{MAX_OPS, OpInstance, Step};
use crate::predict::affine::{self, Line, at};
use crate::predict::{PassResult, Predictor};

/// Batch span of the probes of an unbounded [`PrefillLines`] segment.
const PREFILL_SPAN: u64 = 1 << 16;
/// Largest batch x prompt the prefill lines are used for (beyond: the plain path).
const PREFILL_MAX_TOKENS: u64 = 1 << 50;
/// Prompt lengths whose prefill lines an [`Evaluator`] keeps.
const PREFILL_SLOTS: usize = 64;

/// One op of a prefill as lines in the batch.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct OpLines {
    pred: [Line; 3],
    ideal: [Line; 3],
    overhead_s: f64,
}

/// A prefill at one prompt length as a function of the batch, over a range of batches:
/// with the prompt fixed, every op of a dense model is affine in the batch (tokens =
/// batch x prompt; causal attention pairs = batch x pairs(prompt)) between the kinks where
/// an embedding lookup reaches every row of its table (see [`PrefillSegments`]). Where an
/// op is not affine (MoE expert coverage below saturation) there are no lines and the
/// plain path serves.
///
/// Measured at two batches and verified at one more inside the range (or, for the
/// unbounded last range, eight times beyond the probes).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct PrefillLines {
    ops: [OpLines; MAX_OPS],
    n: usize,
    /// flops, bytes, weight bytes, KV bytes of the whole pass.
    sums: [Line; 4],
}

/// What [`Predictor::pass_ops`] sums, per op: derated and ideal times, and the pass sums.
fn op_values(p: &Predictor<'_>, op: &OpInstance) -> ([f64; 3], [f64; 3], f64, [f64; 4]) {
    let pl = p.place_op(op);
    let c = p.ceilings(op);
    let ideal = [
        if c.peak_flops_per_s > 0.0 {
            pl.flops / c.peak_flops_per_s
        } else {
            0.0
        },
        pl.bytes / c.memory_bytes_per_s,
        match c.link_bytes_per_s {
            Some(bw) if pl.link_bytes > 0.0 => pl.link_bytes / bw,
            _ => 0.0,
        },
    ];
    (
        [pl.compute_time_s, pl.memory_time_s, pl.link_time_s],
        ideal,
        pl.overhead_s,
        [
            pl.flops,
            pl.bytes,
            op.cost.read.weights * op.count,
            (op.cost.read.kv + op.cost.written.kv) * op.count,
        ],
    )
}

impl PrefillLines {
    /// Lines through batches `lo` and `hi`, verified at `checks`.
    pub(super) fn fit(
        p: &Predictor<'_>,
        prompt: u64,
        lo: u64,
        hi: u64,
        checks: &[u64],
    ) -> Option<PrefillLines> {
        // whole tiles of tokens (an Apple GPU's matrix kernel) step the compute time
        // in the batch: not affine between any two batches, so the plain path serves
        if p.tiles_tokens() {
            return None;
        }
        let ga = p.graph(&Step::prefill(lo, prompt));
        let gb = p.graph(&Step::prefill(hi, prompt));
        let n = ga.ops().len();
        if n == 0 || n != gb.ops().len() || hi <= lo {
            return None;
        }
        let span = (hi - lo) as f64;
        let line = |ya: f64, yb: f64| affine::through(lo as f64, span, ya, yb);
        let mut pl = PrefillLines {
            ops: [OpLines::default(); MAX_OPS],
            n,
            sums: [(0.0, 0.0); 4],
        };
        let (mut sa, mut sb) = ([0.0; 4], [0.0; 4]);
        for (i, (a, b)) in ga.ops().iter().zip(gb.ops()).enumerate() {
            if a.kind != b.kind || a.unit != b.unit || a.count != b.count {
                return None;
            }
            let (pa, ia, oa, xa) = op_values(p, a);
            let (pb, ib, ob, xb) = op_values(p, b);
            if oa != ob {
                return None;
            }
            for k in 0..4 {
                sa[k] += xa[k];
                sb[k] += xb[k];
            }
            pl.ops[i] = OpLines {
                pred: [0, 1, 2].map(|k| line(pa[k], pb[k])),
                ideal: [0, 1, 2].map(|k| line(ia[k], ib[k])),
                overhead_s: oa,
            };
        }
        pl.sums = [0, 1, 2, 3].map(|k| line(sa[k], sb[k]));
        // verify every op's times and the sums at the check batches
        let ok = |want: f64, got: f64, scale: f64| (want - got).abs() <= 1e-12 * scale.max(1e-300);
        for &check in checks {
            let g = p.graph(&Step::prefill(check, prompt));
            if g.ops().len() != n {
                return None;
            }
            let x = check as f64;
            let mut sums = [0.0; 4];
            for (op, l) in g.ops().iter().zip(&pl.ops) {
                let (pc, ic, _, xc) = op_values(p, op);
                let scale = pc.iter().chain(&ic).fold(0.0f64, |m, v| m.max(v.abs()));
                for k in 0..3 {
                    if !ok(pc[k], at(l.pred[k], x), scale) || !ok(ic[k], at(l.ideal[k], x), scale) {
                        return None;
                    }
                }
                for (s, x) in sums.iter_mut().zip(xc) {
                    *s += x;
                }
            }
            if sums
                .iter()
                .zip(&pl.sums)
                .any(|(&s, &l)| !ok(s, at(l, x), s.abs()))
            {
                return None;
            }
        }
        Some(pl)
    }

    /// The per-op part of the prefill at `batch` (what `pass_ops` returns).
    pub(super) fn pass_ops(&self, batch: u64) -> PassResult {
        let x = batch as f64;
        let mut r = PassResult {
            flops: at(self.sums[0], x),
            bytes: at(self.sums[1], x),
            weight_bytes: at(self.sums[2], x),
            kv_bytes: at(self.sums[3], x),
            ..PassResult::default()
        };
        for o in &self.ops[..self.n] {
            add_op_at(&mut r, &o.pred, &o.ideal, o.overhead_s, x);
        }
        r
    }
}

/// The prefill at one prompt length over all batches: up to five batch ranges split
/// where `batch x prompt` reaches the vocabulary or the trained context (an embedding
/// table is then read whole) and where the prompt's tokens and the lm_head's rows leave
/// the matrix-vector kernels ([`crate::engine::Speed::gemm_half_rows`]), each with its
/// own lines, measured when first needed (or none: plain path).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct PrefillSegments {
    pub(super) prompt: u64,
    /// Inclusive batch ranges, ascending, covering `1..=u64::MAX`, with their lines
    /// (`None`: not measured yet).
    pub(super) segs: Vec<(u64, u64, Option<Option<PrefillLines>>)>,
}

impl PrefillSegments {
    pub(super) fn new(p: &Predictor<'_>, prompt: u64) -> PrefillSegments {
        let mut tables = vec![p.model.vocab];
        if p.model.learned_positions {
            tables.push(p.model.max_context);
        }
        if p.engine.speed.gemm_half_rows > 0.0 {
            // the matmuls leave the matrix-vector kernels (no roll-off) for tiled ones
            // (Speed::gemm_half_rows) above GEMV_MAX_TOKENS rows: the prompt's tokens,
            // and the lm_head's rows (one per sequence)
            tables.push(crate::engine::GEMV_MAX_TOKENS);
            tables.push(crate::engine::GEMV_MAX_TOKENS.saturating_mul(prompt));
        }
        let mut ends: Vec<u64> = tables
            .iter()
            .filter_map(|t| t.checked_div(prompt))
            .filter(|&b| b >= 1)
            .collect();
        ends.sort_unstable();
        ends.dedup();
        ends.push(u64::MAX);
        let mut segs = Vec::with_capacity(ends.len());
        let mut lo = 1u64;
        for hi in ends {
            segs.push((lo, hi, if prompt == 0 { Some(None) } else { None }));
            lo = hi.saturating_add(1);
        }
        PrefillSegments { prompt, segs }
    }

    /// Measures the lines of range `(lo, hi)`.
    pub(super) fn fit(p: &Predictor<'_>, prompt: u64, lo: u64, hi: u64) -> Option<PrefillLines> {
        if hi == u64::MAX {
            let top = lo.saturating_add(PREFILL_SPAN);
            let far = top.saturating_mul(8);
            (far.saturating_mul(prompt) <= PREFILL_MAX_TOKENS)
                .then(|| PrefillLines::fit(p, prompt, lo, top, &[far]))
                .flatten()
        } else if hi > lo {
            let mid = lo + (hi - lo) / 2;
            let checks: &[u64] = if mid > lo { &[mid] } else { &[] };
            PrefillLines::fit(p, prompt, lo, hi, checks)
        } else {
            None
        }
    }

    /// The lines for `batch`, if its range has them.
    pub(super) fn lines(&mut self, p: &Predictor<'_>, batch: u64) -> Option<&PrefillLines> {
        let prompt = self.prompt;
        let seg = self.segs.iter_mut().find(|s| batch <= s.1)?;
        let (lo, hi) = (seg.0, seg.1);
        seg.2
            .get_or_insert_with(|| Self::fit(p, prompt, lo, hi))
            .as_ref()
    }
}

/// The prefill lines an [`Evaluator`] keeps, by prompt length (an open-addressing
/// table of [`PREFILL_SLOTS`] prompts, filled to three quarters, never evicting): a
/// prompt gets lines the second time it is met, so a prompt met once costs no more than
/// the plain path; prompts beyond the table's fill use the plain path.
#[derive(Debug, Clone)]
pub(super) struct PrefillCache {
    /// The prompts met (`u64::MAX`: free slot).
    keys: [u64; PREFILL_SLOTS],
    /// Slots in use.
    used: usize,
    /// Per slot: the segments of `keys[slot]` once measured; allocated on first use.
    lines: Vec<Option<PrefillSegments>>,
}

impl PrefillCache {
    pub(super) fn new() -> Self {
        PrefillCache {
            keys: [u64::MAX; PREFILL_SLOTS],
            used: 0,
            lines: Vec::new(),
        }
    }

    /// The slot of `prompt`, inserting it when there is room (`None`: table full).
    fn slot(&mut self, prompt: u64) -> Option<(usize, bool)> {
        let mut i = (prompt.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 58) as usize % PREFILL_SLOTS;
        loop {
            if self.keys[i] == prompt {
                return Some((i, false));
            }
            if self.keys[i] == u64::MAX {
                if 4 * (self.used + 1) > 3 * PREFILL_SLOTS {
                    return None;
                }
                self.keys[i] = prompt;
                self.used += 1;
                return Some((i, true));
            }
            i = (i + 1) % PREFILL_SLOTS;
        }
    }

    /// The per-op prefill at (batch, prompt).
    pub(super) fn pass_ops(
        &mut self,
        p: &Predictor<'_>,
        batch: u64,
        prompt: u64,
    ) -> Option<PassResult> {
        let small = batch
            .checked_mul(prompt)
            .is_some_and(|t| t <= PREFILL_MAX_TOKENS);
        let plain = || p.pass_ops(&Step::prefill(batch, prompt));
        if !small || prompt == u64::MAX {
            return plain();
        }
        match self.slot(prompt) {
            None | Some((_, true)) => plain(),
            Some((i, false)) => {
                if self.lines.is_empty() {
                    self.lines = vec![None; PREFILL_SLOTS];
                }
                let segs = self.lines[i].get_or_insert_with(|| PrefillSegments::new(p, prompt));
                match segs.lines(p, batch) {
                    Some(l) => Some(l.pass_ops(batch)),
                    None => plain(),
                }
            }
        }
    }
}
