//! `ridgeline._ridgeline`: the compiled core of the Python package, a thin layer over
//! the crate's command line ([`ridgeline::cli`]). It runs a command's words and returns
//! what the CLI prints, a chart as SVG text, or a sweep's columns as raw buffers that
//! the Python side wraps as NumPy arrays. Every call runs the crate on its own thread
//! inside a [`Work`] token while the calling thread, without the GIL, waits for it:
//! every 50 ms it checks Python's signals (Ctrl-C raises `KeyboardInterrupt` and stops
//! the work at its next check) and calls the `progress` callback, if one is given, with
//! `(done, total, stage)`. Errors become `RidgelineError` (a `ValueError`) with the
//! CLI's message.

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyList, PyTuple};
use ridgeline::cli;
use ridgeline::sweep::Column;
use ridgeline::work::{Stop, Work};
use std::time::Duration;

pyo3::create_exception!(
    ridgeline,
    RidgelineError,
    PyValueError,
    "Bad input to ridgeline: the message is the command line's, naming the option."
);

/// A crate error as a Python exception: `RidgelineError` with the message the CLI prints
/// (options named by their flags), `RuntimeError` for an internal failure.
fn to_py(e: ridgeline::Error) -> PyErr {
    if e.is_internal() {
        PyRuntimeError::new_err(e.to_string())
    } else {
        RidgelineError::new_err(e.rename_fields(cli::flag_of).to_string())
    }
}

/// How often the waiting thread looks at Python's signals and the progress.
const POLL: Duration = Duration::from_millis(50);

/// Runs `f` on a thread of its own inside a fresh [`Work`], the GIL released, until it
/// ends; meanwhile checks Python's signals (an exception, `KeyboardInterrupt` for
/// Ctrl-C, stops the work and is raised once it has stopped) and calls `progress`
/// with `(done, total, stage)` when the work's progress changes.
fn interruptible<T: Send>(
    py: Python<'_>,
    progress: Option<&Bound<'_, PyAny>>,
    f: impl FnOnce() -> ridgeline::Result<T> + Send,
) -> PyResult<T> {
    let work = Work::new();
    let inner = work.clone();
    std::thread::scope(|s| {
        let task = s.spawn(move || inner.run(f));
        let mut last = None;
        loop {
            let finished = py.detach(|| {
                let until = std::time::Instant::now() + POLL;
                while !task.is_finished() && std::time::Instant::now() < until {
                    std::thread::sleep(Duration::from_millis(2));
                }
                task.is_finished()
            });
            if finished {
                break;
            }
            let mut stop = py.check_signals().err();
            if let (None, Some(cb)) = (&stop, progress) {
                let p = work.progress();
                let now = (p.done, p.total, p.stage);
                if !now.2.is_empty() && last.as_ref() != Some(&now) {
                    stop = cb.call1(now.clone()).err();
                    last = Some(now);
                }
            }
            if let Some(e) = stop {
                work.cancel(Stop::Interrupted);
                let _ = py.detach(|| task.join());
                return Err(e);
            }
        }
        match task.join() {
            Ok(r) => r.map_err(to_py),
            Err(_) => Err(PyRuntimeError::new_err(
                "ridgeline panicked (a bug; please report it)",
            )),
        }
    })
}

/// Runs a command from its words (`["predict", "--model", "llama-3-8b", "--gpu",
/// "h100", "--json"]`) and returns what the command line prints on stdout;
/// `progress(done, total, stage)` is called as long work advances.
#[pyfunction]
#[pyo3(signature = (args, progress=None))]
fn run(py: Python<'_>, args: Vec<String>, progress: Option<Bound<'_, PyAny>>) -> PyResult<String> {
    interruptible(py, progress.as_ref(), || cli::run_args(args))
}

/// Runs a command that draws a chart (`predict`, `explain`, `roofline`, `train`,
/// `simulate`, `plan --train`) and returns the chart as SVG text; no file is written.
/// `predict` draws the chart its `--chart` names (throughput by default).
#[pyfunction]
#[pyo3(signature = (args, progress=None))]
fn chart(
    py: Python<'_>,
    args: Vec<String>,
    progress: Option<Bound<'_, PyAny>>,
) -> PyResult<String> {
    let (kind, words) = chart_of(args).map_err(to_py)?;
    interruptible(py, progress.as_ref(), || {
        cli::chart_args(kind, words, &cli::RunOptions::default())
    })
}

/// The chart the command of `words` draws with `--svg FILE` (`roofline`: `--out`), and
/// the words [`cli::chart_args`] takes for it: `predict`'s `--chart` taken out (it
/// requires `--svg`), `roofline` given `--out=-` (the file it would write).
fn chart_of(mut words: Vec<String>) -> ridgeline::Result<(cli::Chart, Vec<String>)> {
    use cli::Chart;
    let kind = match words.first().map(String::as_str) {
        Some("predict") => match words.iter().position(|w| w == "--chart") {
            Some(i) if i + 1 < words.len() => {
                let name = words.remove(i + 1);
                words.remove(i);
                Chart::parse(&name)?
            }
            _ => Chart::Throughput,
        },
        Some("explain") => Chart::Roofline,
        Some("roofline") => {
            words.push("--out=-".into());
            Chart::Roofline
        }
        Some("train") => Chart::Zero,
        Some("simulate") => Chart::Serving,
        Some("plan") => Chart::CostTime,
        _ => {
            return Err(ridgeline::Error::Usage(
                "this command draws no chart; charts come from predict, explain, roofline, train, simulate and plan --train".into(),
            ));
        }
    };
    Ok((kind, words))
}

/// One option as Python sees it: (flag without dashes, takes a value, may repeat,
/// required, help line).
type OptionTuple = (String, bool, bool, bool, String);

/// The options of a command (`["plan"]`), as [`OptionTuple`]s.
#[pyfunction]
fn options(path: Vec<String>) -> PyResult<Vec<OptionTuple>> {
    let path: Vec<&str> = path.iter().map(String::as_str).collect();
    Ok(cli::options(&path)
        .map_err(to_py)?
        .into_iter()
        .map(|o| (o.name, o.takes_value, o.repeated, o.required, o.help))
        .collect())
}

/// A JSON document (a dict from Python) as TOML text, for hardware, engine and
/// instance files given as dicts.
#[pyfunction]
fn toml_from_json(text: &str) -> PyResult<String> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| RidgelineError::new_err(e.to_string()))?;
    toml::to_string(&value).map_err(|e| {
        RidgelineError::new_err(format!("cannot be written as TOML ({e}); give a file"))
    })
}

/// The bytes of a column's values, as a bytearray NumPy views without a copy.
fn buffer<'py, T: bytemuck::NoUninit>(py: Python<'py>, v: &[T]) -> Bound<'py, PyByteArray> {
    PyByteArray::new(py, bytemuck::cast_slice(v))
}

/// Evaluates a sweep from its words (`["sweep", "--model", ...]`, no `--csv`,
/// `--json` or `--out`) on all cores and returns `(rows, columns)`: each column a
/// tuple `(name, kind, data)` in the CSV's order, where kind is `"number"` (float64
/// bytes), `"count"` (uint64 bytes), `"flag"` (bool bytes) or `"text"` (data is
/// `(labels, uint32 code bytes)`, a `None` label for a missing value).
#[pyfunction]
#[pyo3(signature = (args, progress=None))]
fn sweep_columns<'py>(
    py: Python<'py>,
    args: Vec<String>,
    progress: Option<Bound<'py, PyAny>>,
) -> PyResult<(usize, Vec<Bound<'py, PyTuple>>)> {
    let columns = interruptible(py, progress.as_ref(), || cli::sweep_columns_args(args))?;
    let mut out = Vec::with_capacity(columns.columns.len());
    // each column is dropped once copied: the crate and Python hold one column twice,
    // not all of them
    for (name, column) in columns.columns {
        let (kind, data): (&str, Bound<'py, PyAny>) = match column {
            Column::Number(v) => ("number", buffer(py, &v).into_any()),
            Column::Count(v) => ("count", buffer(py, &v).into_any()),
            Column::Flag(v) => ("flag", buffer(py, &v).into_any()),
            Column::Text { labels, codes } => {
                let labels = PyList::new(py, labels)?;
                let codes = buffer(py, &codes);
                (
                    "text",
                    PyTuple::new(py, [labels.into_any(), codes.into_any()])?.into_any(),
                )
            }
        };
        out.push(PyTuple::new(
            py,
            [
                name.into_pyobject(py)?.into_any(),
                kind.into_pyobject(py)?.into_any(),
                data,
            ],
        )?);
    }
    Ok((columns.rows, out))
}

/// The compiled core of the `ridgeline` package.
#[pymodule]
fn _ridgeline(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("RidgelineError", m.py().get_type::<RidgelineError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(chart, m)?)?;
    m.add_function(wrap_pyfunction!(options, m)?)?;
    m.add_function(wrap_pyfunction!(toml_from_json, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_columns, m)?)?;
    Ok(())
}
