//! Why the plan's best is the best: which target keeps cheaper configurations out (or
//! every configuration, when nothing qualifies), with the closest miss. Reasons are
//! data here; `ridgeline::report::plan` turns them into sentences.

use super::search::{Cand, Layout};
use super::{Binding, MAX_PLAN_BATCH, Target, Targets};
use crate::dtype::Format;
use crate::memory::Parallel;
use crate::model::ModelConfig;

/// A configuration named in a reason.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Devices.
    pub gpus: u64,
    /// Device id.
    pub gpu: String,
    /// How the devices split the model.
    pub parallel: Parallel,
    /// Expert-parallel groups (1: none).
    pub ep: u64,
    /// Weight format.
    pub weights: Format,
    /// KV format.
    pub kv: Format,
    /// Sequences.
    pub batch: u64,
}

/// What "better" means for the best: cheaper per token, or (without prices) more
/// tokens per device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    /// Lower USD per million output tokens.
    Cheaper,
    /// More output tokens/s per device.
    MoreTokensPerDevice,
}

/// The configuration that misses a target by the least.
#[derive(Debug, Clone, PartialEq)]
pub struct Miss {
    /// The configuration.
    pub config: Config,
    /// Its value of the target's quantity (memory: bytes per device).
    pub value: f64,
    /// The limit (memory: capacity per device, bytes).
    pub limit: f64,
    /// Its and the best's USD per million tokens, when both have a price.
    pub usd_per_million_tokens: Option<(f64, f64)>,
}

/// Why a target binds.
#[derive(Debug, Clone, PartialEq)]
pub enum Reason {
    /// `count` better configurations miss only this target; `closest` is the nearest
    /// miss (`None`: they also miss other targets; `count` is then all that miss it).
    BetterMiss {
        /// The target.
        target: Target,
        /// How many.
        count: u64,
        /// Better how.
        better: Better,
        /// The nearest miss.
        closest: Option<Miss>,
    },
    /// The best already runs the largest batch that fits.
    LargestBatch {
        /// Its batch.
        batch: u64,
        /// Its memory per device, bytes.
        total_bytes: f64,
        /// Capacity per device, bytes.
        capacity_bytes: f64,
        /// Better how.
        better: Better,
    },
    /// No target binds: nothing better was found in the search.
    NothingBetter {
        /// The largest batch searched.
        max_batch: u64,
    },
    /// Nothing fits; the smallest footprint (`None`: no layout is possible at all).
    NothingFits {
        /// The configuration with the smallest footprint relative to capacity, its
        /// bytes per device and the capacity.
        smallest: Option<(Config, f64, f64)>,
    },
    /// No configuration that fits reaches the target (with `others_met`: none of
    /// those meeting the other targets does).
    BestReachable {
        /// The target.
        target: Target,
        /// The limit asked.
        limit: f64,
        /// The best value reached and by which configuration.
        reached: Option<(f64, Config)>,
        /// Whether only configurations meeting the other targets were considered.
        others_met: bool,
    },
}

/// The search results the reasons are drawn from.
pub(super) struct Context<'c, 'a> {
    pub cands: &'c [Cand],
    pub targets: &'c Targets,
    pub layouts: &'c [Layout<'a>],
    pub model: &'c ModelConfig,
}

impl Context<'_, '_> {
    fn config(&self, c: &Cand) -> Config {
        self.layouts[c.layout].config(c, self.model)
    }

    /// How far `c` misses `target` (a ratio > 1 the farther).
    fn miss_ratio(&self, c: &Cand, target: Target) -> f64 {
        match (c.value(target), target.limit(self.targets)) {
            _ if target == Target::Memory => c.total_bytes / c.capacity_bytes,
            (Some(v), Some(l)) if target == Target::MinThroughput => l / v,
            (Some(v), Some(l)) => v / l,
            _ => f64::INFINITY,
        }
    }

    /// Why nothing better than `best` qualifies.
    pub(crate) fn why_best(&self, best: &Cand, priced: bool) -> Vec<Binding> {
        let better = if priced {
            Better::Cheaper
        } else {
            Better::MoreTokensPerDevice
        };
        // the rank `best` wins on: lower is better
        let rank = |c: &Cand| {
            if priced {
                c.cost()
            } else {
                -c.output_tokens_per_s
            }
        };
        let (mut sole, mut any) = ([0u64; 5], [0u64; 5]);
        // per target, of the better configurations that miss only that target, the one
        // that misses it by the least
        let mut example: [Option<&Cand>; 5] = [None; 5];
        for c in self.cands.iter().filter(|c| rank(c) < rank(best)) {
            let v = c.violations(self.targets);
            let alone = v.iter().filter(|&&x| x).count() == 1;
            for (i, &target) in Target::CHECKED.iter().enumerate().filter(|(i, _)| v[*i]) {
                any[i] += 1;
                if alone {
                    sole[i] += 1;
                    let closer = |e: &Cand| {
                        self.miss_ratio(c, target)
                            .total_cmp(&self.miss_ratio(e, target))
                            .then(rank(e).total_cmp(&rank(c)))
                            .is_lt()
                    };
                    if example[i].is_none_or(closer) {
                        example[i] = Some(c);
                    }
                }
            }
        }
        let most = |n: &[u64; 5]| (0..5).max_by_key(|&i| (n[i], std::cmp::Reverse(i)));
        let pick = if sole.iter().any(|&n| n > 0) {
            most(&sole)
        } else if any.iter().any(|&n| n > 0) {
            most(&any)
        } else {
            None
        };
        let binding = match pick {
            Some(i) => self.better_miss(
                best,
                Target::CHECKED[i],
                better,
                sole[i],
                any[i],
                example[i],
            ),
            None => self.nothing_better(best, better),
        };
        vec![binding]
    }

    fn better_miss(
        &self,
        best: &Cand,
        target: Target,
        better: Better,
        sole: u64,
        any: u64,
        example: Option<&Cand>,
    ) -> Binding {
        let limit = match target {
            Target::Memory => Some(best.capacity_bytes),
            t => t.limit(self.targets),
        };
        let closest = example.and_then(|e| {
            let (value, limit) = match target {
                Target::Memory => (e.total_bytes, e.capacity_bytes),
                t => (e.value(t).unwrap_or(f64::NAN), limit?),
            };
            Some(Miss {
                config: self.config(e),
                value,
                limit,
                usd_per_million_tokens: e.usd_per_million_tokens.zip(best.usd_per_million_tokens),
            })
        });
        Binding {
            target,
            limit,
            best_reachable: best.value(target),
            reason: Reason::BetterMiss {
                target,
                count: if closest.is_some() { sole } else { any },
                better,
                closest,
            },
        }
    }

    fn nothing_better(&self, best: &Cand, better: Better) -> Binding {
        if best.batch >= best.max_batch {
            return Binding {
                target: Target::Memory,
                limit: Some(best.capacity_bytes),
                best_reachable: Some(best.total_bytes),
                reason: Reason::LargestBatch {
                    batch: best.batch,
                    total_bytes: best.total_bytes,
                    capacity_bytes: best.capacity_bytes,
                    better,
                },
            };
        }
        Binding {
            target: Target::SearchSpace,
            limit: None,
            best_reachable: None,
            reason: Reason::NothingBetter {
                max_batch: MAX_PLAN_BATCH,
            },
        }
    }

    /// Which targets no configuration reaches, with the best value reachable.
    pub(crate) fn why_none(&self) -> Vec<Binding> {
        let fitting: Vec<&Cand> = self.cands.iter().filter(|c| c.fits).collect();
        if fitting.is_empty() {
            let smallest = self.cands.iter().min_by(|a, b| {
                (a.total_bytes / a.capacity_bytes).total_cmp(&(b.total_bytes / b.capacity_bytes))
            });
            return vec![Binding {
                target: Target::Memory,
                limit: smallest.map(|c| c.capacity_bytes),
                best_reachable: smallest.map(|c| c.total_bytes),
                reason: Reason::NothingFits {
                    smallest: smallest.map(|c| (self.config(c), c.total_bytes, c.capacity_bytes)),
                },
            }];
        }
        // targets no fitting configuration reaches on their own
        let alone: Vec<Binding> = Target::CHECKED[1..]
            .iter()
            .filter_map(|&t| self.unreached(t, &fitting, false))
            .collect();
        if !alone.is_empty() {
            return alone;
        }
        // each target alone is reachable, not all together: the best value of each
        // among configurations meeting the others
        Target::CHECKED[1..]
            .iter()
            .enumerate()
            .filter_map(|(k, &t)| {
                let others: Vec<&Cand> = fitting
                    .iter()
                    .copied()
                    .filter(|c| {
                        let v = c.violations(self.targets);
                        (1..5).all(|j| j == k + 1 || !v[j])
                    })
                    .collect();
                self.unreached(t, &others, true)
            })
            .collect()
    }

    /// The best value of `target` among `pool` (`None` when the target is open, or, on
    /// its own, when the best reaches it).
    fn unreached(&self, target: Target, pool: &[&Cand], others_met: bool) -> Option<Binding> {
        let limit = target.limit(self.targets)?;
        let higher_is_better = target == Target::MinThroughput;
        let mut best: Option<(f64, &Cand)> = None;
        for c in pool {
            if let Some(v) = c.value(target) {
                let better = |b: f64| if higher_is_better { v > b } else { v < b };
                if best.is_none_or(|(b, _)| better(b)) {
                    best = Some((v, c));
                }
            }
        }
        let reached_limit = best.is_some_and(|(v, _)| {
            if higher_is_better {
                v >= limit
            } else {
                v <= limit
            }
        });
        if reached_limit && !others_met {
            return None;
        }
        Some(Binding {
            target,
            limit: Some(limit),
            best_reachable: best.map(|(v, _)| v),
            reason: Reason::BestReachable {
                target,
                limit,
                reached: best.map(|(v, c)| (v, self.config(c))),
                others_met,
            },
        })
    }
}
