//! Renderers: every output format reads the same serde report structs; formatting of
//! numbers for people (GB, TFLOP/s, ms) happens only here.

mod architecture;
pub mod explain;
mod finding;
pub mod html;
pub mod markdown;
pub use crate::predict::notes;
pub mod plan;
pub mod simulate;
pub use crate::sweep::write as sweep;
pub mod table;
pub mod text;
pub mod train;
pub mod train_plan;
