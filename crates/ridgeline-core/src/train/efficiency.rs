//! Training efficiency factors per chip architecture, from `data/training.toml`.
//!
//! Each factor is a fraction of the device's own ceiling (dense matmul peak, memory
//! bandwidth, link bandwidth) reached by a training stack, or the fraction of a
//! communication hidden behind compute. The table is keyed by the hardware files'
//! `architecture` field (`ampere`, `hopper`, ...); an entry may reuse another's factors
//! (`uses = "hopper"`), and devices whose architecture has no entry get the table's
//! `fallback`, labelled `uncalibrated`. The factors are fitted to published runs by
//! `ridgeline::train::calibrate::fit` (`ridgeline calibrate --train`, in `ridgeline-fit`), which also writes the file.

use super::kinds::TrainStack;
use crate::dtype::ComputeDtype;
use crate::error::{Error, Result};
use crate::hardware::Hardware;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// The bundled `data/training.toml`.
pub(crate) const BUILTIN_TRAINING_TOML: &str = include_str!("../../../../data/training.toml");

/// Efficiency factors of a training stack on one hardware generation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrainEfficiency {
    /// What the factors are for (`ampere`, `hopper`, `uncalibrated`, ...).
    pub label: String,
    /// Fraction of the dense 16-bit peak reached by compute-bound kernels.
    pub compute: f64,
    /// Fraction of the dense fp8 peak reached by fp8 matmuls.
    pub compute_fp8: f64,
    /// Fraction of the dense 16-bit peak reached by the attention core (fused kernels,
    /// forward and backward); at most `compute`.
    pub attention: f64,
    /// Fraction of memory bandwidth reached by memory-bound kernels.
    pub memory: f64,
    /// Fraction of link bandwidth reached by collectives.
    pub link: f64,
    /// Fraction of data-parallel communication hidden behind compute.
    pub overlap_dp: f64,
    /// Fraction of tensor-parallel communication hidden behind compute.
    pub overlap_tp: f64,
    /// The measured attention kernels the attention core runs at
    /// (`data/kernels/training-attention.toml`, [`super::attention`]), by id: where set,
    /// a step's attention takes their fraction at its query length, and `attention`
    /// holds their largest.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attention_measured: Option<String>,
}

impl TrainEfficiency {
    /// The factors for `hw`'s architecture under the generic stack from the bundled
    /// table (the fallback, labelled `uncalibrated`, when the architecture has no entry
    /// or is unknown); see [`EfficiencyTable::for_stack`].
    ///
    /// ```
    /// use ridgeline_core::hardware::HardwareDb;
    /// use ridgeline_core::train::{EfficiencyTable, TrainEfficiency};
    /// let db = HardwareDb::builtin()?;
    /// assert_eq!(TrainEfficiency::for_hardware(db.get("a100")?)?.label, "ampere");
    /// // the H100 takes the generic Hopper entry, its attention at measured kernels
    /// let hopper = &EfficiencyTable::builtin()?.get("hopper").unwrap().efficiency;
    /// assert_eq!(&TrainEfficiency::for_hardware(db.get("h100")?)?, hopper);
    /// assert_eq!(hopper.attention_measured.as_deref(), Some("flash-attention-2-hopper"));
    /// assert_eq!(TrainEfficiency::for_hardware(db.get("v100")?)?.label, "uncalibrated");
    /// # Ok::<(), ridgeline_core::Error>(())
    /// ```
    pub fn for_hardware(hw: &Hardware) -> Result<TrainEfficiency> {
        Ok(EfficiencyTable::builtin()?.for_hardware(hw))
    }

    /// The attention core's fraction of the 16-bit peak for a query of `query_tokens`
    /// tokens (a step's `seq / cp`): the measured kernels' at that length where the
    /// entry names them ([`super::attention::MeasuredAttention::fraction_at`]), else
    /// `attention`.
    pub fn attention_at(&self, query_tokens: u64) -> f64 {
        self.attention_measured
            .as_deref()
            .and_then(|id| super::attention::kernels().ok()?.get(id))
            .map_or(self.attention, |k| k.fraction_at(query_tokens))
    }

    /// Compute fraction for matmuls in `dtype`.
    pub(crate) fn compute_for(&self, dtype: ComputeDtype) -> f64 {
        match dtype {
            ComputeDtype::Fp8 | ComputeDtype::Int8 | ComputeDtype::Fp4 | ComputeDtype::Int4 => {
                self.compute_fp8
            }
            _ => self.compute,
        }
    }

    /// The seven factors by name, as `training.toml` writes them: the five fractions of
    /// a ceiling, then the two overlaps.
    pub fn factors(&self) -> [(&'static str, f64); 7] {
        [
            ("compute", self.compute),
            ("compute_fp8", self.compute_fp8),
            ("attention", self.attention),
            ("memory", self.memory),
            ("link", self.link),
            ("overlap_dp", self.overlap_dp),
            ("overlap_tp", self.overlap_tp),
        ]
    }

    /// Checks every fraction: the ceilings' in (0, 1], the overlaps in [0, 1], and
    /// `attention <= compute` (which bounds HFU by `compute`, see [`super::step`])
    /// unless the attention is measured (`attention_measured`, whose kernels must exist
    /// and whose largest fraction `attention` must be); errors name the field as
    /// `efficiency.<factor>`.
    pub(crate) fn validate(&self) -> Result<()> {
        let factors = self.factors();
        let (ceilings, overlaps) = factors.split_at(5);
        for (f, v) in ceilings {
            if !(v.is_finite() && *v > 0.0 && *v <= 1.0) {
                return Err(Error::invalid(
                    format!("efficiency.{f}"),
                    format!("must be in (0, 1], got {v}"),
                ));
            }
        }
        for (f, v) in overlaps {
            if !(v.is_finite() && (0.0..=1.0).contains(v)) {
                return Err(Error::invalid(
                    format!("efficiency.{f}"),
                    format!("must be in [0, 1], got {v}"),
                ));
            }
        }
        if let Some(id) = &self.attention_measured {
            let Some(k) = super::attention::kernels()?.get(id) else {
                return Err(Error::unknown(
                    "efficiency.attention_measured",
                    id,
                    super::attention::kernels()?.keys().map(String::as_str),
                ));
            };
            if (self.attention - k.max_fraction()).abs() > 5e-4 {
                return Err(Error::invalid(
                    "efficiency.attention",
                    format!(
                        "{} is not the largest fraction of the measured kernels '{id}', {:.3}",
                        self.attention,
                        k.max_fraction()
                    ),
                ));
            }
        }
        // measured attention kernels may run closer to the peak than the matmuls'
        // fitted fraction, which holds a whole step's losses
        if self.attention_measured.is_none() && self.attention > self.compute {
            return Err(Error::invalid(
                "efficiency.attention",
                format!(
                    "{} is above compute {}: the attention core does not run closer to the peak than the dense matmuls",
                    self.attention, self.compute
                ),
            ));
        }
        Ok(())
    }
}

/// One architecture's entry of the table, with what it was fitted on.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TableEntry {
    /// The factors (another entry's when `uses` is set).
    pub efficiency: TrainEfficiency,
    /// The entry whose factors this one reuses (`uses = "hopper"`).
    pub uses: Option<String>,
    /// Measurement rows the factors were fitted on.
    pub fitted_on: Vec<String>,
    /// Devices of those rows.
    pub devices: Vec<String>,
    /// Median |predicted / measured - 1| over those rows.
    pub median_abs_error: Option<f64>,
    /// `predicted / measured - 1` per row.
    pub residuals: BTreeMap<String, f64>,
}

/// The efficiency table: one entry per architecture and a fallback.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EfficiencyTable {
    /// Entries by architecture.
    pub architectures: BTreeMap<String, TableEntry>,
    /// For devices whose architecture has no entry.
    pub fallback: TableEntry,
}

/// An entry as written in the file: seven factors, or `uses`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct EntryFile {
    label: Option<String>,
    uses: Option<String>,
    compute: Option<f64>,
    compute_fp8: Option<f64>,
    attention: Option<f64>,
    memory: Option<f64>,
    link: Option<f64>,
    overlap_dp: Option<f64>,
    overlap_tp: Option<f64>,
    attention_measured: Option<String>,
    #[serde(default)]
    fitted_on: Vec<String>,
    #[serde(default)]
    devices: Vec<String>,
    median_abs_error: Option<f64>,
    #[serde(default)]
    residuals: BTreeMap<String, f64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TableFile {
    #[serde(default)]
    architecture: BTreeMap<String, EntryFile>,
    fallback: EntryFile,
}

impl EntryFile {
    fn factors(&self, label: &str) -> Option<TrainEfficiency> {
        Some(TrainEfficiency {
            label: label.to_string(),
            compute: self.compute?,
            compute_fp8: self.compute_fp8?,
            attention: self.attention?,
            memory: self.memory?,
            link: self.link?,
            overlap_dp: self.overlap_dp?,
            overlap_tp: self.overlap_tp?,
            attention_measured: self.attention_measured.clone(),
        })
    }

    fn any_factor(&self) -> bool {
        [
            self.compute,
            self.compute_fp8,
            self.attention,
            self.memory,
            self.link,
            self.overlap_dp,
            self.overlap_tp,
        ]
        .iter()
        .any(Option::is_some)
            || self.attention_measured.is_some()
    }

    /// The entry named `key`, with `uses` resolved against the entries with factors.
    fn resolve(
        self,
        key: &str,
        direct: &BTreeMap<String, TrainEfficiency>,
    ) -> std::result::Result<TableEntry, String> {
        let label = self.label.clone().unwrap_or_else(|| key.to_string());
        let efficiency = match (&self.uses, self.any_factor()) {
            (Some(_), true) => return Err(format!("{key}: give either `uses` or the factors")),
            (Some(u), false) => TrainEfficiency {
                label,
                ..direct
                    .get(u)
                    .ok_or_else(|| format!("{key}: uses '{u}', which has no factors"))?
                    .clone()
            },
            (None, _) => self.factors(&label).ok_or_else(|| {
                format!("{key}: needs compute, compute_fp8, attention, memory, link, overlap_dp and overlap_tp (or `uses`)")
            })?,
        };
        efficiency.validate().map_err(|e| format!("{key}: {e}"))?;
        Ok(TableEntry {
            efficiency,
            uses: self.uses,
            fitted_on: self.fitted_on,
            devices: self.devices,
            median_abs_error: self.median_abs_error,
            residuals: self.residuals,
        })
    }
}

impl EfficiencyTable {
    /// Parses a `training.toml` document; `source_name` names it in errors.
    pub fn from_toml(text: &str, source_name: &str) -> Result<EfficiencyTable> {
        let parse_err = |message: String| super::parse_error(source_name, message);
        let file: TableFile = super::parse_toml(text, source_name)?;
        let direct: BTreeMap<String, TrainEfficiency> = file
            .architecture
            .iter()
            .filter(|(_, e)| e.uses.is_none())
            .filter_map(|(k, e)| Some((k.clone(), e.factors(k)?)))
            .collect();
        let mut architectures = BTreeMap::new();
        for (key, entry) in file.architecture {
            let resolved = entry.resolve(&key, &direct).map_err(parse_err)?;
            architectures.insert(key, resolved);
        }
        let fallback = file
            .fallback
            .resolve("fallback", &direct)
            .map_err(parse_err)?;
        Ok(EfficiencyTable {
            architectures,
            fallback,
        })
    }

    /// The bundled table (parsed once).
    pub fn builtin() -> Result<&'static EfficiencyTable> {
        static TABLE: OnceLock<Result<EfficiencyTable>> = OnceLock::new();
        super::parsed_once(&TABLE, || {
            EfficiencyTable::from_toml(BUILTIN_TRAINING_TOML, "data/training.toml")
        })
    }

    /// The entry for an architecture (case-insensitive), if the table has one.
    pub fn get(&self, architecture: &str) -> Option<&TableEntry> {
        self.architectures
            .get(&architecture.trim().to_ascii_lowercase())
    }

    /// The factors for `hw` under the generic stack: [`EfficiencyTable::for_stack`].
    pub(crate) fn for_hardware(&self, hw: &Hardware) -> TrainEfficiency {
        self.for_stack(hw, TrainStack::Generic)
    }

    /// The factors for `hw` trained with `stack`: the entry of its architecture and the
    /// stack ([`table_key`]), else its architecture's entry of the other stack (a
    /// chip's generation matters more than the stack), else the fallback (for a
    /// fallback that `uses` an architecture, that architecture's entry of the stack,
    /// under the fallback's label).
    ///
    /// ```
    /// use ridgeline_core::hardware::HardwareDb;
    /// use ridgeline_core::train::{EfficiencyTable, TrainStack};
    /// let t = EfficiencyTable::builtin()?;
    /// let h100 = HardwareDb::builtin()?.get("h100")?;
    /// let (generic, megatron) = (t.for_stack(h100, TrainStack::Generic), t.for_stack(h100, TrainStack::Megatron));
    /// assert_eq!((generic.label.as_str(), megatron.label.as_str()), ("hopper", "hopper+megatron"));
    /// assert!(megatron.compute > generic.compute);
    /// # Ok::<(), ridgeline_core::Error>(())
    /// ```
    pub fn for_stack(&self, hw: &Hardware, stack: TrainStack) -> TrainEfficiency {
        let arch = hw.architecture.trim().to_ascii_lowercase();
        let own = if arch.is_empty() {
            0
        } else {
            TrainStack::ALL.len()
        };
        let keys = lookup_keys(&arch, stack, self.fallback.uses.as_deref());
        match keys
            .iter()
            .enumerate()
            .find_map(|(i, k)| Some((i, self.get(k)?)))
        {
            Some((i, e)) if i < own => e.efficiency.clone(),
            Some((_, e)) => TrainEfficiency {
                label: self.fallback.efficiency.label.clone(),
                ..e.efficiency.clone()
            },
            None => self.fallback.efficiency.clone(),
        }
    }
}

/// The table keys [`EfficiencyTable::for_stack`] tries for `architecture` and `stack`,
/// in order: the architecture's entry of the stack, of its other stacks (a chip's
/// generation matters more than the stack), then the same for the architecture the
/// fallback `uses` (none for an empty architecture, and the fallback's once).
///
/// ```
/// use ridgeline_core::train::{TrainStack, efficiency::lookup_keys};
/// assert_eq!(
///     lookup_keys("ada", TrainStack::Megatron, Some("hopper")),
///     ["ada+megatron", "ada", "hopper+megatron", "hopper"]
/// );
/// assert_eq!(lookup_keys("", TrainStack::Generic, Some("hopper")), ["hopper", "hopper+megatron"]);
/// ```
pub fn lookup_keys(architecture: &str, stack: TrainStack, fallback: Option<&str>) -> Vec<String> {
    let of = |a: &str| {
        std::iter::once(stack)
            .chain(TrainStack::ALL.iter().copied().filter(move |&s| s != stack))
            .map(move |s| table_key(a, s))
            .collect::<Vec<_>>()
    };
    let mut keys = if architecture.is_empty() {
        Vec::new()
    } else {
        of(architecture)
    };
    if let Some(f) = fallback.filter(|f| *f != architecture) {
        keys.extend(of(f));
    }
    keys
}

/// The architecture and training stack of a table key (`hopper+megatron`: hopper,
/// megatron; an unknown suffix reads as the generic stack).
pub fn split_key(key: &str) -> (&str, TrainStack) {
    match key.split_once('+') {
        Some((a, s)) => (a, TrainStack::parse(s).unwrap_or(TrainStack::Generic)),
        None => (key, TrainStack::Generic),
    }
}

/// The key of an architecture's entry for a training stack: the architecture for the
/// generic stack (`hopper`), `architecture+stack` for the others (`hopper+megatron`).
pub fn table_key(architecture: &str, stack: TrainStack) -> String {
    match stack {
        TrainStack::Generic => architecture.to_string(),
        _ => format!("{architecture}+{}", stack.name()),
    }
}
