//! `ridgeline calibrate`: the engine fit and the training fit, each written to its
//! `--save` file only when the fit succeeds, and the 80% interval bands
//! (`--save-intervals`).

use super::commands::{Ctx, named, to_json};
use crate::model::ModelDb;
use crate::{Error, Result, files, report};
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// `ridgeline calibrate` (engines).
pub fn calibrate(
    ctx: &Ctx,
    measurements: &Path,
    engine: Option<&str>,
    save: Option<&PathBuf>,
    markdown: bool,
    json: bool,
) -> Result<String> {
    use crate::calibrate::{
        accuracy_with_progress, calibrate_with_progress, engines_file, engines_toml,
    };
    // check the target before the fit, write it only when the fit succeeds
    let target = save
        .map(|p| files::AtomicFile::create(p).map_err(|e| named("--save", e)))
        .transpose()?;
    let rows = crate::calibrate::read_measurements(measurements)?;
    let mapped = crate::calibrate::cases_with(&rows, &ctx.hardware, ModelDb::builtin()?);
    // a \r-updated line on a terminal's stderr when the work takes long
    let line = report::calibration::ProgressLine::stderr();
    let progress = |what: &str, done, total| line.update(what, done, total);
    if markdown {
        let a = accuracy_with_progress(&mapped, &ctx.engines, &progress)?;
        line.finish();
        return Ok(report::calibration::accuracy_markdown(&a));
    }
    let cal = calibrate_with_progress(&mapped, &ctx.engines, engine, &progress)?;
    line.finish();
    if let (Some(mut file), Some(path)) = (target, save) {
        let text = if engine.is_some() {
            engines_toml(&cal, &mapped)?
        } else {
            let previous = path.exists().then(|| files::read_text(path)).transpose()?;
            engines_file(&cal, &mapped, &ctx.engines, previous.as_deref())?
        };
        file.file()
            .write_all(text.as_bytes())
            .map_err(|e| Error::write(format!("--save {}", path.display()), e))?;
        file.commit().map_err(|e| named("--save", e))?;
        eprintln!(
            "saved {} fitted engine profile(s) to {}",
            cal.engines.len(),
            path.display()
        );
    }
    if json {
        to_json(&cal)
    } else {
        Ok(report::calibration::text(&cal))
    }
}

/// `calibrate --train`: fits the training efficiencies to the kind-D rows.
pub fn calibrate_train(measurements: &Path, save: Option<&Path>, json: bool) -> Result<String> {
    let target = save
        .map(|p| files::AtomicFile::create(p).map_err(|e| named("--save", e)))
        .transpose()?;
    let fit = crate::train::calibrate::fit_file(measurements)?;
    if let (Some(mut file), Some(path)) = (target, save) {
        let text = crate::train::calibrate::fit_toml(&fit, measurements)?;
        file.file()
            .write_all(text.as_bytes())
            .map_err(|e| Error::write(format!("--save {}", path.display()), e))?;
        file.commit().map_err(|e| named("--save", e))?;
        eprintln!("saved training factors to {}", path.display());
    }
    if json {
        to_json(&fit)
    } else {
        Ok(report::train::calibration(&fit))
    }
}

/// `calibrate --save-intervals FILE`: the 80% interval bands from held-out errors.
pub fn calibrate_intervals(
    ctx: &Ctx,
    measurements: &Path,
    path: &Path,
    json: bool,
) -> Result<String> {
    let flag = "--save-intervals";
    let mut file = files::AtomicFile::create(path).map_err(|e| named(flag, e))?;
    let rows = crate::calibrate::read_measurements(measurements)?;
    let mapped = crate::calibrate::cases_with(&rows, &ctx.hardware, ModelDb::builtin()?);
    let bands = crate::calibrate::interval_bands(&rows, &mapped, &ctx.engines)?;
    let text = crate::calibrate::intervals_toml(&bands.db, &measurements.display().to_string());
    file.file()
        .write_all(text.as_bytes())
        .map_err(|e| Error::write(format!("{flag} {}", path.display()), e))?;
    file.commit().map_err(|e| named(flag, e))?;
    eprintln!("saved interval bands to {}", path.display());
    if json {
        to_json(&bands.db)
    } else {
        Ok(report::calibration::intervals(&bands))
    }
}
