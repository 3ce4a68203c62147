//! Options of `ridgeline simulate` and of `plan --rate`, and their conversion to the
//! library's serving types.

use super::{MAX_DEVICES, RunArgs, positive};
use crate::Result;
use crate::memory::Parallel;
use crate::predict::Scenario;
use clap::Args;
use std::path::PathBuf;

/// A fraction in [0, 1) on the command line.
fn fraction(s: &str) -> std::result::Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a number"))?;
    if v.is_finite() && (0.0..1.0).contains(&v) {
        Ok(v)
    } else {
        Err(format!("must be a fraction in [0, 1), got {s}"))
    }
}

/// A server's front-end time per request on the command line, ms: in [0, 60000].
pub(super) fn front_end_ms(s: &str) -> std::result::Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a number"))?;
    let max = crate::engine::front_end::MAX_REQUEST_OVERHEAD_S * 1e3;
    if v.is_finite() && (0.0..=max).contains(&v) {
        Ok(v)
    } else {
        Err(format!("must be a time in [0, {max}] ms, got {s}"))
    }
}

/// Options of `ridgeline simulate`.
#[derive(Args, Clone)]
#[command(group(clap::ArgGroup::new("arrivals").required(true).args(["rate", "concurrency", "trace"])))]
pub struct SimulateArgs {
    /// Model id (see `ridgeline models`) or path to a Hugging Face config.json.
    #[arg(long)]
    pub model: String,
    /// Device id or alias (see `ridgeline hardware`).
    #[arg(long)]
    pub gpu: String,
    /// Devices of one instance [default: 1].
    #[arg(long, allow_negative_numbers = true, value_parser = clap::value_parser!(u64).range(1..=MAX_DEVICES), conflicts_with = "disagg")]
    pub gpus: Option<u64>,
    /// How devices split the model.
    #[arg(long, value_enum, default_value_t = Parallel::Tp)]
    pub parallel: Parallel,
    /// Expert-parallel groups for a mixture-of-experts model: the routed experts spread
    /// over N groups of --gpus/N tensor-parallel devices, attention data-parallel across
    /// the groups (each group serves its share of the running sequences), tokens sent
    /// to their experts by all-to-all.
    #[arg(long, default_value_t = 1, allow_negative_numbers = true, value_parser = clap::value_parser!(u64).range(1..=MAX_DEVICES), conflicts_with = "disagg")]
    pub ep: u64,
    /// Speculative decoding (a draft model's weights and cache take from the KV pool,
    /// its steps and prompt pass from every iteration).
    #[command(flatten)]
    pub spec: super::SpecArgs,
    /// Network bandwidth per device between scale-up domains (nodes), bytes/s per
    /// direction (400 Gb/s InfiniBand = 50e9).
    #[arg(long = "inter-node-bw", allow_negative_numbers = true, default_value_t = crate::hardware::DEFAULT_INTER_NODE_BYTES_PER_S)]
    pub inter_node_bw: f64,
    /// Hide the expert all-to-all behind computation: each iteration runs as two
    /// micro-batches, one's all-to-all beside the other's computation (SGLang's
    /// two-batch overlap); with --ep above 1.
    #[arg(long = "overlap-ep")]
    pub overlap_ep: bool,
    /// Routed rows on the busiest expert-parallel group over the mean, as measured: its
    /// routed rows and all-to-all bytes at least F times the mean's in every iteration
    /// (as predict --expert-imbalance; 1 ..= --ep; with --ep above 1).
    #[arg(
        long = "expert-imbalance",
        default_value_t = 1.0,
        allow_negative_numbers = true,
        conflicts_with = "disagg"
    )]
    pub expert_imbalance: f64,
    /// Formats, engine (its scheduler fields: max_num_seqs, max_batched_tokens,
    /// kv_block_tokens) and attention kernel.
    #[command(flatten)]
    pub run: RunArgs,
    /// Poisson arrivals at these rates, requests/s (LIST: 1,2,4 or 1..64:x2 or
    /// 5..50:+5); one row per rate.
    #[arg(long, allow_negative_numbers = true)]
    pub rate: Option<String>,
    /// A closed loop of N users, each sending its next request when the last completes.
    #[arg(long, allow_negative_numbers = true, value_parser = clap::value_parser!(u64).range(1..=crate::simulate::MAX_CONCURRENCY))]
    pub concurrency: Option<u64>,
    /// Replay a CSV trace with the header arrival_s,prompt,gen (one request per row).
    #[arg(long, value_name = "FILE.csv")]
    pub trace: Option<PathBuf>,
    /// Requests to simulate (per rate) [default: 1000].
    #[arg(long, allow_negative_numbers = true, conflicts_with = "trace", value_parser = clap::value_parser!(u64).range(1..=crate::simulate::MAX_REQUESTS))]
    pub requests: Option<u64>,
    /// Prompt tokens per request: 512, uniform:A..B or lognormal:MEDIAN:SIGMA
    /// [default: 512].
    #[arg(long, allow_negative_numbers = true, conflicts_with = "trace")]
    pub prompt: Option<String>,
    /// Output tokens per request (DIST as --prompt, at least 1) [default: 128].
    #[arg(long = "gen", allow_negative_numbers = true, conflicts_with = "trace")]
    pub gen_tokens: Option<String>,
    /// Seed of the arrivals and lengths (the same seed gives the same output).
    #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
    pub seed: u64,
    /// Replaces the engine's max_num_seqs (sequences per iteration).
    #[arg(long = "max-num-seqs", allow_negative_numbers = true, value_parser = clap::value_parser!(u64).range(1..=crate::engine::MAX_SCHEDULER_COUNT))]
    pub max_num_seqs: Option<u64>,
    /// Replaces the engine's max_batched_tokens (token budget of an iteration).
    #[arg(long = "max-batched-tokens", allow_negative_numbers = true, value_parser = clap::value_parser!(u64).range(1..=crate::engine::MAX_SCHEDULER_COUNT))]
    pub max_batched_tokens: Option<u64>,
    /// Fraction of each prompt found in the prefix cache, in [0, 1).
    #[arg(long = "prefix-hit", default_value_t = 0.0, allow_negative_numbers = true, value_parser = fraction)]
    pub prefix_hit: f64,
    /// Disaggregated serving: a prefill pool of P devices and a decode pool of D (P:D).
    #[arg(long, value_name = "P:D")]
    pub disagg: Option<String>,
    /// Time-to-first-token SLO for goodput, ms.
    #[arg(long = "slo-ttft-ms", value_parser = positive, allow_negative_numbers = true)]
    pub slo_ttft_ms: Option<f64>,
    /// Time-per-output-token SLO for goodput, ms.
    #[arg(long = "slo-tpot-ms", value_parser = positive, allow_negative_numbers = true)]
    pub slo_tpot_ms: Option<f64>,
    /// The server's host time per request besides the engine's iterations (HTTP,
    /// parsing, tokenization, the first token's trip back), ms: part of every time to
    /// first token and end-to-end latency [default: the fit on the published serving
    /// benchmarks, data/front-end.toml; 0 under --engine ideal].
    #[arg(long = "request-overhead-ms", value_parser = front_end_ms, allow_negative_numbers = true)]
    pub request_overhead_ms: Option<f64>,
    /// Measured kernel tables each iteration's ops are costed on where they cover them,
    /// as for `predict --kernels`: `bundled` (the default), `none` or a directory. Where
    /// a table covers the device, the engine's profile refitted on the tables serves.
    #[arg(long = "kernels", default_value = "bundled", value_name = "none|bundled|DIR", value_parser = super::KernelsArg::parse)]
    pub kernels: super::KernelsArg,
}

impl SimulateArgs {
    /// The layout (batch, prompt and gen are the workload's).
    pub fn scenario(&self) -> Scenario {
        Scenario {
            weights: self.run.weights,
            expert_weights: self.run.expert_weights,
            kv: self.run.kv,
            gpus: self.gpus.unwrap_or(1),
            parallel: self.parallel,
            ep: self.ep,
            spec: self.spec.speculation(),
            inter_node_bytes_per_s: self.inter_node_bw,
            overlap_ep: self.overlap_ep,
            expert_imbalance: self.expert_imbalance,
            flash: self.run.attention.fused(),
            ..Scenario::default()
        }
    }

    /// The serving options (without the draft model, which the caller resolves).
    pub fn serving<'d>(&self) -> Result<crate::simulate::Serving<'d>> {
        use crate::simulate::{Disagg, Serving, Slo};
        Ok(Serving {
            max_num_seqs: self.max_num_seqs,
            max_batched_tokens: self.max_batched_tokens,
            prefix_hit: self.prefix_hit,
            disagg: self.disagg.as_deref().map(Disagg::parse).transpose()?,
            slo: Slo {
                ttft_s: self.slo_ttft_ms.map(|x| x / 1e3),
                tpot_s: self.slo_tpot_ms.map(|x| x / 1e3),
            },
            draft: None,
            kernels: None,
            request_overhead_s: self.request_overhead_ms.map(|x| x / 1e3),
        })
    }

    /// The workload (with --rate, at the first rate; the command sweeps them).
    pub fn workload(&self) -> Result<crate::simulate::Workload> {
        use crate::simulate::{Arrivals, Dist, Workload, read_trace};
        let dist = |flag: &str, v: &Option<String>, default: &str| {
            Dist::parse(flag, v.as_deref().unwrap_or(default))
        };
        let (arrivals, requests) = match (&self.trace, self.concurrency) {
            (Some(path), _) => {
                let rows = read_trace(path)?;
                let n = rows.len() as u64;
                (Arrivals::Trace(rows), n)
            }
            (None, Some(concurrency)) => (
                Arrivals::Closed { concurrency },
                self.requests.unwrap_or(1000),
            ),
            (None, None) => (
                Arrivals::Poisson { rate: 1.0 },
                self.requests.unwrap_or(1000),
            ),
        };
        Ok(Workload {
            arrivals,
            requests,
            prompt: dist("--prompt", &self.prompt, "512")?,
            gen_tokens: dist("--gen", &self.gen_tokens, "128")?,
            seed: self.seed,
        })
    }
}

/// The `--rate` options of `ridgeline plan`.
#[derive(Args, Clone)]
pub struct PlanRateArgs {
    /// Plan for a request rate (requests/s, Poisson): size each layout by the highest
    /// rate one replica serves within --p99-ttft-ms / --p99-tpot-ms (simulated), and
    /// count the replicas the rate needs.
    #[arg(long, value_parser = positive, allow_negative_numbers = true, conflicts_with_all = ["max_ttft_ms", "max_tpot_ms", "min_throughput", "train"])]
    pub rate: Option<f64>,
    /// With --rate: largest acceptable p99 time to first token, ms.
    #[arg(long = "p99-ttft-ms", value_parser = positive, allow_negative_numbers = true, requires = "rate")]
    pub p99_ttft_ms: Option<f64>,
    /// With --rate: largest acceptable p99 time per output token, ms.
    #[arg(long = "p99-tpot-ms", value_parser = positive, allow_negative_numbers = true, requires = "rate")]
    pub p99_tpot_ms: Option<f64>,
    /// With --rate: requests simulated at each rate tried.
    #[arg(long, default_value_t = 300, allow_negative_numbers = true, requires = "rate", value_parser = clap::value_parser!(u64).range(20..=100_000))]
    pub requests: u64,
    /// With --rate: seed of the simulated requests.
    #[arg(
        long,
        default_value_t = 0,
        requires = "rate",
        allow_negative_numbers = true
    )]
    pub seed: u64,
    /// With --rate: the server's host time per request besides the engine's iterations,
    /// ms, in every simulated time to first token (as simulate --request-overhead-ms)
    /// [default: the fit in data/front-end.toml; 0 under --engine ideal].
    #[arg(long = "request-overhead-ms", requires = "rate", value_parser = front_end_ms, allow_negative_numbers = true)]
    pub request_overhead_ms: Option<f64>,
}

impl PlanRateArgs {
    /// The rate target (`None` without --rate).
    pub fn target(&self) -> Option<crate::plan::RateTarget> {
        self.rate.map(|rate_per_s| crate::plan::RateTarget {
            rate_per_s,
            p99_ttft_s: self.p99_ttft_ms.map(|x| x / 1e3),
            p99_tpot_s: self.p99_tpot_ms.map(|x| x / 1e3),
            requests: self.requests,
            seed: self.seed,
            request_overhead_s: self.request_overhead_ms.map(|x| x / 1e3),
        })
    }
}
