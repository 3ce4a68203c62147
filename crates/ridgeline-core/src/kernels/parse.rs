//! The reader of one kernel table (`<device>/<engine>.csv`, the importer's schema).

use super::{OpClass, Table, grid, grid::Grid};
use crate::error::{Error, Result};
use std::collections::BTreeMap;

/// The header every table carries (after its `#` comment lines).
pub const HEADER: &str = "op,version,dtype,key,x,y,z,efficiency";

const COLUMNS: [&str; 8] = ["op", "version", "dtype", "key", "x", "y", "z", "efficiency"];

fn at(source: &str, line: usize, col: usize, message: impl std::fmt::Display) -> Error {
    Error::Parse {
        source_name: source.to_string(),
        message: format!(
            "line {line}, column {} ({}): {message}",
            col + 1,
            COLUMNS[col]
        ),
    }
}

/// A positive finite number, or `-` where the op has no such axis.
fn number(cell: &str) -> Option<f64> {
    cell.parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v > 0.0)
}

/// Checks an op's key: `-` for gemm, `heads/kv_heads/head_dim` (kv_heads dividing
/// heads) for attention, the device count (at least 2) for all-reduce,
/// `hidden/inter/topk/experts/ep` (topk at most experts, ep dividing experts) for moe,
/// `heads/kv_lora/rope` for mla_decode.
fn check_key(op: OpClass, key: &str) -> std::result::Result<(), String> {
    let int = |s: &str| s.parse::<u64>().ok().filter(|v| *v > 0);
    match op {
        OpClass::Gemm if key == "-" => Ok(()),
        OpClass::Gemm => Err("a gemm row's key is `-`".into()),
        OpClass::AttentionPrefill | OpClass::AttentionDecode => {
            let parts: Vec<Option<u64>> = key.split('/').map(int).collect();
            match parts[..] {
                [Some(h), Some(kv), Some(_)] if h % kv == 0 => Ok(()),
                [Some(_), Some(_), Some(_)] => {
                    Err(format!("kv_heads do not divide heads in '{key}'"))
                }
                _ => Err(format!(
                    "'{key}' is not heads/kv_heads/head_dim (positive integers)"
                )),
            }
        }
        OpClass::AllReduce => match int(key) {
            Some(n) if n >= 2 => Ok(()),
            _ => Err(format!("'{key}' is not a device count of at least 2")),
        },
        OpClass::MlaDecode => match key.split('/').map(int).collect::<Vec<_>>()[..] {
            [Some(_), Some(_), Some(_)] => Ok(()),
            _ => Err(format!(
                "'{key}' is not heads/kv_lora/rope (positive integers)"
            )),
        },
        OpClass::Moe => {
            let parts: Vec<Option<u64>> = key.split('/').map(int).collect();
            match parts[..] {
                [Some(_), Some(_), Some(k), Some(e), Some(ep)] if k <= e && e % ep == 0 => Ok(()),
                [Some(_), Some(_), Some(_), Some(_), Some(_)] => Err(format!(
                    "'{key}': topk exceeds the experts or ep does not divide them"
                )),
                _ => Err(format!(
                    "'{key}' is not hidden/inter/topk/experts/ep (positive integers)"
                )),
            }
        }
    }
}

/// Parses `text`, the table of `device` under `backend`; `source` names the file in
/// errors (line and column of the first bad cell).
pub(crate) fn table(text: &str, source: &str, device: &str, backend: &str) -> Result<Table> {
    let mut header_seen = false;
    // per grid: (coordinates, efficiency, line)
    type Rows = Vec<(Vec<f64>, f64, usize)>;
    let mut points: BTreeMap<(OpClass, String, String), Rows> = BTreeMap::new();
    let mut versions: Vec<String> = Vec::new();
    let mut current: Option<((OpClass, String, String), Rows)> = None;
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let row = raw.trim_end_matches('\r');
        if row.trim().is_empty() || row.starts_with('#') {
            continue;
        }
        if !header_seen {
            if row != HEADER {
                return Err(Error::Parse {
                    source_name: source.to_string(),
                    message: format!("line {line}: the header must be `{HEADER}`"),
                });
            }
            header_seen = true;
            continue;
        }
        let mut cells = [""; COLUMNS.len()];
        let mut fields = 0;
        for cell in row.split(',') {
            if let Some(slot) = cells.get_mut(fields) {
                *slot = cell;
            }
            fields += 1;
        }
        if fields != COLUMNS.len() {
            return Err(Error::Parse {
                source_name: source.to_string(),
                message: format!(
                    "line {line}: {fields} fields, the header has {}",
                    COLUMNS.len()
                ),
            });
        }
        if let Some(c) = cells.iter().position(|c| c.contains('"')) {
            return Err(at(source, line, c, "quotes are not used in kernel tables"));
        }
        let op = OpClass::parse(cells[0]).map_err(|_| {
            at(
                source,
                line,
                0,
                format!(
                    "unknown op class '{}' (one of: {})",
                    cells[0],
                    OpClass::ALL
                        .iter()
                        .map(|o| o.name())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
        })?;
        for c in [1, 2] {
            if cells[c].is_empty() || cells[c].chars().any(char::is_whitespace) {
                return Err(at(source, line, c, "empty or with spaces"));
            }
        }
        check_key(op, cells[3]).map_err(|m| at(source, line, 3, m))?;
        let mut coords = Vec::new();
        for (c, cell) in cells.iter().enumerate().take(7).skip(4) {
            let used = c - 4 < op.axes().len();
            match (used, *cell) {
                (true, v) => coords.push(number(v).ok_or_else(|| {
                    at(source, line, c, format!("'{v}' is not a positive number"))
                })?),
                (false, "-") => {}
                (false, _) => {
                    return Err(at(
                        source,
                        line,
                        c,
                        format!("{} rows leave it `-`", op.name()),
                    ));
                }
            }
        }
        let eff = number(cells[7]).ok_or_else(|| {
            at(
                source,
                line,
                7,
                format!("'{}' is not a positive number", cells[7]),
            )
        })?;
        if !versions.iter().any(|v| v == cells[1]) {
            versions.push(cells[1].to_string());
        }
        // a grid's rows come together: the key is compared, not allocated, per row
        match &mut current {
            Some(((o, d, k), rows)) if *o == op && d == cells[2] && k == cells[3] => {
                rows.push((coords, eff, line));
            }
            _ => {
                if let Some((key, rows)) = current.take() {
                    points.entry(key).or_default().extend(rows);
                }
                let key = (op, cells[2].to_string(), cells[3].to_string());
                current = Some((key, vec![(coords, eff, line)]));
            }
        }
    }
    if let Some((key, rows)) = current {
        points.entry(key).or_default().extend(rows);
    }
    if !header_seen {
        return Err(Error::Parse {
            source_name: source.to_string(),
            message: format!("no header line `{HEADER}`"),
        });
    }
    let mut grids = BTreeMap::new();
    for (k, mut pts) in points {
        // in coordinate order, the rows of one point by line: a repeated point is
        // named at its second row
        pts.sort_by(|a, b| grid::cmp(&a.0, &b.0).then(a.2.cmp(&b.2)));
        let lines: Vec<usize> = pts.iter().map(|p| p.2).collect();
        let g = Grid::sorted(pts.into_iter().map(|p| (p.0, p.1)).collect()).map_err(|(i, _)| {
            at(
                source,
                lines[i],
                4,
                format!("a second row for the same {} point", k.0.name()),
            )
        })?;
        grids.insert(k, g);
    }
    Ok(Table {
        device: device.to_string(),
        backend: backend.to_string(),
        versions,
        source: source.to_string(),
        grids,
        shortest: Default::default(),
    })
}
