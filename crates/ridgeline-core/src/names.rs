//! Closed sets of named kinds (parallelism, training method, optimizer, ...): one macro
//! gives each enum its names, parsing with near-match suggestions, serde by name and
//! clap's `ValueEnum`, so no enum hand-writes a `parse`/`name` table.

/// serde, for the impls [`named_enum!`] writes in other crates.
#[doc(hidden)]
pub use serde as __serde;

/// clap, for the `ValueEnum` impls [`named_enum!`] writes in other crates.
#[cfg(feature = "clap")]
#[doc(hidden)]
pub use clap as __clap;

/// `clap::ValueEnum` for a named enum (the crate's `clap` feature on).
#[cfg(feature = "clap")]
#[doc(hidden)]
#[macro_export]
macro_rules! __value_enum {
    ($name:ident) => {
        impl $crate::names::__clap::ValueEnum for $name {
            fn value_variants<'a>() -> &'a [Self] {
                Self::ALL
            }
            fn to_possible_value(
                &self,
            ) -> ::std::option::Option<$crate::names::__clap::builder::PossibleValue> {
                ::std::option::Option::Some($crate::names::__clap::builder::PossibleValue::new(
                    self.name(),
                ))
            }
        }
    };
}

/// Nothing: the crate's `clap` feature is off.
#[cfg(not(feature = "clap"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __value_enum {
    ($name:ident) => {};
}

/// Declares a `Copy` enum whose variants have fixed lowercase names.
///
/// Generates `ALL`, `name()`, `parse()` (case-insensitive, trimmed; an unknown name
/// is [`crate::Error::UnknownName`] with the closest valid names), `Display`,
/// `FromStr`, `Serialize`/`Deserialize` by name and, with the crate's `clap` feature,
/// `clap::ValueEnum`.
///
/// ```
/// ridgeline_core::named_enum! {
///     /// A colour.
///     pub enum Colour: "colour" {
///         /// Red.
///         Red = "red",
///         /// Dark blue.
///         DarkBlue = "dark-blue",
///     }
/// }
/// assert_eq!(Colour::parse(" Dark-Blue ")?, Colour::DarkBlue);
/// assert_eq!(Colour::Red.name(), "red");
/// let e = Colour::parse("rad").unwrap_err().to_string();
/// assert!(e.contains("unknown colour 'rad'; did you mean red"), "{e}");
/// assert_eq!(serde_json::to_string(&Colour::DarkBlue).unwrap(), "\"dark-blue\"");
/// # Ok::<(), ridgeline_core::Error>(())
/// ```
#[macro_export]
macro_rules! named_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident : $kind:literal {
            $( $(#[$vmeta:meta])* $variant:ident = $text:literal ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        $vis enum $name {
            $( $(#[$vmeta])* $variant ),+
        }

        impl $name {
            /// Every variant, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The name used on the command line and in JSON.
            pub const fn name(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }

            /// Parses a name (case-insensitive, surrounding spaces ignored).
            pub fn parse(s: &str) -> $crate::Result<Self> {
                let q = s.trim();
                Self::ALL
                    .iter()
                    .copied()
                    .find(|v| v.name().eq_ignore_ascii_case(q))
                    .ok_or_else(|| {
                        $crate::Error::unknown($kind, s, Self::ALL.iter().map(|v| v.name()))
                    })
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.name())
            }
        }

        impl ::std::str::FromStr for $name {
            type Err = $crate::Error;
            fn from_str(s: &str) -> $crate::Result<Self> {
                Self::parse(s)
            }
        }

        impl $crate::names::__serde::Serialize for $name {
            fn serialize<S: $crate::names::__serde::Serializer>(&self, s: S) -> ::std::result::Result<S::Ok, S::Error> {
                s.serialize_str(self.name())
            }
        }

        impl<'de> $crate::names::__serde::Deserialize<'de> for $name {
            fn deserialize<D: $crate::names::__serde::Deserializer<'de>>(d: D) -> ::std::result::Result<Self, D::Error> {
                let s = <::std::string::String as $crate::names::__serde::Deserialize>::deserialize(d)?;
                Self::parse(&s).map_err($crate::names::__serde::de::Error::custom)
            }
        }

        $crate::__value_enum!($name);
    };
}

#[cfg(test)]
mod tests {
    crate::named_enum! {
        /// Test kinds.
        pub(crate) enum Kind: "test kind" {
            /// A.
            Alpha = "alpha",
            /// B.
            BetaGamma = "beta-gamma",
        }
    }

    #[test]
    fn names_round_trip_and_unknown_names_suggest() {
        for k in Kind::ALL {
            assert_eq!(Kind::parse(k.name()).unwrap(), *k);
            assert_eq!(k.to_string(), k.name());
            let json = serde_json::to_string(k).unwrap();
            assert_eq!(serde_json::from_str::<Kind>(&json).unwrap(), *k);
        }
        assert_eq!(Kind::parse("BETA-gamma").unwrap(), Kind::BetaGamma);
        let e = Kind::parse("alpah").unwrap_err().to_string();
        assert_eq!(
            e,
            "unknown test kind 'alpah'; did you mean alpha, beta-gamma?"
        );
        #[cfg(feature = "clap")]
        {
            use clap::ValueEnum;
            assert_eq!(Kind::from_str("alpha", true).unwrap(), Kind::Alpha);
        }
    }
}
