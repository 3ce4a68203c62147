//! The commands: each wires its parsed arguments to the library and a renderer, and
//! returns what goes to stdout. One predictor per command.

use crate::cli::{
    self, ChartArg, Cli, HardwareAction, PlanArgs, PredictArgs, SweepArgs, TrainArgs,
};
use ridgeline::engine::EngineDb;
use ridgeline::hardware::{Hardware, HardwareDb};
use ridgeline::model::{ModelConfig, ModelDb};
use ridgeline::plot::{memory, roofline, throughput};
use ridgeline::predict::{Prediction, Predictor, Scenario};
use ridgeline::report;
use ridgeline::series;
use ridgeline::{Error, Result, files};
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// The databases every command reads: built-ins plus the user's files.
pub struct Ctx {
    hardware: HardwareDb,
    engines: EngineDb,
}

impl Ctx {
    pub fn new(cli: &Cli) -> Result<Ctx> {
        let mut hardware = HardwareDb::builtin()?.clone();
        for f in &cli.hardware_files {
            if let (_, Some(id)) = hardware.load_file(f)? {
                eprintln!("note: {} replaces the built-in device {id}", f.display());
            }
        }
        let mut engines = EngineDb::builtin()?.clone();
        for f in &cli.engine_files {
            for id in engines.load_file(f)? {
                eprintln!("note: {} replaces the built-in engine {id}", f.display());
            }
        }
        Ok(Ctx { hardware, engines })
    }

    /// Builds the one predictor of a command and hands it to `f`.
    fn with_predictor<T>(
        &self,
        a: &PredictArgs,
        f: impl FnOnce(&Predictor) -> Result<T>,
    ) -> Result<T> {
        let model = resolve_model(&a.model)?;
        let hw = self.hardware.get(&a.gpu)?;
        let engine = self.engines.get(&a.engine)?;
        f(&Predictor::new(&model, hw, engine, &a.scenario())?)
    }
}

fn resolve_model(name: &str) -> Result<ModelConfig> {
    ModelDb::builtin()?.resolve(name)
}

fn to_json<T: serde::Serialize>(v: &T) -> Result<String> {
    serde_json::to_string_pretty(v).map_err(|e| Error::internal("JSON writer", e))
}

/// Writes a chart to `path` (given by `flag`) atomically and says so on stderr; the
/// file must be named `.svg`.
fn write_chart(flag: &str, path: &Path, svg: &str, what: &str) -> Result<()> {
    check_svg_name(flag, path)?;
    files::write_atomic(path, svg.as_bytes()).map_err(|e| named(flag, e))?;
    eprintln!("wrote {what}{}", path.display());
    Ok(())
}

/// Charts are SVG: a file named otherwise would hold the wrong format.
fn check_svg_name(flag: &str, path: &Path) -> Result<()> {
    let svg = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("svg"));
    if svg {
        Ok(())
    } else {
        Err(Error::invalid(
            flag,
            format!(
                "{} is not an .svg file name; charts are written as SVG",
                path.display()
            ),
        ))
    }
}

/// A write error of a stream, renamed to what was being written.
fn renamed_write(e: Error, to: &str) -> Error {
    match e {
        Error::Write { message, .. } => Error::Write {
            path: to.to_string(),
            message,
        },
        other => other,
    }
}

/// A write error, with the option that named the file in front of the path.
fn named(flag: &str, e: Error) -> Error {
    match e {
        Error::Write { path, message } => Error::Write {
            path: format!("{flag} {path}"),
            message,
        },
        other => other,
    }
}

/// The chart `predict --svg` writes, from the predictor and its prediction.
fn predict_chart(
    pred: &Predictor,
    p: &Prediction,
    s: &Scenario,
    chart: ChartArg,
) -> Result<String> {
    let c = &p.config;
    match chart {
        ChartArg::Throughput => {
            let limit = series::batch_limit(&[pred], c.prompt, c.r#gen)?;
            let curves = series::throughput_series(pred, c.prompt, c.r#gen, limit)?;
            let (title, subtitle) = series::throughput_titles(pred, c.prompt, c.r#gen);
            let opts = throughput::ThroughputOptions {
                title,
                subtitle,
                ..Default::default()
            };
            throughput::throughput(&[curves], &opts)
        }
        ChartArg::Roofline => roofline_chart(&[(pred.hardware, p)], p.hardware.count > 1, false),
        ChartArg::Memory => {
            let formats = series::default_formats(pred.model);
            let comparison =
                series::format_comparison(pred.model, pred.hardware, pred.engine, s, &formats)?;
            memory::memory(&comparison)
        }
    }
}

fn roofline_chart(
    devices: &[(&Hardware, &Prediction)],
    scaleup: bool,
    host: bool,
) -> Result<String> {
    let devices: Vec<_> = devices
        .iter()
        .map(|&(hardware, prediction)| roofline::RooflineDevice {
            hardware,
            prediction,
        })
        .collect();
    let opts = roofline::RooflineOptions {
        host_link: host,
        scaleup_link: scaleup,
        ..Default::default()
    };
    roofline::roofline(&devices, &opts)
}

pub fn predict(
    ctx: &Ctx,
    a: &PredictArgs,
    markdown: bool,
    max: bool,
    svg: Option<&Path>,
    chart: Option<ChartArg>,
    json: bool,
) -> Result<String> {
    ctx.with_predictor(a, |pred| {
        let p = pred.predict(a.batch, a.prompt, a.gen_tokens)?;
        if let Some(path) = svg {
            let chart = chart.unwrap_or(ChartArg::Throughput);
            write_chart(
                "--svg",
                path,
                &predict_chart(pred, &p, &a.scenario(), chart)?,
                "",
            )?;
        }
        match (max, json, markdown) {
            (true, true, _) => to_json(&p.limits()),
            (true, false, _) => Ok(report::text::limits(&p.limits())),
            (false, true, _) => to_json(&p),
            (false, false, true) => Ok(report::markdown::prediction(&p)),
            (false, false, false) => Ok(report::text::prediction(&p)),
        }
    })
}

pub fn explain(ctx: &Ctx, a: &PredictArgs, svg: Option<&Path>, json: bool) -> Result<String> {
    ctx.with_predictor(a, |pred| {
        let p = pred.predict(a.batch, a.prompt, a.gen_tokens)?;
        if let Some(path) = svg {
            let chart = predict_chart(pred, &p, &a.scenario(), ChartArg::Roofline)?;
            write_chart("--svg", path, &chart, "roofline chart to ")?;
        }
        let w = pred.what_ifs(a.batch, a.prompt, a.gen_tokens, p.memory.max_batch);
        let e = report::explain::explain(&p, &w);
        if json {
            to_json(&e)
        } else {
            Ok(report::explain::render(&e))
        }
    })
}

pub fn roofline_cmd(
    ctx: &Ctx,
    a: &PredictArgs,
    out: &Path,
    links: bool,
    json: bool,
) -> Result<String> {
    let to_stdout = out.as_os_str() == "-";
    if to_stdout && json {
        return Err(Error::conflict(
            &["--json", "--out"],
            "--json and --out - would both write to stdout",
        ));
    }
    let model = resolve_model(&a.model)?;
    let engine = ctx.engines.get(&a.engine)?;
    let s = a.scenario();
    let hws = ctx.hardware.get_list(&a.gpu)?;
    let preds = hws
        .iter()
        .map(|hw| Predictor::new(&model, hw, engine, &s)?.predict(s.batch, s.prompt, s.gen_tokens))
        .collect::<Result<Vec<_>>>()?;
    let devices: Vec<_> = hws.iter().copied().zip(&preds).collect();
    let svg = roofline_chart(&devices, links || s.gpus > 1, links || s.offload)?;
    if to_stdout {
        return Ok(svg);
    }
    write_chart("--out", out, &svg, "")?;
    if json {
        to_json(&serde_json::json!({ "out": out, "predictions": preds }))
    } else {
        Ok(String::new())
    }
}

pub fn train(ctx: &Ctx, a: &TrainArgs, svg: Option<&Path>, json: bool) -> Result<String> {
    let model = resolve_model(&a.model)?;
    let hw = ctx.hardware.get(&a.gpu)?;
    let cfg = a.config();
    let report = ridgeline::train::train(&model, hw, &cfg)?;
    if let Some(path) = svg {
        let chart = series::zero_comparison(&model, hw, &cfg)?;
        write_chart(
            "--svg",
            path,
            &memory::memory(&chart)?,
            "ZeRO memory chart to ",
        )?;
    }
    if json {
        to_json(&report)
    } else {
        Ok(report::train::render(&report))
    }
}

pub fn calibrate(
    ctx: &Ctx,
    measurements: &Path,
    engine: Option<&str>,
    save: Option<&PathBuf>,
    markdown: bool,
    json: bool,
) -> Result<String> {
    use ridgeline::calibrate::{
        accuracy_with_progress, calibrate_with_progress, engines_file, engines_toml,
    };
    // check the target before the fit, write it only when the fit succeeds
    let target = save
        .map(|p| files::AtomicFile::create(p).map_err(|e| named("--save", e)))
        .transpose()?;
    let rows = ridgeline::calibrate::read_measurements(measurements)?;
    let mapped = ridgeline::calibrate::cases_with(&rows, &ctx.hardware, ModelDb::builtin()?);
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
    let fit = ridgeline::train::calibrate::fit_file(measurements)?;
    if let (Some(mut file), Some(path)) = (target, save) {
        let text = ridgeline::train::calibrate::fit_toml(&fit, measurements)?;
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

pub fn plan(ctx: &Ctx, a: &PlanArgs, json: bool) -> Result<String> {
    use ridgeline::list::{parse_names, parse_u64_list_in};
    use ridgeline::plan::{DEFAULT_GPU_COUNTS, PlanRequest, default_devices};
    let devices = match a.gpu.as_deref() {
        None => default_devices(&ctx.hardware),
        Some(g) if g.trim().eq_ignore_ascii_case("all") => ctx.hardware.devices().iter().collect(),
        Some(g) => parse_names("gpu", g)?
            .iter()
            .map(|n| ctx.hardware.get(n))
            .collect::<Result<_>>()?,
    };
    let req = PlanRequest {
        model: resolve_model(&a.model)?,
        devices,
        engines: parse_names("engine", &a.engine)?
            .iter()
            .map(|e| ctx.engines.get(e))
            .collect::<Result<_>>()?,
        prompt: a.prompt,
        gen_tokens: a.gen_tokens,
        targets: a.targets(),
        gpu_counts: match a.gpus.as_deref() {
            Some(g) => parse_u64_list_in("gpus", g, 1, ridgeline::sweep::MAX_GPUS)?,
            None => DEFAULT_GPU_COUNTS.to_vec(),
        },
        weights: a
            .weights
            .as_deref()
            .map(|w| cli::format_list("weights", w))
            .transpose()?,
        kv: a
            .kv
            .as_deref()
            .map(|k| cli::format_list("kv", k))
            .transpose()?,
        flash: !a.no_flash,
    };
    let report = ridgeline::plan::plan(&req)?;
    if json {
        to_json(&report)
    } else {
        Ok(report::plan::render(&report))
    }
}

/// Streams the sweep to stdout (or --out) in bounded memory; a summary of invalid
/// combinations goes to stderr.
pub fn sweep(ctx: &Ctx, a: &SweepArgs, json: bool) -> Result<String> {
    use ridgeline::sweep::{Sweep, WriteOptions};
    use std::io::{BufWriter, IsTerminal, Write};
    if a.csv && json {
        return Err(Error::conflict(&["--csv", "--json"], "choose one"));
    }
    let sweep = Sweep::from_lists(&a.lists(), &ctx.hardware, &ctx.engines)?;
    let opts = WriteOptions {
        progress: std::io::stderr().is_terminal(),
        ..WriteOptions::default()
    };
    let write = |w: &mut dyn Write| {
        let w = BufWriter::with_capacity(1 << 16, w);
        if json {
            sweep.write_json(w, &opts)
        } else {
            sweep.write_csv(w, &opts)
        }
    };
    let stats = match &a.out {
        Some(path) => {
            let mut f = files::AtomicFile::create(path).map_err(|e| named("--out", e))?;
            let stats = write(f.file())
                .map_err(|e| renamed_write(e, &format!("--out {}", path.display())))?;
            f.commit().map_err(|e| named("--out", e))?;
            stats
        }
        None => write(&mut std::io::stdout().lock()).map_err(|e| renamed_write(e, "<stdout>"))?,
    };
    if stats.invalid > 0 {
        let reasons: Vec<String> = stats
            .errors
            .iter()
            .map(|(m, n)| format!("  {n} x {m}"))
            .collect();
        eprintln!(
            "note: {} of {} configurations are invalid combinations (rows with an `error`):\n{}",
            stats.invalid,
            stats.rows,
            reasons.join("\n")
        );
    }
    Ok(String::new())
}

pub fn hardware(ctx: &Ctx, action: Option<&HardwareAction>, json: bool) -> Result<String> {
    let db = &ctx.hardware;
    match action {
        None if json => to_json(
            &db.devices()
                .iter()
                .map(Hardware::report)
                .collect::<Vec<_>>(),
        ),
        None => Ok(report::table::hardware_list(db.devices())),
        Some(HardwareAction::Show { id }) if json => to_json(&db.get(id)?.report()),
        Some(HardwareAction::Show { id }) => Ok(report::table::hardware_show(db.get(id)?)),
    }
}

pub fn models(json: bool) -> Result<String> {
    let models = ModelDb::builtin()?.models();
    if json {
        to_json(&models.iter().map(ModelConfig::summary).collect::<Vec<_>>())
    } else {
        Ok(report::table::model_list(models))
    }
}
