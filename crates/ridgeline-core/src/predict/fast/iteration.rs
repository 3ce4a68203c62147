//! One iteration of a continuous-batching engine as a forward pass: some sequences
//! decode one token each, each at its own context, while prompt chunks are prefilled
//! beside them ([`IterationCost`]). The ops and their placement are the plain path's;
//! only their arguments are assembled per iteration, without building a graph for it.
//!
//! The ops of a pass fall into classes by what their cost depends on:
//!
//! - **token ops** (projections, MLP, norms, embeddings, all-reduces): the tokens of the
//!   pass, `T` = decoding sequences + prefill tokens; the weights are read once for all;
//! - **head ops** (final norm, lm_head): the rows that need logits, one per sequence;
//! - **decode-only / prefill-only ops** (latent attention's absorbed and expanded
//!   projections): the tokens of that phase;
//! - **per-sequence ops** (attention cores, linear-attention and state-space state): a
//!   sum over the
//!   sequences. A decode sequence's cost is affine in `min(L, w)` for each of the
//!   model's windows `w` and in `L`, so the decode group is costed from the sums
//!   `Σ min(L_i, w)` and `Σ L_i` in closed form ([`DecodeSums`]); a prefill chunk of `c`
//!   new tokens over a context of `k` is costed from its own graph (cached by `(c, k)`).
//!   The decode group and the prefill chunks each run as one kernel per op, as the
//!   varlen attention kernels of serving engines do.
//!
//! A batch of `b` sequences decoding at one context therefore costs exactly
//! [`Predictor`]'s decode step at batch `b` and a batch of `b` whole prompts of one
//! length its prefill (to rounding; tests below and in `tests/suite/simulate.rs`).
//!
//! **On kernel tables** ([`Predictor::with_kernels`]) an op's time is not linear in its
//! work (a measured efficiency depends on the shape), so per-sequence costs are not
//! summed before placing them. The token, head and phase-only ops are placed at the
//! pass's own shape, as the plain pass places them (tables included). The decode group
//! runs its per-sequence ops as one decode step of its sequences at their mean context
//! (the tables' decode attention is measured at one context per batch); the prefill
//! chunks of an iteration are grouped by `(new tokens, context)`, and each group runs
//! as one pass of that many sequences (a whole prompt reads the prefill-attention
//! table, a chunk after a cached prefix keeps the engine's cost). Pure batches stay
//! exactly the plain passes on tables too.

use super::super::pass::{Part, accumulate};
use crate::model::graph::{OpInstance, OpKind, Step, Unit};
use crate::ops::{ByteClasses, Cost};
use crate::predict::{PassResult, Predictor};
use std::collections::HashMap;

/// Most per-sequence ops one pass may have.
const MAX_SEQ_OPS: usize = 16;
/// Most sliding windows costed in closed form.
const MAX_WINDOWS: usize = 4;
/// Keys below this are cached in a table, above it in a map that is emptied when full.
const TABLE_KEYS: u64 = 1 << 16;
/// Entries a cache map holds before it is emptied.
const MAP_ENTRIES: usize = 4096;
/// Slots of the prefill-chunk cache.
const CHUNK_SLOTS: usize = 4096;

/// What an op's cost depends on in a mixed iteration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    Token,
    Head,
    DecodeOnly,
    PrefillOnly,
    PerSequence,
}

fn class(kind: OpKind) -> Class {
    match kind {
        OpKind::FinalNorm | OpKind::LmHead => Class::Head,
        OpKind::MlaQAbsorb | OpKind::MlaVAbsorb => Class::DecodeOnly,
        OpKind::MlaKvBProj => Class::PrefillOnly,
        k if k.is_attention_core()
            || matches!(k, OpKind::ShortConv | OpKind::DeltaRule | OpKind::SsmScan) =>
        {
            Class::PerSequence
        }
        _ => Class::Token,
    }
}

/// A cost as numbers: flops, reads (weights, activations, kv), writes (same), link.
type Arr = [f64; 8];

fn arr(c: &Cost) -> Arr {
    [
        c.flops,
        c.read.weights,
        c.read.activations,
        c.read.kv,
        c.written.weights,
        c.written.activations,
        c.written.kv,
        c.link_bytes,
    ]
}

fn cost(a: &Arr) -> Cost {
    Cost {
        flops: a[0],
        read: ByteClasses {
            weights: a[1],
            activations: a[2],
            kv: a[3],
        },
        written: ByteClasses {
            weights: a[4],
            activations: a[5],
            kv: a[6],
        },
        link_bytes: a[7],
    }
}

fn axpy(acc: &mut Arr, f: f64, x: &Arr) {
    for (a, v) in acc.iter_mut().zip(x) {
        *a += f * v;
    }
}

/// Indices of the weight bytes (read, written) in an [`Arr`]: a per-sequence op reads
/// its weights (a convolution's taps) once per pass, however many sequences it serves.
const WEIGHTS: [usize; 2] = [1, 4];

/// Adds a sequence's cost to an op's sum: every term adds, but the weights are read once.
fn add_sequence(acc: &mut Arr, x: &Arr) {
    for (i, (a, v)) in acc.iter_mut().zip(x).enumerate() {
        if WEIGHTS.contains(&i) {
            *a = a.max(*v);
        } else {
            *a += v;
        }
    }
}

/// The per-op part of a pass over the ops of `class` in the graph of `step`, each
/// from a kernel table where the predictor reads one that covers it.
fn class_pass(p: &Predictor<'_>, step: &Step, want: Class) -> PassResult {
    let g = p.graph(step);
    let mut r = PassResult::default();
    for op in g.ops().iter().filter(|o| class(o.kind) == want) {
        p.accumulate_in(&mut r, op, &p.place_op_in(op, Part::Plain, step));
    }
    r
}

/// Per-op results of one class by a count (tokens, rows), computed on first use.
#[derive(Debug, Clone)]
struct ByCount {
    class: Class,
    /// The ops are a prompt pass's (an iteration with prompt tokens: its expert
    /// all-to-all runs the high-throughput kernels, [`OpInstance::forwarded`]), else a
    /// decode pass's.
    prompt: bool,
    table: Vec<Option<PassResult>>,
    map: HashMap<u64, PassResult>,
}

impl ByCount {
    fn new(class: Class) -> Self {
        ByCount {
            class,
            prompt: class == Class::PrefillOnly,
            table: Vec::new(),
            map: HashMap::new(),
        }
    }

    /// The same class in a prompt pass.
    fn prompt(class: Class) -> Self {
        ByCount {
            prompt: true,
            ..ByCount::new(class)
        }
    }

    fn step(&self, n: u64) -> Step {
        match self.class {
            Class::PrefillOnly => Step::prefill(1, n),
            _ => Step {
                decode: !self.prompt,
                ..Step::decode(n, 1)
            },
        }
    }

    /// Under expert parallelism (`ep > 1`): the token ops of a pass whose busiest group
    /// runs `local` of the `all` tokens the routed experts see.
    fn get_ep(&mut self, p: &Predictor<'_>, local: u64, all: u64, ep: u64) -> PassResult {
        let key = (local << 32) ^ all;
        if let Some(r) = self.map.get(&key) {
            return *r;
        }
        if self.map.len() >= MAP_ENTRIES {
            self.map.clear();
        }
        let step = Step {
            batch: local.saturating_mul(ep),
            all_tokens: Some(all),
            decode: !self.prompt,
            ..Step::decode(1, 1)
        };
        let r = class_pass(p, &step, self.class);
        self.map.insert(key, r);
        r
    }

    fn get(&mut self, p: &Predictor<'_>, n: u64) -> PassResult {
        if n == 0 {
            return PassResult::default();
        }
        if n < TABLE_KEYS {
            let i = n as usize;
            if self.table.len() <= i {
                self.table.resize(i + 1, None);
            }
            if let Some(r) = self.table[i] {
                return r;
            }
            let r = class_pass(p, &self.step(n), self.class);
            self.table[i] = Some(r);
            return r;
        }
        if let Some(r) = self.map.get(&n) {
            return *r;
        }
        if self.map.len() >= MAP_ENTRIES {
            self.map.clear();
        }
        let r = class_pass(p, &self.step(n), self.class);
        self.map.insert(n, r);
        r
    }
}

/// The kind, executions and unit of each per-sequence op, in graph order.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Template {
    ops: [(OpKind, f64, Unit); MAX_SEQ_OPS],
    n: usize,
}

impl Template {
    /// The per-sequence ops of `step` and their per-execution costs (`None`: more than
    /// [`MAX_SEQ_OPS`]).
    fn of(p: &Predictor<'_>, step: &Step) -> Option<(Template, [Arr; MAX_SEQ_OPS])> {
        let g = p.graph(step);
        let mut t = Template {
            ops: [(OpKind::Attention, 0.0, Unit::Vector); MAX_SEQ_OPS],
            n: 0,
        };
        let mut costs = [[0.0; 8]; MAX_SEQ_OPS];
        for op in g
            .ops()
            .iter()
            .filter(|o| class(o.kind) == Class::PerSequence)
        {
            if t.n == MAX_SEQ_OPS {
                return None;
            }
            t.ops[t.n] = (op.kind, op.count, op.unit);
            costs[t.n] = arr(&op.cost);
            t.n += 1;
        }
        Some((t, costs))
    }

    /// Places the ops with per-execution costs `costs` and adds them to `r`.
    fn place(&self, p: &Predictor<'_>, costs: &[Arr], r: &mut PassResult) {
        for (&(kind, count, unit), c) in self.ops[..self.n].iter().zip(costs) {
            let op = OpInstance {
                kind,
                count,
                cost: cost(c),
                unit,
                forwarded: false,
                routed: false,
            };
            accumulate(r, &op, &p.place_op(&op));
        }
    }
}

/// The decode group of an iteration as the sums its cost depends on.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct DecodeSums {
    /// Sequences decoding.
    pub sequences: u64,
    /// `Σ L_i`, their contexts (each including its new token).
    pub context: f64,
    /// `Σ min(L_i, w)` for each of [`IterationCost::windows`] (for a chunked-attention
    /// model, `Σ (((L_i - 1) mod c) + 1)` for its chunk `c`).
    pub windowed: [f64; MAX_WINDOWS],
}

/// Per-sequence decode ops as lines in the features `[1, min(L, w_1), ..., L]` (one
/// sequence), for the model's windows.
#[derive(Debug, Clone, Copy)]
struct DecodeModel {
    template: Template,
    /// Per op: intercept, then one coefficient per window, then the slope in `L`.
    coef: [[Arr; MAX_WINDOWS + 2]; MAX_SEQ_OPS],
}

impl DecodeModel {
    /// Measures the lines on the graphs of one decoding sequence, between the windows,
    /// and checks them at other contexts and at batch 3 (`None`: the ops are not of
    /// this form; the caller then uses the plain graph at the mean context).
    fn new(p: &Predictor<'_>, windows: &[u64], chunked: bool) -> Option<DecodeModel> {
        if windows.len() > MAX_WINDOWS || windows.first().is_some_and(|&w| w < 2) {
            return None;
        }
        let at = |l: u64| Template::of(p, &Step::decode(1, l));
        let (template, c1) = at(1)?;
        // segment ends: 1, w_1, ..., w_m, w_m + 2^20 (for a chunk c, the multiple of c
        // at or above it: there a chunk's keys are c, as a window's would be, so the
        // slopes between the ends measure the same coefficients)
        let mut ends = vec![1u64];
        ends.extend_from_slice(windows);
        let far = ends.last().copied().unwrap_or(1) + (1 << 20);
        ends.push(match (chunked, windows.first()) {
            (true, Some(&c)) => far.div_ceil(c) * c,
            _ => far,
        });
        let mut costs = Vec::with_capacity(ends.len());
        for &l in &ends {
            let (t, c) = at(l)?;
            if t != template {
                return None;
            }
            costs.push(c);
        }
        let m = windows.len();
        let mut coef = [[[0.0; 8]; MAX_WINDOWS + 2]; MAX_SEQ_OPS];
        for (i, op) in coef.iter_mut().enumerate().take(template.n) {
            // slopes per segment
            let slope = |j: usize| -> Arr {
                let span = (ends[j + 1] - ends[j]) as f64;
                let mut s = costs[j + 1][i];
                axpy(&mut s, -1.0, &costs[j][i]);
                s.map(|v| v / span)
            };
            let slopes: Vec<Arr> = (0..=m).map(slope).collect();
            // intercept: cost(1) - s_0
            let mut a = c1[i];
            axpy(&mut a, -1.0, &slopes[0]);
            op[0] = a;
            for k in 0..m {
                let mut c = slopes[k];
                axpy(&mut c, -1.0, &slopes[k + 1]);
                op[1 + k] = c;
            }
            op[m + 1] = slopes[m];
        }
        let model = DecodeModel { template, coef };
        let mut checks: Vec<u64> = vec![2, 3, 1000, (3 << 20) + 7];
        for &w in windows {
            checks.extend([w - 1, w + 1, 2 * w + 5]);
        }
        checks
            .iter()
            .all(|&l| model.check(p, windows, chunked, l))
            .then_some(model)
    }

    /// Whether the lines give the graph's costs at context `l` for batches 1 and 3.
    fn check(&self, p: &Predictor<'_>, windows: &[u64], chunked: bool, l: u64) -> bool {
        [1u64, 3].iter().all(|&b| {
            let Some((t, want)) = Template::of(p, &Step::decode(b, l)) else {
                return false;
            };
            let mut sums = DecodeSums::default();
            for _ in 0..b {
                sums.add(windows, chunked, l);
            }
            let mut got = [[0.0; 8]; MAX_SEQ_OPS];
            self.costs(&sums, windows.len(), &mut got);
            t == self.template
                && (0..t.n).all(|i| {
                    let scale = want[i].iter().fold(0.0f64, |m, v| m.max(v.abs()));
                    want[i]
                        .iter()
                        .zip(&got[i])
                        .all(|(w, g)| (w - g).abs() <= 1e-9 * scale.max(1e-300))
                })
        })
    }

    /// Per-execution costs of the per-sequence ops for the decode group `s`.
    fn costs(&self, s: &DecodeSums, m: usize, out: &mut [Arr; MAX_SEQ_OPS]) {
        for (o, c) in out.iter_mut().zip(&self.coef).take(self.template.n) {
            *o = [0.0; 8];
            axpy(o, s.sequences as f64, &c[0]);
            for k in 0..m {
                axpy(o, s.windowed[k], &c[1 + k]);
            }
            axpy(o, s.context, &c[m + 1]);
            // weights once, not per sequence
            for i in WEIGHTS {
                o[i] = c[0][i];
            }
        }
    }
}

impl DecodeSums {
    /// Adds one sequence decoding at `context` (its new token included); `chunked`:
    /// the windows are attention chunks.
    #[inline]
    pub(crate) fn add(&mut self, windows: &[u64], chunked: bool, context: u64) {
        self.sequences += 1;
        let l = context.max(1);
        self.context += l as f64;
        for (s, &w) in self.windowed.iter_mut().zip(windows) {
            *s += if chunked { (l - 1) % w + 1 } else { l.min(w) } as f64;
        }
    }
}

/// A direct-mapped cache of prefill-chunk costs by `(new tokens, context)`: per slot,
/// the costs of the template's `n` per-sequence ops.
#[derive(Debug, Clone)]
struct ChunkCache {
    keys: Vec<(u64, u64)>,
    costs: Vec<Arr>,
    n: usize,
}

impl ChunkCache {
    fn new(n: usize) -> Self {
        ChunkCache {
            keys: vec![(0, 0); CHUNK_SLOTS],
            costs: vec![[0.0; 8]; CHUNK_SLOTS * n],
            n,
        }
    }

    fn slot(c: u64, k: u64) -> usize {
        let h = c.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ k.wrapping_mul(0xC2B2_AE3D_27D4_EB4F);
        (h >> 52) as usize % CHUNK_SLOTS
    }

    fn costs(&self, slot: usize) -> &[Arr] {
        &self.costs[slot * self.n..(slot + 1) * self.n]
    }
}

/// The cost of mixed continuous-batching iterations for one [`Predictor`]: add the
/// decoding sequences ([`IterationCost::add_decode`]) and prefill chunks
/// ([`IterationCost::add_chunk`]) of an iteration, then [`IterationCost::finish`] it.
/// Allocation-free per iteration once its caches are warm.
///
/// ```
/// use ridgeline_core::prelude::*;
/// use ridgeline_core::model::graph::Step;
/// use ridgeline_core::predict::IterationCost;
///
/// let model = ModelDb::builtin()?.resolve("llama-3-8b")?;
/// let gpu = HardwareDb::builtin()?.get("h100")?;
/// let engine = EngineDb::builtin()?.get("typical")?;
/// let p = Predictor::new(&model, gpu, engine, &Scenario::default())?;
/// let mut it = IterationCost::new(&p);
/// for _ in 0..8 {
///     it.add_decode(1000);
/// }
/// let step = it.finish();
/// let plain = p.pass(&Step::decode(8, 1000), 0.0);
/// assert!((step.time_s / plain.time_s - 1.0).abs() < 1e-9);
/// # Ok::<(), ridgeline_core::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct IterationCost<'p, 'a> {
    p: &'p Predictor<'a>,
    windows: Vec<u64>,
    /// The windows are attention chunks.
    chunked: bool,
    token: ByCount,
    /// The token ops of an iteration with prompt tokens.
    token_prompt: ByCount,
    head: ByCount,
    decode_only: ByCount,
    prefill_only: ByCount,
    decode: Option<DecodeModel>,
    prefill: Option<Template>,
    chunks: ChunkCache,
    // the iteration being assembled
    sums: DecodeSums,
    prefill_costs: [Arr; MAX_SEQ_OPS],
    prefill_tokens: u64,
    n_chunks: u64,
    /// The longest prefill chunk of the iteration (what one expert-parallel group runs
    /// at least).
    max_chunk: u64,
    /// Chunks whose ops did not match the template, placed apart.
    apart: PassResult,
    /// The predictor reads kernel tables (see the module notes).
    tables: bool,
    /// On kernel tables: the iteration's prefill chunks as `(new tokens, context)`.
    table_chunks: Vec<(u64, u64)>,
    /// On kernel tables: the per-sequence ops of a group of chunks placed, by `(new
    /// tokens, context, chunks)`.
    table_chunk_costs: HashMap<(u64, u64, u64), PassResult>,
    /// The decode group's per-op costs (kept to save clearing them every iteration).
    scratch: [Arr; MAX_SEQ_OPS],
    /// With speculative decoding: tokens a verify pass yields on average, the decoding
    /// sequences of the iteration and the sum of their contexts, and the group's cost
    /// per `(sequences, context / SPEC_CONTEXT_STEP)` (see [`IterationCost::finish`]).
    spec: Option<f64>,
    spec_sequences: u64,
    spec_context: u64,
    spec_costs: HashMap<(u64, u64), PassResult>,
    /// A verify pass's attention and its draft steps per `(sequences, context bucket)`,
    /// for iterations that verify beside prompt chunks.
    verify_costs: HashMap<(u64, u64), (PassResult, PassResult)>,
}

/// The verify pass of an iteration's speculating sequences, run in the same forward
/// pass as its prompt chunks: the tokens it adds to the token ops, the sequences, and
/// its attention.
#[derive(Debug, Clone, Copy, Default)]
struct Verify {
    tokens: u64,
    sequences: u64,
    per_sequence: PassResult,
}

/// Contexts of a speculating decode group are costed at multiples of this many tokens
/// (a verify pass's cost moves by a few parts in 10^5 per token of context).
const SPEC_CONTEXT_STEP: u64 = 8;

impl<'p, 'a> IterationCost<'p, 'a> {
    /// Measures the decode lines and the prefill template of `p`.
    pub fn new(p: &'p Predictor<'a>) -> Self {
        let windows: Vec<u64> = p.windows.clone();
        let chunked = p.chunk.is_some();
        let prefill = Template::of(p, &Step::prefill(1, 2)).map(|(t, _)| t);
        // on tables the decode group is placed as a decode step (module notes)
        let tables = p.kernels().is_some();
        IterationCost {
            p,
            decode: (!tables)
                .then(|| DecodeModel::new(p, &windows, chunked))
                .flatten(),
            chunked,
            chunks: ChunkCache::new(prefill.map_or(0, |t| t.n)),
            prefill,
            windows,
            token: ByCount::new(Class::Token),
            token_prompt: ByCount::prompt(Class::Token),
            head: ByCount::new(Class::Head),
            decode_only: ByCount::new(Class::DecodeOnly),
            prefill_only: ByCount::new(Class::PrefillOnly),
            sums: DecodeSums::default(),
            prefill_costs: [[0.0; 8]; MAX_SEQ_OPS],
            prefill_tokens: 0,
            n_chunks: 0,
            max_chunk: 0,
            apart: PassResult::default(),
            tables,
            table_chunks: Vec::new(),
            table_chunk_costs: HashMap::new(),
            scratch: [[0.0; 8]; MAX_SEQ_OPS],
            spec: p.speculation().map(|s| s.tokens_per_verify()),
            spec_sequences: 0,
            spec_context: 0,
            spec_costs: HashMap::new(),
            verify_costs: HashMap::new(),
        }
    }

    /// The predictor costed.
    pub fn predictor(&self) -> &'p Predictor<'a> {
        self.p
    }

    /// The model's sliding windows, ascending.
    pub fn windows(&self) -> &[u64] {
        &self.windows
    }

    /// Whether decode groups are costed in closed form (else at their mean context).
    #[cfg(test)]
    pub(crate) fn closed_form(&self) -> bool {
        self.decode.is_some()
    }

    /// Adds a sequence decoding one token at `context` (the new token included); with
    /// speculative decoding, one verify pass of its drafts and the drafts themselves.
    #[inline]
    pub fn add_decode(&mut self, context: u64) {
        if self.spec.is_some() {
            self.spec_sequences += 1;
            self.spec_context += context;
        } else {
            self.sums.add(&self.windows, self.chunked, context);
        }
    }

    /// The speculating decode group of the iteration: the predictor's decode step at
    /// the group's mean context (its verify pass and `k` draft steps per
    /// `tokens_per_verify` output tokens) times `tokens_per_verify`, i.e. one verify pass
    /// and `k` draft steps, as passes of their own beside the prefill chunks.
    fn spec_group(&mut self) -> PassResult {
        let t = self.spec.unwrap_or(1.0);
        let Some((n, bucket)) = self.take_spec_group() else {
            return PassResult::default();
        };
        if self.spec_costs.len() >= MAP_ENTRIES {
            self.spec_costs.clear();
        }
        let p = self.p;
        let r = self
            .spec_costs
            .entry((n, bucket))
            .or_insert_with(|| p.decode_step(n, bucket * SPEC_CONTEXT_STEP, 0.0));
        let mut out = PassResult::default();
        out.add_scaled(r, t);
        out
    }

    /// The iteration's speculating sequences and their mean context in steps of
    /// [`SPEC_CONTEXT_STEP`] (at least 1), and a fresh start for the next iteration
    /// (`None`: none speculates).
    fn take_spec_group(&mut self) -> Option<(u64, u64)> {
        let n = std::mem::take(&mut self.spec_sequences);
        let total = std::mem::take(&mut self.spec_context);
        if n == 0 {
            return None;
        }
        let mean = (total as f64 / n as f64).round() as u64;
        Some((n, mean.div_ceil(SPEC_CONTEXT_STEP).max(1)))
    }

    /// The draft's own pass over the iteration's `pt` prompt tokens (its cache must hold
    /// them too), as predict's time to first token has it.
    fn draft_prefill(&mut self, pt: u64) -> PassResult {
        let p = self.p;
        *self
            .spec_costs
            .entry((0, pt))
            .or_insert_with(|| p.draft_prefill(1, pt))
    }

    /// Adds a prefill chunk of `new_tokens` tokens that brings its sequence's KV cache
    /// to `context` tokens (`context >= new_tokens`; the tokens before it are cached
    /// already, by earlier chunks or a prefix cache). A chunk of one token is a decode.
    pub fn add_chunk(&mut self, new_tokens: u64, context: u64) {
        let context = context.max(new_tokens);
        match new_tokens {
            0 => {}
            1 => self.add_decode(context),
            c => {
                self.prefill_tokens += c;
                self.n_chunks += 1;
                self.max_chunk = self.max_chunk.max(c);
                self.chunk_costs(c, context);
            }
        }
    }

    fn chunk_costs(&mut self, c: u64, k: u64) {
        if self.tables {
            self.table_chunks.push((c, k));
            return;
        }
        let Some(t) = self.prefill else {
            return;
        };
        let slot = ChunkCache::slot(c, k);
        if self.chunks.keys[slot] != (c, k) {
            let step = Step {
                batch: 1,
                new_tokens: c,
                context: k,
                logits_per_sequence: 1,
                decode: false,
                all_tokens: None,
            };
            match Template::of(self.p, &step) {
                Some((got, costs)) if got == t => {
                    self.chunks.keys[slot] = (c, k);
                    let n = t.n;
                    self.chunks.costs[slot * n..(slot + 1) * n].copy_from_slice(&costs[..n]);
                }
                Some((got, costs)) => {
                    got.place(self.p, &costs[..got.n], &mut self.apart);
                    return;
                }
                None => return,
            }
        }
        for (acc, x) in self.prefill_costs.iter_mut().zip(self.chunks.costs(slot)) {
            add_sequence(acc, x);
        }
    }

    /// The iteration's pass (per-pass overheads included), and a fresh start for the
    /// next one. An empty iteration costs nothing. With speculative decoding, the verify
    /// pass of the decoding sequences runs in one forward pass with the iteration's
    /// prompt chunks (the weights read once), the drafts as steps of their own.
    pub fn finish(&mut self) -> PassResult {
        if self.spec.is_some() && self.spec_sequences > 0 && self.prefill_tokens > 0 {
            return self.finish_verifying();
        }
        let mut spec = self.spec_group();
        if self.spec.is_some() && self.prefill_tokens > 0 {
            spec = add(spec, self.draft_prefill(self.prefill_tokens));
        }
        let plain = self.finish_plain(Verify::default());
        add(spec, plain)
    }

    /// [`IterationCost::finish`] of an iteration whose speculating sequences verify
    /// beside prompt chunks: the verify pass (at the sequences' mean context, bucketed as
    /// [`IterationCost::spec_group`] does) joins the chunks' forward pass; its `k` draft
    /// steps and the draft's pass over the prompt tokens run apart.
    fn finish_verifying(&mut self) -> PassResult {
        let p = self.p;
        let Some((n, bucket)) = self.take_spec_group() else {
            return self.finish_plain(Verify::default());
        };
        let k = p.speculation().map_or(0, |s| s.k);
        if self.verify_costs.len() >= MAP_ENTRIES {
            self.verify_costs.clear();
        }
        let (per_sequence, drafts) = *self.verify_costs.entry((n, bucket)).or_insert_with(|| {
            let context = bucket * SPEC_CONTEXT_STEP;
            let attention = p
                .verify_step(n, context)
                .map(|s| class_pass(p, &s, Class::PerSequence))
                .unwrap_or_default();
            (attention, p.draft_steps(n, context))
        });
        let draft_prefill = self.draft_prefill(self.prefill_tokens);
        let verify = Verify {
            tokens: n.saturating_mul(k + 1),
            sequences: n,
            per_sequence,
        };
        add(add(drafts, draft_prefill), self.finish_plain(verify))
    }

    fn finish_plain(&mut self, verify: Verify) -> PassResult {
        let p = self.p;
        let s = std::mem::take(&mut self.sums);
        let (pt, n_chunks) = (self.prefill_tokens, self.n_chunks);
        let max_chunk = std::mem::take(&mut self.max_chunk);
        let apart = std::mem::take(&mut self.apart);
        self.prefill_tokens = 0;
        self.n_chunks = 0;
        let tokens = s.sequences + pt + verify.tokens;
        if tokens == 0 {
            return PassResult::default();
        }
        // under expert parallelism the sequences spread over the `ep` groups and every
        // MoE layer waits for the busiest: an even share of the tokens, but at least the
        // longest prompt chunk (a chunk runs in one group); the routed experts see all
        let ep = p.ep();
        // with prompt tokens the iteration runs as a prompt pass (its expert all-to-all
        // on the high-throughput kernels), else as a decode pass
        let token_ops = if pt > 0 {
            &mut self.token_prompt
        } else {
            &mut self.token
        };
        let (token, prefill_only) = if ep > 1 {
            let local = tokens.div_ceil(ep).max(max_chunk).min(tokens);
            let local_prefill = pt.div_ceil(ep).max(max_chunk).min(pt);
            (
                token_ops.get_ep(p, local, tokens, ep),
                self.prefill_only.get(p, local_prefill),
            )
        } else {
            (token_ops.get(p, tokens), self.prefill_only.get(p, pt))
        };
        // a verify pass's tokens each take logits and the decode-only projections
        let mut r = add(
            add(
                token,
                self.head.get(p, s.sequences + n_chunks + verify.tokens),
            ),
            add(
                self.decode_only.get(p, s.sequences + verify.tokens),
                prefill_only,
            ),
        );
        r = add(add(r, apart), verify.per_sequence);
        // each group runs attention for its own sequences: the busiest `ceil(n / ep)`
        // of the `n` decoding (the graph's share, balanced), of the chunks likewise
        let share_of = |n: u64| {
            if ep > 1 && n > 0 {
                n.div_ceil(ep) as f64 / n as f64
            } else {
                1.0
            }
        };
        let share = share_of(s.sequences);
        if s.sequences > 0 {
            match &self.decode {
                Some(m) => {
                    m.costs(&s, self.windows.len(), &mut self.scratch);
                    if share < 1.0 {
                        for c in self.scratch[..m.template.n].iter_mut() {
                            c.iter_mut().for_each(|x| *x *= share);
                        }
                    }
                    m.template.place(p, &self.scratch[..m.template.n], &mut r);
                }
                None => {
                    // not affine between the windows: the plain graph at the mean context
                    // (whose expert-parallel groups take their share themselves)
                    let mean = (s.context / s.sequences as f64).round() as u64;
                    let step = Step::decode(s.sequences, mean.max(1));
                    r = add(r, class_pass(p, &step, Class::PerSequence));
                }
            }
        }
        if self.tables {
            r = add(r, self.table_chunks_pass());
        }
        let share = share_of(n_chunks);
        if let Some(t) = self
            .prefill
            .as_ref()
            .filter(|_| n_chunks > 0 && !self.tables)
        {
            if share < 1.0 {
                for c in self.prefill_costs[..t.n].iter_mut() {
                    c.iter_mut().for_each(|x| *x *= share);
                }
            }
            t.place(p, &self.prefill_costs[..t.n], &mut r);
            self.prefill_costs[..t.n].fill([0.0; 8]);
        }
        p.finish_pass(r, s.sequences + n_chunks + verify.sequences, tokens, 0.0)
    }
}

impl IterationCost<'_, '_> {
    /// On kernel tables: the per-sequence ops of the iteration's prefill chunks, each
    /// group of chunks of one `(new tokens, context)` as one pass of its sequences
    /// (whose expert-parallel groups take their share themselves), and a fresh start.
    fn table_chunks_pass(&mut self) -> PassResult {
        let p = self.p;
        if self.table_chunk_costs.len() >= MAP_ENTRIES {
            self.table_chunk_costs.clear();
        }
        let mut r = PassResult::default();
        self.table_chunks.sort_unstable();
        for group in self.table_chunks.chunk_by(|a, b| a == b) {
            let ((c, k), n) = (group[0], group.len() as u64);
            let placed = *self.table_chunk_costs.entry((c, k, n)).or_insert_with(|| {
                let step = Step {
                    context: k,
                    ..Step::prefill(n, c)
                };
                class_pass(p, &step, Class::PerSequence)
            });
            r = add(r, placed);
        }
        self.table_chunks.clear();
        r
    }
}

fn add(a: PassResult, b: PassResult) -> PassResult {
    let mut by_bound = a.by_bound;
    for (x, y) in by_bound.iter_mut().zip(b.by_bound) {
        *x += y;
    }
    PassResult {
        flops: a.flops + b.flops,
        bytes: a.bytes + b.bytes,
        weight_bytes: a.weight_bytes + b.weight_bytes,
        kv_bytes: a.kv_bytes + b.kv_bytes,
        time_s: a.time_s + b.time_s,
        roofline_time_s: a.roofline_time_s + b.roofline_time_s,
        by_bound,
        ep_comm_s: a.ep_comm_s + b.ep_comm_s,
        measured_launches: a.measured_launches + b.measured_launches,
        // one attention launch per layer in the count, however many parts place it
        measured_attention: a.measured_attention.max(b.measured_attention),
    }
}

#[cfg(test)]
mod tests;
