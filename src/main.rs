//! The `ridgeline` command line: parses arguments, calls the library, renders. Any error
//! on input exits with status 2 and one line on stderr naming the field.

use clap::{Parser, Subcommand};
use ridgeline::hardware::HardwareDb;
use ridgeline::{Error, Result};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "ridgeline", version, about = "Will it fit, and how fast will it run? LLM rooflines for GPUs.")]
struct Cli {
    /// Print exactly one JSON document on stdout.
    #[arg(long, global = true)]
    json: bool,
    /// Extra hardware definitions (TOML, same schema as data/hardware/*.toml).
    #[arg(long = "hardware-file", global = true, value_name = "FILE")]
    hardware_files: Vec<PathBuf>,
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
    serde_json::to_string_pretty(v).map_err(|e| Error::invalid("json output", e.to_string()))
}

fn run(cli: Cli) -> Result<String> {
    let db = hardware_db(&cli.hardware_files)?;
    match cli.command {
        Command::Hardware { action: None } => {
            if cli.json {
                let all: Vec<_> = db.devices().iter().map(|d| d.report()).collect();
                to_json(&all)
            } else {
                Ok(ridgeline::report::table::hardware_list(db.devices()))
            }
        }
        Command::Hardware { action: Some(HardwareAction::Show { id }) } => {
            let hw = db.get(&id)?;
            if cli.json {
                to_json(&hw.report())
            } else {
                Ok(ridgeline::report::table::hardware_show(hw))
            }
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(out) => {
            use std::io::Write;
            let mut stdout = std::io::stdout().lock();
            let nl = if out.ends_with('\n') { "" } else { "\n" };
            // a closed pipe (`ridgeline ... | head`) is not an error worth a panic
            let _ = write!(stdout, "{out}{nl}").and_then(|_| stdout.flush());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}
