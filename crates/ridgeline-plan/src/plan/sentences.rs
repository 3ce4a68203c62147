//! The reasons of a plan as sentences ([`super::Reason`], [`super::Config`]), which is
//! also how they serialize in JSON; the plan text around them is the renderers'.

use super::{Better, Config, Miss, Reason, Target};
use std::fmt;

fn ms(s: f64) -> String {
    crate::units::fmt_seconds(s)
}

/// The CLI flag a plan target comes from (`memory` for the capacity limit).
pub fn target_flag(target: Target) -> &'static str {
    match target {
        Target::MaxTtft => "--max-ttft-ms",
        Target::MaxTpot => "--max-tpot-ms",
        Target::MinThroughput => "--min-throughput",
        Target::MaxUsdPerHour => "--budget-usd-per-hour",
        Target::SearchSpace => "the search space",
        other => other.name(),
    }
}

impl fmt::Display for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} x {}", self.gpus, self.gpu)?;
        if self.ep > 1 {
            write!(f, " ({}, ep {})", self.parallel, self.ep)?;
        } else if self.gpus > 1 {
            write!(f, " ({})", self.parallel)?;
        }
        write!(
            f,
            ", weights {}, kv {}, batch {}",
            self.weights, self.kv, self.batch
        )
    }
}

/// "TTFT 2.1 s > 2 s asked": how a value misses a target's limit.
fn shortfall(target: Target, value: f64, limit: f64) -> String {
    match target {
        Target::MaxTtft => format!("TTFT {} > {} asked", ms(value), ms(limit)),
        Target::MaxTpot => format!("TPOT {} > {} asked", ms(value), ms(limit)),
        Target::MinThroughput => format!("{value:.0} tokens/s < {limit:.0} asked"),
        _ => format!("${value:.2}/h > ${limit:.2}/h budget"),
    }
}

fn configurations(n: u64) -> String {
    format!("{n} configuration{}", if n == 1 { "" } else { "s" })
}

fn costs(m: &Miss) -> String {
    match m.usd_per_million_tokens {
        Some((a, b)) => format!(" (${a:.3} vs ${b:.3} per million tokens)"),
        None => String::new(),
    }
}

fn would(better: Better) -> &'static str {
    match better {
        Better::Cheaper => "would cost less",
        Better::MoreTokensPerDevice => "would produce more tokens per device",
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::BetterMiss {
                target,
                count,
                better,
                closest,
            } => {
                let head = format!("{} {}", configurations(*count), would(*better));
                match (target, closest) {
                    (Target::Memory, Some(m)) => write!(
                        f,
                        "{head} but do not fit; the closest, {}, needs {:.1} of {:.1} GB per device{}",
                        m.config,
                        m.value / 1e9,
                        m.limit / 1e9,
                        costs(m)
                    ),
                    (Target::Memory, None) => write!(f, "{head} but do not fit in memory"),
                    (t, Some(m)) => write!(
                        f,
                        "{head} but miss it; the closest miss, {}, has {}{}",
                        m.config,
                        shortfall(*t, m.value, m.limit),
                        costs(m)
                    ),
                    (t, None) => write!(f, "{head} but miss {t} (with other targets too)"),
                }
            }
            Reason::LargestBatch {
                batch,
                total_bytes,
                capacity_bytes,
                better,
            } => write!(
                f,
                "batch {batch} is the largest that fits ({:.1} of {:.1} GB per device); a larger batch {}",
                total_bytes / 1e9,
                capacity_bytes / 1e9,
                match better {
                    Better::Cheaper => "would cost less per token",
                    Better::MoreTokensPerDevice => "would produce more tokens per device",
                }
            ),
            Reason::NothingBetter { max_batch } => write!(
                f,
                "no target binds: nothing cheaper was found among the configurations searched (batch at most {max_batch})"
            ),
            Reason::NothingFits {
                smallest: Some((c, bytes, capacity)),
            } => write!(
                f,
                "nothing fits in memory: the smallest footprint is {:.1} GB per device on {c} ({:.1} GB)",
                bytes / 1e9,
                capacity / 1e9
            ),
            Reason::NothingFits { smallest: None } => {
                f.write_str("no layout of the model is possible on these devices")
            }
            Reason::BestReachable {
                target,
                limit,
                reached,
                others_met,
            } => match (reached, others_met) {
                (Some((v, c)), false) => write!(
                    f,
                    "the best reachable is {} ({c})",
                    shortfall(*target, *v, *limit)
                ),
                (None, false) => f.write_str("the best reachable is nothing (no priced device)"),
                (Some((v, c)), true) => write!(
                    f,
                    "with the other targets met, the best reachable is {} ({c})",
                    shortfall(*target, *v, *limit)
                ),
                (None, true) => f.write_str("no configuration meets the other targets either"),
            },
        }
    }
}

impl serde::Serialize for Reason {
    /// As its sentence.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}
