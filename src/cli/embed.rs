//! The command line run from other programs (the Python package): a sweep's columns
//! instead of CSV text, and the options each command takes (charts as SVG text:
//! [`super::chart_args`]). Words are parsed exactly as [`super::run_args`] parses them.

use super::context::Ctx;
use super::run::{Parsed, parse_words};
use super::{Cli, Command};
use crate::sweep::Columns;
use crate::{Error, Result};

/// Parses the words of a `sweep` (`["sweep", "--model", "llama-3-8b", "--gpu",
/// "h100,a100", "--batch", "1..64:x2"]`) as [`super::run_args`] does and evaluates it
/// into the CSV's columns ([`crate::sweep::Sweep::columns`]) instead of text. `--csv`,
/// `--json` and `--out` are refused: they choose text the columns replace.
///
/// ```
/// let c = ridgeline::cli::sweep_columns_args([
///     "sweep", "--model", "llama-3-8b", "--gpu", "h100", "--batch", "1..8",
/// ])?;
/// assert_eq!(c.rows, 8);
/// # Ok::<(), ridgeline::Error>(())
/// ```
pub fn sweep_columns_args<I, T>(args: I) -> Result<Columns>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let cli = match parse_words(args)? {
        Parsed::Cli(cli) => *cli,
        Parsed::Text(text) => return Err(Error::Usage(text)),
    };
    let Command::Sweep { args } = &cli.command else {
        return Err(Error::Usage("expected the words of a sweep".into()));
    };
    if cli.json || args.csv || args.out.is_some() {
        return Err(Error::Usage(
            "a sweep gathered as columns prints no text: --csv, --json and --out are for the command line".into(),
        ));
    }
    if args.rate.is_some() {
        return Err(Error::Usage(
            "a rate sweep (--rate) simulates serving: its rows come from `sweep --rate --json`"
                .into(),
        ));
    }
    let ctx = Ctx::new(&cli)?;
    let tables = args.kernels.load()?;
    ctx.sweep(args, tables.as_deref())?.columns()
}

/// One option of a command, for programs that build command lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OptionInfo {
    /// The long flag without its dashes (`max-tpot-ms`).
    pub name: String,
    /// Whether it takes a value (`--batch 8`) or is a switch (`--json`).
    pub takes_value: bool,
    /// Whether it may be given more than once (`--hardware-file A --hardware-file B`).
    pub repeated: bool,
    /// Whether it must be given.
    pub required: bool,
    /// Its help line.
    pub help: String,
}

/// The options of the command named by `path` (`["plan"]`, `["hardware", "show"]`),
/// global ones included, in the order of `--help`.
///
/// ```
/// let opts = ridgeline::cli::options(&["predict"])?;
/// let batch = opts.iter().find(|o| o.name == "batch").unwrap();
/// assert!(batch.takes_value && !batch.repeated);
/// assert!(opts.iter().any(|o| o.name == "hardware-file" && o.repeated));
/// # Ok::<(), ridgeline::Error>(())
/// ```
pub fn options(path: &[&str]) -> Result<Vec<OptionInfo>> {
    use clap::CommandFactory;
    let mut cmd = Cli::command();
    cmd.build();
    let mut at = &cmd;
    for name in path {
        at = at.find_subcommand(name).ok_or_else(|| {
            Error::unknown("command", name, at.get_subcommands().map(|c| c.get_name()))
        })?;
    }
    Ok(at
        .get_arguments()
        .filter_map(|a| {
            let name = a.get_long()?;
            (name != "help" && name != "version").then(|| OptionInfo {
                name: name.to_string(),
                takes_value: a.get_action().takes_values(),
                repeated: matches!(a.get_action(), clap::ArgAction::Append),
                required: a.is_required_set(),
                help: a.get_help().map(|h| h.to_string()).unwrap_or_default(),
            })
        })
        .collect())
}
