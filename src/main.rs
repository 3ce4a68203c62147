//! The `ridgeline` command line: parses arguments ([`cli`]), runs a command
//! ([`commands`]), prints its output. Any error on input exits with status 2 and one
//! line on stderr naming the field.

mod cli;
mod commands;

use cli::{Cli, Command};
use commands::Ctx;
use ridgeline::Result;
use std::process::ExitCode;

fn run(cli: Cli) -> Result<String> {
    let ctx = Ctx::new(&cli)?;
    let json = cli.json;
    match &cli.command {
        Command::Hardware { action } => commands::hardware(&ctx, action.as_ref(), json),
        Command::Models => commands::models(json),
        Command::Predict {
            args,
            markdown,
            max,
            svg,
            chart,
        } => commands::predict(&ctx, args, *markdown, *max, svg.as_deref(), *chart, json),
        Command::Explain { args, svg } => commands::explain(&ctx, args, svg.as_deref(), json),
        Command::Sweep { args } => commands::sweep(&ctx, args, json),
        Command::Plan { args } => commands::plan(&ctx, args, json),
        Command::Train { args, svg } => commands::train(&ctx, args, svg.as_deref(), json),
        Command::Calibrate {
            measurements,
            engine,
            save,
        } => commands::calibrate(&ctx, measurements, engine.as_deref(), save.as_ref(), json),
        Command::Roofline { args, out, links } => {
            commands::roofline_cmd(&ctx, args, out, *links, json)
        }
    }
}

fn main() -> ExitCode {
    let cli = cli::parse();
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
            eprintln!("error: {}", e.rename_fields(cli::flag_of));
            ExitCode::from(code)
        }
    }
}
