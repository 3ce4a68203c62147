//! Serving simulation benches (filled in below).
fn main() {}
