//! What several test files need and is slow to compute, computed once per run: the
//! bundled measurements mapped to cases, the calibration of every engine on them, and
//! the bundled engines' accuracy in sample and held out (leave one row out, leave one
//! source out).

use ridgeline::calibrate::{Accuracy, Calibration, Mapped, accuracy, calibrate, cases};
use ridgeline::calibrate::{BUILTIN_MEASUREMENTS_CSV, Measurement, parse_measurements};
use ridgeline::engine::EngineDb;
use std::sync::OnceLock;

/// The bundled measurement rows.
pub fn rows() -> &'static [Measurement] {
    static ROWS: OnceLock<Vec<Measurement>> = OnceLock::new();
    ROWS.get_or_init(|| parse_measurements(BUILTIN_MEASUREMENTS_CSV, "measurements.csv").unwrap())
}

/// The bundled rows mapped to cases.
pub fn mapped() -> &'static Mapped {
    static MAPPED: OnceLock<Mapped> = OnceLock::new();
    MAPPED.get_or_init(|| cases(rows()).unwrap())
}

/// Every engine fitted to the bundled rows (what `data/engines.toml` is written from).
pub fn calibration() -> &'static Calibration {
    static CAL: OnceLock<Calibration> = OnceLock::new();
    CAL.get_or_init(|| calibrate(mapped(), EngineDb::builtin().unwrap(), None).unwrap())
}

/// The bundled engines' accuracy on the bundled rows, in sample and held out.
pub fn bundled_accuracy() -> &'static Accuracy {
    static ACCURACY: OnceLock<Accuracy> = OnceLock::new();
    ACCURACY.get_or_init(|| accuracy(mapped(), EngineDb::builtin().unwrap()).unwrap())
}

/// The bundled rows mapped to cases that read the bundled kernel tables where a table
/// covers the row's device and engine (how the CLI predicts by default).
pub fn tables_mapped() -> &'static Mapped {
    static MAPPED: OnceLock<Mapped> = OnceLock::new();
    MAPPED.get_or_init(|| {
        mapped()
            .clone()
            .with_kernels(ridgeline::calibrate::CaseKernels {
                db: ridgeline::kernels::KernelDb::builtin().unwrap().clone(),
                hardware: ridgeline::hardware::HardwareDb::builtin().unwrap().clone(),
            })
    })
}

/// The bundled engines' accuracy on [`tables_mapped`], in sample and held out.
pub fn tables_accuracy() -> &'static Accuracy {
    static ACCURACY: OnceLock<Accuracy> = OnceLock::new();
    ACCURACY.get_or_init(|| accuracy(tables_mapped(), EngineDb::builtin().unwrap()).unwrap())
}
