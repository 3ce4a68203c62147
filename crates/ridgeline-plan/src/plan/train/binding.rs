//! Why the training plan's best and fastest are what they are: the next configuration
//! that would have been cheaper (or faster) and the limit it misses, or, when nothing
//! qualifies, the limit nothing meets with the best value reachable. Reasons are data;
//! `ridgeline::report::train_plan` turns them into sentences.

use super::search::Cand;
use super::{Pool, TrainEntry, TrainTargets};
use serde::Serialize;

crate::named_enum! {
    /// What a training plan is held to.
    pub enum TrainTarget: "training plan target" {
        /// Device memory (with instances, also host memory for offloaded states).
        Memory = "memory",
        /// The deadline, `--max-hours`.
        MaxHours = "max_hours",
        /// The budget, `--budget-usd`.
        BudgetUsd = "budget_usd",
        /// Nothing binds: nothing better was found among the configurations searched.
        SearchSpace = "search_space",
    }
}

crate::named_enum! {
    /// Which answer of the plan a binding explains.
    pub enum Answer: "plan answer" {
        /// The cheapest configuration that qualifies.
        Best = "best",
        /// The fastest configuration that qualifies.
        Fastest = "fastest",
        /// Nothing qualifies.
        None = "none",
    }
}

/// What a configuration lacks to qualify (JSON: an object with `kind` and its numbers).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Lack {
    /// Device memory: what one device needs and holds, bytes.
    DeviceMemory {
        /// Needed per device.
        needed_bytes: f64,
        /// Capacity per device.
        capacity_bytes: f64,
    },
    /// Host memory for the optimizer states offloaded from each device, bytes.
    HostMemory {
        /// Needed per device.
        needed_bytes: f64,
        /// The instance's host memory per device.
        capacity_bytes: f64,
    },
    /// Time: its hours against the deadline.
    Time {
        /// Its hours.
        hours: f64,
        /// `--max-hours`.
        limit: f64,
    },
    /// Money: its cost (`None`: no price) against the budget.
    Budget {
        /// Its USD.
        usd: Option<f64>,
        /// `--budget-usd`.
        limit: f64,
    },
}

impl Lack {
    /// The target it misses.
    pub(crate) fn target(&self) -> TrainTarget {
        match self {
            Lack::DeviceMemory { .. } | Lack::HostMemory { .. } => TrainTarget::Memory,
            Lack::Time { .. } => TrainTarget::MaxHours,
            Lack::Budget { .. } => TrainTarget::BudgetUsd,
        }
    }
}

/// Why a target binds.
#[derive(Debug, Clone, PartialEq)]
pub enum TrainReason {
    /// `count` configurations would be better (cheaper for the best, faster for the
    /// fastest) but each misses a limit; `next` is the one closest to the answer and
    /// `lack` what it misses.
    Better {
        /// The answer explained.
        answer: Answer,
        /// How many better configurations miss a limit.
        count: u64,
        /// The closest of them.
        next: Box<TrainEntry>,
        /// What it lacks.
        lack: Lack,
    },
    /// Nothing better exists among the configurations searched.
    NothingBetter {
        /// The answer explained.
        answer: Answer,
        /// Configurations searched.
        searched: u64,
    },
    /// Nothing fits; the configuration closest to fitting and what it lacks (`None`:
    /// no configuration could be laid out at all).
    NothingFits {
        /// The closest configuration.
        closest: Option<(Box<TrainEntry>, Lack)>,
    },
    /// No configuration that fits reaches a target (with `others_met`: none of those
    /// that meet the other target does); the best value reached and by which.
    BestReachable {
        /// The target.
        target: TrainTarget,
        /// Its limit.
        limit: f64,
        /// The best value and its configuration (`None`: nothing has a value, e.g. no
        /// priced device against a budget).
        reached: Option<(f64, Box<TrainEntry>)>,
        /// Whether only configurations meeting the other target were considered.
        others_met: bool,
    },
}

/// A limit that keeps the best (or fastest) from being better, or that nothing meets.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct TrainBinding {
    /// The answer it explains: `best`, `fastest`, or `none` when nothing qualifies.
    pub answer: Answer,
    /// What binds.
    pub target: TrainTarget,
    /// The limit (SI units: hours, USD; for memory the capacity per device, bytes).
    pub limit: Option<f64>,
    /// With an answer: the answer's own value of the target's quantity. Without: the
    /// best value any configuration that fits reaches.
    pub best_reachable: Option<f64>,
    /// Why, as data (serialized as one sentence, see `ridgeline::report::train_plan`).
    #[serde(rename = "message")]
    pub reason: TrainReason,
}

/// The search results the reasons are drawn from.
pub(super) struct Context<'c> {
    pub cands: &'c [Cand],
    pub targets: &'c TrainTargets,
    pub pools: &'c [Pool],
}

/// A candidate's value of a target's quantity (memory: bytes per device).
fn value(c: &Cand, target: TrainTarget) -> Option<f64> {
    match target {
        TrainTarget::Memory => Some(c.memory_bytes),
        TrainTarget::MaxHours => Some(c.hours),
        TrainTarget::BudgetUsd => c.usd,
        TrainTarget::SearchSpace => None,
    }
}

/// What a lack needs (bytes, hours or USD; no price: infinite).
fn needed(lack: &Lack) -> f64 {
    match *lack {
        Lack::DeviceMemory { needed_bytes, .. } | Lack::HostMemory { needed_bytes, .. } => {
            needed_bytes
        }
        Lack::Time { hours, .. } => hours,
        Lack::Budget { usd, .. } => usd.unwrap_or(f64::INFINITY),
    }
}

/// The limit a lack is measured against.
fn limit_of(lack: &Lack) -> f64 {
    match *lack {
        Lack::DeviceMemory { capacity_bytes, .. } | Lack::HostMemory { capacity_bytes, .. } => {
            capacity_bytes
        }
        Lack::Time { limit, .. } | Lack::Budget { limit, .. } => limit,
    }
}

impl Context<'_> {
    fn entry(&self, c: &Cand) -> Box<TrainEntry> {
        Box::new(c.entry(self.pools))
    }

    /// Why nothing cheaper (best) or faster (fastest) than `answer` qualifies: the
    /// better configuration closest to it and what it lacks.
    pub(crate) fn why(&self, answer: &Cand, of: Answer) -> TrainBinding {
        let rank = |c: &Cand| {
            if of == Answer::Best {
                c.cost()
            } else {
                c.hours
            }
        };
        let better: Vec<&Cand> = self
            .cands
            .iter()
            .filter(|c| rank(c) < rank(answer))
            .collect();
        let next = better.iter().copied().max_by(|a, b| {
            rank(a)
                .total_cmp(&rank(b))
                .then(b.layout.gpus.cmp(&a.layout.gpus))
        });
        match next.and_then(|n| n.lack(self.targets).map(|l| (n, l))) {
            Some((n, lack)) => TrainBinding {
                answer: of,
                target: lack.target(),
                limit: Some(limit_of(&lack)),
                best_reachable: value(answer, lack.target()),
                reason: TrainReason::Better {
                    answer: of,
                    count: better.len() as u64,
                    next: self.entry(n),
                    lack,
                },
            },
            None => TrainBinding {
                answer: of,
                target: TrainTarget::SearchSpace,
                limit: None,
                best_reachable: None,
                reason: TrainReason::NothingBetter {
                    answer: of,
                    searched: self.cands.len() as u64,
                },
            },
        }
    }

    /// Which limits nothing meets, with the best value reachable.
    pub(crate) fn why_none(&self) -> Vec<TrainBinding> {
        let fitting: Vec<&Cand> = self.cands.iter().filter(|c| c.fits()).collect();
        if fitting.is_empty() {
            let ratio = |c: &Cand| {
                c.lack(&TrainTargets::default())
                    .map_or(0.0, |l| needed(&l) / limit_of(&l))
            };
            let closest = self
                .cands
                .iter()
                .min_by(|a, b| ratio(a).total_cmp(&ratio(b)))
                .and_then(|c| c.lack(&TrainTargets::default()).map(|l| (c, l)));
            return vec![TrainBinding {
                answer: Answer::None,
                target: TrainTarget::Memory,
                limit: closest.map(|(_, l)| limit_of(&l)),
                best_reachable: closest.map(|(_, l)| needed(&l)),
                reason: TrainReason::NothingFits {
                    closest: closest.map(|(c, l)| (self.entry(c), l)),
                },
            }];
        }
        let targets = [TrainTarget::MaxHours, TrainTarget::BudgetUsd];
        let alone: Vec<TrainBinding> = targets
            .iter()
            .filter_map(|&t| self.unreached(t, &fitting, false))
            .collect();
        if !alone.is_empty() {
            return alone;
        }
        // each target alone is reachable, not both together: the best value of each
        // among the configurations that meet the other
        targets
            .iter()
            .filter_map(|&t| {
                let others: Vec<&Cand> = fitting
                    .iter()
                    .copied()
                    .filter(|c| c.lack(self.targets).is_none_or(|l| l.target() == t))
                    .collect();
                self.unreached(t, &others, true)
            })
            .collect()
    }

    /// The best value of `target` among `pool` when it misses the limit (or, with
    /// `others_met`, always); `None` when the target is open or reached.
    fn unreached(
        &self,
        target: TrainTarget,
        pool: &[&Cand],
        others_met: bool,
    ) -> Option<TrainBinding> {
        let limit = match target {
            TrainTarget::MaxHours => self.targets.max_hours,
            TrainTarget::BudgetUsd => self.targets.budget_usd,
            _ => None,
        }?;
        let best = pool
            .iter()
            .filter_map(|c| value(c, target).map(|v| (v, *c)))
            .min_by(|a, b| a.0.total_cmp(&b.0));
        if !others_met && best.is_some_and(|(v, _)| v <= limit) {
            return None;
        }
        Some(TrainBinding {
            answer: Answer::None,
            target,
            limit: Some(limit),
            best_reachable: best.map(|(v, _)| v),
            reason: TrainReason::BestReachable {
                target,
                limit,
                reached: best.map(|(v, c)| (v, self.entry(c))),
                others_met,
            },
        })
    }
}
