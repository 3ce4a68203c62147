//! The curated public API: every `pub` item of the library crates (not `pub(crate)`,
//! not inside a test module), one line each, in `docs/public-api.txt`. An item a crate
//! only uses itself is `pub(crate)`; what stays `pub` is used by a crate above it, the
//! facade, the CLI, the Python package, or is part of a public type's documented
//! surface. So a new public item is a reviewed change: the test fails until the listing
//! is rewritten with `RIDGELINE_BLESS=1 cargo test --test suite public_api::` and the
//! diff is read in the same commit.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The library crates whose API is listed (the facade re-exports their modules).
const CRATES: [&str; 5] = [
    "ridgeline-core",
    "ridgeline-sim",
    "ridgeline-plan",
    "ridgeline-render",
    "ridgeline-fit",
];

/// Item keywords a `pub` declaration starts with.
const KINDS: [&str; 10] = [
    "const fn",
    "unsafe fn",
    "fn",
    "struct",
    "enum",
    "trait",
    "type",
    "const",
    "static",
    "mod",
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs")
            && p.file_name().is_some_and(|n| n != "tests.rs")
        {
            out.push(p);
        }
    }
}

/// The public items of one source file, as `impl Owner: kind name` or `kind name`
/// (`pub use` lines as written). Test modules (`#[cfg(test)]` before `mod`) are skipped.
fn public_items(text: &str) -> Vec<String> {
    let mut items = Vec::new();
    let mut owner: Option<String> = None;
    let mut skip_to_close: Option<usize> = None;
    let mut test_attr = false;
    let mut in_use: Option<String> = None;
    for line in text.lines() {
        let indent = line.len() - line.trim_start().len();
        let t = line.trim();
        if let Some(u) = &mut in_use {
            u.push(' ');
            u.push_str(t);
            if t.ends_with(';') {
                items.push(u.replace("{ ", "{").replace(", }", "}").replace(" }", "}"));
                in_use = None;
            }
            continue;
        }
        if let Some(depth) = skip_to_close {
            if indent == depth && t == "}" {
                skip_to_close = None;
            }
            continue;
        }
        if t == "#[cfg(test)]" {
            test_attr = true;
            continue;
        }
        if test_attr && t.starts_with("mod ") && t.ends_with('{') {
            skip_to_close = Some(indent);
            test_attr = false;
            continue;
        }
        if !t.starts_with("#[") && !t.starts_with("//") {
            test_attr = false;
        }
        if indent == 0 && t.starts_with("impl") && t.ends_with('{') {
            owner = Some(t.trim_end_matches('{').trim().to_string());
            continue;
        }
        if indent == 0 && t == "}" {
            owner = None;
            continue;
        }
        let Some(rest) = t.strip_prefix("pub ") else {
            continue;
        };
        if rest.starts_with("use ") {
            if rest.ends_with(';') {
                items.push(t.to_string());
            } else {
                in_use = Some(t.to_string());
            }
            continue;
        }
        let Some(kind) = KINDS
            .iter()
            .find(|k| rest.strip_prefix(*k).is_some_and(|r| r.starts_with(' ')))
        else {
            continue;
        };
        let name: String = rest[kind.len()..]
            .trim_start()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        match (&owner, indent) {
            (Some(o), i) if i > 0 => items.push(format!("{o}: {kind} {name}")),
            _ => items.push(format!("{kind} {name}")),
        }
    }
    items
}

fn listing(root: &Path) -> String {
    let mut out = String::from(
        "# The public API of the library crates: every `pub` item (not `pub(crate)`), by file.\n\
         # A change here is an API change: review it. Rewritten by\n\
         # RIDGELINE_BLESS=1 cargo test --test suite public_api::\n",
    );
    for c in CRATES {
        let src = root.join("crates").join(c).join("src");
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        writeln!(out, "\n## {c}").unwrap();
        for f in files {
            let items = public_items(&std::fs::read_to_string(&f).unwrap());
            if items.is_empty() {
                continue;
            }
            let rel = f.strip_prefix(&src).unwrap().display().to_string();
            writeln!(out, "{rel}").unwrap();
            for i in items {
                writeln!(out, "  {i}").unwrap();
            }
        }
    }
    out
}

#[test]
fn public_api_is_the_reviewed_listing() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let path = root.join("docs/public-api.txt");
    let now = listing(root);
    if std::env::var_os("RIDGELINE_BLESS").is_some() {
        std::fs::write(&path, &now).unwrap();
        return;
    }
    let listed = std::fs::read_to_string(&path).unwrap_or_default();
    let old: Vec<&str> = listed.lines().collect();
    let new: Vec<&str> = now.lines().collect();
    let added: Vec<&&str> = new.iter().filter(|l| !old.contains(l)).collect();
    let removed: Vec<&&str> = old.iter().filter(|l| !new.contains(l)).collect();
    assert!(
        listed == now,
        "the public API differs from docs/public-api.txt (review, then RIDGELINE_BLESS=1 \
         cargo test --test suite public_api:: rewrites it)\nadded: {added:#?}\nremoved: {removed:#?}"
    );
}

/// The parser on a hand-written file: methods carry their impl, `pub(crate)` items and
/// test modules are left out, a `pub use` over several lines is one entry.
#[test]
fn listing_reads_items_impls_and_skips_tests() {
    let text = "\
//! A module.
pub struct A;
pub(crate) struct B;
impl A {
    /// New.
    pub fn new() -> A {
        A
    }
    pub(crate) fn hidden(&self) {}
    pub const N: u64 = 1;
}
pub use x::{
    Y, Z,
};
#[cfg(test)]
mod tests {
    pub fn helper() {}
}
pub fn after() {}
";
    assert_eq!(
        public_items(text),
        [
            "struct A",
            "impl A: fn new",
            "impl A: const N",
            "pub use x::{Y, Z};",
            "fn after",
        ]
    );
}
