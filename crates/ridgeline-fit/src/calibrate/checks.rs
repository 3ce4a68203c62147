//! Measurements no device or engine could produce, refused before any fit: a ceiling
//! (kind F) far below the datasheet, or a speed or time three orders of magnitude off
//! the ideal roofline. They are unit or typing errors (a TB/s figure under a GB/s unit,
//! a rate of 1e-300 tok/s), and the error names the row: file, line, value column, id.
//!
//! Without this a ceiling below the fit's lowest efficiency crossed the fit's bounds,
//! and a measured rate near zero overflowed `predicted / measured` and sent the fit's
//! step to NaN, so that another row's prediction failed and was blamed.

use super::many::Distinct;
use super::{Bounds, Case, Target};
use crate::engine::Engine;
use crate::error::{Error, Result};

/// How many times slower or faster than the ideal roofline (every efficiency 1, no
/// overhead) a kind A/B/C measurement may be. The bundled rows lie within a factor 5
/// of it; an engine at the fit's lowest efficiency (2%) with a large per-layer
/// overhead is within a few hundred.
pub const MAX_OFF_ROOFLINE: f64 = 1e3;

impl Case {
    /// An error about this row's measured value, naming the file, the line, the value
    /// column and the row id.
    pub(crate) fn value_error(&self, message: impl std::fmt::Display) -> Error {
        Error::Parse {
            source_name: self.file.clone(),
            message: format!(
                "line {}, column {} (value): {}: {message}",
                self.line, self.value_column, self.id
            ),
        }
    }

    /// `e`, a failure to predict this row, with the file, line and row id in front.
    pub(crate) fn row_error(&self, e: Error) -> Error {
        match e {
            Error::Internal { what, message } => Error::Internal {
                what,
                message: format!("{}: line {} ({}): {message}", self.file, self.line, self.id),
            },
            e => Error::Parse {
                source_name: self.file.clone(),
                message: format!("line {} ({}): {e}", self.line, self.id),
            },
        }
    }
}

/// A number for a message: four significant figures, in exponent form when tiny or huge
/// (`0.803`, `1e-310`, `3.21e12`).
pub(super) fn num(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return v.to_string();
    }
    let e = format!("{v:.3e}");
    let rounded: f64 = e.parse().unwrap_or(v);
    if (1e-4..1e6).contains(&rounded.abs()) {
        rounded.to_string()
    } else {
        // "1.000e-310" -> "1e-310", "3.210e12" -> "3.21e12"
        match e.split_once('e') {
            Some((m, x)) => {
                let m = m.trim_end_matches('0').trim_end_matches('.');
                format!("{m}e{x}")
            }
            None => e,
        }
    }
}

/// The unit a target's measured value is shown in, and its SI scale.
fn shown(t: Target) -> (&'static str, f64) {
    match t {
        Target::TtftS | Target::TpotS | Target::E2eS => ("s", 1.0),
        Target::MatmulFlopsPerS(_) => ("TFLOP/s", 1e12),
        Target::MemoryBytesPerS => ("GB/s", 1e9),
        _ => ("tok/s", 1.0),
    }
}

/// A kind F row's ceiling as a fraction of the datasheet figure must reach the fit's
/// lowest efficiency (`lowest`).
fn check_ceiling(c: &Case, lowest: f64) -> Result<()> {
    let (what, spec, hint) = match c.target {
        Target::MemoryBytesPerS => (
            "bandwidth ceiling".to_string(),
            c.hardware.memory.bandwidth_bytes_per_s,
            "a TB/s figure under a GB/s unit?",
        ),
        Target::MatmulFlopsPerS(d) => (
            format!("{d} matmul ceiling"),
            c.hardware.peak(d).0,
            "a GFLOP/s figure under a TFLOP/s unit?",
        ),
        _ => return Ok(()),
    };
    let fraction = c.measured / spec;
    if fraction >= lowest {
        return Ok(());
    }
    let (unit, scale) = shown(c.target);
    Err(c.value_error(format!(
        "a {what} of {} {unit} is {}% of the {} datasheet's {} {unit}; a ceiling below {}% of the datasheet is no measurement ({hint})",
        num(c.measured / scale),
        num(fraction * 100.0),
        c.hardware.id,
        num(spec / scale),
        num(lowest * 100.0),
    )))
}

/// A kind A/B/C row must lie within [`MAX_OFF_ROOFLINE`] of `ideal`, the ideal
/// roofline's prediction for it.
fn check_near_roofline(c: &Case, ideal: f64) -> Result<()> {
    // > 1: the measurement is slower than the ideal roofline; in logs, so that no
    // ratio overflows
    let ln_slower = if c.target.higher_is_faster() {
        ideal.ln() - c.measured.ln()
    } else {
        c.measured.ln() - ideal.ln()
    };
    let limit = MAX_OFF_ROOFLINE.ln();
    if ln_slower.abs() <= limit {
        return Ok(());
    }
    let (unit, scale) = shown(c.target);
    let way = if ln_slower > 0.0 { "slower" } else { "faster" };
    let model = c.model.as_ref().map_or("", |m| m.id.as_str());
    Err(c.value_error(format!(
        "{} {unit} is more than {} times {way} than the ideal roofline's {} {unit} for {model} on {} (a unit or typing error?)",
        num(c.measured / scale),
        num(MAX_OFF_ROOFLINE),
        num(ideal / scale),
        c.hardware.id,
    )))
}

/// Refuses rows no device or engine could produce (see the module documentation):
/// the first such row, in file order, is the error.
pub fn check_measurements(cases: &[Case]) -> Result<()> {
    let lowest = Bounds::default().min_efficiency;
    let rows: Vec<&Case> = cases.iter().filter(|c| c.model.is_some()).collect();
    let ideal = Distinct::new(&rows).predict(&Engine::ideal());
    let mut ideal = rows.iter().zip(ideal);
    for c in cases {
        if c.model.is_none() {
            check_ceiling(c, lowest)?;
        } else if let Some((c, p)) = ideal.next() {
            let p = p.map_err(|e| c.row_error(e))?;
            check_near_roofline(c, p)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_as_written() {
        for (v, s) in [
            (0.803, "0.803"),
            (0.803e9 / 1e9, "0.803"),
            (864.0, "864"),
            (1e-310, "1e-310"),
            (1e-300, "1e-300"),
            (0.0001, "0.0001"),
            (3.21e12, "3.21e12"),
            (1000.0, "1000"),
            (0.092_939_8, "0.09294"),
        ] {
            assert_eq!(num(v), s, "{v}");
        }
    }
}
