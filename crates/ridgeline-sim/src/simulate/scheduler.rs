//! One engine instance under continuous batching, as vLLM's V1 scheduler runs it:
//! every iteration the running requests (in admission order) take the tokens they
//! need (one for a decode, a chunk for a prompt) from the token budget
//! (`max_batched_tokens`), then waiting requests are admitted first come, first served
//! while the budget, `max_num_seqs` and the KV cache allow. A running request that
//! needs a KV block when none is free preempts the most recently admitted request,
//! which loses its cache and is prefilled again later (recompute), ahead of the queue.
//!
//! The KV cache is the device memory left after the weights, the activation workspace
//! of a full token budget and the engine's overhead and reserve ([`KvPool`]); a
//! sequence holds its cache rounded up to whole blocks of `kv_block_tokens`. A prefix
//! hit of `f` means the first `floor(f x prompt)` prompt tokens (whole blocks, at least
//! one token left to compute) are found cached at admission: they are not prefilled,
//! but the sequence still holds their blocks (no sharing between sequences is assumed).

use crate::error::{Error, Result};
use crate::memory::CacheBytes;
use crate::predict::{IterationCost, PassResult, Predictor};
use std::collections::VecDeque;

/// Scheduler limits of one instance.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    /// Most sequences per iteration (`u64::MAX`: no limit but the KV cache).
    pub max_num_seqs: u64,
    /// Token budget of an iteration (`u64::MAX`: none; whole prompts at once).
    pub max_batched_tokens: u64,
    /// Tokens per KV block (1: token-granular).
    pub block_tokens: u64,
}

/// The KV cache of one device: its size, and a sequence's bytes at a context.
#[derive(Debug, Clone)]
pub(crate) struct KvPool {
    /// Bytes the cache may use on the most loaded device.
    pub pool_bytes: f64,
    /// Per-sequence bytes by context: the memory model's line
    /// ([`Predictor::sequence_cache`]; `None`: a pipeline, the memory model answers
    /// each time).
    line: Option<CacheBytes>,
}

impl KvPool {
    /// The pool of predictor `p` under `limits`; an error names the device when the
    /// weights and workspace leave no room for one block.
    pub(crate) fn new(p: &Predictor<'_>, limits: &Limits) -> Result<KvPool> {
        let b = limits.max_num_seqs.clamp(1, 256);
        let budget = limits.max_batched_tokens.min(1 << 20);
        let m = p.memory(b, budget.div_ceil(b), 0).0;
        let pool_bytes = m.capacity_bytes - m.weights_bytes - m.activation_bytes - m.overhead_bytes;
        let block_bytes = limits.block_tokens as f64 * p.kv_bytes_per_token();
        if !(pool_bytes >= block_bytes && block_bytes > 0.0
            || block_bytes == 0.0 && pool_bytes > 0.0)
        {
            return Err(Error::conflict(
                &["model", "gpu"],
                format!(
                    "{} on {} leaves {:.2} GB for the KV cache after the weights ({:.2} GB), the workspace and the engine's reserve: not one block",
                    p.model.id,
                    p.hardware.id,
                    pool_bytes.max(0.0) / 1e9,
                    m.weights_bytes / 1e9
                ),
            ));
        }
        Ok(KvPool {
            pool_bytes,
            line: p.sequence_cache(),
        })
    }

    /// Bytes one sequence of `tokens` tokens holds, its context rounded up to whole
    /// blocks.
    pub(crate) fn bytes(&self, p: &Predictor<'_>, tokens: u64, block_tokens: u64) -> f64 {
        let l = tokens.div_ceil(block_tokens).saturating_mul(block_tokens);
        match &self.line {
            Some(line) => line.at(l as f64),
            None => p.memory(1, l, 0).0.kv_cache_bytes,
        }
    }
}

/// A request inside an instance.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Req {
    /// Index of the request in the workload.
    pub id: u64,
    /// Arrival time, s.
    pub arrival_s: f64,
    /// Prompt tokens (at least 1).
    pub prompt: u64,
    /// Output tokens wanted (at least 1).
    pub gen_tokens: u64,
    /// Output tokens made so far.
    pub generated: u64,
    /// Tokens whose KV is in this instance's cache.
    pub computed: u64,
    /// Prompt tokens found in the prefix cache at (re)admission.
    pub cached: u64,
    /// Cache bytes held, and the context they cover.
    pub kv_bytes: f64,
    /// Context the held bytes cover.
    pub kv_tokens: u64,
    /// When it was first admitted (NaN: not yet).
    pub first_scheduled_s: f64,
    /// When its first token was made (NaN: not yet).
    pub first_token_s: f64,
    /// Time its KV spent on the link (disaggregation), s.
    pub transfer_s: f64,
    /// With speculative decoding: the fraction of a token its verify passes have made
    /// beyond the whole tokens counted (each pass yields `tokens_per_verify` on average).
    pub spec_credit: f64,
}

impl Req {
    /// A new request of `prompt` and `gen_tokens` tokens arriving at `arrival_s`.
    pub(crate) fn new(id: u64, arrival_s: f64, prompt: u64, gen_tokens: u64) -> Req {
        Req {
            id,
            arrival_s,
            prompt: prompt.max(1),
            gen_tokens: gen_tokens.max(1),
            generated: 0,
            computed: 0,
            cached: 0,
            kv_bytes: 0.0,
            kv_tokens: 0,
            first_scheduled_s: f64::NAN,
            first_token_s: f64::NAN,
            transfer_s: 0.0,
            // the carry of whole tokens is spread evenly over [0, 1) in steady state: a
            // request starts at its mean, so that n tokens take n / tokens_per_verify
            // passes on average, not one more
            spec_credit: 0.5,
        }
    }

    /// Tokens known (prompt and generated): what the cache must hold before the next
    /// token can be made.
    pub(crate) fn known(&self) -> u64 {
        self.prompt + self.generated
    }
}

/// Why the head of the queue was not admitted in an iteration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Blocker {
    /// `max_num_seqs` sequences were running.
    MaxNumSeqs,
    /// The token budget was spent.
    TokenBudget,
    /// No KV blocks were free.
    KvCache,
}

/// What one iteration did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Iteration {
    /// Its pass.
    pub pass: PassResult,
    /// Sequences in it.
    pub batch: u64,
    /// Tokens in it.
    pub tokens: u64,
    /// What kept the queue waiting (`None`: nobody waited).
    pub blocker: Option<Blocker>,
}

/// One engine instance: its queue, running batch and KV cache.
#[derive(Debug, Clone)]
pub(crate) struct Instance<'p, 'a> {
    /// The iteration cost model.
    pub cost: IterationCost<'p, 'a>,
    /// The KV cache.
    pub kv: KvPool,
    /// Limits.
    pub limits: Limits,
    /// Prefix-cache hit fraction.
    pub prefix_hit: f64,
    /// Requests leave when their first token is made (a prefill pool).
    pub prefill_only: bool,
    reqs: Vec<Option<Req>>,
    free_slots: Vec<usize>,
    waiting: VecDeque<usize>,
    running: Vec<usize>,
    used_bytes: f64,
    scheduled: Vec<(usize, u64)>,
    /// With speculative decoding: tokens per verify pass on average, and the draft
    /// tokens a verify pass writes to the cache beyond the one it makes for sure.
    spec: Option<(f64, u64)>,
    /// Preemptions so far.
    pub preemptions: u64,
    /// Highest fraction of the pool in use.
    pub kv_peak_fraction: f64,
}

impl<'p, 'a> Instance<'p, 'a> {
    /// An idle instance.
    pub(crate) fn new(p: &'p Predictor<'a>, limits: Limits, prefix_hit: f64) -> Result<Self> {
        Ok(Instance {
            kv: KvPool::new(p, &limits)?,
            cost: IterationCost::new(p),
            spec: p.speculation().map(|s| (s.tokens_per_verify(), s.k)),
            limits,
            prefix_hit,
            prefill_only: false,
            reqs: Vec::new(),
            free_slots: Vec::new(),
            waiting: VecDeque::new(),
            running: Vec::new(),
            used_bytes: 0.0,
            scheduled: Vec::new(),
            preemptions: 0,
            kv_peak_fraction: 0.0,
        })
    }

    /// Whether a request of `tokens` tokens fits in the empty cache.
    pub(crate) fn can_ever_hold(&self, tokens: u64) -> bool {
        self.bytes(tokens) <= self.kv.pool_bytes
    }

    fn bytes(&self, tokens: u64) -> f64 {
        self.kv
            .bytes(self.cost.predictor(), tokens, self.limits.block_tokens)
    }

    /// Queues a request (at the back).
    pub(crate) fn enqueue(&mut self, r: Req) {
        let slot = match self.free_slots.pop() {
            Some(s) => {
                self.reqs[s] = Some(r);
                s
            }
            None => {
                self.reqs.push(Some(r));
                self.reqs.len() - 1
            }
        };
        self.waiting.push_back(slot);
    }

    /// Whether anything is queued or running.
    pub(crate) fn busy(&self) -> bool {
        !self.waiting.is_empty() || !self.running.is_empty()
    }

    /// Requests waiting to be admitted.
    pub(crate) fn waiting(&self) -> u64 {
        self.waiting.len() as u64
    }

    /// Fraction of the pool in use.
    pub(crate) fn kv_fraction(&self) -> f64 {
        if self.kv.pool_bytes > 0.0 {
            self.used_bytes / self.kv.pool_bytes
        } else {
            0.0
        }
    }

    fn req(&mut self, slot: usize) -> &mut Req {
        self.reqs[slot].as_mut().expect("a live slot")
    }

    /// Grows (or sets) the cache `slot` holds to cover `tokens` tokens; false when the
    /// free bytes do not allow it.
    #[inline]
    fn reserve(&mut self, slot: usize, tokens: u64) -> bool {
        let (held_tokens, held_bytes) = {
            let r = self.req(slot);
            (r.kv_tokens, r.kv_bytes)
        };
        if tokens <= held_tokens {
            return true;
        }
        let bytes = self.bytes(tokens);
        let more = bytes - held_bytes;
        if self.used_bytes + more > self.kv.pool_bytes * (1.0 + 1e-12) {
            return false;
        }
        self.used_bytes += more;
        let bt = self.limits.block_tokens;
        let r = self.req(slot);
        r.kv_bytes = bytes;
        r.kv_tokens = tokens.div_ceil(bt).saturating_mul(bt);
        true
    }

    fn release(&mut self, slot: usize) {
        let r = self.req(slot);
        let freed = r.kv_bytes;
        r.kv_bytes = 0.0;
        r.kv_tokens = 0;
        self.used_bytes = (self.used_bytes - freed).max(0.0);
    }

    fn preempt(&mut self, slot: usize) {
        self.release(slot);
        let r = self.req(slot);
        r.computed = 0;
        self.waiting.push_front(slot);
        self.preemptions += 1;
    }

    /// Prompt tokens a prefix cache serves on admission: whole blocks of
    /// `floor(prefix_hit x prompt)`, leaving at least one token to compute.
    fn cached_tokens(&self, r: &Req) -> u64 {
        let bt = self.limits.block_tokens;
        let hit = (self.prefix_hit * r.prompt as f64).floor() as u64;
        (hit / bt * bt).min(r.known() - 1)
    }
}

impl Instance<'_, '_> {
    /// Forms the iteration starting at `now` and returns its cost (`None`: nothing to
    /// run).
    pub(crate) fn start(&mut self, now: f64) -> Option<Iteration> {
        self.scheduled.clear();
        let mut budget = self.limits.max_batched_tokens;
        let preempted = self.schedule_running(&mut budget);
        let mut blocker = None;
        if !preempted {
            blocker = self.admit(&mut budget);
        } else if !self.waiting.is_empty() {
            blocker = Some(Blocker::KvCache);
        }
        if self.scheduled.is_empty() {
            return None;
        }
        self.kv_peak_fraction = self.kv_peak_fraction.max(self.kv_fraction());
        let mut tokens = 0;
        for i in 0..self.scheduled.len() {
            let (slot, n) = self.scheduled[i];
            let r = self.req(slot);
            if r.first_scheduled_s.is_nan() {
                r.first_scheduled_s = now;
            }
            let ctx = r.computed + n;
            self.cost.add_chunk(n, ctx);
            tokens += n;
        }
        Some(Iteration {
            pass: self.cost.finish(),
            batch: self.scheduled.len() as u64,
            tokens,
            blocker,
        })
    }

    /// Schedules the running requests; true when one was preempted.
    fn schedule_running(&mut self, budget: &mut u64) -> bool {
        let mut preempted = false;
        let mut i = 0;
        while i < self.running.len() && *budget > 0 {
            let slot = self.running[i];
            let (known, computed) = {
                let r = self.req(slot);
                (r.known(), r.computed)
            };
            let n = (known - computed).min(*budget);
            // a verify pass writes its drafts' cache too
            let drafts = match self.spec {
                Some((_, k)) if n == 1 && computed > 0 => k,
                _ => 0,
            };
            while !self.reserve(slot, computed + n + drafts) {
                preempted = true;
                let victim = self.running.pop().expect("the request itself is running");
                self.preempt(victim);
                if victim == slot {
                    break;
                }
            }
            if self.running.get(i) != Some(&slot) {
                break;
            }
            self.scheduled.push((slot, n));
            *budget -= n;
            i += 1;
        }
        preempted
    }

    /// Admits waiting requests first come, first served; returns what stopped the
    /// queue (`None`: it emptied).
    fn admit(&mut self, budget: &mut u64) -> Option<Blocker> {
        while let Some(&slot) = self.waiting.front() {
            if self.running.len() as u64 >= self.limits.max_num_seqs {
                return Some(Blocker::MaxNumSeqs);
            }
            if *budget == 0 {
                return Some(Blocker::TokenBudget);
            }
            let mut r = *self.req(slot);
            if r.computed == 0 {
                r.cached = self.cached_tokens(&r);
                r.computed = r.cached;
            }
            let n = (r.known() - r.computed).min(*budget);
            *self.req(slot) = r;
            if !self.reserve(slot, r.computed + n) {
                return Some(Blocker::KvCache);
            }
            self.waiting.pop_front();
            self.running.push(slot);
            self.scheduled.push((slot, n));
            *budget -= n;
        }
        None
    }

    /// Ends the iteration at `t`: tokens made, requests finished (returned to `done`:
    /// every output token made, or with [`Instance::prefill_only`] the first).
    pub(crate) fn finish(&mut self, t: f64, done: &mut Vec<Req>) {
        let prefill_only = self.prefill_only;
        let spec = self.spec;
        let mut left = false;
        for i in 0..self.scheduled.len() {
            let (slot, n) = self.scheduled[i];
            let r = self.req(slot);
            let decoding = n == 1 && r.generated > 0;
            r.computed += n;
            if r.computed < r.known() {
                continue;
            }
            // a verify pass makes tokens_per_verify tokens on average: whole ones now,
            // the fraction carried to the next pass (the accepted drafts' cache is
            // computed with it)
            let made = match spec {
                Some((per_verify, _)) if decoding => {
                    let credit = r.spec_credit + per_verify;
                    let whole = (credit.floor() as u64).clamp(1, r.gen_tokens - r.generated);
                    r.spec_credit = (credit - whole as f64).max(0.0);
                    whole
                }
                _ => 1,
            };
            r.computed += made - 1;
            r.generated += made;
            if r.generated == 1 {
                r.first_token_s = t;
            }
            let leaves = r.generated >= r.gen_tokens || prefill_only;
            if leaves {
                let out = *r;
                self.release(slot);
                self.reqs[slot] = None;
                self.free_slots.push(slot);
                done.push(out);
                left = true;
            }
        }
        if left {
            let reqs = &self.reqs;
            self.running.retain(|&s| reqs[s].is_some());
            if self.running.is_empty() && self.waiting.is_empty() {
                self.used_bytes = 0.0;
            }
        }
        self.scheduled.clear();
    }
}
