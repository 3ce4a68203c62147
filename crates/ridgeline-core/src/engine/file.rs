//! The engine file schema (`data/engines.toml`, `--engine-file`): one table per engine,
//! named by its id, with the fields of [`Engine`]'s groups written flat, per-device
//! overrides as an array of `device` tables, and inheritance from another profile.
//!
//! ```toml
//! [my-vllm]
//! base = "vllm"                 # every field not given here is vllm's
//! description = "vLLM on our cluster"
//! compute_efficiency = 0.55
//!
//! [my-vllm.memory_efficiency]   # merged key by key with the base's
//! hbm = 0.7
//!
//! [[my-vllm.device]]            # ahead of the base's overrides
//! class = "apple"               # architecture (prefix), class, memory or device id
//! compute_efficiency = 0.8
//! ```
//!
//! A `base` is another table of the same file or an engine already loaded (a built-in
//! one for `--engine-file`). Inherited: every factor, flag and setting; not inherited:
//! `description`, `fitted_on`, `factors` (where each factor came from, as
//! [`FactorTag`] sentences) and `override`. Files written before the selectors keep
//! loading: `apple_compute_efficiency`, `rdna_compute_efficiency` and
//! `rdna_expert_overhead_s` are read as the overrides `class = "apple"` and
//! `architecture = "rdna"`.

use super::{
    DeviceFactor, DeviceOverride, Engine, FactorTag, Features, Footprint, Overheads, Provenance,
    Scheduler, Selector, Speed,
};
use crate::error::{Error, Result};
use crate::hardware::DeviceClass;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One engine table as written: every field optional, so that a table with a `base`
/// may leave out what it inherits.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct EngineFile {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    base: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    memory_efficiency: Option<BTreeMap<String, f64>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    compute_efficiency: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    apple_compute_efficiency: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    rdna_compute_efficiency: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    link_efficiency: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    dequant_efficiency: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    fp4_efficiency: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    attention_efficiency: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    expert_memory_efficiency: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    gemv_compute_efficiency: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    fp4_tensor_cores: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    int8_mma: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    fp16_accumulate: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    warpgroup_mma: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    kv_concat: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    fp32_scores: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    gemm_half_rows: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    step_overhead_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sequence_overhead_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    layer_overhead_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    prefill_layer_overhead_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    expert_overhead_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    rdna_expert_overhead_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    gemv_s_per_gflop: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    collective_latency_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    overhead_bytes: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reserve_fraction: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    max_batched_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    max_num_seqs: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    kv_block_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    fitted_on: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    factors: Option<BTreeMap<String, String>>,
    #[serde(default, rename = "override", skip_serializing_if = "Option::is_none")]
    override_builtin: Option<bool>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    device: Vec<DeviceFile>,
}

/// One `[[engine.device]]` table: the selector's criteria beside the factors.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct DeviceFile {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    architecture: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    class: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    memory: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    device: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    compute_efficiency: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    expert_overhead_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    memory_efficiency: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    gemv_s_per_gflop: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    expert_memory_efficiency: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    gemv_compute_efficiency: Option<f64>,
}

impl DeviceFile {
    fn into_override(self) -> DeviceOverride {
        DeviceOverride {
            select: Selector {
                architecture: self.architecture,
                class: self.class,
                memory: self.memory,
                device: self.device,
            },
            compute_efficiency: self.compute_efficiency,
            expert_overhead_s: self.expert_overhead_s,
            memory_efficiency: self.memory_efficiency,
            gemv_s_per_gflop: self.gemv_s_per_gflop,
            expert_memory_efficiency: self.expert_memory_efficiency,
            gemv_compute_efficiency: self.gemv_compute_efficiency,
        }
    }

    fn of(o: &DeviceOverride) -> DeviceFile {
        DeviceFile {
            architecture: o.select.architecture.clone(),
            class: o.select.class.clone(),
            memory: o.select.memory.clone(),
            device: o.select.device.clone(),
            compute_efficiency: o.compute_efficiency,
            expert_overhead_s: o.expert_overhead_s,
            memory_efficiency: o.memory_efficiency,
            gemv_s_per_gflop: o.gemv_s_per_gflop,
            expert_memory_efficiency: o.expert_memory_efficiency,
            gemv_compute_efficiency: o.gemv_compute_efficiency,
        }
    }
}

/// `Some(v)` unless `v` is the default a reader fills in (then left out).
fn unless<T: PartialEq>(v: T, default: T) -> Option<T> {
    (v != default).then_some(v)
}

impl EngineFile {
    /// The table that writes `e` (the defaults of the optional factors left out, as
    /// the schema has always written them). `legacy`: also the keys of files written
    /// before the selectors, for the overrides they name (the JSON form keeps them).
    fn of(e: &Engine, legacy: bool) -> EngineFile {
        let old = |select: Selector, f: DeviceFactor| {
            legacy.then(|| e.override_value(&select, f)).flatten()
        };
        let (sp, oh, f, sc, fp) = (
            &e.speed,
            &e.overheads,
            &e.features,
            &e.scheduler,
            &e.footprint,
        );
        EngineFile {
            id: Some(e.id.clone()),
            description: Some(e.description.clone()),
            base: e.provenance.base.clone(),
            memory_efficiency: Some(sp.memory_efficiency.clone()),
            compute_efficiency: Some(sp.compute_efficiency),
            apple_compute_efficiency: old(
                Selector::class(DeviceClass::Apple),
                DeviceFactor::ComputeEfficiency,
            ),
            rdna_compute_efficiency: old(
                Selector::architecture("rdna"),
                DeviceFactor::ComputeEfficiency,
            ),
            link_efficiency: Some(sp.link_efficiency),
            dequant_efficiency: unless(sp.dequant_efficiency, 1.0),
            fp4_efficiency: unless(sp.fp4_efficiency, 1.0),
            attention_efficiency: unless(sp.attention_efficiency, 1.0),
            expert_memory_efficiency: unless(sp.expert_memory_efficiency, 1.0),
            gemv_compute_efficiency: unless(sp.gemv_compute_efficiency, 0.0),
            fp4_tensor_cores: unless(f.fp4_tensor_cores, true),
            int8_mma: unless(f.int8_mma, false),
            fp16_accumulate: unless(f.fp16_accumulate, false),
            warpgroup_mma: unless(f.warpgroup_mma, true),
            kv_concat: unless(f.kv_concat, false),
            fp32_scores: unless(f.fp32_scores, false),
            gemm_half_rows: unless(sp.gemm_half_rows, 0.0),
            step_overhead_s: Some(oh.step_overhead_s),
            sequence_overhead_s: unless(oh.sequence_overhead_s, 0.0),
            layer_overhead_s: Some(oh.layer_overhead_s),
            prefill_layer_overhead_s: unless(oh.prefill_layer_overhead_s, 0.0),
            expert_overhead_s: unless(oh.expert_overhead_s, 0.0),
            rdna_expert_overhead_s: old(
                Selector::architecture("rdna"),
                DeviceFactor::ExpertOverhead,
            ),
            gemv_s_per_gflop: unless(oh.gemv_s_per_gflop, 0.0),
            collective_latency_s: Some(oh.collective_latency_s),
            overhead_bytes: Some(fp.overhead_bytes),
            reserve_fraction: Some(fp.reserve_fraction),
            max_batched_tokens: sc.max_batched_tokens,
            max_num_seqs: sc.max_num_seqs,
            kv_block_tokens: sc.kv_block_tokens,
            fitted_on: Some(e.provenance.fitted_on.clone()),
            factors: (!e.provenance.factors.is_empty()).then(|| {
                (e.provenance.factors.iter())
                    .map(|(k, t)| (k.clone(), t.to_string()))
                    .collect()
            }),
            override_builtin: unless(e.override_builtin, false),
            device: e.devices.iter().map(DeviceFile::of).collect(),
        }
    }

    /// The legacy per-family keys moved into `device` entries (after the table's own
    /// entries, which take precedence); a value out of range is named by its key.
    fn move_legacy(&mut self, error: &dyn Fn(String) -> Error) -> Result<()> {
        // the ranges and messages of Engine::validate
        for (key, v, min, max, range) in [
            (
                "apple_compute_efficiency",
                self.apple_compute_efficiency,
                1e-3,
                1.0,
                "[0.001, 1]",
            ),
            (
                "rdna_compute_efficiency",
                self.rdna_compute_efficiency,
                1e-3,
                1.0,
                "[0.001, 1]",
            ),
            (
                "rdna_expert_overhead_s",
                self.rdna_expert_overhead_s,
                0.0,
                0.01,
                "[0, 1e-2]",
            ),
        ] {
            if let Some(v) = v.filter(|v| !(v.is_finite() && (min..=max).contains(v))) {
                return Err(error(format!("{key}: must be in {range}, got {v}")));
            }
        }
        let legacy = [
            (
                Selector::class(DeviceClass::Apple),
                self.apple_compute_efficiency.take(),
                None,
            ),
            (
                Selector::architecture("rdna"),
                self.rdna_compute_efficiency.take(),
                self.rdna_expert_overhead_s.take(),
            ),
        ];
        for (select, compute, expert) in legacy {
            if compute.is_none() && expert.is_none() {
                continue;
            }
            self.device.push(DeviceFile::of(&DeviceOverride {
                select,
                compute_efficiency: compute,
                expert_overhead_s: expert,
                memory_efficiency: None,
                gemv_s_per_gflop: None,
                expert_memory_efficiency: None,
                gemv_compute_efficiency: None,
            }));
        }
        Ok(())
    }

    /// `self` with every field it leaves out taken from `base` (the memory efficiencies
    /// merged key by key, the base's device overrides after its own) and the base's tag
    /// of each factor it leaves out; description, `fitted_on` and `override` are not
    /// inherited.
    fn inherit(mut self, base: &Engine) -> EngineFile {
        let b = EngineFile::of(base, false);
        // the base's tags of the factors this table leaves out (a device-keyed one only
        // where the table has no device entries of its own)
        let given = self.given_keys();
        let own_devices = !self.device.is_empty();
        let mut tags = self.factors.take().unwrap_or_default();
        for (k, t) in b.factors.clone().unwrap_or_default() {
            let keyed = k.contains('(') || k.starts_with("apple_") || k.starts_with("rdna_");
            if !(given.contains(&k) || keyed && own_devices) {
                tags.entry(k).or_insert(t);
            }
        }
        self.factors = (!tags.is_empty()).then_some(tags);
        macro_rules! take {
            ($($f:ident),*) => { $( if self.$f.is_none() { self.$f = b.$f; } )* };
        }
        take!(
            compute_efficiency,
            link_efficiency,
            dequant_efficiency,
            fp4_efficiency,
            attention_efficiency,
            expert_memory_efficiency,
            gemv_compute_efficiency,
            fp4_tensor_cores,
            int8_mma,
            fp16_accumulate,
            warpgroup_mma,
            kv_concat,
            fp32_scores,
            gemm_half_rows,
            step_overhead_s,
            sequence_overhead_s,
            layer_overhead_s,
            prefill_layer_overhead_s,
            expert_overhead_s,
            gemv_s_per_gflop,
            collective_latency_s,
            overhead_bytes,
            reserve_fraction,
            max_batched_tokens,
            max_num_seqs,
            kv_block_tokens
        );
        let mut memory = b.memory_efficiency.unwrap_or_default();
        memory.extend(self.memory_efficiency.take().unwrap_or_default());
        self.memory_efficiency = Some(memory);
        let own: Vec<Selector> = self
            .device
            .iter()
            .map(|d| d.clone().into_override().select)
            .collect();
        self.device.extend(
            base.devices
                .iter()
                .filter(|o| !own.contains(&o.select))
                .map(DeviceFile::of),
        );
        self
    }

    /// The factor names (as the `factors` table keys them) whose values this table
    /// gives itself.
    fn given_keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = (self.memory_efficiency.iter().flatten())
            .map(|(g, _)| format!("memory_efficiency.{g}"))
            .collect();
        for (key, given) in [
            ("compute_efficiency", self.compute_efficiency.is_some()),
            ("dequant_efficiency", self.dequant_efficiency.is_some()),
            ("fp4_efficiency", self.fp4_efficiency.is_some()),
            ("attention_efficiency", self.attention_efficiency.is_some()),
            (
                "expert_memory_efficiency",
                self.expert_memory_efficiency.is_some(),
            ),
            ("step_overhead_s", self.step_overhead_s.is_some()),
            ("sequence_overhead_s", self.sequence_overhead_s.is_some()),
            ("layer_overhead_s", self.layer_overhead_s.is_some()),
            (
                "prefill_layer_overhead_s",
                self.prefill_layer_overhead_s.is_some(),
            ),
            ("expert_overhead_s", self.expert_overhead_s.is_some()),
            ("gemv_s_per_gflop", self.gemv_s_per_gflop.is_some()),
            (
                "gemv_compute_efficiency",
                self.gemv_compute_efficiency.is_some(),
            ),
        ] {
            if given {
                keys.push(key.to_string());
            }
        }
        keys
    }

    /// The engine this table describes; `None` fields take the schema's defaults, and
    /// the two factors every profile needs are named when missing.
    fn into_engine(self, id: &str, src: &str) -> Result<Engine> {
        let missing = |field: &str| Error::Parse {
            source_name: src.to_string(),
            message: format!(
                "engine '{id}': missing field `{field}` (give it, or `base = \"typical\"` to inherit it)"
            ),
        };
        let mut factors = BTreeMap::new();
        for (k, v) in self.factors.unwrap_or_default() {
            let tag = v.parse::<FactorTag>().map_err(|m| Error::Parse {
                source_name: src.to_string(),
                message: format!("engine '{id}': factors.{k}: {m}"),
            })?;
            factors.insert(k, tag);
        }
        Ok(Engine {
            id: id.to_string(),
            description: self.description.unwrap_or_default(),
            speed: Speed {
                memory_efficiency: self
                    .memory_efficiency
                    .ok_or_else(|| missing("memory_efficiency"))?,
                compute_efficiency: self
                    .compute_efficiency
                    .ok_or_else(|| missing("compute_efficiency"))?,
                link_efficiency: self.link_efficiency.unwrap_or(1.0),
                dequant_efficiency: self.dequant_efficiency.unwrap_or(1.0),
                fp4_efficiency: self.fp4_efficiency.unwrap_or(1.0),
                attention_efficiency: self.attention_efficiency.unwrap_or(1.0),
                expert_memory_efficiency: self.expert_memory_efficiency.unwrap_or(1.0),
                gemv_compute_efficiency: self.gemv_compute_efficiency.unwrap_or(0.0),
                gemm_half_rows: self.gemm_half_rows.unwrap_or(0.0),
            },
            overheads: Overheads {
                step_overhead_s: self.step_overhead_s.unwrap_or(0.0),
                sequence_overhead_s: self.sequence_overhead_s.unwrap_or(0.0),
                layer_overhead_s: self.layer_overhead_s.unwrap_or(0.0),
                prefill_layer_overhead_s: self.prefill_layer_overhead_s.unwrap_or(0.0),
                expert_overhead_s: self.expert_overhead_s.unwrap_or(0.0),
                gemv_s_per_gflop: self.gemv_s_per_gflop.unwrap_or(0.0),
                collective_latency_s: self.collective_latency_s.unwrap_or(0.0),
            },
            features: Features {
                fp4_tensor_cores: self.fp4_tensor_cores.unwrap_or(true),
                int8_mma: self.int8_mma.unwrap_or(false),
                fp16_accumulate: self.fp16_accumulate.unwrap_or(false),
                warpgroup_mma: self.warpgroup_mma.unwrap_or(true),
                kv_concat: self.kv_concat.unwrap_or(false),
                fp32_scores: self.fp32_scores.unwrap_or(false),
            },
            scheduler: Scheduler {
                max_batched_tokens: self.max_batched_tokens,
                max_num_seqs: self.max_num_seqs,
                kv_block_tokens: self.kv_block_tokens,
            },
            footprint: Footprint {
                overhead_bytes: self.overhead_bytes.unwrap_or(0.0),
                reserve_fraction: self.reserve_fraction.unwrap_or(0.0),
            },
            devices: self
                .device
                .into_iter()
                .map(DeviceFile::into_override)
                .collect(),
            provenance: Provenance {
                fitted_on: self.fitted_on.unwrap_or_default(),
                base: self.base,
                on_tables: false,
                factors,
                kernels_of: None,
            },
            override_builtin: self.override_builtin.unwrap_or(false),
        })
    }
}

/// The JSON form (`calibrate --json`): the file's fields, and for the Apple and RDNA
/// overrides also the keys files used before the selectors.
impl Serialize for Engine {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        EngineFile::of(self, true).serialize(s)
    }
}

/// An engine as a table of an engines file (what `calibrate --save` writes): the
/// overrides as `device` entries only.
pub struct Table<'a>(pub &'a Engine);

impl Serialize for Table<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        EngineFile::of(self.0, false).serialize(s)
    }
}

/// The engines of an engines TOML document, in id order, each with its base resolved
/// (within the document first, then by `loaded`) and its ranges checked.
pub(super) fn parse(text: &str, src: &str, loaded: &[Engine]) -> Result<Vec<Engine>> {
    let parse_error = |message: String| Error::Parse {
        source_name: src.to_string(),
        message,
    };
    let tables: BTreeMap<String, EngineFile> =
        toml::from_str(text).map_err(|e| parse_error(e.to_string().trim().replace('\n', " ")))?;
    let mut done: BTreeMap<String, Engine> = BTreeMap::new();
    for id in tables.keys() {
        resolve(id, &tables, loaded, src, &mut done, &mut Vec::new())?;
    }
    let engines: Vec<Engine> = done.into_values().collect();
    for e in &engines {
        e.validate(src)?;
    }
    Ok(engines)
}

fn resolve(
    id: &str,
    tables: &BTreeMap<String, EngineFile>,
    loaded: &[Engine],
    src: &str,
    done: &mut BTreeMap<String, Engine>,
    chain: &mut Vec<String>,
) -> Result<Engine> {
    if let Some(e) = done.get(id) {
        return Ok(e.clone());
    }
    let error = |message: String| Error::Parse {
        source_name: src.to_string(),
        message: format!("engine '{id}': {message}"),
    };
    let mut table = tables[id].clone();
    table.move_legacy(&error)?;
    if let Some(base) = table.base.clone() {
        if base == id || chain.iter().any(|c| c == &base) {
            return Err(error(format!("base = \"{base}\" inherits from itself")));
        }
        let parent = if tables.contains_key(&base) {
            chain.push(id.to_string());
            let p = resolve(&base, tables, loaded, src, done, chain)?;
            chain.pop();
            p
        } else {
            match loaded.iter().find(|e| e.id == base) {
                Some(e) => e.clone(),
                None => {
                    let known = tables
                        .keys()
                        .map(String::as_str)
                        .chain(loaded.iter().map(|e| e.id.as_str()))
                        .filter(|k| *k != id);
                    let near = crate::error::closest(&base, known, 3);
                    return Err(error(format!(
                        "base = \"{base}\" is no engine of this file or loaded before{}",
                        if near.is_empty() {
                            String::new()
                        } else {
                            format!(" (did you mean {}?)", near.join(", "))
                        }
                    )));
                }
            }
        };
        table = table.inherit(&parent);
        let mut engine = table.into_engine(id, src)?;
        let root = parent
            .provenance
            .kernels_of
            .as_deref()
            .unwrap_or(&parent.id);
        engine.provenance.kernels_of = Some(root.to_string());
        done.insert(id.to_string(), engine.clone());
        return Ok(engine);
    }
    let engine = table.into_engine(id, src)?;
    done.insert(id.to_string(), engine.clone());
    Ok(engine)
}
