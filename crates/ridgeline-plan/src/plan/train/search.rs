//! The training plan's search: the layouts each pool allows, the options of each, the
//! largest micro-batch that fits every option, and the best, the fastest and the
//! Pareto front of what qualifies.

use super::{Lack, MAX_LAYOUTS, MAX_MICRO_BATCH, Pool, TrainEntry, TrainPlanRequest, TrainTargets};
use crate::error::{Error, Result};
use crate::train::{DEFAULT_DEVICES_PER_NODE, Method, Offload, Recompute, TrainConfig, Trainer};
use rayon::prelude::*;
use ridgeline_core::work;

/// One (pool, devices, tp, pp).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Layout {
    /// Index of the pool in the request.
    pub pool: usize,
    pub gpus: u64,
    pub tp: u64,
    pub pp: u64,
    /// Context-parallel degree (1: none).
    pub cp: u64,
    /// Expert-parallel degree (1: none; MoE models only).
    pub ep: u64,
}

impl Layout {
    /// Data-parallel degree.
    pub(crate) fn dp(&self) -> u64 {
        self.gpus / (self.tp * self.pp * self.cp)
    }
}

/// What the search chooses besides the layout and the micro-batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Opt {
    pub method: Method,
    pub zero: u64,
    pub recompute: Recompute,
    pub offload: Offload,
}

/// Everything a `train` configuration of the plan is made of besides the request's
/// shared options: the one home of how an entry becomes a [`TrainConfig`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Setting {
    pub gpus: u64,
    pub tp: u64,
    pub pp: u64,
    pub cp: u64,
    pub ep: u64,
    pub opt: Opt,
    pub micro_batch: u64,
    pub global_batch: u64,
    pub inter_node_bytes_per_s: f64,
}

impl Setting {
    /// The `train` configuration on top of the request's `base`.
    pub(crate) fn config(&self, base: &TrainConfig) -> TrainConfig {
        TrainConfig {
            gpus: self.gpus,
            tp: self.tp,
            pp: self.pp,
            cp: self.cp,
            ep: self.ep,
            zero: self.opt.zero,
            micro_batch: self.micro_batch,
            global_batch: Some(self.global_batch),
            method: self.opt.method,
            recompute: self.opt.recompute,
            offload: self.opt.offload,
            virtual_stages: 1,
            inter_node_bytes_per_s: self.inter_node_bytes_per_s,
            ..base.clone()
        }
    }
}

/// One evaluated configuration, compact.
#[derive(Debug, Clone, Copy)]
pub(super) struct Cand {
    pub layout: Layout,
    pub opt: Opt,
    pub micro_batch: u64,
    pub global_batch: u64,
    pub inter_node_bytes_per_s: f64,
    pub device_fits: bool,
    pub host_fits: bool,
    pub memory_bytes: f64,
    pub capacity_bytes: f64,
    pub host_bytes: f64,
    pub host_capacity: Option<f64>,
    pub tokens_per_s: f64,
    pub step_time_s: f64,
    pub mfu: f64,
    pub hours: f64,
    pub usd: Option<f64>,
    pub usd_per_hour: Option<f64>,
}

impl Cand {
    /// Fits in device and host memory.
    pub(crate) fn fits(&self) -> bool {
        self.device_fits && self.host_fits
    }

    /// USD, infinite without a price.
    pub(crate) fn cost(&self) -> f64 {
        self.usd.unwrap_or(f64::INFINITY)
    }

    /// The first limit it misses: device memory, host memory, the deadline, the budget.
    pub(crate) fn lack(&self, t: &TrainTargets) -> Option<Lack> {
        if !self.device_fits {
            return Some(Lack::DeviceMemory {
                needed_bytes: self.memory_bytes,
                capacity_bytes: self.capacity_bytes,
            });
        }
        if let (false, Some(cap)) = (self.host_fits, self.host_capacity) {
            return Some(Lack::HostMemory {
                needed_bytes: self.host_bytes,
                capacity_bytes: cap,
            });
        }
        if let Some(h) = t.max_hours.filter(|&h| self.hours > h) {
            return Some(Lack::Time {
                hours: self.hours,
                limit: h,
            });
        }
        match t.budget_usd {
            Some(b) if self.usd.is_none_or(|u| u > b) => Some(Lack::Budget {
                usd: self.usd,
                limit: b,
            }),
            _ => None,
        }
    }

    /// Fits and meets every target.
    pub(crate) fn meets(&self, t: &TrainTargets) -> bool {
        self.lack(t).is_none()
    }

    /// Its setting.
    pub(crate) fn setting(&self) -> Setting {
        Setting {
            gpus: self.layout.gpus,
            tp: self.layout.tp,
            pp: self.layout.pp,
            cp: self.layout.cp,
            ep: self.layout.ep,
            opt: self.opt,
            micro_batch: self.micro_batch,
            global_batch: self.global_batch,
            inter_node_bytes_per_s: self.inter_node_bytes_per_s,
        }
    }

    /// The report entry.
    pub(crate) fn entry(&self, pools: &[Pool]) -> TrainEntry {
        let pool = &pools[self.layout.pool];
        let l = &self.layout;
        TrainEntry {
            gpu: pool.hardware.id.clone(),
            instance: pool.instance.clone(),
            instances: pool
                .instance
                .as_ref()
                .map(|_| l.gpus / pool.devices_per_instance),
            gpus: l.gpus,
            tp: l.tp,
            pp: l.pp,
            cp: l.cp,
            ep: l.ep,
            dp: l.dp(),
            zero: self.opt.zero,
            recompute: self.opt.recompute,
            offload: self.opt.offload,
            method: self.opt.method,
            micro_batch: self.micro_batch,
            global_batch: self.global_batch,
            tokens_per_s: self.tokens_per_s,
            step_time_s: self.step_time_s,
            mfu: self.mfu,
            hours: self.hours,
            usd: self.usd,
            usd_per_hour: self.usd_per_hour,
            fits: self.fits(),
            memory_per_device_bytes: self.memory_bytes,
            capacity_bytes: self.capacity_bytes,
            host_bytes_per_device: self.host_bytes,
            host_capacity_per_device_bytes: self.host_capacity,
            inter_node_bytes_per_s: self.inter_node_bytes_per_s,
        }
    }
}

/// The divisors of `n`, ascending.
fn divisors(n: u64) -> impl Iterator<Item = u64> {
    let mut small = Vec::new();
    let mut large = Vec::new();
    let mut d = 1u64;
    while d.saturating_mul(d) <= n {
        if n.is_multiple_of(d) {
            small.push(d);
            if d != n / d {
                large.push(n / d);
            }
        }
        d += 1;
    }
    small.into_iter().chain(large.into_iter().rev())
}

/// Every layout the request searches: tensor parallelism within a node's scale-up
/// domain (tp divides the devices per node), pipeline parallelism across nodes. Layouts
/// the model or device cannot use (tp not dividing the heads or the sequence, more
/// stages than layers, several devices without a link) are counted, not built. More
/// than [`MAX_LAYOUTS`] (device, count, tp, pp) combinations in all is an error naming
/// `gpu_counts`, found before any is evaluated.
pub(super) fn layouts(req: &TrainPlanRequest) -> Result<(Vec<Layout>, u64)> {
    let m = &req.model;
    let seq = req.base.seq;
    let mut counts = req.gpu_counts.clone();
    counts.sort_unstable();
    counts.dedup();
    let mut cps = req.cp_degrees.clone();
    cps.sort_unstable();
    cps.dedup();
    let mut out = Vec::new();
    let mut impossible = 0u64;
    for (i, pool) in req.pools.iter().enumerate() {
        let node = pool
            .hardware
            .devices_per_node
            .map_or(DEFAULT_DEVICES_PER_NODE, |d| u64::from(d).max(1));
        let linked = pool.hardware.device_link().is_some();
        for &gpus in counts.iter().filter(|&&g| pool.allows(g)) {
            for tp in divisors(gpus).filter(|tp| node.is_multiple_of(*tp)) {
                for pp in divisors(gpus / tp) {
                    if out.len() as u64 + impossible >= MAX_LAYOUTS {
                        return Err(Error::invalid(
                            "gpu_counts",
                            format!(
                                "the search would span more than {MAX_LAYOUTS} (device, count, tp, pp) layouts; give fewer device counts or devices"
                            ),
                        ));
                    }
                    let possible = (gpus == 1 || linked)
                        && m.heads.is_multiple_of(tp)
                        && (m.kv_heads.is_multiple_of(tp) || tp.is_multiple_of(m.kv_heads))
                        && pp <= m.layers
                        && (!req.base.sequence_parallel || seq.is_multiple_of(tp));
                    if !possible {
                        impossible += 1;
                        continue;
                    }
                    // the context-parallel degrees asked that divide the rest and the
                    // sequence (in 2 cp chunks, each rank's share in whole tokens per
                    // tensor-parallel rank under sequence parallelism), with fused
                    // attention; the others are counted
                    for &cp in &cps {
                        let rest = gpus / (tp * pp);
                        let usable = cp == 1
                            || (rest.is_multiple_of(cp)
                                && req.base.flash
                                && seq.is_multiple_of(2 * cp)
                                && (!req.base.sequence_parallel || (seq / cp).is_multiple_of(tp)));
                        if !usable {
                            if rest.is_multiple_of(cp) {
                                impossible += 1;
                            }
                            continue;
                        }
                        // expert parallelism for MoE models: powers of two dividing
                        // the data-parallel degree and the routed experts
                        let dp = rest / cp;
                        let eps = std::iter::successors(Some(1u64), |e| e.checked_mul(2))
                            .take_while(|&e| e <= dp)
                            .filter(|&e| {
                                e == 1
                                    || (m.is_moe()
                                        && dp.is_multiple_of(e)
                                        && m.experts.is_multiple_of(e))
                            });
                        for ep in eps {
                            out.push(Layout {
                                pool: i,
                                gpus,
                                tp,
                                pp,
                                cp,
                                ep,
                            });
                        }
                    }
                }
            }
        }
    }
    Ok((out, impossible))
}

/// The options searched on a layout (see the [module docs](super)): ZeRO 0 with one
/// data- and context-parallel rank, else 2 and 3; no and full recomputation (and selective without
/// fused attention); CPU offload with full training on a device with a host link.
fn options(req: &TrainPlanRequest, pool: &Pool, l: &Layout) -> Vec<Opt> {
    // ZeRO shards over the ranks that hold the same weights: data- and context-parallel
    let zeros: &[u64] = if l.dp() * l.cp == 1 { &[0] } else { &[2, 3] };
    let recomputes: &[Recompute] = if req.base.flash {
        &[Recompute::None, Recompute::Full]
    } else {
        &[Recompute::None, Recompute::Selective, Recompute::Full]
    };
    let mut out = Vec::new();
    for &method in &req.methods {
        let offloads: &[Offload] = if method == Method::Full && pool.hardware.host_link.is_some() {
            &[Offload::None, Offload::Cpu]
        } else {
            &[Offload::None]
        };
        for &zero in zeros {
            for &recompute in recomputes {
                for &offload in offloads {
                    out.push(Opt {
                        method,
                        zero,
                        recompute,
                        offload,
                    });
                }
            }
        }
    }
    out
}

/// Evaluates every option of every layout in parallel; returns the candidates and the
/// number of options the train model refused.
pub(super) fn evaluate(req: &TrainPlanRequest, layouts: &[Layout]) -> (Vec<Cand>, u64) {
    let w = work::current();
    work::start("plan --train", layouts.len() as u64);
    let per_layout: Vec<(Vec<Cand>, u64)> = layouts
        .par_iter()
        .map(|l| {
            let pool = &req.pools[l.pool];
            let mut cands = Vec::new();
            let mut refused = 0u64;
            // once stopped, the rest is skipped; the caller's check reports it
            if w.as_ref().is_some_and(|w| w.check().is_err()) {
                return (cands, refused);
            }
            for o in options(req, pool, l) {
                match evaluate_option(req, pool, l, o) {
                    Some(c) => cands.push(c),
                    None => refused += 1,
                }
            }
            work::within(w.as_ref(), || work::advance(1));
            (cands, refused)
        })
        .collect();
    let refused = per_layout.iter().map(|(_, r)| r).sum();
    (
        per_layout.into_iter().flat_map(|(c, _)| c).collect(),
        refused,
    )
}

/// `asked` rounded up to a multiple of `per_step`.
fn round_up(asked: u64, per_step: u64) -> u64 {
    asked.div_ceil(per_step).saturating_mul(per_step)
}

/// One option at the largest micro-batch that fits (or at 1 when none does); `None`
/// when the train model refuses it.
fn evaluate_option(req: &TrainPlanRequest, pool: &Pool, l: &Layout, o: Opt) -> Option<Cand> {
    let dp = l.dp();
    let per_pipeline = if l.pp > 1 { 4 * l.pp } else { 1 };
    let cap = (req.global_batch / (dp * per_pipeline)).clamp(1, MAX_MICRO_BATCH);
    let setting = |mb: u64| Setting {
        gpus: l.gpus,
        tp: l.tp,
        pp: l.pp,
        cp: l.cp,
        ep: l.ep,
        opt: o,
        micro_batch: mb,
        global_batch: round_up(req.global_batch, mb * dp),
        inter_node_bytes_per_s: pool.inter_node_bytes_per_s,
    };
    let host_ok = |bytes: f64| {
        pool.host_memory_per_device_bytes
            .is_none_or(|cap| bytes <= cap)
    };
    let trainer =
        |mb: u64| Trainer::new(&req.model, &pool.hardware, &setting(mb).config(&req.base));
    let first = trainer(1).ok()?;
    let fits = |mb: u64| {
        trainer(mb).is_ok_and(|t| {
            let (m, d) = t.memory_at(mb);
            m.fits && host_ok(d.host_optimizer_bytes)
        })
    };
    let mb = crate::search::largest(1, cap, fits).unwrap_or(1);
    let t = if mb == 1 { first } else { trainer(mb).ok()? };
    let (m, d) = t.memory_at(mb);
    let s = t.step();
    if !(s.tokens_per_s.is_finite() && s.tokens_per_s > 0.0) {
        return None;
    }
    let price = pool.usd_per_gpu_hour();
    let gpus = l.gpus as f64;
    let hours = req.tokens as f64 / (s.tokens_per_s * 3600.0);
    Some(Cand {
        layout: *l,
        opt: o,
        micro_batch: mb,
        global_batch: setting(mb).global_batch,
        inter_node_bytes_per_s: pool.inter_node_bytes_per_s,
        device_fits: m.fits,
        host_fits: host_ok(d.host_optimizer_bytes),
        memory_bytes: m.total_bytes,
        capacity_bytes: m.capacity_bytes,
        host_bytes: d.host_optimizer_bytes,
        host_capacity: pool.host_memory_per_device_bytes,
        tokens_per_s: s.tokens_per_s,
        step_time_s: s.time_s,
        mfu: s.mfu,
        hours,
        usd: price.map(|p| hours * p * gpus),
        usd_per_hour: price.map(|p| p * gpus),
    })
}

/// How close to the best objective another candidate counts as a near-tie: within 2%.
pub const NEAR_TIE: f64 = 0.02;

/// Devices, then the parallel dimensions and offloads in use (tp, pp, cp, ep > 1, CPU
/// offload): what a near-tie prefers fewer of.
fn complexity(c: &Cand) -> (u64, u32) {
    let l = &c.layout;
    (
        l.gpus,
        u32::from(l.tp > 1)
            + u32::from(l.pp > 1)
            + u32::from(l.cp > 1)
            + u32::from(l.ep > 1)
            + u32::from(c.opt.offload != Offload::None),
    )
}

/// `tp 1 pp 1 dp 8, ep 2` and the devices.
fn shape(c: &Cand) -> String {
    let l = &c.layout;
    let ep = if l.ep > 1 {
        format!(", ep {}", l.ep)
    } else {
        String::new()
    };
    let cp = if l.cp > 1 {
        format!(" cp {}", l.cp)
    } else {
        String::new()
    };
    format!(
        "{} devices (tp {}{cp} pp {} dp {}{ep})",
        l.gpus,
        l.tp,
        l.pp,
        l.dp()
    )
}

/// The first of `feasible` by `order`, unless a candidate within [`NEAR_TIE`] of its
/// `objective` needs fewer devices or a simpler layout ([`complexity`]): then that one,
/// with a sentence saying so (`what` names the objective: "cheapest", "fastest").
fn near_tie<'c>(
    feasible: &[&'c Cand],
    order: impl Fn(&Cand, &Cand) -> std::cmp::Ordering,
    objective: impl Fn(&Cand) -> f64,
    show: impl Fn(f64) -> String,
    what: &str,
) -> (Option<&'c Cand>, Option<String>) {
    let Some(first) = feasible.iter().copied().min_by(|a, b| order(a, b)) else {
        return (None, None);
    };
    let goal = objective(first);
    if !goal.is_finite() {
        return (Some(first), None);
    }
    let chosen = feasible
        .iter()
        .copied()
        .filter(|c| objective(c) <= goal * (1.0 + NEAR_TIE))
        .min_by(|a, b| complexity(a).cmp(&complexity(b)).then(order(a, b)))
        .unwrap_or(first);
    if complexity(chosen) >= complexity(first) {
        return (Some(first), None);
    }
    let why = if chosen.layout.gpus < first.layout.gpus {
        "fewer devices"
    } else {
        "a simpler layout"
    };
    let note = format!(
        "near-tie: {} at {} is within 2% of the {what}, {} at {}, and takes {why}",
        shape(chosen),
        show(objective(chosen)),
        shape(first),
        show(goal)
    );
    (Some(chosen), Some(note))
}

/// The cheapest (ties: faster, fewer devices; without prices, the fastest), or a
/// near-tie with fewer devices or a simpler layout (see [`near_tie`]).
pub(super) fn best<'c>(feasible: &[&'c Cand]) -> (Option<&'c Cand>, Option<String>) {
    let order = |a: &Cand, b: &Cand| {
        a.cost()
            .total_cmp(&b.cost())
            .then(a.hours.total_cmp(&b.hours))
            .then(a.layout.gpus.cmp(&b.layout.gpus))
    };
    let priced = feasible.iter().any(|c| c.usd.is_some());
    if priced {
        near_tie(
            feasible,
            order,
            Cand::cost,
            |usd| format!("${usd:.2}"),
            "cheapest",
        )
    } else {
        near_tie(
            feasible,
            order,
            |c| c.hours,
            |h| format!("{h:.3} h"),
            "fastest",
        )
    }
}

/// The fastest (ties: cheaper, fewer devices), or a near-tie with fewer devices or a
/// simpler layout (see [`near_tie`]).
pub(super) fn fastest<'c>(feasible: &[&'c Cand]) -> (Option<&'c Cand>, Option<String>) {
    near_tie(
        feasible,
        |a, b| {
            a.hours
                .total_cmp(&b.hours)
                .then(a.cost().total_cmp(&b.cost()))
                .then(a.layout.gpus.cmp(&b.layout.gpus))
        },
        |c| c.hours,
        |h| format!("{h:.3} h"),
        "fastest",
    )
}

/// The configurations no other beats on both cost and time (unknown cost = +inf),
/// cheapest first; of equal ones the first found.
pub(super) fn pareto<'c>(feasible: impl Iterator<Item = &'c Cand>) -> Vec<&'c Cand> {
    let mut sorted: Vec<&Cand> = feasible.collect();
    sorted.sort_by(|a, b| {
        a.cost()
            .total_cmp(&b.cost())
            .then(a.hours.total_cmp(&b.hours))
            .then(a.layout.gpus.cmp(&b.layout.gpus))
    });
    let mut front: Vec<&Cand> = Vec::new();
    for c in sorted {
        if front.last().is_none_or(|f| c.hours < f.hours) {
            front.push(c);
        }
    }
    front
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn divisors_and_rounding() {
        assert_eq!(divisors(12).collect::<Vec<_>>(), vec![1, 2, 3, 4, 6, 12]);
        assert_eq!(divisors(1).collect::<Vec<_>>(), vec![1]);
        assert_eq!(divisors(64).count(), 7);
        assert_eq!(round_up(256, 3), 258);
        assert_eq!(round_up(256, 64), 256);
        assert_eq!(round_up(256, 512), 512);
    }
}
