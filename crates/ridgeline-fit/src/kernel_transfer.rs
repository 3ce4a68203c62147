//! How well the measured kernel tables carry from one device to its sibling: every
//! device with a table is held out in turn, and each of its measured points is
//! predicted from the table of the sibling [`KernelDb::sibling`] picks among the rest
//! (through [`KernelDb::lookup`], as a prediction on a device without a table of its own
//! reads it). The kernel-level line of the README's accuracy section; printed by
//! `cargo run --release -q --example kernel_check -- --transfer`.

use crate::hardware::HardwareDb;
use crate::kernels::{KernelDb, OpClass, Shape, Source};
use std::collections::BTreeMap;

/// One held-out device, the sibling it was predicted from and an op class.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct TransferLine {
    /// The held-out device.
    pub device: String,
    /// The sibling whose table predicted it.
    pub sibling: String,
    /// The op class.
    pub op: OpClass,
    /// Predicted over measured kernel time, one per measured point.
    pub ratios: Vec<f64>,
}

/// What [`held_out_by_device`] finds.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct TransferCheck {
    /// Per held-out device, sibling and op class, in that order.
    pub lines: Vec<TransferLine>,
    /// `device (engine)` of every table no sibling within reach could predict.
    pub alone: Vec<String>,
}

impl TransferCheck {
    /// Per op class over every held-out device: the points, the median predicted /
    /// measured time and the median |ratio - 1|.
    pub fn by_op_class(&self) -> Vec<(OpClass, usize, f64, f64)> {
        let mut pooled: BTreeMap<OpClass, Vec<f64>> = BTreeMap::new();
        for l in &self.lines {
            pooled.entry(l.op).or_default().extend(&l.ratios);
        }
        pooled
            .into_iter()
            .map(|(op, r)| {
                let (ratio, error) = medians(&r);
                (op, r.len(), ratio, error)
            })
            .collect()
    }

    /// The README's table: one row per op class ([`TransferCheck::by_op_class`]).
    pub fn markdown(&self) -> String {
        let mut s = String::from(
            "| op class, held out by device | points | predicted / measured time | median \\|error\\| |\n|---|---:|---:|---:|\n",
        );
        for (op, n, ratio, error) in self.by_op_class() {
            s.push_str(&format!(
                "| `{}` | {n} | {ratio:.2} | {:.0}% |\n",
                op.name(),
                100.0 * error
            ));
        }
        s
    }
}

/// The median of `r` and the median of `|r - 1|` (`NaN` for none).
pub fn medians(r: &[f64]) -> (f64, f64) {
    use crate::stats::{median, median_abs};
    (
        median(r.iter().copied()),
        median_abs(r.iter().map(|x| x - 1.0)),
    )
}

/// Every device of `kernels` held out in turn and predicted from its sibling's table
/// among the rest (devices from `hardware`).
pub fn held_out_by_device(kernels: &KernelDb, hardware: &HardwareDb) -> TransferCheck {
    let mut ratios: BTreeMap<(String, String, OpClass), Vec<f64>> = BTreeMap::new();
    let mut alone = Vec::new();
    for (hw, t) in kernels.tables_on(hardware) {
        let mut rest = kernels.clone();
        rest.remove_device(&t.device);
        let mut any = false;
        for ((op, dtype, key), grid) in &t.grids {
            for (at, measured) in grid.points() {
                let Some(shape) = Shape::at(*op, key, at) else {
                    continue;
                };
                let Some((eff, Source::Transferred(from))) =
                    rest.lookup(hw, hardware, &t.backend, *op, dtype, &shape)
                else {
                    continue;
                };
                any = true;
                // predicted time roof / eff over measured time roof / measured
                ratios
                    .entry((t.device.clone(), from, *op))
                    .or_default()
                    .push(measured / eff);
            }
        }
        if !any {
            alone.push(format!("{} ({})", t.device, t.backend));
        }
    }
    alone.dedup();
    TransferCheck {
        lines: ratios
            .into_iter()
            .map(|((device, sibling, op), ratios)| TransferLine {
                device,
                sibling,
                op,
                ratios,
            })
            .collect(),
        alone,
    }
}
