//! `predict --html FILE` and `explain --html FILE`: the finished prediction, its
//! explanation and its charts handed to [`crate::report::html`], written atomically.

use super::PredictArgs;
use super::charts::{self, Chart};
use crate::predict::{Prediction, Predictor};
use crate::report::explain::Explanation;
use crate::report::html::{HtmlChart, HtmlReport, render};
use crate::{Error, Result, files};
use std::path::Path;

/// Writes the HTML report of `p` (made by `pred` from `a`) to `path`.
pub(super) fn write(
    pred: &Predictor,
    p: &Prediction,
    e: &Explanation,
    a: &PredictArgs,
    command: &str,
    path: &Path,
) -> Result<()> {
    let html_name = path
        .extension()
        .is_some_and(|x| x.eq_ignore_ascii_case("html") || x.eq_ignore_ascii_case("htm"));
    if !html_name {
        return Err(Error::invalid(
            "--html",
            format!(
                "{} is not an .html file name; the report is written as HTML",
                path.display()
            ),
        ));
    }
    let s = a.scenario();
    let links = charts::Links {
        scaleup: p.hardware.count > 1,
        host: false,
    };
    let chart = |chart: Chart, title: &str| -> Result<HtmlChart> {
        Ok(HtmlChart {
            title: title.to_string(),
            svg: charts::devices(&[pred], std::slice::from_ref(p), &s, chart, links)?,
        })
    };
    let report = HtmlReport {
        prediction: p,
        explanation: e,
        charts: vec![
            chart(
                Chart::Roofline,
                "The roofline: each op placed at its arithmetic intensity and attainable rate.",
            )?,
            chart(
                Chart::Throughput,
                "Decode throughput and time per output token against batch.",
            )?,
            chart(
                Chart::Memory,
                "Memory per device by weight format, against the device's capacity.",
            )?,
        ],
        command: command_line(command, a),
        version: env!("CARGO_PKG_VERSION"),
    };
    files::write_atomic(path, render(&report).as_bytes()).map_err(|e| match e {
        Error::Write { path, message } => Error::Write {
            path: format!("--html {path}"),
            message,
        },
        other => other,
    })?;
    eprintln!("wrote HTML report to {}", path.display());
    Ok(())
}

/// A word as a shell reads it back: quoted when it holds anything but plain characters.
fn quoted(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.,:/+=@".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// The command line that makes the same prediction: the options that differ from
/// their defaults.
fn command_line(command: &str, a: &PredictArgs) -> String {
    let mut w: Vec<String> = vec!["ridgeline".into(), command.into()];
    let mut opt = |flag: &str, value: String| {
        w.push(flag.to_string());
        if !value.is_empty() {
            w.push(quoted(&value));
        }
    };
    opt("--model", a.model.clone());
    opt("--gpu", a.gpu.clone());
    let d = &a.decoding;
    let numbers = [
        ("--gpus", a.gpus, 1),
        ("--batch", a.batch, 1),
        ("--prompt", a.prompt, 512),
        ("--gen", a.gen_tokens, 128),
        ("--ep", d.ep, 1),
    ];
    for (flag, v, default) in numbers {
        if v != default {
            opt(flag, v.to_string());
        }
    }
    if a.parallel != crate::memory::Parallel::Tp {
        opt("--parallel", a.parallel.to_string());
    }
    if let Some(f) = a.run.weights {
        opt("--weights", f.to_string());
    }
    if let Some(f) = a.run.expert_weights {
        opt("--expert-weights", f.to_string());
    }
    if let Some(f) = a.run.kv {
        opt("--kv", f.to_string());
    }
    if a.run.engine != "typical" {
        opt("--engine", a.run.engine.clone());
    }
    if a.run.attention.no_flash {
        opt("--no-flash", String::new());
    }
    if a.offload == super::OffloadArg::Cpu {
        opt("--offload", "cpu".into());
    }
    match &a.kernels {
        // the default, bundled, needs no flag
        super::KernelsArg::Bundled => {}
        super::KernelsArg::None => opt("--kernels", "none".into()),
        super::KernelsArg::Dir(d) => opt("--kernels", d.display().to_string()),
    }
    if let (Some(k), Some(acc)) = (d.spec.spec_k, d.spec.spec_accept) {
        opt("--spec-k", k.to_string());
        opt("--spec-accept", acc.to_string());
    }
    if let Some(draft) = &d.spec.draft {
        opt("--draft", draft.clone());
    }
    w.join(" ")
}
