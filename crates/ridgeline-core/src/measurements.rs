//! The measurements CSV, read with the `csv` crate into typed [`Measurement`] rows.
//! Every error names the file, the line and the column.

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
    /// The file the row was read from (as errors name it).
    pub file: String,
    /// 1-based column of `value` in that file (errors about the value name it).
    pub value_column: usize,
}

/// One record: the 1-based line it starts on and its fields.
type Record = (usize, csv::StringRecord);

fn parse_error(source_name: &str, message: String) -> Error {
    Error::Parse {
        source_name: source_name.to_string(),
        message,
    }
}

/// The records of `text`, each with the line it starts on; blank lines are skipped.
///
/// The `csv` crate reads malformed quoting leniently (it has no strict mode,
/// BurntSushi/rust-csv#77): `"x"y` as `xy`, an unclosed quote as the rest of the file.
/// So each record's text is checked to be its fields written the RFC 4180 way, and
/// the first field that is not is named.
fn records(text: &str, source_name: &str) -> Result<Vec<Record>> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(text.as_bytes());
    let bytes = text.as_bytes();
    let mut out: Vec<(usize, usize, csv::StringRecord)> = Vec::new();
    // (byte, its line): lines are counted here, a CR alone ending a line as it does in
    // files saved with classic Mac line ends (the csv crate counts LFs only)
    let mut counted = (0, 1);
    for rec in reader.records() {
        // the text is valid UTF-8 and records may differ in length: nothing fails here
        let rec = rec.map_err(|e| Error::internal("csv reader", e))?;
        let mut start = rec.position().map_or(0, |p| p.byte() as usize);
        // a record's position can stand on the line end before it (after a CR, or
        // blank lines): the record starts after it
        while let Some(b'\r' | b'\n') = bytes.get(start) {
            start += 1;
        }
        let line = counted.1 + line_breaks(&bytes[counted.0.min(start)..start]);
        counted = (start, line);
        out.push((line, start, rec));
    }
    let ends: Vec<usize> = out
        .iter()
        .skip(1)
        .map(|r| r.1)
        .chain([text.len()])
        .collect();
    let mut kept = Vec::with_capacity(out.len());
    for ((line, start, rec), end) in out.into_iter().zip(ends) {
        if let Err((col, msg)) = check_quoting(&text[start..end], &rec, end == text.len()) {
            return Err(parse_error(
                source_name,
                format!("line {line}, column {}: {msg}", col + 1),
            ));
        }
        if !(rec.len() == 1 && rec[0].trim().is_empty()) {
            kept.push((line, rec));
        }
    }
    Ok(kept)
}

/// Line ends in `b`: LF, CR LF, or a CR alone (one that ends `b` counts).
fn line_breaks(b: &[u8]) -> usize {
    b.iter()
        .enumerate()
        .filter(|&(i, &c)| c == b'\n' || (c == b'\r' && b.get(i + 1) != Some(&b'\n')))
        .count()
}

/// Checks that `raw`, the text of one record up to the next, is `fields` written the
/// RFC 4180 way (a quoted field doubles its quotes and is followed by a comma or the
/// line end; an unquoted field holds no quote). Returns the 0-based column at fault.
fn check_quoting(
    raw: &str,
    fields: &csv::StringRecord,
    last: bool,
) -> std::result::Result<(), (usize, &'static str)> {
    let mut rest = raw;
    for (i, field) in fields.iter().enumerate() {
        if i > 0 {
            rest = rest
                .strip_prefix(',')
                .ok_or((i, "a field does not end at a comma"))?;
        }
        rest = match rest.strip_prefix('"') {
            Some(quoted) => {
                let body = field.replace('"', "\"\"");
                let after = quoted.strip_prefix(body.as_str()).ok_or((
                    i,
                    "text after a closing quote (a quote inside a quoted field is written \"\")",
                ))?;
                after.strip_prefix('"').ok_or(if last {
                    (i, "quoted field is not closed before the end of the file")
                } else {
                    (i, "text after a closing quote")
                })?
            }
            None if field.contains('"') => {
                return Err((
                    i,
                    "a quote inside an unquoted field (quote the whole field and double the quote)",
                ));
            }
            None => rest
                .strip_prefix(field)
                .ok_or((i, "the field is not the text of the line"))?,
        };
    }
    if rest.trim().is_empty() {
        Ok(())
    } else {
        Err((fields.len().saturating_sub(1), "text after a closing quote"))
    }
}

/// The position of each of [`COLUMNS`] in the header.
fn column_index(header: &Record, source_name: &str) -> Result<[usize; COLUMNS.len()]> {
    let (line, names) = header;
    let mut index = [0usize; COLUMNS.len()];
    for (slot, name) in index.iter_mut().zip(COLUMNS) {
        *slot = names
            .iter()
            .position(|h| h.trim().eq_ignore_ascii_case(name))
            .ok_or_else(|| {
                let found = crate::error::closest(name, names.iter().map(str::trim), 1);
                let hint = found
                    .first()
                    .map_or(String::new(), |f| format!(" (closest: '{f}')"));
                parse_error(
                    source_name,
                    format!("line {line}: header has no column '{name}'{hint}"),
                )
            })?;
    }
    Ok(index)
}

/// A count cell: empty, a whole number, or a description; a cell that looks like a
/// number and is not a whole one is an error message.
fn count(cell: &str) -> std::result::Result<Count, String> {
    if cell.is_empty() {
        return Ok(Count::Missing);
    }
    if let Ok(n) = cell.parse::<u64>() {
        return Ok(Count::Exact(n));
    }
    let numeric_looking = cell
        .chars()
        .all(|c| c.is_ascii_digit() || matches!(c, '.' | '-' | '+' | 'e' | 'E'))
        && cell.chars().any(|c| c.is_ascii_digit());
    if numeric_looking {
        return Err(format!("'{cell}' is not a whole number >= 0"));
    }
    Ok(Count::Text(cell.to_string()))
}

/// One data record as a [`Measurement`]; errors name the line and the column.
fn measurement(
    (line, rec): &Record,
    header: &csv::StringRecord,
    index: &[usize; COLUMNS.len()],
    source_name: &str,
) -> Result<Measurement> {
    let line = *line;
    if rec.len() != header.len() {
        return Err(parse_error(
            source_name,
            format!(
                "line {line}: {} fields, but the header has {}",
                rec.len(),
                header.len()
            ),
        ));
    }
    let err = |k: usize, msg: String| {
        let col = index[k];
        parse_error(
            source_name,
            format!("line {line}, column {} ({}): {msg}", col + 1, &header[col]),
        )
    };
    let cell = |k: usize| rec[index[k]].trim();
    let text = |k: usize| cell(k).to_string();
    let count = |k: usize| count(cell(k)).map_err(|m| err(k, m));
    if cell(0).is_empty() {
        return Err(err(0, "empty id".into()));
    }
    let kind = Kind::parse(cell(1)).ok_or_else(|| {
        err(
            1,
            format!("kind '{}' is not one of A, B, C, D, E, F", cell(1)),
        )
    })?;
    let num_gpus = match cell(3).parse::<u64>() {
        Ok(n) if n >= 1 => n,
        _ => {
            let m = format!("'{}' is not a whole number of devices >= 1", cell(3));
            return Err(err(3, m));
        }
    };
    let value = match cell(11).parse::<f64>() {
        Ok(v) if v.is_finite() => v,
        _ => return Err(err(11, format!("'{}' is not a finite number", cell(11)))),
    };
    Ok(Measurement {
        id: text(0),
        line,
        kind,
        gpu: text(2),
        num_gpus,
        model: text(4),
        precision: text(5),
        batch: count(6)?,
        prompt_len: count(7)?,
        gen_len: count(8)?,
        framework: text(9),
        metric: text(10),
        value,
        unit: text(12),
        source: text(13),
        notes: text(14),
        file: source_name.to_string(),
        value_column: index[11] + 1,
    })
}

/// Parses a measurements CSV (the columns of [`COLUMNS`], any order) into typed rows.
///
/// Fields follow RFC 4180: quoted fields may hold commas, doubled quotes and line
/// breaks. `num_gpus` must be a whole number >= 1 and `value` a finite number;
/// `batch`, `prompt_len` and `gen_len` may be empty, a whole number, or a description
/// (`max-load (IFB)`), but a cell that looks like a number and is not a whole one
/// (`1.5`, `-3`, `12e`) is an error. Errors name `source_name`, the line and the column.
///
/// ```
/// let text = "id,kind,gpu,num_gpus,model,precision,batch,prompt_len,gen_len,framework,metric,value,unit,source_url_or_repo_path,notes\n\
///             x1,A,RTX 4090,1,Llama-2-7B,f16/f16,1,0,128,llama.cpp,decode tokens/s,\"61.0\",tok/s,https://example.org,\"a, b\"\n";
/// let rows = ridgeline_core::measurements::parse_measurements(text, "x.csv").unwrap();
/// assert_eq!(rows[0].value, 61.0);
/// assert_eq!(rows[0].notes, "a, b");
/// ```
pub fn parse_measurements(text: &str, source_name: &str) -> Result<Vec<Measurement>> {
    // the csv crate drops one more byte order mark at the start: drop them all here,
    // so that the records' text is the text the quoting check reads
    let text = text.trim_start_matches('\u{feff}');
    let recs = records(text, source_name)?;
    let Some(header) = recs.first() else {
        return Err(parse_error(
            source_name,
            "empty file: expected a header row with the columns id,kind,gpu,...".into(),
        ));
    };
    let index = column_index(header, source_name)?;
    recs[1..]
        .iter()
        .map(|r| measurement(r, &header.1, &index, source_name))
        .collect()
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

        for (row, place) in [
            (
                "m1,A,RTX 4090,two,m,f16,1,0,1,llama.cpp,tg,61,tok/s,u,n",
                "line 2, column 4 (num_gpus)",
            ),
            (
                "m1,A,RTX 4090,1,m,f16,1.5,0,1,llama.cpp,tg,61,tok/s,u,n",
                "line 2, column 7 (batch)",
            ),
        ] {
            let text = format!("{HEADER}\n{row}\n");
            let e = parse_measurements(&text, "b.csv").unwrap_err().to_string();
            assert!(e.contains(place), "{e}");
        }
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
        let cases: [(&str, &[&str]); 3] = [
            ("m1,A,\"open", &["line 2", "not closed"]),
            ("m1,A,x", &["line 2: 3 fields"]),
            ("m1,A,\"x\"y,1,m,f,1,0,1,f,m,1,u,s,n", &["line 2, column 3"]),
        ];
        for (row, said) in cases {
            let text = format!("{HEADER}\n{row}\n");
            let e = parse_measurements(&text, "q.csv").unwrap_err().to_string();
            assert!(said.iter().all(|w| e.contains(w)), "{e}");
        }
        assert!(parse_measurements("", "e.csv").is_err());
    }

    #[test]
    fn crlf_and_blank_lines_keep_line_numbers() {
        let row = "m1,A,x,1,m,f,1,0,1,f,m,1,u,s";
        let text = format!(
            "{HEADER}\r\n\r\n\r\n{row},\"a\r\nb\"\r\n  \r\n{}",
            row.replace("m1", "m2") + ",n"
        );
        let rows = parse_measurements(&text, "c.csv").unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!((rows[0].line, rows[0].notes.as_str()), (4, "a\r\nb"));
        assert_eq!((rows[1].id.as_str(), rows[1].line), ("m2", 7));
    }

    #[test]
    fn a_cr_alone_ends_a_line() {
        // classic Mac line ends (Excel's "CSV (Macintosh)"): the second record was on
        // "line 1" (found by the measurements fuzz target)
        let row = "m1,A,x,1,m,f,1,0,1,f,m,1,u,s";
        let text = format!("{HEADER}\r{row},n\r{},\"a\rb\"\r", row.replace("m1", "m2"));
        let rows = parse_measurements(&text, "mac.csv").unwrap();
        assert_eq!((rows[0].line, rows[1].line), (2, 3));
        let text = format!("{HEADER}\r{row},n\r{row},x\"y\r");
        let e = parse_measurements(&text, "mac.csv")
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 3, column 15"), "{e}");
    }

    #[test]
    fn malformed_quotes_are_errors_not_guesses() {
        let row = "m1,A,x,1,m,f,1,0,1,f,m,1,u,s";
        for (notes, says) in [
            ("a\"b", "a quote inside an unquoted field"),
            ("\"ab\"c", "text after a closing quote"),
            ("\"ab", "not closed before the end of the file"),
        ] {
            let text = format!("{HEADER}\n{row},{notes}\n");
            let e = parse_measurements(&text, "q.csv").unwrap_err().to_string();
            assert!(
                e.contains("q.csv: line 2, column 15: ") && e.contains(says),
                "{e}"
            );
        }
    }

    #[test]
    fn byte_order_marks_before_the_header_are_dropped() {
        // two marks: the csv crate dropped the second, and the quoting check sliced
        // the raw text inside it (a panic found by the measurements fuzz target)
        let row = "m1,A,x,1,m,f,1,0,1,f,m,1,u,s,n";
        for marks in [
            "",
            "\u{feff}",
            "\u{feff}\u{feff}",
            "\u{feff}\u{feff}\u{feff}",
        ] {
            let rows = parse_measurements(&format!("{marks}{HEADER}\n{row}\n"), "b.csv").unwrap();
            assert_eq!((rows.len(), rows[0].id.as_str()), (1, "m1"), "{marks:?}");
        }
        // the crashing input's start: a header with every column, no rows
        let text = format!("\u{feff}\u{feff}id,id,kind,gpu\u{0}\u{0}x,{HEADER}\n");
        assert!(parse_measurements(&text, "b.csv").unwrap().is_empty());
    }

    #[test]
    fn bundled_file_parses() {
        let text = include_str!("../../../data/measurements/measurements.csv");
        let rows = parse_measurements(text, "measurements.csv").unwrap();
        assert!(rows.len() > 90, "{}", rows.len());
        assert!(rows.iter().any(|r| r.kind == Kind::F));
    }
}
