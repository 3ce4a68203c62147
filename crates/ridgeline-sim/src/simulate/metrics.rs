//! Fixed-size accumulators for a simulation's results, so memory does not grow with the
//! requests simulated:
//!
//! - [`Histogram`]: per-request latencies in log-spaced buckets, 128 per octave from
//!   2^-30 s to 2^20 s (6,400 counters): percentiles within 0.28% of the exact order
//!   statistic (half a bucket), exact mean, minimum and maximum;
//! - [`TimeAverage`]: the time integral of a quantity that changes at events (requests
//!   in the system, the batch);
//! - [`Timeline`]: at most [`TIMELINE_POINTS`] samples of batch size and KV use, thinned
//!   by half whenever full.

use serde::Serialize;

/// Buckets per octave of a [`Histogram`].
const PER_OCTAVE: f64 = 128.0;
/// The smallest value with its own bucket, as a power of two (2^-30 s, about 1 ns).
const MIN_EXP: i32 = -30;
/// Octaves covered (up to 2^20 s, about 12 days).
const OCTAVES: usize = 50;
const BUCKETS: usize = OCTAVES * PER_OCTAVE as usize;

/// Mean and percentiles of one per-request quantity (the JSON `ttft_s`, `tpot_s`, ...).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Stats {
    /// Mean, exact.
    pub mean: f64,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
}

/// Counts of values in log-spaced buckets (zeros apart), with the exact sum, minimum
/// and maximum.
#[derive(Debug, Clone)]
pub(crate) struct Histogram {
    counts: Vec<u32>,
    zeros: u64,
    n: u64,
    sum: f64,
    min: f64,
    max: f64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            counts: vec![0; BUCKETS],
            zeros: 0,
            n: 0,
            sum: 0.0,
            min: f64::INFINITY,
            max: 0.0,
        }
    }
}

impl Histogram {
    /// Adds a value (negative values count as 0).
    pub(crate) fn add(&mut self, v: f64) {
        let v = v.max(0.0);
        self.n += 1;
        self.sum += v;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
        if v == 0.0 {
            self.zeros += 1;
            return;
        }
        let i = ((v.log2() - MIN_EXP as f64) * PER_OCTAVE).floor();
        let i = i.clamp(0.0, (BUCKETS - 1) as f64) as usize;
        self.counts[i] = self.counts[i].saturating_add(1);
    }

    /// Exact mean (0 when empty).
    pub(crate) fn mean(&self) -> f64 {
        if self.n == 0 {
            0.0
        } else {
            self.sum / self.n as f64
        }
    }

    /// The `q`-quantile (0 < q <= 1) by the nearest-rank rule: the value of rank
    /// `ceil(q · n)`, as its bucket's geometric middle, clamped to the exact minimum and
    /// maximum (0 when empty).
    pub(crate) fn quantile(&self, q: f64) -> f64 {
        if self.n == 0 {
            return 0.0;
        }
        let rank = ((q * self.n as f64).ceil() as u64).clamp(1, self.n);
        if rank <= self.zeros {
            return 0.0;
        }
        let mut seen = self.zeros;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c as u64;
            if seen >= rank {
                let mid = (i as f64 + 0.5) / PER_OCTAVE + MIN_EXP as f64;
                return mid.exp2().clamp(self.min, self.max);
            }
        }
        self.max
    }

    /// Mean, p50, p90, p99.
    pub(crate) fn stats(&self) -> Stats {
        Stats {
            mean: self.mean(),
            p50: self.quantile(0.5),
            p90: self.quantile(0.9),
            p99: self.quantile(0.99),
        }
    }
}

/// The time average of a piecewise-constant quantity.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct TimeAverage {
    area: f64,
    span: f64,
}

impl TimeAverage {
    /// The quantity held `value` for `dt` seconds.
    pub(crate) fn add(&mut self, value: f64, dt: f64) {
        if dt > 0.0 {
            self.area += value * dt;
            self.span += dt;
        }
    }

    /// The integral, value x s.
    pub(crate) fn area(&self) -> f64 {
        self.area
    }

    /// The average over the time recorded (0 when none).
    pub(crate) fn mean(&self) -> f64 {
        if self.span > 0.0 {
            self.area / self.span
        } else {
            0.0
        }
    }
}

/// Most points a [`Timeline`] keeps.
pub const TIMELINE_POINTS: usize = 512;

/// One sample of a timeline.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[non_exhaustive]
pub struct TimelinePoint {
    /// Time, s.
    pub t_s: f64,
    /// Sequences in the iteration starting then.
    pub batch: u64,
    /// Fraction of the KV cache's blocks in use.
    pub kv_fraction: f64,
    /// Requests waiting to be admitted.
    pub waiting: u64,
}

/// Samples of every `stride`-th iteration, at most [`TIMELINE_POINTS`]; when full,
/// every other sample is dropped and the stride doubles.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Timeline {
    points: Vec<TimelinePoint>,
    stride: u64,
    seen: u64,
}

impl Timeline {
    /// Offers one iteration's sample.
    pub(crate) fn offer(&mut self, p: TimelinePoint) {
        let stride = self.stride.max(1);
        if self.seen.is_multiple_of(stride) {
            if self.points.len() == TIMELINE_POINTS {
                let kept: Vec<TimelinePoint> = self.points.iter().copied().step_by(2).collect();
                self.points = kept;
                self.stride = stride * 2;
                if !self.seen.is_multiple_of(self.stride) {
                    self.seen += 1;
                    return;
                }
            }
            self.points.push(p);
        }
        self.seen += 1;
    }

    /// The samples, in time order.
    pub fn points(&self) -> &[TimelinePoint] {
        &self.points
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_within_half_a_bucket() {
        let mut h = Histogram::default();
        // 1 ms .. 1000 ms in 1 ms steps: nearest-rank p50 = 500 ms, p90 = 900, p99 = 990
        for i in 1..=1000 {
            h.add(i as f64 * 1e-3);
        }
        let s = h.stats();
        assert!((s.mean - 0.5005).abs() < 1e-12);
        for (got, want) in [(s.p50, 0.5), (s.p90, 0.9), (s.p99, 0.99)] {
            assert!((got / want - 1.0).abs() < 0.0028, "{got} vs {want}");
        }
        assert_eq!(h.quantile(1.0), 1.0);
        assert!((h.quantile(1e-9) / 1e-3 - 1.0).abs() < 0.0028);
        let mut z = Histogram::default();
        z.add(0.0);
        z.add(0.0);
        z.add(2.0);
        assert_eq!((z.quantile(0.5), z.quantile(0.99)), (0.0, 2.0));
        assert_eq!(Histogram::default().stats(), Stats::default());
    }

    #[test]
    fn timelines_thin_out() {
        let mut t = Timeline::default();
        for i in 0..10_000u64 {
            t.offer(TimelinePoint {
                t_s: i as f64,
                batch: i,
                kv_fraction: 0.0,
                waiting: 0,
            });
        }
        let p = t.points();
        assert!(p.len() <= TIMELINE_POINTS && p.len() > TIMELINE_POINTS / 4);
        assert!(p.windows(2).all(|w| w[1].t_s > w[0].t_s));
        assert_eq!(p[0].t_s, 0.0);
        // evenly spaced: every sample a multiple of the final stride
        let step = p[1].t_s - p[0].t_s;
        assert!(p.iter().all(|x| x.t_s % step == 0.0), "{step}");
    }
}
