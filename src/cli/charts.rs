//! Charts of a command line as SVG text: one function per chart, called both by the
//! commands that write it to a file (`--svg FILE`, `roofline --out`) and by
//! [`super::chart_args`] (the web server's `/api/<chart>.svg`, library callers).

use super::context::{self, Ctx};
use super::{Cli, Command, PredictArgs, SimulateArgs, TrainArgs};
use crate::plot::{memory, roofline, throughput};
use crate::predict::{Prediction, Predictor, Scenario};
use crate::simulate::RateSweep;
use crate::{Error, Result, series};

crate::named_enum! {
    /// The charts [`super::chart_args`] draws, each from the options of one command.
    pub enum Chart: "chart" {
        /// The roofline with the model's ops placed (options of predict, explain or
        /// roofline; `--gpu` may list devices).
        Roofline = "roofline",
        /// Decode throughput and latency against batch (options of predict, explain or
        /// roofline; `--gpu` may list devices).
        Throughput = "throughput",
        /// Memory per device by weight format (options of predict, explain or roofline;
        /// one device).
        Memory = "memory",
        /// Latency against request rate with the knee, and the batch and KV timeline
        /// (options of simulate).
        Serving = "serving",
        /// Training cost against time, the Pareto front by method (options of
        /// `plan --train`).
        CostTime = "cost-time",
        /// Training memory per device at ZeRO stages 0-3 (options of train).
        Zero = "zero",
    }
}

impl Chart {
    /// The command whose options describe the chart.
    pub fn command(self) -> &'static str {
        match self {
            Chart::Roofline | Chart::Throughput | Chart::Memory => "predict",
            Chart::Serving => "simulate",
            Chart::CostTime => "plan --train",
            Chart::Zero => "train",
        }
    }
}

impl From<super::ChartArg> for Chart {
    fn from(c: super::ChartArg) -> Chart {
        match c {
            super::ChartArg::Throughput => Chart::Throughput,
            super::ChartArg::Roofline => Chart::Roofline,
            super::ChartArg::Memory => Chart::Memory,
        }
    }
}

/// Which link slopes a roofline draws besides the device's own roofs.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Links {
    /// The scale-up link (NVLink, ...).
    pub scaleup: bool,
    /// The host link (PCIe).
    pub host: bool,
}

/// The chart `chart` of a parsed command line.
pub(super) fn of_command(ctx: &Ctx, cli: &Cli, chart: Chart) -> Result<String> {
    use Chart::*;
    match (&cli.command, chart) {
        (Command::Predict { args, .. } | Command::Explain { args, .. }, Roofline) => {
            let links = Links {
                scaleup: args.gpus > 1,
                host: false,
            };
            device_chart(ctx, args, chart, links)
        }
        (Command::Roofline { args, links, .. }, Roofline) => {
            let links = Links {
                scaleup: *links || args.gpus > 1,
                host: *links || args.offload == super::OffloadArg::Cpu,
            };
            device_chart(ctx, args, chart, links)
        }
        (
            Command::Predict { args, .. }
            | Command::Explain { args, .. }
            | Command::Roofline { args, .. },
            Throughput | Memory,
        ) => device_chart(ctx, args, chart, Links::default()),
        (Command::Simulate { args, .. }, Serving) => {
            serving(&context::simulate_rows(ctx, args)?, args)
        }
        (Command::Plan { args, train, .. }, CostTime) if train.train => {
            crate::plot::cost_time::cost_time(&context::train_plan(ctx, args, train)?)
        }
        (Command::Train { args, .. }, Zero) => zero(ctx, args),
        (_, c) => Err(Error::invalid(
            "chart",
            format!("the {c} chart is drawn from the options of {}", c.command()),
        )),
    }
}

/// A chart of the devices `--gpu` lists, each predicted with the same options.
fn device_chart(ctx: &Ctx, a: &PredictArgs, chart: Chart, links: Links) -> Result<String> {
    let model = ctx.model(&a.model)?;
    let engine = ctx.engines.get(&a.run.engine)?;
    let draft = ctx.draft_model(a.decoding.spec.draft.as_deref())?;
    let kernels = a.kernels.load()?;
    let s = a.scenario();
    let preds = ctx
        .hardware
        .get_list(&a.gpu)?
        .into_iter()
        .map(|hw| ctx.predictor_on(&model, hw, engine, &s, draft.as_ref(), kernels.as_deref()))
        .collect::<Result<Vec<_>>>()?;
    let predictions = match chart {
        Chart::Roofline => preds
            .iter()
            .map(|p| p.predict(s.batch, s.prompt, s.gen_tokens))
            .collect::<Result<Vec<_>>>()?,
        _ => Vec::new(),
    };
    let refs: Vec<&Predictor> = preds.iter().collect();
    devices(&refs, &predictions, &s, chart, links)
}

/// The roofline, throughput or memory chart of some devices' predictors (and, for the
/// roofline, their predictions, in the same order).
pub(super) fn devices(
    preds: &[&Predictor],
    predictions: &[Prediction],
    s: &Scenario,
    chart: Chart,
    links: Links,
) -> Result<String> {
    let first = preds
        .first()
        .ok_or_else(|| Error::invalid("gpu", "give at least one device"))?;
    match chart {
        Chart::Roofline => {
            let devices: Vec<_> = preds
                .iter()
                .zip(predictions)
                .map(|(pred, prediction)| roofline::RooflineDevice {
                    hardware: pred.hardware,
                    prediction,
                })
                .collect();
            let opts = roofline::RooflineOptions {
                host_link: links.host,
                scaleup_link: links.scaleup,
                ..Default::default()
            };
            roofline::roofline(&devices, &opts)
        }
        Chart::Throughput => {
            let limit = series::batch_limit(preds, s.prompt, s.gen_tokens)?;
            let curves = preds
                .iter()
                .map(|p| series::throughput_series(p, s.prompt, s.gen_tokens, limit))
                .collect::<Result<Vec<_>>>()?;
            let (title, subtitle) = series::throughput_titles(first, s.prompt, s.gen_tokens);
            let opts = throughput::ThroughputOptions {
                title,
                subtitle,
                ..Default::default()
            };
            throughput::throughput(&curves, &opts)
        }
        Chart::Memory if preds.len() == 1 => {
            let formats = series::default_formats(first.model);
            let comparison =
                series::format_comparison(first.model, first.hardware, first.engine, s, &formats)?;
            memory::memory(&comparison)
        }
        Chart::Memory => Err(Error::invalid(
            "gpu",
            "the memory chart compares weight formats on one device; give one",
        )),
        other => Err(Error::invalid(
            "chart",
            format!(
                "the {other} chart is drawn from the options of {}",
                other.command()
            ),
        )),
    }
}

/// The serving chart of a simulation (p50/p99 latency against rate with the knee, the
/// batch and KV timeline).
pub(super) fn serving(sweep: &RateSweep, a: &SimulateArgs) -> Result<String> {
    let first = &sweep
        .rows
        .first()
        .ok_or_else(|| Error::internal("serving chart", "a simulation with no rows"))?
        .config;
    // speculative decoding changes every figure: say so, and who drafts
    let spec = match (a.spec.spec_k, a.spec.spec_accept) {
        (Some(k), Some(acc)) => format!(
            "; speculative k {k}, accept {acc} (draft {})",
            a.spec.draft.as_deref().unwrap_or("the model's own head")
        ),
        _ => String::new(),
    };
    let opts = crate::plot::serving::ServingOptions {
        subtitle: format!(
            "{} on {} x {}, engine {}; prompt {}, gen {}{spec}",
            first.model,
            first.gpus,
            first.gpu,
            first.engine,
            a.prompt.as_deref().unwrap_or("512"),
            a.gen_tokens.as_deref().unwrap_or("128")
        ),
        ..Default::default()
    };
    crate::plot::serving::serving(sweep, &opts)
}

/// Training memory per device at ZeRO stages 0-3.
pub(super) fn zero(ctx: &Ctx, a: &TrainArgs) -> Result<String> {
    let (model, hw, cfg) = context::train_setup(ctx, a)?;
    memory::memory(&series::zero_comparison(&model, &hw, &cfg)?)
}
