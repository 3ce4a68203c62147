//! The reference files' shared reading (`data/reference/*.csv`): `#` comment lines and
//! blank lines skipped, then a header that must be the expected columns, then rows of
//! exactly that many comma-separated cells; errors name the file, the line and the
//! column.

use crate::error::{Error, Result};

/// One data row's cells, with what an error about them needs.
pub(crate) struct Row<'a> {
    line_no: usize,
    src: &'a str,
    columns: &'a [&'a str],
    /// The trimmed cells, one per column.
    pub(crate) cells: Vec<&'a str>,
}

impl Row<'_> {
    /// An error about `field` of this row.
    pub(crate) fn bad(&self, field: &str, msg: String) -> Error {
        Error::Parse {
            source_name: self.src.to_string(),
            message: format!("line {}, column {field}: {msg}", self.line_no),
        }
    }

    /// Cell `j` as a positive integer.
    pub(crate) fn count(&self, j: usize) -> Result<u64> {
        match self.cells[j].parse::<u64>() {
            Ok(v) if v > 0 => Ok(v),
            _ => Err(self.bad(
                self.columns[j],
                format!("'{}' is not a positive integer", self.cells[j]),
            )),
        }
    }

    /// Cell `j` as a positive finite number.
    pub(crate) fn value(&self, j: usize) -> Result<f64> {
        match self.cells[j].parse::<f64>() {
            Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
            _ => Err(self.bad(
                self.columns[j],
                format!("'{}' is not a positive number", self.cells[j]),
            )),
        }
    }
}

/// The data rows of `text`, whose header must be `columns`; `src` names the file in
/// errors.
pub(crate) fn rows<'a>(
    text: &'a str,
    src: &'a str,
    columns: &'a [&'a str],
) -> Result<Vec<Row<'a>>> {
    let mut out = Vec::new();
    let mut header_seen = false;
    for (i, line) in text.lines().enumerate() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let row = Row {
            line_no: i + 1,
            src,
            columns,
            cells: line.split(',').map(str::trim).collect(),
        };
        if !header_seen {
            if row.cells != columns {
                return Err(row.bad(
                    "header",
                    format!("expected {}, found {line}", columns.join(",")),
                ));
            }
            header_seen = true;
            continue;
        }
        if row.cells.len() != columns.len() {
            return Err(row.bad(
                "row",
                format!("{} cells, expected {}", row.cells.len(), columns.len()),
            ));
        }
        out.push(row);
    }
    if !header_seen {
        return Err(Error::Parse {
            source_name: src.to_string(),
            message: format!("no header line ({})", columns.join(",")),
        });
    }
    Ok(out)
}
