//! `ridgeline calibrate`: the engine fit and the training fit, each written to its
//! `--save` file only when the fit succeeds, the 80% interval bands
//! (`--save-intervals`), and the report of errors against simpler predictors
//! (`--report`).

use super::context::{Ctx, named, to_json};
use crate::calibrate::{Mapped, Measurement};
use crate::model::ModelDb;
use crate::{Error, Result, files, report};
use clap::Args;
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// Options of `ridgeline calibrate`.
#[derive(Args, Clone)]
pub struct CalibrateArgs {
    /// Measurements CSV (columns id,kind,gpu,num_gpus,model,precision,batch,
    /// prompt_len,gen_len,framework,metric,value,unit,source_url_or_repo_path,notes).
    #[arg(long, value_name = "FILE.csv")]
    pub measurements: PathBuf,
    /// Fit only this engine (default: every engine with rows, and typical).
    #[arg(long)]
    pub engine: Option<String>,
    /// Write the fitted engines to an engines TOML (load it with --engine-file):
    /// with --engine, that engine; without, the whole database as fitted to these
    /// measurements (engines without rows take typical's factors; `##` remarks of
    /// the file written over are kept). With --train, the fitted training factors
    /// as a training.toml.
    #[arg(long, value_name = "FILE.toml")]
    pub save: Option<PathBuf>,
    /// Print the accuracy table (median errors per kind: in sample, leave one out,
    /// leave one source out) in Markdown instead of the fit.
    #[arg(long, conflicts_with_all = ["json", "train"])]
    pub markdown: bool,
    /// Fit the training efficiency factors (kind D rows) instead of the engines.
    #[arg(long, conflicts_with = "engine")]
    pub train: bool,
    /// Instead of the fit, write the 80% interval bands (percentiles of held-out
    /// measured / predicted per kind and engine; kinds D and E from the training fit)
    /// as an intervals TOML, the format of data/intervals.toml.
    #[arg(long, value_name = "FILE.toml", conflicts_with_all = ["engine", "save", "markdown", "train"])]
    pub save_intervals: Option<PathBuf>,
    /// Instead of the fit, report the errors per kind (median and 90th percentile)
    /// under the pure roofline, one flat bandwidth factor, the engines fitted in
    /// sample and left out by source, the rows held out worst, and each engine's
    /// held-out error.
    #[arg(long, conflicts_with_all = ["engine", "save", "save_intervals", "markdown", "train"])]
    pub report: bool,
    /// Measured kernel tables the rows are predicted with where they cover an op
    /// (`none`, `bundled`, or a directory: as for `predict --kernels`); an engine
    /// with rows on a device a table covers then fits a per-pass overhead and no
    /// per-layer one. With --save, the file holds only those engines' profiles: the
    /// schema of data/engines-kernels.toml, which `--kernels` predictions use.
    #[arg(long = "kernels", default_value = "none", value_name = "none|bundled|DIR", value_parser = super::KernelsArg::parse, conflicts_with_all = ["train", "save_intervals", "report"])]
    pub kernels: super::KernelsArg,
    /// With --report: how many of the rows held out worst to list (default 10).
    #[arg(long, value_name = "N", requires = "report", allow_negative_numbers = true, value_parser = clap::value_parser!(u64).range(1..))]
    pub worst: Option<u64>,
}

/// `ridgeline calibrate` with its options: the fit, `--train`, `--save-intervals` or
/// `--report`.
pub fn run(ctx: &Ctx, a: &CalibrateArgs, json: bool) -> Result<String> {
    if let Some(path) = &a.save_intervals {
        calibrate_intervals(ctx, &a.measurements, path, json)
    } else if a.train {
        calibrate_train(&a.measurements, a.save.as_deref(), json)
    } else if a.report {
        let worst = a.worst.map_or(crate::calibrate::DEFAULT_WORST, |n| {
            usize::try_from(n).unwrap_or(usize::MAX)
        });
        calibrate_report(ctx, &a.measurements, worst, json)
    } else {
        let engine = a.engine.as_deref();
        calibrate(
            ctx,
            &a.measurements,
            engine,
            &a.kernels,
            a.save.as_ref(),
            a.markdown,
            json,
        )
    }
}

/// The rows of the measurements file, and those rows mapped with the context's devices.
fn read(ctx: &Ctx, measurements: &Path) -> Result<(Vec<Measurement>, Mapped)> {
    let rows = crate::calibrate::read_measurements(measurements)?;
    let mapped = crate::calibrate::cases_with(&rows, &ctx.hardware, ModelDb::builtin()?);
    Ok((rows, mapped))
}

/// `calibrate --report`: the errors per kind under four predictors, the `worst` rows
/// held out worst, and each engine's held-out error.
pub fn calibrate_report(
    ctx: &Ctx,
    measurements: &Path,
    worst: usize,
    json: bool,
) -> Result<String> {
    let (_, mapped) = read(ctx, measurements)?;
    let progress = progress();
    let r = crate::calibrate::calibration_report(&mapped, &ctx.engines, worst, &progress)?;
    if json {
        to_json(&r)
    } else {
        Ok(report::calibration_report::text(&r))
    }
}

/// `ridgeline calibrate` (engines).
pub fn calibrate(
    ctx: &Ctx,
    measurements: &Path,
    engine: Option<&str>,
    kernels: &super::KernelsArg,
    save: Option<&PathBuf>,
    markdown: bool,
    json: bool,
) -> Result<String> {
    use crate::calibrate::{
        accuracy_with_progress, calibrate_with_progress, engines_file, engines_toml,
        kernel_engines_toml,
    };
    // check the target before the fit, write it only when the fit succeeds
    let target = save
        .map(|p| files::AtomicFile::create(p).map_err(|e| named("--save", e)))
        .transpose()?;
    let tables = kernels.load()?;
    let (_, mut mapped) = read(ctx, measurements)?;
    if let Some(db) = &tables {
        mapped = mapped.with_kernels(crate::calibrate::CaseKernels {
            db: db.clone().into_owned(),
            hardware: ctx.hardware.clone(),
        });
    }
    let progress = progress();
    if markdown {
        let a = accuracy_with_progress(&mapped, &ctx.engines, &progress)?;
        return Ok(report::calibration::accuracy_markdown(&a));
    }
    let cal = calibrate_with_progress(&mapped, &ctx.engines, engine, &progress)?;
    if let (Some(mut file), Some(path)) = (target, save) {
        let text = if tables.is_some() {
            let named = match kernels {
                super::KernelsArg::Dir(d) => format!("data/kernels and {}", d.display()),
                _ => "data/kernels".to_string(),
            };
            kernel_engines_toml(&cal, &mapped, &named)?
        } else if engine.is_some() {
            engines_toml(&cal, &mapped)?
        } else {
            let previous = path.exists().then(|| files::read_text(path)).transpose()?;
            engines_file(&cal, &mapped, &ctx.engines, previous.as_deref())?
        };
        file.file()
            .write_all(text.as_bytes())
            .map_err(|e| Error::write(format!("--save {}", path.display()), e))?;
        file.commit().map_err(|e| named("--save", e))?;
        let written = if tables.is_some() {
            crate::calibrate::fits_on_tables(&cal, &mapped).len()
        } else {
            cal.engines.len()
        };
        eprintln!(
            "saved {written} fitted engine profile(s){} to {}",
            if tables.is_some() {
                " on the kernel tables"
            } else {
                ""
            },
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
    let (rows, mapped) = read(ctx, measurements)?;
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

/// The fitter's progress (`what`, rows done of rows) as the stage of the work in force
/// ([`crate::work`]), which the progress bar draws: `calibrate: fitting vllm`.
fn progress() -> impl Fn(&str, usize, usize) + Sync {
    let work = crate::work::current();
    move |what: &str, done: usize, total: usize| {
        if let Some(w) = &work {
            w.set(&format!("calibrate: {what}"), done as u64, total as u64);
        }
    }
}
