//! Decode steps as lines in the context: [`DecodeLines`] holds, for one batch, the
//! context-free ops summed and the context-dependent ones (attention) as affine lines
//! with their upper envelopes, so a step and the sum over a generation cost a few
//! multiply-adds.

use super::add_op_at;
use crate::model::graph::Step;
use crate::predict::affine::{self, Line, at, crossings, highest, series};
use crate::predict::pass::{accumulate, bound_index};
use crate::predict::{PassResult, Predictor};

/// Probe contexts: far apart, with a power-of-two span, so slopes lose little precision.
const PROBE_LO: u64 = 1 << 10;
const PROBE_HI: u64 = PROBE_LO + (1 << 24);
/// Contexts where decode lines are checked against the plain pass.
const DECODE_CHECKS: [u64; 2] = [1, (3 << 20) + 5];
/// Most context-dependent ops a decode graph has (naive attention has three).
const MAX_VARYING: usize = 4;

/// The upper envelope of three lines over contexts `L >= 1`: piece `k` is the largest
/// line for the integers up to `floor(ends[k])`. Built once per batch, so the sum over
/// a range of contexts needs no crossing points, sorting or division
/// ([`sum_max_affine`] does the same work per call).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(super) struct Envelope {
    ends: [f64; 4],
    lines: [Line; 4],
    n: usize,
}

impl Envelope {
    pub(super) fn new(lines: &[Line; 3]) -> Envelope {
        let (cuts, nc) = crossings::<3>(lines, |x| x > 1.0 && x.is_finite());
        let mut env = Envelope::default();
        let mut prev = 1.0;
        for cut in cuts[..nc].iter().copied().map(Some).chain([None]) {
            let (end, rep) = match cut {
                Some(c) => (c, (prev + c) / 2.0),
                None => (f64::INFINITY, prev + 1.0),
            };
            let best = highest(lines, rep);
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
    pub(super) fn sum(&self, lo: u64, hi: u64) -> f64 {
        let mut total = 0.0;
        let mut start = lo;
        for k in 0..self.n {
            // `as` saturates: an end beyond u64 covers everything
            let end = (self.ends[k].floor() as u64).min(hi);
            if end >= start {
                total += series(self.lines[k], start, end);
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
pub(super) struct Varying {
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
pub(crate) struct DecodeLines {
    pub(super) batch: u64,
    const_time_s: f64,
    const_roofline_s: f64,
    const_by_bound: [f64; 4],
    /// The expert all-to-all's time (it does not depend on the context).
    const_ep_comm_s: f64,
    flops: Line,
    bytes: Line,
    weight_bytes: Line,
    kv_bytes: Line,
    varying: [Varying; MAX_VARYING],
    n_varying: usize,
}

impl DecodeLines {
    /// Measures the decode graph of `p` at `batch` (`None` where the graph is empty or
    /// not of the expected shape; callers then use the plain path).
    pub(crate) fn new(p: &Predictor<'_>, batch: u64) -> Option<DecodeLines> {
        let ga = p.graph(&Step::decode(batch, PROBE_LO));
        let gb = p.graph(&Step::decode(batch, PROBE_HI));
        if ga.ops().is_empty() || ga.ops().len() != gb.ops().len() {
            return None;
        }
        let span = (PROBE_HI - PROBE_LO) as f64;
        let line = |ya: f64, yb: f64| affine::through(PROBE_LO as f64, span, ya, yb);
        let mut d = DecodeLines {
            batch,
            const_time_s: 0.0,
            const_roofline_s: 0.0,
            const_by_bound: [0.0; 4],
            const_ep_comm_s: 0.0,
            flops: (0.0, 0.0),
            bytes: (0.0, 0.0),
            weight_bytes: (0.0, 0.0),
            kv_bytes: (0.0, 0.0),
            varying: [Varying::default(); MAX_VARYING],
            n_varying: 0,
        };
        let (mut sa, mut sb) = ([0.0f64; 4], [0.0f64; 4]);
        // the context-free ops as the plain pass sums them, and where the others sit
        let mut fixed = PassResult::default();
        let mut varying_at = [usize::MAX; MAX_VARYING];
        for (i, (a, b)) in ga.ops().iter().zip(gb.ops()).enumerate() {
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
                accumulate(&mut fixed, a, &pa);
                d.const_time_s += pa.time_s;
                d.const_roofline_s += pa.roofline_time_s;
                d.const_by_bound[bound_index(pa.bound)] += pa.time_s;
                if a.kind.is_expert_all_to_all() {
                    d.const_ep_comm_s += pa.time_s;
                }
                continue;
            }
            if d.n_varying == MAX_VARYING || pa.overhead_s != pb.overhead_s {
                return None;
            }
            let c = p.ceilings(a);
            let (ia, ib) = (c.ideal_terms(&pa), c.ideal_terms(&pb));
            let pred = [
                line(pa.compute_time_s, pb.compute_time_s),
                line(pa.memory_time_s, pb.memory_time_s),
                line(pa.link_time_s, pb.link_time_s),
            ];
            let ideal = [line(ia[0], ib[0]), line(ia[1], ib[1]), line(ia[2], ib[2])];
            varying_at[d.n_varying] = i;
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
        // context-dependence that is not affine falls back instead of extrapolating.
        // The plain pass at a check places every op; those the context leaves as they
        // were at the probes place as they did there (a placement depends on the op
        // alone), so only the varying ones are placed again.
        let varying_at = &varying_at[..d.n_varying];
        for check in DECODE_CHECKS {
            let gc = p.graph(&Step::decode(batch, check));
            if gc.ops().len() != ga.ops().len() {
                return None;
            }
            let mut plain = fixed;
            for (i, (c, a)) in gc.ops().iter().zip(ga.ops()).enumerate() {
                if varying_at.contains(&i) {
                    accumulate(&mut plain, c, &p.place_op(c));
                } else if c != a {
                    return None;
                }
            }
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

    pub(super) fn varying(&self) -> &[Varying] {
        &self.varying[..self.n_varying]
    }

    /// The per-op part of one decode step at `context` (what `pass_ops` returns).
    pub(super) fn step_ops(&self, context: u64) -> PassResult {
        let x = context.max(1) as f64;
        let mut r = PassResult {
            flops: at(self.flops, x),
            bytes: at(self.bytes, x),
            weight_bytes: at(self.weight_bytes, x),
            kv_bytes: at(self.kv_bytes, x),
            time_s: self.const_time_s,
            roofline_time_s: self.const_roofline_s,
            by_bound: self.const_by_bound,
            ep_comm_s: self.const_ep_comm_s,
            // the decode lines are the engine's costs: no op reads a kernel table
            measured_launches: 0.0,
            measured_attention: 0.0,
        };
        for v in self.varying() {
            add_op_at(&mut r, &v.pred, &v.ideal, v.overhead_s, x);
        }
        r
    }

    /// Per-op part of the sum of decode steps at contexts `lo..=hi` (predicted, ideal).
    pub(super) fn sum_ops(&self, lo: u64, hi: u64) -> (f64, f64) {
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
