//! Running the command line: words to a parsed [`Cli`] (one-line errors), a parsed
//! command to its output, and the library's field names to the flags that set them.

use super::commands::{self, Ctx};
use super::{Chart, Cli, Command};
use crate::{Result, files};
use clap::Parser;

/// The command-line flag for a library field name (`gen_tokens` -> `--gen`); `None`
/// for names that are not options (config.json keys, data-file keys).
pub fn flag_of(field: &str) -> Option<String> {
    let flag = match field {
        "gen_tokens" | "gen" => "--gen",
        "gpu_counts" => "--gpus",
        "inter_node_bytes_per_s" => "--inter-node-bw",
        "max_ttft_s" => "--max-ttft-ms",
        "max_tpot_s" => "--max-tpot-ms",
        "min_output_tokens_per_s" => "--min-throughput",
        "max_usd_per_hour" => "--budget-usd-per-hour",
        "slo_ttft_s" => "--slo-ttft-ms",
        "slo_tpot_s" => "--slo-tpot-ms",
        "request_overhead_s" => "--request-overhead-ms",
        "methods" => "--method",
        "model" | "gpu" | "gpus" | "batch" | "prompt" | "weights" | "expert_weights" | "kv"
        | "engine" | "parallel" | "tp" | "pp" | "cp" | "zero" | "micro_batch" | "global_batch"
        | "seq" | "lora_rank" | "virtual_stages" | "offload" | "method" | "recompute"
        | "precision" | "optimizer" | "measurements" | "ep" | "spec_k" | "spec_accept"
        | "draft" | "tokens" | "max_hours" | "budget_usd" | "instance" | "rate" | "concurrency"
        | "trace" | "requests" | "seed" | "max_num_seqs" | "max_batched_tokens" | "prefix_hit"
        | "disagg" | "host" | "port" | "own_life_years" | "own_utilisation" | "pue"
        | "usd_per_kwh" | "price_basis" | "provider" | "emit" | "out" | "kernels" | "mtp"
        | "overlap_ep" | "expert_imbalance" => {
            return Some(format!("--{}", field.replace('_', "-")));
        }
        _ => return None,
    };
    Some(flag.to_string())
}

/// Parses the command line. Help and version print as usual; any other error is one
/// line on stderr (clap's message with its hints joined) and exit status 2.
pub fn parse() -> Cli {
    use clap::error::ErrorKind;
    match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => match e.kind() {
            ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => e.exit(),
            _ => {
                eprintln!("{}", one_line(&e.to_string()));
                std::process::exit(2);
            }
        },
    }
}

/// What a caller of [`run_args_with`] or [`chart_args`] adds to the command line.
#[derive(Debug, Clone, Copy, Default)]
pub struct RunOptions<'a> {
    /// Models given as parsed documents (a pasted `config.json`): `--model ID` and
    /// `--draft ID` with the id of one of them take it, before the bundled models.
    pub models: &'a [crate::model::ModelConfig],
    /// Most bytes a streamed output (a sweep) may take; `None`: memory permitting.
    pub max_output_bytes: Option<usize>,
}

/// Words parsed: a command line to run, or the text of `--help` / `--version`.
pub(super) enum Parsed {
    /// A command line to run.
    Cli(Box<Cli>),
    /// Help or version text.
    Text(String),
}

/// Parses the words after `ridgeline` as the command line does.
pub(super) fn parse_words<I, T>(args: I) -> Result<Parsed>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    use clap::error::ErrorKind;
    let argv = std::iter::once(std::ffi::OsString::from("ridgeline"))
        .chain(args.into_iter().map(Into::into));
    match Cli::try_parse_from(argv) {
        Ok(cli) => Ok(Parsed::Cli(Box::new(cli))),
        Err(e) => match e.kind() {
            ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
                Ok(Parsed::Text(e.to_string()))
            }
            _ => Err(crate::Error::Usage(
                one_line(&e.to_string())
                    .trim_start_matches("error: ")
                    .to_string(),
            )),
        },
    }
}

/// Parses `args`, the words after `ridgeline` (`["predict", "--model", "llama-3-8b",
/// "--gpu", "h100", "--json"]`), as the command line does, and runs the command: what
/// the Python package and the web server call, so they print exactly what the CLI
/// prints. A parse error is [`crate::Error::Usage`] with the CLI's one-line message;
/// `--help` and `--version` return their text. What the CLI streams to stdout (a
/// sweep) is returned too.
///
/// ```
/// let out = ridgeline::cli::run_args(["models", "--json"])?;
/// assert!(out.contains("\"llama-3-8b\""));
/// let e = ridgeline::cli::run_args(["predict", "--model", "llama-3-8b", "--gpu", "h100", "--batch", "-1"]).unwrap_err();
/// assert!(e.to_string().contains("--batch"));
/// # Ok::<(), ridgeline::Error>(())
/// ```
pub fn run_args<I, T>(args: I) -> Result<String>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    run_args_with(args, &RunOptions::default())
}

/// [`run_args`] with models given as documents and a bound on streamed output.
///
/// ```
/// use ridgeline::cli::{RunOptions, run_args_with};
/// use ridgeline::model::ModelConfig;
/// let text = r#"{"model_type": "llama", "hidden_size": 2048, "num_hidden_layers": 16,
///     "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 8192,
///     "vocab_size": 128256, "torch_dtype": "bfloat16"}"#;
/// let mine = ModelConfig::from_json_str(text, "mine", "config.json")?;
/// let opts = RunOptions { models: &[mine], ..RunOptions::default() };
/// let out = run_args_with(["predict", "--model", "mine", "--gpu", "l4", "--json"], &opts)?;
/// assert!(out.contains("\"id\": \"mine\""));
/// # Ok::<(), ridgeline::Error>(())
/// ```
pub fn run_args_with<I, T>(args: I, opts: &RunOptions) -> Result<String>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    match parse_words(args)? {
        Parsed::Text(text) => Ok(text),
        Parsed::Cli(cli) => {
            let ctx = context(&cli, opts)?;
            files::all_or_nothing(|| dispatch(&cli, &ctx))
        }
    }
}

/// Draws `chart` from the words of the command whose options describe it
/// ([`Chart::command`]): what that command's `--svg FILE` (or `roofline --out`) would
/// write, as SVG text. `--gpu` may list devices for the roofline and throughput charts.
///
/// ```
/// use ridgeline::cli::{Chart, RunOptions, chart_args};
/// let words = ["predict", "--model", "llama-3-8b", "--gpu", "h100,l40s"];
/// let svg = chart_args(Chart::Throughput, words, &RunOptions::default())?;
/// assert!(svg.starts_with("<svg") && svg.contains("L40S"));
/// # Ok::<(), ridgeline::Error>(())
/// ```
pub fn chart_args<I, T>(chart: Chart, args: I, opts: &RunOptions) -> Result<String>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    match parse_words(args)? {
        Parsed::Text(_) => Err(crate::Error::Usage(
            "--help and --version print text, not a chart".into(),
        )),
        Parsed::Cli(cli) => super::charts::of_command(&context(&cli, opts)?, &cli, chart),
    }
}

/// The databases of a command line run for a caller: its models, output captured.
fn context(cli: &Cli, opts: &RunOptions) -> Result<Ctx> {
    Ok(Ctx::new(cli)?
        .with_models(opts.models)
        .capturing(opts.max_output_bytes.unwrap_or(usize::MAX)))
}

/// clap's multi-line message as one line: its lines up to the usage, joined by "; ".
fn one_line(message: &str) -> String {
    let message = plain_parse_errors(message);
    let message = shorten_quoted(&message, ECHO_CHARS);
    let mut out = String::new();
    let lines = message
        .lines()
        .map(str::trim)
        .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
        .filter(|l| !l.is_empty());
    for l in lines {
        if !out.is_empty() {
            out.push_str(if out.ends_with(':') { " " } else { "; " });
        }
        out.push_str(l);
    }
    out
}

/// Most characters of a value a message echoes back (the rest becomes "…").
const ECHO_CHARS: usize = 40;

/// The messages of Rust's integer parser in words a person reads: what the flag expects.
fn plain_parse_errors(message: &str) -> String {
    message
        .replace(
            "invalid digit found in string",
            "expected a whole number, digits only (no sign, no decimal point)",
        )
        .replace(
            "number too large to fit in target type",
            "expected a whole number, this one is too large",
        )
        .replace(
            "cannot parse integer from empty string",
            "expected a whole number",
        )
}

/// `message` with every '...'-quoted value longer than `max` characters cut to `max`
/// and "…" (a 309-digit number is not echoed whole).
fn shorten_quoted(message: &str, max: usize) -> String {
    let mut out = String::with_capacity(message.len().min(4096));
    let mut rest = message;
    while let Some(open) = rest.find('\'') {
        out.push_str(&rest[..=open]);
        rest = &rest[open + 1..];
        let Some(close) = rest.find('\'') else { break };
        let quoted = &rest[..close];
        if quoted.chars().count() > max {
            out.extend(quoted.chars().take(max));
            out.push('…');
        } else {
            out.push_str(quoted);
        }
        out.push('\'');
        rest = &rest[close + 1..];
    }
    out.push_str(rest);
    out
}

/// Runs one parsed command line and returns what it prints on stdout (files it writes
/// are written; notes go to stderr; a sweep streams to stdout).
pub fn run(cli: Cli) -> Result<String> {
    let ctx = Ctx::new(&cli)?;
    // every output file of the run is committed after the last one is ready, or none
    files::all_or_nothing(|| dispatch(&cli, &ctx))
}

/// Runs a parsed command line with its databases.
fn dispatch(cli: &Cli, ctx: &Ctx) -> Result<String> {
    let json = cli.json;
    match &cli.command {
        Command::Hardware { action } => commands::hardware(ctx, action.as_ref(), json),
        Command::Models => commands::models(json),
        Command::Predict {
            args,
            markdown,
            max,
            svg,
            chart,
            html,
            emit,
        } => {
            let out = commands::PredictOutputs {
                markdown: *markdown,
                max: *max,
                svg: svg.as_deref(),
                chart: *chart,
                html: html.as_deref(),
                emit,
            };
            commands::predict(ctx, args, &out, json)
        }
        Command::Explain { args, svg, html } => {
            commands::explain(ctx, args, svg.as_deref(), html.as_deref(), json)
        }
        Command::Sweep { args } => commands::sweep(ctx, args, json),
        Command::Plan { args, train, emit } => commands::plan(ctx, args, train, emit, json),
        Command::Instances => commands::instances(ctx, json),
        Command::Kernels { kernels } => commands::kernels(kernels.as_deref(), json),
        Command::Train { args, svg, emit } => {
            commands::train(ctx, args, svg.as_deref(), emit, json)
        }
        Command::Simulate { args, svg, emit } => {
            commands::simulate(ctx, args, svg.as_deref(), emit, json)
        }
        Command::Calibrate { args } => super::calibration::run(ctx, args, json),
        Command::Roofline { args, out, links } => {
            commands::roofline_cmd(ctx, args, out, *links, json)
        }
        Command::Serve { args } => crate::web::serve(&args.host, args.port).map(|()| String::new()),
    }
}
