//! One forward pass on the roofline: ops placed and summed into a [`PassResult`], the
//! per-pass terms (step overhead, pipeline sends, host offload), and the closed-form
//! sum of the decode steps of a generation.

use super::affine::{self, sum_max_affine};
use super::{CostSource, Predictor};
use crate::memory::Parallel;
use crate::model::graph::{Graph, OpInstance, Step};
use crate::roofline::{Bound, Placement};

/// Longest piece of a decode sum with kernel tables that is summed step by step
/// ([`Predictor::decode_with_sampled_sum`]).
const EXACT_STEPS: u64 = 8;

/// One part's decode ops at one batch and their placements
/// ([`Predictor::decode_step_memo`]).
struct PartMemo {
    graph: Graph,
    placed: Vec<(Placement, Option<CostSource>)>,
}

/// A pass a decode step is made of.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Part {
    /// A plain pass over its step, a prompt (or chunk) or a one-token decode step: no
    /// speculative decoding.
    Plain,
    /// The model checking `k` draft tokens: `k + 1` new tokens per sequence.
    Verify(u64),
    /// One draft step.
    Draft,
}

/// Time and work of one forward pass.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
#[non_exhaustive]
pub struct PassResult {
    /// FLOPs on one device.
    pub flops: f64,
    /// Memory bytes on one device.
    pub bytes: f64,
    /// Of which weight bytes.
    pub weight_bytes: f64,
    /// Of which KV-cache bytes (reads and writes).
    pub kv_bytes: f64,
    /// Predicted time, s.
    pub time_s: f64,
    /// Ideal roofline time, s.
    pub roofline_time_s: f64,
    /// Time by bound: compute, memory, communication, overhead.
    pub by_bound: [f64; 4],
    /// Of the time, the expert all-to-all's (dispatch and combine) not hidden behind
    /// the pass's other ops, s.
    pub ep_comm_s: f64,
    /// Of the kernels the pass launches in its layers, those the per-layer overhead
    /// is not paid for (when the pass is finished): on the kernel tables, those whose
    /// time a table gave (a measured time includes the kernel's launch) and the
    /// residual adds (run inside the next norm's kernel); attention apart.
    pub(crate) measured_launches: f64,
    /// The same of the attention kernels: a serving iteration places the attention of
    /// its decoding sequences and of each group of prompt chunks apart, and its layers
    /// count one attention launch each, so the iteration takes the largest of its
    /// parts' (the plain passes have one).
    pub(crate) measured_attention: f64,
}

impl PassResult {
    /// The bound that accounts for most of the time.
    pub fn bound(&self) -> Bound {
        const B: [Bound; 4] = [
            Bound::Compute,
            Bound::Memory,
            Bound::Communication,
            Bound::Overhead,
        ];
        let mut best = 1;
        for i in 0..4 {
            if self.by_bound[i] > self.by_bound[best] {
                best = i;
            }
        }
        B[best]
    }

    /// FLOP per byte of the whole pass.
    pub fn intensity(&self) -> f64 {
        if self.bytes > 0.0 {
            self.flops / self.bytes
        } else {
            0.0
        }
    }
}

/// Adds one placed op to a pass.
pub(super) fn accumulate(r: &mut PassResult, op: &OpInstance, p: &Placement) {
    r.flops += p.flops;
    r.bytes += p.bytes;
    r.weight_bytes += op.cost.read.weights * op.count;
    r.kv_bytes += (op.cost.read.kv + op.cost.written.kv) * op.count;
    r.time_s += p.time_s;
    r.roofline_time_s += p.roofline_time_s;
    r.by_bound[bound_index(p.bound)] += p.time_s;
    if op.kind.is_expert_all_to_all() {
        r.ep_comm_s += p.time_s;
    }
}

impl Predictor<'_> {
    /// [`accumulate`] for an op placed by [`Predictor::place_op_in`], counting the
    /// layers' kernel launches whose time the pass already holds
    /// ([`PassResult::measured_launches`]): on the kernel tables, an op a table gave its
    /// time ([`measured_launches`]), and the residual adds, which the engines that have
    /// tables (TensorRT-LLM, vLLM, SGLang) run inside the next norm's kernel
    /// (`fused_add_rms_norm`).
    pub(super) fn accumulate_in(
        &self,
        r: &mut PassResult,
        op: &OpInstance,
        (p, source): &(Placement, Option<CostSource>),
    ) {
        accumulate(r, op, p);
        if source.is_some() && op.kind.is_attention_core() {
            r.measured_attention += op.count;
        } else if source.is_some() {
            r.measured_launches += measured_launches(op);
        } else if self.kernels.is_some() && op.kind.is_residual() {
            r.measured_launches += op.count;
        }
    }
}

/// The kernel launches of the layers' kernel count ([`super::launch::layer_kernels`])
/// that `op`'s executions stand for, when a kernel table gives its time: one per
/// execution of a weight matmul, an attention or one of a routed-expert block's three
/// kernels; none for the tensor-parallel all-reduces (they pay their own latency,
/// not the per-layer overhead) and the language-model head (not a layer's).
pub(super) fn measured_launches(op: &OpInstance) -> f64 {
    use crate::model::graph::OpKind as K;
    match op.kind {
        K::AllreduceAttn | K::AllreduceMlp | K::LmHead => 0.0,
        _ => op.count,
    }
}

/// Of `launches` (in dense layers' worth, [`super::launch::launch_layers`]), those
/// left once `measured` kernel launches are paid for already.
fn unpaid(launches: f64, measured: f64) -> f64 {
    (launches - measured / super::launch::DENSE_LAYER_KERNELS as f64).max(0.0)
}

pub(super) fn bound_index(b: Bound) -> usize {
    match b {
        Bound::Compute => 0,
        Bound::Memory => 1,
        Bound::Communication => 2,
        Bound::Overhead => 3,
    }
}

impl Predictor<'_> {
    /// Per-pass overhead: step, per layer (more where the pass runs more `tokens` than
    /// `sequences`, [`crate::engine::Overheads::prefill_layer_overhead_s`]) and per
    /// sequence (host work for each of the pass's `sequences`), plus pipeline sends
    /// between stages of `tokens` activations. `measured` of the layers' kernel
    /// launches are paid for already ([`PassResult::measured_launches`]): the per-layer
    /// overhead is paid for the others.
    pub(super) fn pass_overhead(&self, sequences: u64, tokens: u64, measured: f64) -> (f64, f64) {
        let launches = unpaid(self.launch_layers, measured);
        let overhead = self.engine.overheads.step_overhead_s
            + self.layers_overhead(sequences, tokens, launches, self.layers)
            + self.engine.overheads.sequence_overhead_s * sequences as f64
            + self.expert_loop_s(tokens);
        let mut comm = 0.0;
        if self.parallel == Parallel::Pp && self.gpus > 1 {
            let bytes =
                tokens as f64 * self.model.hidden as f64 * self.precision.activations.bytes();
            // consecutive stages: the sends between scale-up domains cross the network
            let crossing = self.gpus.div_ceil(self.hardware.domain_devices()) - 1;
            let inside = self.gpus - 1 - crossing;
            let send =
                |bw: f64| bytes / (bw * self.eff.link) + self.engine.overheads.collective_latency_s;
            comm = inside as f64 * send(self.link_bw) + crossing as f64 * send(self.network_bw);
        }
        (overhead, comm)
    }

    /// The engine's time for the layers of a pass of `tokens` tokens over `sequences`
    /// sequences, `launches` of them in dense layers' worth of kernel launches
    /// ([`super::launch::launch_layers`]) and `layers` in all:
    /// [`crate::engine::Overheads::layer_overhead_s`] per dense layer's launches, plus
    /// [`crate::engine::Overheads::prefill_layer_overhead_s`] per layer for a prompt pass
    /// (more tokens than sequences; decode steps and verification passes are finished
    /// with their sequences as their tokens). On the kernel tables each of the
    /// `launches` kernels also takes the table's shortest measured kernel
    /// ([`crate::kernels::Table::shortest_kernel_s`]): what a kernel costs whatever its
    /// work, which its roofline time lacks.
    pub(super) fn layers_overhead(
        &self,
        sequences: u64,
        tokens: u64,
        launches: f64,
        layers: u64,
    ) -> f64 {
        let e = &self.engine.overheads;
        let prompt = if tokens > sequences {
            e.prefill_layer_overhead_s * layers as f64
        } else {
            0.0
        };
        // on the kernel tables a kernel they do not cover takes at least the shortest
        // measured one (its launch and ramp, which its roofline time lacks)
        let floor =
            self.kernels().map_or(0.0, |k| k.launch_s) * super::launch::DENSE_LAYER_KERNELS as f64;
        (e.layer_overhead_s + floor) * launches + prompt
    }

    /// The engine's per-expert cost of a pass of `tokens` tokens
    /// ([`crate::engine::Overheads::expert_overhead_s`]): every expert matrix of this
    /// device's experts that some token is routed to, on the GEMM path (more than
    /// [`crate::engine::GEMV_MAX_TOKENS`] tokens). With `k` of `E` experts per token,
    /// routed uniformly, an expert has a token with probability `1 - (1 - k/E)^tokens`;
    /// a device holds `E / ep` of them.
    pub(super) fn expert_loop_s(&self, tokens: u64) -> f64 {
        if self.expert_matrix_s == 0.0 || tokens <= crate::engine::GEMV_MAX_TOKENS {
            return 0.0;
        }
        let m = self.model;
        let visited = crate::model::graph::expected_experts(
            m.experts,
            m.experts_per_token.min(m.experts),
            tokens,
        );
        self.expert_matrix_s * visited / self.ep.max(1) as f64
    }

    /// Bytes a pass of `tokens` tokens streams from host memory when `offloaded` bytes
    /// of weights live there. Offload moves the routed experts first (as llama.cpp's
    /// `--n-cpu-moe` and the engines' expert offload do), and a pass streams only the
    /// experts its tokens are routed to: with `k` of `E` per token, a fraction
    /// `expected_experts(E, k, tokens) / E` of them (2 of 8 for Mixtral at batch 1);
    /// whatever else is offloaded streams whole.
    pub(super) fn streamed_bytes(&self, offloaded: f64, tokens: u64) -> f64 {
        if offloaded <= 0.0 {
            return 0.0;
        }
        let m = self.model;
        let experts = offloaded.min(self.routed_expert_bytes);
        let touched = if m.experts > 1 {
            crate::model::graph::expected_experts(m.experts, m.experts_per_token, tokens)
                / m.experts as f64
        } else {
            1.0
        };
        experts * touched + (offloaded - experts)
    }

    /// Time of the host stream of a pass of `tokens` tokens ([`Predictor::streamed_bytes`]):
    /// (predicted, ideal) seconds.
    pub(super) fn offload_time(&self, offloaded: f64, tokens: u64) -> (f64, f64) {
        self.stream_time(self.streamed_bytes(offloaded, tokens))
    }

    /// Time of streaming `bytes` over the host link: (predicted, ideal) seconds.
    pub(super) fn stream_time(&self, bytes: f64) -> (f64, f64) {
        if bytes > 0.0 && self.host_bw > 0.0 {
            (bytes / (self.host_bw * self.eff.link), bytes / self.host_bw)
        } else {
            (0.0, 0.0)
        }
    }

    /// Evaluates one forward pass.
    pub fn pass(&self, step: &Step, offloaded: f64) -> PassResult {
        match self.pass_ops(step) {
            Some(r) => self.finish_pass(
                r,
                step.batch,
                step.batch.saturating_mul(step.new_tokens),
                offloaded,
            ),
            None => PassResult::default(),
        }
    }

    /// The passes of the prefill of `batch` sequences of `prompt` tokens as the engine
    /// runs it, each with how many times it runs: passes of at most the engine's
    /// `max_batched_tokens` tokens (llama.cpp's physical batch, vLLM's chunked
    /// prefill), each re-reading the weights. Whole prompts go as many sequences to a
    /// pass as the budget holds; a longer prompt goes in chunks attending to the context
    /// before them (logits on the last only), one sequence at a time. Without a budget,
    /// or within it, one pass ([`Step::prefill`]).
    ///
    /// With expert parallelism (`ep` groups, attention data-parallel) each group is a
    /// scheduler of its own (SGLang's and TensorRT-LLM's DP attention ranks): the budget
    /// holds per group, a pass carries up to `ep` groups' share, and the sequences of
    /// the batch are spread over the groups (`batch / ep` each, rounded up).
    pub fn prefill_chunks(&self, batch: u64, prompt: u64, mut each: impl FnMut(&Step, f64)) {
        let budget = self.prefill_budget();
        let lanes = self.ep.max(1);
        if prompt == 0 || batch.div_ceil(lanes).saturating_mul(prompt) <= budget {
            return each(&Step::prefill(batch, prompt), 1.0);
        }
        if prompt <= budget {
            let per = (budget / prompt).saturating_mul(lanes);
            each(&Step::prefill(per, prompt), (batch / per) as f64);
            if !batch.is_multiple_of(per) {
                each(&Step::prefill(batch % per, prompt), 1.0);
            }
            return;
        }
        let together = lanes.min(batch);
        let mut done = 0;
        while done < prompt {
            let n = budget.min(prompt - done);
            done += n;
            let step = Step {
                batch: together,
                new_tokens: n,
                context: done,
                logits_per_sequence: u64::from(done == prompt),
                decode: false,
                all_tokens: None,
            };
            each(&step, batch as f64 / together as f64);
        }
    }

    /// The engine's token budget of one prefill pass per scheduler (`max_batched_tokens`,
    /// at least 1; none: unbounded).
    fn prefill_budget(&self) -> u64 {
        self.engine
            .scheduler
            .max_batched_tokens
            .unwrap_or(u64::MAX)
            .max(1)
    }

    /// Whether the prefill of `batch` x `prompt` runs in more than one pass (see
    /// [`Self::prefill_chunks`]).
    pub fn prefill_is_chunked(&self, batch: u64, prompt: u64) -> bool {
        prompt > 0 && batch.div_ceil(self.ep.max(1)).saturating_mul(prompt) > self.prefill_budget()
    }

    /// The prefill of `batch` sequences of `prompt` tokens: its passes
    /// ([`Self::prefill_chunks`]) summed.
    pub fn prefill_pass(&self, batch: u64, prompt: u64, offloaded: f64) -> PassResult {
        let mut r = PassResult::default();
        if !self.prefill_is_chunked(batch, prompt) {
            return self.pass(&Step::prefill(batch, prompt), offloaded);
        }
        // the chunks share their ops but attention: placed once ([`Self::part_ops_memo`])
        let mut kept = None;
        self.prefill_chunks(batch, prompt, |step, w| {
            if let Some(ops) = self.part_ops_memo(Part::Plain, step, &mut kept) {
                let tokens = step.batch.saturating_mul(step.new_tokens);
                r.add_scaled(&self.finish_pass(ops, step.batch, tokens, offloaded), w);
            }
        });
        r
    }

    /// One decode step at `context`: the plain step, or with speculative decoding the
    /// cost per output token (verify pass and drafts over tokens per verify).
    pub(crate) fn decode_step(&self, batch: u64, context: u64, offloaded: f64) -> PassResult {
        let (parts, n) = self.decode_parts();
        let step = Step::decode(batch, context);
        let mut r = PassResult::default();
        for &(part, w) in &parts[..n] {
            if let Some(ops) = self.part_ops(part, &step) {
                r.add_scaled(&self.finish_part(part, ops, batch, batch, offloaded), w);
            }
        }
        r
    }

    /// [`Predictor::decode_step`] for the steps of one batch at many contexts, each
    /// part's placements kept in `memo` ([`Predictor::part_ops_memo`]): the same
    /// result, bit for bit.
    fn decode_step_memo(
        &self,
        batch: u64,
        context: u64,
        offloaded: f64,
        memo: &mut [Option<PartMemo>; 2],
    ) -> PassResult {
        let (parts, n) = self.decode_parts();
        let step = Step::decode(batch, context);
        let mut r = PassResult::default();
        for (&(part, w), kept) in parts[..n].iter().zip(memo.iter_mut()) {
            if let Some(ops) = self.part_ops_memo(part, &step, kept) {
                r.add_scaled(&self.finish_part(part, ops, batch, batch, offloaded), w);
            }
        }
        r
    }

    /// [`Predictor::part_ops`] for one of many passes that differ only in their
    /// context (the decode steps of one batch, the chunks of one prompt): the ops placed
    /// at the first are kept in `kept`, and at the next an op that is the same (every
    /// op but attention: its cost, and on the kernel tables its shape, depend on the
    /// pass's tokens alone) takes its kept placement instead of another table lookup.
    /// The same result as `part_ops`, bit for bit.
    fn part_ops_memo(
        &self,
        part: Part,
        step: &Step,
        kept: &mut Option<PartMemo>,
    ) -> Option<PassResult> {
        let g = self.part_graph(part, step);
        if g.ops().is_empty() {
            return None;
        }
        let mut ops = PassResult::default();
        match kept {
            Some(m) if m.graph.ops().len() == g.ops().len() => {
                for ((op, was), placed) in g.ops().iter().zip(m.graph.ops()).zip(&m.placed) {
                    if op == was && !op.kind.is_attention_core() {
                        self.accumulate_in(&mut ops, op, placed);
                    } else {
                        self.accumulate_in(&mut ops, op, &self.place_op_in(op, part, step));
                    }
                }
            }
            _ => {
                let placed: Vec<(Placement, Option<CostSource>)> = g
                    .ops()
                    .iter()
                    .map(|op| self.place_op_in(op, part, step))
                    .collect();
                for (op, pl) in g.ops().iter().zip(&placed) {
                    self.accumulate_in(&mut ops, op, pl);
                }
                *kept = Some(PartMemo { graph: g, placed });
            }
        }
        Some(ops)
    }

    /// The per-op part of a pass (`None`: the graph is empty, e.g. a prefill of 0 tokens).
    pub(super) fn pass_ops(&self, step: &Step) -> Option<PassResult> {
        self.part_ops(Part::Plain, step)
    }

    /// The per-op part of one pass of `part`.
    pub(super) fn part_ops(&self, part: Part, step: &Step) -> Option<PassResult> {
        let g = self.part_graph(part, step);
        let mut r = PassResult::default();
        for op in g.ops() {
            self.accumulate_in(&mut r, op, &self.place_op_in(op, part, step));
        }
        if g.ops().is_empty() { None } else { Some(r) }
    }

    /// [`Predictor::finish_pass`] for a pass of `part`: a draft step pays the engine's
    /// step and per-layer overheads for its own layers (the draft's pass over the
    /// prompt the prompt passes' per-layer overhead), and no pipeline sends or
    /// offload.
    pub(super) fn finish_part(
        &self,
        part: Part,
        mut r: PassResult,
        sequences: u64,
        tokens: u64,
        offloaded: f64,
    ) -> PassResult {
        if part != Part::Draft {
            return self.finish_pass(r, sequences, tokens, offloaded);
        }
        r = self.hide_expert_comm(r);
        let overhead = self.draft_overhead(
            sequences,
            tokens,
            r.measured_launches + r.measured_attention,
        );
        r.time_s += overhead;
        r.by_bound[3] += overhead;
        r
    }

    /// A draft step's overhead, `measured` of its launches paid for already (as
    /// [`Predictor::pass_overhead`]'s).
    fn draft_overhead(&self, sequences: u64, tokens: u64, measured: f64) -> f64 {
        let launches = unpaid(self.draft_launch_layers, measured);
        self.engine.overheads.step_overhead_s
            + self.layers_overhead(sequences, tokens, launches, self.draft_layers())
    }

    /// One decode step at context `mid` and the sums of the (predicted, ideal) step
    /// times over the steps at contexts `lo..=hi`, in one walk over the graph.
    ///
    /// The sum is in closed form: every op's compute, memory and link times are affine
    /// in the context `L`, so each op's time is the max of three lines, and the sum over
    /// integer `L` splits at the lines' crossings into arithmetic series
    /// ([`sum_max_affine`]). Ops whose cost does not depend on the context are placed
    /// once, not three times.
    ///
    /// A sliding window makes its attention affine only up to the window (constant
    /// beyond), so the sum is taken piecewise between the model's windows.
    pub(crate) fn decode_with_sum(
        &self,
        batch: u64,
        mid: u64,
        lo: u64,
        hi: u64,
        offloaded: f64,
    ) -> (PassResult, f64, f64) {
        // kernel tables are not affine in the context, nor is a step that hides its
        // all-to-all (the max of two sums): their steps are sampled
        if self.kernels.is_some() || self.overlap_ep {
            return self.decode_with_sampled_sum(batch, mid, lo, hi, offloaded);
        }
        if let Some(c) = self.chunk {
            return self.decode_with_chunked_sum(batch, mid, lo, hi, offloaded, c);
        }
        let mut kinks = self.windows.iter().copied().filter(|&w| w >= lo && w < hi);
        let Some(first) = kinks.next() else {
            return self.decode_with_affine_sum(batch, mid, lo, hi, offloaded);
        };
        let (step, mut pred, mut ideal) =
            self.decode_with_affine_sum(batch, mid, lo, first, offloaded);
        let mut start = first + 1;
        for end in kinks.chain(std::iter::once(hi)) {
            let (_, p, i) = self.decode_with_affine_sum(batch, start, start, end, offloaded);
            pred += p;
            ideal += i;
            start = end + 1;
        }
        (step, pred, ideal)
    }

    /// [`Predictor::decode_with_sum`] with kernel tables, whose efficiencies are not
    /// affine in the context (linear in its logarithm between measured points): the
    /// contexts split at the powers of two, the model's windows and the multiples of
    /// its attention chunk; a piece of up to [`EXACT_STEPS`] steps is summed step by
    /// step, a longer one by Simpson's rule over its ends and its middle (exact where
    /// the step time is affine or quadratic in the context, as between those cuts it
    /// nearly is).
    fn decode_with_sampled_sum(
        &self,
        batch: u64,
        mid: u64,
        lo: u64,
        hi: u64,
        offloaded: f64,
    ) -> (PassResult, f64, f64) {
        let memo = std::cell::RefCell::new([None, None]);
        let at = |c: u64| self.decode_step_memo(batch, c, offloaded, &mut memo.borrow_mut());
        let (mut pred, mut ideal) = (0.0, 0.0);
        let mut add = |r: &PassResult, w: f64| {
            pred += w * r.time_s;
            ideal += w * r.roofline_time_s;
        };
        let mut start = lo;
        while start <= hi {
            let mut end = hi.min(start.checked_next_power_of_two().unwrap_or(u64::MAX));
            if end == start && start < hi {
                end = hi.min(start.saturating_mul(2));
            }
            for &w in &self.windows {
                if w >= start && w < end {
                    end = w;
                }
            }
            if let Some(c) = self.chunk {
                end = end.min(((start - 1) / c + 1) * c);
            }
            let n = end - start + 1;
            if n <= EXACT_STEPS {
                for c in start..=end {
                    add(&at(c), 1.0);
                }
            } else {
                // an odd number of steps, so that the middle is a context
                let (a, b) = if n.is_multiple_of(2) {
                    add(&at(end), 1.0);
                    (start, end - 1)
                } else {
                    (start, end)
                };
                let w = (b - a + 1) as f64 / 6.0;
                add(&at(a), w);
                add(&at(a + (b - a) / 2), 4.0 * w);
                add(&at(b), w);
            }
            start = end + 1;
        }
        (at(mid), pred, ideal)
    }

    /// [`Predictor::decode_with_sum`] for a chunked-attention model (chunks of `c`): a
    /// chunked layer's attention sees `((L - 1) mod c) + 1` keys, affine within each
    /// chunk `kc + 1 ..= (k + 1)c`, so the contexts split at the multiples of `c`; the
    /// whole chunks between the first and the last are summed at once
    /// ([`Predictor::periodic_sum`]), so the work does not grow with the generation.
    #[cold]
    #[inline(never)]
    fn decode_with_chunked_sum(
        &self,
        batch: u64,
        mid: u64,
        lo: u64,
        hi: u64,
        offloaded: f64,
        c: u64,
    ) -> (PassResult, f64, f64) {
        // the step at `mid` alone (an empty range)
        let (step, _, _) = self.decode_with_affine_sum(batch, mid, 1, 0, offloaded);
        if hi < lo {
            return (step, 0.0, 0.0);
        }
        let piece = |a: u64, b: u64| {
            let (_, p, i) = self.decode_with_affine_sum(batch, a, a, b, offloaded);
            (p, i)
        };
        // the first multiple of c at or above lo ends the first piece
        let first = lo.div_ceil(c).saturating_mul(c);
        if first >= hi {
            let (p, i) = piece(lo, hi);
            return (step, p, i);
        }
        let last = (hi - 1) / c * c;
        let (mut pred, mut ideal) = piece(lo, first);
        let periods = (last - first) / c;
        if periods > 0 {
            let (p, i) = self.periodic_sum(batch, first + 1, c, periods, offloaded);
            pred += p;
            ideal += i;
        }
        let (p, i) = piece(last + 1, hi);
        (step, pred + p, ideal + i)
    }

    /// The (predicted, ideal) sums of the decode steps at contexts `start ..
    /// start + periods·c - 1`, whole chunks of a chunked-attention model: an op whose
    /// cost is the same a chunk later depends on the context only within its chunk
    /// (a chunked layer's attention, or no dependence at all) and costs the same in
    /// every chunk; every other op (a global layer's attention) is affine over the
    /// whole range.
    #[inline(never)]
    fn periodic_sum(
        &self,
        batch: u64,
        start: u64,
        c: u64,
        periods: u64,
        offloaded: f64,
    ) -> (f64, f64) {
        let end = start + periods * c - 1;
        let n = (end - start + 1) as f64;
        let (parts, np) = self.decode_parts();
        let (mut pred, mut ideal) = (0.0, 0.0);
        for &(part, w) in &parts[..np] {
            let graph = |x| self.part_graph(part, &Step::decode(batch, x));
            let (ga, gb, gn, ge) = (
                graph(start),
                graph(start + c - 1),
                graph(start + c),
                graph(end),
            );
            let ops = ga.ops().iter().zip(gb.ops()).zip(gn.ops()).zip(ge.ops());
            for (((a, b), next), e) in ops {
                let pa = self.place_op(a);
                let (p, i) = if next.cost == a.cost {
                    let pb = self.place_op(b);
                    let (p, i) = self.op_sum(a, &pa, &pb, start, start + c - 1);
                    (periods as f64 * p, periods as f64 * i)
                } else {
                    let pe = self.place_op(e);
                    self.op_sum(a, &pa, &pe, start, end)
                };
                pred += w * p;
                ideal += w * i;
            }
            let (tail, tail_ideal) = self.part_sum_tail(part, batch, n, offloaded);
            pred += w * tail;
            ideal += w * tail_ideal;
        }
        (pred, ideal)
    }

    /// [`Predictor::decode_with_sum`] over a range where every op is affine in the
    /// context (each pass of a speculative step weighted by its passes per token).
    fn decode_with_affine_sum(
        &self,
        batch: u64,
        mid: u64,
        lo: u64,
        hi: u64,
        offloaded: f64,
    ) -> (PassResult, f64, f64) {
        let (parts, n) = self.decode_parts();
        let mut step = PassResult::default();
        let (mut pred, mut ideal) = (0.0, 0.0);
        for &(part, w) in &parts[..n] {
            let (r, p, i) = self.part_affine_sum(part, batch, mid, lo, hi, offloaded);
            step.add_scaled(&r, w);
            pred += w * p;
            ideal += w * i;
        }
        (step, pred, ideal)
    }

    /// One pass of `part` at `mid` and its sums over `lo..=hi`.
    fn part_affine_sum(
        &self,
        part: Part,
        batch: u64,
        mid: u64,
        lo: u64,
        hi: u64,
        offloaded: f64,
    ) -> (PassResult, f64, f64) {
        let graph = |x| self.part_graph(part, &Step::decode(batch, x));
        let gm = graph(mid);
        let have_sum = hi >= lo;
        let (gl, gh) = if have_sum {
            (graph(lo), graph(hi))
        } else {
            (gm, gm)
        };
        let mut r = PassResult::default();
        let (mut pred, mut ideal) = (0.0, 0.0);
        for ((m, a), b) in gm.ops().iter().zip(gl.ops()).zip(gh.ops()) {
            let pm = self.place_op(m);
            accumulate(&mut r, m, &pm);
            if have_sum {
                let pa = if a.cost == m.cost {
                    pm
                } else {
                    self.place_op(a)
                };
                let pb = if b.cost == a.cost {
                    pa
                } else if b.cost == m.cost {
                    pm
                } else {
                    self.place_op(b)
                };
                let (p, i) = self.op_sum(a, &pa, &pb, lo, hi);
                pred += p;
                ideal += i;
            }
        }
        let step = if gm.ops().is_empty() {
            PassResult::default()
        } else {
            self.finish_part(part, r, batch, batch, offloaded)
        };
        if !have_sum {
            return (step, 0.0, 0.0);
        }
        let n = (hi - lo + 1) as f64;
        let (tail, tail_ideal) = self.part_sum_tail(part, batch, n, offloaded);
        (step, pred + tail, ideal + tail_ideal)
    }

    /// The per-pass terms of `n` passes of `part` (the draft's overhead, or the decode
    /// step's: see [`Predictor::decode_sum_tail`]), (predicted, ideal).
    fn part_sum_tail(&self, part: Part, batch: u64, n: f64, offloaded: f64) -> (f64, f64) {
        if part == Part::Draft {
            (n * self.draft_overhead(batch, batch, 0.0), 0.0)
        } else {
            self.decode_sum_tail(batch, n, offloaded)
        }
    }

    /// Adds the per-pass terms (step, layer and sequence overheads, pipeline sends, host
    /// offload) to the per-op part of a pass over `sequences` sequences and `tokens`
    /// tokens.
    pub(super) fn finish_pass(
        &self,
        mut r: PassResult,
        sequences: u64,
        tokens: u64,
        offloaded: f64,
    ) -> PassResult {
        r = self.hide_expert_comm(r);
        let (overhead, comm) = self.pass_overhead(
            sequences,
            tokens,
            r.measured_launches + r.measured_attention,
        );
        let (off, off_ideal) = self.offload_time(offloaded, tokens);
        r.time_s += overhead + comm + off;
        r.by_bound[3] += overhead;
        r.by_bound[2] += comm + off;
        r.roofline_time_s += off_ideal;
        r
    }

    /// With [`Scenario::overlap_ep`](super::Scenario::overlap_ep), the pass `r`'s ops
    /// with its expert all-to-all hidden up to the time of its other ops (two
    /// micro-batches, each one's all-to-all beside the other's computation):
    /// `max(all-to-all, rest)` where they added up. The communication bound loses what
    /// is hidden; `ep_comm_s` keeps what is not.
    pub(super) fn hide_expert_comm(&self, mut r: PassResult) -> PassResult {
        if !self.overlap_ep || r.ep_comm_s <= 0.0 {
            return r;
        }
        let hidden = r.ep_comm_s.min((r.time_s - r.ep_comm_s).max(0.0));
        r.time_s -= hidden;
        r.ep_comm_s -= hidden;
        r.by_bound[2] = (r.by_bound[2] - hidden).max(0.0);
        r
    }

    /// One op's (predicted, ideal) time summed over contexts `lo..=hi`, from its
    /// placements at both ends (each term is affine in the context).
    pub(super) fn op_sum(
        &self,
        op: &OpInstance,
        pa: &Placement,
        pb: &Placement,
        lo: u64,
        hi: u64,
    ) -> (f64, f64) {
        let span = (hi - lo) as f64;
        let n = span + 1.0;
        if pa == pb {
            // the op does not depend on the context: every step costs the same
            return (n * pa.time_s, n * pa.roofline_time_s);
        }
        let line = |ya: f64, yb: f64| affine::through(lo as f64, span, ya, yb);
        let lines = [
            line(pa.compute_time_s, pb.compute_time_s),
            line(pa.memory_time_s, pb.memory_time_s),
            line(pa.link_time_s, pb.link_time_s),
        ];
        let pred = sum_max_affine(&lines, lo, hi) + pa.overhead_s * n;
        let c = self.ceilings(op);
        let [fa, ma, la] = c.ideal_terms(pa);
        let [fb, mb, lb] = c.ideal_terms(pb);
        let ideal = sum_max_affine(&[line(fa, fb), line(ma, mb), line(la, lb)], lo, hi);
        (pred, ideal)
    }

    /// The per-pass terms of `n` decode steps: (predicted, ideal) seconds.
    pub(super) fn decode_sum_tail(&self, batch: u64, n: f64, offloaded: f64) -> (f64, f64) {
        let (overhead, comm) = self.pass_overhead(batch, batch, 0.0);
        let (off, off_ideal) = self.offload_time(offloaded, batch);
        (n * (overhead + comm + off), n * off_ideal)
    }
}

#[cfg(test)]
mod tests {
    use crate::engine::{Engine, EngineDb};
    use crate::hardware::HardwareDb;
    use crate::model::ModelDb;
    use crate::predict::{Predictor, Scenario};

    /// `typical` with one field set by `set` to `value`, and the same engine with it 0.
    fn typical_with(set: fn(&mut Engine, f64), value: f64) -> (Engine, Engine) {
        let mut on = EngineDb::builtin().unwrap().get("typical").unwrap().clone();
        let mut off = on.clone();
        set(&mut on, value);
        set(&mut off, 0.0);
        (on, off)
    }

    /// The per-expert cost of a GEMM-path pass, by hand: Qwen3-30B-A3B has 48 MoE
    /// layers of 128 gated experts (3 matrices each), 8 per token.
    #[test]
    fn expert_loop_visits_every_expert_with_tokens() {
        let model = ModelDb::builtin()
            .unwrap()
            .resolve("qwen3-30b-a3b")
            .unwrap();
        let hw = HardwareDb::builtin().unwrap();
        let mut engine = EngineDb::builtin().unwrap().get("typical").unwrap().clone();
        engine.overheads.expert_overhead_s = 0.0;
        let rdna = crate::engine::Selector::architecture("rdna");
        let expert = crate::engine::DeviceFactor::ExpertOverhead;
        engine.set_override(&rdna, expert, Some(20e-6));
        let s = Scenario::default();
        let strix = hw.get("ryzen-ai-max-395").unwrap();
        let p = Predictor::new(&model, strix, &engine, &s).unwrap();
        assert_eq!(crate::predict::expert_matrices(&model), 48 * 3);
        // 512 tokens: each expert is missed with probability (120/128)^512 ~ 4e-15, so
        // all 48 * 3 * 128 = 18432 matrices: 0.36864 s
        assert!((p.expert_loop_s(512) / 0.36864 - 1.0).abs() < 1e-9);
        // 16 tokens: 1 - (120/128)^16 = 1 - 0.356074 = 0.643926 of the experts,
        // 0.36864 * 0.643926 = 0.237377 s
        assert!((p.expert_loop_s(16) / 0.237377 - 1.0).abs() < 1e-5);
        // up to 8 tokens the matrix-vector kernels take all experts in one launch
        assert_eq!(p.expert_loop_s(8), 0.0);
        assert_eq!(p.expert_loop_s(1), 0.0);
        // the whole prefill pays it once per 512-token pass
        let mut off = engine.clone();
        off.set_override(&rdna, expert, None);
        let q = Predictor::new(&model, strix, &off, &s).unwrap();
        let d = p.prefill_pass(1, 512, 0.0).time_s - q.prefill_pass(1, 512, 0.0).time_s;
        assert!((d / 0.36864 - 1.0).abs() < 1e-9, "{d}");
        // a decode step of one sequence does not
        let d1 = p.decode_step(1, 512, 0.0).time_s - q.decode_step(1, 512, 0.0).time_s;
        assert_eq!(d1, 0.0);
        // a CUDA device takes expert_overhead_s (0 here)
        let spark = hw.get("dgx-spark").unwrap();
        let c = Predictor::new(&model, spark, &engine, &s).unwrap();
        assert_eq!(c.expert_loop_s(512), 0.0);
        // a dense model has no experts to visit
        let dense = ModelDb::builtin().unwrap().resolve("llama-3-8b").unwrap();
        assert_eq!(crate::predict::expert_matrices(&dense), 0);
        let pd = Predictor::new(&dense, strix, &engine, &s).unwrap();
        assert_eq!(pd.expert_loop_s(512), 0.0);
    }

    /// Llama 4's chunked attention: a chunked layer's decode attention reads the keys of
    /// its own chunk, by hand; the generation's decode sum split at the chunks equals the
    /// steps summed one by one; a simulated decode group costs what the plain step does.
    #[test]
    fn chunked_attention_sees_its_own_chunk() {
        use crate::model::ModelConfig;
        use crate::model::graph::{OpKind, Step};
        use crate::predict::IterationCost;
        let hw = HardwareDb::builtin().unwrap();
        let h100 = hw.get("h100").unwrap();
        let engine = EngineDb::builtin().unwrap().get("typical").unwrap();
        let scout = ModelDb::builtin()
            .unwrap()
            .resolve("llama-4-scout")
            .unwrap();
        let s = Scenario {
            gpus: 8,
            ..Scenario::default()
        };
        let p = Predictor::new(&scout, h100, engine, &s).unwrap();
        assert_eq!(p.chunk(), Some(8192));
        // decode at context 10,000: a chunked layer reads the 10000 - 8192 = 1808 keys of
        // the second chunk, at 1 KV head per device (8 over tp 8) x 128 x 2 (K and V) x
        // 2 bytes = 512 B per key: 925,696 B; a global (NoPE) layer all 10,000: 5,120,000
        let g = p.graph(&Step::decode(1, 10_000));
        let kv = |kind: OpKind| {
            let op = g.ops().iter().find(|o| o.kind == kind).unwrap();
            op.cost.read.kv
        };
        assert_eq!(kv(OpKind::WindowAttention), 925_696.0);
        assert_eq!(kv(OpKind::Attention), 5_120_000.0);
        // (as a sliding window it read 8192 keys: 4,194,304 B)

        // the same model with chunks of 64 tokens
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../data/models/llama-4-scout.json"
        );
        let text = std::fs::read_to_string(path).unwrap().replace(
            "\"attention_chunk_size\": 8192",
            "\"attention_chunk_size\": 64",
        );
        let small = ModelConfig::from_json_str(&text, "scout-64", "test").unwrap();
        let p = Predictor::new(&small, h100, engine, &s).unwrap();
        assert_eq!(p.chunk(), Some(64));
        // contexts 31..=629 (8 whole chunks between two partial ones), 31..=179 (one),
        // 101..=119 (inside one chunk)
        for (prompt, gen_tokens) in [(30, 600), (30, 150), (100, 20)] {
            let sum = p.summary(2, prompt, gen_tokens);
            let (mut pred, mut ideal) = (0.0, 0.0);
            for l in prompt + 1..prompt + gen_tokens {
                let step = p.decode_step(2, l, 0.0);
                pred += step.time_s;
                ideal += step.roofline_time_s;
            }
            assert!(
                (sum.decode_total_s / pred - 1.0).abs() < 1e-9,
                "{prompt} {gen_tokens}: {} {pred}",
                sum.decode_total_s
            );
            assert!((sum.decode_total_roofline_s / ideal - 1.0).abs() < 1e-9);
        }
        // the simulator's decode groups in closed form (the lines were checked at
        // 2 x 64 + 5 = 133, where a chunk sees 5 keys and a window would see 64), equal
        // to the plain step of a batch at one context in the third chunk and the fourth
        let mut it = IterationCost::new(&p);
        assert!(it.closed_form());
        for l in [150, 200] {
            for _ in 0..3 {
                it.add_decode(l);
            }
            let got = it.finish().time_s;
            let want = p.decode_step(3, l, 0.0).time_s;
            assert!((got / want - 1.0).abs() < 1e-9, "{l}: {got} {want}");
        }
    }

    /// The matmuls' roll-off at few rows (`gemm_half_rows`), by hand: a matmul of `M`
    /// rows runs at `M / (M + m0)` of the compute efficiency above 8 rows.
    #[test]
    fn matmul_compute_time_is_that_of_half_rows_more() {
        use crate::model::graph::{OpKind, Step};
        let models = ModelDb::builtin().unwrap();
        let hw = HardwareDb::builtin().unwrap();
        let h100 = hw.get("h100").unwrap();
        let (on, off) = typical_with(|e, v| e.speed.gemm_half_rows = v, 32.0);
        let s = Scenario::default();
        let dense = models.resolve("llama-2-7b").unwrap();
        let (p, q) = (
            Predictor::new(&dense, h100, &on, &s).unwrap(),
            Predictor::new(&dense, h100, &off, &s).unwrap(),
        );
        let ratio = |step: &Step, kind: OpKind| {
            let op = *p.graph(step).ops().iter().find(|o| o.kind == kind).unwrap();
            let rows = p.matmul_rows(&op);
            (
                rows,
                p.place_op(&op).compute_time_s / q.place_op(&op).compute_time_s,
            )
        };
        // a 128-token prompt: every projection has 128 rows, (128 + 32) / 128 = 1.25
        let (rows, r) = ratio(&Step::prefill(1, 128), OpKind::QkvProj);
        assert_eq!(rows, Some(128.0));
        assert!((r - 1.25).abs() < 1e-12, "{r}");
        // 2048 tokens: 2080 / 2048 = 1.015625
        let (_, r) = ratio(&Step::prefill(1, 2048), OpKind::DownProj);
        assert!((r - 1.015625).abs() < 1e-12, "{r}");
        // decode at batch 64: 96 / 64 = 1.5
        let (rows, r) = ratio(&Step::decode(64, 1000), OpKind::OProj);
        assert_eq!(rows, Some(64.0));
        assert!((r - 1.5).abs() < 1e-12, "{r}");
        // at most 8 rows: the matrix-vector kernels, not derated; nor is the lm_head of
        // a prompt's one sequence (1 row)
        assert_eq!(ratio(&Step::decode(8, 1000), OpKind::GateUpProj).1, 1.0);
        assert_eq!(
            ratio(&Step::prefill(1, 128), OpKind::LmHead),
            (Some(1.0), 1.0)
        );
        // the attention core is not a weight matmul
        let att = *p
            .graph(&Step::prefill(1, 128))
            .ops()
            .iter()
            .find(|o| o.kind.is_attention_core())
            .unwrap();
        assert_eq!(p.matmul_rows(&att), None);
        // routed experts: the tokens each expert with some receives. Mixtral, 2 of 8
        // experts per token, 512 tokens: every expert is reached (1 - (6/8)^512 = 1),
        // 512 x 2 / 8 = 128 rows each
        let moe = models.resolve("mixtral-8x7b").unwrap();
        let s2 = Scenario {
            gpus: 2,
            ..Scenario::default()
        };
        let pm = Predictor::new(&moe, h100, &on, &s2).unwrap();
        let g = pm.graph(&Step::prefill(1, 512));
        let up = g
            .ops()
            .iter()
            .find(|o| o.kind == OpKind::GateUpProj)
            .unwrap();
        let rows = pm.matmul_rows(up).unwrap();
        assert!((rows - 128.0).abs() < 1e-9, "{rows}");
    }

    /// Weight-only quantized matmuls pay `dequant_efficiency` on their compute time,
    /// except a prompt's on an Apple GPU (the Metal kernel widens each tile once for its
    /// tokens, `Predictor::dequantizes_in_tile`): Llama-2-7B in Q4_K_M under typical
    /// with the factor at 0.5, a 512-token prompt's `qkv_proj` takes 1 / 0.5 = 2x the
    /// compute time on an RTX 4090 and 1x on an M2 Ultra; a decode step's (at most 8
    /// rows) is not the prompt path on either.
    #[test]
    fn apple_prompt_matmuls_widen_quantized_weights_in_the_tile() {
        use crate::dtype::Format;
        use crate::model::graph::{OpKind, Step};
        let models = ModelDb::builtin().unwrap();
        let hw = HardwareDb::builtin().unwrap();
        let (half, whole) = typical_with(|e, v| e.speed.dequant_efficiency = 1.0 - v, 0.5);
        let s = Scenario {
            weights: Some(Format::Q4KM),
            ..Scenario::default()
        };
        let model = models.resolve("llama-2-7b").unwrap();
        let ratio = |gpu: &str, step: &Step| {
            let d = hw.get(gpu).unwrap();
            let (p, q) = (
                Predictor::new(&model, d, &half, &s).unwrap(),
                Predictor::new(&model, d, &whole, &s).unwrap(),
            );
            let op = *p
                .graph(step)
                .ops()
                .iter()
                .find(|o| o.kind == OpKind::QkvProj)
                .unwrap();
            assert!(matches!(op.unit, crate::model::graph::Unit::Dequant(_)));
            p.place_op(&op).compute_time_s / q.place_op(&op).compute_time_s
        };
        let prompt = Step::prefill(1, 512);
        assert!((ratio("rtx-4090", &prompt) - 2.0).abs() < 1e-12);
        assert!((ratio("m2-ultra", &prompt) - 1.0).abs() < 1e-12);
        assert!((ratio("rtx-4090", &Step::decode(1, 512)) - 2.0).abs() < 1e-12);
        assert!((ratio("m2-ultra", &Step::decode(1, 512)) - 2.0).abs() < 1e-12);
    }

    /// A prompt pass pays `prefill_layer_overhead_s` per layer on top of the per-layer
    /// overhead; a decode step, speculative or not, does not.
    #[test]
    fn prompt_passes_pay_the_prefill_layer_overhead() {
        use crate::model::graph::Step;
        use crate::predict::spec::Speculation;
        let models = ModelDb::builtin().unwrap();
        let hw = HardwareDb::builtin().unwrap();
        let h100 = hw.get("h100").unwrap();
        let (mut on, mut off) =
            typical_with(|e, v| e.overheads.prefill_layer_overhead_s = v, 40e-6);
        let dense = models.resolve("llama-2-7b").unwrap();
        let s = Scenario::default();
        let (p, q) = (
            Predictor::new(&dense, h100, &on, &s).unwrap(),
            Predictor::new(&dense, h100, &off, &s).unwrap(),
        );
        // Llama 2 7B, 32 layers: 32 x 40 us = 1.28 ms more per prompt pass
        for step in [Step::prefill(1, 128), Step::prefill(4, 2048)] {
            let d = p.pass(&step, 0.0).time_s - q.pass(&step, 0.0).time_s;
            assert!((d - 1.28e-3).abs() < 1e-12, "{d}");
        }
        // a 2048-token prompt in passes of at most 512 tokens: 4 passes, 4 x 1.28 ms
        on.scheduler.max_batched_tokens = Some(512);
        off.scheduler.max_batched_tokens = Some(512);
        let (p, q) = (
            Predictor::new(&dense, h100, &on, &s).unwrap(),
            Predictor::new(&dense, h100, &off, &s).unwrap(),
        );
        let d = p.prefill_pass(1, 2048, 0.0).time_s - q.prefill_pass(1, 2048, 0.0).time_s;
        assert!((d - 4.0 * 1.28e-3).abs() < 1e-12, "{d}");
        // decode steps at batch 1 and 64 are unchanged, and so is a speculative step
        // (its verify pass of k + 1 tokens per sequence replays a graph like any decode)
        for step in [Step::decode(1, 1000), Step::decode(64, 1000)] {
            assert_eq!(p.pass(&step, 0.0).time_s, q.pass(&step, 0.0).time_s);
        }
        let spec = Scenario {
            spec: Some(Speculation { k: 3, accept: 0.7 }),
            ..Scenario::default()
        };
        let (p, q) = (
            Predictor::new(&dense, h100, &on, &spec).unwrap(),
            Predictor::new(&dense, h100, &off, &spec).unwrap(),
        );
        let (a, b) = (p.summary(1, 128, 64), q.summary(1, 128, 64));
        assert_eq!(a.decode_total_s, b.decode_total_s);
        assert!(a.prefill.time_s > b.prefill.time_s);
    }

    /// The per-layer overhead is paid per kernel a layer launches, a dense layer's 11
    /// costing `layer_overhead_s`; a prompt's extra per-layer time is per layer.
    #[test]
    fn a_layer_pays_the_per_layer_overhead_for_the_kernels_it_launches() {
        use crate::model::graph::Step;
        let models = ModelDb::builtin().unwrap();
        let hw = HardwareDb::builtin().unwrap();
        let h200 = hw.get("h200").unwrap();
        let (on, off) = typical_with(|e, v| e.overheads.layer_overhead_s = v, 11e-6);
        let step = Step::decode(1, 1000);
        let extra = |model: &str, gpus: u64| {
            let m = models.resolve(model).unwrap();
            let s = Scenario {
                gpus,
                ..Scenario::default()
            };
            let (p, q) = (
                Predictor::new(&m, h200, &on, &s).unwrap(),
                Predictor::new(&m, h200, &off, &s).unwrap(),
            );
            p.pass(&step, 0.0).time_s - q.pass(&step, 0.0).time_s
        };
        // Llama 2 7B: 32 dense layers of 11 kernels at 1 us each = 352 us
        let d = extra("llama-2-7b", 1);
        assert!((d - 352e-6).abs() < 1e-12, "{d}");
        // DeepSeek-V3 over 8 devices: 3 layers of latent attention (12 kernels) and an
        // MLP (5), 58 of latent attention and experts with a shared one (12 + 11): 3 x
        // 17 + 58 x 23 = 1385 kernels at 1 us = 1.385 ms
        let d = extra("deepseek-v3", 8);
        assert!((d - 1385e-6).abs() < 1e-12, "{d}");
        // a prompt pass pays prefill_layer_overhead_s per layer, not per kernel
        let (on, off) = typical_with(|e, v| e.overheads.prefill_layer_overhead_s = v, 10e-6);
        let m = models.resolve("deepseek-v3").unwrap();
        let s = Scenario {
            gpus: 8,
            ..Scenario::default()
        };
        let (p, q) = (
            Predictor::new(&m, h200, &on, &s).unwrap(),
            Predictor::new(&m, h200, &off, &s).unwrap(),
        );
        let prompt = Step::prefill(1, 128);
        let d = p.pass(&prompt, 0.0).time_s - q.pass(&prompt, 0.0).time_s;
        // 61 layers x 10 us
        assert!((d - 610e-6).abs() < 1e-12, "{d}");
    }
}
