//! The commands: each wires its parsed arguments to the library and a renderer, and
//! returns what goes to stdout. One predictor per command. [`super::run`] dispatches.

use super::charts::{self, Chart};
use super::emit::{self as launch, devices_per_node};
use super::{
    ChartArg, EmitArgs, HardwareAction, PlanArgs, PlanTrainArgs, PredictArgs, SimulateArgs,
    SweepArgs, TrainArgs,
};
use crate::emit::{Launch, Serving, Training};
use crate::hardware::Hardware;
use crate::model::{ModelConfig, ModelDb};
use crate::predict::{Prediction, Predictor, Scenario};
use crate::report;
use crate::{Error, Result, files};
use std::path::Path;

pub use super::calibration::{calibrate, calibrate_intervals, calibrate_train};
pub use super::context::Ctx;
use super::context::{
    named, plan_devices, simulate_rows, to_json, train_plan, train_plan_base, train_setup,
};

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

/// Checks every output file of one run before anything is written, so that a bad
/// second path cannot leave the first replaced: each `(flag, path)` must have its
/// suffix (`svg` or `html`), a folder that exists, not be a folder itself, and name a
/// file no other output of the run names.
fn check_outputs(outputs: &[(&str, &Path)]) -> Result<()> {
    for (k, &(flag, path)) in outputs.iter().enumerate() {
        let ext = path
            .extension()
            .map(|e| e.to_string_lossy().to_ascii_lowercase());
        match flag {
            "--html" if !matches!(ext.as_deref(), Some("html" | "htm")) => {
                return Err(Error::invalid(
                    flag,
                    format!(
                        "{} is not an .html file name; the report is written as HTML",
                        path.display()
                    ),
                ));
            }
            "--svg" => check_svg_name(flag, path)?,
            _ => {}
        }
        let named_path = format!("{flag} {}", path.display());
        if path.is_dir() {
            return Err(Error::write(named_path, "is a directory"));
        }
        let parent = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        if !parent.is_dir() {
            return Err(Error::write(
                named_path,
                format!("the folder {} does not exist", parent.display()),
            ));
        }
        let key = |p: &Path, dir: &Path| {
            dir.canonicalize()
                .ok()
                .zip(p.file_name())
                .map(|(d, n)| d.join(n))
        };
        let mine = key(path, parent);
        for &(other_flag, other) in &outputs[..k] {
            let dir = match other.parent() {
                Some(d) if !d.as_os_str().is_empty() => d,
                _ => Path::new("."),
            };
            if other == path || (mine.is_some() && key(other, dir) == mine) {
                return Err(Error::conflict(
                    &[other_flag, flag],
                    format!(
                        "both name {}: give each output its own file",
                        path.display()
                    ),
                ));
            }
        }
    }
    Ok(())
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

/// The chart `predict --svg` (or `explain --svg`) writes, from the predictor and its
/// prediction.
fn predict_chart(
    pred: &Predictor,
    p: &Prediction,
    s: &Scenario,
    chart: ChartArg,
) -> Result<String> {
    let links = charts::Links {
        scaleup: p.hardware.count > 1,
        host: false,
    };
    charts::devices(&[pred], std::slice::from_ref(p), s, chart.into(), links)
}

/// `ridgeline predict`.
pub fn predict(ctx: &Ctx, a: &PredictArgs, out: &PredictOutputs, json: bool) -> Result<String> {
    let outputs: Vec<(&'static str, &Path)> = [("--svg", out.svg), ("--html", out.html)]
        .into_iter()
        .filter_map(|(f, p)| p.map(|p| (f, p)))
        .collect();
    check_outputs(&launch::with_out(outputs, out.emit))?;
    ctx.with_predictor(a, |pred| {
        let p = pred.predict(a.batch, a.prompt, a.gen_tokens)?;
        if let Some(format) = out.emit.emit {
            let draft = match pred.draft() {
                crate::predict::Draft::Model(d, _) => Some(d),
                crate::predict::Draft::Head => None,
            };
            let s =
                Serving::from_prediction(&p, &ctx.model(&a.model)?, devices_per_node(ctx, &a.gpu)?)
                    .speculating(pred.speculation(), draft)
                    .overlapping(pred.overlap_ep());
            if let Some(text) = launch::deliver(out.emit, format, Launch::Serving(&s), json)? {
                return Ok(text);
            }
        }
        if let Some(path) = out.svg {
            let chart = out.chart.unwrap_or(ChartArg::Throughput);
            write_chart(
                "--svg",
                path,
                &predict_chart(pred, &p, &a.scenario(), chart)?,
                "",
            )?;
        }
        if let Some(path) = out.html {
            let w = pred.what_ifs(a.batch, a.prompt, a.gen_tokens, p.memory.max_batch);
            let e = report::explain::explain(&p, &w);
            super::html::write(pred, &p, &e, a, "predict", path)?;
        }
        match (out.max, json, out.markdown) {
            (true, true, _) => to_json(&p.limits()),
            (true, false, _) => Ok(report::text::limits(&p.limits())),
            (false, true, _) => to_json(&p),
            (false, false, true) => Ok(report::markdown::prediction(&p)),
            (false, false, false) => Ok(report::text::prediction(&p)),
        }
    })
}

/// What `predict` prints and writes besides its report.
pub struct PredictOutputs<'a> {
    /// `--markdown`.
    pub markdown: bool,
    /// `--max`.
    pub max: bool,
    /// `--svg FILE`.
    pub svg: Option<&'a Path>,
    /// `--chart`.
    pub chart: Option<ChartArg>,
    /// `--html FILE`.
    pub html: Option<&'a Path>,
    /// `--emit FORMAT [--out FILE]`.
    pub emit: &'a EmitArgs,
}

/// `ridgeline explain`.
pub fn explain(
    ctx: &Ctx,
    a: &PredictArgs,
    svg: Option<&Path>,
    html: Option<&Path>,
    json: bool,
) -> Result<String> {
    let outputs: Vec<(&str, &Path)> = [("--svg", svg), ("--html", html)]
        .into_iter()
        .filter_map(|(f, p)| p.map(|p| (f, p)))
        .collect();
    check_outputs(&outputs)?;
    ctx.with_predictor(a, |pred| {
        let p = pred.predict(a.batch, a.prompt, a.gen_tokens)?;
        if let Some(path) = svg {
            let chart = predict_chart(pred, &p, &a.scenario(), ChartArg::Roofline)?;
            write_chart("--svg", path, &chart, "roofline chart to ")?;
        }
        let w = pred.what_ifs(a.batch, a.prompt, a.gen_tokens, p.memory.max_batch);
        let e = report::explain::explain(&p, &w);
        if let Some(path) = html {
            super::html::write(pred, &p, &e, a, "explain", path)?;
        }
        if json {
            to_json(&e)
        } else {
            Ok(report::explain::render(&e))
        }
    })
}

/// `ridgeline roofline`.
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
    let model = ctx.model(&a.model)?;
    let engine = ctx.engines.get(&a.run.engine)?;
    let s = a.scenario();
    let hws = ctx.hardware.get_list(&a.gpu)?;
    let draft = ctx.draft_model(a.decoding.spec.draft.as_deref())?;
    let kernels = a.kernels.load()?;
    let preds = hws
        .iter()
        .map(|hw| ctx.predictor_on(&model, hw, engine, &s, draft.as_ref(), kernels.as_deref()))
        .collect::<Result<Vec<_>>>()?;
    let predictions = preds
        .iter()
        .map(|p| p.predict(s.batch, s.prompt, s.gen_tokens))
        .collect::<Result<Vec<_>>>()?;
    let links = charts::Links {
        scaleup: links || s.gpus > 1,
        host: links || s.offload,
    };
    let refs: Vec<&Predictor> = preds.iter().collect();
    let svg = charts::devices(&refs, &predictions, &s, Chart::Roofline, links)?;
    if to_stdout {
        return Ok(svg);
    }
    write_chart("--out", out, &svg, "")?;
    if json {
        to_json(&serde_json::json!({ "out": out, "predictions": predictions }))
    } else {
        Ok(String::new())
    }
}

/// `ridgeline train`.
pub fn train(
    ctx: &Ctx,
    a: &TrainArgs,
    svg: Option<&Path>,
    emit: &EmitArgs,
    json: bool,
) -> Result<String> {
    if emit.out.is_some() {
        let svgs: Vec<(&'static str, &Path)> = svg.map(|p| ("--svg", p)).into_iter().collect();
        check_outputs(&launch::with_out(svgs, emit))?;
    }
    if a.mtp.is_some_and(|n| n > 0) && a.method != crate::train::Method::Full {
        return Err(Error::conflict(
            &["--mtp", "--method"],
            "multi-token-prediction modules are trained in full training only; LoRA and QLoRA adapt the model's own layers",
        ));
    }
    if a.overlap_ep && a.ep <= 1 {
        return Err(Error::conflict(
            &["--overlap-ep", "--ep"],
            "the expert all-to-all it hides runs only with expert parallelism (--ep above 1)",
        ));
    }
    if a.expert_imbalance != 1.0 && a.ep <= 1 {
        return Err(Error::conflict(
            &["--expert-imbalance", "--ep"],
            "without expert parallelism (--ep above 1) no rank waits for another's experts",
        ));
    }
    let (model, hw, cfg) = train_setup(ctx, a)?;
    let report = crate::train::train(&model, &hw, &cfg)?;
    if let Some(format) = emit.emit {
        let t = Training::from_report(&report, &model);
        if let Some(text) = launch::deliver(emit, format, Launch::Training(&t), json)? {
            return Ok(text);
        }
    }
    if let Some(path) = svg {
        let chart = charts::zero(ctx, a)?;
        write_chart("--svg", path, &chart, "ZeRO memory chart to ")?;
    }
    if json {
        to_json(&report)
    } else {
        Ok(report::train::render(&report))
    }
}

/// `simulate`: one run, or a row per rate with the knee.
pub fn simulate(
    ctx: &Ctx,
    a: &SimulateArgs,
    svg: Option<&Path>,
    emit: &EmitArgs,
    json: bool,
) -> Result<String> {
    if let Some(path) = svg {
        check_svg_name("--svg", path)?;
    }
    if emit.out.is_some() {
        let svgs: Vec<(&'static str, &Path)> = svg.map(|p| ("--svg", p)).into_iter().collect();
        check_outputs(&launch::with_out(svgs, emit))?;
    }
    let sweep = simulate_rows(ctx, a)?;
    if let Some(format) = emit.emit {
        let model = ctx.model(&a.model)?;
        let longest = crate::emit::longest_request(&a.workload()?, &model);
        let s = Serving::from_run(
            &sweep.rows[0].config,
            &a.scenario(),
            &model,
            longest,
            devices_per_node(ctx, &a.gpu)?,
        )?
        .speculating(
            a.spec.speculation(),
            ctx.draft_model(a.spec.draft.as_deref())?.as_ref(),
        )
        .overlapping(a.overlap_ep);
        if let Some(text) = launch::deliver(emit, format, Launch::Serving(&s), json)? {
            return Ok(text);
        }
    }
    if let Some(path) = svg {
        let chart = charts::serving(&sweep, a)?;
        write_chart("--svg", path, &chart, "serving chart to ")?;
    }
    match (json, sweep.rows.len()) {
        (true, 1) => to_json(&sweep.rows[0]),
        (true, _) => to_json(&sweep),
        (false, _) => Ok(report::simulate::sweep(&sweep)),
    }
}

/// `ridgeline plan` (inference, `--rate`, or `--train`).
pub fn plan(
    ctx: &Ctx,
    a: &PlanArgs,
    t: &PlanTrainArgs,
    emit: &EmitArgs,
    json: bool,
) -> Result<String> {
    use crate::list::{parse_names, parse_u64_list_in};
    use crate::plan::{DEFAULT_GPU_COUNTS, PlanRequest};
    if emit.out.is_some() {
        let svgs: Vec<(&'static str, &Path)> =
            t.svg.as_deref().map(|p| ("--svg", p)).into_iter().collect();
        check_outputs(&launch::with_out(svgs, emit))?;
    }
    if t.train && a.spec.spec_k.is_some() {
        return Err(Error::conflict(
            &["--spec-k", "--train"],
            "speculative decoding is a serving choice; a training plan takes none",
        ));
    }
    if t.train {
        return plan_train(ctx, a, t, emit, json);
    }
    // clap's `requires = "train"` is not enforced with --prompt and --gen given: the
    // options of a training plan must not pass silently into a serving plan
    let given = [
        ("--tokens", t.tokens.is_some()),
        ("--max-hours", t.max_hours.is_some()),
        ("--budget-usd", t.budget_usd.is_some()),
        ("--instances", t.instances),
        ("--markdown", t.markdown),
        ("--svg", t.svg.is_some()),
    ];
    if let Some((flag, _)) = given.iter().find(|g| g.1) {
        return Err(Error::conflict(
            &[flag, "--train"],
            format!("{flag} needs --train"),
        ));
    }
    let devices = plan_devices(ctx, a.gpu.as_deref())?;
    let tables = a.kernels.load()?;
    let req = PlanRequest {
        model: ctx.model(&a.model)?,
        devices,
        engines: parse_names("engine", &a.engine)?
            .iter()
            .map(|e| ctx.engines.get(e))
            .collect::<Result<_>>()?,
        prompt: a.prompt,
        gen_tokens: a.gen_tokens,
        targets: a.targets(),
        gpu_counts: match a.gpus.as_deref() {
            Some(g) => parse_u64_list_in("gpus", g, 1, crate::sweep::MAX_GPUS)?,
            None => DEFAULT_GPU_COUNTS.to_vec(),
        },
        weights: a
            .weights
            .as_deref()
            .map(|w| super::format_list("weights", w))
            .transpose()?,
        kv: a
            .kv
            .as_deref()
            .map(|k| super::format_list("kv", k))
            .transpose()?,
        flash: !a.no_flash,
        ownership: a.ownership()?,
        price_basis: a.price_basis,
        kernels: tables.as_deref().map(|db| crate::predict::Kernels {
            db,
            hardware: &ctx.hardware,
            engines: &ctx.engines,
        }),
        spec: a.spec.speculation(),
        draft: ctx.draft_model(a.spec.draft.as_deref())?,
        inter_node_bytes_per_s: a.inter_node_bw,
        overlap_ep: t.overlap_ep,
        expert_imbalance: t.expert_imbalance,
        expert_weights: a.expert_weights,
    };
    let report = match a.rate.target() {
        Some(t) => crate::plan::plan_rate(&req, &t)?,
        None => crate::plan::plan(&req)?,
    };
    if let Some(format) = emit.emit {
        let best = report.best.as_ref().ok_or_else(no_best)?;
        let dpn = devices_per_node(ctx, &best.gpu)?;
        let s = Serving::from_entry(best, &req.model, dpn)
            .speculating(req.spec, req.draft.as_ref())
            .overlapping(req.overlap_ep);
        if let Some(text) = launch::deliver(emit, format, Launch::Serving(&s), json)? {
            return Ok(text);
        }
    }
    if json {
        to_json(&report)
    } else {
        Ok(report::plan::render(&report))
    }
}

/// `plan --train`: the training-plan search, its text, Markdown or JSON, and the chart.
fn plan_train(
    ctx: &Ctx,
    a: &PlanArgs,
    t: &PlanTrainArgs,
    emit: &EmitArgs,
    json: bool,
) -> Result<String> {
    if let Some(path) = &t.svg {
        check_svg_name("--svg", path)?;
    }
    let plan = train_plan(ctx, a, t)?;
    if let Some(format) = emit.emit {
        let best = plan.best.as_ref().ok_or_else(no_best)?;
        let model = ctx.model(&a.model)?;
        let dpn = devices_per_node(ctx, &best.gpu)?;
        let tr = Training::from_entry(best, &train_plan_base(a, t), &model, dpn);
        if let Some(text) = launch::deliver(emit, format, Launch::Training(&tr), json)? {
            return Ok(text);
        }
    }
    if let Some(path) = &t.svg {
        let svg = crate::plot::cost_time::cost_time(&plan)?;
        write_chart("--svg", path, &svg, "cost vs time chart to ")?;
    }
    if json {
        to_json(&plan)
    } else if t.markdown {
        Ok(report::train_plan::markdown(&plan))
    } else {
        Ok(report::train_plan::render(&plan))
    }
}

/// `--emit` on a plan without a best configuration.
fn no_best() -> Error {
    Error::invalid(
        "emit",
        "the plan has no best configuration to launch: nothing meets the targets (see the plan without --emit)",
    )
}

/// `ridgeline instances`: the instance shapes.
pub fn instances(ctx: &Ctx, json: bool) -> Result<String> {
    let list = ctx.instances.instances();
    if json {
        to_json(
            &list
                .iter()
                .map(|i| i.report(&ctx.hardware))
                .collect::<Vec<_>>(),
        )
    } else {
        Ok(report::table::instance_list(list))
    }
}

/// `ridgeline kernels [--kernels DIR]`: what the measured kernel tables cover.
pub fn kernels(dir: Option<&std::path::Path>, json: bool) -> Result<String> {
    let mut db = crate::kernels::KernelDb::builtin()?.clone();
    if let Some(d) = dir {
        db.load_dir(d)?;
    }
    let coverage = db.coverage();
    if json {
        #[derive(serde::Serialize)]
        struct Doc<'a> {
            tables: &'a [crate::kernels::Coverage],
        }
        to_json(&Doc { tables: &coverage })
    } else {
        Ok(report::table::kernel_list(&coverage))
    }
}

/// Streams the sweep to stdout (or --out) in bounded memory; a summary of invalid
/// combinations goes to stderr.
pub fn sweep(ctx: &Ctx, a: &SweepArgs, json: bool) -> Result<String> {
    use crate::sweep::WriteOptions;
    use std::io::{BufWriter, Write};
    if a.csv && json {
        return Err(Error::conflict(&["--csv", "--json"], "choose one"));
    }
    let tables = a.kernels.load()?;
    let sweep = ctx.sweep(a, tables.as_deref())?;
    if let Some(list) = &a.rate {
        return rate_sweep(a, &sweep, list, json);
    }
    let opts = WriteOptions::default();
    let write = |w: &mut dyn Write| {
        let w = BufWriter::with_capacity(1 << 16, w);
        if json {
            sweep.write_json(w, &opts)
        } else {
            sweep.write_csv(w, &opts)
        }
    };
    let mut captured = String::new();
    let stats = match (&a.out, ctx.capture) {
        (Some(path), _) => {
            let mut f = files::AtomicFile::create(path).map_err(|e| named("--out", e))?;
            let stats = write(f.file())
                .map_err(|e| renamed_write(e, &format!("--out {}", path.display())))?;
            f.commit().map_err(|e| named("--out", e))?;
            stats
        }
        (None, Some(limit)) => {
            let mut buf = super::capture::Capped::new(limit);
            let stats = write(&mut buf).map_err(|e| renamed_write(e, "the sweep's output"))?;
            captured = buf.into_string()?;
            stats
        }
        (None, None) => {
            write(&mut std::io::stdout().lock()).map_err(|e| renamed_write(e, "<stdout>"))?
        }
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
    Ok(captured)
}

/// `sweep --rate`: the serving simulation over the sweep's deployments and the rates.
fn rate_sweep(
    a: &SweepArgs,
    sweep: &crate::sweep::Sweep<'_>,
    list: &str,
    json: bool,
) -> Result<String> {
    use crate::sweep::RateOptions;
    let rates = crate::list::parse_f64_list("--rate", list, crate::simulate::MAX_RATE, 1000)?;
    let d = RateOptions::default();
    let opts = RateOptions {
        requests: a.requests.unwrap_or(d.requests),
        seed: a.seed.unwrap_or(d.seed),
        request_overhead_s: a.request_overhead_ms.map(|x| x / 1e3),
    };
    let rows = sweep.rate_rows(&rates, opts)?;
    let text = if json {
        to_json(&serde_json::json!({ "rows": rows }))?
    } else {
        report::sweep::rate_csv(&rows)
    };
    match &a.out {
        Some(path) => {
            files::write_atomic(path, text.as_bytes()).map_err(|e| named("--out", e))?;
            Ok(String::new())
        }
        None => Ok(text),
    }
}

/// `ridgeline hardware [show ID]`.
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

/// `ridgeline models`.
pub fn models(json: bool) -> Result<String> {
    let models = ModelDb::builtin()?.models();
    if json {
        to_json(&models.iter().map(ModelConfig::summary).collect::<Vec<_>>())
    } else {
        Ok(report::table::model_list(models))
    }
}
