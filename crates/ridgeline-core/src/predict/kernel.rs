//! Measured kernel tables in the cost model, on request ([`Predictor::with_kernels`]).
//!
//! An op that a table of the device (or of its sibling, [`KernelDb::sibling`]) covers
//! under the predictor's engine costs what the table says: the roof the table was
//! measured against (datasheet peak of the dtype, memory bandwidth, device link:
//! `tools/import_kernels.py`) over the measured efficiency at the op's shape, with no
//! per-op overhead (a measured time includes its launch). Each kernel of the layers no
//! table covers takes at least the table's shortest measured kernel
//! ([`crate::kernels::Table::shortest_kernel_s`]), paid with the pass's overheads (the
//! residual adds run inside the next norm's kernel: no launch of their own). The
//! covered ops:
//! - dense weight matmuls (`qkv_proj`, `o_proj`, a dense model's `gate_up_proj`,
//!   `up_proj`, `down_proj`, `lm_head`) in bf16/fp16 or fp8, as a GEMM of `m` rows
//!   ([`Predictor::matmul_rows`]) by the weight's `k` input and `n` output columns per
//!   device (the model's hidden size on one side, the weight's elements over it on the
//!   other);
//! - softmax attention (`attention`, no window) of a plain decode step (one new token
//!   per sequence) or a whole prompt (no cached prefix), at the heads, KV heads and
//!   batch of one device, with a 16-bit or fp8 KV cache;
//! - a decode step's windowed attention (`window_attention`, where the model's windowed
//!   layers share one window) as the decode attention over the keys its window lets
//!   the new token see (`min(context, w)` for a sliding window, the current chunk's for
//!   a chunked one): a kernel that reads `w` keys of a longer cache takes what one over
//!   a cache of `w` takes (AIConfigurator's windowed points against its full ones:
//!   `tools/import_kernels.py --window-check`, docs/kernels.md);
//! - one decode step's absorbed latent attention (`mla_attention`, [`crate::kernels::OpClass::MlaDecode`]);
//! - a routed-expert block (`gate_up_proj`, `act_mul`, `down_proj` of a MoE model's
//!   experts, each op at the block's measured efficiency, so the three cost the
//!   measured block time) at the pass's tokens over the expert-parallel group, each
//!   expert whole or split by tensor parallelism (the block of experts `1/tp` as wide),
//!   gated, in bf16, fp8, fp8-block, nvfp4 or mxfp4;
//! - the tensor-parallel all-reduces (`allreduce_attn`, `allreduce_mlp`) at their
//!   message size and the tensor-parallel group's size, on devices joined by a
//!   scale-up link (over PCIe alone the measured all-reduce is the measured host's
//!   topology, not the device's).
//!
//! Everything else (a prompt's latent or windowed attention, speculative verify passes,
//! draft models, the pass overheads) keeps the engine's fitted costs. The fast
//! paths do not read the tables: [`super::Evaluator`] hands a predictor on tables to
//! the plain [`Predictor::summary`] (so sweeps and plans on tables cost what that does).
//! The serving simulation's [`super::IterationCost`] places each iteration's ops on the
//! tables at the iteration's shapes (its module notes say how).

use super::Predictor;
use super::pass::Part;
use crate::dtype::{ComputeDtype, Format};
use crate::engine::{Engine, EngineDb};
use crate::hardware::{Hardware, HardwareDb};
use crate::kernels::{KernelDb, OpClass, Shape, Source};
use crate::memory::Parallel;
use crate::model::ModelConfig;
use crate::model::graph::{OpInstance, OpKind, Step, Unit};
use crate::roofline::{Efficiency, Placement, place, slowest};
use serde::Serialize;

/// Kernel tables with what a prediction on them needs besides: the device database
/// (a device without a table reads its sibling's, [`KernelDb::table_for`]) and the
/// engine database (an engine refitted on the tables predicts with that profile where a
/// table covers the device, [`KernelDb::engine_for`]). What `--kernels` hands to
/// `sweep` and `plan`.
#[derive(Debug, Clone, Copy)]
pub struct Kernels<'a> {
    /// The tables.
    pub db: &'a KernelDb,
    /// Devices, for the siblings.
    pub hardware: &'a HardwareDb,
    /// Engines, for the profiles refitted on the tables.
    pub engines: &'a EngineDb,
}

/// Two handles are equal when they hold the same databases (the same objects, not
/// equal contents): what a serving configuration that carries them compares by.
impl PartialEq for Kernels<'_> {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self.db, other.db)
            && std::ptr::eq(self.hardware, other.hardware)
            && std::ptr::eq(self.engines, other.engines)
    }
}

impl<'a> Kernels<'a> {
    /// The profile a prediction under `engine` on `hw` uses with these tables: the
    /// engine's profile refitted on them where a table covers the device, else `engine`.
    pub fn engine(&self, engine: &'a Engine, hw: &Hardware) -> &'a Engine {
        self.db.engine_for(engine, self.engines, hw, self.hardware)
    }

    /// A predictor on these tables: `Kernels::engine`'s profile, reading the tables
    /// where they cover an op ([`Predictor::with_kernels`]).
    pub fn predictor(
        &self,
        model: &'a ModelConfig,
        hw: &'a Hardware,
        engine: &'a Engine,
        s: &super::Scenario,
    ) -> crate::error::Result<Predictor<'a>> {
        Ok(Predictor::new(model, hw, self.engine(engine, hw), s)?
            .with_kernels(self.db, self.hardware))
    }
}

/// The kernel tables a predictor reads.
#[derive(Debug, Clone)]
pub(crate) struct KernelUse<'a> {
    db: &'a KernelDb,
    /// The device whose table is read: the predictor's own or its sibling's.
    pub device: String,
    /// Measured (the device's own table) or transferred (its sibling's).
    pub source: Source,
    /// How the table's efficiencies carry to this device
    /// ([`crate::kernels::Transfer`]; none for the device's own table).
    transfer: crate::kernels::Transfer,
    /// What a kernel no table covers takes at least, s: the table's shortest measured
    /// kernel ([`crate::kernels::Table::shortest_kernel_s`]; 0 where it has none).
    pub launch_s: f64,
}

/// Where an op's time comes from (`source` in the op table of `predict --json`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CostSource {
    /// The device's own measured kernel table.
    Measured,
    /// A sibling device's measured kernel table, as a fraction of this device's roof.
    Transferred,
    /// The engine profile's efficiencies, fitted on published end-to-end measurements.
    Fitted,
    /// The pure roofline (the `ideal` engine): nothing measured or fitted.
    Physics,
}

/// [`CostSource`] in the interface contract's words (`efficiency_source` in the op
/// table of `predict --json`): the `ideal` engine's pure roofline is `ideal`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EfficiencySource {
    /// The device's own measured kernel table.
    Measured,
    /// A sibling device's measured kernel table.
    Transferred,
    /// The engine profile's efficiencies, fitted on published measurements.
    Fitted,
    /// The pure roofline of the `ideal` engine.
    Ideal,
}

impl From<CostSource> for EfficiencySource {
    fn from(s: CostSource) -> Self {
        match s {
            CostSource::Measured => Self::Measured,
            CostSource::Transferred => Self::Transferred,
            CostSource::Fitted => Self::Fitted,
            CostSource::Physics => Self::Ideal,
        }
    }
}

impl<'a> Predictor<'a> {
    /// The predictor reading the kernel tables of `db` ([`KernelDb::table_for`]): the
    /// device's own under the engine, else its sibling's among `hardware`; unchanged
    /// where neither has one (`Predictor::kernels` then says `None`).
    pub fn with_kernels(mut self, db: &'a KernelDb, hardware: &HardwareDb) -> Self {
        let to = self.hardware;
        let engine = self.engine.id.as_str();
        self.kernels = db
            .table_for(to, hardware, engine)
            .map(|(device, source)| KernelUse {
                db,
                launch_s: db
                    .table(device, engine)
                    .zip(match source {
                        Source::Measured => Some(to),
                        Source::Transferred(_) => hardware.get(device).ok(),
                    })
                    .and_then(|(t, hw)| t.shortest_kernel_s(hw))
                    .unwrap_or(0.0),
                transfer: match source {
                    Source::Transferred(_) => hardware
                        .get(device)
                        .map_or(crate::kernels::Transfer::NONE, |from| {
                            crate::kernels::Transfer::between(from, to)
                        }),
                    Source::Measured => crate::kernels::Transfer::NONE,
                },
                device: device.to_string(),
                source,
            });
        self
    }

    /// [`Predictor::with_kernels`] where `db` is given, else the predictor unchanged.
    pub fn with_kernels_if(self, db: Option<&'a KernelDb>, hardware: &HardwareDb) -> Self {
        match db {
            Some(db) => self.with_kernels(db, hardware),
            None => self,
        }
    }

    /// The kernel tables in use (`None`: none, every op at the engine's costs).
    pub(crate) fn kernels(&self) -> Option<&KernelUse<'a>> {
        self.kernels.as_ref()
    }

    /// The device whose kernel tables this predictor reads: its own, or its sibling's
    /// (`None`: it reads none).
    pub fn kernel_table(&self) -> Option<&str> {
        self.kernels.as_ref().map(|k| k.device.as_str())
    }

    /// Where the time of an op no table covers comes from.
    pub(super) fn fallback_source(&self) -> CostSource {
        if self.engine.is_physics() {
            CostSource::Physics
        } else {
            CostSource::Fitted
        }
    }

    /// One op of a pass of `part` over `step` placed, with the table it was read from:
    /// from a kernel table where one covers it (a plain pass only: see the module
    /// notes), else [`Predictor::place_op`] (`None`: the engine's costs, which
    /// [`Predictor::fallback_source`] names).
    pub(super) fn place_op_in(
        &self,
        op: &OpInstance,
        part: Part,
        step: &Step,
    ) -> (Placement, Option<CostSource>) {
        if let Some(k) = &self.kernels
            && part == Part::Plain
            && let Some((class, dtype, peak, shape)) = self.kernel_shape(op, step)
            && let Some(eff) =
                k.db.efficiency(&k.device, &self.engine.id, class, dtype, &shape)
                    .map(|e| k.transfer.carry(class, e, dtype, &shape))
            && eff > 0.0
            && eff.is_finite()
        {
            let source = match k.source {
                Source::Measured => CostSource::Measured,
                Source::Transferred(_) => CostSource::Transferred,
            };
            return (self.measured_place(op, class, peak, eff), Some(source));
        }
        (self.place_op(op), None)
    }

    /// The keys a decode step's windowed attention reads at `context`, as the layer
    /// graph counts them ([`crate::ops::AttentionShape`]'s keys read: `min(context, w)`
    /// for a sliding window, the current chunk's for a chunked one); `None` where the
    /// model's windowed layers do not share one window.
    fn window_keys(&self, context: u64) -> Option<u64> {
        let m = self.model;
        let mut windowed = m
            .kinds
            .iter()
            .filter(|k| k.mixer == crate::model::Mixer::Attention)
            .filter_map(|k| k.window.map(|w| (w, k.chunked)));
        let (w, chunked) = windowed.next()?;
        if windowed.any(|other| other != (w, chunked)) {
            return None;
        }
        let one = crate::ops::AttentionShape::gqa(
            1,
            1,
            context.max(1),
            m.heads,
            m.kv_heads,
            m.head_dim,
            16.0,
            16.0,
        );
        Some(
            crate::ops::AttentionShape {
                window: Some(w),
                chunked,
                ..one
            }
            .keys_read(),
        )
    }

    /// The attention tables' dtype for this predictor's KV cache (`bf16` for a 16-bit
    /// cache, `fp8`), where its activations are 16-bit as the measured kernels' are;
    /// `None` otherwise.
    fn attention_kv_dtype(&self) -> Option<&'static str> {
        if !matches!(
            self.precision.activations,
            ComputeDtype::Bf16 | ComputeDtype::Fp16
        ) {
            return None;
        }
        match self.precision.kv {
            Format::Bf16 | Format::Fp16 => Some("bf16"),
            Format::Fp8 => Some("fp8"),
            _ => None,
        }
    }

    /// The table class, dtype, datasheet peak of the table's roof and shape of `op` in
    /// a pass over `step`, where a table may cover it.
    fn kernel_shape(
        &self,
        op: &OpInstance,
        step: &Step,
    ) -> Option<(OpClass, &'static str, f64, Shape)> {
        use OpKind as K;
        let m = self.model;
        let peak = |d: ComputeDtype| self.hardware.peak(d).0;
        match op.kind {
            K::QkvProj | K::OProj | K::LmHead => {}
            K::GateUpProj | K::UpProj | K::DownProj if !m.is_moe() => {}
            K::GateUpProj | K::ActMul | K::DownProj if op.routed => {
                // a routed-expert block, gated, 16-bit activations; each expert split
                // `tp` ways is the block of experts `1/tp` as wide, which is what a
                // device runs (the importer keys such points so)
                if !m.expert_intermediate.is_multiple_of(self.tp.max(1))
                    || !m.gated_mlp
                    || !matches!(
                        self.precision.activations,
                        ComputeDtype::Bf16 | ComputeDtype::Fp16
                    )
                {
                    return None;
                }
                let (dtype, d) = crate::kernels::moe_format(self.precision.experts)?;
                let tokens = step
                    .all_tokens
                    .unwrap_or_else(|| step.batch.saturating_mul(step.new_tokens));
                // the graph costs the busiest expert-parallel rank's block
                // (`Shard::busiest`): read the point whose even share gives a rank its
                // rows, where a small block's measured time is mostly its latency
                let tokens = if self.ep > 1 {
                    let l = self.busiest_load(tokens);
                    ((tokens as f64 * l.rows_ratio()).round() as u64).max(tokens)
                } else {
                    tokens
                };
                let shape = Shape::Moe {
                    tokens,
                    hidden: m.hidden,
                    inter: m.expert_intermediate / self.tp.max(1),
                    topk: m.experts_per_token,
                    experts: m.experts,
                    ep: self.ep.max(1),
                };
                return Some((OpClass::Moe, dtype, peak(d), shape));
            }
            K::Attention | K::WindowAttention => {
                let kv = self.attention_kv_dtype()?;
                let decode = step.decode && step.new_tokens == 1;
                let (class, len) = match op.kind {
                    K::Attention if decode => (OpClass::AttentionDecode, step.context),
                    K::Attention if !step.decode && step.context == step.new_tokens => {
                        (OpClass::AttentionPrefill, step.new_tokens)
                    }
                    // a decode step's windowed attention reads the keys its window lets
                    // the new token see: the decode kernel over a cache that long
                    K::WindowAttention if decode => {
                        (OpClass::AttentionDecode, self.window_keys(step.context)?)
                    }
                    _ => return None,
                };
                let shape = Shape::Attention {
                    batch: step.batch.div_ceil(self.ep.max(1)),
                    len,
                    heads: m.heads.div_ceil(self.tp),
                    kv_heads: m.kv_heads.div_ceil(self.tp),
                    head_dim: m.head_dim,
                };
                return Some((class, kv, peak(ComputeDtype::Bf16), shape));
            }
            K::MlaAttention => {
                // a decode step's absorbed latent attention over 16-bit or fp8 latents
                let (Some(a), true) = (m.mla, step.decode && step.new_tokens == 1) else {
                    return None;
                };
                let kv = self.attention_kv_dtype()?;
                let shape = Shape::Mla {
                    batch: step.batch.div_ceil(self.ep.max(1)),
                    len: step.context,
                    heads: m.heads.div_ceil(self.tp),
                    kv_lora: a.kv_lora_rank,
                    rope: a.qk_rope_head_dim,
                };
                return Some((OpClass::MlaDecode, kv, peak(ComputeDtype::Bf16), shape));
            }
            K::AllreduceAttn | K::AllreduceMlp => {
                let n = self.tp;
                // over PCIe alone the measured all-reduce is the measured host's
                // topology (a switch, one root complex or two sockets: 15% of the
                // link on AIConfigurator's 4 x L40S, where the published TensorRT-LLM
                // runs on such devices come out faster than the plain link model);
                // it is read only across a scale-up fabric, which every board of a
                // device shares, and within one domain (beyond it the network carries
                // the ring: the link model)
                if n < 2
                    || self.parallel != Parallel::Tp
                    || op.cost.link_bytes <= 0.0
                    || self.hardware.scaleup_link.is_none()
                    || n > self.hardware.domain_devices()
                {
                    return None;
                }
                // a ring all-reduce sends 2 (n - 1) / n of the message (ops::collective)
                let bytes = op.cost.link_bytes * n as f64 / (2.0 * (n - 1) as f64);
                let shape = Shape::AllReduce { gpus: n, bytes };
                return Some((OpClass::AllReduce, "bf16", 0.0, shape));
            }
            _ => return None,
        }
        let (dtype, d) = match op.unit {
            Unit::Matrix(ComputeDtype::Bf16 | ComputeDtype::Fp16) => ("bf16", ComputeDtype::Bf16),
            Unit::Matrix(ComputeDtype::Fp8) => ("fp8", ComputeDtype::Fp8),
            _ => return None,
        };
        if peak(d) <= 0.0 {
            return None;
        }
        let rows = self.matmul_rows(op)?.round().max(1.0) as u64;
        let elems = self.weight_elements(op)?;
        let hidden = m.hidden.max(1);
        let other = (elems / hidden as f64).round().max(1.0) as u64;
        let (n, k) = match op.kind {
            K::OProj | K::DownProj => (hidden, other),
            _ => (other, hidden),
        };
        Some((OpClass::Gemm, dtype, peak(d), Shape::Gemm { m: rows, n, k }))
    }

    /// `op` placed at the measured efficiency `eff` of its class: the table's roof
    /// (FLOPs at the datasheet `peak`, bytes at the memory bandwidth, link bytes at the
    /// device link; an all-reduce's FLOPs are not part of its roof) over `eff`, all
    /// executions, no overhead. The ideal time and the bound stay the roofline's.
    fn measured_place(&self, op: &OpInstance, class: OpClass, peak: f64, eff: f64) -> Placement {
        let total = op.total();
        let mut p = place(&total, self.ceilings(op), &Efficiency::IDEAL);
        let bw = self.hardware.memory.bandwidth_bytes_per_s;
        let link = self
            .hardware
            .device_link()
            .map_or(0.0, |l| l.bytes_per_s_per_direction);
        let at = |num: f64, rate: f64| crate::roofline::time_at(num, rate);
        // an all-reduce's FLOPs and a routed-expert block's activation are not part of
        // their tables' roofs
        let compute = if class == OpClass::AllReduce
            || (class == OpClass::Moe && !matches!(op.unit, Unit::Matrix(_)))
        {
            0.0
        } else {
            at(total.flops, peak)
        };
        let roof = compute
            .max(at(total.bytes(), bw))
            .max(at(total.link_bytes, link));
        let time_s = roof / eff;
        let slowest_ideal = p.compute_time_s.max(p.memory_time_s).max(p.link_time_s);
        let scale = if slowest_ideal > 0.0 {
            time_s / slowest_ideal
        } else {
            0.0
        };
        p.compute_time_s *= scale;
        p.memory_time_s *= scale;
        p.link_time_s *= scale;
        p.overhead_s = 0.0;
        p.bound = slowest(p.compute_time_s, p.memory_time_s, p.link_time_s, 0.0).1;
        p.time_s = time_s;
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::EngineDb;
    use crate::model::ModelDb;
    use crate::predict::Scenario;

    fn with<'a>(model: &'a crate::model::ModelConfig, gpu: &str, gpus: u64) -> Predictor<'a> {
        let hw = HardwareDb::builtin().unwrap();
        let engine = EngineDb::builtin().unwrap().get("vllm").unwrap();
        let s = Scenario {
            gpus,
            ..Scenario::default()
        };
        Predictor::new(model, hw.get(gpu).unwrap(), engine, &s)
            .unwrap()
            .with_kernels(KernelDb::builtin().unwrap(), hw)
    }

    fn op(p: &Predictor<'_>, step: &Step, kind: OpKind) -> OpInstance {
        *p.graph(step).ops().iter().find(|o| o.kind == kind).unwrap()
    }

    /// Llama 3 8B's o_proj at batch 1 is a measured grid point of h100-sxm's vLLM
    /// table (m 1, n 4096, k 4096: efficiency 0.666). Roof: (4096 x 2 + 4096 x 4096 x 2 +
    /// 4096 x 2) = 33,570,816 B / 3.35e12 B/s = 10.0211 us; / 0.666 = 15.0468 us; x 32
    /// layers = 481.50 us. On an H100 PCIe (no table: H100 SXM's, transferred) the
    /// same fraction of its own 2.0e12 B/s: 33,570,816 / 2.0e12 / 0.666 x 32 = 806.51 us.
    #[test]
    fn a_matmul_at_a_measured_point_costs_its_roof_over_the_measured_efficiency() {
        let m = &ModelDb::builtin().unwrap().resolve("llama-3-8b").unwrap();
        let step = Step::decode(1, 576);
        let sxm = with(m, "h100-sxm", 1);
        assert_eq!(sxm.kernels().unwrap().source, Source::Measured);
        let o = op(&sxm, &step, OpKind::OProj);
        let (p, source) = sxm.place_op_in(&o, Part::Plain, &step);
        assert_eq!(source, Some(CostSource::Measured));
        assert!((p.time_s - 481.50e-6).abs() < 0.01e-6, "{}", p.time_s);
        assert_eq!(p.overhead_s, 0.0);
        // the ideal time is the roofline's, on the predictor's own ceilings
        assert_eq!(p.roofline_time_s, sxm.place_op(&o).roofline_time_s);
        let pcie = with(m, "h100-pcie", 1);
        assert_eq!(
            pcie.kernels().unwrap().source,
            Source::Transferred("h100-sxm".into())
        );
        let (p, source) = pcie.place_op_in(&op(&pcie, &step, OpKind::OProj), Part::Plain, &step);
        assert_eq!(source, Some(CostSource::Transferred));
        assert!((p.time_s - 806.51e-6).abs() < 0.01e-6, "{}", p.time_s);
        // an op no table covers keeps the engine's cost
        let rope = op(&sxm, &step, OpKind::Rope);
        let (p, source) = sxm.place_op_in(&rope, Part::Plain, &step);
        assert_eq!(source, None);
        assert_eq!(p, sxm.place_op(&rope));
        // and so does a draft pass
        let (_, source) = sxm.place_op_in(&o, Part::Draft, &step);
        assert_eq!(source, None);
    }

    /// The shapes the tables are read at, by hand for Llama 3 8B (32 heads, 8 KV heads,
    /// head dim 128, hidden 4096, MLP 14336) on 4 devices: a decode step of 4 sequences
    /// at context 4096 runs attention of 8 heads and 2 KV heads per device; its
    /// all-reduces carry one token's 4096 activations x 2 bytes = 8192 bytes per
    /// sequence (32,768 for 4); down_proj reads 14336 / 4 = 3584 inputs into 4096.
    #[test]
    fn ops_are_read_at_their_per_device_shapes() {
        let m = &ModelDb::builtin().unwrap().resolve("llama-3-8b").unwrap();
        let p = with(m, "h100-sxm", 4);
        let step = Step::decode(4, 4096);
        let shape = |k: OpKind| {
            p.kernel_shape(&op(&p, &step, k), &step)
                .map(|s| (s.0, s.1, s.3))
        };
        assert_eq!(
            shape(OpKind::Attention),
            Some((
                OpClass::AttentionDecode,
                "bf16",
                Shape::Attention {
                    batch: 4,
                    len: 4096,
                    heads: 8,
                    kv_heads: 2,
                    head_dim: 128
                }
            ))
        );
        assert_eq!(
            shape(OpKind::AllreduceMlp),
            Some((
                OpClass::AllReduce,
                "bf16",
                Shape::AllReduce {
                    gpus: 4,
                    bytes: 32768.0
                }
            ))
        );
        assert_eq!(
            shape(OpKind::DownProj),
            Some((
                OpClass::Gemm,
                "bf16",
                Shape::Gemm {
                    m: 4,
                    n: 4096,
                    k: 3584
                }
            ))
        );
        // over PCIe alone (L40S: no scale-up link) the all-reduce keeps the engine's
        // link model; its matmuls still read the table
        let pcie = with(m, "l40s", 4);
        assert!(pcie.hardware.scaleup_link.is_none());
        assert_eq!(
            pcie.kernel_shape(&op(&pcie, &step, OpKind::AllreduceMlp), &step),
            None
        );
        assert_eq!(
            pcie.kernel_shape(&op(&pcie, &step, OpKind::DownProj), &step)
                .map(|s| s.0),
            Some(OpClass::Gemm)
        );
        // a whole prompt is prefill attention; a chunk after a cached prefix is neither
        let prompt = Step::prefill(2, 1000);
        let a = op(&p, &prompt, OpKind::Attention);
        assert_eq!(
            p.kernel_shape(&a, &prompt).map(|s| s.0),
            Some(OpClass::AttentionPrefill)
        );
        let chunk = Step {
            context: 3000,
            ..prompt
        };
        assert_eq!(
            p.kernel_shape(&op(&p, &chunk, OpKind::Attention), &chunk),
            None
        );
    }

    /// A decode step's windowed attention is read as the decode attention over the keys
    /// its window lets the new token see. gpt-oss-120b (64 heads, 8 KV heads, head dim
    /// 64; every other layer a sliding window of 128) on 8 devices: 8 heads and 1 KV
    /// head each, 128 keys at a context of 4096, the whole cache at 100. Llama 4 Scout
    /// (chunks of 8192 on three layers of four) at a context of 10,000 sees its own
    /// chunk's 10,000 - 8,192 = 1,808 keys. A prompt's windowed attention keeps the
    /// engine's cost.
    #[test]
    fn windowed_decode_attention_is_read_at_the_keys_its_window_sees() {
        let db = ModelDb::builtin().unwrap();
        let m = &db.resolve("gpt-oss-120b").unwrap();
        let p = with(m, "h100-sxm", 8);
        let shape = |p: &Predictor<'_>, step: &Step| {
            p.kernel_shape(&op(p, step, OpKind::WindowAttention), step)
                .map(|s| (s.0, s.3))
        };
        let at = |batch, len, heads, kv_heads, head_dim| {
            Some((
                OpClass::AttentionDecode,
                Shape::Attention {
                    batch,
                    len,
                    heads,
                    kv_heads,
                    head_dim,
                },
            ))
        };
        assert_eq!(shape(&p, &Step::decode(4, 4096)), at(4, 128, 8, 1, 64));
        assert_eq!(shape(&p, &Step::decode(4, 100)), at(4, 100, 8, 1, 64));
        assert_eq!(shape(&p, &Step::prefill(2, 1000)), None);
        // measured: it costs the table's decode attention at that shape
        let step = Step::decode(4, 4096);
        let w = op(&p, &step, OpKind::WindowAttention);
        let (placed, source) = p.place_op_in(&w, Part::Plain, &step);
        assert_eq!(source, Some(CostSource::Measured));
        let k = p.kernels.as_ref().unwrap();
        let (class, dtype, peak, at128) = p.kernel_shape(&w, &step).unwrap();
        let eff =
            k.db.efficiency(&k.device, &p.engine.id, class, dtype, &at128);
        assert_eq!(placed, p.measured_place(&w, class, peak, eff.unwrap()));
        let scout = &db.resolve("llama-4-scout").unwrap();
        let q = with(scout, "h100-sxm", 8);
        // 40 heads, 8 KV heads, head dim 128 over 8 devices: 5 and 1
        assert_eq!(shape(&q, &Step::decode(1, 10_000)), at(1, 1808, 5, 1, 128));
    }

    /// Qwen3-30B-A3B at batch 1 on an H100 SXM under vLLM: its routed-expert block (8
    /// rows, 8 of 128 experts touched, bf16) is a measured point of the table (tokens 1,
    /// key 2048/768/8/128/1: efficiency 0.46). Roof: 50,388,992 + 36,864 + 25,210,880 =
    /// 75,636,736 bytes at 3.35e12 B/s = 22.5781 us (the FLOPs, 75.5 M, take 0.08 us at
    /// the bf16 peak); / 0.46 = 49.083 us per layer; x 48 layers = 2,355.97 us, over
    /// the block's three ops. Split over 2 devices by tensor parallelism each device runs
    /// experts 384 wide, the table's point at key 2048/384/8/128/1 (aiconfigurator's
    /// `moe_tp_size` 2; efficiency 0.359): 25,210,880 + 18,432 + 12,621,824 = 37,851,136
    /// bytes at 3.35e12 B/s = 11.29885 us; / 0.359 = 31.4731 us per layer; x 48 =
    /// 1,510.71 us.
    #[test]
    fn a_routed_expert_block_costs_its_measured_time() {
        let m = &ModelDb::builtin()
            .unwrap()
            .resolve("qwen3-30b-a3b")
            .unwrap();
        let p = with(m, "h100-sxm", 1);
        let step = Step::decode(1, 1024);
        let ops = p.graph(&step);
        let mut total = 0.0;
        let block = |o: &&OpInstance| {
            o.routed
                && matches!(
                    o.kind,
                    OpKind::GateUpProj | OpKind::ActMul | OpKind::DownProj
                )
        };
        for o in ops.ops().iter().filter(block) {
            let (placed, source) = p.place_op_in(o, Part::Plain, &step);
            assert_eq!(source, Some(CostSource::Measured), "{:?}", o.kind);
            assert_eq!(placed.overhead_s, 0.0);
            total += placed.time_s;
        }
        assert!((total - 2355.97e-6).abs() < 0.01e-6, "{total}");
        // split over 2 devices by tensor parallelism: the point of experts half as wide
        let tp2 = with(m, "h100-sxm", 2);
        let mut total = 0.0;
        for o in tp2.graph(&step).ops().iter().filter(block) {
            let (placed, source) = tp2.place_op_in(o, Part::Plain, &step);
            assert_eq!(source, Some(CostSource::Measured), "{:?}", o.kind);
            total += placed.time_s;
        }
        assert!((total - 1510.71e-6).abs() < 0.01e-6, "{total}");
    }

    /// DeepSeek-R1 over 8 B200 under SGLang, one sequence at 2,048 tokens: a decode
    /// step's latent attention (16 heads a device, the 576-wide latents of a bf16 cache)
    /// is the table's `mla_decode` point 16/512/64 at batch 1, kv_len 2048 (efficiency
    /// 0.0204; aiconfigurator's kernel took 14.7 us). Roof: the latents 2048 x 576 x 2 =
    /// 2,359,296 B, the query 16 x 576 x 2 = 18,432 B and the output 16 x 512 x 2 =
    /// 16,384 B, 2,394,112 B at 8e12 B/s = 0.299264 us (the FLOPs, 2 x 16 x 1,088 x
    /// 2,048 = 71.3 M, take 0.03 us at the bf16 peak); / 0.0204 = 14.6698 us per layer; x
    /// 61 layers = 894.86 us. A prompt's latent attention is not in the tables.
    #[test]
    fn a_decode_step_s_latent_attention_costs_its_measured_time() {
        let m = &ModelDb::builtin().unwrap().resolve("deepseek-r1").unwrap();
        let hw = HardwareDb::builtin().unwrap();
        let engine = EngineDb::builtin().unwrap().get("sglang").unwrap();
        let s = Scenario {
            gpus: 8,
            ..Scenario::default()
        };
        let p = Predictor::new(m, hw.get("b200").unwrap(), engine, &s)
            .unwrap()
            .with_kernels(KernelDb::builtin().unwrap(), hw);
        let step = Step::decode(1, 2048);
        let mut total = 0.0;
        for o in p.graph(&step).ops().iter() {
            if o.kind == OpKind::MlaAttention {
                let (placed, source) = p.place_op_in(o, Part::Plain, &step);
                assert_eq!(source, Some(CostSource::Measured));
                total += placed.time_s;
            }
        }
        assert!((total - 894.86e-6).abs() < 0.01e-6, "{total}");
        let prompt = Step::prefill(1, 2048);
        let o = op(&p, &prompt, OpKind::MlaAttention);
        assert_eq!(p.place_op_in(&o, Part::Plain, &prompt).1, None);
    }

    /// Under expert parallelism the graph costs the busiest rank's routed-expert block;
    /// the table is read at the tokens whose even share gives a rank that many rows.
    /// Qwen3-30B-A3B (128 experts, top 8) over 8 H100 SXM with `--ep 8` under
    /// TensorRT-LLM (whose table keeps ep 8): one token's 8 picks put 2.43796 rows on the
    /// busiest rank (the expected maximum of 8 Binomial(8, 1/8) counts), read at 2 tokens;
    /// 64 tokens' 512 picks, mean 64, sd sqrt(56) = 7.48331, 74.8668 on the busiest (the
    /// decoding suite's arithmetic), read at 75.
    #[test]
    fn an_expert_parallel_block_is_read_at_its_busiest_rank() {
        let m = &ModelDb::builtin()
            .unwrap()
            .resolve("qwen3-30b-a3b")
            .unwrap();
        let hw = HardwareDb::builtin().unwrap();
        let engine = EngineDb::builtin().unwrap().get("trt-llm").unwrap();
        let s = Scenario {
            gpus: 8,
            ep: 8,
            ..Scenario::default()
        };
        let p = Predictor::new(m, hw.get("h100-sxm").unwrap(), engine, &s)
            .unwrap()
            .with_kernels(KernelDb::builtin().unwrap(), hw);
        for (batch, read) in [(1, 2), (64, 75)] {
            let step = Step::decode(batch, 1024);
            let up = *p
                .graph(&step)
                .ops()
                .iter()
                .find(|o| o.routed && o.kind == OpKind::GateUpProj)
                .unwrap();
            let (class, _, _, shape) = p.kernel_shape(&up, &step).unwrap();
            assert_eq!(class, OpClass::Moe);
            assert!(
                matches!(shape, Shape::Moe { tokens, ep: 8, .. } if tokens == read),
                "batch {batch}: {shape:?}"
            );
            assert_eq!(
                p.place_op_in(&up, Part::Plain, &step).1,
                Some(CostSource::Measured)
            );
        }
    }

    /// The decode sum with tables (pieces between powers of two, Simpson's rule on the
    /// long ones) against every step summed one by one: contexts 101..=899.
    #[test]
    fn the_sampled_decode_sum_matches_the_steps_summed_one_by_one() {
        let m = &ModelDb::builtin().unwrap().resolve("llama-3-8b").unwrap();
        let p = with(m, "h100-sxm", 1);
        let (step, pred, ideal) = p.decode_with_sum(8, 500, 101, 899, 0.0);
        let (mut want, mut want_ideal) = (0.0, 0.0);
        for c in 101..=899 {
            let r = p.decode_step(8, c, 0.0);
            want += r.time_s;
            want_ideal += r.roofline_time_s;
        }
        assert_eq!(step, p.decode_step(8, 500, 0.0));
        assert!((pred / want - 1.0).abs() < 1e-3, "{pred} {want}");
        assert!(
            (ideal / want_ideal - 1.0).abs() < 1e-3,
            "{ideal} {want_ideal}"
        );
    }

    /// On the tables a pass pays the table's shortest kernel for each launch of its
    /// layers that no table times: Llama 3 8B's decode step on H100 SXM under vLLM
    /// launches 11 kernels in each of 32 layers, of which the tables time 5 (QKV,
    /// attention, output, gate-up and down) and 2 are residual adds run inside the next
    /// norm: 32 x 7 = 224 paid for, 128 left. A draft step of Llama 3.2 1B reads no
    /// table: of its 16 x 11 launches the 32 residual adds are paid for, 144 left.
    #[test]
    fn a_pass_on_the_tables_pays_the_shortest_kernel_for_each_launch_they_leave() {
        let db = ModelDb::builtin().unwrap();
        let m = &db.resolve("llama-3-8b").unwrap();
        let draft = &db.resolve("llama-3.2-1b").unwrap();
        let hw = HardwareDb::builtin().unwrap();
        let engine = EngineDb::builtin().unwrap().get("vllm").unwrap();
        let s = Scenario {
            spec: Some(crate::predict::Speculation { k: 3, accept: 0.7 }),
            ..Scenario::default()
        };
        let p = Predictor::new(m, hw.get("h100-sxm").unwrap(), engine, &s)
            .unwrap()
            .with_kernels(KernelDb::builtin().unwrap(), hw)
            .with_draft(draft)
            .unwrap();
        // data/kernels/h100-sxm/vllm.csv's fastest 16-bit GEMM: 2 x 1024 x 1024 at 0.161,
        // 2 (2 * 1024 + 1024 * 1024 + 2 * 1024) B / 3.35e12 B/s / 0.161 = 3.9035 us
        let floor = 2_105_344.0 / 3.35e12 / 0.161;
        assert!((p.kernels().unwrap().launch_s / floor - 1.0).abs() < 1e-12);
        let e = &engine.overheads;
        let step = Step::decode(1, 576);
        let plain = p.part_ops(Part::Plain, &step).unwrap();
        assert_eq!(plain.measured_launches, 192.0);
        assert_eq!(plain.measured_attention, 32.0);
        let (overhead, _) = p.pass_overhead(1, 1, 224.0);
        let want = e.step_overhead_s
            + (e.layer_overhead_s + 11.0 * floor) * 128.0 / 11.0
            + e.sequence_overhead_s;
        assert!(
            (overhead / want - 1.0).abs() < 1e-12,
            "{overhead} vs {want}"
        );
        let drafted = p.part_ops(Part::Draft, &step).unwrap();
        assert_eq!(drafted.measured_launches, 32.0);
        assert_eq!(drafted.measured_attention, 0.0);
        let done = p.finish_part(Part::Draft, drafted, 1, 1, 0.0);
        let want = e.step_overhead_s + (e.layer_overhead_s + 11.0 * floor) * 144.0 / 11.0;
        assert!(
            (done.time_s - drafted.time_s - want).abs() < 1e-12,
            "{} vs {want}",
            done.time_s - drafted.time_s
        );
    }
}
