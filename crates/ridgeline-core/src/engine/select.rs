//! Which devices a per-device override of an engine profile applies to: a [`Selector`]
//! of architecture, device class, memory technology or device id, and the
//! [`DeviceOverride`] that carries the factors it changes.

use crate::hardware::{DeviceClass, Hardware};
use serde::{Deserialize, Serialize};

/// The names of [`DeviceClass`] as used in `memory_efficiency` keys and selectors.
pub fn class_key(c: DeviceClass) -> &'static str {
    match c {
        DeviceClass::Datacenter => "datacenter",
        DeviceClass::Workstation => "workstation",
        DeviceClass::Consumer => "consumer",
        DeviceClass::Apple => "apple",
        DeviceClass::Tpu => "tpu",
        DeviceClass::Gaudi => "gaudi",
    }
}

/// Device class keys, in [`DeviceClass`] order.
pub const CLASS_KEYS: [&str; 6] = [
    "datacenter",
    "workstation",
    "consumer",
    "apple",
    "tpu",
    "gaudi",
];

/// Memory technology keys ([`memory_key`]).
pub const MEMORY_TECHNOLOGIES: [&str; 3] = ["hbm", "gddr", "lpddr"];

/// The memory technology key of a device: `hbm`, `gddr` or `lpddr` from its memory
/// type, or `None` for anything else.
pub fn memory_key(hw: &Hardware) -> Option<&'static str> {
    let t = hw.memory.kind.trim().to_ascii_uppercase();
    if t.starts_with("HBM") {
        Some("hbm")
    } else if t.starts_with("GDDR") {
        Some("gddr")
    } else if t.starts_with("LPDDR") {
        Some("lpddr")
    } else {
        None
    }
}

/// The devices an override applies to: every criterion given must hold (at least one
/// is given). In an engine file the criteria sit beside the factors they set:
///
/// ```toml
/// [[typical.device]]
/// class = "apple"
/// compute_efficiency = 0.75
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Selector {
    /// A prefix of the hardware file's `architecture` (`rdna` selects `rdna3` and
    /// `rdna3.5`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub architecture: Option<String>,
    /// A device class ([`CLASS_KEYS`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<String>,
    /// A memory technology ([`MEMORY_TECHNOLOGIES`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<String>,
    /// A hardware id (`h100-sxm`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
}

impl Selector {
    /// Every device of class `c`.
    pub fn class(c: DeviceClass) -> Selector {
        Selector {
            class: Some(class_key(c).to_string()),
            ..Selector::default()
        }
    }

    /// The one device with hardware id `id`.
    pub fn device(id: &str) -> Selector {
        Selector {
            device: Some(id.to_string()),
            ..Selector::default()
        }
    }

    /// Every device whose architecture starts with `prefix`.
    pub fn architecture(prefix: &str) -> Selector {
        Selector {
            architecture: Some(prefix.to_string()),
            ..Selector::default()
        }
    }

    /// Whether `hw` is one of the devices selected.
    pub fn matches(&self, hw: &Hardware) -> bool {
        self.architecture
            .as_deref()
            .is_none_or(|a| hw.architecture.starts_with(a))
            && self
                .class
                .as_deref()
                .is_none_or(|c| class_key(hw.class) == c)
            && self
                .memory
                .as_deref()
                .is_none_or(|m| memory_key(hw) == Some(m))
            && self.device.as_deref().is_none_or(|d| hw.id == d)
    }

    /// The criteria as `key = "value"` pairs, for messages (`class = "apple"`).
    pub(crate) fn describe(&self) -> String {
        [
            ("architecture", &self.architecture),
            ("class", &self.class),
            ("memory", &self.memory),
            ("device", &self.device),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.as_ref().map(|v| format!("{k} = \"{v}\"")))
        .collect::<Vec<_>>()
        .join(", ")
    }

    /// Why the selector is malformed (no criterion, an unknown class or memory key, an
    /// empty value), or `None`.
    pub(crate) fn problem(&self) -> Option<String> {
        let given = [&self.architecture, &self.class, &self.memory, &self.device];
        if given.iter().all(|v| v.is_none()) {
            return Some(
                "selects no device: give architecture, class, memory or device".to_string(),
            );
        }
        if given
            .iter()
            .any(|v| v.as_deref().is_some_and(|v| v.trim().is_empty()))
        {
            return Some("a selector value is empty".to_string());
        }
        if let Some(c) = self.class.as_deref().filter(|c| !CLASS_KEYS.contains(c)) {
            return Some(format!(
                "class '{c}' is no device class; valid: {}",
                CLASS_KEYS.join(", ")
            ));
        }
        if let Some(m) = self
            .memory
            .as_deref()
            .filter(|m| !MEMORY_TECHNOLOGIES.contains(m))
        {
            return Some(format!(
                "memory '{m}' is no memory technology; valid: {}",
                MEMORY_TECHNOLOGIES.join(", ")
            ));
        }
        None
    }
}

/// Factors an engine reaches on the devices a [`Selector`] picks, where they differ
/// from its general ones (Apple GPUs' matmuls, which have no tensor cores; AMD RDNA's
/// WMMA and its expert matmuls); `None`: the general factor.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DeviceOverride {
    /// The devices it applies to.
    pub select: Selector,
    /// Fraction of the selected devices' dense peak the matmuls reach.
    pub compute_efficiency: Option<f64>,
    /// Time per routed expert matrix of a GEMM-path pass on the selected devices, s.
    pub expert_overhead_s: Option<f64>,
    /// Fraction of the selected devices' memory bandwidth the memory-bound kernels
    /// reach, before the engine's `memory_efficiency` keys (a fit writes a memory
    /// technology's efficiency here, keyed to the device, when its rows all ran on one
    /// device).
    pub memory_efficiency: Option<f64>,
    /// Time per GFLOP the matrix-vector kernels add on the selected devices, s
    /// ([`crate::engine::Overheads::gemv_s_per_gflop`]).
    pub gemv_s_per_gflop: Option<f64>,
    /// Fraction of the memory efficiency a routed expert's weight matmuls reach on the
    /// selected devices ([`crate::engine::Speed::expert_memory_efficiency`]).
    pub expert_memory_efficiency: Option<f64>,
    /// Fraction of the peak at which the matrix-vector kernels' rows past the first do
    /// their multiply-adds on the selected devices
    /// ([`crate::engine::Speed::gemv_compute_efficiency`]).
    pub gemv_compute_efficiency: Option<f64>,
}

impl DeviceOverride {
    /// Whether it sets nothing.
    pub(crate) fn is_empty(&self) -> bool {
        self.compute_efficiency.is_none()
            && self.expert_overhead_s.is_none()
            && self.memory_efficiency.is_none()
            && self.gemv_s_per_gflop.is_none()
            && self.expert_memory_efficiency.is_none()
            && self.gemv_compute_efficiency.is_none()
    }
}

/// A factor a [`DeviceOverride`] may set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceFactor {
    /// [`DeviceOverride::compute_efficiency`].
    ComputeEfficiency,
    /// [`DeviceOverride::expert_overhead_s`].
    ExpertOverhead,
    /// [`DeviceOverride::memory_efficiency`].
    MemoryEfficiency,
    /// [`DeviceOverride::gemv_s_per_gflop`].
    GemvTime,
    /// [`DeviceOverride::expert_memory_efficiency`].
    ExpertMemoryEfficiency,
    /// [`DeviceOverride::gemv_compute_efficiency`].
    GemvEfficiency,
}

impl DeviceFactor {
    /// Its key in an engine file.
    pub(crate) fn key(self) -> &'static str {
        match self {
            DeviceFactor::ComputeEfficiency => "compute_efficiency",
            DeviceFactor::ExpertOverhead => "expert_overhead_s",
            DeviceFactor::MemoryEfficiency => "memory_efficiency",
            DeviceFactor::GemvTime => "gemv_s_per_gflop",
            DeviceFactor::ExpertMemoryEfficiency => "expert_memory_efficiency",
            DeviceFactor::GemvEfficiency => "gemv_compute_efficiency",
        }
    }

    /// Its value in `o`.
    pub(crate) fn of(self, o: &DeviceOverride) -> Option<f64> {
        match self {
            DeviceFactor::ComputeEfficiency => o.compute_efficiency,
            DeviceFactor::ExpertOverhead => o.expert_overhead_s,
            DeviceFactor::MemoryEfficiency => o.memory_efficiency,
            DeviceFactor::GemvTime => o.gemv_s_per_gflop,
            DeviceFactor::ExpertMemoryEfficiency => o.expert_memory_efficiency,
            DeviceFactor::GemvEfficiency => o.gemv_compute_efficiency,
        }
    }

    /// Its slot in `o`.
    pub(crate) fn slot(self, o: &mut DeviceOverride) -> &mut Option<f64> {
        match self {
            DeviceFactor::ComputeEfficiency => &mut o.compute_efficiency,
            DeviceFactor::ExpertOverhead => &mut o.expert_overhead_s,
            DeviceFactor::MemoryEfficiency => &mut o.memory_efficiency,
            DeviceFactor::GemvTime => &mut o.gemv_s_per_gflop,
            DeviceFactor::ExpertMemoryEfficiency => &mut o.expert_memory_efficiency,
            DeviceFactor::GemvEfficiency => &mut o.gemv_compute_efficiency,
        }
    }

    /// The name of this factor as the override selected by `select` sets it, in fit
    /// reports, factor tags and `predict`'s factors list: the keys of older files for
    /// the two families they had (`apple_compute_efficiency` for `class = "apple"`,
    /// `rdna_compute_efficiency` and `rdna_expert_overhead_s` for `architecture =
    /// "rdna"`) and the family's name the fit gives the Apple GPUs' matrix-vector and
    /// expert-kernel efficiencies (`apple_gemv_compute_efficiency`,
    /// `apple_expert_memory_efficiency`), else the key and the criteria
    /// (`compute_efficiency (device = "ryzen-ai-max-395")`).
    pub fn name_under(self, select: &Selector) -> String {
        let family = if *select == Selector::class(crate::hardware::DeviceClass::Apple) {
            "apple"
        } else if *select == Selector::architecture("rdna") {
            "rdna"
        } else {
            ""
        };
        match (family, self) {
            (
                "apple",
                DeviceFactor::ComputeEfficiency
                | DeviceFactor::GemvEfficiency
                | DeviceFactor::ExpertMemoryEfficiency,
            )
            | ("rdna", DeviceFactor::ComputeEfficiency | DeviceFactor::ExpertOverhead) => {
                format!("{family}_{}", self.key())
            }
            _ => format!("{} ({})", self.key(), select.describe()),
        }
    }
}
