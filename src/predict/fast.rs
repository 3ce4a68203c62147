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

use super::{PassResult, Predictor, Summary, activation_dtype, bound_index, format_for};
use crate::dtype::Format;
use crate::model::ModelConfig;
use crate::model::graph::{MAX_OPS, OpInstance, Precision, Step};
use crate::roofline::slowest;

/// Probe contexts: far apart, with a power-of-two span, so slopes lose little precision.
const PROBE_LO: u64 = 1 << 10;
const PROBE_HI: u64 = PROBE_LO + (1 << 24);
/// Contexts where decode lines are checked against the plain pass.
const DECODE_CHECKS: [u64; 2] = [1, (3 << 20) + 5];
/// Most context-dependent ops a decode graph has (naive attention has three).
const MAX_VARYING: usize = 4;

/// `(intercept, slope)` of an affine function of the context.
type Line = (f64, f64);

#[inline]
fn at(l: Line, x: f64) -> f64 {
    l.0 + l.1 * x
}

/// The formats a [`Predictor`] uses for `weights` and `kv` (`None`: the model's native
/// weight format; the activation dtype for the KV cache), without building one.
pub fn resolve_formats(
    model: &ModelConfig,
    weights: Option<Format>,
    kv: Option<Format>,
) -> Precision {
    let weights = weights.unwrap_or(model.native_format);
    let activations = activation_dtype(model, weights);
    Precision {
        weights,
        kv: kv.unwrap_or(format_for(activations)),
        activations,
    }
}

/// The upper envelope of three lines over contexts `L >= 1`: piece `k` is the largest
/// line for the integers up to `floor(ends[k])`. Built once per batch, so the sum over
/// a range of contexts needs no crossing points, sorting or division
/// ([`sum_max_affine`] does the same work per call).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Envelope {
    ends: [f64; 4],
    lines: [Line; 4],
    n: usize,
}

impl Envelope {
    fn new(lines: &[Line; 3]) -> Envelope {
        let mut cuts = [0.0f64; 3];
        let mut nc = 0;
        for i in 0..3 {
            for j in i + 1..3 {
                let ds = lines[i].1 - lines[j].1;
                if ds != 0.0 {
                    let x = (lines[j].0 - lines[i].0) / ds;
                    if x > 1.0 && x.is_finite() {
                        cuts[nc] = x;
                        nc += 1;
                    }
                }
            }
        }
        cuts[..nc].sort_by(f64::total_cmp);
        let mut env = Envelope::default();
        let mut prev = 1.0;
        for cut in cuts[..nc].iter().copied().map(Some).chain([None]) {
            let (end, rep) = match cut {
                Some(c) => (c, (prev + c) / 2.0),
                None => (f64::INFINITY, prev + 1.0),
            };
            let best = lines
                .iter()
                .copied()
                .fold((f64::NEG_INFINITY, 0.0), |best, l| {
                    if at(l, rep) > at(best, rep) { l } else { best }
                });
            if env.n > 0 && env.lines[env.n - 1] == best {
                env.ends[env.n - 1] = end;
            } else {
                env.ends[env.n] = end;
                env.lines[env.n] = best;
                env.n += 1;
            }
            prev = end;
        }
        env
    }

    /// `Σ_{L=lo}^{hi}` of the envelope (`lo >= 1`).
    #[inline]
    fn sum(&self, lo: u64, hi: u64) -> f64 {
        let mut total = 0.0;
        let mut start = lo;
        for k in 0..self.n {
            // `as` saturates: an end beyond u64 covers everything
            let end = (self.ends[k].floor() as u64).min(hi);
            if end >= start {
                let (c, s) = self.lines[k];
                let count = (end - start + 1) as f64;
                total += count * c + s * (start as f64 + end as f64) * count / 2.0;
                start = end + 1;
                if start > hi {
                    break;
                }
            }
        }
        total
    }
}

/// One context-dependent op of a decode step.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Varying {
    /// Derated compute, memory and link time.
    pred: [Line; 3],
    /// Ideal compute, memory and link time.
    ideal: [Line; 3],
    /// Upper envelope of `pred`.
    pred_env: Envelope,
    /// Upper envelope of `ideal`.
    ideal_env: Envelope,
    /// Fixed overhead of the op (all executions), s.
    overhead_s: f64,
}

/// Everything about a decode step at one batch size that does not depend on the context:
/// the context-free ops summed, the context-dependent ones as affine lines.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DecodeLines {
    batch: u64,
    const_time_s: f64,
    const_roofline_s: f64,
    const_by_bound: [f64; 4],
    flops: Line,
    bytes: Line,
    weight_bytes: Line,
    kv_bytes: Line,
    varying: [Varying; MAX_VARYING],
    n_varying: usize,
}

/// Adds one op, given as lines, at `x` to a pass: what [`crate::roofline::place`]
/// would give for it there.
#[inline]
fn add_op_at(r: &mut PassResult, pred: &[Line; 3], ideal: &[Line; 3], overhead_s: f64, x: f64) {
    let (s, b) = slowest(at(pred[0], x), at(pred[1], x), at(pred[2], x), overhead_s);
    let t = s + overhead_s;
    r.time_s += t;
    r.by_bound[bound_index(b)] += t;
    r.roofline_time_s += at(ideal[0], x).max(at(ideal[1], x)).max(at(ideal[2], x));
}

impl DecodeLines {
    /// Measures the decode graph of `p` at `batch` (`None` where the graph is empty or
    /// not of the expected shape; callers then use the plain path).
    pub fn new(p: &Predictor<'_>, batch: u64) -> Option<DecodeLines> {
        let ga = p.graph(&Step::decode(batch, PROBE_LO));
        let gb = p.graph(&Step::decode(batch, PROBE_HI));
        if ga.ops().is_empty() || ga.ops().len() != gb.ops().len() {
            return None;
        }
        let span = (PROBE_HI - PROBE_LO) as f64;
        let lo = PROBE_LO as f64;
        let line = |ya: f64, yb: f64| -> Line {
            let s = (yb - ya) / span;
            (ya - s * lo, s)
        };
        let mut d = DecodeLines {
            batch,
            const_time_s: 0.0,
            const_roofline_s: 0.0,
            const_by_bound: [0.0; 4],
            flops: (0.0, 0.0),
            bytes: (0.0, 0.0),
            weight_bytes: (0.0, 0.0),
            kv_bytes: (0.0, 0.0),
            varying: [Varying::default(); MAX_VARYING],
            n_varying: 0,
        };
        let (mut sa, mut sb) = ([0.0f64; 4], [0.0f64; 4]);
        for (a, b) in ga.ops().iter().zip(gb.ops()) {
            if a.kind != b.kind || a.unit != b.unit || a.count != b.count {
                return None;
            }
            let pa = p.place_op(a);
            let pb = p.place_op(b);
            for (s, (pl, op)) in [(&mut sa, (&pa, a)), (&mut sb, (&pb, b))] {
                s[0] += pl.flops;
                s[1] += pl.bytes;
                s[2] += op.cost.read.weights * op.count;
                s[3] += (op.cost.read.kv + op.cost.written.kv) * op.count;
            }
            if a == b {
                d.const_time_s += pa.time_s;
                d.const_roofline_s += pa.roofline_time_s;
                d.const_by_bound[bound_index(pa.bound)] += pa.time_s;
                continue;
            }
            if d.n_varying == MAX_VARYING || pa.overhead_s != pb.overhead_s {
                return None;
            }
            let c = p.ceilings(a.unit);
            let (ia, ib) = (c.ideal_terms(&pa), c.ideal_terms(&pb));
            let pred = [
                line(pa.compute_time_s, pb.compute_time_s),
                line(pa.memory_time_s, pb.memory_time_s),
                line(pa.link_time_s, pb.link_time_s),
            ];
            let ideal = [line(ia[0], ib[0]), line(ia[1], ib[1]), line(ia[2], ib[2])];
            d.varying[d.n_varying] = Varying {
                pred,
                ideal,
                pred_env: Envelope::new(&pred),
                ideal_env: Envelope::new(&ideal),
                overhead_s: pa.overhead_s,
            };
            d.n_varying += 1;
        }
        d.flops = line(sa[0], sb[0]);
        d.bytes = line(sa[1], sb[1]);
        d.weight_bytes = line(sa[2], sb[2]);
        d.kv_bytes = line(sa[3], sb[3]);
        // verify the lines against the plain pass below and between the probes, so a
        // context-dependence that is not affine falls back instead of extrapolating
        for check in DECODE_CHECKS {
            let plain = p.pass_ops(&Step::decode(batch, check))?;
            let fast = d.step_ops(check);
            let ok = |a: f64, b: f64| (a - b).abs() <= 1e-12 * a.abs().max(b.abs());
            if !(ok(plain.time_s, fast.time_s)
                && ok(plain.roofline_time_s, fast.roofline_time_s)
                && ok(plain.flops, fast.flops)
                && ok(plain.bytes, fast.bytes)
                && ok(plain.kv_bytes, fast.kv_bytes))
            {
                return None;
            }
        }
        Some(d)
    }

    /// The batch these lines are for.
    pub fn batch(&self) -> u64 {
        self.batch
    }

    fn varying(&self) -> &[Varying] {
        &self.varying[..self.n_varying]
    }

    /// The per-op part of one decode step at `context` (what `pass_ops` returns).
    fn step_ops(&self, context: u64) -> PassResult {
        let x = context.max(1) as f64;
        let mut r = PassResult {
            flops: at(self.flops, x),
            bytes: at(self.bytes, x),
            weight_bytes: at(self.weight_bytes, x),
            kv_bytes: at(self.kv_bytes, x),
            time_s: self.const_time_s,
            roofline_time_s: self.const_roofline_s,
            by_bound: self.const_by_bound,
        };
        for v in self.varying() {
            add_op_at(&mut r, &v.pred, &v.ideal, v.overhead_s, x);
        }
        r
    }

    /// Per-op part of the sum of decode steps at contexts `lo..=hi` (predicted, ideal).
    fn sum_ops(&self, lo: u64, hi: u64) -> (f64, f64) {
        let n = (hi - lo + 1) as f64;
        let mut pred = n * self.const_time_s;
        let mut ideal = n * self.const_roofline_s;
        for v in self.varying() {
            pred += v.pred_env.sum(lo, hi) + v.overhead_s * n;
            ideal += v.ideal_env.sum(lo, hi);
        }
        (pred, ideal)
    }
}

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
struct PrefillLines {
    ops: [OpLines; MAX_OPS],
    n: usize,
    /// flops, bytes, weight bytes, KV bytes of the whole pass.
    sums: [Line; 4],
}

/// What [`Predictor::pass_ops`] sums, per op: derated and ideal times, and the pass sums.
fn op_values(p: &Predictor<'_>, op: &OpInstance) -> ([f64; 3], [f64; 3], f64, [f64; 4]) {
    let pl = p.place_op(op);
    let c = p.ceilings(op.unit);
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
    fn fit(
        p: &Predictor<'_>,
        prompt: u64,
        lo: u64,
        hi: u64,
        checks: &[u64],
    ) -> Option<PrefillLines> {
        let ga = p.graph(&Step::prefill(lo, prompt));
        let gb = p.graph(&Step::prefill(hi, prompt));
        let n = ga.ops().len();
        if n == 0 || n != gb.ops().len() || hi <= lo {
            return None;
        }
        let span = (hi - lo) as f64;
        let lo = lo as f64;
        let line = |ya: f64, yb: f64| -> Line {
            let s = (yb - ya) / span;
            (ya - s * lo, s)
        };
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
    fn pass_ops(&self, batch: u64) -> PassResult {
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

/// The prefill at one prompt length over all batches: up to three batch ranges split
/// where `batch x prompt` reaches the vocabulary or the trained context (an embedding
/// table is then read whole), each with its own lines, measured when first needed (or
/// none: plain path).
#[derive(Debug, Clone, PartialEq)]
struct PrefillSegments {
    prompt: u64,
    /// Inclusive batch ranges, ascending, covering `1..=u64::MAX`, with their lines
    /// (`None`: not measured yet).
    segs: Vec<(u64, u64, Option<Option<PrefillLines>>)>,
}

impl PrefillSegments {
    fn new(p: &Predictor<'_>, prompt: u64) -> PrefillSegments {
        let mut tables = vec![p.model.vocab];
        if p.model.learned_positions {
            tables.push(p.model.max_context);
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
    fn fit(p: &Predictor<'_>, prompt: u64, lo: u64, hi: u64) -> Option<PrefillLines> {
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
    fn lines(&mut self, p: &Predictor<'_>, batch: u64) -> Option<&PrefillLines> {
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
struct PrefillCache {
    /// The prompts met (`u64::MAX`: free slot).
    keys: [u64; PREFILL_SLOTS],
    /// Slots in use.
    used: usize,
    /// Per slot: the segments of `keys[slot]` once measured; allocated on first use.
    lines: Vec<Option<PrefillSegments>>,
}

impl PrefillCache {
    fn new() -> Self {
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
    fn pass_ops(&mut self, p: &Predictor<'_>, batch: u64, prompt: u64) -> Option<PassResult> {
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

/// A [`Predictor`] with memory of the last batch and (batch, prompt) it saw:
/// [`Evaluator::summary`] equals [`Predictor::summary`] but is much cheaper when
/// consecutive calls share the batch (and the prompt), as in a sweep whose inner axes
/// are prompt and gen. No allocation.
///
/// ```
/// use ridgeline::prelude::*;
/// use ridgeline::predict::Evaluator;
///
/// let model = ModelDb::builtin()?.resolve("llama-3-8b")?;
/// let gpu = HardwareDb::builtin()?.get("h100")?;
/// let engine = EngineDb::builtin()?.get("typical")?;
/// let p = Predictor::new(&model, gpu, engine, &Scenario::default())?;
/// let mut ev = Evaluator::new(&p);
/// for g in [1, 128, 1024] {
///     let (fast, plain) = (ev.summary(8, 512, g), p.summary(8, 512, g));
///     assert!((fast.decode_total_s / plain.decode_total_s - 1.0).abs() < 1e-12);
/// }
/// # Ok::<(), ridgeline::Error>(())
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
}

impl<'p, 'a> Evaluator<'p, 'a> {
    /// An evaluator with empty caches.
    pub fn new(predictor: &'p Predictor<'a>) -> Self {
        Evaluator {
            predictor,
            lines: None,
            prefill: None,
            prefill_lines: Some(Box::new(PrefillCache::new())),
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

    /// [`Predictor::summary`] with caching.
    pub fn summary(&mut self, batch: u64, prompt: u64, gen_tokens: u64) -> Summary {
        let p = self.predictor;
        if !matches!(self.lines, Some((b, _)) if b == batch) {
            self.lines = Some((batch, DecodeLines::new(p, batch)));
        }
        // borrowed, not copied: the lines are over a kilobyte
        let Some((_, Some(lines))) = &self.lines else {
            return p.summary(batch, prompt, gen_tokens);
        };
        let prefill_ops = match self.prefill {
            Some((key, r)) if key == (batch, prompt) => r,
            _ => {
                let r = match self.prefill_lines.as_deref_mut() {
                    Some(cache) => cache.pass_ops(p, batch, prompt),
                    None => p.pass_ops(&Step::prefill(batch, prompt)),
                };
                self.prefill = Some(((batch, prompt), r));
                r
            }
        };
        let (memory, offloaded) = p.memory(batch, prompt, gen_tokens);
        let prefill = match prefill_ops {
            Some(r) => p.finish_pass(r, batch.saturating_mul(prompt), offloaded),
            None => PassResult::default(),
        };
        let mid = super::decode_context(prompt, gen_tokens);
        let decode = p.finish_pass(lines.step_ops(mid), batch, offloaded);
        let (lo, hi) = (prompt + 1, prompt + gen_tokens);
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
            decode_total_s,
            decode_total_roofline_s,
            memory,
            offloaded_bytes: offloaded,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::EngineDb;
    use crate::hardware::HardwareDb;
    use crate::memory::Parallel;
    use crate::model::ModelDb;
    use crate::predict::Scenario;

    fn close(a: f64, b: f64, what: &str) {
        let tol = 1e-12 * a.abs().max(b.abs()).max(1e-30);
        assert!((a - b).abs() <= tol, "{what}: fast {a} vs plain {b}");
    }

    fn same_pass(a: &PassResult, b: &PassResult, what: &str) {
        close(a.flops, b.flops, &format!("{what}.flops"));
        close(a.bytes, b.bytes, &format!("{what}.bytes"));
        close(
            a.weight_bytes,
            b.weight_bytes,
            &format!("{what}.weight_bytes"),
        );
        close(a.kv_bytes, b.kv_bytes, &format!("{what}.kv_bytes"));
        close(a.time_s, b.time_s, &format!("{what}.time_s"));
        close(
            a.roofline_time_s,
            b.roofline_time_s,
            &format!("{what}.roofline"),
        );
        for i in 0..4 {
            close(
                a.by_bound[i],
                b.by_bound[i],
                &format!("{what}.by_bound[{i}]"),
            );
        }
        assert_eq!(a.bound(), b.bound(), "{what}.bound");
    }

    /// Optimised and plain summaries agree over models (dense, GQA, MoE, learned
    /// positions), devices, layouts, formats, engines, flash on and off, offload, and
    /// batch / prompt / gen including the 0 and 1 edges.
    #[test]
    fn evaluator_equals_plain_summary() {
        let models = ModelDb::builtin().unwrap();
        let hw = HardwareDb::builtin().unwrap();
        // the built-ins plus one with every overhead term set
        let builtin = EngineDb::builtin().unwrap();
        let extra = EngineDb::from_toml(
            "[slow]\ncompute_efficiency = 0.5\nstep_overhead_s = 2e-4\nlayer_overhead_s = 6e-6\n\
             collective_latency_s = 1e-5\nlink_efficiency = 0.7\noverhead_bytes = 2e9\n\
             reserve_fraction = 0.1\n[slow.memory_efficiency]\ndefault = 0.6\nconsumer = 0.9\n",
            "test",
        )
        .unwrap();
        let mut checked = 0;
        for (model, gpu, gpus, parallel, weights, flash, offload, engine) in [
            (
                "llama-3-8b",
                "rtx-4090",
                1,
                Parallel::Tp,
                Some(Format::Q4KM),
                true,
                false,
                "llama.cpp",
            ),
            (
                "llama-3-70b",
                "h100",
                4,
                Parallel::Tp,
                Some(Format::Fp8),
                true,
                false,
                "vllm",
            ),
            (
                "mixtral-8x7b",
                "a100",
                2,
                Parallel::Pp,
                None,
                true,
                false,
                "hf",
            ),
            (
                "mistral-7b",
                "l40s",
                1,
                Parallel::Tp,
                Some(Format::AwqInt4),
                true,
                false,
                "exllamav2",
            ),
            (
                "llama-2-7b",
                "h100",
                1,
                Parallel::Tp,
                None,
                true,
                false,
                "typical",
            ),
            (
                "llama-2-70b",
                "h100",
                4,
                Parallel::Tp,
                Some(Format::Fp8),
                true,
                false,
                "slow",
            ),
            (
                "llama-2-70b",
                "a100",
                8,
                Parallel::Pp,
                None,
                true,
                false,
                "typical",
            ),
            (
                "mixtral-8x7b",
                "h100",
                2,
                Parallel::Tp,
                None,
                false,
                false,
                "ideal",
            ),
            (
                "gpt3-2.7b",
                "rtx-4090",
                1,
                Parallel::Tp,
                Some(Format::Q4_0),
                false,
                false,
                "slow",
            ),
            (
                "llama-3-70b",
                "rtx-4090",
                1,
                Parallel::Tp,
                Some(Format::Q4KM),
                true,
                true,
                "slow",
            ),
            (
                "mpt-7b",
                "l4",
                1,
                Parallel::Tp,
                Some(Format::Int8),
                true,
                false,
                "slow",
            ),
            (
                "qwen2.5-7b",
                "mi300x",
                1,
                Parallel::Tp,
                None,
                true,
                false,
                "typical",
            ),
        ] {
            let m = models.resolve(model).unwrap();
            let h = hw.get(gpu).unwrap();
            let e = extra.get(engine).or_else(|_| builtin.get(engine)).unwrap();
            let s = Scenario {
                gpus,
                parallel,
                weights,
                flash,
                offload,
                ..Scenario::default()
            };
            let p = Predictor::new(&m, h, e, &s).unwrap();
            let mut ev = Evaluator::new(&p);
            for batch in [1u64, 3, 64, 1024] {
                for prompt in [0u64, 1, 17, 512, 8192] {
                    for gen_tokens in [0u64, 1, 2, 128, 4000] {
                        let fast = ev.summary(batch, prompt, gen_tokens);
                        let plain = p.summary(batch, prompt, gen_tokens);
                        let what = format!("{model}/{gpu}x{gpus} b{batch} p{prompt} g{gen_tokens}");
                        same_pass(&fast.prefill, &plain.prefill, &format!("{what} prefill"));
                        same_pass(&fast.decode, &plain.decode, &format!("{what} decode"));
                        close(fast.decode_total_s, plain.decode_total_s, &what);
                        close(
                            fast.decode_total_roofline_s,
                            plain.decode_total_roofline_s,
                            &what,
                        );
                        assert_eq!(fast.memory, plain.memory, "{what}");
                        assert_eq!(fast.offloaded_bytes, plain.offloaded_bytes, "{what}");
                        checked += 1;
                    }
                }
            }
        }
        assert_eq!(checked, 12 * 4 * 5 * 5);
    }

    #[test]
    fn envelope_sums_match_sum_max_affine() {
        use crate::predict::sum_max_affine;
        for lines in [
            [(1.0, 0.5), (10.0, 0.1), (3.0, 0.0)],
            [(5.0, 0.0), (0.0, 0.0), (1.0, 0.0)],
            [(0.0, 1.0), (100.0, 0.0), (0.0, 0.0)],
            [(50.0, -0.1), (0.0, 0.2), (30.0, 0.0)],
            [(2.0, 1e-3), (2.0, 1e-3), (0.0, 0.0)],
        ] {
            let env = Envelope::new(&lines);
            for (lo, hi) in [
                (1u64, 1u64),
                (1, 1000),
                (5, 5),
                (20, 30),
                (100, 100_000),
                (499, 501),
            ] {
                let (a, b) = (env.sum(lo, hi), sum_max_affine(&lines, lo, hi));
                assert!(
                    (a - b).abs() <= 1e-12 * b.abs().max(1.0),
                    "{lines:?} {lo}..{hi}: {a} vs {b}"
                );
            }
        }
    }

    #[test]
    fn prefill_lines_match_plain_passes_and_skip_moe_below_saturation() {
        let models = ModelDb::builtin().unwrap();
        let h = HardwareDb::builtin().unwrap().get("h100").unwrap();
        let e = EngineDb::builtin().unwrap().get("typical").unwrap();
        for (model, gpus, prompt, expect_lines) in [
            ("llama-2-7b", 1, 512, true),
            ("llama-2-70b", 4, 3000, true),
            ("gpt3-2.7b", 1, 100, true),
            ("gpt3-2.7b", 1, 700, true),
            ("mixtral-8x7b", 2, 4, false),
            ("mixtral-8x7b", 2, 8192, true),
        ] {
            let m = models.resolve(model).unwrap();
            let s = Scenario {
                gpus,
                ..Scenario::default()
            };
            let p = Predictor::new(&m, h, e, &s).unwrap();
            let mut segs = PrefillSegments::new(&p, prompt);
            let batches = [1u64, 2, 7, 62, 63, 64, 999, 100_000, 10_000_000];
            for b in batches {
                segs.lines(&p, b);
            }
            assert_eq!(
                segs.segs.iter().all(|s| s.2.is_some_and(|l| l.is_some())),
                expect_lines,
                "{model} prompt {prompt}: {:?}",
                segs.segs
                    .iter()
                    .map(|s| (s.0, s.1, s.2.map(|l| l.is_some())))
                    .collect::<Vec<_>>()
            );
            for b in batches {
                let Some(lines) = segs.lines(&p, b).copied() else {
                    continue;
                };
                let fast = p.finish_pass(lines.pass_ops(b), b * prompt, 0.0);
                let plain = p.pass(&Step::prefill(b, prompt), 0.0);
                same_pass(&fast, &plain, &format!("{model} b{b} p{prompt}"));
            }
        }
    }

    #[test]
    fn decode_lines_have_one_varying_op_with_flash_and_three_without() {
        let m = ModelDb::builtin().unwrap().resolve("llama-2-7b").unwrap();
        let h = HardwareDb::builtin().unwrap().get("h100").unwrap();
        let e = EngineDb::builtin().unwrap().get("typical").unwrap();
        for (flash, n) in [(true, 1), (false, 3)] {
            let s = Scenario {
                flash,
                ..Scenario::default()
            };
            let p = Predictor::new(&m, h, e, &s).unwrap();
            let d = DecodeLines::new(&p, 4).unwrap();
            assert_eq!(d.varying().len(), n);
            assert_eq!(d.batch(), 4);
        }
    }
}
