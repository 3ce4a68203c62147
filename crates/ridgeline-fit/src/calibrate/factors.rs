//! The one registry of an engine's fittable scalar factors ([`FACTORS`]): for each, its
//! kind, its name in fit reports (a field's TOML key; for a device override, the key
//! files written before the selectors used), how it is read (with the fallback a device
//! override takes), written
//! and copied, which bounds hold it, whether it is an overhead (fitted in ms rather than
//! in log space) and whether a fit starts it from `typical`'s value. The fitter, the
//! saver (rounding) and the start from `typical` iterate it, so a new factor costs its
//! engine field, one entry here and its use in the cost model. The memory efficiencies,
//! one per memory group, are the parametric [`ParamKind::Memory`] and sit beside it.

use super::ParamKind;
use crate::engine::{DeviceFactor, Engine, Selector};
use crate::hardware::{DeviceClass, Hardware};

/// Which bounds hold a factor's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// Between the minimum efficiency and the kind F matmul ceiling.
    Compute,
    /// Between the minimum efficiency and 1.
    Unit,
    /// Between 0 and the largest overhead.
    Overhead,
}

/// One fittable scalar factor of an engine profile.
#[derive(Debug, Clone)]
pub struct Factor {
    /// The parameter it is.
    pub kind: ParamKind,
    /// Its TOML key (and field name).
    pub key: &'static str,
    /// Its value as the cost model uses it (a family override falls back to the
    /// general factor where unset).
    pub get: fn(&Engine) -> f64,
    /// Its value as stored (`None`: an override left unset).
    pub stored: fn(&Engine) -> Option<f64>,
    /// Sets it.
    pub set: fn(&mut Engine, f64),
    /// Copies it, as stored, from the second engine into the first.
    pub copy: fn(&mut Engine, &Engine),
    /// Its bounds.
    pub limit: Limit,
    /// A fit starts it from `typical`'s value (see `start_from_typical`).
    pub from_typical: bool,
    /// For a device override: the factor it sets and the family it is fitted for (a
    /// fit informed by one device's rows keys it to that device instead).
    pub family: Option<(DeviceFactor, fn() -> Selector)>,
}

impl Factor {
    /// An overhead in seconds (fitted in ms), not an efficiency (fitted in log space).
    pub(crate) fn is_overhead(&self) -> bool {
        self.limit == Limit::Overhead
    }
}

/// A factor stored as a plain field of one of the engine's groups.
macro_rules! plain {
    ($kind:ident, $group:ident . $field:ident, $limit:ident, $typical:expr) => {
        Factor {
            kind: ParamKind::$kind,
            key: stringify!($field),
            get: |e| e.$group.$field,
            stored: |e| Some(e.$group.$field),
            set: |e, v| e.$group.$field = v,
            copy: |e, t| e.$group.$field = t.$group.$field,
            limit: Limit::$limit,
            from_typical: $typical,
            family: None,
        }
    };
}

/// A device override (`[[engine.device]]` selected by `$select`) of `$factor`, read as
/// the general `$group.$fallback` where unset; `$key` names it in fit reports.
macro_rules! family {
    ($kind:ident, $key:literal, $select:expr, $factor:ident, $group:ident . $fallback:ident, $limit:ident) => {
        Factor {
            kind: ParamKind::$kind,
            key: $key,
            get: |e| {
                e.override_value(&$select, DeviceFactor::$factor)
                    .unwrap_or(e.$group.$fallback)
            },
            stored: |e| e.override_value(&$select, DeviceFactor::$factor),
            set: |e, v| e.set_override(&$select, DeviceFactor::$factor, Some(v)),
            copy: |e, t| {
                e.set_override(
                    &$select,
                    DeviceFactor::$factor,
                    t.override_value(&$select, DeviceFactor::$factor),
                )
            },
            limit: Limit::$limit,
            from_typical: true,
            family: Some((DeviceFactor::$factor, || $select)),
        }
    };
}

/// Every fittable scalar factor.
pub static FACTORS: &[Factor] = &[
    plain!(Compute, speed.compute_efficiency, Compute, true),
    family!(
        AppleCompute,
        "apple_compute_efficiency",
        Selector::class(DeviceClass::Apple),
        ComputeEfficiency,
        speed.compute_efficiency,
        Compute
    ),
    family!(
        RdnaCompute,
        "rdna_compute_efficiency",
        Selector::architecture("rdna"),
        ComputeEfficiency,
        speed.compute_efficiency,
        Compute
    ),
    plain!(Dequant, speed.dequant_efficiency, Unit, false),
    plain!(Fp4, speed.fp4_efficiency, Unit, true),
    plain!(Attention, speed.attention_efficiency, Unit, false),
    plain!(StepOverhead, overheads.step_overhead_s, Overhead, true),
    plain!(LayerOverhead, overheads.layer_overhead_s, Overhead, true),
    plain!(
        SequenceOverhead,
        overheads.sequence_overhead_s,
        Overhead,
        false
    ),
    family!(
        AppleGemv,
        "apple_gemv_compute_efficiency",
        Selector::class(DeviceClass::Apple),
        GemvEfficiency,
        speed.gemv_compute_efficiency,
        Unit
    ),
    family!(
        AppleExpertMemory,
        "apple_expert_memory_efficiency",
        Selector::class(DeviceClass::Apple),
        ExpertMemoryEfficiency,
        speed.expert_memory_efficiency,
        Unit
    ),
    family!(
        RdnaExpertOverhead,
        "rdna_expert_overhead_s",
        Selector::architecture("rdna"),
        ExpertOverhead,
        overheads.expert_overhead_s,
        Overhead
    ),
];

/// Moves back into their families the family overrides an earlier fit keyed to one
/// device ([`key_to_device`]) where that device is among `hardware` and of the family,
/// so that a refit starts from them and can move them (the device's override would
/// otherwise shadow the family's); drops those keyed to a device not among
/// `hardware`: they are a fit's outputs from rows this fit does not have (a
/// publication held out, say), and must not reach a prediction through it.
pub(crate) fn fold_into_families(e: &mut Engine, hardware: &[&Hardware]) {
    drop_keyed(e, |id| !hardware.iter().any(|hw| hw.id == id));
    for (factor, family) in FACTORS.iter().filter_map(|f| f.family) {
        let family = family();
        for hw in hardware.iter().filter(|hw| family.matches(hw)) {
            let own = Selector::device(&hw.id);
            if let Some(v) = e.override_value(&own, factor) {
                e.set_override(&own, factor, None);
                if e.override_value(&family, factor).is_none() {
                    e.set_override(&family, factor, Some(v));
                }
            }
        }
    }
}

/// Moves back into its memory group each memory efficiency an earlier fit keyed to one
/// device ([`key_memory_to_device`]) where that device is among `hardware`, so that a
/// refit starts from it (the device's override would otherwise shadow the group's);
/// drops the others: they are a fit's outputs from rows this fit does not have (a
/// publication held out, say), and a fit must not start from them.
pub(crate) fn fold_memory_into_groups(e: &mut Engine, hardware: &[&Hardware]) {
    for (select, v) in e.take_device_factor(DeviceFactor::MemoryEfficiency) {
        let on = hardware
            .iter()
            .find(|hw| select.device.as_deref() == Some(hw.id.as_str()));
        if let Some(hw) = on {
            let group = crate::engine::memory_group(hw).to_string();
            e.speed.memory_efficiency.insert(group, v);
        }
    }
}

/// Keys the memory efficiency of memory group `group` in `e` to the one device `id`
/// its rows came from (a factor fitted on one device belongs to that device): a device
/// override's `memory_efficiency`, the group's key removed (the rest of the group then
/// takes what is carried over to it); returns the override's name
/// ([`DeviceFactor::name_under`]), or `None` when `e` has no such key.
pub(crate) fn key_memory_to_device(e: &mut Engine, group: &str, id: &str) -> Option<String> {
    let v = e.speed.memory_efficiency.remove(group)?;
    let own = Selector::device(id);
    e.set_override(&own, DeviceFactor::MemoryEfficiency, Some(v));
    Some(DeviceFactor::MemoryEfficiency.name_under(&own))
}

/// Keys the family override `f` holds in `e` to the one device `id` its rows came
/// from (a factor fitted on one device belongs to that device; the rest of the family
/// takes the general factor); returns the override's new name
/// ([`DeviceFactor::name_under`]), or `None` when `f` is no family override.
pub(crate) fn key_to_device(e: &mut Engine, f: &Factor, id: &str) -> Option<String> {
    let (factor, family) = f.family?;
    let own = Selector::device(id);
    let v = e.override_value(&family(), factor);
    e.set_override(&family(), factor, None);
    e.set_override(&own, factor, v);
    Some(factor.name_under(&own))
}

/// Drops the family factors an earlier fit keyed to a device ([`key_to_device`]) whose
/// id `stale` holds.
pub(crate) fn drop_keyed(e: &mut Engine, stale: impl Fn(&str) -> bool) {
    for (factor, _) in FACTORS.iter().filter_map(|f| f.family) {
        let keyed: Vec<Selector> = (e.devices.iter())
            .filter_map(|o| o.select.device.as_deref())
            .filter(|id| stale(id))
            .map(Selector::device)
            .filter(|own| e.override_value(own, factor).is_some())
            .collect();
        for own in keyed {
            e.set_override(&own, factor, None);
        }
    }
}

/// Clears the family override `f` (and keeps none of the general factor's value it
/// shadowed): for a factor no row of a fit informs, whose value an earlier fit set.
pub(crate) fn clear_family(e: &mut Engine, f: &Factor) {
    if let Some((factor, family)) = f.family {
        e.set_override(&family(), factor, None);
    }
}

/// The registry's entry of a scalar kind (`None` for [`ParamKind::Memory`]).
pub fn factor(kind: &ParamKind) -> Option<&'static Factor> {
    FACTORS.iter().find(|f| &f.kind == kind)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_scalar_kind_has_one_entry_with_its_own_key() {
        for (i, f) in FACTORS.iter().enumerate() {
            assert!(
                factor(&f.kind).is_some_and(|g| std::ptr::eq(g, f)),
                "{}",
                f.key
            );
            assert!(FACTORS[..i].iter().all(|g| g.key != f.key), "{}", f.key);
        }
        assert!(factor(&ParamKind::Memory("hbm".into())).is_none());
    }

    #[test]
    fn set_then_get_round_trips_and_overrides_fall_back() {
        let mut e = Engine::ideal();
        for f in FACTORS {
            (f.set)(&mut e, 0.375);
            assert_eq!((f.get)(&e), 0.375, "{}", f.key);
            assert_eq!((f.stored)(&e), Some(0.375), "{}", f.key);
        }
        // an unset override reads the general factor: ideal's compute efficiency is 1
        let ideal = Engine::ideal();
        let apple = factor(&ParamKind::AppleCompute).unwrap();
        assert_eq!((apple.stored)(&ideal), None);
        assert_eq!((apple.get)(&ideal), ideal.speed.compute_efficiency);
    }

    #[test]
    fn a_refit_folds_back_the_factors_keyed_to_its_devices_and_drops_the_others() {
        // an earlier fit keyed the Apple matrix-vector time to the m2-ultra and the
        // expert efficiency to the m3-max; a fit with rows of the m2-ultra alone (the
        // m3-max's publication held out, say) starts from the first in the family and
        // from nothing of the second, which came from rows it does not have
        let db = crate::hardware::HardwareDb::builtin().unwrap();
        let (m2, m3) = (db.get("m2-ultra").unwrap(), db.get("m3-max").unwrap());
        let (gemv, experts) = (
            factor(&ParamKind::AppleGemv).unwrap(),
            factor(&ParamKind::AppleExpertMemory).unwrap(),
        );
        let mut e = Engine::ideal();
        e.set_override(
            &Selector::device("m2-ultra"),
            DeviceFactor::GemvEfficiency,
            Some(0.2),
        );
        let m3_expert = Selector::device("m3-max");
        e.set_override(&m3_expert, DeviceFactor::ExpertMemoryEfficiency, Some(0.8));
        fold_into_families(&mut e, &[m2]);
        assert_eq!((gemv.stored)(&e), Some(0.2));
        assert_eq!(
            e.override_value(&Selector::device("m2-ultra"), DeviceFactor::GemvEfficiency),
            None
        );
        assert_eq!((experts.stored)(&e), None);
        assert_eq!(
            e.override_value(&m3_expert, DeviceFactor::ExpertMemoryEfficiency),
            None
        );
        assert_eq!(e.expert_memory_efficiency_on(m3), 1.0);
        assert!(e.devices.iter().all(|o| o.select.device.is_none()));
    }
}
