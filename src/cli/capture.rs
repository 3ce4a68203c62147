//! A command's streamed output (a sweep) kept in memory for a caller of
//! [`super::run_args_with`], up to a bound.

use crate::{Error, Result};

/// An in-memory output of at most `limit` bytes: past it, writes fail.
pub(super) struct Capped {
    bytes: Vec<u8>,
    limit: usize,
}

impl Capped {
    /// An empty output that takes at most `limit` bytes.
    pub(super) fn new(limit: usize) -> Capped {
        Capped {
            bytes: Vec::new(),
            limit,
        }
    }

    /// What was written, as text.
    pub(super) fn into_string(self) -> Result<String> {
        String::from_utf8(self.bytes).map_err(|e| Error::internal("captured output", e))
    }
}

impl std::io::Write for Capped {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.bytes.len().saturating_add(buf.len()) > self.limit {
            return Err(std::io::Error::other(format!(
                "longer than the {} MiB accepted here; shorten a list",
                self.limit >> 20
            )));
        }
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;

    #[test]
    fn writes_up_to_the_limit_then_fails() {
        let mut c = Capped::new(5);
        c.write_all(b"abc").unwrap();
        c.write_all(b"de").unwrap();
        // 5 + 1 > 5
        let e = c.write_all(b"f").unwrap_err();
        assert!(e.to_string().contains("shorten a list"), "{e}");
        assert_eq!(c.into_string().unwrap(), "abcde");
    }
}
