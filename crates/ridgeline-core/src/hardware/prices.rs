//! Prices: rental offers (a provider's shape of N devices at a price per hour) and
//! purchase prices, read from `data/prices.toml` (and a user's `--price-file`), and the
//! device-hour each device is planned at.
//!
//! A device's planned rental price is its cheapest on-demand offer per device-hour
//! (shape price / devices in the shape), over every offer the price book holds for it:
//! `data/prices.toml`, a `[price]` table in its hardware file, and whatever the caller
//! adds (the instance shapes of `data/instances.toml`); marketplace offers (hosts
//! bidding their own devices) count only where no provider lists the device. `--provider NAME` keeps only that
//! provider's offers; a price file replaces every offer (and the purchase price) of each
//! device it names, since a negotiated price is the one that counts.
//!
//! What owning costs ([`Ownership`]): the purchase price spread over the stated life,
//! plus power at TDP x PUE x $/kWh while the device runs. Per hour of use at utilisation
//! `u`, `own = purchase / (life_hours x u) + tdp_kw x pue x usd_per_kwh`; buying beats
//! renting at price `r` from `u* = (purchase / life_hours) / (r - tdp_kw x pue x
//! usd_per_kwh)` up (never, where power alone costs more than the rent).

use super::{Hardware, HardwareDb, Price};
use crate::error::{Error, Result, require_in};
use serde::{Deserialize, Serialize};

/// The bundled price book.
pub(crate) const BUILTIN_PRICES_TOML: &str = include_str!("../../../../data/prices.toml");

/// One rentable shape at a price.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Offer {
    /// Hardware id (or alias) of its devices.
    pub gpu: String,
    /// Provider (`aws`, `runpod`, `lambda`, ...), lower case.
    pub provider: String,
    /// The provider's name for the shape.
    pub shape: String,
    /// Devices in the shape.
    pub gpus: u64,
    /// On-demand price of the whole shape, USD per hour.
    pub usd_per_hour: f64,
    /// Spot / interruptible price of the whole shape, USD per hour, where published.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spot_usd_per_hour: Option<f64>,
    /// The whole shape's price per hour under a one-year commitment (a reserved
    /// instance, savings plan or committed-use discount, paid monthly), USD, where the
    /// provider publishes one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub committed_1y_usd_per_hour: Option<f64>,
    /// The same under a three-year commitment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub committed_3y_usd_per_hour: Option<f64>,
    /// Region or location the price is for.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub region: String,
    /// A marketplace, auction or broker listing (hosts offer their own devices, or a
    /// broker resells other clouds': vast.ai, Mithril, Prime Intellect, Shadeform):
    /// a device is planned at such a price only where no provider lists one itself, or
    /// with `--provider` naming the marketplace.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub marketplace: bool,
    /// When the price was read (YYYY-MM-DD).
    pub date: String,
    /// Where it was read (URL).
    pub source: String,
}

impl Offer {
    /// Price per device-hour, USD.
    pub fn usd_per_gpu_hour(&self) -> f64 {
        self.usd_per_hour / self.gpus as f64
    }

    /// Committed-use price per device-hour for `term`, USD, where published.
    pub fn committed_usd_per_gpu_hour(&self, term: Term) -> Option<f64> {
        let whole = match term {
            Term::OneYear => self.committed_1y_usd_per_hour,
            Term::ThreeYears => self.committed_3y_usd_per_hour,
        };
        whole.map(|w| w / self.gpus as f64)
    }

    fn validate(&self) -> Result<()> {
        require_in("gpus", self.gpus as f64, 1.0, 1024.0)?;
        require_in("usd_per_hour", self.usd_per_hour, 1e-4, 1e5)?;
        if let Some(s) = self.spot_usd_per_hour {
            require_in("spot_usd_per_hour", s, 1e-4, 1e5)?;
        }
        for (key, c) in [
            ("committed_1y_usd_per_hour", self.committed_1y_usd_per_hour),
            ("committed_3y_usd_per_hour", self.committed_3y_usd_per_hour),
        ] {
            if let Some(c) = c {
                // a commitment buys a discount: above the on-demand price it is a typo
                require_in(key, c, 1e-4, self.usd_per_hour)?;
            }
        }
        check_date("date", &self.date)?;
        check_source(&self.source)?;
        if self.provider.trim().is_empty() || self.shape.trim().is_empty() {
            return Err(Error::invalid(
                "provider",
                "provider and shape must be named",
            ));
        }
        Ok(())
    }
}

crate::named_enum! {
    /// The length of a committed-use term.
    pub enum Term: "commitment term" {
        /// One year.
        OneYear = "1y",
        /// Three years.
        ThreeYears = "3y",
    }
}

/// A device's cheapest committed-use price for one term: per device-hour, with the
/// offer it comes from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TermPrice {
    /// USD per device-hour under the commitment.
    pub usd_per_hour: f64,
    /// Provider (lower case).
    pub provider: String,
    /// The provider's shape.
    pub shape: String,
    /// When the price was read (YYYY-MM-DD).
    pub date: String,
    /// Where it was read.
    pub source: String,
}

/// A device's purchase price.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Purchase {
    /// Hardware id (or alias). Absent in a hardware file's own `[purchase]` table.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub gpu: String,
    /// US dollars for one device (for a device sold inside a machine, the cheapest
    /// machine that carries it with the memory the hardware file assumes).
    pub usd: f64,
    /// What the price buys (`Founders Edition MSRP`, `Mac Studio, 64 GB`).
    pub what: String,
    /// When the price was published or read (YYYY-MM-DD).
    pub date: String,
    /// Where (URL).
    pub source: String,
}

impl Purchase {
    fn validate(&self) -> Result<()> {
        require_in("usd", self.usd, 1.0, 1e7)?;
        check_date("date", &self.date)?;
        check_source(&self.source)
    }
}

fn check_date(key: &str, d: &str) -> Result<()> {
    let b = d.as_bytes();
    let ok = b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit());
    if ok {
        Ok(())
    } else {
        Err(Error::invalid(
            key,
            format!("'{d}' is not a date YYYY-MM-DD"),
        ))
    }
}

fn check_source(s: &str) -> Result<()> {
    if s.trim().is_empty() {
        Err(Error::invalid("source", "a source is required"))
    } else {
        Ok(())
    }
}

/// A price file: `[[offer]]` and `[[purchase]]` tables.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PriceBook {
    /// Rental offers.
    #[serde(default, rename = "offer")]
    pub offers: Vec<Offer>,
    /// Purchase prices.
    #[serde(default, rename = "purchase")]
    pub purchases: Vec<Purchase>,
    /// Devices whose prices a price file replaced ([`PriceBook::overridden_by`]): their
    /// hardware files' own `[price]` no longer counts.
    #[serde(skip)]
    pub replaced: Vec<String>,
}

impl PriceBook {
    /// The bundled book (`data/prices.toml`), checked against `db`. The text is parsed
    /// once per process (every CLI call reads the book twice: for the built-in hardware
    /// database and for the one a command prices).
    pub fn builtin(db: &HardwareDb) -> Result<PriceBook> {
        static PARSED: std::sync::OnceLock<Result<PriceBook>> = std::sync::OnceLock::new();
        PARSED
            .get_or_init(|| PriceBook::parse(BUILTIN_PRICES_TOML, "data/prices.toml"))
            .clone()?
            .resolved(db, "data/prices.toml")
    }

    /// Parses and checks a price file; every device must be in `db` (errors name the
    /// file, the entry and the key, with near matches for unknown devices).
    pub fn from_toml(text: &str, source_name: &str, db: &HardwareDb) -> Result<PriceBook> {
        PriceBook::parse(text, source_name)?.resolved(db, source_name)
    }

    /// The book as written, not yet checked against a hardware database.
    fn parse(text: &str, source_name: &str) -> Result<PriceBook> {
        toml::from_str(text).map_err(|e| Error::Parse {
            source_name: source_name.to_string(),
            message: e.to_string().trim().replace('\n', " "),
        })
    }

    /// Every entry validated and its device resolved to an id of `db`.
    fn resolved(mut self, db: &HardwareDb, source_name: &str) -> Result<PriceBook> {
        let parse = |message: String| Error::Parse {
            source_name: source_name.to_string(),
            message,
        };
        for (i, o) in self.offers.iter_mut().enumerate() {
            let at = |e: Error| parse(format!("offer {} ({}): {e}", i + 1, o.shape));
            o.validate().map_err(at)?;
            o.gpu = db.get(&o.gpu).map_err(at)?.id.clone();
            o.provider = o.provider.trim().to_ascii_lowercase();
        }
        for (i, p) in self.purchases.iter_mut().enumerate() {
            let at = |e: Error| parse(format!("purchase {} ({}): {e}", i + 1, p.gpu));
            p.validate().map_err(at)?;
            p.gpu = db.get(&p.gpu).map_err(at)?.id.clone();
        }
        Ok(self)
    }

    /// Reads and checks a price file (`--price-file`), as [`PriceBook::from_toml`].
    pub fn from_file(path: &std::path::Path, db: &HardwareDb) -> Result<PriceBook> {
        let text = crate::files::read_document(path)?;
        PriceBook::from_toml(&text, &path.display().to_string(), db)
    }

    /// This book with `other`'s entries in place of every offer and purchase of each
    /// device `other` names (a negotiated price replaces the list prices).
    pub fn overridden_by(mut self, other: &PriceBook) -> PriceBook {
        let named = |id: &str| {
            other.offers.iter().any(|o| o.gpu == id) || other.purchases.iter().any(|p| p.gpu == id)
        };
        self.offers.retain(|o| !named(&o.gpu));
        self.purchases.retain(|p| !named(&p.gpu));
        for id in other
            .offers
            .iter()
            .map(|o| &o.gpu)
            .chain(other.purchases.iter().map(|p| &p.gpu))
        {
            if !self.replaced.contains(id) {
                self.replaced.push(id.clone());
            }
        }
        self.offers.extend(other.offers.iter().cloned());
        self.purchases.extend(other.purchases.iter().cloned());
        self
    }

    /// The providers the book's offers name, sorted.
    pub fn providers(&self) -> Vec<String> {
        let mut v: Vec<String> = self.offers.iter().map(|o| o.provider.clone()).collect();
        v.sort();
        v.dedup();
        v
    }
}

impl HardwareDb {
    /// Sets every device's planned rental price (its cheapest on-demand offer per
    /// device-hour in `book`, or its hardware file's own `[price]`, whichever is lower;
    /// with `provider`, only that provider's offers, and a file's `[price]` only where it
    /// names that provider) and its purchase price (the book's, else the file's own).
    /// An unknown provider is an error naming `provider`, with near matches.
    pub fn apply_prices(&mut self, book: &PriceBook, provider: Option<&str>) -> Result<()> {
        let provider = provider.map(|p| p.trim().to_ascii_lowercase());
        if let Some(p) = &provider {
            let known = book.providers();
            let file_named = self
                .devices
                .iter()
                .any(|d| d.file_price.as_ref().and_then(|x| x.provider.as_deref()) == Some(p));
            if !known.contains(p) && !file_named {
                return Err(Error::unknown(
                    "provider",
                    p,
                    known.iter().map(String::as_str),
                ));
            }
        }
        for d in &mut self.devices {
            let own = d
                .file_price
                .clone()
                .filter(|_| !book.replaced.contains(&d.id))
                .filter(|x| provider.is_none() || x.provider.as_deref() == provider.as_deref());
            let mine: Vec<&Offer> = book
                .offers
                .iter()
                .filter(|o| o.gpu == d.id)
                .filter(|o| provider.as_ref().is_none_or(|p| &o.provider == p))
                .collect();
            let listed = mine.iter().any(|o| !o.marketplace);
            let usable: Vec<&Offer> = mine
                .into_iter()
                .filter(|o| !(listed && o.marketplace))
                .collect();
            let best = usable
                .iter()
                .min_by(|a, b| a.usd_per_gpu_hour().total_cmp(&b.usd_per_gpu_hour()))
                .map(|o| Price {
                    usd_per_hour: o.usd_per_gpu_hour(),
                    date: o.date.clone(),
                    source: o.source.clone(),
                    provider: Some(o.provider.clone()),
                    shape: Some(o.shape.clone()),
                    spot_usd_per_hour: o.spot_usd_per_hour.map(|s| s / o.gpus as f64),
                });
            let term_price = |term: Term| {
                usable
                    .iter()
                    .filter_map(|o| Some((o, o.committed_usd_per_gpu_hour(term)?)))
                    .min_by(|a, b| a.1.total_cmp(&b.1))
                    .map(|(o, usd_per_hour)| TermPrice {
                        usd_per_hour,
                        provider: o.provider.clone(),
                        shape: o.shape.clone(),
                        date: o.date.clone(),
                        source: o.source.clone(),
                    })
            };
            d.committed_1y = term_price(Term::OneYear);
            d.committed_3y = term_price(Term::ThreeYears);
            d.price = match (own, best) {
                (Some(a), Some(b)) => Some(if a.usd_per_hour <= b.usd_per_hour {
                    a
                } else {
                    b
                }),
                (a, b) => a.or(b),
            };
            d.purchase = book
                .purchases
                .iter()
                .find(|p| p.gpu == d.id)
                .cloned()
                .or_else(|| {
                    d.file_purchase
                        .clone()
                        .filter(|_| !book.replaced.contains(&d.id))
                });
        }
        Ok(())
    }
}

/// Assumptions of the cost of owning a device (`--own-*` options), with their defaults.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Ownership {
    /// Years the purchase is spread over.
    pub life_years: f64,
    /// Fraction of the hours the device does useful work.
    pub utilisation: f64,
    /// Power usage effectiveness of the room (facility power / IT power).
    pub pue: f64,
    /// Electricity, USD per kWh.
    pub usd_per_kwh: f64,
}

impl Default for Ownership {
    /// 3 years, 60% utilisation, PUE 1.3, $0.12/kWh.
    fn default() -> Self {
        Ownership {
            life_years: 3.0,
            utilisation: 0.6,
            pue: 1.3,
            usd_per_kwh: 0.12,
        }
    }
}

/// Hours in a year (365 days).
pub(crate) const HOURS_PER_YEAR: f64 = 8760.0;

impl Ownership {
    /// Checks the assumptions; errors name the option.
    pub fn validate(&self) -> Result<()> {
        require_in("own_life_years", self.life_years, 0.1, 30.0)?;
        require_in("own_utilisation", self.utilisation, 0.001, 1.0)?;
        require_in("pue", self.pue, 1.0, 5.0)?;
        require_in("usd_per_kwh", self.usd_per_kwh, 0.0, 10.0).map(|_| ())
    }

    /// Capital cost of one device per wall-clock hour, USD (`None`: no purchase price).
    pub fn capital_per_hour(&self, hw: &Hardware) -> Option<f64> {
        hw.purchase
            .as_ref()
            .map(|p| p.usd / (self.life_years * HOURS_PER_YEAR))
    }

    /// Power of one device per hour of use, USD: TDP x PUE x $/kWh (0 without a TDP).
    pub fn power_per_hour(&self, hw: &Hardware) -> f64 {
        hw.tdp_w.unwrap_or(0.0) / 1000.0 * self.pue * self.usd_per_kwh
    }

    /// What one device costs per hour of use when owned, USD (`None`: no purchase price).
    pub fn own_usd_per_hour(&self, hw: &Hardware) -> Option<f64> {
        self.capital_per_hour(hw)
            .map(|c| c / self.utilisation + self.power_per_hour(hw))
    }

    /// The utilisation from which owning costs less than renting at the device's rental
    /// price (`None`: no purchase or no rental price; above 1: renting wins at any use).
    pub fn breakeven_utilisation(&self, hw: &Hardware) -> Option<f64> {
        let rent = hw.price.as_ref()?.usd_per_hour;
        let capital = self.capital_per_hour(hw)?;
        let margin = rent - self.power_per_hour(hw);
        Some(if margin > 0.0 {
            capital / margin
        } else {
            f64::INFINITY
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn device() -> Hardware {
        let mut hw = HardwareDb::builtin()
            .unwrap()
            .get("h100-sxm")
            .unwrap()
            .clone();
        hw.tdp_w = Some(700.0);
        hw.price = None;
        hw.file_price = None;
        hw.purchase = None;
        hw
    }

    #[test]
    fn cheapest_offer_per_device_hour_wins_and_provider_filters() {
        let mut db = HardwareDb::default();
        db.insert(device());
        let book = PriceBook::from_toml(
            r#"
[[offer]]
gpu = "h100-sxm"
provider = "A"
shape = "8x"
gpus = 8
usd_per_hour = 20.0
date = "2026-12-01"
source = "https://example.org/a"
[[offer]]
gpu = "h100-sxm"
provider = "b"
shape = "1x"
gpus = 1
usd_per_hour = 3.0
spot_usd_per_hour = 1.5
date = "2026-12-01"
source = "https://example.org/b"
"#,
            "t.toml",
            &db,
        )
        .unwrap();
        let mut all = db.clone();
        all.apply_prices(&book, None).unwrap();
        // 20 / 8 = 2.5 per device-hour beats 3.0
        let p = all.get("h100-sxm").unwrap().price.clone().unwrap();
        assert_eq!((p.usd_per_hour, p.provider.as_deref()), (2.5, Some("a")));
        let mut b = db.clone();
        b.apply_prices(&book, Some("B")).unwrap();
        let p = b.get("h100-sxm").unwrap().price.clone().unwrap();
        assert_eq!((p.usd_per_hour, p.spot_usd_per_hour), (3.0, Some(1.5)));
        let e = db
            .clone()
            .apply_prices(&book, Some("c"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("provider") && e.contains("unknown provider 'c'"),
            "{e}"
        );
    }

    #[test]
    fn owning_against_renting_by_hand() {
        let mut hw = device();
        hw.purchase = Some(Purchase {
            gpu: hw.id.clone(),
            usd: 26280.0,
            what: "test".into(),
            date: "2026-12-01".into(),
            source: "https://example.org".into(),
        });
        hw.price = Some(Price {
            usd_per_hour: 2.0,
            date: "2026-12-01".into(),
            source: "x".into(),
            provider: None,
            shape: None,
            spot_usd_per_hour: None,
        });
        let o = Ownership {
            life_years: 3.0,
            utilisation: 0.5,
            pue: 1.25,
            usd_per_kwh: 0.10,
        };
        // capital 26280 / (3 x 8760) = 1.0 $/h; power 0.7 kW x 1.25 x 0.10 = 0.0875 $/h
        let own = o.own_usd_per_hour(&hw).unwrap();
        assert!((own - (1.0 / 0.5 + 0.0875)).abs() < 1e-12, "{own}");
        // buying wins from 1.0 / (2.0 - 0.0875) = 0.5229 up
        let u = o.breakeven_utilisation(&hw).unwrap();
        assert!((u - 1.0 / 1.9125).abs() < 1e-12, "{u}");
        assert!(
            Ownership {
                utilisation: 0.0,
                ..o
            }
            .validate()
            .is_err()
        );
    }

    #[test]
    fn a_price_file_replaces_every_offer_of_the_devices_it_names() {
        let mut db = HardwareDb::default();
        db.insert(device());
        let offer = |p: &str, usd: f64| {
            format!(
                "[[offer]]\ngpu = \"h100-sxm\"\nprovider = \"{p}\"\nshape = \"s\"\ngpus = 1\nusd_per_hour = {usd}\ndate = \"2026-12-01\"\nsource = \"u\"\n"
            )
        };
        let list = PriceBook::from_toml(&offer("a", 2.0), "a", &db).unwrap();
        let mine = PriceBook::from_toml(&offer("mine", 2.6), "b", &db).unwrap();
        db.apply_prices(&list.overridden_by(&mine), None).unwrap();
        assert_eq!(
            db.get("h100-sxm")
                .unwrap()
                .price
                .as_ref()
                .unwrap()
                .usd_per_hour,
            2.6
        );
        let bad =
            PriceBook::from_toml(&offer("a", 2.0).replace("h100-sxm", "h1000"), "f.toml", &db)
                .unwrap_err()
                .to_string();
        assert!(bad.contains("f.toml") && bad.contains("h1000"), "{bad}");
    }
}
