//! Ceilings on the fitted efficiencies, from the kind F rows (achievable bandwidth and
//! matmul rate).

use super::{Case, Kind, Target};
use crate::engine::memory_group;
use crate::error::{Error, Result};
use serde::Serialize;
use std::collections::BTreeMap;

/// Upper bounds on efficiencies (from measured ceilings) and on the overhead.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Bounds {
    /// Highest memory efficiency by memory group.
    pub memory: BTreeMap<String, f64>,
    /// Highest memory efficiency for groups without a ceiling.
    pub memory_default: f64,
    /// Highest compute efficiency.
    pub compute: f64,
    /// Lowest efficiency the fit may reach.
    pub min_efficiency: f64,
    /// Largest per-pass overhead, s (per layer for [`super::fit::OverheadKind::Layer`]).
    pub max_overhead_s: f64,
    /// Ids of the rows the bounds came from.
    pub from: Vec<String>,
}

impl Default for Bounds {
    fn default() -> Self {
        Bounds {
            memory: BTreeMap::new(),
            memory_default: 1.0,
            compute: 1.0,
            min_efficiency: 0.02,
            max_overhead_s: 0.1,
            from: Vec::new(),
        }
    }
}

impl Bounds {
    /// The ceiling of memory group `group`.
    pub(crate) fn memory_for(&self, group: &str) -> f64 {
        self.memory
            .get(group)
            .copied()
            .unwrap_or(self.memory_default)
    }

    /// Checks that the bounds hold a fit: the lowest efficiency in (0, 1], every
    /// ceiling between it and 1, the overhead limit a number >= 0. (Ceilings from
    /// measurements are checked row by row first, see [`super::check_measurements`].)
    pub(crate) fn check(&self) -> Result<()> {
        let lo = self.min_efficiency;
        if !(lo > 0.0 && lo <= 1.0) {
            return Err(Error::invalid(
                "bounds.min_efficiency",
                format!("must be in (0, 1], got {lo}"),
            ));
        }
        let ceiling = |field: String, v: f64| {
            if (lo..=1.0).contains(&v) {
                Ok(())
            } else {
                Err(Error::invalid(
                    field,
                    format!("ceiling {v} is not between the lowest efficiency {lo} and 1"),
                ))
            }
        };
        for (g, v) in &self.memory {
            ceiling(format!("bounds.memory.{g}"), *v)?;
        }
        ceiling("bounds.memory_default".into(), self.memory_default)?;
        ceiling("bounds.compute".into(), self.compute)?;
        if !(self.max_overhead_s >= 0.0 && self.max_overhead_s.is_finite()) {
            return Err(Error::invalid(
                "bounds.max_overhead_s",
                format!("must be a number >= 0, got {}", self.max_overhead_s),
            ));
        }
        Ok(())
    }
}

/// Ceilings from kind F rows: per memory group, the highest measured fraction of
/// datasheet bandwidth (STREAM triad, or an engine author's "empirical peak"); for
/// compute the highest measured fraction of dense peak (MAMF). Groups with no row take
/// the highest fraction over all groups.
pub fn bounds_from_ceilings(cases: &[Case]) -> Bounds {
    let mut b = Bounds::default();
    let mut any_mem: f64 = 0.0;
    let mut comp: f64 = 0.0;
    for c in cases.iter().filter(|c| c.kind == Kind::F) {
        match c.target {
            Target::MemoryBytesPerS => {
                let f = c.measured / c.hardware.memory.bandwidth_bytes_per_s;
                if f > 0.0 && f <= 1.0 {
                    let g = memory_group(&c.hardware).to_string();
                    let e = b.memory.entry(g).or_insert(0.0);
                    *e = e.max(f);
                    any_mem = any_mem.max(f);
                    b.from.push(c.id.clone());
                }
            }
            Target::MatmulFlopsPerS(d) => {
                let f = c.measured / c.hardware.sustained_peak(d).0;
                if f > 0.0 && f <= 1.0 {
                    comp = comp.max(f);
                    b.from.push(c.id.clone());
                }
            }
            _ => {}
        }
    }
    if any_mem > 0.0 {
        b.memory_default = any_mem;
    }
    if comp > 0.0 {
        b.compute = comp;
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ceilings_from_f_rows() {
        let rows = crate::calibrate::parse_measurements(
            crate::calibrate::BUILTIN_MEASUREMENTS_CSV,
            "m.csv",
        )
        .unwrap();
        let m = crate::calibrate::cases(&rows).unwrap();
        let b = bounds_from_ceilings(&m.cases);
        // A40: 663 / 696 GB/s; matmul: the A100 PCIe's MAMF against the rate its board
        // power sustains, 252.9 / (312 x 0.75^(1/3)) = 252.9 / 283.47 = 0.892, above the
        // A100 SXM's 271.2 / 312 = 0.869
        assert!((b.memory["gddr"] - 663.0 / 696.0).abs() < 1e-9, "{b:?}");
        let sustained = 312.0 * 0.75f64.cbrt();
        assert!((b.compute - 252.9 / sustained).abs() < 1e-9, "{b:?}");
        assert!(b.memory["hbm"] < 0.95 && b.memory["hbm"] > 0.85, "{b:?}");
    }
}
