//! The event loop of one pool, and what every loop records ([`Collector`]): arrivals
//! and completions in time order, per-request latencies, time averages, the timeline.

use super::metrics::{Histogram, TimeAverage, Timeline, TimelinePoint};
use super::scheduler::{Blocker, Instance, Iteration, Req};
use super::workload::{Arrivals, Source, TraceRequest, Workload};
use super::{Binding, Goodput, MAX_ITERATIONS, Run, Serving, Throughput};
use crate::error::{Error, Result};
use crate::roofline::Bound;
use std::collections::VecDeque;

/// The arrivals of a workload, in time order: the next open-loop arrival, and the
/// closed loop's requests issued at completions.
#[derive(Debug)]
pub(super) struct Feed<'w> {
    source: Source<'w>,
    next: Option<TraceRequest>,
    closed: VecDeque<TraceRequest>,
    is_closed: bool,
}

impl<'w> Feed<'w> {
    pub(super) fn new(w: &'w Workload) -> Self {
        let mut source = Source::new(w);
        let mut closed = VecDeque::new();
        let is_closed = matches!(w.arrivals, Arrivals::Closed { .. });
        if let Arrivals::Closed { concurrency } = w.arrivals {
            for _ in 0..concurrency {
                closed.extend(source.issue_at(0.0));
            }
        }
        let next = source.next_arrival();
        Feed {
            source,
            next,
            closed,
            is_closed,
        }
    }

    /// When the next arrival comes (`None`: no more, for now).
    pub(super) fn peek(&self) -> Option<f64> {
        match self.closed.front() {
            Some(r) => Some(r.arrival_s),
            None => self.next.map(|r| r.arrival_s),
        }
    }

    /// The next arrival if it comes by `t`.
    pub(super) fn pop_until(&mut self, t: f64) -> Option<TraceRequest> {
        if self.peek()? > t {
            return None;
        }
        if let Some(r) = self.closed.pop_front() {
            return Some(r);
        }
        let r = self.next.take();
        self.next = self.source.next_arrival();
        r
    }

    /// A closed loop's user sends its next request at `t`, when its last completed.
    pub(super) fn completed_at(&mut self, t: f64) {
        if self.is_closed {
            self.closed.extend(self.source.issue_at(t));
        }
    }

    /// Whether the last request has arrived.
    pub(super) fn exhausted(&self) -> bool {
        self.source.done() && self.closed.is_empty() && self.next.is_none()
    }
}

/// Everything a run records, in fixed memory.
#[derive(Debug, Default)]
pub(super) struct Collector {
    ttft: Histogram,
    tpot: Histogram,
    e2e: Histogram,
    queue: Histogram,
    transfer: Histogram,
    in_system: TimeAverage,
    batch: TimeAverage,
    n_in_system: u64,
    last_event: f64,
    first_arrival: Option<f64>,
    last_completion: f64,
    pub(super) requests: u64,
    completed: u64,
    rejected: u64,
    in_tokens: u64,
    out_tokens: u64,
    good: u64,
    /// Completions after the first one while arrivals kept coming, and when the first
    /// and the last arrival came.
    window_completions: u64,
    window_arrivals: u64,
    /// The window opens at the arrival of the middle request (or the first after a
    /// completion), past the ramp-up of a run that starts empty.
    window_start: Option<f64>,
    /// The in-system integral when the window opened and at the last arrival.
    window_area: (f64, f64),
    first_completion: Option<f64>,
    /// Requests the workload will send.
    pub(super) expected: u64,
    last_arrival: f64,
    busy_s: f64,
    blocked_s: [f64; 3],
    by_bound: [f64; 4],
    pub(super) iterations: u64,
    pub(super) timeline: Timeline,
    /// Pools whose iterations are recorded (busy time is shared out among them).
    pub(super) pools: u64,
    /// The server's front-end time per request ([`Serving::request_overhead_s`]), s:
    /// part of every time to first token and end-to-end latency, not of the engine's
    /// queue or iterations.
    pub(super) front: f64,
}

impl Collector {
    fn advance(&mut self, t: f64) {
        if self.first_arrival.is_some() {
            self.in_system
                .add(self.n_in_system as f64, t - self.last_event);
        }
        self.last_event = self.last_event.max(t);
    }

    /// A request arrives at `t`.
    pub(super) fn arrive(&mut self, t: f64) {
        self.advance(t);
        self.first_arrival.get_or_insert(t);
        self.last_arrival = t;
        if self.window_start.is_some() {
            self.window_arrivals += 1;
        } else if 2 * self.requests >= self.expected && self.first_completion.is_some() {
            self.window_start = Some(t);
            self.window_area.0 = self.in_system.area();
        }
        self.window_area.1 = self.in_system.area();
        self.requests += 1;
        self.n_in_system += 1;
    }

    /// A request that arrived at `t` is refused.
    pub(super) fn reject(&mut self, t: f64) {
        self.advance(t);
        self.n_in_system -= 1;
        self.rejected += 1;
    }

    /// A request completes at `t`; `arrivals_done`: the last request had arrived.
    pub(super) fn complete(&mut self, r: &Req, t: f64, slo: &super::Slo, arrivals_done: bool) {
        self.advance(t);
        self.n_in_system -= 1;
        self.completed += 1;
        self.last_completion = self.last_completion.max(t);
        self.first_completion.get_or_insert(t);
        if self.window_start.is_some() && !arrivals_done {
            self.window_completions += 1;
        }
        let ttft = r.first_token_s - r.arrival_s + self.front;
        let e2e = t - r.arrival_s + self.front;
        self.ttft.add(ttft);
        self.e2e.add(e2e);
        self.queue.add(r.first_scheduled_s - r.arrival_s);
        let tpot = (r.gen_tokens > 1).then(|| (e2e - ttft) / (r.gen_tokens - 1) as f64);
        if let Some(x) = tpot {
            self.tpot.add(x);
        }
        if r.transfer_s > 0.0 {
            self.transfer.add(r.transfer_s);
        }
        self.in_tokens += r.prompt;
        self.out_tokens += r.gen_tokens;
        let ok_ttft = slo.ttft_s.is_none_or(|x| ttft <= x);
        let ok_tpot = slo.tpot_s.is_none_or(|x| tpot.is_none_or(|v| v <= x));
        if ok_ttft && ok_tpot {
            self.good += 1;
        }
    }

    /// Iteration `it` of `inst` starts at `t`; `timeline`: sample it on the timeline.
    pub(super) fn iteration(
        &mut self,
        it: &Iteration,
        t: f64,
        inst: &Instance<'_, '_>,
        timeline: bool,
    ) -> Result<()> {
        self.iterations += 1;
        if self.iterations > MAX_ITERATIONS {
            return Err(Error::invalid(
                "requests",
                format!(
                    "the simulation stopped after {MAX_ITERATIONS} iterations (its bound); use fewer requests"
                ),
            ));
        }
        let dt = it.pass.time_s;
        self.busy_s += dt;
        self.batch.add(it.batch as f64, dt);
        if let Some(b) = it.blocker {
            let i = match b {
                Blocker::MaxNumSeqs => 0,
                Blocker::TokenBudget => 1,
                Blocker::KvCache => 2,
            };
            self.blocked_s[i] += dt;
        }
        if it.pass.time_s > 0.0 {
            for (a, b) in self.by_bound.iter_mut().zip(it.pass.by_bound) {
                *a += b;
            }
        }
        if timeline {
            self.timeline.offer(TimelinePoint {
                t_s: t,
                batch: it.batch,
                kv_fraction: inst.kv_fraction(),
                waiting: inst.waiting(),
            });
        }
        Ok(())
    }

    /// The rate sustained while requests kept arriving, and whether the run fell behind
    /// them: from the window's opening to the last arrival, the requests in the system
    /// grew by more than 5% of the arrivals and more than three standard deviations of
    /// a stable system's fluctuation (`sqrt(2 x mean in system)`, as for Poisson counts).
    /// Runs too short for a window compare throughput with the arrival rate.
    fn saturation(&self, start: f64, throughput: f64) -> (f64, bool) {
        let window = self.window_start.map_or(0.0, |f| self.last_arrival - f);
        if window > 0.0 && self.window_completions > 0 {
            let mean_n = (self.window_area.1 - self.window_area.0) / window;
            let growth = self.window_arrivals as f64 - self.window_completions as f64;
            let noise = 3.0 * (2.0 * mean_n + 1.0).sqrt();
            let behind = growth > noise.max(0.05 * self.window_arrivals as f64);
            return (self.window_completions as f64 / window, behind);
        }
        let span = self.last_arrival - start;
        if span > 0.0 {
            let arrived = self.requests.saturating_sub(1) as f64 / span;
            (throughput, throughput < 0.95 * arrived)
        } else {
            (throughput, false)
        }
    }

    /// The run's report (its configuration left to the caller).
    pub(super) fn finish(
        self,
        w: &Workload,
        serving: &Serving,
        preemptions: u64,
        kv_peak: f64,
    ) -> Run {
        let start = self.first_arrival.unwrap_or(0.0);
        let duration = (self.last_completion - start).max(0.0);
        let per_s = |n: u64| {
            if duration > 0.0 {
                n as f64 / duration
            } else {
                0.0
            }
        };
        let (sustained, fell_behind) = self.saturation(start, per_s(self.completed));
        let rate = match w.arrivals {
            Arrivals::Poisson { rate } => Some(rate),
            _ => None,
        };
        let busy = self.busy_s.max(1e-300);
        let total_bound: f64 = self.by_bound.iter().sum();
        let (bi, bv) = self
            .by_bound
            .iter()
            .copied()
            .enumerate()
            .fold((1, f64::MIN), |m, (i, v)| if v > m.1 { (i, v) } else { m });
        let bound = [
            Bound::Compute,
            Bound::Memory,
            Bound::Communication,
            Bound::Overhead,
        ];
        let slo = serving.slo;
        Run {
            config: Default::default(),
            rate_per_s: rate,
            concurrency: match w.arrivals {
                Arrivals::Closed { concurrency } => Some(concurrency),
                _ => None,
            },
            requests: self.requests,
            completed: self.completed,
            rejected: self.rejected,
            duration_s: duration,
            throughput: Throughput {
                requests_per_s: per_s(self.completed),
                output_tokens_per_s: per_s(self.out_tokens),
                input_tokens_per_s: per_s(self.in_tokens),
            },
            sustained_requests_per_s: sustained,
            saturated: rate.is_some() && fell_behind,
            ttft_s: self.ttft.stats(),
            tpot_s: self.tpot.stats(),
            e2e_s: self.e2e.stats(),
            queue_s: self.queue.stats(),
            mean_requests_in_system: if duration > 0.0 {
                self.in_system.area() / duration
            } else {
                0.0
            },
            mean_batch: self.batch.mean(),
            kv_peak_fraction: kv_peak,
            preemptions,
            kv_transfer_s: serving.disagg.map(|_| self.transfer.stats()),
            goodput: (slo.ttft_s.is_some() || slo.tpot_s.is_some()).then(|| Goodput {
                requests_per_s: per_s(self.good),
                fraction: if self.completed > 0 {
                    self.good as f64 / self.completed as f64
                } else {
                    0.0
                },
            }),
            iterations: self.iterations,
            binding: Binding {
                busy_fraction: if duration > 0.0 {
                    (self.busy_s / (duration * self.pools.max(1) as f64)).min(1.0)
                } else {
                    0.0
                },
                max_num_seqs: self.blocked_s[0] / busy,
                max_batched_tokens: self.blocked_s[1] / busy,
                kv_cache: self.blocked_s[2] / busy,
                iteration_bound: (total_bound > 0.0).then(|| bound[bi]),
                iteration_bound_fraction: if total_bound > 0.0 {
                    bv / total_bound
                } else {
                    0.0
                },
            },
            timeline: self.timeline,
        }
    }
}

/// Enqueues the arrivals of `feed` up to `t` on `inst` (or refuses those that can never
/// fit its cache).
fn arrivals(feed: &mut Feed<'_>, col: &mut Collector, inst: &mut Instance<'_, '_>, t: f64) {
    while let Some(r) = feed.pop_until(t) {
        col.arrive(r.arrival_s);
        let id = col.requests - 1;
        let req = Req::new(id, r.arrival_s, r.prompt, r.gen_tokens);
        if inst.can_ever_hold(req.prompt + req.gen_tokens) {
            inst.enqueue(req);
        } else {
            col.reject(r.arrival_s);
            feed.completed_at(r.arrival_s);
        }
    }
}

/// How an event loop reports to the work in force ([`ridgeline_core::work`]): every
/// [`Ticker::EVERY`] iterations it adds the requests completed since and checks
/// whether the work was stopped, so that a simulation ends soon after its Ctrl-C,
/// deadline or client does, at a cost of one counter per iteration.
#[derive(Debug, Default)]
pub(super) struct Ticker {
    iterations: u32,
    completed: u64,
}

impl Ticker {
    /// Iterations between checks (a few hundred microseconds of simulation).
    const EVERY: u32 = 1024;

    /// Counts one iteration that completed `completed` requests.
    pub(super) fn tick(&mut self, completed: usize) -> Result<()> {
        self.completed += completed as u64;
        self.iterations += 1;
        if self.iterations >= Self::EVERY {
            self.flush();
            ridgeline_core::work::check()?;
        }
        Ok(())
    }

    /// Counts `n` requests completed (reported at the next check).
    pub(super) fn completed(&mut self, n: u64) {
        self.completed += n;
    }

    /// Reports what is not reported yet.
    pub(super) fn flush(&mut self) {
        ridgeline_core::work::advance(self.completed);
        self.iterations = 0;
        self.completed = 0;
    }
}

/// Runs a workload on one instance.
pub(super) fn unified(
    inst: &mut Instance<'_, '_>,
    w: &Workload,
    serving: &Serving,
    front: f64,
) -> Result<Run> {
    let mut feed = Feed::new(w);
    let mut col = Collector {
        expected: w.requests,
        front,
        ..Collector::default()
    };
    let mut done = Vec::new();
    let mut t = 0.0f64;
    let mut ticker = Ticker::default();
    loop {
        if !inst.busy() {
            match feed.peek() {
                Some(a) => t = t.max(a),
                None => break,
            }
        }
        arrivals(&mut feed, &mut col, inst, t);
        let Some(it) = inst.start(t) else {
            if inst.busy() {
                return Err(Error::internal(
                    "simulate",
                    "the scheduler stalled with requests queued",
                ));
            }
            continue;
        };
        col.iteration(&it, t, inst, true)?;
        let end = t + it.pass.time_s;
        arrivals(&mut feed, &mut col, inst, end);
        t = end;
        inst.finish(t, &mut done);
        ticker.tick(done.len())?;
        for r in done.drain(..) {
            col.complete(&r, t, &serving.slo, feed.exhausted());
            feed.completed_at(t);
        }
    }
    ticker.flush();
    Ok(col.finish(w, serving, inst.preemptions, inst.kv_peak_fraction))
}
