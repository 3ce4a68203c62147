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
    match cli::run(cli)
        .and_then(|out| print(&out).map_err(|e| ridgeline::Error::write("<stdout>", e)))
    {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(e),
    }
}
