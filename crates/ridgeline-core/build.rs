//! Embeds every file under data/hardware, data/models and data/kernels into the binary.
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
    // data/kernels/<device>/<engine>.csv, named `<device>/<engine>.csv`
    code.push_str("/// Embedded `data/kernels/<device>/<engine>.csv` files: (`<device>/<engine>.csv`, contents).\npub static KERNEL_FILES: &[(&str, &str)] = &[\n");
    let mut devices: Vec<_> = fs::read_dir("../../data/kernels")
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| p.is_dir())
                .collect()
        })
        .unwrap_or_default();
    devices.sort();
    for dir in devices {
        let device = dir.file_name().unwrap().to_string_lossy().to_string();
        for (name, abs) in list(&dir.to_string_lossy(), "csv") {
            let name = format!("{device}/{name}");
            code.push_str(&format!("    ({name:?}, include_str!({abs:?})),\n"));
        }
    }
    code.push_str("];\n");
    let out = Path::new(&env::var("OUT_DIR").unwrap()).join("builtin_data.rs");
    fs::write(out, code).unwrap();
}
