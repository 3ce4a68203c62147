//! Embeds every file under data/hardware and data/models into the binary.
use std::{env, fs, path::Path};

fn list(dir: &str, ext: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    if let Ok(rd) = fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.extension().and_then(|s| s.to_str()) == Some(ext) {
                let name = p.file_name().unwrap().to_string_lossy().to_string();
                let abs = fs::canonicalize(&p).unwrap().to_string_lossy().to_string();
                out.push((name, abs));
            }
        }
    }
    out.sort();
    out
}

fn main() {
    println!("cargo:rerun-if-changed=../../data");
    let mut code = String::new();
    for (konst, dir, ext) in [
        ("HARDWARE_FILES", "../../data/hardware", "toml"),
        ("MODEL_FILES", "../../data/models", "json"),
    ] {
        println!("cargo:rerun-if-changed={dir}");
        code.push_str(&format!("/// Embedded `{dir}/*.{ext}` files: (file name, contents).\npub static {konst}: &[(&str, &str)] = &[\n"));
        for (name, abs) in list(dir, ext) {
            code.push_str(&format!("    ({name:?}, include_str!({abs:?})),\n"));
        }
        code.push_str("];\n");
    }
    let out = Path::new(&env::var("OUT_DIR").unwrap()).join("builtin_data.rs");
    fs::write(out, code).unwrap();
}
