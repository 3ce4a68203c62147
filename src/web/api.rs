//! The routes: the embedded page, and the API that turns a query into the words of a
//! command line and answers what [`crate::cli::run_args_with`] or
//! [`crate::cli::chart_args`] return for them. No route reads or writes a file.

use super::assets;
use super::http::{Request, Response};
use crate::cli::{self, Chart, Cli, RunOptions};
use crate::model::{ModelConfig, ModelDb};
use crate::{Error, Result};
use clap::CommandFactory;

/// The commands the API runs (`/api/<command>`).
pub const COMMANDS: [&str; 10] = [
    "hardware",
    "models",
    "instances",
    "kernels",
    "predict",
    "explain",
    "train",
    "sweep",
    "plan",
    "simulate",
];

/// Options the API refuses, with the reason: each reads or writes a file on the server,
/// or prints something other than the answer.
pub const REFUSED: [(&str, &str); 14] = [
    (
        "out",
        "writes a file, and the server writes none: the response is the output",
    ),
    (
        "svg",
        "writes a file, and the server writes none: ask /api/<chart>.svg for a chart",
    ),
    (
        "html",
        "writes a file, and the server writes none: run `ridgeline predict --html FILE`",
    ),
    ("save", "writes a file, and the server writes none"),
    ("chart", "picks the chart of --svg: ask /api/<chart>.svg"),
    ("hardware-file", "reads a file, and the server reads none"),
    ("engine-file", "reads a file, and the server reads none"),
    ("instances-file", "reads a file, and the server reads none"),
    ("trace", "reads a file, and the server reads none"),
    ("measurements", "reads a file, and the server reads none"),
    (
        "markdown",
        "prints Markdown: the API answers JSON, or text at /api/<command>.txt",
    ),
    (
        "csv",
        "prints CSV: the API answers JSON, or text at /api/<command>.txt",
    ),
    ("help", "prints help: see docs/reference.md"),
    ("version", "prints the version: see /api/meta"),
];

/// Most requests one simulated rate may have through the API (the CLI takes up to
/// [`crate::simulate::MAX_REQUESTS`]): keeps one request's work to seconds.
pub const MAX_SIMULATED_REQUESTS: u64 = 100_000;

/// Largest answer of a streamed command (a sweep): 16 MiB.
pub const MAX_OUTPUT_BYTES: usize = 16 << 20;

/// What a route answers with.
enum Answer {
    /// The command's `--json` document.
    Json,
    /// The text the command prints.
    Text,
    /// A chart.
    Chart(Chart),
}

/// Answers one request. Never panics on input; an internal failure is 500.
pub fn handle(req: &Request) -> Response {
    match std::panic::catch_unwind(|| route(req)) {
        Ok(r) => r,
        Err(_) => Response::error(500, "internal error (a bug in ridgeline; please report it)"),
    }
}

fn route(req: &Request) -> Response {
    let post = match req.method.as_str() {
        "GET" | "HEAD" => false,
        "POST" => true,
        other => return not_allowed(other, "GET, HEAD, POST"),
    };
    if let Some(rest) = req.path.strip_prefix("/api/") {
        return match rest {
            "meta" if !post => meta(),
            "meta" => not_allowed("POST", "GET, HEAD"),
            _ => api(rest, req),
        };
    }
    match assets::get(&req.path) {
        Some(_) if post => not_allowed("POST", "GET, HEAD"),
        Some((content_type, body)) => Response::new(200, content_type, body),
        None => Response::error(404, &format!("no page at {}; the page is at /", req.path)),
    }
}

fn not_allowed(method: &str, allow: &str) -> Response {
    let mut r = Response::error(405, &format!("{method} is not served here; use {allow}"));
    r.headers.push(("Allow", allow.to_string()));
    r
}

/// `/api/<command>`, `/api/<command>.txt`, `/api/<chart>.svg`.
fn api(route: &str, req: &Request) -> Response {
    let (name, answer) = if let Some(chart) = route.strip_suffix(".svg") {
        match Chart::parse(chart) {
            Ok(c) => (
                c.command().split(' ').next().unwrap_or_default(),
                Answer::Chart(c),
            ),
            Err(_) => return unknown_route(route),
        }
    } else if let Some(command) = route.strip_suffix(".txt") {
        (command, Answer::Text)
    } else {
        (route, Answer::Json)
    };
    if !COMMANDS.contains(&name) {
        return unknown_route(route);
    }
    match answer_of(name, &answer, req) {
        Ok(body) => {
            let content_type = match answer {
                Answer::Json => "application/json",
                Answer::Text => "text/plain; charset=utf-8",
                Answer::Chart(_) => "image/svg+xml",
            };
            Response::new(200, content_type, body)
        }
        Err(e) => error_response(e.rename_fields(cli::flag_of)),
    }
}

/// The answer to a failed command: 500 for a bug; 503 with `Retry-After` when the
/// work was stopped at the server's deadline; 413 for work over the server's budget
/// and 400 for any other bad input, both naming the parameter (`param`).
pub fn error_response(e: Error) -> Response {
    let message = e.to_string();
    match &e {
        _ if e.is_internal() => Response::error(500, &message),
        Error::Cancelled { .. } => Response::unavailable(
            &format!("{message}: ask for less work, or run it with the command line"),
            super::RETRY_AFTER_S,
        ),
        _ => {
            let status = if matches!(e, Error::TooMuchWork { .. }) {
                413
            } else {
                400
            };
            Response::error_param(status, &message, &param_of(&e))
        }
    }
}

/// The query parameter an error names: its field without the leading `--`, else the
/// first `--option` its message mentions, else `body` for a posted document that does
/// not parse (and `query` for anything else).
fn param_of(e: &Error) -> String {
    let strip = |f: &str| f.trim_start_matches("--").to_string();
    if let Some(f) = e.field() {
        return strip(f);
    }
    let message = e.to_string();
    if let Some(i) = message.find("--") {
        let name: String = message[i + 2..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
            .collect();
        if !name.is_empty() {
            return name;
        }
    }
    match e {
        Error::Parse { source_name, .. } if source_name.contains("posted") => "body".into(),
        _ => "query".into(),
    }
}

fn unknown_route(route: &str) -> Response {
    let charts: Vec<String> = Chart::ALL.iter().map(|c| format!("/api/{c}.svg")).collect();
    Response::error(
        404,
        &format!(
            "no API route /api/{route}; there are /api/<command> (and .txt) for {}, {}, and /api/meta",
            COMMANDS.join(", "),
            charts.join(", ")
        ),
    )
}

/// Runs the route's command for the request.
fn answer_of(command: &str, answer: &Answer, req: &Request) -> Result<String> {
    let posted = posted_model(req)?;
    let models: Vec<ModelConfig> = posted.iter().cloned().collect();
    let opts = RunOptions {
        models: &models,
        max_output_bytes: Some(MAX_OUTPUT_BYTES),
    };
    let lead: Vec<&str> = match answer {
        Answer::Chart(Chart::Roofline) => vec!["roofline", "--out=-"],
        Answer::Chart(Chart::CostTime) => vec!["plan", "--train"],
        _ => vec![command],
    };
    let mut words = words(&lead, &req.query, posted.as_ref())?;
    match answer {
        Answer::Json => words.push("--json".into()),
        Answer::Text => {}
        Answer::Chart(c) => return cli::chart_args(*c, words, &opts),
    }
    if command == "hardware"
        && let Some((_, id)) = req.query.iter().find(|(k, _)| k == "id")
    {
        words.extend(["show".to_string(), "--".to_string(), id.clone()]);
    }
    // what the CLI prints: the output, ending in a newline
    let mut out = cli::run_args_with(words, &opts)?;
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    Ok(out)
}

/// The model of a `POST` body (a `config.json`), if any.
fn posted_model(req: &Request) -> Result<Option<ModelConfig>> {
    if req.method != "POST" || req.body.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    let text = std::str::from_utf8(&req.body).map_err(|_| Error::Parse {
        source_name: "the posted config.json".into(),
        message: "not UTF-8 text".into(),
    })?;
    ModelConfig::from_json_str(text, "custom", "the posted config.json").map(Some)
}

/// The CLI's command tree, built once (clap builds it in about half a millisecond, a
/// third of a cheap request).
fn command_tree() -> &'static clap::Command {
    static TREE: std::sync::OnceLock<clap::Command> = std::sync::OnceLock::new();
    TREE.get_or_init(Cli::command)
}

/// The words of the command line for `lead` (the command and fixed options) and the
/// query: `name=value` as `--name=value` (one word, so a value never reads as an
/// option), switches as `--name` when `true`, `1`, `on`, `yes` or empty.
fn words(
    lead: &[&str],
    query: &[(String, String)],
    posted: Option<&ModelConfig>,
) -> Result<Vec<String>> {
    let root = command_tree();
    let sub = root
        .find_subcommand(lead[0])
        .ok_or_else(|| Error::internal("web API", format!("no command {}", lead[0])))?;
    let args: Vec<&clap::Arg> = sub.get_arguments().chain(root.get_arguments()).collect();
    let mut words: Vec<String> = lead.iter().map(|w| w.to_string()).collect();
    let mut has_model = false;
    for (key, value) in query {
        let name = key.trim().replace('_', "-");
        if name == "json"
            || (lead[0] == "hardware" && name == "id")
            || words.contains(&format!("--{name}"))
        {
            continue;
        }
        if let Some((_, why)) = REFUSED.iter().find(|(n, _)| *n == name) {
            return Err(Error::invalid(format!("--{name}"), *why));
        }
        let Some(arg) = args.iter().find(|a| a.get_long() == Some(name.as_str())) else {
            let longs = args
                .iter()
                .filter_map(|a| a.get_long())
                .filter(|l| !REFUSED.iter().any(|(n, _)| n == l));
            return Err(Error::unknown("option", &name, longs));
        };
        if names_a_file(arg) {
            return Err(Error::invalid(
                format!("--{name}"),
                "names a file or folder, and the server reads and writes none",
            ));
        }
        if arg.get_action().takes_values() {
            check_value(lead[0], &name, value, posted)?;
            has_model |= name == "model";
            words.push(format!("--{name}={value}"));
        } else if switch(&name, value)? {
            words.push(format!("--{name}"));
        }
    }
    if let (Some(m), false) = (posted, has_model)
        && args.iter().any(|a| a.get_long() == Some("model"))
    {
        words.push(format!("--model={}", m.id));
    }
    Ok(words)
}

/// Whether an option's value is a file or a folder (its value name is `FILE`,
/// `FILE.svg`, ..., or `DIR`): refused like those [`REFUSED`] names, so an option added
/// later is refused too.
pub fn names_a_file(arg: &clap::Arg) -> bool {
    arg.get_value_names().is_some_and(|names| {
        names
            .iter()
            .any(|n| n.as_str().starts_with("FILE") || n.as_str() == "DIR")
    })
}

/// Whether a switch is on: `true`, `1`, `on`, `yes` or empty; off: `false`, `0`,
/// `off`, `no`.
fn switch(name: &str, value: &str) -> Result<bool> {
    match value.trim().to_ascii_lowercase().as_str() {
        "" | "true" | "1" | "on" | "yes" => Ok(true),
        "false" | "0" | "off" | "no" => Ok(false),
        _ => Err(Error::invalid(
            format!("--{name}"),
            format!("is a switch: give true or false, not '{value}'"),
        )),
    }
}

/// The API's own bounds on a value: models only by bundled id (or the posted
/// document's id), never a path; simulations of at most [`MAX_SIMULATED_REQUESTS`].
fn check_value(command: &str, name: &str, value: &str, posted: Option<&ModelConfig>) -> Result<()> {
    match name {
        "model" | "draft" => {
            let db = ModelDb::builtin()?;
            // a sweep resolves its models itself, from the bundled ones
            let posted = posted.filter(|_| command != "sweep");
            for n in value.split(',').map(str::trim).filter(|n| !n.is_empty()) {
                let known = db.models().iter().any(|m| m.id.eq_ignore_ascii_case(n))
                    || posted.is_some_and(|m| m.id.eq_ignore_ascii_case(n));
                if !known {
                    let ids = db.models().iter().map(|m| m.id.as_str());
                    let e = Error::unknown("model id", n, ids.chain(posted.map(|m| m.id.as_str())));
                    // named by the parameter that gave it (`model` or `draft`)
                    return Err(Error::invalid(name, e.to_string()));
                }
            }
            Ok(())
        }
        "requests" if command == "simulate" => match value.trim().parse::<u64>() {
            Ok(n) if n > MAX_SIMULATED_REQUESTS => Err(Error::invalid(
                "--requests",
                format!(
                    "the server simulates at most {MAX_SIMULATED_REQUESTS} requests per rate, got {n}; the command line takes more"
                ),
            )),
            _ => Ok(()),
        },
        _ => Ok(()),
    }
}

/// `/api/meta`: what the page's menus offer and how charts colour things.
fn meta() -> Response {
    let hex = |c: [u8; 3]| format!("#{:02x}{:02x}{:02x}", c[0], c[1], c[2]);
    let engines: Vec<String> = match crate::engine::EngineDb::builtin() {
        Ok(db) => db.engines().iter().map(|e| e.id.clone()).collect(),
        Err(e) => return Response::error(500, &e.to_string()),
    };
    let doc = serde_json::json!({
        "version": env!("CARGO_PKG_VERSION"),
        "commands": COMMANDS,
        "charts": Chart::ALL.iter().map(|c| c.name()).collect::<Vec<_>>(),
        "formats": crate::dtype::FORMAT_NAMES,
        "engines": engines,
        "series_colors": (0..7).map(|i| hex(crate::plot::series_color(i))).collect::<Vec<_>>(),
        "segment_colors": (0..4).map(|i| hex(crate::plot::memory::segment_color(i))).collect::<Vec<_>>(),
        "max_simulated_requests": MAX_SIMULATED_REQUESTS,
        "max_body_bytes": super::http::MAX_BODY_BYTES,
        "deadline_s": super::DEADLINE.as_secs_f64(),
        "work_budget": super::WORK_BUDGET,
    });
    Response::new(200, "application/json", doc.to_string())
}
