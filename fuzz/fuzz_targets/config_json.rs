//! Any bytes as a Hugging Face config.json: an error or a model, never a panic; a model
//! that parses must predict finite numbers.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ridgeline::prelude::*;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(model) = ModelConfig::from_json_str(text, "fuzz", "fuzz.json") else {
        return;
    };
    let gpu = HardwareDb::builtin().unwrap().get("h100").unwrap();
    let engine = EngineDb::builtin().unwrap().get("typical").unwrap();
    let s = Scenario {
        prompt: 64,
        gen_tokens: 16,
        ..Scenario::default()
    };
    if let Ok(p) = Predictor::new(&model, gpu, engine, &s) {
        let sum = p.summary(1, 64, 16);
        assert!(sum.decode.time_s.is_finite() && sum.decode_total_s.is_finite());
        assert!(sum.memory.total_bytes.is_finite());
    }
});
