//! Any text as a LIST argument (`1,2,4`, `1..64`, `128..8192:x2`, `0..1000:+50`): an
//! error or a non-empty list, never a panic or a hang.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(v) = ridgeline::list::parse_u64_list("--batch", text) {
        assert!(!v.is_empty());
    }
    let _ = ridgeline::list::parse_names("--gpu", text);
});
