//! Cloud instance shapes (`data/instances.toml`, `ridgeline instances`): which devices
//! come together, how they are linked, how much host memory they share, what network
//! joins instances, and what the whole instance costs per hour on demand, each price
//! with its date and source.
//!
//! An instance is a group of identical devices that is rented whole: a training plan
//! over instances ([`crate::plan::train`]) takes devices in instance-sized groups,
//! links them with the instance's scale-up link (or, without one, over their host
//! links), and bounds CPU offload by the instance's host memory.
//! [`Instance::hardware`] is the device as the instance presents it, the one home of
//! that view: `ridgeline train --instance NAME` and the plan both use it.
//!
//! User files (`--instances-file FILE`) have the same schema; an instance whose name is
//! already loaded needs `override = true`. Every error names the file, the instance and
//! the key.

use crate::error::{Error, Result, require_in};
use crate::hardware::{Hardware, HardwareDb, Link, Offer, Price};
use serde::{Deserialize, Serialize};
use std::sync::OnceLock;

/// The bundled instance shapes.
pub(crate) const BUILTIN_INSTANCES_TOML: &str = include_str!("../../../data/instances.toml");

/// Most devices one instance may hold (a GB200 NVL72 rack holds 72).
pub(crate) const MAX_DEVICES_PER_INSTANCE: u64 = 1024;

/// One rentable instance shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Instance {
    /// Cloud provider (`aws`, `gcp`, `azure`, `lambda`, `runpod`, ...).
    pub provider: String,
    /// The provider's name for the shape (`p4d.24xlarge`, `a2-highgpu-8g`): letters,
    /// digits, `.`, `-` and `_`; unique, matched case-insensitively.
    pub name: String,
    /// Hardware id (or alias) of its devices.
    pub gpu: String,
    /// Devices per instance.
    pub count: u64,
    /// The link between its devices (NVLink, NVSwitch); absent: they talk over their
    /// host links (PCIe).
    #[serde(default)]
    pub scaleup_link: Option<Link>,
    /// Host (CPU) memory of the whole instance, bytes: what CPU offload may fill.
    pub host_memory_bytes: f64,
    /// Network between instances, bytes/s per direction for the whole instance (EFA,
    /// InfiniBand, GPUDirect-TCPX); absent: the provider offers no cluster network for
    /// the shape, so it is planned alone.
    #[serde(default)]
    pub network_bytes_per_s: Option<f64>,
    /// On-demand price of the whole instance.
    pub price: Price,
    /// Where the shape (devices, links, memory, network) comes from.
    pub sources: Vec<String>,
    /// Region, caveats.
    #[serde(default)]
    pub notes: String,
    /// A user file may replace an instance already loaded (same name) only when it
    /// says so (`override = true`).
    #[serde(
        default,
        rename = "override",
        skip_serializing_if = "std::ops::Not::not"
    )]
    pub override_builtin: bool,
}

/// An instances file: `[[instance]]` tables.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct InstancesFile {
    #[serde(default)]
    instance: Vec<Instance>,
}

impl Instance {
    /// Checks one instance against the device database; errors name the key.
    fn validate(&self, hardware: &HardwareDb) -> Result<()> {
        let valid_name = !self.name.is_empty()
            && self
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'));
        if !valid_name {
            return Err(Error::invalid(
                "name",
                format!("'{}' must be letters, digits, '.', '-' and '_'", self.name),
            ));
        }
        if self.provider.trim().is_empty() {
            return Err(Error::invalid("provider", "must not be empty"));
        }
        hardware.get(&self.gpu).map_err(|e| match e {
            Error::UnknownName { suggestions, .. } if !suggestions.is_empty() => Error::invalid(
                "gpu",
                format!(
                    "unknown hardware id '{}'; did you mean {}?",
                    self.gpu,
                    suggestions.join(", ")
                ),
            ),
            _ => Error::invalid("gpu", format!("unknown hardware id '{}'", self.gpu)),
        })?;
        if self.count == 0 || self.count > MAX_DEVICES_PER_INSTANCE {
            return Err(Error::invalid(
                "count",
                format!(
                    "{} devices: must be 1 to {MAX_DEVICES_PER_INSTANCE}",
                    self.count
                ),
            ));
        }
        require_in("host_memory_bytes", self.host_memory_bytes, 1e9, 1e15)?;
        if let Some(n) = self.network_bytes_per_s {
            require_in("network_bytes_per_s", n, 1e6, 1e14)?;
            let per_gpu = n / self.count as f64;
            if per_gpu < crate::train::MIN_INTER_NODE_BYTES_PER_S {
                return Err(Error::invalid(
                    "network_bytes_per_s",
                    format!(
                        "{per_gpu} bytes/s per device is below the 1e6 bytes/s ridgeline models"
                    ),
                ));
            }
        }
        if let Some(l) = &self.scaleup_link {
            require_in(
                "scaleup_link.bytes_per_s_per_direction",
                l.bytes_per_s_per_direction,
                1e6,
                1e14,
            )?;
            if l.source.trim().is_empty() {
                return Err(Error::invalid("scaleup_link.source", "must not be empty"));
            }
        }
        require_in("price.usd_per_hour", self.price.usd_per_hour, 1e-4, 1e5)?;
        let d = self.price.date.as_bytes();
        let date_ok = d.len() == 10
            && d.iter().enumerate().all(|(i, c)| {
                if i == 4 || i == 7 {
                    *c == b'-'
                } else {
                    c.is_ascii_digit()
                }
            });
        if !date_ok {
            return Err(Error::invalid(
                "price.date",
                format!("'{}' is not a date YYYY-MM-DD", self.price.date),
            ));
        }
        if self.price.source.trim().is_empty() {
            return Err(Error::invalid("price.source", "must not be empty"));
        }
        if self.sources.iter().all(|s| s.trim().is_empty()) {
            return Err(Error::invalid(
                "sources",
                "at least one source URL is required",
            ));
        }
        Ok(())
    }

    /// Price per device-hour: the instance's price over its devices.
    pub fn usd_per_gpu_hour(&self) -> f64 {
        self.price.usd_per_hour / self.count as f64
    }

    /// The shape as a rental offer (for the price book: see
    /// [`crate::hardware::prices`]).
    pub fn offer(&self) -> Offer {
        Offer {
            gpu: self.gpu.clone(),
            provider: self.provider.to_ascii_lowercase(),
            shape: self.name.clone(),
            gpus: self.count,
            usd_per_hour: self.price.usd_per_hour,
            spot_usd_per_hour: None,
            committed_1y_usd_per_hour: None,
            committed_3y_usd_per_hour: None,
            marketplace: false,
            region: self.notes.split('.').next().unwrap_or_default().to_string(),
            date: self.price.date.clone(),
            source: self.price.source.clone(),
        }
    }

    /// Host memory per device, bytes: the instance's over its devices.
    pub fn host_memory_per_gpu_bytes(&self) -> f64 {
        self.host_memory_bytes / self.count as f64
    }

    /// Network between instances per device, bytes/s (`None`: no cluster network).
    pub fn network_per_gpu_bytes_per_s(&self) -> Option<f64> {
        self.network_bytes_per_s.map(|n| n / self.count as f64)
    }

    /// Network between nodes per device as training sees it: the instance's network over
    /// its devices, or [`crate::train::DEFAULT_INTER_NODE_BYTES_PER_S`] for a shape
    /// without one (planned alone, so never used).
    pub fn inter_node_bytes_per_s(&self) -> f64 {
        self.network_per_gpu_bytes_per_s()
            .unwrap_or(crate::train::DEFAULT_INTER_NODE_BYTES_PER_S)
    }

    /// Most devices a layout of these instances may use: any number of instances with
    /// a network, one without.
    pub fn max_gpus(&self) -> u64 {
        if self.network_bytes_per_s.is_some() {
            u64::MAX
        } else {
            self.count
        }
    }

    /// The device as this instance presents it: its scale-up link replaced by the
    /// instance's (none: devices talk over their host links), a node of `count`
    /// devices, and the instance's price per device-hour.
    pub fn hardware(&self, db: &HardwareDb) -> Result<Hardware> {
        let mut hw = db.get(&self.gpu)?.clone();
        hw.scaleup_link = self.scaleup_link.clone();
        hw.devices_per_node = Some(u32::try_from(self.count).unwrap_or(u32::MAX));
        hw.price = Some(Price {
            usd_per_hour: self.usd_per_gpu_hour(),
            date: self.price.date.clone(),
            source: self.price.source.clone(),
            provider: Some(self.provider.to_ascii_lowercase()),
            shape: Some(self.name.clone()),
            spot_usd_per_hour: None,
        });
        Ok(hw)
    }

    /// Checks that `gpus` devices can be laid out on whole instances of this shape;
    /// the errors name `gpus`.
    pub fn check_gpus(&self, gpus: u64) -> Result<()> {
        if !gpus.is_multiple_of(self.count) {
            return Err(Error::conflict(
                &["gpus", "instance"],
                format!(
                    "{} holds {} devices: gpus must be a multiple of {}",
                    self.name, self.count, self.count
                ),
            ));
        }
        if gpus > self.max_gpus() {
            return Err(Error::conflict(
                &["gpus", "instance"],
                format!(
                    "{} has no cluster network in the instances file: at most one instance, {} devices",
                    self.name, self.count
                ),
            ));
        }
        Ok(())
    }
}

/// A set of instance shapes, looked up by name.
#[derive(Debug, Clone, Default)]
pub struct InstanceDb {
    instances: Vec<Instance>,
}

/// Wraps a validation error with the file and the instance it is about.
fn in_file(source_name: &str, name: &str, e: Error) -> Error {
    Error::Parse {
        source_name: source_name.to_string(),
        message: format!("instance '{name}': {e}"),
    }
}

impl InstanceDb {
    /// Every shape as a rental offer (see [`Instance::offer`]).
    pub fn offers(&self) -> Vec<Offer> {
        self.instances.iter().map(Instance::offer).collect()
    }

    /// The bundled shapes (parsed and checked against the built-in devices once).
    pub fn builtin() -> Result<&'static InstanceDb> {
        static DB: OnceLock<Result<InstanceDb>> = OnceLock::new();
        DB.get_or_init(|| {
            let hw = HardwareDb::builtin()?;
            let mut db = InstanceDb::default();
            db.add_toml(BUILTIN_INSTANCES_TOML, "data/instances.toml", hw)?;
            Ok(db)
        })
        .as_ref()
        .map_err(Clone::clone)
    }

    /// Parses an instances document and adds its shapes, checked against `hardware`;
    /// returns the names it replaced. A name already loaded needs `override = true`;
    /// a name twice in one document is an error.
    pub fn add_toml(
        &mut self,
        text: &str,
        source_name: &str,
        hardware: &HardwareDb,
    ) -> Result<Vec<String>> {
        let file: InstancesFile = toml::from_str(text).map_err(|e| Error::Parse {
            source_name: source_name.to_string(),
            message: e.to_string().trim().replace('\n', " "),
        })?;
        let mut replaced = Vec::new();
        for (i, inst) in file.instance.iter().enumerate() {
            inst.validate(hardware)
                .map_err(|e| in_file(source_name, &inst.name, e))?;
            let twice = file.instance[..i]
                .iter()
                .any(|o| o.name.eq_ignore_ascii_case(&inst.name));
            let taken = self.get(&inst.name).is_ok();
            if twice || (taken && !inst.override_builtin) {
                return Err(in_file(
                    source_name,
                    &inst.name,
                    Error::invalid(
                        "name",
                        if twice {
                            "appears twice in this file".to_string()
                        } else {
                            "is already loaded; add `override = true` to replace it, or use another name".to_string()
                        },
                    ),
                ));
            }
            if taken {
                replaced.push(inst.name.clone());
            }
        }
        for inst in file.instance {
            self.instances
                .retain(|o| !o.name.eq_ignore_ascii_case(&inst.name));
            self.instances.push(inst);
        }
        self.instances
            .sort_by(|a, b| (&a.provider, &a.name).cmp(&(&b.provider, &b.name)));
        Ok(replaced)
    }

    /// Reads a user's instances file (same schema as `data/instances.toml`) and adds
    /// it; returns the names it replaced.
    pub fn load_file(
        &mut self,
        path: &std::path::Path,
        hardware: &HardwareDb,
    ) -> Result<Vec<String>> {
        let text = crate::files::read_document(path)?;
        self.add_toml(&text, &path.display().to_string(), hardware)
    }

    /// Every shape, sorted by provider and name.
    pub fn instances(&self) -> &[Instance] {
        &self.instances
    }

    /// Looks a shape up by name (case-insensitive); unknown names suggest the three
    /// closest.
    pub fn get(&self, name: &str) -> Result<&Instance> {
        let q = name.trim();
        self.instances
            .iter()
            .find(|i| i.name.eq_ignore_ascii_case(q))
            .ok_or_else(|| {
                Error::unknown(
                    "instance",
                    name,
                    self.instances.iter().map(|i| i.name.as_str()),
                )
            })
    }
}

/// One row of `ridgeline instances --json`: the shape as written, plus its price per
/// device-hour.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct InstanceReport<'a> {
    /// The shape.
    #[serde(flatten)]
    pub instance: &'a Instance,
    /// Resolved hardware id of its devices.
    pub hardware_id: String,
    /// `price.usd_per_hour / count`.
    pub usd_per_gpu_hour: f64,
}

impl Instance {
    /// Its `instances --json` row; `db` resolves the device alias.
    pub fn report(&self, db: &HardwareDb) -> InstanceReport<'_> {
        InstanceReport {
            instance: self,
            hardware_id: db
                .get(&self.gpu)
                .map_or_else(|_| self.gpu.clone(), |h| h.id.clone()),
            usd_per_gpu_hour: self.usd_per_gpu_hour(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ONE: &str = r#"
[[instance]]
provider = "example"
name = "ex-2x"
gpu = "a100"
count = 2
host_memory_bytes = 256e9
price = { usd_per_hour = 3.0, date = "2026-01-01", source = "https://example.com/price" }
sources = ["https://example.com/shape"]
"#;

    #[test]
    fn a_user_file_adds_and_views_the_device() {
        let hw = HardwareDb::builtin().unwrap();
        let mut db = InstanceDb::default();
        assert!(db.add_toml(ONE, "x.toml", hw).unwrap().is_empty());
        let i = db.get("EX-2X").unwrap();
        // $3.00 per hour over 2 devices = $1.50 per device-hour
        assert_eq!(i.usd_per_gpu_hour(), 1.5);
        let d = i.hardware(hw).unwrap();
        assert_eq!(d.id, "a100-80gb-sxm");
        assert_eq!(d.devices_per_node, Some(2));
        assert!(d.scaleup_link.is_none());
        assert_eq!(d.price.unwrap().usd_per_hour, 1.5);
        assert_eq!(i.max_gpus(), 2);
        assert!(i.check_gpus(2).is_ok());
        assert!(
            i.check_gpus(3)
                .unwrap_err()
                .to_string()
                .contains("multiple of 2")
        );
        assert!(
            i.check_gpus(4)
                .unwrap_err()
                .to_string()
                .contains("no cluster network")
        );
        // the same name again needs override = true
        let e = db.add_toml(ONE, "y.toml", hw).unwrap_err().to_string();
        assert!(e.contains("y.toml") && e.contains("override = true"), "{e}");
        let over = ONE.replace("count = 2", "count = 2\noverride = true");
        assert_eq!(db.add_toml(&over, "y.toml", hw).unwrap(), vec!["ex-2x"]);
    }

    #[test]
    fn bad_keys_are_named() {
        let hw = HardwareDb::builtin().unwrap();
        for (from, to, needle) in [
            ("count = 2", "count = 0", "invalid count"),
            (
                "gpu = \"a100\"",
                "gpu = \"a1000\"",
                "invalid gpu: unknown hardware id 'a1000'; did you mean",
            ),
            (
                "host_memory_bytes = 256e9",
                "host_memory_bytes = 256",
                "invalid host_memory_bytes",
            ),
            (
                "usd_per_hour = 3.0",
                "usd_per_hour = -3.0",
                "invalid price.usd_per_hour",
            ),
            ("2026-01-01", "Jan 2026", "invalid price.date"),
            ("name = \"ex-2x\"", "name = \"ex 2x\"", "invalid name"),
            ("count = 2", "count = 2\ncolor = 1", "unknown field `color`"),
            (
                "sources = [\"https://example.com/shape\"]",
                "sources = []",
                "invalid sources",
            ),
        ] {
            let text = ONE.replace(from, to);
            let e = InstanceDb::default()
                .add_toml(&text, "bad.toml", hw)
                .expect_err(needle)
                .to_string();
            assert!(e.starts_with("bad.toml: "), "{e}");
            assert!(e.contains(needle), "{e} lacks {needle}");
        }
        let twice = format!("{ONE}{ONE}");
        let e = InstanceDb::default()
            .add_toml(&twice, "t.toml", hw)
            .unwrap_err();
        assert!(e.to_string().contains("appears twice"), "{e}");
    }

    #[test]
    fn the_bundled_shapes_load_with_prices_and_sources() {
        let db = InstanceDb::builtin().unwrap();
        assert!(db.instances().len() >= 15);
        for i in db.instances() {
            assert!(
                i.price.source.starts_with("http"),
                "{}: {}",
                i.name,
                i.price.source
            );
            assert!(
                i.sources.iter().all(|s| s.starts_with("http")),
                "{}",
                i.name
            );
        }
        let e = db.get("p4d.24xlarg").unwrap_err().to_string();
        assert!(e.contains("did you mean p4d.24xlarge"), "{e}");
    }
}
