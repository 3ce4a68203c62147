//! ridgeline
pub fn x() {}
