//! What arrives at a serving deployment: Poisson arrivals at a rate, a closed loop of
//! users, or a trace; prompt and output lengths fixed or drawn from a distribution; a
//! seeded generator so the same seed gives the same requests.
//!
//! Random numbers come from ChaCha8 (`rand_chacha`, whose output is stable across
//! versions) in two streams of one seed: stream 1 draws the gaps between arrivals,
//! stream 2 the lengths. The lengths of the `i`-th request are therefore the same at
//! every rate, and a higher rate only brings the same requests closer together (common
//! random numbers: latency can be compared across rates without sampling noise).

use crate::error::{Error, Result};
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};
use serde::Serialize;
use std::path::Path;

/// Most requests one simulation may hold (10^7).
pub const MAX_REQUESTS: u64 = 10_000_000;
/// Longest prompt or output one request may have (10^8 tokens).
pub const MAX_LENGTH: u64 = 100_000_000;
/// Highest arrival rate accepted, requests/s (10^6).
pub const MAX_RATE: f64 = 1e6;

/// Longest span of Poisson arrivals a workload may ask for, requests / rate (10^9 s,
/// about 32 years): the clock is an f64 of seconds from the first arrival, exact to
/// 1.2e-7 s there, and beyond it latencies of milliseconds would be lost to rounding.
/// A rate below `requests / MAX_ARRIVAL_SPAN_S` is refused (`rate`).
pub(crate) const MAX_ARRIVAL_SPAN_S: f64 = 1e9;
/// Most concurrent users of a closed loop (10^6).
pub const MAX_CONCURRENCY: u64 = 1_000_000;

/// A length distribution (`--prompt`, `--gen`): `512`, `uniform:A..B`,
/// `lognormal:MEDIAN:SIGMA`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Dist {
    /// Always this many tokens.
    Fixed {
        /// The length.
        tokens: u64,
    },
    /// Uniform over the whole numbers `lo..=hi`.
    Uniform {
        /// Smallest length.
        lo: u64,
        /// Largest length.
        hi: u64,
    },
    /// Log-normal with this median and shape (the standard deviation of the log),
    /// rounded to whole tokens and capped at [`MAX_LENGTH`].
    Lognormal {
        /// Median length.
        median: f64,
        /// Standard deviation of ln(length).
        sigma: f64,
    },
}

impl Dist {
    /// Parses a distribution; errors name `flag`.
    ///
    /// ```
    /// use ridgeline_sim::simulate::Dist;
    /// assert_eq!(Dist::parse("--gen", "128")?, Dist::Fixed { tokens: 128 });
    /// assert_eq!(Dist::parse("--prompt", "uniform:100..300")?, Dist::Uniform { lo: 100, hi: 300 });
    /// assert!(Dist::parse("--prompt", "lognormal:512:-1").is_err());
    /// # Ok::<(), ridgeline_core::Error>(())
    /// ```
    pub fn parse(flag: &str, text: &str) -> Result<Dist> {
        let t = text.trim();
        let bad = |why: &str| {
            Error::invalid(
                flag,
                format!("'{t}': {why}; use 512, uniform:A..B or lognormal:MEDIAN:SIGMA"),
            )
        };
        let whole = |s: &str| -> Result<u64> {
            let v: u64 = s
                .trim()
                .parse()
                .map_err(|_| bad("not a whole number of tokens"))?;
            if v > MAX_LENGTH {
                return Err(bad(&format!("more than {MAX_LENGTH} tokens")));
            }
            Ok(v)
        };
        let real = |s: &str| -> Result<f64> {
            let v: f64 = s.trim().parse().map_err(|_| bad("not a number"))?;
            if v.is_finite() {
                Ok(v)
            } else {
                Err(bad("not a finite number"))
            }
        };
        let (kind, rest) = t.split_once(':').unwrap_or(("", t));
        match kind.to_ascii_lowercase().as_str() {
            "" | "fixed" => Ok(Dist::Fixed {
                tokens: whole(rest)?,
            }),
            "uniform" => {
                let (lo, hi) = rest
                    .split_once("..")
                    .ok_or_else(|| bad("uniform needs A..B"))?;
                let (lo, hi) = (whole(lo)?, whole(hi.trim_start_matches('='))?);
                if lo > hi {
                    return Err(bad("the range runs backwards"));
                }
                Ok(Dist::Uniform { lo, hi })
            }
            "lognormal" => {
                let (m, s) = rest
                    .split_once(':')
                    .ok_or_else(|| bad("lognormal needs MEDIAN:SIGMA"))?;
                let (median, sigma) = (real(m)?, real(s)?);
                if !(median >= 1.0 && median <= MAX_LENGTH as f64) {
                    return Err(bad("the median must lie between 1 and 1e8 tokens"));
                }
                if !(0.0..=4.0).contains(&sigma) {
                    return Err(bad("sigma must lie between 0 and 4"));
                }
                Ok(Dist::Lognormal { median, sigma })
            }
            _ => Err(bad("unknown distribution")),
        }
    }

    /// One draw.
    pub(crate) fn sample(&self, rng: &mut Rng) -> u64 {
        match *self {
            Dist::Fixed { tokens } => tokens,
            Dist::Uniform { lo, hi } => lo + rng.below(hi - lo + 1),
            Dist::Lognormal { median, sigma } => {
                let v = median * (sigma * rng.normal()).exp();
                v.round().clamp(0.0, MAX_LENGTH as f64) as u64
            }
        }
    }

    /// The mean length (the log-normal's `median · e^(σ²/2)`).
    pub fn mean(&self) -> f64 {
        match *self {
            Dist::Fixed { tokens } => tokens as f64,
            Dist::Uniform { lo, hi } => (lo as f64 + hi as f64) / 2.0,
            Dist::Lognormal { median, sigma } => median * (sigma * sigma / 2.0).exp(),
        }
    }
}

/// A seeded random stream (ChaCha8).
#[derive(Debug, Clone)]
pub(crate) struct Rng(ChaCha8Rng);

impl Rng {
    /// Stream `stream` of seed `seed`.
    pub(crate) fn new(seed: u64, stream: u64) -> Rng {
        let mut r = ChaCha8Rng::seed_from_u64(seed);
        r.set_stream(stream);
        Rng(r)
    }

    /// A uniform number in (0, 1] (53 random bits).
    pub(crate) fn unit(&mut self) -> f64 {
        ((self.0.next_u64() >> 11) + 1) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// A whole number below `n` (`n >= 1`; the tiny modulo bias of 64-bit draws is
    /// irrelevant at token counts).
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.0.next_u64() % n.max(1)
    }

    /// A standard normal draw (Box-Muller).
    pub(crate) fn normal(&mut self) -> f64 {
        let (u, v) = (self.unit(), self.unit());
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }

    /// An exponential gap with rate `rate`.
    pub(crate) fn exponential(&mut self, rate: f64) -> f64 {
        -self.unit().ln() / rate
    }
}

/// One request of a trace.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TraceRequest {
    /// Arrival time, s from the start.
    pub arrival_s: f64,
    /// Prompt tokens.
    pub prompt: u64,
    /// Output tokens (>= 1).
    #[serde(rename = "gen")]
    pub gen_tokens: u64,
}

/// How requests arrive.
#[derive(Debug, Clone, PartialEq)]
pub enum Arrivals {
    /// A Poisson process at this rate, requests/s.
    Poisson {
        /// Requests per second.
        rate: f64,
    },
    /// A closed loop: this many users, each sending its next request when the last
    /// one completes (no think time).
    Closed {
        /// Users.
        concurrency: u64,
    },
    /// The requests of a trace, in arrival order.
    Trace(Vec<TraceRequest>),
}

/// The requests one simulation serves.
#[derive(Debug, Clone, PartialEq)]
pub struct Workload {
    /// How they arrive.
    pub arrivals: Arrivals,
    /// How many (a trace: its rows).
    pub requests: u64,
    /// Prompt lengths (not used by a trace).
    pub prompt: Dist,
    /// Output lengths (not used by a trace).
    pub gen_tokens: Dist,
    /// Seed of the random streams.
    pub seed: u64,
}

impl Workload {
    /// Checks ranges; errors name the field (`rate`, `concurrency`, `requests`, ...).
    pub fn validate(&self) -> Result<()> {
        match &self.arrivals {
            Arrivals::Poisson { rate } => {
                if !(rate.is_finite() && *rate > 0.0 && *rate <= MAX_RATE) {
                    return Err(Error::invalid(
                        "rate",
                        format!(
                            "must be a finite number of requests/s in (0, {MAX_RATE:e}], got {rate}"
                        ),
                    ));
                }
            }
            Arrivals::Closed { concurrency } => {
                if !(1..=MAX_CONCURRENCY).contains(concurrency) {
                    return Err(Error::invalid(
                        "concurrency",
                        format!("must lie in 1..={MAX_CONCURRENCY}, got {concurrency}"),
                    ));
                }
            }
            Arrivals::Trace(rows) if rows.is_empty() => {
                return Err(Error::invalid("trace", "holds no requests"));
            }
            Arrivals::Trace(_) => {}
        }
        if !(1..=MAX_REQUESTS).contains(&self.requests) {
            return Err(Error::invalid(
                "requests",
                format!(
                    "must lie in 1..={MAX_REQUESTS} (the simulation is bounded), got {}",
                    self.requests
                ),
            ));
        }
        if let Arrivals::Poisson { rate } = self.arrivals {
            let span = self.requests as f64 / rate;
            if span > MAX_ARRIVAL_SPAN_S {
                return Err(Error::invalid(
                    "rate",
                    format!(
                        "{rate:e} requests/s spreads {} requests over about {span:.1e} s, beyond the {MAX_ARRIVAL_SPAN_S:e} s the simulated clock keeps latencies exact in; give at least {:e} requests/s or fewer requests",
                        self.requests,
                        self.requests as f64 / MAX_ARRIVAL_SPAN_S
                    ),
                ));
            }
        }
        if let Dist::Fixed { tokens: 0 } | Dist::Uniform { hi: 0, .. } = self.gen_tokens {
            return Err(Error::invalid(
                "gen_tokens",
                "must be at least 1: the prefill makes the first output token",
            ));
        }
        Ok(())
    }
}

/// The requests of a workload in arrival order, drawn as they are needed (a closed
/// loop's next request arrives when one completes).
#[derive(Debug, Clone)]
pub(crate) struct Source<'w> {
    workload: &'w Workload,
    gaps: Rng,
    lengths: Rng,
    issued: u64,
    /// Arrival time of the last Poisson arrival.
    clock: f64,
}

impl<'w> Source<'w> {
    /// The requests of `w`.
    pub(crate) fn new(w: &'w Workload) -> Self {
        Source {
            workload: w,
            gaps: Rng::new(w.seed, 1),
            lengths: Rng::new(w.seed, 2),
            issued: 0,
            clock: 0.0,
        }
    }

    /// Whether every request has been issued.
    pub(crate) fn done(&self) -> bool {
        self.issued >= self.workload.requests
    }

    fn lengths(&mut self) -> (u64, u64) {
        let p = self.workload.prompt.sample(&mut self.lengths);
        let g = self.workload.gen_tokens.sample(&mut self.lengths).max(1);
        (p, g)
    }

    /// The next open-loop arrival (Poisson or trace), or `None` when all are issued
    /// (a closed loop issues through [`Source::issue_at`] only).
    pub(crate) fn next_arrival(&mut self) -> Option<TraceRequest> {
        if self.done() {
            return None;
        }
        let r = match &self.workload.arrivals {
            Arrivals::Poisson { rate } => {
                self.clock += self.gaps.exponential(*rate);
                let (prompt, gen_tokens) = self.lengths();
                TraceRequest {
                    arrival_s: self.clock,
                    prompt,
                    gen_tokens,
                }
            }
            Arrivals::Trace(rows) => rows[self.issued as usize],
            Arrivals::Closed { .. } => return None,
        };
        self.issued += 1;
        Some(r)
    }

    /// A closed-loop request arriving at `t` (`None` when all are issued).
    pub(crate) fn issue_at(&mut self, t: f64) -> Option<TraceRequest> {
        if self.done() {
            return None;
        }
        self.issued += 1;
        let (prompt, gen_tokens) = self.lengths();
        Some(TraceRequest {
            arrival_s: t,
            prompt,
            gen_tokens,
        })
    }
}

/// Reads a trace CSV with the header `arrival_s,prompt,gen` (one request per row;
/// further columns are ignored; lines starting with `#` are comments), sorted by
/// arrival. Errors name the file, line and column.
pub fn read_trace(path: &Path) -> Result<Vec<TraceRequest>> {
    let text = crate::files::read_text(path)?;
    parse_trace(&text, &path.display().to_string())
}

/// [`read_trace`] of text; `src` names it in errors.
pub fn parse_trace(text: &str, src: &str) -> Result<Vec<TraceRequest>> {
    let err = |line: u64, col: &str, msg: String| Error::Parse {
        source_name: src.to_string(),
        message: format!("line {line}, column {col}: {msg}"),
    };
    let mut reader = csv::ReaderBuilder::new()
        .trim(csv::Trim::All)
        .flexible(true)
        .comment(Some(b'#'))
        .from_reader(text.as_bytes());
    let header = reader
        .headers()
        .map_err(|e| err(1, "-", e.to_string()))?
        .clone();
    let col = |name: &str| {
        header
            .iter()
            .position(|h| h.eq_ignore_ascii_case(name))
            .ok_or_else(|| {
                err(
                    1,
                    name,
                    format!(
                        "missing; the header must name arrival_s,prompt,gen (has {})",
                        header.iter().collect::<Vec<_>>().join(",")
                    ),
                )
            })
    };
    let (ia, ip, ig) = (col("arrival_s")?, col("prompt")?, col("gen")?);
    let mut rows = Vec::new();
    for rec in reader.records() {
        let rec = rec.map_err(|e| {
            let line = e.position().map_or(0, |p| p.line());
            err(line, "-", e.to_string())
        })?;
        let line = rec.position().map_or(0, |p| p.line());
        if rows.len() as u64 >= MAX_REQUESTS {
            return Err(err(line, "-", format!("more than {MAX_REQUESTS} requests")));
        }
        let field = |i: usize, name: &str| {
            rec.get(i)
                .filter(|s| !s.is_empty())
                .ok_or_else(|| err(line, name, "missing value".into()))
        };
        let arrival_s: f64 = field(ia, "arrival_s")?
            .parse()
            .map_err(|_| err(line, "arrival_s", "not a number".into()))?;
        if !(arrival_s.is_finite() && (0.0..=1e9).contains(&arrival_s)) {
            return Err(err(
                line,
                "arrival_s",
                format!("must be a finite time in [0, 1e9] s, got {arrival_s}"),
            ));
        }
        let whole = |i: usize, name: &str, min: u64| -> Result<u64> {
            let v: u64 = field(i, name)?
                .parse()
                .map_err(|_| err(line, name, "not a whole number of tokens".into()))?;
            if v < min || v > MAX_LENGTH {
                return Err(err(
                    line,
                    name,
                    format!("must lie in {min}..={MAX_LENGTH}, got {v}"),
                ));
            }
            Ok(v)
        };
        rows.push(TraceRequest {
            arrival_s,
            prompt: whole(ip, "prompt", 0)?,
            gen_tokens: whole(ig, "gen", 1)?,
        });
    }
    if rows.is_empty() {
        return Err(err(
            1,
            "-",
            "no requests (a header and at least one row)".into(),
        ));
    }
    rows.sort_by(|a, b| a.arrival_s.total_cmp(&b.arrival_s));
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chacha_streams_are_the_published_generator() {
        // ChaCha8 (64-bit counter, 64-bit stream) keyed by rand_core 0.6's
        // seed_from_u64 (PCG32 expansion of the seed): the first draws of seed 42 in
        // streams 1 and 2, computed by an independent implementation of the RFC 7539
        // block function at 8 rounds (Python, in the commit that added this test).
        let mut a = Rng::new(42, 1);
        let want = [
            13222472167927179408u64,
            3078952320862533021,
            8898984633443201687,
        ];
        for w in want {
            assert_eq!(a.0.next_u64(), w);
        }
        assert_eq!(Rng::new(42, 2).0.next_u64(), 3387013202841124863);
        // unit() maps the top 53 bits to (0, 1]
        let first = Rng::new(42, 1).unit();
        assert_eq!(first, ((want[0] >> 11) + 1) as f64 / (1u64 << 53) as f64);
        for _ in 0..1000 {
            let u = a.unit();
            assert!(u > 0.0 && u <= 1.0);
        }
    }

    #[test]
    fn distributions_have_their_moments() {
        let mut r = Rng::new(7, 2);
        let n = 20_000;
        let d = Dist::Uniform { lo: 100, hi: 300 };
        let mean = (0..n).map(|_| d.sample(&mut r) as f64).sum::<f64>() / n as f64;
        assert!((mean - 200.0).abs() < 2.0, "{mean}");
        // log-normal: the median of the draws is the median asked
        let d = Dist::Lognormal {
            median: 512.0,
            sigma: 0.8,
        };
        let mut v: Vec<u64> = (0..n).map(|_| d.sample(&mut r)).collect();
        v.sort_unstable();
        let med = v[n / 2] as f64;
        assert!((med / 512.0 - 1.0).abs() < 0.03, "{med}");
        // and the mean is median e^(sigma^2/2) = 512 e^0.32 = 705.1
        let mean = v.iter().sum::<u64>() as f64 / n as f64;
        assert!(
            (mean / d.mean() - 1.0).abs() < 0.03,
            "{mean} vs {}",
            d.mean()
        );
        assert!((d.mean() - 705.08).abs() < 0.01);
    }

    #[test]
    fn bad_distributions_name_the_flag() {
        for (t, needle) in [
            ("-5", "not a whole number"),
            ("uniform:9..3", "backwards"),
            ("uniform:3", "A..B"),
            ("lognormal:0:1", "median"),
            ("lognormal:100:NaN", "finite"),
            ("lognormal:100:9", "sigma"),
            ("zipf:3", "unknown"),
            ("1000000000000", "more than"),
        ] {
            let e = Dist::parse("--prompt", t).unwrap_err().to_string();
            assert!(e.contains("--prompt") && e.contains(needle), "{t}: {e}");
        }
    }

    #[test]
    fn traces_are_read_and_errors_say_where() {
        let t = parse_trace("arrival_s,prompt,gen\n0.5,100,10\n0.1, 20 ,3\n", "t.csv").unwrap();
        assert_eq!(t.len(), 2);
        assert_eq!(
            t[0],
            TraceRequest {
                arrival_s: 0.1,
                prompt: 20,
                gen_tokens: 3
            }
        );
        for (text, needle) in [
            ("arrival,prompt,gen\n1,2,3\n", "column arrival_s"),
            ("arrival_s,prompt,gen\n1,x,3\n", "line 2, column prompt"),
            (
                "arrival_s,prompt,gen\n1,2,3\n-1,2,3\n",
                "line 3, column arrival_s",
            ),
            ("arrival_s,prompt,gen\nNaN,2,3\n", "column arrival_s"),
            ("arrival_s,prompt,gen\n1,2,0\n", "column gen"),
            ("arrival_s,prompt,gen\n1,2\n", "line 2, column gen: missing"),
            ("arrival_s,prompt,gen\n", "no requests"),
        ] {
            let e = parse_trace(text, "t.csv").unwrap_err().to_string();
            assert!(
                e.starts_with("t.csv: ") && e.contains(needle),
                "{text}: {e}"
            );
        }
    }
}
