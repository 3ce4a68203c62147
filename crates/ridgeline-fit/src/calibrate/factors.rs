//! The one registry of an engine's fittable scalar factors ([`FACTORS`]): for each, its
//! kind, TOML key, how it is read (with the fallback a family override takes), written
//! and copied, which bounds hold it, whether it is an overhead (fitted in ms rather than
//! in log space) and whether a fit starts it from `typical`'s value. The fitter, the
//! saver (rounding) and the start from `typical` iterate it, so a new factor costs its
//! engine field, one entry here and its use in the cost model. The memory efficiencies,
//! one per memory group, are the parametric [`ParamKind::Memory`] and sit beside it.

use super::ParamKind;
use crate::engine::Engine;

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
}

impl Factor {
    /// An overhead in seconds (fitted in ms), not an efficiency (fitted in log space).
    pub fn is_overhead(&self) -> bool {
        self.limit == Limit::Overhead
    }
}

/// A factor stored as a plain field.
macro_rules! plain {
    ($kind:ident, $field:ident, $limit:ident, $typical:expr) => {
        Factor {
            kind: ParamKind::$kind,
            key: stringify!($field),
            get: |e| e.$field,
            stored: |e| Some(e.$field),
            set: |e, v| e.$field = v,
            copy: |e, t| e.$field = t.$field,
            limit: Limit::$limit,
            from_typical: $typical,
        }
    };
}

/// A family override stored as an `Option`, read as `$fallback` where unset.
macro_rules! family {
    ($kind:ident, $field:ident, $fallback:ident, $limit:ident) => {
        Factor {
            kind: ParamKind::$kind,
            key: stringify!($field),
            get: |e| e.$field.unwrap_or(e.$fallback),
            stored: |e| e.$field,
            set: |e, v| e.$field = Some(v),
            copy: |e, t| e.$field = t.$field,
            limit: Limit::$limit,
            from_typical: true,
        }
    };
}

/// Every fittable scalar factor.
pub static FACTORS: &[Factor] = &[
    plain!(Compute, compute_efficiency, Compute, true),
    family!(
        AppleCompute,
        apple_compute_efficiency,
        compute_efficiency,
        Compute
    ),
    family!(
        RdnaCompute,
        rdna_compute_efficiency,
        compute_efficiency,
        Compute
    ),
    plain!(Dequant, dequant_efficiency, Unit, false),
    plain!(Fp4, fp4_efficiency, Unit, true),
    plain!(Attention, attention_efficiency, Unit, false),
    plain!(StepOverhead, step_overhead_s, Overhead, true),
    plain!(LayerOverhead, layer_overhead_s, Overhead, true),
    family!(
        RdnaExpertOverhead,
        rdna_expert_overhead_s,
        expert_overhead_s,
        Overhead
    ),
];

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
        assert_eq!((apple.get)(&ideal), ideal.compute_efficiency);
    }
}
