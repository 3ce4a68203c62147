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
        Command::Plan { args, train } => commands::plan(&ctx, args, train, json),
        Command::Instances => commands::instances(&ctx, json),
        Command::Train { args, svg } => commands::train(&ctx, args, svg.as_deref(), json),
        Command::Simulate { args, svg } => commands::simulate(&ctx, args, svg.as_deref(), json),
        Command::Calibrate {
            measurements,
            save,
            train: true,
            ..
        } => commands::calibrate_train(measurements, save.as_deref(), json),
        Command::Calibrate {
            measurements,
            engine,
            save,
            markdown,
            train: false,
        } => commands::calibrate(
            &ctx,
            measurements,
            engine.as_deref(),
            save.as_ref(),
            *markdown,
            json,
        ),
        Command::Roofline { args, out, links } => {
            commands::roofline_cmd(&ctx, args, out, *links, json)
        }
    }
}

/// Prints the command's output; a closed pipe (`ridgeline ... | head`) is a quiet
/// success, any other write error is an error.
fn print(out: &str) -> std::io::Result<()> {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    let nl = if out.ends_with('\n') || out.is_empty() {
        ""
    } else {
        "\n"
    };
    match write!(stdout, "{out}{nl}").and_then(|_| stdout.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e),
        _ => Ok(()),
    }
}

fn fail(e: ridgeline::Error) -> ExitCode {
    let code = if e.is_internal() { 1 } else { 2 };
    eprintln!("error: {}", e.rename_fields(cli::flag_of));
    ExitCode::from(code)
}

fn main() -> ExitCode {
    // Ctrl-C or SIGTERM: remove output files still being written, keep the old ones
    let _ = ctrlc::set_handler(|| {
        ridgeline::files::remove_partial_files();
        std::process::exit(130);
    });
    let cli = cli::parse();
    match run(cli).and_then(|out| print(&out).map_err(|e| ridgeline::Error::write("<stdout>", e))) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(e),
    }
}
