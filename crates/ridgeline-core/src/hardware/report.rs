//! The contract's JSON view of a device (`hardware show ID --json`).

use super::{DeviceClass, Hardware, Peaks, Rates};
use crate::dtype::ComputeDtype;
use serde::{Deserialize, Serialize};

impl Hardware {
    /// The contract's JSON view of this device (`hardware show ID --json`).
    pub fn report(&self) -> HardwareReport {
        let p = &self.peak_flops_per_s;
        HardwareReport {
            id: self.id.clone(),
            name: self.name.clone(),
            vendor: self.vendor.clone(),
            class: self.class,
            architecture: self.architecture.clone(),
            aliases: self.aliases.clone(),
            memory: MemoryReport {
                kind: self.memory.kind.clone(),
                capacity_bytes: self.memory.capacity_bytes,
                bandwidth_bytes_per_s: self.memory.bandwidth_bytes_per_s,
                l2_bytes: self.memory.l2_bytes,
                ecc_reserved_fraction: self.memory.ecc_reserved_fraction,
            },
            peak_flops_per_s: PeakReport {
                rates: p.rates.clone(),
                warp_mma_fraction: p.warp_mma_fraction,
                flops_per_exp2: p.flops_per_exp2,
            },
            estimated_peak_flops_per_s: self.estimated_peak_flops_per_s.clone(),
            ridge_point_bf16_flop_per_byte: self.ridge_point(ComputeDtype::Bf16),
            host_link_bytes_per_s: self.host_link.as_ref().map(|l| l.bytes_per_s_per_direction),
            host_link: self.host_link.as_ref().map(|l| l.name.clone()),
            scaleup_link_bytes_per_s: self
                .scaleup_link
                .as_ref()
                .map(|l| l.bytes_per_s_per_direction),
            scaleup_link: self.scaleup_link.as_ref().map(|l| l.name.clone()),
            scaleup_domain_devices: self.scaleup_domain_devices(),
            tdp_w: self.tdp_w,
            power_reference: self.power_reference.clone(),
            sustained_tensor_fraction: self.sustained_tensor_fraction,
            release_year: self.release_year,
            price_usd_per_hour: self.price.as_ref().map(|p| p.usd_per_hour),
            price_date: self.price.as_ref().map(|p| p.date.clone()),
            price_source: self.price.as_ref().map(|p| p.source.clone()),
            price_provider: self.price.as_ref().and_then(|p| p.provider.clone()),
            price_shape: self.price.as_ref().and_then(|p| p.shape.clone()),
            price_spot_usd_per_hour: self.price.as_ref().and_then(|p| p.spot_usd_per_hour),
            price_committed_1y_usd_per_hour: self.committed_1y.as_ref().map(|c| c.usd_per_hour),
            price_committed_1y_provider: self.committed_1y.as_ref().map(|c| c.provider.clone()),
            price_committed_3y_usd_per_hour: self.committed_3y.as_ref().map(|c| c.usd_per_hour),
            price_committed_3y_provider: self.committed_3y.as_ref().map(|c| c.provider.clone()),
            purchase_usd: self.purchase.as_ref().map(|p| p.usd),
            purchase_what: self.purchase.as_ref().map(|p| p.what.clone()),
            purchase_date: self.purchase.as_ref().map(|p| p.date.clone()),
            purchase_source: self.purchase.as_ref().map(|p| p.source.clone()),
            sparse_halved: p.sparse_halved,
            sources: self.all_sources(),
            notes: self.notes.clone(),
        }
    }
}

/// `memory` in [`HardwareReport`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryReport {
    /// Memory technology.
    #[serde(rename = "type")]
    pub kind: String,
    /// Bytes.
    pub capacity_bytes: f64,
    /// Bytes/s.
    pub bandwidth_bytes_per_s: f64,
    /// Bytes, or null.
    pub l2_bytes: Option<f64>,
    /// Fraction of the capacity ECC reserves by default (absent: none); what programs
    /// can allocate is `capacity_bytes x (1 - it)`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ecc_reserved_fraction: Option<f64>,
}

/// `peak_flops_per_s` in [`HardwareReport`]: every rate's key present, `null` when
/// unpublished (`fp16_acc16` only where it differs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PeakReport {
    /// The device's rates, flat in the object.
    #[serde(flatten)]
    pub rates: Rates,
    /// Fraction of the tensor peaks warp-level `mma.sync` kernels reach, where the
    /// device needs a newer instruction for the rest (Hopper: 0.5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warp_mma_fraction: Option<f64>,
    /// 16-bit tensor FLOPs per base-2 exponential of the special-function units, per SM
    /// ([`crate::hardware::Peaks::flops_per_exp2`]), where given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flops_per_exp2: Option<f64>,
}

/// The JSON document of `ridgeline hardware show ID --json` (keys in docs/reference.md,
/// section "hardware show ID --json").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct HardwareReport {
    /// Device id.
    pub id: String,
    /// Marketing name.
    pub name: String,
    /// Vendor.
    pub vendor: String,
    /// Market segment.
    pub class: DeviceClass,
    /// Chip generation (empty when unknown).
    pub architecture: String,
    /// Other accepted names.
    pub aliases: Vec<String>,
    /// Memory.
    pub memory: MemoryReport,
    /// Dense peaks, FLOP/s.
    pub peak_flops_per_s: PeakReport,
    /// Third-party / derived peaks used where the vendor publishes none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub estimated_peak_flops_per_s: Option<Peaks>,
    /// bf16 (or nearest published) peak over memory bandwidth.
    pub ridge_point_bf16_flop_per_byte: f64,
    /// Host link bytes/s per direction.
    pub host_link_bytes_per_s: Option<f64>,
    /// Host link name.
    pub host_link: Option<String>,
    /// Scale-up link bytes/s per direction.
    pub scaleup_link_bytes_per_s: Option<f64>,
    /// Scale-up link name.
    pub scaleup_link: Option<String>,
    /// Devices one scale-up domain joins (8 on an HGX board, 72 in an NVL72 rack);
    /// null: not stated.
    pub scaleup_domain_devices: Option<u64>,
    /// Watts.
    pub tdp_w: Option<f64>,
    /// The same die's device whose board power per tensor FLOP/s is taken to sustain
    /// the rated clock; absent: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_reference: Option<String>,
    /// Fraction of the rated tensor peaks the board power sustains (1 without a
    /// reference); predictions run tensor matmuls against peak x this.
    #[serde(default = "super::one")]
    pub sustained_tensor_fraction: f64,
    /// Year.
    pub release_year: Option<u32>,
    /// USD per device-hour.
    pub price_usd_per_hour: Option<f64>,
    /// Date of the price.
    pub price_date: Option<String>,
    /// Where the price was read.
    #[serde(default)]
    pub price_source: Option<String>,
    /// Provider of the price (lower case), where known.
    #[serde(default)]
    pub price_provider: Option<String>,
    /// The provider's shape the device-hour comes from.
    #[serde(default)]
    pub price_shape: Option<String>,
    /// Spot USD per device-hour, where published.
    #[serde(default)]
    pub price_spot_usd_per_hour: Option<f64>,
    /// The cheapest one-year committed-use USD per device-hour, where published.
    #[serde(default)]
    pub price_committed_1y_usd_per_hour: Option<f64>,
    /// The provider of that one-year price.
    #[serde(default)]
    pub price_committed_1y_provider: Option<String>,
    /// The cheapest three-year committed-use USD per device-hour, where published.
    #[serde(default)]
    pub price_committed_3y_usd_per_hour: Option<f64>,
    /// The provider of that three-year price.
    #[serde(default)]
    pub price_committed_3y_provider: Option<String>,
    /// Purchase price of one device, USD.
    #[serde(default)]
    pub purchase_usd: Option<f64>,
    /// What the purchase price buys.
    #[serde(default)]
    pub purchase_what: Option<String>,
    /// Date of the purchase price.
    #[serde(default)]
    pub purchase_date: Option<String>,
    /// Where the purchase price was read.
    #[serde(default)]
    pub purchase_source: Option<String>,
    /// Whether sparse datasheet figures were halved.
    pub sparse_halved: bool,
    /// Source URLs.
    pub sources: Vec<String>,
    /// Caveats.
    pub notes: String,
}
