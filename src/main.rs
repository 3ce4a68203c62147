//! The `ridgeline` command line: parses arguments, calls the library, renders. Any error
//! on input exits with status 2 and one line on stderr naming the field.

use clap::{Args, Parser, Subcommand, ValueEnum};
use ridgeline::dtype::Format;
use ridgeline::engine::EngineDb;
use ridgeline::hardware::HardwareDb;
use ridgeline::memory::Parallel;
use ridgeline::model::{ModelConfig, ModelDb};
use ridgeline::predict::{Predictor, Scenario};
use ridgeline::{Error, Result};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "ridgeline",
    version,
    about = "Will it fit, and how fast will it run? LLM rooflines for GPUs."
)]
struct Cli {
    /// Print exactly one JSON document on stdout.
    #[arg(long, global = true)]
    json: bool,
    /// Extra hardware definitions (TOML, same schema as data/hardware/*.toml).
    #[arg(long = "hardware-file", global = true, value_name = "FILE")]
    hardware_files: Vec<PathBuf>,
    /// Extra engine profiles (TOML, same schema as data/engines.toml).
    #[arg(long = "engine-file", global = true, value_name = "FILE")]
    engine_files: Vec<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// List devices, or `hardware show ID` for one device with sources.
    Hardware {
        #[command(subcommand)]
        action: Option<HardwareAction>,
    },
    /// List bundled models with parameter counts.
    Models,
    /// Predict memory, TTFT, per-token latency and tokens/s for one configuration.
    Predict {
        #[command(flatten)]
        args: PredictArgs,
        /// Print a Markdown report instead of text.
        #[arg(long)]
        markdown: bool,
        /// Print only the planning limits: the largest batch that fits at this prompt
        /// and gen, and the longest context that fits at this batch.
        #[arg(long)]
        max: bool,
        /// Also write a chart (SVG) to FILE; --chart picks which.
        #[arg(long, value_name = "FILE")]
        svg: Option<PathBuf>,
        /// Chart for --svg: decode throughput and latency vs batch (the default), the
        /// roofline with the model's ops, or memory per weight format.
        #[arg(long, value_enum)]
        chart: Option<ChartArg>,
    },
    /// Plain-language report: what binds, why, and what would help.
    Explain {
        #[command(flatten)]
        args: PredictArgs,
        /// Also write the roofline chart (ops placed on the device's roofs) as SVG.
        #[arg(long, value_name = "FILE.svg")]
        svg: Option<PathBuf>,
    },
    /// Evaluate every combination of LISTs in parallel; CSV rows (default) or --json.
    ///
    /// LIST: comma-separated values and inclusive ranges, mixed freely: `1,2,4`, `1..64`,
    /// `128..8192:x2` (geometric), `0..1000:+50` (arithmetic). Rows come in the order
    /// model, gpu, gpus, batch, prompt, gen, weights, kv, engine (outermost first); a
    /// combination that cannot be laid out is a row with an `error` column, and a count of
    /// them goes to stderr.
    Sweep {
        #[command(flatten)]
        args: SweepArgs,
    },
    /// Cheapest configuration meeting latency/throughput targets, and the Pareto front.
    ///
    /// Searches devices (default: those with a price), counts 1, 2, 4, 8 (tp or pp) and
    /// 16, 32 (pp), weight and KV formats and batch sizes; ranks by USD per million output
    /// tokens (price x gpus / output tokens per hour) and says which target binds.
    Plan {
        #[command(flatten)]
        args: PlanArgs,
    },
    /// Training: memory per device and step time (ZeRO, 3D parallelism, LoRA/QLoRA).
    Train {
        #[command(flatten)]
        args: TrainArgs,
        /// Also write a chart of memory per device at ZeRO stages 0-3 (SVG).
        #[arg(long, value_name = "FILE.svg")]
        svg: Option<PathBuf>,
    },
    /// Fit engine efficiency factors to published measurements (CSV) and report errors.
    Calibrate {
        /// Measurements CSV (columns id,kind,gpu,num_gpus,model,precision,batch,
        /// prompt_len,gen_len,framework,metric,value,unit,source_url_or_repo_path,notes).
        #[arg(long, value_name = "FILE.csv")]
        measurements: PathBuf,
        /// Fit only this engine (default: every engine with rows, and typical).
        #[arg(long)]
        engine: Option<String>,
        /// Write the fitted engines to an engines TOML (load it with --engine-file):
        /// with --engine, that engine; without, the whole database as fitted to these
        /// measurements (engines without rows take typical's factors; `##` remarks of
        /// the file written over are kept).
        #[arg(long, value_name = "FILE.toml")]
        save: Option<PathBuf>,
        /// Print the accuracy table (median errors per kind: in sample, leave one out,
        /// leave one source out) in Markdown instead of the report.
        #[arg(long)]
        markdown: bool,
    },
    /// Roofline chart (SVG) of the model's ops on one or more devices (--gpu G,G2,...).
    Roofline {
        #[command(flatten)]
        args: PredictArgs,
        /// Output SVG file (`-` for stdout).
        #[arg(long, value_name = "FILE.svg")]
        out: PathBuf,
        /// Draw the host-link and scale-up-link slopes (by default: the host link with
        /// --offload cpu, the scale-up link with --gpus > 1).
        #[arg(long)]
        links: bool,
    },
}

/// Options of `ridgeline train`.
#[derive(Args, Clone)]
struct TrainArgs {
    /// Model id (see `ridgeline models`) or path to a Hugging Face config.json.
    #[arg(long)]
    model: String,
    /// Device id or alias (see `ridgeline hardware`).
    #[arg(long)]
    gpu: String,
    /// Number of devices (tp x pp x dp).
    #[arg(long, default_value_t = 1)]
    gpus: u64,
    /// Tensor-parallel degree.
    #[arg(long, default_value_t = 1)]
    tp: u64,
    /// Pipeline-parallel degree.
    #[arg(long, default_value_t = 1)]
    pp: u64,
    /// ZeRO stage: 0, 1 (optimizer states sharded), 2 (+ gradients), 3 (+ weights).
    #[arg(long, default_value_t = 0)]
    zero: u64,
    /// Sequences per micro-batch per data-parallel rank.
    #[arg(long = "micro-batch", default_value_t = 1)]
    micro_batch: u64,
    /// Sequences per optimizer step (default: micro-batch x dp, x 4pp with pipelining).
    #[arg(long = "global-batch")]
    global_batch: Option<u64>,
    /// Tokens per sequence.
    #[arg(long, default_value_t = 2048)]
    seq: u64,
    /// full, lora or qlora.
    #[arg(long, default_value = "full")]
    method: String,
    /// LoRA rank (adapters on q and v).
    #[arg(long = "lora-rank", default_value_t = 8)]
    lora_rank: u64,
    /// Activation recomputation: none, selective, full.
    #[arg(long, default_value = "none")]
    recompute: String,
    /// Mixed precision: bf16, fp16, fp8.
    #[arg(long, default_value = "bf16")]
    precision: String,
    /// Optimizer: adamw, sgd, adafactor.
    #[arg(long, default_value = "adamw")]
    optimizer: String,
    /// Optimizer states in host memory: none, cpu.
    #[arg(long, default_value = "none")]
    offload: String,
    /// Interleaved pipeline: model chunks per device.
    #[arg(long = "virtual-stages", default_value_t = 1)]
    virtual_stages: u64,
    /// Inter-node network bandwidth per GPU, bytes/s (400 Gb/s InfiniBand = 50e9).
    #[arg(long = "inter-node-bw", default_value_t = ridgeline::train::DEFAULT_INTER_NODE_BYTES_PER_S)]
    inter_node_bw: f64,
    /// Naive attention that materializes the score matrix.
    #[arg(long = "no-flash")]
    no_flash: bool,
    /// Tensor parallelism without sequence parallelism.
    #[arg(long = "no-sequence-parallel")]
    no_sequence_parallel: bool,
}

fn train_config(a: &TrainArgs) -> Result<ridgeline::train::TrainConfig> {
    use ridgeline::train::{Method, Offload, Optimizer, Recompute, TrainConfig, TrainPrecision};
    Ok(TrainConfig {
        gpus: a.gpus,
        tp: a.tp,
        pp: a.pp,
        zero: u8::try_from(a.zero).unwrap_or(u8::MAX),
        micro_batch: a.micro_batch,
        global_batch: a.global_batch,
        seq: a.seq,
        method: Method::parse(&a.method)?,
        lora_rank: a.lora_rank,
        recompute: Recompute::parse(&a.recompute)?,
        precision: TrainPrecision::parse(&a.precision)?,
        optimizer: Optimizer::parse(&a.optimizer)?,
        offload: Offload::parse(&a.offload)?,
        sequence_parallel: !a.no_sequence_parallel,
        flash: !a.no_flash,
        virtual_stages: a.virtual_stages,
        inter_node_bytes_per_s: a.inter_node_bw,
        ..TrainConfig::default()
    })
}

#[derive(ValueEnum, Clone, Copy, PartialEq, Eq)]
enum ChartArg {
    Throughput,
    Roofline,
    Memory,
}

/// `--gpu G[,G2,...]`: each name resolved (unknown ones with suggestions), duplicates
/// dropped.
fn gpu_list<'a>(db: &'a HardwareDb, list: &str) -> Result<Vec<&'a ridgeline::hardware::Hardware>> {
    let mut out: Vec<&ridgeline::hardware::Hardware> = Vec::new();
    for name in list.split(',') {
        if name.trim().is_empty() {
            return Err(Error::invalid(
                "--gpu",
                format!("empty device name in '{list}'"),
            ));
        }
        let hw = db.get(name)?;
        if !out.iter().any(|o| o.id == hw.id) {
            out.push(hw);
        }
    }
    if out.len() > 7 {
        return Err(Error::invalid(
            "--gpu",
            format!(
                "{} devices on one chart; at most 7 stay readable",
                out.len()
            ),
        ));
    }
    Ok(out)
}

/// Writes an SVG to `path` (given by `flag`).
fn write_svg(flag: &str, path: &std::path::Path, svg: &str) -> Result<()> {
    std::fs::write(path, svg)
        .map_err(|e| Error::invalid(flag, format!("cannot write {}: {e}", path.display())))
}

/// The chart `predict --svg` writes.
fn predict_chart(ctx: &Ctx, a: &PredictArgs, chart: ChartArg) -> Result<String> {
    use ridgeline::plot::{memory, roofline, throughput};
    let model = resolve_model(&a.model)?;
    let hw = ctx.hardware.get(&a.gpu)?;
    let engine = ctx.engines.get(&a.engine)?;
    let s = scenario(a)?;
    let pred = Predictor::new(&model, hw, engine, &s)?;
    match chart {
        ChartArg::Throughput => {
            let limit = throughput::batch_limit(&[&pred], s.prompt, s.gen_tokens)?;
            let series = throughput::series(&pred, s.prompt, s.gen_tokens, limit)?;
            let (title, subtitle) = throughput::titles(&pred, s.prompt, s.gen_tokens);
            throughput::throughput(
                &[series],
                &throughput::ThroughputOptions {
                    title,
                    subtitle,
                    ..Default::default()
                },
            )
        }
        ChartArg::Roofline => {
            let p = pred.predict(s.batch, s.prompt, s.gen_tokens)?;
            roofline::roofline(
                &[roofline::RooflineDevice {
                    hardware: hw,
                    prediction: &p,
                }],
                &roofline::RooflineOptions {
                    host_link: s.offload,
                    scaleup_link: s.gpus > 1,
                    ..Default::default()
                },
            )
        }
        ChartArg::Memory => {
            let c = memory::format_comparison(
                &model,
                hw,
                engine,
                &s,
                &memory::default_formats(&model),
            )?;
            memory::memory(&c)
        }
    }
}

struct Ctx {
    hardware: HardwareDb,
    engines: EngineDb,
}

impl Ctx {
    fn new(cli: &Cli) -> Result<Ctx> {
        let mut engines = EngineDb::builtin()?.clone();
        for f in &cli.engine_files {
            engines.load_file(f)?;
        }
        Ok(Ctx {
            hardware: hardware_db(&cli.hardware_files)?,
            engines,
        })
    }
}

fn scenario(a: &PredictArgs) -> Result<Scenario> {
    Ok(Scenario {
        batch: a.batch,
        prompt: a.prompt,
        gen_tokens: a.gen_tokens,
        weights: a.weights.as_deref().map(Format::parse).transpose()?,
        kv: a.kv.as_deref().map(Format::parse).transpose()?,
        gpus: a.gpus,
        parallel: match a.parallel {
            ParallelArg::Tp => Parallel::Tp,
            ParallelArg::Pp => Parallel::Pp,
        },
        flash: !a.no_flash,
        offload: a.offload == OffloadArg::Cpu,
    })
}

fn resolve_model(name: &str) -> Result<ModelConfig> {
    ModelDb::builtin()?.resolve(name)
}

fn prediction(ctx: &Ctx, a: &PredictArgs) -> Result<ridgeline::predict::Prediction> {
    if a.batch == 0 {
        return Err(Error::invalid("--batch", "must be at least 1"));
    }
    let model = resolve_model(&a.model)?;
    let hw = ctx.hardware.get(&a.gpu)?;
    let engine = ctx.engines.get(&a.engine)?;
    let s = scenario(a)?;
    Predictor::new(&model, hw, engine, &s)?.predict(s.batch, s.prompt, s.gen_tokens)
}

/// Options shared by predict, explain and roofline.
#[derive(Args, Clone)]
struct PredictArgs {
    /// Model id (see `ridgeline models`) or path to a Hugging Face config.json.
    #[arg(long)]
    model: String,
    /// Device id or alias (see `ridgeline hardware`).
    #[arg(long)]
    gpu: String,
    /// Number of devices.
    #[arg(long, default_value_t = 1)]
    gpus: u64,
    /// How devices split the model.
    #[arg(long, value_enum, default_value_t = ParallelArg::Tp)]
    parallel: ParallelArg,
    /// Concurrent sequences.
    #[arg(long, default_value_t = 1)]
    batch: u64,
    /// Prompt tokens per sequence.
    #[arg(long, default_value_t = 512)]
    prompt: u64,
    /// Generated tokens per sequence.
    #[arg(long = "gen", default_value_t = 128)]
    gen_tokens: u64,
    /// Weight format: fp32, fp16, bf16, fp8, int8, int4, q8_0, q4_0, q4_k_m, q5_k_m, q6_k,
    /// nf4, awq-int4, gptq-int4, bpw:N (default: the model's native dtype).
    #[arg(long)]
    weights: Option<String>,
    /// KV-cache format (default: the activation dtype).
    #[arg(long)]
    kv: Option<String>,
    /// Efficiency profile: ideal, typical, llama.cpp, vllm, trt-llm, sglang, gpt-fast,
    /// lmdeploy, mlc, exllamav2, hf.
    #[arg(long, default_value = "typical")]
    engine: String,
    /// Fused (flash) attention (the default).
    #[arg(long, overrides_with = "no_flash")]
    flash: bool,
    /// Naive attention that materializes the score matrix.
    #[arg(long = "no-flash")]
    no_flash: bool,
    /// Stream weights that do not fit from host memory over PCIe.
    #[arg(long, value_enum, default_value_t = OffloadArg::None)]
    offload: OffloadArg,
}

#[derive(ValueEnum, Clone, Copy, PartialEq, Eq)]
enum ParallelArg {
    Tp,
    Pp,
}

#[derive(ValueEnum, Clone, Copy, PartialEq, Eq)]
enum OffloadArg {
    None,
    Cpu,
}

#[derive(Subcommand)]
enum HardwareAction {
    /// One device with every number and its sources.
    Show {
        /// Device id or alias (e.g. h100, a100-80gb-sxm, 4090).
        id: String,
    },
}

fn hardware_db(files: &[PathBuf]) -> Result<HardwareDb> {
    let mut db = HardwareDb::builtin()?.clone();
    for f in files {
        db.load_file(f)?;
    }
    Ok(db)
}

fn to_json<T: serde::Serialize>(v: &T) -> Result<String> {
    serde_json::to_string_pretty(v).map_err(|e| Error::internal("JSON writer", e))
}

fn run(cli: Cli) -> Result<String> {
    let ctx = Ctx::new(&cli)?;
    let db = &ctx.hardware;
    match cli.command {
        Command::Models => {
            let models = ModelDb::builtin()?.models();
            if cli.json {
                let rows: Vec<_> = models
                    .iter()
                    .map(ridgeline::report::model_summary)
                    .collect();
                to_json(&rows)
            } else {
                Ok(ridgeline::report::table::model_list(models))
            }
        }
        Command::Predict {
            args,
            markdown,
            max,
            svg,
            chart,
        } => {
            let p = prediction(&ctx, &args)?;
            match (&svg, chart) {
                (Some(path), chart) => {
                    let chart = chart.unwrap_or(ChartArg::Throughput);
                    write_svg("--svg", path, &predict_chart(&ctx, &args, chart)?)?;
                    eprintln!("wrote {}", path.display());
                }
                (None, Some(_)) => {
                    return Err(Error::invalid("--chart", "applies only with --svg FILE"));
                }
                (None, None) => {}
            }
            if max {
                let limits = ridgeline::report::limits(&p);
                return if cli.json {
                    to_json(&limits)
                } else {
                    Ok(ridgeline::report::text::limits(&limits))
                };
            }
            if cli.json {
                to_json(&p)
            } else if markdown {
                Ok(ridgeline::report::markdown::prediction(&p))
            } else {
                Ok(ridgeline::report::text::prediction(&p))
            }
        }
        Command::Explain { args, svg } => {
            if let Some(path) = &svg {
                let chart = predict_chart(&ctx, &args, ChartArg::Roofline)?;
                write_svg("--svg", path, &chart)?;
                eprintln!("wrote roofline chart to {}", path.display());
            }
            let p = prediction(&ctx, &args)?;
            let model = resolve_model(&args.model)?;
            let hw = ctx.hardware.get(&args.gpu)?;
            let engine = ctx.engines.get(&args.engine)?;
            let s = scenario(&args)?;
            let pred = Predictor::new(&model, hw, engine, &s)?;
            let e = ridgeline::report::explain::explain(&pred, &p);
            if cli.json {
                to_json(&e)
            } else {
                Ok(ridgeline::report::explain::render(&e))
            }
        }
        Command::Sweep { args } => {
            sweep_cmd(&ctx, &args, cli.json)?;
            Ok(String::new())
        }
        Command::Plan { args } => {
            let report = ridgeline::plan::plan(&plan_request(&ctx, &args)?)?;
            if cli.json {
                to_json(&report)
            } else {
                Ok(ridgeline::report::plan::render(&report))
            }
        }
        Command::Train { args, svg } => {
            let model = resolve_model(&args.model)?;
            let hw = ctx.hardware.get(&args.gpu)?;
            let cfg = train_config(&args)?;
            let report = ridgeline::train::train(&model, hw, &cfg)?;
            if let Some(path) = &svg {
                let chart = ridgeline::plot::memory::zero_comparison(&model, hw, &cfg)?;
                write_svg("--svg", path, &ridgeline::plot::memory::memory(&chart)?)?;
                eprintln!("wrote ZeRO memory chart to {}", path.display());
            }
            if cli.json {
                to_json(&report)
            } else {
                Ok(ridgeline::report::train::render(&report))
            }
        }
        Command::Calibrate {
            measurements,
            engine,
            save,
            markdown,
        } => {
            use ridgeline::calibrate::{accuracy, calibrate, engines_file, engines_toml};
            let rows = ridgeline::calibrate::read_measurements(&measurements)?;
            let mapped = ridgeline::calibrate::cases_with(&rows, db, ModelDb::builtin()?);
            if markdown {
                let a = accuracy(&mapped, &ctx.engines)?;
                return Ok(ridgeline::report::calibration::accuracy_markdown(&a));
            }
            let cal = calibrate(&mapped, &ctx.engines, engine.as_deref())?;
            if let Some(path) = save {
                let text = if engine.is_some() {
                    engines_toml(&cal, &mapped)?
                } else {
                    let previous = path
                        .exists()
                        .then(|| ridgeline::files::read_text(&path))
                        .transpose()?;
                    engines_file(&cal, &mapped, &ctx.engines, previous.as_deref())?
                };
                std::fs::write(&path, text).map_err(|e| Error::write(&path, e))?;
                eprintln!(
                    "saved {} fitted engine profile(s) to {}",
                    cal.engines.len(),
                    path.display()
                );
            }
            if cli.json {
                to_json(&cal)
            } else {
                Ok(ridgeline::report::calibration::text(&cal))
            }
        }
        Command::Roofline { args, out, links } => {
            use ridgeline::plot::roofline::{RooflineDevice, RooflineOptions, roofline};
            let to_stdout = out.as_os_str() == "-";
            if to_stdout && cli.json {
                return Err(Error::conflict(
                    &["--json", "--out"],
                    "--json and --out - would both write to stdout",
                ));
            }
            if args.batch == 0 {
                return Err(Error::invalid("--batch", "must be at least 1"));
            }
            let model = resolve_model(&args.model)?;
            let engine = ctx.engines.get(&args.engine)?;
            let s = scenario(&args)?;
            let hws = gpu_list(db, &args.gpu)?;
            let preds = hws
                .iter()
                .map(|hw| {
                    Predictor::new(&model, hw, engine, &s)?.predict(s.batch, s.prompt, s.gen_tokens)
                })
                .collect::<Result<Vec<_>>>()?;
            let devices: Vec<RooflineDevice> = hws
                .iter()
                .zip(&preds)
                .map(|(hw, p)| RooflineDevice {
                    hardware: hw,
                    prediction: p,
                })
                .collect();
            let svg = roofline(
                &devices,
                &RooflineOptions {
                    host_link: links || s.offload,
                    scaleup_link: links || s.gpus > 1,
                    ..RooflineOptions::default()
                },
            )?;
            if to_stdout {
                return Ok(svg);
            }
            write_svg("--out", &out, &svg)?;
            if cli.json {
                to_json(&serde_json::json!({ "out": out, "predictions": preds }))
            } else {
                Ok(format!("wrote {}", out.display()))
            }
        }
        Command::Hardware { action: None } => {
            if cli.json {
                let all: Vec<_> = db.devices().iter().map(|d| d.report()).collect();
                to_json(&all)
            } else {
                Ok(ridgeline::report::table::hardware_list(db.devices()))
            }
        }
        Command::Hardware {
            action: Some(HardwareAction::Show { id }),
        } => {
            let hw = db.get(&id)?;
            if cli.json {
                to_json(&hw.report())
            } else {
                Ok(ridgeline::report::table::hardware_show(hw))
            }
        }
    }
}

/// Options of `ridgeline sweep`: every LIST takes `1,2,4`, `1..64`, `128..8192:x2`,
/// `0..1000:+50`, mixed freely.
#[derive(Args, Clone)]
struct SweepArgs {
    /// Model ids or config.json paths, comma-separated.
    #[arg(long)]
    model: String,
    /// Device ids or aliases, comma-separated.
    #[arg(long)]
    gpu: String,
    /// Device counts (LIST).
    #[arg(long, default_value = "1")]
    gpus: String,
    /// How devices split the model.
    #[arg(long, value_enum, default_value_t = ParallelArg::Tp)]
    parallel: ParallelArg,
    /// Concurrent sequences (LIST).
    #[arg(long, default_value = "1")]
    batch: String,
    /// Prompt tokens per sequence (LIST).
    #[arg(long, default_value = "512")]
    prompt: String,
    /// Generated tokens per sequence (LIST).
    #[arg(long = "gen", default_value = "128")]
    gen_tokens: String,
    /// Weight formats, comma-separated; `native` is each model's own dtype.
    #[arg(long, default_value = "native")]
    weights: String,
    /// KV-cache formats, comma-separated; `native` is the activation dtype.
    #[arg(long, default_value = "native")]
    kv: String,
    /// Engines, comma-separated.
    #[arg(long, default_value = "typical")]
    engine: String,
    /// Fused (flash) attention (the default).
    #[arg(long, overrides_with = "no_flash")]
    flash: bool,
    /// Naive attention that materializes the score matrix.
    #[arg(long = "no-flash")]
    no_flash: bool,
    /// CSV rows (the default; --json for `{"rows": [...]}`).
    #[arg(long)]
    csv: bool,
    /// Write to FILE instead of stdout.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
}

/// Options of `ridgeline plan`.
#[derive(Args, Clone)]
struct PlanArgs {
    /// Model id or path to a Hugging Face config.json.
    #[arg(long)]
    model: String,
    /// Devices to consider, comma-separated, or `all` (default: every device with a price).
    #[arg(long)]
    gpu: Option<String>,
    /// Device counts to consider (LIST; default 1,2,4,8,16,32).
    #[arg(long)]
    gpus: Option<String>,
    /// Prompt tokens per request.
    #[arg(long, default_value_t = 512)]
    prompt: u64,
    /// Generated tokens per request.
    #[arg(long = "gen", default_value_t = 128)]
    gen_tokens: u64,
    /// Largest acceptable time to first token, ms.
    #[arg(long = "max-ttft-ms")]
    max_ttft_ms: Option<f64>,
    /// Largest acceptable mean time per output token, ms.
    #[arg(long = "max-tpot-ms")]
    max_tpot_ms: Option<f64>,
    /// Smallest acceptable output tokens/s of one replica (all its devices together).
    #[arg(long = "min-throughput")]
    min_throughput: Option<f64>,
    /// Largest acceptable price of one replica, USD per hour.
    #[arg(long = "budget-usd-per-hour")]
    budget_usd_per_hour: Option<f64>,
    /// Weight formats to consider, comma-separated (`native` for the model's own;
    /// default: native, fp8 and int8 where the device has those peaks, q8_0, awq-int4).
    #[arg(long)]
    weights: Option<String>,
    /// KV formats to consider, comma-separated (default: native,fp8).
    #[arg(long)]
    kv: Option<String>,
    /// Engines to consider, comma-separated.
    #[arg(long, default_value = "typical")]
    engine: String,
    /// Naive attention that materializes the score matrix.
    #[arg(long = "no-flash")]
    no_flash: bool,
}

fn format_list(flag: &str, text: &str) -> Result<Vec<Option<Format>>> {
    ridgeline::list::parse_names(flag, text)?
        .iter()
        .map(|f| match f.to_ascii_lowercase().as_str() {
            "native" | "auto" | "default" => Ok(None),
            _ => Format::parse(f).map(Some),
        })
        .collect()
}

fn plan_request<'a>(ctx: &'a Ctx, a: &PlanArgs) -> Result<ridgeline::plan::PlanRequest<'a>> {
    use ridgeline::list::parse_names;
    let devices = match a.gpu.as_deref() {
        None => ridgeline::plan::default_devices(&ctx.hardware),
        Some(g) if g.trim().eq_ignore_ascii_case("all") => ctx.hardware.devices().iter().collect(),
        Some(g) => parse_names("--gpu", g)?
            .iter()
            .map(|n| ctx.hardware.get(n))
            .collect::<Result<_>>()?,
    };
    let ms = |flag: &str, v: Option<f64>| -> Result<Option<f64>> {
        v.map(|x| ridgeline::error::require_positive(flag, x).map(|x| x / 1e3))
            .transpose()
    };
    Ok(ridgeline::plan::PlanRequest {
        model: resolve_model(&a.model)?,
        devices,
        engines: parse_names("--engine", &a.engine)?
            .iter()
            .map(|e| ctx.engines.get(e))
            .collect::<Result<_>>()?,
        prompt: a.prompt,
        gen_tokens: a.gen_tokens,
        targets: ridgeline::plan::Targets {
            max_ttft_s: ms("--max-ttft-ms", a.max_ttft_ms)?,
            max_tpot_s: ms("--max-tpot-ms", a.max_tpot_ms)?,
            min_output_tokens_per_s: a.min_throughput,
            max_usd_per_hour: a.budget_usd_per_hour,
        },
        gpu_counts: match a.gpus.as_deref() {
            Some(g) => {
                ridgeline::list::parse_u64_list_in("--gpus", g, 1, ridgeline::sweep::MAX_GPUS)?
            }
            None => ridgeline::plan::DEFAULT_GPU_COUNTS.to_vec(),
        },
        weights: a
            .weights
            .as_deref()
            .map(|w| format_list("--weights", w))
            .transpose()?,
        kv: a
            .kv
            .as_deref()
            .map(|k| format_list("--kv", k))
            .transpose()?,
        flash: !a.no_flash,
    })
}

fn parallel_of(p: ParallelArg) -> Parallel {
    match p {
        ParallelArg::Tp => Parallel::Tp,
        ParallelArg::Pp => Parallel::Pp,
    }
}

/// Streams the sweep to stdout (or --out) in bounded memory; a summary of invalid
/// combinations goes to stderr.
fn sweep_cmd(ctx: &Ctx, a: &SweepArgs, json: bool) -> Result<()> {
    use ridgeline::sweep::{Sweep, SweepLists, WriteOptions};
    use std::io::{BufWriter, IsTerminal, Write};
    if a.csv && json {
        return Err(Error::conflict(&["--csv", "--json"], "choose one"));
    }
    let lists = SweepLists {
        model: &a.model,
        gpu: &a.gpu,
        gpus: &a.gpus,
        batch: &a.batch,
        prompt: &a.prompt,
        gen_tokens: &a.gen_tokens,
        weights: &a.weights,
        kv: &a.kv,
        engine: &a.engine,
        parallel: parallel_of(a.parallel),
        flash: !a.no_flash,
    };
    let sweep = Sweep::from_lists(&lists, &ctx.hardware, &ctx.engines)?;
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
            let mut f = std::fs::File::create(path).map_err(|e| Error::write(path, e))?;
            write(&mut f)?
        }
        None => write(&mut std::io::stdout().lock())?,
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
    Ok(())
}

/// The command-line flag for a library field name (`gen_tokens` -> `--gen`); `None`
/// for names that are not options (config.json keys, data-file keys).
fn flag_of(field: &str) -> Option<String> {
    let flag = match field {
        "gen_tokens" | "gen" => "--gen",
        "gpu_counts" => "--gpus",
        "inter_node_bytes_per_s" => "--inter-node-bw",
        "max_ttft_s" => "--max-ttft-ms",
        "max_tpot_s" => "--max-tpot-ms",
        "min_output_tokens_per_s" => "--min-throughput",
        "max_usd_per_hour" => "--budget-usd-per-hour",
        "model" | "gpu" | "gpus" | "batch" | "prompt" | "weights" | "kv" | "engine"
        | "parallel" | "tp" | "pp" | "zero" | "micro_batch" | "global_batch" | "seq"
        | "lora_rank" | "virtual_stages" | "offload" | "method" | "recompute" | "precision"
        | "optimizer" => return Some(format!("--{}", field.replace('_', "-"))),
        _ => return None,
    };
    Some(flag.to_string())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(out) => {
            use std::io::Write;
            let mut stdout = std::io::stdout().lock();
            let nl = if out.ends_with('\n') || out.is_empty() {
                ""
            } else {
                "\n"
            };
            // a closed pipe (`ridgeline ... | head`) is not an error worth a panic
            let _ = write!(stdout, "{out}{nl}").and_then(|_| stdout.flush());
            ExitCode::SUCCESS
        }
        Err(e) => {
            let code = if e.is_internal() { 1 } else { 2 };
            eprintln!("error: {}", e.rename_fields(flag_of));
            ExitCode::from(code)
        }
    }
}
