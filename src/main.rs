//! The `ridgeline` command line: parses arguments and runs a command
//! ([`ridgeline::cli`]), prints its output. Any error on input exits with status 2 and one
//! line on stderr naming the field.

use ridgeline::cli;
use std::process::ExitCode;

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
    let code = match e {
        _ if e.is_internal() => 1,
        // as a shell reports a command ended by SIGINT
        ridgeline::Error::Cancelled { .. } => 130,
        _ => 2,
    };
    eprintln!("error: {}", e.rename_fields(cli::flag_of));
    ExitCode::from(code)
}

/// How long a Ctrl-C waits for the command to stop at its next check before the
/// process exits anyway.
const GRACE: std::time::Duration = std::time::Duration::from_secs(2);

fn main() -> ExitCode {
    // the command runs inside one token: Ctrl-C or SIGTERM stops it at its next check
    // (its output files are never committed, their temporary files removed); a command
    // that does not stop within GRACE is ended, its temporary files removed
    let work = ridgeline::work::Work::new();
    let stopper = work.clone();
    let _ = ctrlc::set_handler(move || {
        stopper.cancel(ridgeline::work::Stop::Interrupted);
        std::thread::sleep(GRACE);
        ridgeline::files::remove_partial_files();
        eprintln!("error: interrupted");
        std::process::exit(130);
    });
    let cli = cli::parse();
    let bar = cli::progress::Bar::spawn(&work, cli.quiet);
    let result = work.run(|| cli::run(cli));
    drop(bar);
    match result.and_then(|out| print(&out).map_err(|e| ridgeline::Error::write("<stdout>", e))) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(e),
    }
}
