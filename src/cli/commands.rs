//! The commands: each wires its parsed arguments to the library and a renderer, and
//! returns what goes to stdout. One predictor per command. [`super::run`] dispatches.

use super::charts::{self, Chart};
use super::{
    ChartArg, Cli, DecodingArgs, HardwareAction, PlanArgs, PlanTrainArgs, PredictArgs,
    SimulateArgs, SweepArgs, TrainArgs,
};
use crate::engine::EngineDb;
use crate::hardware::{Hardware, HardwareDb};
use crate::instances::InstanceDb;
use crate::model::{ModelConfig, ModelDb};
use crate::predict::{Prediction, Predictor, Scenario};
use crate::report;
use crate::train::TrainConfig;
use crate::{Error, Result, files};
use std::path::Path;

pub use super::calibration::{calibrate, calibrate_intervals, calibrate_train};

/// The databases every command reads: built-ins plus the user's files, and models the
/// caller gave as documents.
pub struct Ctx {
    pub(super) hardware: HardwareDb,
    pub(super) engines: EngineDb,
    instances: InstanceDb,
    /// Models given as parsed documents: their ids resolve before the bundled ids and
    /// paths.
    models: Vec<ModelConfig>,
    /// `Some(limit)`: streamed outputs (sweep) are returned, at most `limit` bytes,
    /// instead of written to stdout.
    capture: Option<usize>,
}

impl Ctx {
    /// The built-in databases plus the files named by the global options.
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
        let mut instances = InstanceDb::builtin()?.clone();
        for f in &cli.instances_files {
            for name in instances.load_file(f, &hardware)? {
                eprintln!(
                    "note: {} replaces the built-in instance {name}",
                    f.display()
                );
            }
        }
        Ok(Ctx {
            hardware,
            engines,
            instances,
            models: Vec::new(),
            capture: None,
        })
    }

    /// The same databases, with `models` resolving by id before the bundled models.
    pub fn with_models(mut self, models: &[ModelConfig]) -> Ctx {
        self.models = models.to_vec();
        self
    }

    /// The same databases; streamed outputs (sweep) come back as the command's output,
    /// at most `limit` bytes, instead of going to stdout.
    pub fn capturing(mut self, limit: usize) -> Ctx {
        self.capture = Some(limit);
        self
    }

    /// The model `name` names: one of the caller's documents by id, else a bundled id
    /// or a config.json path.
    pub fn model(&self, name: &str) -> Result<ModelConfig> {
        let q = name.trim();
        match self.models.iter().find(|m| m.id.eq_ignore_ascii_case(q)) {
            Some(m) => Ok(m.clone()),
            None => ModelDb::builtin()?.resolve(name),
        }
    }

    /// The sweep `a` describes, over this context's devices and engines.
    pub fn sweep<'c>(&'c self, a: &SweepArgs) -> Result<crate::sweep::Sweep<'c>> {
        crate::sweep::Sweep::from_lists(&a.lists(), &self.hardware, &self.engines)
    }

    /// Builds the one predictor of a command and hands it to `f`.
    fn with_predictor<T>(
        &self,
        a: &PredictArgs,
        f: impl FnOnce(&Predictor) -> Result<T>,
    ) -> Result<T> {
        let model = self.model(&a.model)?;
        let hw = self.hardware.get(&a.gpu)?;
        let engine = self.engines.get(&a.run.engine)?;
        let draft = self.draft_model(&a.decoding)?;
        f(&build_predictor(
            &model,
            hw,
            engine,
            &a.scenario(),
            draft.as_ref(),
        )?)
    }

    /// The `--draft` model, if named.
    pub(super) fn draft_model(&self, d: &DecodingArgs) -> Result<Option<ModelConfig>> {
        d.draft.as_deref().map(|n| self.model(n)).transpose()
    }
}

/// A predictor for `s`, with drafts from `draft` where one is given.
pub(super) fn build_predictor<'a>(
    model: &'a ModelConfig,
    hw: &'a Hardware,
    engine: &'a crate::engine::Engine,
    s: &Scenario,
    draft: Option<&'a ModelConfig>,
) -> Result<Predictor<'a>> {
    let p = Predictor::new(model, hw, engine, s)?;
    match draft {
        Some(d) => p.with_draft(d),
        None => Ok(p),
    }
}

pub(super) fn to_json<T: serde::Serialize>(v: &T) -> Result<String> {
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
pub(super) fn named(flag: &str, e: Error) -> Error {
    match e {
        Error::Write { path, message } => Error::Write {
            path: format!("{flag} {path}"),
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
    ctx.with_predictor(a, |pred| {
        let p = pred.predict(a.batch, a.prompt, a.gen_tokens)?;
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
}

/// `ridgeline explain`.
pub fn explain(
    ctx: &Ctx,
    a: &PredictArgs,
    svg: Option<&Path>,
    html: Option<&Path>,
    json: bool,
) -> Result<String> {
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
    let draft = ctx.draft_model(&a.decoding)?;
    let preds = hws
        .iter()
        .map(|hw| build_predictor(&model, hw, engine, &s, draft.as_ref()))
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

/// The model, device and configuration of `train` options (`--instance` sets the
/// device and the network between nodes).
pub(super) fn train_setup(
    ctx: &Ctx,
    a: &TrainArgs,
) -> Result<(ModelConfig, Hardware, TrainConfig)> {
    let model = ctx.model(&a.model)?;
    let mut cfg = a.config();
    let hw = match (&a.instance, &a.gpu) {
        (Some(name), _) => {
            let inst = ctx.instances.get(name)?;
            inst.check_gpus(cfg.gpus)?;
            cfg.inter_node_bytes_per_s = inst.inter_node_bytes_per_s();
            inst.hardware(&ctx.hardware)?
        }
        (None, Some(g)) => ctx.hardware.get(g)?.clone(),
        (None, None) => return Err(Error::invalid("gpu", "give --gpu or --instance")),
    };
    Ok((model, hw, cfg))
}

/// `ridgeline train`.
pub fn train(ctx: &Ctx, a: &TrainArgs, svg: Option<&Path>, json: bool) -> Result<String> {
    let (model, hw, cfg) = train_setup(ctx, a)?;
    let report = crate::train::train(&model, &hw, &cfg)?;
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

/// The simulation of `simulate` options: one run, or a row per rate with the knee.
pub(super) fn simulate_rows(ctx: &Ctx, a: &SimulateArgs) -> Result<crate::simulate::RateSweep> {
    use crate::simulate::{MAX_RATE, RateSweep, simulate, simulate_rates};
    let model = ctx.model(&a.model)?;
    let hw = ctx.hardware.get(&a.gpu)?;
    let engine = ctx.engines.get(&a.run.engine)?;
    let (s, serving) = (a.scenario(), a.serving()?);
    let workload = a.workload()?;
    Ok(match &a.rate {
        Some(list) => {
            let rates = crate::list::parse_f64_list("--rate", list, MAX_RATE, 100)?;
            simulate_rates(&model, hw, engine, &s, &serving, &workload, &rates)?
        }
        None => RateSweep {
            rows: vec![simulate(&model, hw, engine, &s, &serving, &workload)?],
            knee: None,
        },
    })
}

/// `simulate`: one run, or a row per rate with the knee.
pub fn simulate(ctx: &Ctx, a: &SimulateArgs, svg: Option<&Path>, json: bool) -> Result<String> {
    if let Some(path) = svg {
        check_svg_name("--svg", path)?;
    }
    let sweep = simulate_rows(ctx, a)?;
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

/// The devices `--gpu` names: every device with a price by default, `all`, or a list.
fn plan_devices<'d>(ctx: &'d Ctx, gpu: Option<&str>) -> Result<Vec<&'d Hardware>> {
    use crate::plan::default_devices;
    Ok(match gpu {
        None => default_devices(&ctx.hardware),
        Some(g) if g.trim().eq_ignore_ascii_case("all") => ctx.hardware.devices().iter().collect(),
        Some(g) => crate::list::parse_names("gpu", g)?
            .iter()
            .map(|n| ctx.hardware.get(n))
            .collect::<Result<_>>()?,
    })
}

/// `ridgeline plan` (inference, `--rate`, or `--train`).
pub fn plan(ctx: &Ctx, a: &PlanArgs, t: &PlanTrainArgs, json: bool) -> Result<String> {
    use crate::list::{parse_names, parse_u64_list_in};
    use crate::plan::{DEFAULT_GPU_COUNTS, PlanRequest};
    if t.train {
        return plan_train(ctx, a, t, json);
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
    };
    let report = match a.rate.target() {
        Some(t) => crate::plan::plan_rate(&req, &t)?,
        None => crate::plan::plan(&req)?,
    };
    if json {
        to_json(&report)
    } else {
        Ok(report::plan::render(&report))
    }
}

/// The pools of a training plan: the devices `--gpu` names, or with `--instances` the
/// instance shapes of those devices (of every device without `--gpu`).
fn train_pools(
    ctx: &Ctx,
    a: &PlanArgs,
    t: &PlanTrainArgs,
) -> Result<Vec<crate::plan::train::Pool>> {
    use crate::plan::train::Pool;
    if !t.instances {
        return Ok(plan_devices(ctx, a.gpu.as_deref())?
            .into_iter()
            .map(Pool::device)
            .collect());
    }
    let wanted: Option<Vec<&Hardware>> = match a.gpu.as_deref() {
        None => None,
        Some(g) if g.trim().eq_ignore_ascii_case("all") => None,
        Some(g) => Some(plan_devices(ctx, Some(g))?),
    };
    let mut pools = Vec::new();
    for inst in ctx.instances.instances() {
        let hw = ctx.hardware.get(&inst.gpu)?;
        if wanted
            .as_ref()
            .is_none_or(|w| w.iter().any(|d| d.id == hw.id))
        {
            pools.push(Pool::instance(inst, &ctx.hardware)?);
        }
    }
    if pools.is_empty() {
        return Err(Error::invalid(
            "gpu",
            "no instance shape holds these devices (see `ridgeline instances`)",
        ));
    }
    Ok(pools)
}

/// The training plan of `plan --train` options.
pub(super) fn train_plan(
    ctx: &Ctx,
    a: &PlanArgs,
    t: &PlanTrainArgs,
) -> Result<crate::plan::train::TrainPlan> {
    use crate::plan::train::{TrainPlanRequest, TrainTargets, plan_training};
    let tokens = t.tokens.ok_or_else(|| {
        Error::invalid(
            "tokens",
            "plan --train needs the tokens to train on (5e8, 500M, 1.5B, 2T)",
        )
    })?;
    let mut req = TrainPlanRequest::new(ctx.model(&a.model)?, train_pools(ctx, a, t)?, tokens);
    req.methods = t.method.0.clone();
    req.global_batch = t.global_batch;
    req.targets = TrainTargets {
        max_hours: t.max_hours,
        budget_usd: t.budget_usd,
    };
    req.base.seq = t.seq;
    req.base.stack = t.stack;
    req.base.flash = !a.no_flash;
    if let Some(g) = a.gpus.as_deref() {
        req.gpu_counts =
            crate::list::parse_u64_list_in("gpus", g, 1, crate::plan::train::MAX_TRAIN_PLAN_GPUS)?;
    }
    plan_training(&req)
}

/// `plan --train`: the training-plan search, its text, Markdown or JSON, and the chart.
fn plan_train(ctx: &Ctx, a: &PlanArgs, t: &PlanTrainArgs, json: bool) -> Result<String> {
    if let Some(path) = &t.svg {
        check_svg_name("--svg", path)?;
    }
    let plan = train_plan(ctx, a, t)?;
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

/// Streams the sweep to stdout (or --out) in bounded memory; a summary of invalid
/// combinations goes to stderr.
pub fn sweep(ctx: &Ctx, a: &SweepArgs, json: bool) -> Result<String> {
    use crate::sweep::WriteOptions;
    use std::io::{BufWriter, IsTerminal, Write};
    if a.csv && json {
        return Err(Error::conflict(&["--csv", "--json"], "choose one"));
    }
    let sweep = ctx.sweep(a)?;
    if let Some(list) = &a.rate {
        return rate_sweep(a, &sweep, list, json);
    }
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
