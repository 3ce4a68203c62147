//! LIST arguments (`--batch 1,2,4`, `--prompt 128..8192:x2`): comma-separated values and
//! inclusive ranges, expanded into plain vectors in the order written.
//!
//! | item | values |
//! |---|---|
//! | `7` | 7 |
//! | `1..64` | every whole number from 1 to 64 |
//! | `128..8192:x2` | geometric: 128, 256, ..., 8192 (each value times 2, while <= the end) |
//! | `0..1000:+50` | arithmetic: 0, 50, ..., 1000 (each value plus 50, while <= the end) |
//!
//! `A..=B` reads the same as `A..B`. Items mix freely (`1,2,4..16:x2,100`); duplicates are kept. A malformed item is an
//! [`Error::InvalidValue`] naming the flag and quoting the item. String lists (models,
//! devices, formats, engines) are comma-separated names without ranges.
//!
//! ```
//! use ridgeline_core::list::parse_u64_list;
//! assert_eq!(parse_u64_list("--batch", "1,2,8..32:x2").unwrap(), vec![1, 2, 8, 16, 32]);
//! assert_eq!(parse_u64_list("--gen", "0..100:+50").unwrap(), vec![0, 50, 100]);
//! let e = parse_u64_list("--batch", "64..1").unwrap_err().to_string();
//! assert!(e.contains("--batch") && e.contains("'64..1'"));
//! ```

use crate::error::{Error, Result};

/// The most values one LIST may expand to.
pub const MAX_LIST_LEN: usize = 1_000_000;

/// Parses a LIST of whole numbers (see the module docs); `flag` names the option in
/// errors. The whole list may not expand to more than [`MAX_LIST_LEN`] values.
pub fn parse_u64_list(flag: &str, text: &str) -> Result<Vec<u64>> {
    parse_u64_list_in(flag, text, 0, u64::MAX)
}

/// [`parse_u64_list`] with every value required to lie in `min..=max`; an item that
/// leaves the range is reported as written.
pub fn parse_u64_list_in(flag: &str, text: &str, min: u64, max: u64) -> Result<Vec<u64>> {
    let mut out = Vec::new();
    for item in items(flag, text) {
        let item = item?;
        let bad = |why: String| Error::invalid(flag, format!("'{item}': {why}"));
        let (range, step) = match item.split_once(':') {
            Some((r, s)) => (r.trim(), Some(s.trim())),
            None => (item, None),
        };
        let Some((lo, hi)) = range.split_once("..") else {
            if step.is_some() {
                return Err(bad(
                    "a step (:xK or :+K) needs a range before it, e.g. 1..64:x2".into(),
                ));
            }
            let v = number(range).map_err(bad)?;
            if v < min || v > max {
                return Err(bad(bounds(min, max)));
            }
            push_one(&mut out, v, flag, item)?;
            continue;
        };
        if lo.trim().is_empty() || hi.trim().is_empty() {
            return Err(bad("a range needs a start and an end, e.g. 1..64".into()));
        }
        let lo = number(lo.trim()).map_err(bad)?;
        let hi = number(hi.trim().trim_start_matches('=')).map_err(bad)?;
        if lo > hi {
            return Err(bad(format!(
                "the range runs backwards ({lo} > {hi}); ranges are inclusive and ascending, e.g. {hi}..{lo}"
            )));
        }
        if lo < min || hi > max {
            return Err(bad(bounds(min, max)));
        }
        match step {
            None | Some("+1") => {
                let n = hi - lo;
                check_len(out.len(), n, flag, item)?;
                out.extend(lo..=hi);
            }
            Some(s) if s.starts_with('+') => {
                let k = number(&s[1..]).map_err(bad)?;
                if k == 0 {
                    return Err(bad("an arithmetic step must be at least +1".into()));
                }
                let n = (hi - lo) / k;
                check_len(out.len(), n, flag, item)?;
                out.extend((0..=n).map(|j| lo + j * k));
            }
            Some(s) if s.starts_with('x') || s.starts_with('*') => {
                let k = number(&s[1..]).map_err(bad)?;
                if k < 2 {
                    return Err(bad("a geometric factor must be at least x2".into()));
                }
                if lo == 0 {
                    return Err(bad(
                        "a geometric range cannot start at 0 (it would stay at 0)".into(),
                    ));
                }
                let mut v = lo;
                loop {
                    push_one(&mut out, v, flag, item)?;
                    match v.checked_mul(k) {
                        Some(next) if next <= hi => v = next,
                        _ => break,
                    }
                }
            }
            Some(s) => {
                return Err(bad(format!(
                    "unknown step ':{s}'; use :xK (geometric) or :+K (arithmetic)"
                )));
            }
        }
    }
    Ok(out)
}

/// Splits a comma-separated list of names (`h100,a100`), trimming spaces; empty items
/// are an error naming `flag`.
pub fn parse_names(flag: &str, text: &str) -> Result<Vec<String>> {
    items(flag, text).map(|s| s.map(str::to_string)).collect()
}

/// The comma-separated items of `text`, trimmed; an empty one is an error naming
/// `flag` and its position.
fn items<'t>(flag: &'t str, text: &'t str) -> impl Iterator<Item = Result<&'t str>> + 't {
    text.split(',').enumerate().map(move |(i, s)| {
        let s = s.trim();
        if s.is_empty() {
            Err(Error::invalid(
                flag,
                format!(
                    "empty item at position {} of '{text}' (two commas in a row, or a comma at an end?)",
                    i + 1
                ),
            ))
        } else {
            Ok(s)
        }
    })
}

/// Parses a LIST of positive real numbers (rates: `0.5,1,2`, `1..64:x2`, `5..50:+5`):
/// the syntax of [`parse_u64_list`] with decimals, a geometric factor above 1 (`:x1.5`)
/// and an arithmetic step above 0 (`:+0.5`); every value must be finite, greater than 0
/// and at most `max`. `flag` names the option in errors. At most `max_len` values.
///
/// ```
/// use ridgeline_core::list::parse_f64_list;
/// assert_eq!(parse_f64_list("--rate", "0.5,1..8:x2", 1e6, 100).unwrap(), vec![0.5, 1.0, 2.0, 4.0, 8.0]);
/// assert_eq!(parse_f64_list("--rate", "1..2:+0.5", 1e6, 100).unwrap(), vec![1.0, 1.5, 2.0]);
/// assert!(parse_f64_list("--rate", "0", 1e6, 100).unwrap_err().to_string().contains("--rate"));
/// ```
pub fn parse_f64_list(flag: &str, text: &str, max: f64, max_len: usize) -> Result<Vec<f64>> {
    let mut out = Vec::new();
    for item in items(flag, text) {
        let item = item?;
        let bad = |why: String| Error::invalid(flag, format!("'{item}': {why}"));
        let value = |s: &str| -> Result<f64> {
            let v: f64 = s
                .trim()
                .parse()
                .map_err(|_| bad(format!("'{}' is not a number", s.trim())))?;
            if v.is_finite() && v > 0.0 && v <= max {
                Ok(v)
            } else {
                Err(bad(format!(
                    "values must be finite, greater than 0 and at most {max:e}"
                )))
            }
        };
        let (range, step) = match item.split_once(':') {
            Some((r, s)) => (r, Some(s.trim())),
            None => (item, None),
        };
        let values: Vec<f64> = match (range.split_once(".."), step) {
            (None, None) => vec![value(range)?],
            (None, Some(_)) => {
                return Err(bad("a step needs a range before it, e.g. 1..64:x2".into()));
            }
            (Some((lo, hi)), step) => {
                let (lo, hi) = (value(lo)?, value(hi.trim_start_matches('='))?);
                if lo > hi {
                    return Err(bad(format!("the range runs backwards ({lo} > {hi})")));
                }
                let next: Box<dyn Fn(f64) -> f64> = match step {
                    None => Box::new(|v| v + 1.0),
                    Some(s) if s.starts_with('+') => {
                        let k = value(&s[1..])?;
                        Box::new(move |v| v + k)
                    }
                    Some(s) if s.starts_with('x') || s.starts_with('*') => {
                        let k = value(&s[1..])?;
                        if k <= 1.0 {
                            return Err(bad("a geometric factor must be above x1".into()));
                        }
                        Box::new(move |v| v * k)
                    }
                    Some(s) => {
                        return Err(bad(format!(
                            "unknown step ':{s}'; use :xK (geometric) or :+K (arithmetic)"
                        )));
                    }
                };
                // each value from the start, to a relative tolerance at the end
                let mut vals = Vec::new();
                let mut v = lo;
                while v <= hi * (1.0 + 1e-12) && vals.len() <= max_len {
                    vals.push(v);
                    v = next(v);
                }
                vals
            }
        };
        if out.len() + values.len() > max_len {
            return Err(Error::invalid(
                flag,
                format!("'{item}': the list has more than {max_len} values"),
            ));
        }
        out.extend(values);
    }
    Ok(out)
}

/// Largest count [`parse_count`] accepts: 1e18 (a million times the tokens of today's
/// largest pre-training runs).
pub const MAX_COUNT: f64 = 1e18;

/// Parses a count written plainly (`500000000`, `500_000_000`), in scientific notation
/// (`5e8`) or with a suffix `K` (1e3), `M` (1e6), `B` (1e9) or `T` (1e12), either case
/// (`500M`, `1.5B`, `2T`); the value must be a whole number from 1 to [`MAX_COUNT`].
/// `flag` names the option in errors.
///
/// ```
/// use ridgeline_core::list::parse_count;
/// assert_eq!(parse_count("--tokens", "5e8").unwrap(), 500_000_000);
/// assert_eq!(parse_count("--tokens", "500M").unwrap(), 500_000_000);
/// assert_eq!(parse_count("--tokens", "1.5B").unwrap(), 1_500_000_000);
/// assert_eq!(parse_count("--tokens", "2T").unwrap(), 2_000_000_000_000);
/// assert!(parse_count("--tokens", "0").unwrap_err().to_string().contains("--tokens"));
/// ```
pub fn parse_count(flag: &str, text: &str) -> Result<u64> {
    let item = text.trim();
    let bad = |why: &str| Error::invalid(flag, format!("'{item}': {why}"));
    let (digits, scale) = match item.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() && !item[..i].ends_with(['e', 'E']) => {
            let scale = match c.to_ascii_uppercase() {
                'K' => 1e3,
                'M' => 1e6,
                'B' => 1e9,
                'T' => 1e12,
                _ => {
                    return Err(bad(
                        "unknown suffix; use K (1e3), M (1e6), B (1e9) or T (1e12)",
                    ));
                }
            };
            (&item[..i], scale)
        }
        _ => (item, 1.0),
    };
    let digits = digits.trim().replace('_', "");
    let plain = !digits.is_empty()
        && digits
            .bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-'));
    let v = if plain {
        digits.parse::<f64>().ok()
    } else {
        None
    }
    .ok_or_else(|| bad("not a number (plain, 5e8, or with K/M/B/T: 500M, 1.5B, 2T)"))?
        * scale;
    if v.is_nan() || v < 1.0 {
        return Err(bad("must be at least 1"));
    }
    if v > MAX_COUNT {
        return Err(bad("must be at most 1e18"));
    }
    if (v - v.round()).abs() > 1e-9 * v {
        return Err(bad("must be a whole number"));
    }
    Ok(v.round() as u64)
}

fn number(s: &str) -> std::result::Result<u64, String> {
    if s.is_empty() {
        return Err("missing number".into());
    }
    if !s.bytes().all(|b| b.is_ascii_digit() || b == b'_') {
        return Err(format!("'{s}' is not a whole number"));
    }
    s.replace('_', "")
        .parse::<u64>()
        .map_err(|_| format!("'{s}' is too large (at most {})", u64::MAX))
}

fn bounds(min: u64, max: u64) -> String {
    if max == u64::MAX {
        format!("values must be at least {min}")
    } else {
        format!("values must lie between {min} and {max}")
    }
}

fn check_len(have: usize, more_minus_one: u64, flag: &str, item: &str) -> Result<()> {
    if (have as u64).saturating_add(more_minus_one) >= MAX_LIST_LEN as u64 {
        return Err(too_long(flag, item));
    }
    Ok(())
}

fn too_long(flag: &str, item: &str) -> Error {
    Error::invalid(
        flag,
        format!(
            "'{item}': the list expands to more than {MAX_LIST_LEN} values; use a step (:x2, :+K) or a shorter range"
        ),
    )
}

fn push_one(out: &mut Vec<u64>, v: u64, flag: &str, item: &str) -> Result<()> {
    if out.len() >= MAX_LIST_LEN {
        return Err(too_long(flag, item));
    }
    out.push(v);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(s: &str) -> Vec<u64> {
        parse_u64_list("--x", s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    fn err(s: &str) -> String {
        parse_u64_list("--batch", s).expect_err(s).to_string()
    }

    #[test]
    fn golden_lists() {
        assert_eq!(ok("1,2,4"), vec![1, 2, 4]);
        assert_eq!(ok("1..5"), vec![1, 2, 3, 4, 5]);
        assert_eq!(ok("7..7"), vec![7]);
        assert_eq!(
            ok("128..8192:x2"),
            vec![128, 256, 512, 1024, 2048, 4096, 8192]
        );
        assert_eq!(ok("3..100:x2"), vec![3, 6, 12, 24, 48, 96]);
        assert_eq!(ok("1..1000:x10"), vec![1, 10, 100, 1000]);
        assert_eq!(ok("0..1000:+250"), vec![0, 250, 500, 750, 1000]);
        assert_eq!(ok("0..10:+4"), vec![0, 4, 8]);
        assert_eq!(ok(" 1, 2..3 ,8..32:x2,0"), vec![1, 2, 3, 8, 16, 32, 0]);
        assert_eq!(ok("1_000"), vec![1000]);
        assert_eq!(ok("1..3:+1"), vec![1, 2, 3]);
        assert_eq!(ok("2,2"), vec![2, 2]);
        assert_eq!(ok("1..64").len(), 64);
        // a geometric range whose next value would overflow u64 stops cleanly
        assert_eq!(ok("9223372036854775808..18446744073709551615:x2").len(), 1);
        assert_eq!(ok("0..18446744073709551615:+9223372036854775808").len(), 2);
    }

    #[test]
    fn malformed_lists_name_the_item() {
        for (input, needle) in [
            ("64..1", "'64..1': the range runs backwards"),
            ("1..x", "'1..x': 'x' is not a whole number"),
            ("", "empty item at position 1"),
            ("1,,2", "empty item at position 2"),
            ("1,2,", "empty item at position 3"),
            (":x1", "':x1': a step"),
            (
                "1..8:x1",
                "'1..8:x1': a geometric factor must be at least x2",
            ),
            ("0..8:x2", "'0..8:x2': a geometric range cannot start at 0"),
            (
                "1..8:+0",
                "'1..8:+0': an arithmetic step must be at least +1",
            ),
            ("1..8:y2", "unknown step ':y2'"),
            ("99999999999999999999", "is too large"),
            ("-1", "'-1' is not a whole number"),
            ("1.5", "'1.5' is not a whole number"),
            ("..5", "needs a start and an end"),
            ("1..", "needs a start and an end"),
            ("1..2000000", "more than 1000000 values"),
            ("0..u64", "'u64' is not a whole number"),
        ] {
            let e = err(input);
            assert!(e.starts_with("invalid --batch: "), "{input}: {e}");
            assert!(e.contains(needle), "{input}: {e} lacks {needle}");
        }
    }

    #[test]
    fn bounds_are_checked_per_item() {
        let e = parse_u64_list_in("--batch", "0..4", 1, 100).unwrap_err();
        assert!(e.to_string().contains("'0..4'"), "{e}");
        let e = parse_u64_list_in("--batch", "1,200", 1, 100).unwrap_err();
        assert!(
            e.to_string()
                .contains("'200': values must lie between 1 and 100"),
            "{e}"
        );
        assert_eq!(
            parse_u64_list_in("--batch", "1..4", 1, 100).unwrap().len(),
            4
        );
    }

    #[test]
    fn many_items_are_capped_too() {
        let text = vec!["1"; MAX_LIST_LEN + 1].join(",");
        assert!(err(&text).contains("more than"));
        let geo = (0..20)
            .map(|_| "1..1000000000000:x2")
            .collect::<Vec<_>>()
            .join(",");
        assert_eq!(ok(&geo).len(), 20 * 40);
    }

    #[test]
    fn counts_take_suffixes_and_scientific_notation() {
        let ok = |s: &str| parse_count("--tokens", s).unwrap_or_else(|e| panic!("{s}: {e}"));
        assert_eq!(ok("5e8"), 500_000_000);
        assert_eq!(ok("5E8"), 500_000_000);
        assert_eq!(ok("500M"), 500_000_000);
        assert_eq!(ok("500m"), 500_000_000);
        assert_eq!(ok("1.5B"), 1_500_000_000);
        assert_eq!(ok("2T"), 2_000_000_000_000);
        assert_eq!(ok("750K"), 750_000);
        assert_eq!(ok("1_000_000"), 1_000_000);
        assert_eq!(ok(" 42 "), 42);
        assert_eq!(ok("1.1B"), 1_100_000_000);
        assert_eq!(ok("1e18"), 1_000_000_000_000_000_000);
        for (input, needle) in [
            ("0", "at least 1"),
            ("-5", "at least 1"),
            ("0.5", "at least 1"),
            ("1.5", "whole number"),
            ("1.0000001K", "whole number"),
            ("2e18", "at most 1e18"),
            ("5X", "unknown suffix"),
            ("M", "not a number"),
            ("", "not a number"),
            ("five", "unknown suffix"),
            ("NaN", "unknown suffix"),
            ("inf", "unknown suffix"),
            ("1e", "unknown suffix"),
            ("1e+", "not a number"),
            ("1..5", "not a number"),
        ] {
            let e = parse_count("--tokens", input).expect_err(input).to_string();
            assert!(e.starts_with("invalid --tokens: "), "{input}: {e}");
            assert!(e.contains(needle), "{input}: {e} lacks {needle}");
        }
    }

    #[test]
    fn names_split_and_reject_empties() {
        assert_eq!(
            parse_names("--gpu", "h100, a100").unwrap(),
            vec!["h100".to_string(), "a100".to_string()]
        );
        let e = parse_names("--gpu", "h100,,a100").unwrap_err().to_string();
        assert!(e.contains("--gpu") && e.contains("position 2"), "{e}");
    }
}
