//! What the commands share: the databases a command reads ([`Ctx`]), the predictor,
//! simulation and training set-ups that a command and its chart both build, and the
//! JSON and file-error helpers.

use super::{Cli, PlanArgs, PlanTrainArgs, PredictArgs, SimulateArgs, SweepArgs, TrainArgs};
use crate::engine::EngineDb;
use crate::hardware::{Hardware, HardwareDb, PriceBook};
use crate::instances::InstanceDb;
use crate::model::{ModelConfig, ModelDb};
use crate::predict::{Predictor, Scenario};
use crate::train::TrainConfig;
use crate::{Error, Result};

/// The databases every command reads: built-ins plus the user's files, and models the
/// caller gave as documents.
pub struct Ctx {
    pub(super) hardware: HardwareDb,
    pub(super) engines: EngineDb,
    pub(super) instances: InstanceDb,
    /// Models given as parsed documents: their ids resolve before the bundled ids and
    /// paths.
    pub(super) models: Vec<ModelConfig>,
    /// `Some(limit)`: streamed outputs (sweep) are returned, at most `limit` bytes,
    /// instead of written to stdout.
    pub(super) capture: Option<usize>,
}

impl Ctx {
    /// The built-in databases plus the files named by the global options.
    pub fn new(cli: &Cli) -> Result<Ctx> {
        let plain = cli.hardware_files.is_empty()
            && cli.engine_files.is_empty()
            && cli.instances_files.is_empty()
            && cli.price_files.is_empty()
            && cli.provider.is_none();
        if plain {
            // the bundled databases priced from the bundled book: built once per
            // process (the server answers many requests), copied for each command
            type Bundled = (HardwareDb, EngineDb, InstanceDb);
            static BUNDLED: std::sync::OnceLock<std::result::Result<Bundled, String>> =
                std::sync::OnceLock::new();
            let bundled = BUNDLED.get_or_init(|| {
                Ctx::build(cli)
                    .map(|c| (c.hardware, c.engines, c.instances))
                    .map_err(|e| e.to_string())
            });
            return match bundled {
                Ok((hardware, engines, instances)) => Ok(Ctx {
                    hardware: hardware.clone(),
                    engines: engines.clone(),
                    instances: instances.clone(),
                    models: Vec::new(),
                    capture: None,
                }),
                // a bundled file that does not read is a bug; say it as built
                Err(_) => Ctx::build(cli),
            };
        }
        Ctx::build(cli)
    }

    /// [`Ctx::new`] built from the files.
    fn build(cli: &Cli) -> Result<Ctx> {
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
        // every device priced from the bundled offers, the instance shapes and the
        // user's price files (these last replace the prices of the devices they name)
        let mut book = PriceBook::builtin(&hardware)?;
        for mut o in instances.offers() {
            o.gpu = hardware.get(&o.gpu)?.id.clone();
            book.offers.push(o);
        }
        for f in &cli.price_files {
            book = book.overridden_by(&PriceBook::from_file(f, &hardware)?);
        }
        hardware.apply_prices(&book, cli.provider.as_deref())?;
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
    pub fn sweep<'c>(
        &'c self,
        a: &SweepArgs,
        kernels: Option<&'c crate::kernels::KernelDb>,
    ) -> Result<crate::sweep::Sweep<'c>> {
        let mut s = crate::sweep::Sweep::from_lists(&a.lists(), &self.hardware, &self.engines)?;
        s.kernels = kernels.map(|db| crate::predict::Kernels {
            db,
            hardware: &self.hardware,
            engines: &self.engines,
        });
        Ok(s)
    }

    /// Builds the one predictor of a command and hands it to `f`.
    pub(super) fn with_predictor<T>(
        &self,
        a: &PredictArgs,
        f: impl FnOnce(&Predictor) -> Result<T>,
    ) -> Result<T> {
        let model = self.model(&a.model)?;
        let hw = self.hardware.get(&a.gpu)?;
        let engine = self.engines.get(&a.run.engine)?;
        let draft = self.draft_model(a.decoding.spec.draft.as_deref())?;
        let kernels = a.kernels.load()?;
        f(&self.predictor_on(
            &model,
            hw,
            engine,
            &a.scenario(),
            draft.as_ref(),
            kernels.as_deref(),
        )?)
    }

    /// [`build_predictor`] reading `kernels` where given: then an engine refitted on
    /// the tables ([`crate::engine::EngineDb::on_tables`]) predicts with that profile
    /// on a device a table covers.
    pub(super) fn predictor_on<'a>(
        &'a self,
        model: &'a ModelConfig,
        hw: &'a Hardware,
        engine: &'a crate::engine::Engine,
        s: &Scenario,
        draft: Option<&'a ModelConfig>,
        kernels: Option<&'a crate::kernels::KernelDb>,
    ) -> Result<Predictor<'a>> {
        let engine = match kernels {
            Some(k) => k.engine_for(engine, &self.engines, hw, &self.hardware),
            None => engine,
        };
        Ok(build_predictor(model, hw, engine, s, draft)?.with_kernels_if(kernels, &self.hardware))
    }

    /// The `--draft` model, if named.
    pub(super) fn draft_model(&self, d: Option<&str>) -> Result<Option<ModelConfig>> {
        d.map(|n| {
            self.model(n).map_err(|e| match e {
                e @ crate::Error::UnknownName { .. } => {
                    crate::Error::invalid("draft", e.to_string())
                }
                e => e,
            })
        })
        .transpose()
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
    Predictor::new(model, hw, engine, s)?.with_draft_if(draft)
}

pub(super) fn to_json<T: serde::Serialize>(v: &T) -> Result<String> {
    serde_json::to_string_pretty(v).map_err(|e| Error::internal("JSON writer", e))
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

/// The simulation of `simulate` options: one run, or a row per rate with the knee.
pub(super) fn simulate_rows(ctx: &Ctx, a: &SimulateArgs) -> Result<crate::simulate::RateSweep> {
    use crate::simulate::{MAX_RATE, RateSweep, simulate, simulate_rates};
    let model = ctx.model(&a.model)?;
    let hw = ctx.hardware.get(&a.gpu)?;
    let engine = ctx.engines.get(&a.run.engine)?;
    let draft = ctx.draft_model(a.spec.draft.as_deref())?;
    let tables = a.kernels.load()?;
    let s = a.scenario();
    let serving = crate::simulate::Serving {
        draft: draft.as_ref(),
        kernels: tables.as_deref().map(|db| crate::predict::Kernels {
            db,
            hardware: &ctx.hardware,
            engines: &ctx.engines,
        }),
        ..a.serving()?
    };
    if let Some(sp) = &s.spec {
        sp.validate()?;
    }
    let workload = a.workload()?;
    let rates = match &a.rate {
        Some(list) => Some(crate::list::parse_f64_list("--rate", list, MAX_RATE, 100)?),
        None => None,
    };
    // the size up front (refused over a server's budget), then the progress in requests
    let n = rates.as_ref().map_or(1, Vec::len) as u64;
    let param = if workload.requests >= n {
        "requests"
    } else {
        "rate"
    };
    let units = workload.requests as f64 * n as f64;
    let what = format!(
        "simulated requests ({} requests x {n} rates)",
        workload.requests
    );
    crate::work::charge(units, param, &what)?;
    crate::work::start("simulate", workload.requests.saturating_mul(n));
    Ok(match &rates {
        Some(rates) => simulate_rates(&model, hw, engine, &s, &serving, &workload, rates)?,
        None => RateSweep::single(simulate(&model, hw, engine, &s, &serving, &workload)?),
    })
}

/// The devices `--gpu` names: every device with a price by default, `all`, or a list.
pub(super) fn plan_devices<'d>(ctx: &'d Ctx, gpu: Option<&str>) -> Result<Vec<&'d Hardware>> {
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
            .map(|hw| Pool {
                inter_node_bytes_per_s: a.inter_node_bw,
                ..Pool::device(hw)
            })
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

/// The configuration every entry of a training plan builds on (`--seq`, `--stack`,
/// `--no-flash`).
pub(super) fn train_plan_base(a: &PlanArgs, t: &PlanTrainArgs) -> crate::train::TrainConfig {
    crate::train::TrainConfig {
        seq: t.seq,
        stack: t.stack,
        flash: !a.no_flash,
        inter_node_bytes_per_s: a.inter_node_bw,
        mtp: t.mtp,
        overlap_ep: t.overlap_ep,
        expert_imbalance: t.expert_imbalance,
        ..crate::train::TrainConfig::default()
    }
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
    req.base = train_plan_base(a, t);
    if let Some(g) = a.gpus.as_deref() {
        req.gpu_counts =
            crate::list::parse_u64_list_in("gpus", g, 1, crate::plan::train::MAX_TRAIN_PLAN_GPUS)?;
    }
    if let Some(c) = t.cp.as_deref() {
        req.cp_degrees =
            crate::list::parse_u64_list_in("cp", c, 1, crate::plan::train::MAX_TRAIN_PLAN_GPUS)?;
    }
    plan_training(&req)
}
