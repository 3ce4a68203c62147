//! A sweep gathered as columns: the CSV's columns ([`super::COLUMNS`]), one value per
//! configuration in row order, for data-frame code (the Python package's `sweep`).

use super::{COLUMNS, Outcome, Sweep};
use crate::error::Result;
use crate::predict::resolve_formats_with;
use crate::roofline::Bound;
use std::collections::HashMap;

/// One column of [`Columns`].
#[derive(Debug, Clone, PartialEq)]
pub enum Column {
    /// Text as codes into a table of labels: row `i` holds `labels[codes[i]]`, and a
    /// `None` label is a missing value (the CSV's empty cell, JSON's `null`).
    Text {
        /// The distinct values.
        labels: Vec<Option<String>>,
        /// One index into `labels` per row.
        codes: Vec<u32>,
    },
    /// Whole numbers (device counts, batch, prompt and gen tokens).
    Count(Vec<u64>),
    /// Quantities in SI units; `NaN` where the CSV's cell is empty.
    Number(Vec<f64>),
    /// Yes or no.
    Flag(Vec<bool>),
}

impl Column {
    /// Number of rows.
    pub fn len(&self) -> usize {
        match self {
            Column::Text { codes, .. } => codes.len(),
            Column::Count(v) => v.len(),
            Column::Number(v) => v.len(),
            Column::Flag(v) => v.len(),
        }
    }

    /// Whether it has no rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A sweep's rows as columns (see [`Sweep::columns`]): the names and values of the CSV
/// that `ridgeline sweep` prints, without the text.
#[derive(Debug, Clone, PartialEq)]
pub struct Columns {
    /// Number of rows (configurations).
    pub rows: usize,
    /// Each column of [`COLUMNS`] with its values, in that order.
    pub columns: Vec<(&'static str, Column)>,
}

impl Columns {
    /// The column named `name` (one of [`COLUMNS`]).
    pub fn get(&self, name: &str) -> Option<&Column> {
        self.columns
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, c)| c)
    }
}

/// Index of each text column's label table, per (model, weights, kv) for the formats.
struct Labels {
    model: Vec<Option<String>>,
    gpu: Vec<Option<String>>,
    weights: Vec<Option<String>>,
    kv: Vec<Option<String>>,
    engine: Vec<Option<String>>,
    parallel: Vec<Option<String>>,
    /// Codes of the (weights, kv) labels, at `(model x nw + w) x nk + k`.
    formats: Vec<(u32, u32)>,
    nw: usize,
    nk: usize,
}

/// The code of `label` in `table`, added when new.
fn code_of(table: &mut Vec<Option<String>>, label: Option<String>) -> u32 {
    let i = match table.iter().position(|l| *l == label) {
        Some(i) => i,
        None => {
            table.push(label);
            table.len() - 1
        }
    };
    i as u32
}

impl Labels {
    fn new(s: &Sweep<'_>) -> Labels {
        let some = |v: &str| Some(v.to_string());
        let (mut weights, mut kv, mut formats) = (Vec::new(), Vec::new(), Vec::new());
        for m in &s.models {
            for &w in &s.weights {
                for &k in &s.kv {
                    let p = resolve_formats_with(m, w, s.expert_weights, k);
                    formats.push((
                        code_of(&mut weights, some(&p.weights.name())),
                        code_of(&mut kv, some(&p.kv.name())),
                    ));
                }
            }
        }
        Labels {
            model: s.models.iter().map(|m| some(&m.id)).collect(),
            gpu: s.devices.iter().map(|d| some(&d.id)).collect(),
            weights,
            kv,
            engine: s.engines.iter().map(|e| some(&e.id)).collect(),
            parallel: vec![some(s.parallel.name())],
            formats,
            nw: s.weights.len(),
            nk: s.kv.len(),
        }
    }

    fn formats(&self, ix: &[usize; 9]) -> (u32, u32) {
        self.formats[(ix[0] * self.nw + ix[6]) * self.nk + ix[7]]
    }
}

/// The columns of a run of rows, filled in order.
#[derive(Default)]
struct Builder {
    codes: [Vec<u32>; 6],
    counts: [Vec<u64>; 4],
    fits: Vec<bool>,
    priced: Vec<bool>,
    numbers: [Vec<f64>; 8],
    bound: Vec<u32>,
    error: Vec<u32>,
    errors: Vec<Option<String>>,
}

/// Index of the missing value in the `decode_bound` labels (after the bounds).
const NO_BOUND: u32 = Bound::ALL.len() as u32;

impl Builder {
    fn with_capacity(n: usize) -> Builder {
        let mut b = Builder {
            errors: vec![None],
            ..Builder::default()
        };
        b.codes.iter_mut().for_each(|v| v.reserve(n));
        b.counts.iter_mut().for_each(|v| v.reserve(n));
        b.numbers.iter_mut().for_each(|v| v.reserve(n));
        b.fits.reserve(n);
        b.priced.reserve(n);
        b.bound.reserve(n);
        b.error.reserve(n);
        b
    }

    fn push(&mut self, s: &Sweep<'_>, l: &Labels, ix: &[usize; 9], r: &Outcome<'_>) {
        let (w, k) = l.formats(ix);
        let codes = [ix[0] as u32, ix[1] as u32, w, k, ix[8] as u32, 0];
        for (v, c) in self.codes.iter_mut().zip(codes) {
            v.push(c);
        }
        let counts = [
            s.gpus[ix[2]],
            s.batch[ix[3]],
            s.prompt[ix[4]],
            s.gen_tokens[ix[5]],
        ];
        for (v, c) in self.counts.iter_mut().zip(counts) {
            v.push(c);
        }
        let numbers = match r {
            Ok(p) => {
                let [a, b, c, d, e, f] = p.headline();
                let usd = p.usd_per_million_tokens_if_fits().unwrap_or(f64::NAN);
                [a, b, c, d, e, f, usd, p.summary.speedup]
            }
            Err(_) => [f64::NAN; 8],
        };
        for (v, x) in self.numbers.iter_mut().zip(numbers) {
            v.push(x);
        }
        self.fits.push(r.is_ok_and(|p| p.fits()));
        self.priced.push(r.is_ok_and(|p| p.usd_per_hour.is_some()));
        match r {
            Ok(p) => {
                let b = p.decode_bound();
                self.bound
                    .push(Bound::ALL.iter().position(|&x| x == b).unwrap_or(0) as u32);
                self.error.push(0);
            }
            Err(e) => {
                self.bound.push(NO_BOUND);
                let code = code_of(&mut self.errors, Some(e.to_string()));
                self.error.push(code);
            }
        }
    }

    /// Appends the rows of `o` (its error codes renumbered into this builder's table).
    fn append(&mut self, mut o: Builder) {
        for (a, b) in self.codes.iter_mut().zip(&o.codes) {
            a.extend_from_slice(b);
        }
        for (a, b) in self.counts.iter_mut().zip(&o.counts) {
            a.extend_from_slice(b);
        }
        for (a, b) in self.numbers.iter_mut().zip(&o.numbers) {
            a.extend_from_slice(b);
        }
        self.fits.extend_from_slice(&o.fits);
        self.priced.extend_from_slice(&o.priced);
        self.bound.extend_from_slice(&o.bound);
        let map: HashMap<u32, u32> = std::mem::take(&mut o.errors)
            .into_iter()
            .enumerate()
            .map(|(i, label)| (i as u32, code_of(&mut self.errors, label)))
            .collect();
        self.error.extend(o.error.iter().map(|c| map[c]));
    }

    fn finish(self, l: Labels) -> Columns {
        let rows = self.fits.len();
        let [model, gpu, weights, kv, engine, parallel] = self.codes;
        let [gpus, batch, prompt, gen_tokens] = self.counts;
        let [ttft, tpot, decode, output, total, capacity, usd, speedup] = self.numbers;
        let text = |labels, codes| Column::Text { labels, codes };
        let bounds = Bound::ALL
            .iter()
            .map(|b| Some(b.name().to_string()))
            .chain([None])
            .collect();
        let values = vec![
            text(l.model, model),
            text(l.gpu, gpu),
            Column::Count(gpus),
            Column::Count(batch),
            Column::Count(prompt),
            Column::Count(gen_tokens),
            text(l.weights, weights),
            text(l.kv, kv),
            text(l.engine, engine),
            text(l.parallel, parallel),
            Column::Flag(self.fits),
            Column::Number(ttft),
            Column::Number(tpot),
            Column::Number(decode),
            Column::Number(output),
            Column::Number(total),
            Column::Number(capacity),
            text(bounds, self.bound),
            Column::Number(usd),
            Column::Number(speedup),
            text(self.errors, self.error),
            Column::Flag(self.priced),
        ];
        Columns {
            rows,
            columns: COLUMNS.into_iter().zip(values).collect(),
        }
    }
}

impl Sweep<'_> {
    /// Evaluates every configuration into columns (see [`Columns`]), in parallel, with
    /// the values `ridgeline sweep` prints: row `i` of each column is row `i` of the
    /// CSV. At most [`super::MAX_GRID_CELLS`] configurations (about 150 bytes each).
    ///
    /// ```
    /// use ridgeline_core::prelude::*;
    /// use ridgeline_plan::sweep::{Column, Sweep, SweepLists};
    ///
    /// let lists = SweepLists {
    ///     model: "llama-3-8b",
    ///     gpu: "h100,l4",
    ///     batch: "1,8",
    ///     ..SweepLists::default()
    /// };
    /// let (hw, engines) = (HardwareDb::builtin()?, EngineDb::builtin()?);
    /// let c = Sweep::from_lists(&lists, hw, engines)?.columns()?;
    /// assert_eq!(c.rows, 4);
    /// let Some(Column::Count(batch)) = c.get("batch") else { panic!() };
    /// assert_eq!(batch, &[1, 8, 1, 8]);
    /// # Ok::<(), ridgeline_core::Error>(())
    /// ```
    pub fn columns(&self) -> Result<Columns> {
        let n = self.in_memory()?;
        const PER: usize = 8192;
        let labels = Labels::new(self);
        let mut all = Builder::with_capacity(n);
        self.run_chunked(
            PER,
            |range| {
                let mut b = Builder::with_capacity(range.len());
                self.for_each(range, |ix, r| b.push(self, &labels, ix, &r));
                b
            },
            |b| {
                all.append(b);
                true
            },
        );
        Ok(all.finish(labels))
    }
}
