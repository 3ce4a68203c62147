//! The hardware database: one device per `data/hardware/<id>.toml`, embedded in the
//! binary, plus user files. Every number carries its source; peaks are dense.
//!
//! Memory, host link (PCIe) and scale-up link (NVLink, Infinity Fabric, ICI) are kept
//! as separate ceilings so an op can be placed against any of them.

use crate::dtype::ComputeDtype;
use crate::error::{Error, Result};
use crate::roofline::Ceilings;
use serde::{Deserialize, Serialize};
use std::sync::OnceLock;

pub mod prices;
mod report;

pub use prices::{Offer, Ownership, PriceBook, Purchase, Term, TermPrice};

pub use report::{HardwareReport, MemoryReport, PeakReport};

mod builtin {
    include!(concat!(env!("OUT_DIR"), "/builtin_data.rs"));
}

pub(crate) use builtin::{KERNEL_FILES, MODEL_FILES};

fn one() -> f64 {
    1.0
}

/// Parses embedded data files (`(file name, text)` from `dir`) with `parse(text, stem,
/// source name)`; each item's id (`id_of`, the key `field` of the file) must be its file
/// name less `ext`.
pub(crate) fn parse_builtin<T>(
    files: &[(&str, &str)],
    (dir, ext, field): (&str, &str, &str),
    parse: impl Fn(&str, &str, &str) -> Result<T>,
    id_of: impl Fn(&T) -> &str,
) -> Result<Vec<T>> {
    files
        .iter()
        .map(|(name, text)| {
            let source_name = format!("{dir}/{name}");
            let stem = name.trim_end_matches(ext);
            let item = parse(text, stem, &source_name)?;
            if id_of(&item) != stem {
                let message = format!("{field} '{}' does not match the file name", id_of(&item));
                return Err(Error::Parse {
                    source_name,
                    message,
                });
            }
            Ok(item)
        })
        .collect()
}

/// Market segment of a device; engines derate by class (GeForce cards reach a larger
/// fraction of their bandwidth than HBM parts in the same engine, for instance).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DeviceClass {
    /// Data-centre GPUs with HBM or GDDR (A100, H100, L40S, MI300X, ...).
    Datacenter,
    /// Professional workstation cards (RTX A6000, RTX 6000 Ada).
    Workstation,
    /// GeForce consumer cards.
    Consumer,
    /// Apple silicon with unified memory.
    Apple,
    /// Google TPUs.
    Tpu,
    /// Intel Gaudi.
    Gaudi,
}

/// Device memory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Memory {
    /// HBM3, GDDR6X, LPDDR5, ...
    #[serde(rename = "type")]
    pub kind: String,
    /// Physical capacity in bytes: a part sold as "80GB" holds 80 GiB (DRAM comes in
    /// binary sizes); what an engine may use of it is the engine's business.
    pub capacity_bytes: f64,
    /// Peak bandwidth in bytes/s.
    pub bandwidth_bytes_per_s: f64,
    /// Last-level on-chip cache in bytes, if published.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub l2_bytes: Option<f64>,
    /// Fraction of `capacity_bytes` that ECC holds back where it is on by default
    /// (datacenter GDDR cards store the check bits in the DRAM itself: 1/16 = 0.0625,
    /// NVIDIA's CUDA C++ Best Practices Guide); absent: none (HBM carries its ECC
    /// out of band, consumer cards ship with it off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ecc_reserved_fraction: Option<f64>,
    /// Where the numbers come from.
    pub source: String,
}

impl Memory {
    /// The bytes programs can allocate: the capacity less what ECC reserves.
    pub fn usable_bytes(&self) -> f64 {
        self.capacity_bytes * (1.0 - self.ecc_reserved_fraction.unwrap_or(0.0))
    }
}

/// Dense peak throughput per dtype in FLOP/s (`None`: not published): the rates of
/// [`Peaks`], and of the JSON report's `peak_flops_per_s` ([`PeakReport`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Rates {
    /// FP64 (vector, or tensor where higher).
    pub fp64: Option<f64>,
    /// FP32 vector.
    pub fp32: Option<f64>,
    /// TF32 tensor.
    pub tf32: Option<f64>,
    /// FP16 tensor with fp32 accumulation.
    pub fp16: Option<f64>,
    /// BF16 tensor with fp32 accumulation.
    pub bf16: Option<f64>,
    /// FP8 tensor.
    pub fp8: Option<f64>,
    /// INT8 tensor (OP/s).
    pub int8: Option<f64>,
    /// INT4 tensor (OP/s).
    pub int4: Option<f64>,
    /// FP4 tensor.
    pub fp4: Option<f64>,
    /// FP16 tensor with fp16 accumulation (GeForce cards: 2x the fp32-accumulate rate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fp16_acc16: Option<f64>,
}

impl Rates {
    /// The published dense peak for `dtype`.
    pub fn get(&self, dtype: ComputeDtype) -> Option<f64> {
        match dtype {
            ComputeDtype::Fp64 => self.fp64,
            ComputeDtype::Fp32 => self.fp32,
            ComputeDtype::Tf32 => self.tf32,
            ComputeDtype::Fp16 => self.fp16,
            ComputeDtype::Bf16 => self.bf16,
            ComputeDtype::Fp8 => self.fp8,
            ComputeDtype::Int8 => self.int8,
            ComputeDtype::Int4 => self.int4,
            ComputeDtype::Fp4 => self.fp4,
        }
    }
}

/// A device's dense peaks as its hardware file states them: the [`Rates`], what
/// warp-level kernels reach of them, and their provenance. In the file (and the JSON)
/// the rates sit flat beside the other keys.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(from = "PeaksFile", into = "PeaksFile")]
pub struct Peaks {
    /// The rates per dtype.
    pub rates: Rates,
    /// Fraction of the tensor peaks that kernels built on warp-level `mma.sync`
    /// instructions reach, where the peaks need a newer instruction (Hopper: 0.5, its
    /// full rate needs the asynchronous warpgroup `wgmma`); `None`: the whole peak.
    /// Applies to engines with `warpgroup_mma = false`.
    pub warp_mma_fraction: Option<f64>,
    /// The 16-bit tensor FLOPs one SM issues in the time its special-function units
    /// return one base-2 exponential (`MUFU.EX2`, the softmax's exponential): Hopper
    /// 4096 / 16 = 256, Blackwell 8192 / 16 = 512, Blackwell Ultra (twice the SFU rate)
    /// 256. `None`: not given. Read where a prompt's attention kernel carries from a
    /// sibling device ([`crate::kernels`]).
    pub flops_per_exp2: Option<f64>,
    /// The datasheet printed sparse figures and they were halved.
    pub sparse_halved: bool,
    /// Where the numbers come from.
    pub source: String,
}

impl Peaks {
    /// The published dense peak for `dtype`.
    pub fn get(&self, dtype: ComputeDtype) -> Option<f64> {
        self.rates.get(dtype)
    }
}

/// [`Peaks`] as written: every key flat, unknown keys refused (serde's `flatten` cannot
/// refuse them).
#[derive(Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct PeaksFile {
    fp64: Option<f64>,
    fp32: Option<f64>,
    tf32: Option<f64>,
    fp16: Option<f64>,
    bf16: Option<f64>,
    fp8: Option<f64>,
    int8: Option<f64>,
    int4: Option<f64>,
    fp4: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    fp16_acc16: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    warp_mma_fraction: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    flops_per_exp2: Option<f64>,
    #[serde(default)]
    sparse_halved: bool,
    #[serde(default)]
    source: String,
}

impl From<PeaksFile> for Peaks {
    fn from(f: PeaksFile) -> Peaks {
        Peaks {
            rates: Rates {
                fp64: f.fp64,
                fp32: f.fp32,
                tf32: f.tf32,
                fp16: f.fp16,
                bf16: f.bf16,
                fp8: f.fp8,
                int8: f.int8,
                int4: f.int4,
                fp4: f.fp4,
                fp16_acc16: f.fp16_acc16,
            },
            warp_mma_fraction: f.warp_mma_fraction,
            flops_per_exp2: f.flops_per_exp2,
            sparse_halved: f.sparse_halved,
            source: f.source,
        }
    }
}

impl From<Peaks> for PeaksFile {
    fn from(p: Peaks) -> PeaksFile {
        let r = p.rates;
        PeaksFile {
            fp64: r.fp64,
            fp32: r.fp32,
            tf32: r.tf32,
            fp16: r.fp16,
            bf16: r.bf16,
            fp8: r.fp8,
            int8: r.int8,
            int4: r.int4,
            fp4: r.fp4,
            fp16_acc16: r.fp16_acc16,
            warp_mma_fraction: p.warp_mma_fraction,
            flops_per_exp2: p.flops_per_exp2,
            sparse_halved: p.sparse_halved,
            source: p.source,
        }
    }
}

/// Default inter-node network bandwidth per GPU: one 400 Gb/s InfiniBand / RoCE NIC per
/// GPU (DGX A100 and H100 layouts) = 50e9 bytes/s per direction.
pub const DEFAULT_INTER_NODE_BYTES_PER_S: f64 = 50e9;

/// Slowest inter-node network the model accepts, bytes/s (1 MB/s; 1 GbE is 125 MB/s):
/// below it communication times leave the range of numbers worth printing (and at
/// 1e-300 that of `f64`).
pub const MIN_INTER_NODE_BYTES_PER_S: f64 = 1e6;

/// Checks an inter-node bandwidth per device (the error names
/// `inter_node_bytes_per_s`).
pub(crate) fn check_inter_node(bytes_per_s: f64) -> Result<()> {
    crate::error::require_positive("inter_node_bytes_per_s", bytes_per_s)?;
    if bytes_per_s < MIN_INTER_NODE_BYTES_PER_S {
        return Err(Error::invalid(
            "inter_node_bytes_per_s",
            format!("{bytes_per_s} bytes/s is below the 1e6 bytes/s (1 MB/s) ridgeline models"),
        ));
    }
    Ok(())
}

/// How a collective's traffic meets the network between scale-up domains
/// ([`group_bandwidth`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Traffic {
    /// A ring (all-reduce, all-gather, reduce-scatter, pipeline sends): only the hops
    /// between domains cross the network.
    Ring,
    /// An all-to-all (expert dispatch and combine): every rank sends to every other.
    AllToAll,
    /// An all-to-all whose copies for another domain cross the network once per domain
    /// and are forwarded inside it: the scale-up link carries every copy, the network
    /// `network_share` bytes per link byte (see
    /// [`crate::ops::forwarded_network_share`]).
    Forwarded {
        /// Network bytes per link byte.
        network_share: f64,
    },
}

/// Per-device bandwidth of a collective over `size` ranks spaced `stride` apart, where
/// `domain` consecutive devices share a scale-up link of `scaleup` bytes/s and domains
/// reach each other over a network of `network` bytes/s per device. Inside one domain:
/// the scale-up link. Across domains, with `g = domain / stride` members of the group in
/// each: a ring's `g` members drive `g` network links in parallel rings,
/// `min(scaleup, g x network)`; an all-to-all sends the share `r = (size - g) / (size -
/// 1)` of its bytes to other domains, each device over its own network link, the rest
/// over the scale-up link at the same time: `1 / max((1 - r) / scaleup, r / network)`;
/// a forwarded all-to-all `1 / max(1 / scaleup, share / network)`.
pub(crate) fn group_bandwidth(
    scaleup: f64,
    network: f64,
    domain: u64,
    (size, stride): (u64, u64),
    traffic: Traffic,
) -> f64 {
    if size.saturating_mul(stride) <= domain {
        return scaleup;
    }
    let g = (domain / stride.max(1)).clamp(1, size);
    match traffic {
        Traffic::Ring => {
            let net = g as f64 * network;
            if scaleup > 0.0 { scaleup.min(net) } else { net }
        }
        Traffic::AllToAll => {
            let r = (size - g) as f64 / size.saturating_sub(1).max(1) as f64;
            let inside = if scaleup > 0.0 {
                (1.0 - r) / scaleup
            } else {
                0.0
            };
            1.0 / inside.max(r / network)
        }
        Traffic::Forwarded { network_share } => {
            let inside = if scaleup > 0.0 { 1.0 / scaleup } else { 0.0 };
            1.0 / inside.max(network_share / network)
        }
    }
}

/// An interconnect: host link (PCIe) or scale-up link (NVLink, ...).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Link {
    /// e.g. "PCIe Gen5 x16", "NVLink 4 (18 links)".
    #[serde(default)]
    pub name: String,
    /// Bandwidth per direction in bytes/s.
    pub bytes_per_s_per_direction: f64,
    /// Devices one scale-up domain joins at this bandwidth (8 on an HGX board, 72 in a
    /// GB200 NVL72 rack); more devices reach each other over the slower network. `None`:
    /// not stated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain_devices: Option<u64>,
    /// Where the number comes from.
    pub source: String,
}

/// A rental price.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// US dollars per device-hour.
    pub usd_per_hour: f64,
    /// When the price was seen (YYYY-MM-DD).
    pub date: String,
    /// Where it was seen.
    pub source: String,
    /// Provider the price is from (lower case), where known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// The provider's shape the device-hour comes from (its price over its devices).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape: Option<String>,
    /// Spot / interruptible USD per device-hour, where published.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spot_usd_per_hour: Option<f64>,
}

/// One way publications name a device (see [`Hardware::publication_names`]). In TOML
/// a string of words (`"a100 sxm4"`) or a table that adds what reading a name this way
/// assumes (`{ words = "a100", assumes = "A100 variant not stated: ..." }`), the share
/// of the device it means, or that it means a device the database lacks (`absent`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PublicationName {
    /// Words that must all appear in the name (`a100 sxm4`).
    pub words: String,
    /// What reading a name this way assumes (reported with the measurement).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub assumes: Option<String>,
    /// Fraction of this device the name means (0.5: one GCD of a two-die MI250X).
    #[serde(skip_serializing_if = "is_whole")]
    pub share: f64,
    /// The name means another device, which the database lacks: why (rows naming it
    /// are left out with this reason).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub absent: Option<String>,
}

fn whole() -> f64 {
    1.0
}

fn is_whole(v: &f64) -> bool {
    *v == 1.0
}

/// The table form of [`PublicationName`].
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PublicationNameTable {
    words: String,
    #[serde(default)]
    assumes: Option<String>,
    #[serde(default = "whole")]
    share: f64,
    #[serde(default)]
    absent: Option<String>,
}

impl<'de> Deserialize<'de> for PublicationName {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        use serde::de::{Error as _, MapAccess, Visitor, value::MapAccessDeserializer};
        struct Either;
        impl<'de> Visitor<'de> for Either {
            type Value = PublicationNameTable;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string of words or a table with `words`")
            }
            fn visit_str<E: serde::de::Error>(
                self,
                v: &str,
            ) -> std::result::Result<Self::Value, E> {
                Ok(PublicationNameTable {
                    words: v.to_string(),
                    assumes: None,
                    share: 1.0,
                    absent: None,
                })
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                m: A,
            ) -> std::result::Result<Self::Value, A::Error> {
                PublicationNameTable::deserialize(MapAccessDeserializer::new(m))
            }
        }
        let t = d.deserialize_any(Either)?;
        if t.words
            .split(|c: char| !c.is_ascii_alphanumeric())
            .all(str::is_empty)
        {
            return Err(D::Error::custom(format!(
                "publication name '{}' has no words",
                t.words
            )));
        }
        if !(t.share > 0.0 && t.share <= 1.0) {
            return Err(D::Error::custom(format!(
                "publication name '{}': share must be in (0, 1], got {}",
                t.words, t.share
            )));
        }
        Ok(PublicationName {
            words: t.words,
            assumes: t.assumes,
            share: t.share,
            absent: t.absent,
        })
    }
}

/// One accelerator.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Hardware {
    /// Lowercase hyphenated id (`h100-sxm`).
    pub id: String,
    /// Marketing name.
    pub name: String,
    /// NVIDIA, AMD, Google, Intel, Apple.
    pub vendor: String,
    /// Market segment.
    pub class: DeviceClass,
    /// Chip generation (`ampere`, `hopper`, `ada`, `cdna3`, ...): keys the training
    /// efficiencies; empty when unknown (user files may leave it out).
    #[serde(default)]
    pub architecture: String,
    /// Other names that resolve to this device.
    #[serde(default)]
    pub aliases: Vec<String>,
    /// How publications name this device (`A100-SXM4-80GB`, `RTX 4090 24GB`): read when
    /// measurement rows are mapped to devices (`ridgeline::calibrate::map_gpu`). An entry's
    /// words must all be words of the name (case and punctuation aside); over all devices
    /// the entry with the most words wins. Not part of reports.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub publication_names: Vec<PublicationName>,
    /// Year of release.
    #[serde(default)]
    pub release_year: Option<u32>,
    /// Thermal design power, watts.
    #[serde(default)]
    pub tdp_w: Option<f64>,
    /// A device of the same die that its vendor rates at a higher board power per
    /// tensor FLOP/s (`rtx-4090` for the RTX 6000 Ada, `h100-sxm` for the H100 PCIe):
    /// taken to sustain its rated clock under a full tensor load. Where this device has
    /// less board power per FLOP/s, it cannot hold the clock its peaks are rated at, and
    /// its tensor rates are derated ([`Hardware::sustained_tensor_fraction`]). Needs
    /// `tdp_w` and a 16-bit tensor peak here and on the reference.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_reference: Option<String>,
    /// The fraction of the rated tensor peaks this device sustains: the cube root of
    /// `min(1, (tdp_w / peak) / (reference tdp_w / reference peak))`, `peak` the largest
    /// 16-bit tensor rate (fp16, bf16 or fp16 with fp16 accumulate); 1 without a
    /// `power_reference`. The cube root: dynamic power goes as `f V^2` and the voltage
    /// with the clock `f`, so the clock a board sustains goes as the cube root of its
    /// power. (Stas Bekman's maximum achievable matmul, kind F rows m131 and m132: the
    /// 300 W A100 PCIe reaches 252.9 / 271.2 = 0.933 of the 400 W A100 SXM; the cube root
    /// of 300 / 400 is 0.909, a linear law's 0.75 is below what was measured.) Computed
    /// when the device enters a [`HardwareDb`] (never read from a file).
    #[serde(skip, default = "one")]
    pub sustained_tensor_fraction: f64,
    /// Datasheets and whitepapers the numbers come from.
    pub sources: Vec<String>,
    /// Caveats.
    #[serde(default)]
    pub notes: String,
    /// Devices per node for multi-node layouts (default 8).
    #[serde(default)]
    pub devices_per_node: Option<u32>,
    /// Device memory.
    pub memory: Memory,
    /// Dense peaks the vendor publishes.
    #[serde(default)]
    pub peak_flops_per_s: Peaks,
    /// Third-party or derived peaks, used only where the vendor publishes none (Apple
    /// GPUs); reported separately, never as `peak_flops_per_s`.
    #[serde(default)]
    pub estimated_peak_flops_per_s: Option<Peaks>,
    /// Link to the host (PCIe), if any.
    #[serde(default)]
    pub host_link: Option<Link>,
    /// Link between devices (NVLink, ...), if any.
    #[serde(default)]
    pub scaleup_link: Option<Link>,
    /// Rental price per device-hour, if known (see [`prices`]: the cheapest offer).
    #[serde(default)]
    pub price: Option<Price>,
    /// Purchase price, if the device is sold and a price was published.
    #[serde(default)]
    pub purchase: Option<Purchase>,
    /// The cheapest one-year committed-use price per device-hour over the price book's
    /// offers (set by [`HardwareDb::apply_prices`]; `None`: none published).
    #[serde(skip)]
    pub committed_1y: Option<prices::TermPrice>,
    /// The same for a three-year commitment.
    #[serde(skip)]
    pub committed_3y: Option<prices::TermPrice>,
    /// The hardware file's own `[price]` (what [`HardwareDb::apply_prices`] starts from).
    #[serde(skip)]
    pub file_price: Option<Price>,
    /// The hardware file's own `[purchase]`.
    #[serde(skip)]
    pub file_purchase: Option<Purchase>,
    /// A user file may replace a device already loaded (same id or alias) only when it
    /// says so (`override = true`).
    #[serde(
        default,
        rename = "override",
        skip_serializing_if = "std::ops::Not::not"
    )]
    pub override_builtin: bool,
}

impl Hardware {
    /// Parses and validates one device from TOML text; `source_name` names the file in
    /// errors.
    pub fn from_toml(text: &str, source_name: &str) -> Result<Hardware> {
        let hw: Hardware = toml::from_str(text).map_err(|e| Error::Parse {
            source_name: source_name.to_string(),
            message: e.to_string().trim().replace('\n', " "),
        })?;
        hw.validate().map_err(|e| Error::Parse {
            source_name: source_name.to_string(),
            message: e.to_string(),
        })?;
        let mut hw = hw;
        hw.file_price = hw.price.clone();
        hw.file_purchase = hw.purchase.clone();
        Ok(hw)
    }

    fn validate(&self) -> Result<()> {
        let valid_id = !self.id.is_empty()
            && self
                .id
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.');
        if !valid_id {
            return Err(Error::invalid(
                "id",
                format!(
                    "'{}' must be lowercase letters, digits and hyphens",
                    self.id
                ),
            ));
        }
        use crate::error::require_in;
        // physical ranges: far beyond any device in either direction, so that a typo
        // (GB/s given as bytes/s, a missing exponent) is an error, not a number
        require_in(
            "memory.capacity_bytes",
            self.memory.capacity_bytes,
            1e6,
            1e15,
        )?;
        require_in(
            "memory.bandwidth_bytes_per_s",
            self.memory.bandwidth_bytes_per_s,
            1e6,
            1e15,
        )?;
        if let Some(l2) = self.memory.l2_bytes {
            require_in("memory.l2_bytes", l2, 1e3, 1e11)?;
        }
        if let Some(f) = self.memory.ecc_reserved_fraction {
            require_in("memory.ecc_reserved_fraction", f, 0.0, 0.5)?;
        }
        let mut any = false;
        for d in ComputeDtype::ALL {
            if let Some(p) = self.peak_flops_per_s.get(d) {
                require_in(&format!("peak_flops_per_s.{}", d.name()), p, 1e6, 1e19)?;
                any = true;
            }
        }
        if let Some(est) = &self.estimated_peak_flops_per_s {
            for d in ComputeDtype::ALL {
                if let Some(p) = est.get(d) {
                    require_in(
                        &format!("estimated_peak_flops_per_s.{}", d.name()),
                        p,
                        1e6,
                        1e19,
                    )?;
                    any = true;
                }
            }
        }
        if let Some(f) = self.peak_flops_per_s.warp_mma_fraction {
            require_in("peak_flops_per_s.warp_mma_fraction", f, 0.01, 1.0)?;
        }
        if let Some(f) = self.peak_flops_per_s.flops_per_exp2 {
            require_in("peak_flops_per_s.flops_per_exp2", f, 1.0, 65536.0)?;
        }
        if let Some(n) = self.devices_per_node.filter(|&n| n == 0 || n > 1024) {
            return Err(Error::invalid(
                "devices_per_node",
                format!("must lie in 1..=1024 (leave it out for 8), got {n}"),
            ));
        }
        if !any {
            return Err(Error::invalid(
                "peak_flops_per_s",
                "at least one dense peak (or estimated_peak_flops_per_s) is required",
            ));
        }
        if self.sources.iter().all(|s| s.trim().is_empty()) {
            return Err(Error::invalid(
                "sources",
                "at least one source URL is required",
            ));
        }
        for (key, link) in [
            ("host_link", &self.host_link),
            ("scaleup_link", &self.scaleup_link),
        ] {
            if let Some(l) = link {
                require_in(
                    &format!("{key}.bytes_per_s_per_direction"),
                    l.bytes_per_s_per_direction,
                    1e6,
                    1e14,
                )?;
                if let Some(n) = l.domain_devices {
                    require_in(&format!("{key}.domain_devices"), n as f64, 1.0, 1e6)?;
                }
            }
        }
        if let Some(p) = &self.price {
            require_in("price.usd_per_hour", p.usd_per_hour, 1e-4, 1e4)?;
        }
        if let Some(p) = &self.purchase {
            require_in("purchase.usd", p.usd, 1.0, 1e7)?;
        }
        if let Some(t) = self.tdp_w {
            require_in("tdp_w", t, 0.1, 1e5)?;
        }
        Ok(())
    }

    /// Board power per FLOP/s of the largest 16-bit tensor rate the vendor publishes
    /// (fp16, bf16 or fp16 with fp16 accumulate), in W·s/FLOP; `None` without `tdp_w`
    /// or a 16-bit peak.
    pub(crate) fn watts_per_tensor_flop(&self) -> Option<f64> {
        let p = &self.peak_flops_per_s;
        let peak = [p.rates.fp16, p.rates.bf16, p.rates.fp16_acc16]
            .into_iter()
            .flatten()
            .fold(0.0, f64::max);
        match self.tdp_w {
            Some(w) if peak > 0.0 => Some(w / peak),
            _ => None,
        }
    }

    /// The share of `dtype`'s rated peak the board power sustains: the
    /// [`Hardware::sustained_tensor_fraction`] for a tensor format (every format but
    /// fp32 and fp64, the vector units'), 1 for the vector units.
    pub fn tensor_fraction(&self, dtype: ComputeDtype) -> f64 {
        match dtype {
            ComputeDtype::Fp32 | ComputeDtype::Fp64 => 1.0,
            _ => self.sustained_tensor_fraction,
        }
    }

    /// The rate a matmul of `dtype` runs against: the dense peak ([`Hardware::peak`])
    /// times the share the board power sustains ([`Hardware::tensor_fraction`] of the
    /// dtype the peak is of).
    pub fn sustained_peak(&self, dtype: ComputeDtype) -> (f64, ComputeDtype) {
        let (p, d) = self.peak(dtype);
        (p * self.tensor_fraction(d), d)
    }

    /// The dense peak for `dtype`, or where the vendor publishes none, the closest
    /// published rate (bf16 <-> fp16, then fp32; low-precision formats fall back to
    /// 16-bit, since kernels then run at 16-bit). Returns the rate and the dtype used.
    pub fn peak(&self, dtype: ComputeDtype) -> (f64, ComputeDtype) {
        use ComputeDtype::*;
        let chain: &[ComputeDtype] = match dtype {
            Fp16 => &[Fp16, Bf16, Fp32, Tf32],
            Bf16 => &[Bf16, Fp16, Fp32, Tf32],
            Fp32 => &[Fp32, Tf32, Bf16, Fp16],
            Tf32 => &[Tf32, Fp32, Bf16, Fp16],
            Fp64 => &[Fp64, Fp32],
            Fp8 => &[Fp8, Int8, Bf16, Fp16, Fp32],
            Int8 => &[Int8, Fp8, Bf16, Fp16, Fp32],
            Int4 => &[Int4, Int8, Fp8, Bf16, Fp16, Fp32],
            // without fp4 units, fp4 weights are dequantized to 16 bits (not fp8)
            Fp4 => &[Fp4, Bf16, Fp16, Fp32],
        };
        let est = self.estimated_peak_flops_per_s.as_ref();
        for &d in chain {
            if let Some(p) = self
                .peak_flops_per_s
                .get(d)
                .or_else(|| est.and_then(|e| e.get(d)))
            {
                return (p, d);
            }
        }
        // validate() guarantees at least one peak: take the largest.
        ComputeDtype::ALL
            .into_iter()
            .filter_map(|d| {
                self.peak_flops_per_s
                    .get(d)
                    .or_else(|| est.and_then(|e| e.get(d)))
                    .map(|p| (p, d))
            })
            .fold((0.0, dtype), |a, b| if b.0 > a.0 { b } else { a })
    }

    /// Ridge point for `dtype` in FLOP/byte.
    pub fn ridge_point(&self, dtype: ComputeDtype) -> f64 {
        self.peak(dtype).0 / self.memory.bandwidth_bytes_per_s
    }

    /// Link used between devices of this kind: the scale-up link, else the host link
    /// (peer traffic through PCIe), else none.
    pub fn device_link(&self) -> Option<&Link> {
        self.scaleup_link.as_ref().or(self.host_link.as_ref())
    }

    /// How many scale-up domains `gpus` devices span (1 when the link states no domain
    /// size or they fit in one): beyond one, collectives and pipeline sends between
    /// domains cross the network ([`crate::predict::Note::BeyondScaleUp`]).
    pub fn scaleup_domains(&self, gpus: u64) -> u64 {
        self.scaleup_domain_devices()
            .map_or(1, |d| gpus.div_ceil(d.max(1)).max(1))
    }

    /// Devices that reach each other without the network: the scale-up domain where
    /// the link states it, else the node (`devices_per_node`, default 8).
    pub(crate) fn domain_devices(&self) -> u64 {
        self.scaleup_domain_devices()
            .unwrap_or_else(|| self.devices_per_node.map_or(8, u64::from))
            .max(1)
    }

    /// Devices one scale-up domain joins, where the link states it.
    pub(crate) fn scaleup_domain_devices(&self) -> Option<u64> {
        self.scaleup_link.as_ref().and_then(|l| l.domain_devices)
    }

    /// Ceilings for an op computing in `dtype` (link = [`Hardware::device_link`]).
    pub fn ceilings(&self, dtype: ComputeDtype) -> Ceilings {
        Ceilings {
            peak_flops_per_s: self.peak(dtype).0,
            memory_bytes_per_s: self.memory.bandwidth_bytes_per_s,
            link_bytes_per_s: self.device_link().map(|l| l.bytes_per_s_per_direction),
        }
    }

    /// Every distinct source: the top-level list, then per-table sources.
    pub fn all_sources(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        let mut push = |s: &str| {
            let s = s.trim();
            if !s.is_empty() && !out.iter().any(|o| o == s) {
                out.push(s.to_string());
            }
        };
        for s in &self.sources {
            push(s);
        }
        push(&self.memory.source);
        push(&self.peak_flops_per_s.source);
        if let Some(e) = &self.estimated_peak_flops_per_s {
            push(&e.source);
        }
        for l in [&self.host_link, &self.scaleup_link].into_iter().flatten() {
            push(&l.source);
        }
        if let Some(p) = &self.price {
            push(&p.source);
        }
        if let Some(p) = &self.purchase {
            push(&p.source);
        }
        out
    }
}

/// A set of devices, looked up by id or alias.
#[derive(Debug, Clone, Default)]
pub struct HardwareDb {
    devices: Vec<Hardware>,
}

impl HardwareDb {
    /// The built-in database (parsed once, from the files embedded at build time).
    pub fn builtin() -> Result<&'static HardwareDb> {
        static DB: OnceLock<Result<HardwareDb>> = OnceLock::new();
        DB.get_or_init(|| {
            let mut db = HardwareDb::default();
            let files = ("data/hardware", ".toml", "id");
            let parse = |text: &str, _: &str, source: &str| Hardware::from_toml(text, source);
            for hw in parse_builtin(builtin::HARDWARE_FILES, files, parse, |h| &h.id)? {
                db.insert(hw);
            }
            db.resolve_power().map_err(|(id, e)| Error::Parse {
                source_name: format!("data/hardware/{id}.toml"),
                message: e.to_string(),
            })?;
            let book = PriceBook::builtin(&db)?;
            db.apply_prices(&book, None)?;
            Ok(db)
        })
        .as_ref()
        .map_err(Clone::clone)
    }

    /// Adds (or replaces, by id) a device.
    pub fn insert(&mut self, hw: Hardware) {
        if let Some(slot) = self.devices.iter_mut().find(|d| d.id == hw.id) {
            *slot = hw;
        } else {
            self.devices.push(hw);
            self.devices.sort_by(|a, b| a.id.cmp(&b.id));
        }
    }

    /// Devices named in a comma-separated list (ids or aliases), each resolved (unknown
    /// names with suggestions), duplicates dropped, in the order given.
    pub fn get_list(&self, list: &str) -> Result<Vec<&Hardware>> {
        let mut out: Vec<&Hardware> = Vec::new();
        for name in crate::list::parse_names("gpu", list)? {
            let hw = self.get(&name)?;
            if !out.iter().any(|o| o.id == hw.id) {
                out.push(hw);
            }
        }
        Ok(out)
    }

    /// Reads a user's TOML file (same schema as `data/hardware/*.toml`) and adds it.
    ///
    /// Returns the device and the id it replaced, if any: a device whose id or alias
    /// names a device already loaded needs `override = true` in its file.
    pub fn load_file(&mut self, path: &std::path::Path) -> Result<(&Hardware, Option<String>)> {
        let text = crate::files::read_document(path)?;
        let src = path.display().to_string();
        let hw = Hardware::from_toml(&text, &src)?;
        let clash = std::iter::once(&hw.id)
            .chain(&hw.aliases)
            .find_map(|name| self.get(name).ok().map(|d| d.id.clone()));
        if let Some(existing) = &clash {
            if !hw.override_builtin {
                return Err(Error::Parse {
                    source_name: src,
                    message: format!(
                        "'{}' names the device {existing} already loaded; add `override = true` to replace it, or use another id and aliases",
                        hw.id
                    ),
                });
            }
            if existing != &hw.id {
                // an alias of one device replacing another is a mistake, not an override
                return Err(Error::Parse {
                    source_name: src,
                    message: format!(
                        "an alias of '{}' names another device, {existing}; an override keeps the id it replaces",
                        hw.id
                    ),
                });
            }
        }
        let id = hw.id.clone();
        let before = self.devices.clone();
        self.insert(hw);
        if let Err((_, e)) = self.resolve_power() {
            // a reference this file breaks (its own, or another device's to it): the
            // database stays as it was
            self.devices = before;
            return Err(Error::Parse {
                source_name: src,
                message: e.to_string(),
            });
        }
        Ok((self.get(&id)?, clash))
    }

    /// Computes every device's [`Hardware::sustained_tensor_fraction`] from its
    /// `power_reference`. An unknown reference (with near matches), or a missing
    /// `tdp_w` or 16-bit tensor peak on either side, is an error naming the device.
    fn resolve_power(&mut self) -> std::result::Result<(), (String, Error)> {
        let mut fractions = Vec::with_capacity(self.devices.len());
        for d in &self.devices {
            let Some(name) = &d.power_reference else {
                fractions.push(1.0);
                continue;
            };
            let fail = |message: String| (d.id.clone(), Error::invalid("power_reference", message));
            let r = match self.get(name) {
                Ok(r) => r,
                Err(Error::UnknownName { suggestions, .. }) => {
                    let near = if suggestions.is_empty() {
                        String::new()
                    } else {
                        format!(" (did you mean {}?)", suggestions.join(", "))
                    };
                    return Err(fail(format!("unknown hardware id '{name}'{near}")));
                }
                Err(e) => return Err((d.id.clone(), e)),
            };
            let own = d.watts_per_tensor_flop().ok_or_else(|| {
                fail(format!(
                    "'{}' needs tdp_w and a 16-bit tensor peak to compare with {name}",
                    d.id
                ))
            })?;
            let theirs = r.watts_per_tensor_flop().ok_or_else(|| {
                fail(format!(
                    "the reference {} has no tdp_w or no 16-bit tensor peak",
                    r.id
                ))
            })?;
            // dynamic power ~ f V^2 with V ~ f along the voltage-frequency curve: the
            // clock goes as the cube root of the power per unit of rated throughput
            fractions.push((own / theirs).min(1.0).cbrt());
        }
        for (d, f) in self.devices.iter_mut().zip(fractions) {
            d.sustained_tensor_fraction = f;
        }
        Ok(())
    }

    /// All devices, sorted by id.
    pub fn devices(&self) -> &[Hardware] {
        &self.devices
    }

    /// All ids.
    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.devices.iter().map(|d| d.id.as_str())
    }

    /// Looks a device up by id or alias (case-insensitive). Unknown names give
    /// [`Error::UnknownName`] with the three closest ids.
    pub fn get(&self, name: &str) -> Result<&Hardware> {
        let q = name.trim().to_ascii_lowercase();
        self.devices
            .iter()
            .find(|d| d.id == q)
            .or_else(|| {
                self.devices
                    .iter()
                    .find(|d| d.aliases.iter().any(|a| a.eq_ignore_ascii_case(&q)))
            })
            .ok_or_else(|| {
                let names = self.devices.iter().flat_map(|d| {
                    std::iter::once(d.id.as_str()).chain(d.aliases.iter().map(String::as_str))
                });
                let mut ids: Vec<String> = Vec::new();
                for s in crate::error::closest(name, names, 12) {
                    let id = self
                        .devices
                        .iter()
                        .find(|d| d.id == s || d.aliases.contains(&s))
                        .map_or(s, |d| d.id.clone());
                    if !ids.contains(&id) {
                        ids.push(id);
                    }
                }
                ids.truncate(3);

                Error::UnknownName {
                    kind: "hardware id",
                    name: name.to_string(),
                    suggestions: ids,
                }
            })
    }
}
