//! Published serving benchmarks against the simulation: `data/measurements/serving.csv`
//! (kind `S`) holds closed-loop concurrency sweeps and replayed request traces with
//! their TTFT, TPOT and output throughput, each with its source; [`validate`] simulates
//! every scenario once and [`error_table`] reports the errors (README, section Serving
//! validation; `tests/suite/serving.rs` checks it is current).
//!
//! The file has the columns of `measurements.csv` with ridgeline ids for `gpu` and
//! `model` and `framework` an engine id, plus `kv` (KV format), `concurrency` (users
//! of a closed loop), `requests` (requests simulated), `trace` (a trace CSV, path from
//! the repository root, replayed instead of a closed loop), `rate` (Poisson arrivals,
//! requests/s, instead of a closed loop) and `lengths` (`fixed`, or `uniform`: lengths
//! drawn uniformly over `1..=2·mean - 1` around the row's prompt and generation means,
//! as a random dataset with range ratio 0 draws them). Metrics: `ttft_s_mean`,
//! `ttft_s_p50`, `tpot_s_mean`, `tpot_s_p50`, `output_tokens_per_s`.

use super::{Arrivals, Dist, Run, Serving, Workload, parse_trace, simulate};
use crate::dtype::Format;
use crate::engine::EngineDb;
use crate::error::{Error, Result};
use crate::hardware::HardwareDb;
use crate::kernels::KernelDb;
use crate::model::ModelDb;
use crate::predict::{Kernels, Scenario};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

/// The bundled `data/measurements/serving.csv`.
pub const BUILTIN_SERVING_CSV: &str = include_str!("../../../../data/measurements/serving.csv");

/// Columns the serving CSV has after those of the measurements CSV
/// ([`crate::calibrate::COLUMNS`]).
pub(crate) const SERVING_EXTRA_COLUMNS: [&str; 6] =
    ["kv", "concurrency", "requests", "trace", "rate", "lengths"];

/// One published serving figure.
#[derive(Debug, Clone, PartialEq)]
pub struct ServingRow {
    /// Row id (`s001`).
    pub id: String,
    /// Hardware id.
    pub gpu: String,
    /// Devices (tensor parallel).
    pub gpus: u64,
    /// Model id.
    pub model: String,
    /// Weight format.
    pub weights: Format,
    /// KV format.
    pub kv: Format,
    /// Engine id.
    pub engine: String,
    /// Prompt tokens (closed loop).
    pub prompt: u64,
    /// Output tokens (closed loop).
    pub gen_tokens: u64,
    /// Users of the closed loop (`None`: a trace or a rate).
    pub concurrency: Option<u64>,
    /// Poisson arrivals, requests/s (`None`: a closed loop or a trace).
    pub rate: Option<f64>,
    /// Prompt and generation lengths drawn uniformly over `1..=2·mean - 1` (the
    /// row's `prompt` and `gen_tokens` are their means); false: fixed.
    pub uniform_lengths: bool,
    /// Requests simulated.
    pub requests: u64,
    /// Trace path (`None`: a closed loop).
    pub trace: Option<String>,
    /// What was measured: `ttft_s_mean`, `tpot_s_mean`, `tpot_s_p50`,
    /// `output_tokens_per_s`.
    pub metric: String,
    /// The measured value (s or tokens/s).
    pub value: f64,
    /// Where it was published.
    pub source: String,
}

impl ServingRow {
    /// The scenario rows share a simulation by.
    fn key(&self) -> String {
        format!(
            "{} {} {} {} {} {} {} {} {:?} {} {:?} {:?} {}",
            self.gpu,
            self.gpus,
            self.model,
            self.weights,
            self.kv,
            self.engine,
            self.prompt,
            self.gen_tokens,
            self.concurrency,
            self.requests,
            self.trace,
            self.rate,
            self.uniform_lengths
        )
    }

    /// The metric's value in a run.
    pub(crate) fn of(&self, r: &Run) -> Result<f64> {
        Ok(match self.metric.as_str() {
            "ttft_s_mean" => r.ttft_s.mean,
            "ttft_s_p50" => r.ttft_s.p50,
            "tpot_s_mean" => r.tpot_s.mean,
            "tpot_s_p50" => r.tpot_s.p50,
            "output_tokens_per_s" => r.throughput.output_tokens_per_s,
            m => {
                return Err(Error::invalid(
                    "metric",
                    format!("{}: unknown serving metric '{m}'", self.id),
                ));
            }
        })
    }
}

/// Reads the serving CSV; `src` names it in errors.
pub fn parse_serving(text: &str, src: &str) -> Result<Vec<ServingRow>> {
    let err = |line: u64, msg: String| Error::Parse {
        source_name: src.to_string(),
        message: format!("line {line}: {msg}"),
    };
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let header = reader.headers().map_err(|e| err(1, e.to_string()))?.clone();
    let columns: Vec<&str> = crate::calibrate::COLUMNS
        .iter()
        .chain(&SERVING_EXTRA_COLUMNS)
        .copied()
        .collect();
    if header.iter().collect::<Vec<_>>() != columns {
        return Err(err(1, format!("the header must be {}", columns.join(","))));
    }
    let mut rows = Vec::new();
    for rec in reader.records() {
        let rec = rec.map_err(|e| err(0, e.to_string()))?;
        let line = rec.position().map_or(0, |p| p.line());
        let get = |i: usize| rec.get(i).unwrap_or("").trim().to_string();
        let num = |i: usize| -> Result<u64> {
            get(i)
                .parse()
                .map_err(|_| err(line, format!("{}: not a whole number", columns[i])))
        };
        let format = |i: usize| Format::parse(&get(i)).map_err(|e| err(line, e.to_string()));
        let value: f64 = get(11)
            .parse()
            .map_err(|_| err(line, "value: not a number".into()))?;
        rows.push(ServingRow {
            id: get(0),
            gpu: get(2),
            gpus: num(3)?,
            model: get(4),
            weights: format(5)?,
            kv: format(15)?,
            engine: get(9),
            prompt: num(7)?,
            gen_tokens: num(8)?,
            concurrency: (!get(16).is_empty()).then(|| num(16)).transpose()?,
            requests: num(17)?,
            trace: Some(get(18)).filter(|t| !t.is_empty()),
            rate: match get(19).as_str() {
                "" => None,
                t => match t.parse::<f64>() {
                    Ok(v) if v.is_finite() && v > 0.0 => Some(v),
                    _ => return Err(err(line, format!("rate: '{t}' is not a positive number"))),
                },
            },
            uniform_lengths: match get(20).as_str() {
                "" | "fixed" => false,
                "uniform" => true,
                t => {
                    return Err(err(
                        line,
                        format!("lengths: '{t}' is not one of fixed, uniform"),
                    ));
                }
            },
            metric: get(10),
            value,
            source: get(13),
        });
    }
    Ok(rows)
}

/// Simulates one row's scenario (traces read from under `root`).
pub fn simulate_row(row: &ServingRow, root: &Path) -> Result<Run> {
    simulate_row_on(row, root, None)
}

/// [`simulate_row`] with the iterations costed on the bundled databases' `kernels`
/// where they cover an op (`None`: the engines' fitted costs alone).
pub fn simulate_row_on(row: &ServingRow, root: &Path, kernels: Option<&KernelDb>) -> Result<Run> {
    simulate_row_with(row, root, kernels, None)
}

/// [`simulate_row_on`] with the server's front end taking `front` seconds per request
/// (`None`: the bundled fit, [`crate::engine::front_end::FrontEnd`]).
pub fn simulate_row_with(
    row: &ServingRow,
    root: &Path,
    kernels: Option<&KernelDb>,
    front: Option<f64>,
) -> Result<Run> {
    let model = ModelDb::builtin()?.resolve(&row.model)?;
    let hardware = HardwareDb::builtin()?;
    let hw = hardware.get(&row.gpu)?;
    let engines = EngineDb::builtin()?;
    let engine = engines.get(&row.engine)?;
    let s = Scenario {
        weights: Some(row.weights),
        kv: Some(row.kv),
        gpus: row.gpus,
        ..Scenario::default()
    };
    let arrivals = match (&row.trace, row.concurrency, row.rate) {
        (Some(t), _, _) => {
            let path = root.join(t);
            Arrivals::Trace(parse_trace(&crate::files::read_text(&path)?, t)?)
        }
        (None, Some(concurrency), _) => Arrivals::Closed { concurrency },
        (None, None, Some(rate)) => Arrivals::Poisson { rate },
        (None, None, None) => {
            return Err(Error::invalid(
                "concurrency",
                format!("{}: neither a trace, a concurrency nor a rate", row.id),
            ));
        }
    };
    let length = |mean: u64| {
        if row.uniform_lengths && mean > 1 {
            Dist::Uniform {
                lo: 1,
                hi: 2 * mean - 1,
            }
        } else {
            Dist::Fixed { tokens: mean }
        }
    };
    let requests = match &arrivals {
        Arrivals::Trace(t) => t.len() as u64,
        _ => row.requests,
    };
    let w = Workload {
        arrivals,
        requests,
        prompt: length(row.prompt),
        gen_tokens: length(row.gen_tokens),
        seed: 0,
    };
    let serving = Serving {
        kernels: kernels.map(|db| Kernels {
            db,
            hardware,
            engines,
        }),
        request_overhead_s: front,
        ..Serving::default()
    };
    simulate(&model, hw, engine, &s, &serving, &w)
}

/// Every row with its simulated value, each scenario simulated once.
pub fn validate(rows: &[ServingRow], root: &Path) -> Result<Vec<(ServingRow, f64)>> {
    validate_on(rows, root, None)
}

/// [`validate`] with the iterations costed on `kernels` ([`simulate_row_on`]).
pub fn validate_on(
    rows: &[ServingRow],
    root: &Path,
    kernels: Option<&KernelDb>,
) -> Result<Vec<(ServingRow, f64)>> {
    validate_with(rows, root, kernels, None)
}

/// [`validate_on`] with the front end taking `front` seconds per request
/// ([`simulate_row_with`]).
pub fn validate_with(
    rows: &[ServingRow],
    root: &Path,
    kernels: Option<&KernelDb>,
    front: Option<f64>,
) -> Result<Vec<(ServingRow, f64)>> {
    let mut runs: BTreeMap<String, Run> = BTreeMap::new();
    let mut out = Vec::with_capacity(rows.len());
    for r in rows {
        let key = r.key();
        if !runs.contains_key(&key) {
            runs.insert(key.clone(), simulate_row_with(r, root, kernels, front)?);
        }
        out.push((r.clone(), r.of(&runs[&key])?));
    }
    Ok(out)
}

/// The server's front-end time per request fitted on the published times to first
/// token ([`fit_front_end`]).
#[derive(Debug, Clone, PartialEq)]
pub struct FrontEndFit {
    /// The fitted time, s.
    pub request_overhead_s: f64,
    /// The rows it was fitted on (every `ttft_s_*` row).
    pub fitted_on: Vec<String>,
    /// Devices among those rows.
    pub devices: usize,
    /// Publications among those rows ([`crate::calibrate::source_key`]).
    pub publications: usize,
    /// Each publication of the fitted rows ([`crate::calibrate::source_key`]) with the
    /// time fitted without its rows, s: what [`front_end_held_out`] simulates its rows
    /// with.
    pub folds: Vec<(String, f64)>,
}

/// The largest front-end time the fit considers, s.
pub const FRONT_END_MAX_S: f64 = 0.5;

/// The fit's step, s.
pub const FRONT_END_STEP_S: f64 = 1e-4;

/// The front-end time, a multiple of [`FRONT_END_STEP_S`] in [0, [`FRONT_END_MAX_S`]],
/// that minimises the mean |ln(simulated / published)| of the times to first token
/// `ttft`, each given as (published, simulated with no front end); the smallest such
/// time where several tie. A request's time to first token holds the front end once;
/// where requests queue for seconds the term is small against the queueing, so such
/// rows barely pull.
pub fn front_end_minimising(ttft: &[(f64, f64)]) -> f64 {
    let loss = |d: f64| -> f64 {
        ttft.iter()
            .map(|&(published, simulated)| ((simulated + d) / published).ln().abs())
            .sum()
    };
    let steps = (FRONT_END_MAX_S / FRONT_END_STEP_S).round() as u64;
    let mut best = (f64::INFINITY, 0.0);
    for i in 0..=steps {
        let d = i as f64 * FRONT_END_STEP_S;
        let l = loss(d);
        if l < best.0 - 1e-12 {
            best = (l, d);
        }
    }
    best.1
}

/// The `ttft_s_*` rows of `rows` simulated with no front end (iterations on `kernels`
/// where given): (publication, published, simulated) each.
fn bare_ttft(
    rows: &[ServingRow],
    root: &Path,
    kernels: Option<&KernelDb>,
) -> Result<Vec<(String, f64, f64)>> {
    let ttft: Vec<ServingRow> = rows
        .iter()
        .filter(|r| r.metric.starts_with("ttft_s"))
        .cloned()
        .collect();
    if ttft.is_empty() {
        return Err(Error::invalid(
            "metric",
            "no ttft_s_* row to fit the front end on",
        ));
    }
    Ok(validate_with(&ttft, root, kernels, Some(0.0))?
        .into_iter()
        .map(|(r, simulated)| (crate::calibrate::source_key(&r.source), r.value, simulated))
        .collect())
}

/// [`front_end_minimising`] over the rows of `bare` not of publication `held`.
fn front_end_without(bare: &[(String, f64, f64)], held: Option<&str>) -> f64 {
    let pairs: Vec<(f64, f64)> = bare
        .iter()
        .filter(|x| Some(x.0.as_str()) != held)
        .map(|x| (x.1, x.2))
        .collect();
    front_end_minimising(&pairs)
}

/// Fits the server's front-end time per request on the `ttft_s_*` rows of `rows`:
/// [`front_end_minimising`] of their simulations without a front end (iterations on
/// `kernels` where given), and the same without each publication's rows in turn.
pub fn fit_front_end(
    rows: &[ServingRow],
    root: &Path,
    kernels: Option<&KernelDb>,
) -> Result<FrontEndFit> {
    let bare = bare_ttft(rows, root, kernels)?;
    let ttft = rows.iter().filter(|r| r.metric.starts_with("ttft_s"));
    let devices: std::collections::BTreeSet<&str> = ttft.clone().map(|r| r.gpu.as_str()).collect();
    let publications: std::collections::BTreeSet<&str> =
        bare.iter().map(|x| x.0.as_str()).collect();
    Ok(FrontEndFit {
        request_overhead_s: front_end_without(&bare, None),
        fitted_on: ttft.map(|r| r.id.clone()).collect(),
        devices: devices.len(),
        publications: publications.len(),
        folds: publications
            .iter()
            .map(|p| (p.to_string(), front_end_without(&bare, Some(p))))
            .collect(),
    })
}

/// Every row of `rows` simulated with the front-end time that `fit` ([`fit_front_end`]
/// on the same rows) found without its publication's rows: the serving validation held
/// out by publication. A publication with no fitted row takes the full fit's time.
pub fn front_end_held_out(
    rows: &[ServingRow],
    root: &Path,
    kernels: Option<&KernelDb>,
    fit: &FrontEndFit,
) -> Result<Vec<(ServingRow, f64)>> {
    use crate::calibrate::source_key;
    let publications: std::collections::BTreeSet<String> =
        rows.iter().map(|r| source_key(&r.source)).collect();
    let mut by_row: BTreeMap<String, f64> = BTreeMap::new();
    for p in &publications {
        let mine: Vec<ServingRow> = rows
            .iter()
            .filter(|r| &source_key(&r.source) == p)
            .cloned()
            .collect();
        let d = fit
            .folds
            .iter()
            .find(|f| &f.0 == p)
            .map_or(fit.request_overhead_s, |f| f.1);
        for (r, v) in validate_with(&mine, root, kernels, Some(d))? {
            by_row.insert(r.id.clone(), v);
        }
    }
    Ok(rows.iter().map(|r| (r.clone(), by_row[&r.id])).collect())
}

/// `data/front-end.toml` as [`fit_front_end`] on the bundled serving rows writes it.
pub fn front_end_toml(fit: &FrontEndFit) -> String {
    let ids = fit
        .fitted_on
        .iter()
        .map(|id| format!("\"{id}\""))
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "## The serving front end's time per request: the host work a server does for each request\n\
         ## besides the engine's iterations (HTTP, parsing, tokenization, the first token's trip\n\
         ## back), part of every time to first token and end-to-end latency that a client measures.\n\
         ## Fitted on the published times to first token of data/measurements/serving.csv (the\n\
         ## ttft_s_* rows, simulated with the engines as fitted): the time that minimises their mean\n\
         ## |ln(simulated / published)|. Written by\n\
         ## `cargo run --release -q --example serving_fit -- --save` (tests/suite/serving.rs checks\n\
         ## it is current); read by simulate, plan --rate and sweep --rate (`--request-overhead-ms`\n\
         ## replaces it; 0 under --engine ideal).\n\
         request_overhead_s = {:.4}\n\
         fitted_on = [{ids}]\n\
         factor = \"fitted on {} rows from {} devices in {} publications\"\n",
        fit.request_overhead_s,
        fit.fitted_on.len(),
        fit.devices,
        fit.publications
    )
}

/// The bundled serving rows whose engine and device the bundled kernel tables cover (the
/// device's own table or its sibling's), simulated without the tables and on them (the
/// engines refitted on the tables): the median |error| per metric of each, as Markdown
/// (docs/kernels.md, "Serving on the tables"), and the error table of every row on the
/// tables.
pub fn kernel_table_comparison(root: &Path) -> Result<(String, String)> {
    let (hw, kernels) = (HardwareDb::builtin()?, KernelDb::builtin()?);
    let rows: Vec<ServingRow> = parse_serving(BUILTIN_SERVING_CSV, "serving.csv")?
        .into_iter()
        .filter(|r| {
            hw.get(&r.gpu)
                .is_ok_and(|d| kernels.table_for(d, hw, &r.engine).is_some())
        })
        .collect();
    let off = error_table(&validate_on(&rows, root, None)?);
    let on = error_table(&validate_on(&rows, root, Some(kernels))?);
    let medians = |t: &str| {
        t.split_once("\n\n")
            .map_or(t.to_string(), |m| m.0.to_string())
    };
    let summary = format!(
        "Without the tables (the engines as fitted):\n\n{}\n\nOn the tables (the engines refitted on them):\n\n{}\n",
        medians(&off),
        medians(&on)
    );
    let every = on
        .split_once("\n\n")
        .map_or(String::new(), |m| m.1.to_string());
    Ok((summary, every))
}

/// The error table (Markdown): median |error| per metric, then every row.
pub fn error_table(results: &[(ServingRow, f64)]) -> String {
    let err = |(r, p): &(ServingRow, f64)| 100.0 * (p / r.value - 1.0);
    let mut by_metric: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for x in results {
        by_metric
            .entry(x.0.metric.as_str())
            .or_default()
            .push(err(x).abs());
    }
    let mut s = String::from("| metric | rows | median \\|error\\| |\n|---|---:|---:|\n");
    for (m, v) in &by_metric {
        let _ = writeln!(
            s,
            "| `{m}` | {} | {:.1}% |",
            v.len(),
            crate::calibrate::median_abs(v.iter().copied())
        );
    }
    s.push_str("\n| id | deployment | load | metric | published | simulated | error |\n|---|---|---|---|---:|---:|---:|\n");
    let show = |metric: &str, v: f64| {
        if metric.ends_with("_per_s") {
            format!("{} tok/s", crate::units::sig3(v))
        } else {
            crate::units::fmt_seconds(v)
        }
    };
    for x in results {
        let r = &x.0;
        let lengths = if r.uniform_lengths {
            "uniform, means "
        } else {
            ""
        };
        let load = match (r.concurrency, r.rate) {
            (Some(c), _) => format!("{c} users, {lengths}{}+{} tokens", r.prompt, r.gen_tokens),
            (None, Some(rate)) => format!(
                "{rate} req/s, {lengths}{}+{} tokens",
                r.prompt, r.gen_tokens
            ),
            (None, None) => "trace".to_string(),
        };
        let _ = writeln!(
            s,
            "| {} | {} x {} {} {}, {} | {load} | `{}` | {} | {} | {:+.0}% |",
            r.id,
            r.gpus,
            r.gpu,
            r.model,
            r.weights,
            r.engine,
            r.metric,
            show(&r.metric, r.value),
            show(&r.metric, x.1),
            err(x)
        );
    }
    s
}
