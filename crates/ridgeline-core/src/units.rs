//! Unit constants and edge conversions. Inside ridgeline every quantity is an `f64` in SI
//! base units (FLOP, byte, second, FLOP/s, byte/s); these helpers are only for the edges
//! where a number meets a person. GB = 1e9 bytes, GiB = 2^30 bytes: the names say which.

/// 1 kB = 1e3 bytes.
pub const KB: f64 = 1e3;
/// 1 MB = 1e6 bytes.
pub const MB: f64 = 1e6;
/// 1 GB = 1e9 bytes (decimal, as datasheets print memory capacity and bandwidth).
pub const GB: f64 = 1e9;
/// 1 TB = 1e12 bytes.
pub const TB: f64 = 1e12;
/// 1 GiB = 2^30 bytes (binary, as `nvidia-smi` and PyTorch print memory use).
pub const GIB: f64 = 1_073_741_824.0;
/// 1 MiB = 2^20 bytes.
pub const MIB: f64 = 1_048_576.0;
/// 10^12, for TFLOP/s.
pub const TERA: f64 = 1e12;
/// 10^9, for GFLOP/s.
pub const GIGA: f64 = 1e9;

/// Beyond this magnitude a number meets a person in scientific notation (`1.23e7`),
/// never as a row of digits.
pub const PLAIN_MAX: f64 = 1e6;

/// `x` with `decimals` places, or in scientific notation when it is extreme (at least
/// [`PLAIN_MAX`], or non-zero and below 10^-decimals).
pub fn fixed(x: f64, decimals: usize) -> String {
    let a = x.abs();
    if a >= PLAIN_MAX || (a > 0.0 && a < 10f64.powi(-(decimals as i32))) {
        format!("{x:.2e}")
    } else {
        format!("{x:.decimals$}")
    }
}

/// Formats a byte count in GB (1e9), e.g. `13.48 GB`.
pub fn fmt_gb(bytes: f64) -> String {
    format!("{} GB", fixed(bytes / GB, 2))
}

/// Formats a byte count in GiB (2^30), e.g. `12.55 GiB`.
pub fn fmt_gib(bytes: f64) -> String {
    format!("{} GiB", fixed(bytes / GIB, 2))
}

/// Formats a byte count with an SI prefix (powers of 1000), e.g. `70.3 kB`, `5.00 MB`.
pub fn fmt_bytes(bytes: f64) -> String {
    format!("{}B", si(bytes))
}

/// Formats a parameter count in billions (`37.6B`, `671B`) or, below a billion, in
/// millions (`596M`).
pub fn fmt_params(n: f64) -> String {
    if n >= 1e9 {
        format!("{}B", sig3(n / 1e9))
    } else {
        format!("{}M", sig3(n / 1e6))
    }
}

/// Formats a byte rate, e.g. `3.35 TB/s` or `936 GB/s`.
pub fn fmt_bytes_per_s(rate: f64) -> String {
    if rate >= TB {
        format!("{} TB/s", fixed(rate / TB, 2))
    } else {
        format!("{} GB/s", fixed(rate / GB, 0))
    }
}

/// Formats a FLOP rate with an SI prefix, e.g. `989.5 TFLOP/s`.
pub fn fmt_flops_per_s(rate: f64) -> String {
    format!("{}FLOP/s", si(rate))
}

/// Formats a FLOP count with an SI prefix, e.g. `13.5 GFLOP`.
pub fn fmt_flops(flops: f64) -> String {
    format!("{}FLOP", si(flops))
}

/// Formats seconds as s, ms or µs with three significant figures.
pub fn fmt_seconds(s: f64) -> String {
    if !s.is_finite() {
        return "n/a".to_string();
    }
    if s >= 1.0 {
        format!("{} s", fixed(s, 2))
    } else if s >= 1e-3 {
        format!("{:.2} ms", s * 1e3)
    } else {
        format!("{} µs", fixed(s * 1e6, 2))
    }
}

/// SI prefixes from the largest down, with their scales: `(1e18, "E")` .. `(1e3, "k")`.
pub const SI_PREFIXES: [(f64, &str); 6] = [
    (1e18, "E"),
    (1e15, "P"),
    (1e12, "T"),
    (1e9, "G"),
    (1e6, "M"),
    (1e3, "k"),
];

/// A number with an SI prefix and a trailing space: `1.23 T`, `456 G`, `7.8 `.
pub fn si(x: f64) -> String {
    for (scale, p) in SI_PREFIXES {
        if x.abs() >= scale {
            return format!("{} {p}", sig3(x / scale));
        }
    }
    format!("{} ", sig3(x))
}

/// Three significant figures without trailing zeros noise: 989.5 -> "990", 1.234 -> "1.23"
/// (scientific notation for extreme values).
pub fn sig3(x: f64) -> String {
    let a = x.abs();
    if a >= PLAIN_MAX || (a > 0.0 && a < 1e-3) {
        format!("{x:.2e}")
    } else if a >= 100.0 {
        format!("{x:.0}")
    } else if a >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gb_and_gib_differ() {
        assert_eq!(fmt_gb(80e9), "80.00 GB");
        // 80e9 / 2^30 = 74.505...
        assert_eq!(fmt_gib(80e9), "74.51 GiB");
    }

    #[test]
    fn si_prefixes() {
        assert_eq!(fmt_flops_per_s(989.5e12), "990 TFLOP/s");
        assert_eq!(fmt_flops(33_554_432.0), "33.6 MFLOP");
        assert_eq!(fmt_bytes_per_s(3.35e12), "3.35 TB/s");
        assert_eq!(fmt_bytes_per_s(936e9), "936 GB/s");
        assert_eq!(fmt_seconds(16.46e-6), "16.46 µs");
        assert_eq!(fmt_seconds(0.0123), "12.30 ms");
    }

    #[test]
    fn extremes_are_scientific() {
        assert_eq!(fmt_seconds(3.2e12), "3.20e12 s");
        assert_eq!(fmt_seconds(1e-15), "1.00e-9 µs");
        assert_eq!(fmt_gb(1e30), "1.00e21 GB");
        assert_eq!(fmt_flops(1e30), "1.00e12 EFLOP");
        assert_eq!(fmt_gb(0.0), "0.00 GB");
    }
}
