//! The plan's search: every (device, count, layout, formats, engine) the request
//! allows, each at powers of two up to the largest batch that fits; the cheapest, and
//! the Pareto front of what meets every target.

use super::{Config, Entry, NEAR_TIE, PlanRequest, Target, Targets, default_weight_formats};
use crate::dtype::Format;
use crate::engine::Engine;
use crate::error::Result;
use crate::hardware::Hardware;
use crate::memory::Parallel;
use crate::model::ModelConfig;
use crate::predict::{Evaluator, Predictor, Scenario, check_layout, resolve_formats_with};
use crate::sweep::Point;
use rayon::prelude::*;
use ridgeline_core::work;

use super::MAX_PLAN_BATCH;

/// One evaluated configuration, compact.
#[derive(Debug, Clone, Copy)]
pub(super) struct Cand {
    /// Index of its [`Layout`].
    pub layout: usize,
    pub batch: u64,
    pub max_batch: u64,
    pub fits: bool,
    pub ttft_s: f64,
    pub tpot_s: f64,
    pub decode_tokens_per_s: f64,
    pub output_tokens_per_s: f64,
    pub total_bytes: f64,
    pub capacity_bytes: f64,
    pub usd_per_hour: Option<f64>,
    pub usd_per_million_tokens: Option<f64>,
}

impl Cand {
    /// USD per million tokens, infinite without a price.
    pub(crate) fn cost(&self) -> f64 {
        self.usd_per_million_tokens.unwrap_or(f64::INFINITY)
    }

    /// Which of [`Target::CHECKED`] it misses.
    pub(crate) fn violations(&self, t: &Targets) -> [bool; 5] {
        [
            !self.fits,
            t.max_ttft_s.is_some_and(|x| self.ttft_s > x),
            t.max_tpot_s.is_some_and(|x| self.tpot_s > x),
            t.min_output_tokens_per_s
                .is_some_and(|x| self.output_tokens_per_s < x),
            t.max_usd_per_hour
                .is_some_and(|x| self.usd_per_hour.is_none_or(|p| p > x)),
        ]
    }

    /// Fits and meets every target.
    pub(crate) fn meets(&self, t: &Targets) -> bool {
        !self.violations(t).iter().any(|&v| v)
    }

    /// Its own value of the quantity a target limits (memory: bytes per device).
    pub(crate) fn value(&self, target: Target) -> Option<f64> {
        match target {
            Target::Memory => Some(self.total_bytes),
            Target::MaxTtft => Some(self.ttft_s),
            Target::MaxTpot => Some(self.tpot_s),
            Target::MinThroughput => Some(self.output_tokens_per_s),
            Target::MaxUsdPerHour | Target::SearchSpace => self.usd_per_hour,
        }
    }
}

/// One (device, count, layout, weights, kv, engine).
#[derive(Debug, Clone, Copy)]
pub(super) struct Layout<'a> {
    pub hw: &'a Hardware,
    pub gpus: u64,
    pub parallel: Parallel,
    /// Expert-parallel groups (1: none).
    pub ep: u64,
    pub weights: Option<Format>,
    /// The routed experts' format (`None`: `weights`, else the checkpoint's).
    pub expert_weights: Option<Format>,
    pub kv: Option<Format>,
    pub engine: &'a Engine,
}

impl<'a> Layout<'a> {
    /// This layout's devices and formats with the request's attention kernel and
    /// speculation, the rest as [`Scenario::default`] (batch 1).
    pub(crate) fn scenario(&self, req: &PlanRequest<'_>) -> Scenario {
        Scenario {
            weights: self.weights,
            expert_weights: self.expert_weights,
            kv: self.kv,
            gpus: self.gpus,
            parallel: self.parallel,
            ep: self.ep,
            flash: req.flash,
            spec: req.spec,
            inter_node_bytes_per_s: req.inter_node_bytes_per_s,
            overlap_ep: req.overlap_ep && self.ep > 1,
            expert_imbalance: if self.ep > 1 {
                req.expert_imbalance
            } else {
                1.0
            },
            ..Scenario::default()
        }
    }

    /// The predictor of this layout for `req` (its kernel tables where given, its
    /// draft model where named).
    pub(crate) fn predictor<'r>(
        &self,
        req: &'r PlanRequest<'_>,
        s: &Scenario,
    ) -> Result<Predictor<'r>>
    where
        'a: 'r,
    {
        match &req.kernels {
            Some(k) => k.predictor(&req.model, self.hw, self.engine, s),
            None => Predictor::new(&req.model, self.hw, self.engine, s),
        }?
        .with_draft_if(req.draft.as_ref())
    }

    /// The configuration of `c` in this layout, formats resolved for `model`.
    pub(crate) fn config(&self, c: &Cand, model: &ModelConfig) -> Config {
        let prec = resolve_formats_with(model, self.weights, self.expert_weights, self.kv);
        Config {
            gpus: self.gpus,
            gpu: self.hw.id.clone(),
            parallel: self.parallel,
            ep: self.ep,
            weights: prec.weights,
            kv: prec.kv,
            batch: c.batch,
        }
    }

    /// This layout, serving no rate for `reason`.
    pub(crate) fn unserved(&self, model: &ModelConfig, reason: String) -> super::Unserved {
        let prec = resolve_formats_with(model, self.weights, self.expert_weights, self.kv);
        super::Unserved {
            gpu: self.hw.id.clone(),
            gpus: self.gpus,
            parallel: self.parallel,
            ep: self.ep,
            weights: prec.weights,
            kv: prec.kv,
            engine: self.engine.id.clone(),
            reason,
        }
    }

    /// The report entry of `c` in this layout.
    pub(crate) fn entry(&self, c: &Cand, req: &PlanRequest<'_>) -> Entry {
        let (model, prompt, gen_tokens) = (&req.model, req.prompt, req.gen_tokens);
        let cfg = self.config(c, model);
        let own = &req.ownership;
        let n = self.gpus as f64;
        let basis = c.usd_per_hour.map(|_| req.price_basis);
        // unpriced: the rental provider where one is known, no date
        let (price_provider, price_date) = match basis {
            Some(b) => super::price_origin(self.hw, b),
            None => (
                self.hw.price.as_ref().and_then(|p| p.provider.clone()),
                None,
            ),
        };
        Entry {
            model: model.id.clone(),
            gpu: cfg.gpu,
            gpus: self.gpus,
            parallel: self.parallel,
            ep: self.ep,
            weights: cfg.weights,
            kv: cfg.kv,
            engine: self.engine.id.clone(),
            batch: c.batch,
            prompt,
            gen_tokens,
            fits: c.fits,
            ttft_s: c.ttft_s,
            tpot_s: c.tpot_s,
            decode_tokens_per_s: c.decode_tokens_per_s,
            output_tokens_per_s: c.output_tokens_per_s,
            total_bytes: c.total_bytes,
            capacity_bytes: c.capacity_bytes,
            max_batch: c.max_batch,
            usd_per_hour: c.usd_per_hour,
            usd_per_million_tokens: c.usd_per_million_tokens,
            priced: c.usd_per_hour.is_some(),
            price_basis: basis,
            price_provider,
            price_date,
            own_usd_per_hour: own.own_usd_per_hour(self.hw).map(|h| h * n),
            breakeven_utilisation: own.breakeven_utilisation(self.hw),
            replicas: None,
            rate_per_replica: None,
            limited_by: None,
        }
    }
}

/// Every layout the request asks for: up to a node both tensor and pipeline parallel,
/// beyond a node pipeline parallel, and for a mixture-of-experts model expert groups
/// whose tensor parallelism fits a node.
/// Layouts the model cannot use (see [`check_layout`]) are not built, only counted: a
/// device-count list of any length costs memory for the possible layouts alone.
pub(super) fn layouts<'a>(req: &PlanRequest<'a>) -> (Vec<Layout<'a>>, u64) {
    let kv_set = req
        .kv
        .clone()
        .unwrap_or_else(|| vec![None, Some(Format::Fp8)]);
    let mut layouts = Vec::new();
    let mut impossible = 0u64;
    for &hw in &req.devices {
        let weights = req
            .weights
            .clone()
            .unwrap_or_else(|| default_weight_formats(hw));
        let per_node = u64::from(hw.devices_per_node.unwrap_or(8)).max(1);
        for &gpus in &req.gpu_counts {
            // a mixture-of-experts model is also served with its experts spread over
            // groups of the devices and attention data-parallel across the groups: every
            // group count that divides the devices, from two groups of gpus/2
            // tensor-parallel devices up to one device per group (expert parallelism
            // over all of them, as SGLang's and vLLM's wide-EP deployments run); beyond
            // a node, the groups' tensor parallelism stays within one (the all-to-all
            // crosses the network)
            let moe_ep = req.model.experts > 1 && gpus > 1;
            let parallels: &[Parallel] = if gpus == 1 {
                &[Parallel::Tp]
            } else if gpus <= per_node || moe_ep {
                &[Parallel::Tp, Parallel::Pp]
            } else {
                &[Parallel::Pp]
            };
            for &parallel in parallels {
                let eps: Vec<u64> = if moe_ep && parallel == Parallel::Tp {
                    (1..=gpus)
                        .filter(|&ep| gpus.is_multiple_of(ep) && gpus / ep <= per_node)
                        .collect()
                } else {
                    vec![1]
                };
                for ep in eps {
                    // a stated imbalance above the group count would put more than
                    // every routed row on one rank
                    let unbalanced = ep > 1
                        && crate::predict::check_expert_imbalance(req.expert_imbalance, ep)
                            .is_err();
                    if unbalanced || check_layout(&req.model, hw, gpus, parallel, ep).is_err() {
                        let n = weights.len() * kv_set.len() * req.engines.len();
                        impossible = impossible.saturating_add(n as u64);
                        continue;
                    }
                    for (&w, &k, &engine) in product3(&weights, &kv_set, &req.engines) {
                        layouts.push(Layout {
                            hw,
                            gpus,
                            parallel,
                            ep,
                            weights: w,
                            expert_weights: req.expert_weights,
                            kv: k,
                            engine,
                        });
                    }
                }
            }
        }
    }
    (layouts, impossible)
}

/// The cross product of three slices, first slowest.
fn product3<'s, A, B, C>(
    a: &'s [A],
    b: &'s [B],
    c: &'s [C],
) -> impl Iterator<Item = (&'s A, &'s B, &'s C)> {
    a.iter()
        .flat_map(move |x| b.iter().flat_map(move |y| c.iter().map(move |z| (x, y, z))))
}

/// Predicts every layout at powers of two up to its largest batch that fits (and that
/// batch); returns the candidates and the number of layouts the model cannot use.
pub(super) fn evaluate(req: &PlanRequest<'_>, layouts: &[Layout<'_>]) -> (Vec<Cand>, u64) {
    let w = work::current();
    work::start("plan", layouts.len() as u64);
    let results: Vec<Option<Vec<Cand>>> = layouts
        .par_iter()
        .enumerate()
        .map(|(i, l)| {
            // once stopped, the rest is skipped; the caller's check reports it
            work::within(w.as_ref(), || {
                let c = work::check().ok().and_then(|_| evaluate_layout(req, i, l));
                work::advance(1);
                c
            })
        })
        .collect();
    let skipped = results.iter().filter(|r| r.is_none()).count() as u64;
    (results.into_iter().flatten().flatten().collect(), skipped)
}

fn evaluate_layout(req: &PlanRequest<'_>, i: usize, l: &Layout<'_>) -> Option<Vec<Cand>> {
    let (prompt, gen_tokens) = (req.prompt, req.gen_tokens);
    let s = Scenario {
        prompt,
        gen_tokens,
        ..l.scenario(req)
    };
    let p = l.predictor(req, &s).ok()?;
    let price =
        super::device_hour(l.hw, &req.ownership, req.price_basis).map(|x| x * l.gpus as f64);
    let max_batch = p.max_batch(prompt, gen_tokens);
    let top = max_batch.clamp(1, MAX_PLAN_BATCH);
    let mut batches: Vec<u64> =
        std::iter::successors(Some(1u64), |b| b.checked_mul(2).filter(|&n| n <= top)).collect();
    if batches.last() != Some(&top) {
        batches.push(top);
    }
    let mut ev = Evaluator::new(&p);
    let cand = |b: u64| {
        let pt = Point::new(ev.summary(b, prompt, gen_tokens), b, gen_tokens, price);
        Cand {
            layout: i,
            batch: b,
            max_batch,
            fits: pt.fits(),
            ttft_s: pt.ttft_s,
            tpot_s: pt.tpot_s,
            decode_tokens_per_s: pt.decode_tokens_per_s,
            output_tokens_per_s: pt.output_tokens_per_s,
            total_bytes: pt.total_bytes(),
            capacity_bytes: pt.summary.memory.capacity_bytes,
            usd_per_hour: price,
            usd_per_million_tokens: pt.usd_per_million_tokens,
        }
    };
    Some(batches.into_iter().map(cand).collect())
}

/// Devices, then whether the model is split at all: what a near-tie prefers fewer of
/// (a serving layout splits over one dimension, tensor or pipeline).
fn complexity(l: &Layout<'_>) -> (u64, u32) {
    (l.gpus, u32::from(l.gpus > 1) + u32::from(l.ep > 1))
}

/// The cheapest feasible candidate (ties: lower TPOT, fewer devices); without prices,
/// the most output tokens/s per device. A candidate within [`NEAR_TIE`] of that
/// objective with fewer devices or a simpler layout ([`complexity`]) is chosen instead,
/// with a sentence saying so.
pub(super) fn best<'c>(
    feasible: &[&'c Cand],
    layouts: &[Layout<'_>],
    priced: bool,
) -> (Option<&'c Cand>, Option<String>) {
    let gpus = |c: &Cand| layouts[c.layout].gpus as f64;
    best_with(feasible, layouts, priced, |c| {
        -c.output_tokens_per_s / gpus(c)
    })
}

/// [`best`] with `unpriced` as the objective (lower is better) when nothing feasible
/// has a price: `plan --rate` ranks by the devices its fleet needs.
pub(super) fn best_with<'c>(
    feasible: &[&'c Cand],
    layouts: &[Layout<'_>],
    priced: bool,
    unpriced: impl Fn(&Cand) -> f64,
) -> (Option<&'c Cand>, Option<String>) {
    let gpus = |c: &Cand| layouts[c.layout].gpus as f64;
    // the objective, lower is better
    let objective = |c: &Cand| {
        if priced { c.cost() } else { unpriced(c) }
    };
    let order = |a: &&Cand, b: &&Cand| {
        objective(a)
            .total_cmp(&objective(b))
            .then(a.tpot_s.total_cmp(&b.tpot_s))
            .then(gpus(a).total_cmp(&gpus(b)))
    };
    let Some(first) = feasible.iter().copied().min_by(order) else {
        return (None, None);
    };
    let goal = objective(first);
    if !goal.is_finite() {
        return (Some(first), None);
    }
    // within 2% of the goal: at most 1.02 x the cost, at least 0.98 x the tokens/s
    let close = |c: &Cand| objective(c) <= goal + NEAR_TIE * goal.abs();
    let simplest = |c: &&Cand| complexity(&layouts[c.layout]);
    let chosen = feasible
        .iter()
        .copied()
        .filter(|c| close(c))
        .min_by(|a, b| simplest(a).cmp(&simplest(b)).then(order(a, b)))
        .unwrap_or(first);
    if simplest(&chosen) >= simplest(&first) {
        return (Some(first), None);
    }
    let (lc, lf) = (&layouts[chosen.layout], &layouts[first.layout]);
    let why = if lc.gpus < lf.gpus {
        "fewer devices"
    } else {
        "a simpler layout"
    };
    let show = |c: &Cand| {
        if priced {
            format!("${:.3} per million output tokens", c.cost())
        } else {
            format!(
                "{:.0} output tokens/s per device",
                c.output_tokens_per_s / gpus(c)
            )
        }
    };
    let name = |l: &Layout<'_>| {
        if l.ep > 1 {
            format!(
                "{} x {} ({}, ep {})",
                l.gpus,
                l.hw.id,
                l.parallel.name(),
                l.ep
            )
        } else if l.gpus > 1 {
            format!("{} x {} ({})", l.gpus, l.hw.id, l.parallel.name())
        } else {
            format!("1 x {}", l.hw.id)
        }
    };
    let note = format!(
        "near-tie: {} at {} is within 2% of the best by the objective, {} at {}, and takes {why}",
        name(lc),
        show(chosen),
        name(lf),
        show(first)
    );
    (Some(chosen), Some(note))
}

/// Without a price, a feasible candidate is ranked apart: for each unpriced device,
/// its candidate needing the fewest devices (`devices`), ties broken by more output
/// tokens/s per device; fewest devices first. Empty when nothing feasible is priced
/// (then `best` ranks them all by tokens/s per device).
pub(super) fn unpriced<'c>(
    feasible: &[&'c Cand],
    layouts: &[Layout<'_>],
    priced: bool,
    devices: impl Fn(&Cand) -> u64,
) -> Vec<&'c Cand> {
    if !priced {
        return Vec::new();
    }
    let per_device = |c: &Cand| c.output_tokens_per_s / layouts[c.layout].gpus as f64;
    let rank = |a: &&Cand, b: &&Cand| {
        devices(a)
            .cmp(&devices(b))
            .then(per_device(b).total_cmp(&per_device(a)))
    };
    let mut out: Vec<&Cand> = Vec::new();
    for c in feasible
        .iter()
        .copied()
        .filter(|c| c.usd_per_hour.is_none())
    {
        let id = &layouts[c.layout].hw.id;
        match out.iter_mut().find(|o| &layouts[o.layout].hw.id == id) {
            Some(o) => {
                if rank(&c, o).is_lt() {
                    *o = c;
                }
            }
            None => out.push(c),
        }
    }
    out.sort_by(rank);
    out
}

/// The Pareto front over (cost, TPOT, -throughput), unknown cost = +inf, cheapest first.
pub(super) fn pareto<'c>(feasible: &[&'c Cand]) -> Vec<&'c Cand> {
    let mut sorted = feasible.to_vec();
    sorted.sort_by(|a, b| {
        a.cost()
            .total_cmp(&b.cost())
            .then(a.tpot_s.total_cmp(&b.tpot_s))
            .then(b.output_tokens_per_s.total_cmp(&a.output_tokens_per_s))
    });
    let mut front: Vec<&Cand> = Vec::new();
    for c in sorted {
        let dominated = front.iter().any(|f| {
            f.cost() <= c.cost()
                && f.tpot_s <= c.tpot_s
                && f.output_tokens_per_s >= c.output_tokens_per_s
        });
        if !dominated {
            front.push(c);
        }
    }
    front
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::EngineDb;
    use crate::hardware::HardwareDb;

    fn cand(layout: usize, usd_m: f64) -> Cand {
        Cand {
            layout,
            batch: 8,
            max_batch: 8,
            fits: true,
            ttft_s: 0.1,
            tpot_s: 0.01,
            decode_tokens_per_s: 100.0,
            output_tokens_per_s: 100.0,
            total_bytes: 1.0,
            capacity_bytes: 2.0,
            usd_per_hour: Some(1.0),
            usd_per_million_tokens: Some(usd_m),
        }
    }

    #[test]
    fn a_near_tie_takes_fewer_devices_and_says_so() {
        let hw = HardwareDb::builtin().unwrap().get("h100-sxm").unwrap();
        let engine = EngineDb::builtin().unwrap().get("typical").unwrap();
        let layout = |gpus| Layout {
            hw,
            gpus,
            parallel: Parallel::Tp,
            ep: 1,
            weights: None,
            expert_weights: None,
            kv: None,
            engine,
        };
        let layouts = [layout(1), layout(2)];
        // 2 devices 1% cheaper ($0.99 vs $1.00 per million tokens): within 2%, so 1 device
        let (one, two) = (cand(0, 1.00), cand(1, 0.99));
        let (chosen, note) = best(&[&two, &one], &layouts, true);
        assert_eq!(chosen.unwrap().layout, 0);
        let note = note.unwrap();
        assert!(
            note.contains("1 x h100-sxm") && note.contains("fewer devices"),
            "{note}"
        );
        // 3% cheaper is not a near-tie: the cheaper, without a note
        let two = cand(1, 0.97);
        let (chosen, note) = best(&[&one, &two], &layouts, true);
        assert_eq!((chosen.unwrap().layout, note), (1, None));
        // the single device already cheapest: no note
        let two = cand(1, 1.01);
        let (chosen, note) = best(&[&one, &two], &layouts, true);
        assert_eq!((chosen.unwrap().layout, note), (0, None));
    }
}
