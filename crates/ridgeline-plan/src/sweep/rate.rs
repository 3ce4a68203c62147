//! `sweep --rate`: the serving simulation ([`crate::simulate`]) over the deployments of a
//! sweep and a list of request rates, one row per (deployment, prompt, gen, rate).

use super::Sweep;
use crate::dtype::Format;
use crate::error::{Error, Result};
use crate::predict::Scenario;
use crate::simulate::{Arrivals, Dist, Run, Serving, Workload, simulate};
use rayon::prelude::*;
use serde::Serialize;

/// Most simulations one rate sweep runs (deployments x prompts x gens x rates).
pub const MAX_RATE_CELLS: usize = 20_000;

/// The CSV columns of a rate sweep, in order (the JSON keys of each row).
pub const RATE_COLUMNS: [&str; 21] = [
    "model",
    "gpu",
    "gpus",
    "weights",
    "kv",
    "engine",
    "prompt",
    "gen",
    "rate_per_s",
    "completed",
    "saturated",
    "requests_per_s",
    "output_tokens_per_s",
    "ttft_p50_s",
    "ttft_p99_s",
    "tpot_p50_s",
    "tpot_p99_s",
    "e2e_p99_s",
    "mean_batch",
    "kv_peak_fraction",
    "error",
];

/// One simulated deployment at one rate.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct RateRow {
    /// Model id.
    pub model: String,
    /// Device id.
    pub gpu: String,
    /// Devices.
    pub gpus: u64,
    /// Weight format as requested (`native`: the model's own).
    pub weights: String,
    /// KV format as requested (`native`: the activation dtype).
    pub kv: String,
    /// Engine id.
    pub engine: String,
    /// Prompt tokens per request.
    pub prompt: u64,
    /// Output tokens per request.
    #[serde(rename = "gen")]
    pub gen_tokens: u64,
    /// Offered Poisson rate, requests/s.
    pub rate_per_s: f64,
    /// The simulation, or why the deployment cannot serve (an invalid combination).
    #[serde(flatten, serialize_with = "outcome")]
    pub run: std::result::Result<Run, String>,
}

/// The result columns of a row: the run's figures, or `null`s and the error.
fn outcome<S: serde::Serializer>(
    run: &std::result::Result<Run, String>,
    s: S,
) -> std::result::Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut m = s.serialize_map(None)?;
    match run {
        Ok(r) => {
            m.serialize_entry("completed", &r.completed)?;
            m.serialize_entry("saturated", &r.saturated)?;
            m.serialize_entry("requests_per_s", &r.throughput.requests_per_s)?;
            m.serialize_entry("output_tokens_per_s", &r.throughput.output_tokens_per_s)?;
            m.serialize_entry("ttft_p50_s", &r.ttft_s.p50)?;
            m.serialize_entry("ttft_p99_s", &r.ttft_s.p99)?;
            m.serialize_entry("tpot_p50_s", &r.tpot_s.p50)?;
            m.serialize_entry("tpot_p99_s", &r.tpot_s.p99)?;
            m.serialize_entry("e2e_p99_s", &r.e2e_s.p99)?;
            m.serialize_entry("mean_batch", &r.mean_batch)?;
            m.serialize_entry("kv_peak_fraction", &r.kv_peak_fraction)?;
            m.serialize_entry("error", &None::<String>)?;
        }
        Err(e) => {
            for k in &RATE_COLUMNS[9..20] {
                m.serialize_entry(k, &None::<f64>)?;
            }
            m.serialize_entry("error", e)?;
        }
    }
    m.end()
}

/// Requests per rate and seed of a rate sweep.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateOptions {
    /// Requests simulated per row.
    pub requests: u64,
    /// Seed of the arrivals (the same seed gives the same rows).
    pub seed: u64,
    /// The server's front-end time per request, s, in every simulated TTFT and
    /// end-to-end latency ([`Serving::request_overhead_s`]; `None`: the bundled fit).
    pub request_overhead_s: Option<f64>,
}

impl Default for RateOptions {
    /// 300 requests per rate (as `plan --rate` bisects), seed 0, the bundled front end.
    fn default() -> Self {
        RateOptions {
            requests: 300,
            seed: 0,
            request_overhead_s: None,
        }
    }
}

impl Sweep<'_> {
    /// Simulates every deployment of the sweep (model, device, count, formats, engine)
    /// for each prompt and generation length at each of `rates` (Poisson arrivals of
    /// fixed-length requests; the scheduler chooses the batch, so the sweep's batch axis
    /// must be the single default 1), in parallel; rows in the order of the axes with
    /// the rate last. At most [`MAX_RATE_CELLS`] simulations.
    pub fn rate_rows(&self, rates: &[f64], opts: RateOptions) -> Result<Vec<RateRow>> {
        self.validate()?;
        if self.batch != [1] {
            return Err(Error::conflict(
                &["batch", "rate"],
                "with request rates the scheduler chooses the batch: leave batch at 1",
            ));
        }
        let cells = self.rate_cells(rates.len());
        if cells.len() > MAX_RATE_CELLS {
            return Err(Error::invalid(
                "rate",
                format!(
                    "{} simulations (deployments x prompts x gens x rates): at most {MAX_RATE_CELLS}",
                    cells.len()
                ),
            ));
        }
        let requests = opts.requests;
        ridgeline_core::work::charge(
            cells.len() as f64 * requests as f64,
            if requests as f64 >= cells.len() as f64 {
                "requests"
            } else {
                "rate"
            },
            &format!(
                "simulated requests ({} simulations x {requests} requests)",
                cells.len()
            ),
        )?;
        let w = ridgeline_core::work::current();
        ridgeline_core::work::start("sweep --rate", cells.len() as u64);
        let rows = cells
            .par_iter()
            .map(|ix| {
                ridgeline_core::work::within(w.as_ref(), || {
                    let row =
                        ridgeline_core::work::quietly(|| self.rate_row(ix, rates[ix[8]], opts));
                    ridgeline_core::work::advance(1);
                    row
                })
            })
            .collect();
        ridgeline_core::work::check()?;
        Ok(rows)
    }

    /// Index tuples `[model, gpu, gpus, prompt, gen, weights, kv, engine, rate]` in row
    /// order (the rate varies fastest).
    fn rate_cells(&self, rates: usize) -> Vec<[usize; 9]> {
        // the sweep's axes; the batch (the workload's business here) gives way to the
        // rate, innermost
        let mut dims = self.shape();
        dims[3..].rotate_left(1);
        dims[8] = rates;
        let total: usize = dims.iter().product();
        (0..total).map(|flat| super::unravel(flat, &dims)).collect()
    }

    fn rate_row(&self, ix: &[usize; 9], rate: f64, opts: RateOptions) -> RateRow {
        let (w, k) = (ix[5], ix[6]);
        let (model, hw, engine) = (
            &self.models[ix[0]],
            self.devices[ix[1]],
            self.engines[ix[7]],
        );
        let (prompt, gen_tokens) = (self.prompt[ix[3]], self.gen_tokens[ix[4]]);
        let scenario = Scenario {
            prompt,
            gen_tokens,
            spec: self.spec,
            ..self.layout(ix[2], w, k)
        };
        let workload = Workload {
            arrivals: Arrivals::Poisson { rate },
            requests: opts.requests,
            prompt: Dist::Fixed { tokens: prompt },
            gen_tokens: Dist::Fixed { tokens: gen_tokens },
            seed: opts.seed,
        };
        let name = |f: &Option<Format>| f.map_or("native".to_string(), |f| f.name());
        let serving = Serving {
            draft: self.draft.as_ref(),
            kernels: self.kernels,
            request_overhead_s: opts.request_overhead_s,
            ..Serving::default()
        };
        RateRow {
            model: model.id.clone(),
            gpu: hw.id.clone(),
            gpus: scenario.gpus,
            weights: name(&scenario.weights),
            kv: name(&scenario.kv),
            engine: engine.id.clone(),
            prompt,
            gen_tokens,
            rate_per_s: rate,
            run: simulate(model, hw, engine, &scenario, &serving, &workload)
                .map_err(|e| e.to_string()),
        }
    }
}
