//! The reasons of a training plan as sentences ([`super::TrainReason`], [`super::Lack`]),
//! which is also how they serialize in JSON, and the number formats they share with the
//! plan text (hours, dollars, a configuration in words).

use super::{Answer, Lack, TrainEntry, TrainReason, TrainTarget};
use crate::train::{Method, Offload, Recompute};
use crate::units::sig3;
use std::fmt;

/// Hours for people: minutes below one hour, days beside them from two days on.
pub fn hours(h: f64) -> String {
    if !h.is_finite() {
        "n/a".into()
    } else if h < 1.0 {
        format!("{} min", sig3(h * 60.0))
    } else if h < 48.0 {
        format!("{} h", sig3(h))
    } else {
        format!("{} h ({} days)", sig3(h), sig3(h / 24.0))
    }
}

/// Dollars: cents below $1000, whole dollars with thousands separators above.
pub fn usd(x: f64) -> String {
    if !x.is_finite() {
        return "n/a".into();
    }
    if x < 1000.0 {
        return format!("${x:.2}");
    }
    let digits = format!("{x:.0}");
    let mut out = String::from("$");
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Bytes in GB (1e9), as the plan text prints them.
pub fn gb(bytes: f64) -> String {
    format!("{} GB", sig3(bytes / 1e9))
}

/// Dollars, or a dash without a price.
pub fn usd_opt(x: Option<f64>) -> String {
    x.map_or("no price".into(), usd)
}

/// The method as people say it.
pub fn method_name(m: Method) -> &'static str {
    match m {
        Method::Full => "full fine-tune",
        Method::Lora => "LoRA",
        Method::Qlora => "QLoRA",
    }
}

/// The devices of an entry: `2 x a100-80gb-sxm`, with instances `16 x a100-80gb-sxm in 2
/// x p4de.24xlarge`.
pub fn devices(e: &TrainEntry) -> String {
    match (&e.instance, e.instances) {
        (Some(name), Some(k)) => format!("{} x {} in {k} x {name}", e.gpus, e.gpu),
        _ => format!("{} x {}", e.gpus, e.gpu),
    }
}

/// The layout and options of an entry in a few words.
pub fn layout(e: &TrainEntry) -> String {
    let cp = if e.cp > 1 {
        format!(" cp {}", e.cp)
    } else {
        String::new()
    };
    let mut parts = vec![format!("tp {}{cp} pp {} dp {}", e.tp, e.pp, e.dp)];
    if e.ep > 1 {
        parts.push(format!("ep {}", e.ep));
    }
    if e.dp > 1 || e.zero > 0 {
        parts.push(format!("ZeRO-{}", e.zero));
    }
    match e.recompute {
        Recompute::None => {}
        r => parts.push(format!("{r} recomputation")),
    }
    if e.offload == Offload::Cpu {
        parts.push("optimizer on the CPU".into());
    }
    parts.push(format!("micro-batch {}", e.micro_batch));
    parts.join(", ")
}

/// `QLoRA on 1 x rtx-4090 (tp 1 pp 1 dp 1, micro-batch 4)`.
pub fn config(e: &TrainEntry) -> String {
    format!(
        "{} on {} ({})",
        method_name(e.method),
        devices(e),
        layout(e)
    )
}

impl fmt::Display for Lack {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Lack::DeviceMemory {
                needed_bytes,
                capacity_bytes,
            } => write!(
                f,
                "needs {} of {} per device",
                gb(needed_bytes),
                gb(capacity_bytes)
            ),
            Lack::HostMemory {
                needed_bytes,
                capacity_bytes,
            } => write!(
                f,
                "offloads {} of optimizer states per device to a host with {} per device",
                gb(needed_bytes),
                gb(capacity_bytes)
            ),
            Lack::Time { hours: h, limit } => {
                write!(f, "takes {}, over the {} asked", hours(h), hours(limit))
            }
            Lack::Budget {
                usd: Some(u),
                limit,
            } => {
                write!(f, "costs {}, over the {} budget", usd(u), usd(limit))
            }
            Lack::Budget { usd: None, limit } => {
                write!(f, "has no price to hold against the {} budget", usd(limit))
            }
        }
    }
}

impl fmt::Display for TrainReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TrainReason::Better {
                answer,
                count,
                next,
                lack,
            } => {
                let (what, value) = if *answer == Answer::Fastest {
                    ("faster", hours(next.hours))
                } else {
                    ("cheaper", usd_opt(next.usd))
                };
                write!(
                    f,
                    "{count} {what} {} a limit; the closest, {} at {value}, {lack}",
                    if *count == 1 {
                        "configuration misses"
                    } else {
                        "configurations miss"
                    },
                    config(next)
                )
            }
            TrainReason::NothingBetter { answer, searched } => write!(
                f,
                "nothing {} was found among the {searched} configurations searched",
                if *answer == Answer::Fastest {
                    "faster (more devices: --gpus)"
                } else {
                    "cheaper"
                }
            ),
            TrainReason::NothingFits {
                closest: Some((e, lack)),
            } => write!(f, "nothing fits: the closest, {}, {lack}", config(e)),
            TrainReason::NothingFits { closest: None } => {
                f.write_str("no layout of the model is possible on these devices")
            }
            TrainReason::BestReachable {
                target,
                limit,
                reached,
                others_met,
            } => {
                let head = if *others_met {
                    "with the other target met, "
                } else {
                    ""
                };
                match (target, reached) {
                    (TrainTarget::MaxHours, Some((v, e))) => write!(
                        f,
                        "{head}the shortest reachable is {}, with {}, over the {} asked",
                        hours(*v),
                        config(e),
                        hours(*limit)
                    ),
                    (_, Some((v, e))) => write!(
                        f,
                        "{head}the cheapest reachable is {}, with {}, over the {} budget",
                        usd(*v),
                        config(e),
                        usd(*limit)
                    ),
                    (_, None) => write!(f, "{head}no configuration reaches it (no priced device)"),
                }
            }
        }
    }
}

impl serde::Serialize for TrainReason {
    /// As its sentence.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// The CLI flag of a target (`memory` and `search_space` as named).
pub fn target_flag(t: TrainTarget) -> &'static str {
    match t {
        TrainTarget::MaxHours => "--max-hours",
        TrainTarget::BudgetUsd => "--budget-usd",
        other => other.name(),
    }
}
