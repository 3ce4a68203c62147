//! Reading the user's input files: one function, so every file the library reads gets
//! the same checks and the same error.

use crate::error::{Error, Result};
use std::path::Path;

/// Reads a whole text file; a failure is [`Error::Read`] naming the path.
pub fn read_text(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).map_err(|e| Error::read(path, e))
}
