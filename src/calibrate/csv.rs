//! The measurements CSV: RFC 4180 records (quoted fields may hold commas, doubled quotes
//! and line breaks) read into typed [`Measurement`] rows. Every error names the file,
//! the line and the column.

use crate::error::{Error, Result};
use serde::Serialize;
use std::fmt;

/// The columns a measurements file must have (any order; extra columns are ignored).
pub const COLUMNS: [&str; 15] = [
    "id",
    "kind",
    "gpu",
    "num_gpus",
    "model",
    "precision",
    "batch",
    "prompt_len",
    "gen_len",
    "framework",
    "metric",
    "value",
    "unit",
    "source_url_or_repo_path",
    "notes",
];

/// What a row measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum Kind {
    /// Single-stream decode tokens/s.
    A,
    /// Batched throughput.
    B,
    /// Prefill rate or time to first token.
    C,
    /// Training throughput / MFU.
    D,
    /// Measured device memory.
    E,
    /// Achievable bandwidth or matmul rate (a device ceiling, not an engine).
    F,
}

impl Kind {
    fn parse(s: &str) -> Option<Kind> {
        Some(match s.trim().to_ascii_uppercase().as_str() {
            "A" => Kind::A,
            "B" => Kind::B,
            "C" => Kind::C,
            "D" => Kind::D,
            "E" => Kind::E,
            "F" => Kind::F,
            _ => return None,
        })
    }

    /// The letter.
    pub fn letter(self) -> &'static str {
        match self {
            Kind::A => "A",
            Kind::B => "B",
            Kind::C => "C",
            Kind::D => "D",
            Kind::E => "E",
            Kind::F => "F",
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.letter())
    }
}

/// A count column (`batch`, `prompt_len`, `gen_len`): empty, a whole number, or a
/// description the source gave instead of a number (`max-load (IFB)`, `16M tokens/batch`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Count {
    /// Not stated.
    Missing,
    /// A whole number.
    Exact(u64),
    /// Text that is not a plain number.
    Text(String),
}

impl Count {
    /// The number, if the cell held one.
    pub fn exact(&self) -> Option<u64> {
        match self {
            Count::Exact(n) => Some(*n),
            _ => None,
        }
    }
}

/// One published measurement, as written in the file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Measurement {
    /// Row id (`m003`).
    pub id: String,
    /// 1-based line of the record in the file.
    pub line: usize,
    /// What was measured.
    pub kind: Kind,
    /// Device as the source names it (`RTX 3090 24GB`).
    pub gpu: String,
    /// Devices used.
    pub num_gpus: u64,
    /// Model as the source names it (`Llama-3-8B`).
    pub model: String,
    /// `weights/kv` formats as the source names them (`Q4_K_M/f16`).
    pub precision: String,
    /// Concurrent sequences.
    pub batch: Count,
    /// Prompt tokens.
    pub prompt_len: Count,
    /// Generated tokens.
    pub gen_len: Count,
    /// Framework as the source names it (`llama.cpp (Metal)`).
    pub framework: String,
    /// What the number is (`decode tokens/s (tg512)`).
    pub metric: String,
    /// The number as published, in `unit`.
    pub value: f64,
    /// Unit of `value` (`tok/s`, `ms`, `GB/s`, ...).
    pub unit: String,
    /// Where it was published.
    pub source: String,
    /// Caveats.
    pub notes: String,
}

/// Splits CSV text into records of fields, each record with the 1-based line it starts
/// on. Quoted fields may contain commas, line breaks and doubled quotes (`""`).
pub fn records(text: &str, source_name: &str) -> Result<Vec<(usize, Vec<String>)>> {
    let mut out = Vec::new();
    let mut fields: Vec<String> = Vec::new();
    let mut field = String::new();
    let mut line = 1usize;
    let mut start_line = 1usize;
    let mut in_quotes = false;
    // whether the current field was quoted and has been closed (only a comma or a
    // line end may follow)
    let mut closed = false;
    let mut at_field_start = true;
    let mut chars = text.chars().peekable();
    let err = |line: usize, col: usize, msg: &str| Error::Parse {
        source_name: source_name.to_string(),
        message: format!("line {line}, column {col}: {msg}"),
    };
    let end_record = |fields: &mut Vec<String>, out: &mut Vec<(usize, Vec<String>)>, l| {
        let rec = std::mem::take(fields);
        if !(rec.len() == 1 && rec[0].trim().is_empty()) {
            out.push((l, rec));
        }
    };
    while let Some(c) = chars.next() {
        if in_quotes {
            match c {
                '"' if chars.peek() == Some(&'"') => {
                    chars.next();
                    field.push('"');
                }
                '"' => {
                    in_quotes = false;
                    closed = true;
                }
                '\n' => {
                    line += 1;
                    field.push('\n');
                }
                _ => field.push(c),
            }
            continue;
        }
        match c {
            '"' if at_field_start => {
                in_quotes = true;
                at_field_start = false;
            }
            ',' => {
                fields.push(std::mem::take(&mut field));
                closed = false;
                at_field_start = true;
            }
            '\r' if chars.peek() == Some(&'\n') => {}
            '\n' => {
                fields.push(std::mem::take(&mut field));
                end_record(&mut fields, &mut out, start_line);
                line += 1;
                start_line = line;
                closed = false;
                at_field_start = true;
            }
            _ if closed => {
                return Err(err(
                    line,
                    fields.len() + 1,
                    "text after a closing quote (a quote inside a quoted field is written \"\")",
                ));
            }
            '"' => {
                return Err(err(
                    line,
                    fields.len() + 1,
                    "a quote inside an unquoted field (quote the whole field and double the quote)",
                ));
            }
            _ => {
                field.push(c);
                at_field_start = false;
            }
        }
    }
    if in_quotes {
        return Err(err(
            start_line,
            fields.len() + 1,
            "quoted field is not closed before the end of the file",
        ));
    }
    if !field.is_empty() || !fields.is_empty() || closed {
        fields.push(field);
        end_record(&mut fields, &mut out, start_line);
    }
    Ok(out)
}

/// Parses a measurements CSV (the columns of [`COLUMNS`], any order) into typed rows.
///
/// `num_gpus` must be a whole number >= 1 and `value` a finite number; `batch`,
/// `prompt_len` and `gen_len` may be empty, a whole number, or a description
/// (`max-load (IFB)`), but a cell that looks like a number and is not a whole one
/// (`1.5`, `-3`, `12e`) is an error. Errors name `source_name`, the line and the column.
///
/// ```
/// let text = "id,kind,gpu,num_gpus,model,precision,batch,prompt_len,gen_len,framework,metric,value,unit,source_url_or_repo_path,notes\n\
///             x1,A,RTX 4090,1,Llama-2-7B,f16/f16,1,0,128,llama.cpp,decode tokens/s,\"61.0\",tok/s,https://example.org,\"a, b\"\n";
/// let rows = ridgeline::calibrate::parse_measurements(text, "x.csv").unwrap();
/// assert_eq!(rows[0].value, 61.0);
/// assert_eq!(rows[0].notes, "a, b");
/// ```
pub fn parse_measurements(text: &str, source_name: &str) -> Result<Vec<Measurement>> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let recs = records(text, source_name)?;
    let Some((header_line, header)) = recs.first() else {
        return Err(Error::Parse {
            source_name: source_name.to_string(),
            message: "empty file: expected a header row with the columns id,kind,gpu,...".into(),
        });
    };
    let mut index = [0usize; COLUMNS.len()];
    for (slot, name) in index.iter_mut().zip(COLUMNS) {
        *slot = header
            .iter()
            .position(|h| h.trim().eq_ignore_ascii_case(name))
            .ok_or_else(|| {
                let found = crate::error::closest(name, header.iter().map(|s| s.trim()), 1);
                Error::Parse {
                    source_name: source_name.to_string(),
                    message: format!(
                        "line {header_line}: header has no column '{name}'{}",
                        if found.is_empty() {
                            String::new()
                        } else {
                            format!(" (closest: '{}')", found[0])
                        }
                    ),
                }
            })?;
    }
    let mut rows = Vec::with_capacity(recs.len().saturating_sub(1));
    for (line, rec) in &recs[1..] {
        let line = *line;
        let err = |col: usize, msg: String| Error::Parse {
            source_name: source_name.to_string(),
            message: format!("line {line}, column {} ({}): {msg}", col + 1, header[col]),
        };
        if rec.len() != header.len() {
            return Err(Error::Parse {
                source_name: source_name.to_string(),
                message: format!(
                    "line {line}: {} fields, but the header has {}",
                    rec.len(),
                    header.len()
                ),
            });
        }
        let cell = |k: usize| rec[index[k]].trim();
        let text_of = |k: usize| cell(k).to_string();
        let id = text_of(0);
        if id.is_empty() {
            return Err(err(index[0], "empty id".into()));
        }
        let kind = Kind::parse(cell(1)).ok_or_else(|| {
            err(
                index[1],
                format!("kind '{}' is not one of A, B, C, D, E, F", cell(1)),
            )
        })?;
        let num_gpus = match cell(3).parse::<u64>() {
            Ok(n) if n >= 1 => n,
            _ => {
                return Err(err(
                    index[3],
                    format!("'{}' is not a whole number of devices >= 1", cell(3)),
                ));
            }
        };
        let value = match cell(11).parse::<f64>() {
            Ok(v) if v.is_finite() => v,
            _ => {
                return Err(err(
                    index[11],
                    format!("'{}' is not a finite number", cell(11)),
                ));
            }
        };
        let count = |k: usize| -> Result<Count> {
            let s = cell(k);
            if s.is_empty() {
                return Ok(Count::Missing);
            }
            if let Ok(n) = s.parse::<u64>() {
                return Ok(Count::Exact(n));
            }
            let numeric_looking = s
                .chars()
                .all(|c| c.is_ascii_digit() || matches!(c, '.' | '-' | '+' | 'e' | 'E'))
                && s.chars().any(|c| c.is_ascii_digit());
            if numeric_looking {
                return Err(err(index[k], format!("'{s}' is not a whole number >= 0")));
            }
            Ok(Count::Text(s.to_string()))
        };
        rows.push(Measurement {
            id,
            line,
            kind,
            gpu: text_of(2),
            num_gpus,
            model: text_of(4),
            precision: text_of(5),
            batch: count(6)?,
            prompt_len: count(7)?,
            gen_len: count(8)?,
            framework: text_of(9),
            metric: text_of(10),
            value,
            unit: text_of(12),
            source: text_of(13),
            notes: text_of(14),
        });
    }
    Ok(rows)
}

/// Reads and parses a measurements file.
pub fn read_measurements(path: &std::path::Path) -> Result<Vec<Measurement>> {
    let text = crate::files::read_text(path)?;
    parse_measurements(&text, &path.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = "id,kind,gpu,num_gpus,model,precision,batch,prompt_len,gen_len,framework,metric,value,unit,source_url_or_repo_path,notes";

    #[test]
    fn quoted_fields_keep_commas_quotes_and_newlines() {
        let text = format!(
            "{HEADER}\r\nm1,A,\"A100 80GB (SXM, 330W cap)\",1,Llama-2-7B,bf16/bf16,1,5,,gpt-fast,decode tokens/s,155.58,tok/s,https://x,\"said \"\"hi\"\", then\nleft\"\nm2,C,RTX 4090,1,CodeLlama-7B,f16/f16,1,512,0,llama.cpp,pp512,11048.22,tok/s,u,\n"
        );
        let rows = parse_measurements(&text, "t.csv").unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].gpu, "A100 80GB (SXM, 330W cap)");
        assert_eq!(rows[0].notes, "said \"hi\", then\nleft");
        assert_eq!(rows[0].gen_len, Count::Missing);
        assert_eq!(rows[0].prompt_len, Count::Exact(5));
        // the record after a quoted line break starts two lines later
        assert_eq!(rows[1].line, 4);
        assert_eq!(rows[1].kind, Kind::C);
        assert_eq!(rows[1].value, 11048.22);
    }

    #[test]
    fn bad_numbers_name_file_line_and_column() {
        let text = format!(
            "{HEADER}\nm1,A,RTX 4090,1,m,f16,1,0,1,llama.cpp,tg,61,tok/s,u,n\nm2,A,RTX 4090,1,m,f16,1,0,1,llama.cpp,tg,6l.5,tok/s,u,n\n"
        );
        let e = parse_measurements(&text, "bench.csv")
            .unwrap_err()
            .to_string();
        assert!(e.contains("bench.csv"), "{e}");
        assert!(e.contains("line 3, column 12 (value)"), "{e}");
        assert!(e.contains("6l.5"), "{e}");

        let text = format!("{HEADER}\nm1,A,RTX 4090,two,m,f16,1,0,1,llama.cpp,tg,61,tok/s,u,n\n");
        let e = parse_measurements(&text, "b.csv").unwrap_err().to_string();
        assert!(e.contains("line 2, column 4 (num_gpus)"), "{e}");

        let text = format!("{HEADER}\nm1,A,RTX 4090,1,m,f16,1.5,0,1,llama.cpp,tg,61,tok/s,u,n\n");
        let e = parse_measurements(&text, "b.csv").unwrap_err().to_string();
        assert!(e.contains("line 2, column 7 (batch)"), "{e}");
    }

    #[test]
    fn text_counts_are_kept_not_rejected() {
        let text = format!(
            "{HEADER}\nm1,B,H100,1,m,fp8,max-load (IFB),1000,1000,TensorRT-LLM,tput,15220,tok/s,u,n\n"
        );
        let rows = parse_measurements(&text, "b.csv").unwrap();
        assert_eq!(rows[0].batch, Count::Text("max-load (IFB)".into()));
    }

    #[test]
    fn structural_errors_are_reported() {
        let e = parse_measurements("id,kind\n", "h.csv")
            .unwrap_err()
            .to_string();
        assert!(e.contains("no column 'gpu'"), "{e}");
        let text = format!("{HEADER}\nm1,A,\"open\n");
        let e = parse_measurements(&text, "q.csv").unwrap_err().to_string();
        assert!(e.contains("line 2") && e.contains("not closed"), "{e}");
        let text = format!("{HEADER}\nm1,A,x\n");
        let e = parse_measurements(&text, "q.csv").unwrap_err().to_string();
        assert!(e.contains("line 2: 3 fields"), "{e}");
        let text = format!("{HEADER}\nm1,A,\"x\"y,1,m,f,1,0,1,f,m,1,u,s,n\n");
        let e = parse_measurements(&text, "q.csv").unwrap_err().to_string();
        assert!(e.contains("line 2, column 3"), "{e}");
        assert!(parse_measurements("", "e.csv").is_err());
    }

    #[test]
    fn bundled_file_parses() {
        let text = include_str!("../../data/measurements/measurements.csv");
        let rows = parse_measurements(text, "measurements.csv").unwrap();
        assert!(rows.len() > 90, "{}", rows.len());
        assert!(rows.iter().any(|r| r.kind == Kind::F));
    }
}
