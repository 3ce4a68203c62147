//! Streaming a sweep as CSV rows or one JSON document, in order, in bounded memory:
//! rows are formatted in parallel chunks and written through the caller's writer.

use super::{COLUMNS, Outcome, Stats, Sweep};
use crate::error::{Error, Result};
use crate::predict::resolve_formats_with;
use std::io::Write;

/// How to write a sweep.
#[derive(Debug, Clone, Copy)]
pub struct WriteOptions {
    /// Rows per parallel task; a chunk of `4 x threads x` this many rows is in memory
    /// at once (about 200 bytes a CSV row, 450 a JSON row).
    pub rows_per_task: usize,
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions {
            rows_per_task: 8192,
        }
    }
}

/// Writes `COLUMNS` as a CSV header, then one row per configuration in order.
/// Numbers are SI (s, bytes, tokens/s); invalid combinations have empty metrics and
/// an `error`. A closed pipe ends the output quietly (`Stats::truncated`).
pub(crate) fn write_csv<W: Write>(sweep: &Sweep<'_>, out: W, opts: &WriteOptions) -> Result<Stats> {
    sweep.validate()?;
    let labels = Labels::new(sweep, Syntax::Csv);
    let mut header = COLUMNS.join(",");
    header.push('\n');
    write_rows(sweep, out, opts, header.as_bytes(), b"", |buf, ix, r| {
        row(buf, sweep, &labels, ix, r)
    })
}

/// Writes `{"rows": [...]}` with one object per configuration in order, keys as
/// [`COLUMNS`]; missing values are `null`.
pub(crate) fn write_json<W: Write>(
    sweep: &Sweep<'_>,
    out: W,
    opts: &WriteOptions,
) -> Result<Stats> {
    sweep.validate()?;
    let labels = Labels::new(sweep, Syntax::Json);
    write_rows(
        sweep,
        out,
        opts,
        b"{\"rows\": [\n",
        b"\n]}\n",
        |buf, ix, r| {
            if ix.iter().any(|&i| i != 0) {
                buf.extend_from_slice(b",\n");
            }
            row(buf, sweep, &labels, ix, r)
        },
    )
}

fn write_rows<W: Write>(
    sweep: &Sweep<'_>,
    mut out: W,
    opts: &WriteOptions,
    header: &[u8],
    footer: &[u8],
    row: impl Fn(&mut Vec<u8>, &[usize; 9], &Outcome<'_>) + Sync,
) -> Result<Stats> {
    let total = sweep.len();
    let mut stats = Stats::default();
    let mut failure: Option<std::io::Error> = None;
    // the size up front, progress and cancellation through the work in force
    // (ridgeline_core::work)
    sweep.charge()?;
    ridgeline_core::work::start("sweep", total as u64);
    let mut stopped: Option<Error> = None;
    let write = |out: &mut W, bytes: &[u8], failure: &mut Option<std::io::Error>| {
        if failure.is_none()
            && let Err(e) = out.write_all(bytes)
        {
            *failure = Some(e);
        }
        failure.is_none()
    };
    write(&mut out, header, &mut failure);
    // text buffers go back to a pool once written: fresh ones would page-fault in
    let pool = std::sync::Mutex::new(Vec::<Vec<u8>>::new());
    let take = || {
        let mut b = pool
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop()
            .unwrap_or_default();
        b.clear();
        b
    };
    sweep.run_chunked(
        opts.rows_per_task,
        |range| {
            let mut buf = take();
            buf.reserve(range.len() * 256);
            let mut st = Stats::default();
            sweep.for_each(range, |ix, r| {
                row(&mut buf, ix, &r);
                st.count(&r);
            });
            (buf, st)
        },
        |(buf, st)| {
            let rows = st.rows;
            stats.add(st);
            let ok = write(&mut out, &buf, &mut failure);
            pool.lock().unwrap_or_else(|e| e.into_inner()).push(buf);
            ridgeline_core::work::advance(rows);
            if let Err(e) = ridgeline_core::work::check() {
                stopped = Some(e);
                return false;
            }
            ok
        },
    );
    if let Some(e) = stopped {
        return Err(e);
    }
    write(&mut out, footer, &mut failure);
    if failure.is_none()
        && let Err(e) = out.flush()
    {
        failure = Some(e);
    }
    match failure {
        None => Ok(stats),
        Some(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
            stats.truncated = true;
            Ok(stats)
        }
        Some(e) => Err(Error::write("sweep output", e)),
    }
}

/// CSV or JSON: the two spellings of a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Syntax {
    Csv,
    Json,
}

impl Syntax {
    fn quote(self, s: &str) -> String {
        match self {
            Syntax::Json => serde_json::to_string(s).unwrap_or_else(|_| "\"?\"".into()),
            Syntax::Csv => csv_field(s),
        }
    }

    /// What a missing number is written as.
    fn missing(self) -> &'static [u8] {
        match self {
            Syntax::Json => b"null",
            Syntax::Csv => b"",
        }
    }
}

/// The constant text of rows: `head[m * nd + d]` holds model and gpu,
/// `middle[((m * nw + w) * nk + k) * ne + e]` holds weights, kv, engine, parallel; and
/// the separators before each numeric column.
struct Labels {
    syntax: Syntax,
    head: Vec<String>,
    middle: Vec<String>,
    nd: usize,
    wke: [usize; 3],
    /// Separator (CSV) or separator and key (JSON) before `COLUMNS[i]`.
    keys: Vec<Vec<u8>>,
}

impl Labels {
    fn new(s: &Sweep<'_>, syntax: Syntax) -> Labels {
        let [nm, nd, _, _, _, _, nw, nk, ne] = s.shape();
        let json = syntax == Syntax::Json;
        let q = |t: &str| syntax.quote(t);
        let mut head = Vec::with_capacity(nm * nd);
        let mut middle = Vec::with_capacity(nm * nw * nk * ne);
        for m in &s.models {
            for d in &s.devices {
                head.push(if json {
                    format!("{{\"model\":{},\"gpu\":{},\"gpus\":", q(&m.id), q(&d.id))
                } else {
                    format!("{},{},", q(&m.id), q(&d.id))
                });
            }
            for &w in &s.weights {
                for &k in &s.kv {
                    let p = resolve_formats_with(m, w, s.expert_weights, k);
                    for e in &s.engines {
                        let (w, k, e) = (q(&p.weights.name()), q(&p.kv.name()), q(&e.id));
                        let par = q(s.parallel.name());
                        middle.push(if json {
                            format!(",\"weights\":{w},\"kv\":{k},\"engine\":{e},\"parallel\":{par},\"fits\":")
                        } else {
                            format!(",{w},{k},{e},{par},")
                        });
                    }
                }
            }
        }
        let keys = COLUMNS
            .iter()
            .map(|c| {
                if json {
                    format!(",\"{c}\":").into_bytes()
                } else {
                    b",".to_vec()
                }
            })
            .collect();
        Labels {
            syntax,
            head,
            middle,
            nd,
            wke: [nw, nk, ne],
            keys,
        }
    }

    #[inline]
    fn head(&self, ix: &[usize; 9]) -> &[u8] {
        self.head[ix[0] * self.nd + ix[1]].as_bytes()
    }

    #[inline]
    fn middle(&self, ix: &[usize; 9]) -> &[u8] {
        let [nw, nk, ne] = self.wke;
        self.middle[((ix[0] * nw + ix[6]) * nk + ix[7]) * ne + ix[8]].as_bytes()
    }

    /// The separator (and key) before column `i` of [`COLUMNS`].
    #[inline]
    fn key(&self, i: usize) -> &[u8] {
        &self.keys[i]
    }
}

/// Quotes a CSV field when it holds a comma, quote or line break (RFC 4180).
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

#[inline]
fn put_u64(buf: &mut Vec<u8>, v: u64) {
    buf.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
}

/// Appends `s`; a one-byte separator (CSV's comma) is pushed, not copied by `memcpy`.
#[inline(always)]
fn put(buf: &mut Vec<u8>, s: &[u8]) {
    if let [b] = s {
        buf.push(*b);
    } else {
        buf.extend_from_slice(s);
    }
}

/// Shortest round-trip decimal (zmij); `missing` for NaN and infinities. A whole
/// number from 1 to below 1e15 (byte counts, a speed-up of 1) is written as its
/// integer and `.0`, the same text zmij gives, at a fraction of the cost.
#[inline]
fn put_f64(buf: &mut Vec<u8>, v: f64, missing: &[u8]) {
    // a whole f64 below 2^53 converts to u64 and back without rounding, so the round
    // trip tests wholeness (without the `trunc` call `fract` makes on baseline x86-64)
    if (1.0..WHOLE_BELOW).contains(&v) && (v as u64) as f64 == v {
        put_u64(buf, v as u64);
        buf.extend_from_slice(b".0");
    } else if v.is_finite() {
        buf.extend_from_slice(zmij::Buffer::new().format_finite(v).as_bytes());
    } else {
        buf.extend_from_slice(missing);
    }
}

/// Whole numbers below this take [`put_f64`]'s integer path (zmij writes them without
/// an exponent up to 1e16).
const WHOLE_BELOW: f64 = 1e15;

/// Index in [`COLUMNS`] of the first metric (`ttft_s`).
const FIRST_METRIC: usize = 11;

/// One row, in the labels' syntax.
fn row(buf: &mut Vec<u8>, s: &Sweep<'_>, l: &Labels, ix: &[usize; 9], r: &Outcome<'_>) {
    let json = l.syntax == Syntax::Json;
    let missing = l.syntax.missing();
    buf.extend_from_slice(l.head(ix));
    put_u64(buf, s.gpus[ix[2]]);
    for (col, v) in [
        (3, s.batch[ix[3]]),
        (4, s.prompt[ix[4]]),
        (5, s.gen_tokens[ix[5]]),
    ] {
        put(buf, l.key(col));
        put_u64(buf, v);
    }
    buf.extend_from_slice(l.middle(ix));
    let metrics = match r {
        Ok(p) => p.headline(),
        Err(_) => [f64::NAN; 6],
    };
    buf.extend_from_slice(if r.is_ok_and(|p| p.fits()) {
        b"true"
    } else {
        b"false"
    });
    for (i, v) in metrics.into_iter().enumerate() {
        put(buf, l.key(FIRST_METRIC + i));
        put_f64(buf, v, missing);
    }
    put(buf, l.key(FIRST_METRIC + 6));
    match r {
        Ok(p) => {
            let bound = p.decode_bound().name();
            if json {
                buf.push(b'"');
            }
            buf.extend_from_slice(bound.as_bytes());
            if json {
                buf.push(b'"');
            }
        }
        Err(_) => buf.extend_from_slice(missing),
    }
    put(buf, l.key(FIRST_METRIC + 7));
    let usd = r.ok().and_then(|p| p.usd_per_million_tokens_if_fits());
    put_f64(buf, usd.unwrap_or(f64::NAN), missing);
    put(buf, l.key(FIRST_METRIC + 8));
    put_f64(buf, r.map_or(f64::NAN, |p| p.summary.speedup), missing);
    put(buf, l.key(FIRST_METRIC + 9));
    match r {
        Ok(_) => buf.extend_from_slice(missing),
        Err(e) => buf.extend_from_slice(l.syntax.quote(&e.to_string()).as_bytes()),
    }
    put(buf, l.key(FIRST_METRIC + 10));
    buf.extend_from_slice(if r.is_ok_and(|p| p.usd_per_hour.is_some()) {
        b"true"
    } else {
        b"false"
    });
    buf.extend_from_slice(if json { b"}" } else { b"\n" });
}

/// The rows of `sweep --rate` as CSV, columns [`crate::sweep::RATE_COLUMNS`]; the result
/// columns of a row that could not be simulated are empty and `error` says why.
pub fn rate_csv(rows: &[crate::sweep::RateRow]) -> String {
    use std::fmt::Write as _;
    let mut out = crate::sweep::RATE_COLUMNS.join(",");
    out.push('\n');
    for r in rows {
        let _ = write!(
            out,
            "{},{},{},{},{},{},{},{},{}",
            csv_field(&r.model),
            csv_field(&r.gpu),
            r.gpus,
            r.weights,
            r.kv,
            csv_field(&r.engine),
            r.prompt,
            r.gen_tokens,
            r.rate_per_s
        );
        match &r.run {
            Ok(x) => {
                let _ = writeln!(
                    out,
                    ",{},{},{},{},{},{},{},{},{},{},{},",
                    x.completed,
                    x.saturated,
                    x.throughput.requests_per_s,
                    x.throughput.output_tokens_per_s,
                    x.ttft_s.p50,
                    x.ttft_s.p99,
                    x.tpot_s.p50,
                    x.tpot_s.p99,
                    x.e2e_s.p99,
                    x.mean_batch,
                    x.kv_peak_fraction
                );
            }
            Err(e) => {
                let _ = writeln!(out, ",,,,,,,,,,,,{}", csv_field(e));
            }
        }
    }
    out
}

#[cfg(test)]
mod put_tests {
    use super::*;

    fn zmij_text(v: f64) -> Vec<u8> {
        zmij::Buffer::new().format_finite(v).as_bytes().to_vec()
    }

    fn put(v: f64) -> Vec<u8> {
        let mut b = Vec::new();
        put_f64(&mut b, v, b"");
        b
    }

    #[test]
    fn whole_numbers_are_written_as_zmij_writes_them() {
        // every power of two and of ten in range, their neighbours, and a spread of
        // byte counts (a few GiB to hundreds of TB): the integer path must give zmij's
        // bytes exactly
        let mut vs = vec![
            1.0,
            2.0,
            10.0,
            17_107_697_152.0,
            85_899_345_920.0,
            999_999_999_999_999.0,
        ];
        for e in 0..50 {
            let p = 2f64.powi(e);
            vs.extend([p, p + 1.0, (p - 1.0).max(1.0)]);
        }
        for e in 0..15 {
            let p = 10f64.powi(e);
            vs.extend([p, p + 1.0, (p - 1.0).max(1.0), 3.0 * p, 7.0 * p]);
        }
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..10_000 {
            // xorshift: integers spread over 1 ..= 2^50
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            vs.push(((x >> 14) | 1) as f64);
        }
        for v in vs.into_iter().filter(|v| *v < WHOLE_BELOW) {
            assert_eq!(put(v), zmij_text(v), "{v}");
        }
        // outside the integer path: zmij itself
        for v in [0.5, 0.0, -3.0, 1e15, 2.5e17, 123.25] {
            assert_eq!(put(v), zmij_text(v), "{v}");
        }
        assert_eq!(put(1.0), b"1.0");
        assert_eq!(put(17_107_697_152.0), b"17107697152.0");
    }
}
