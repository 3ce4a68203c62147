//! Training memory per device for Llama-2-7B on 8 A100s under ZeRO stages 0-3: the four
//! breakdowns behind a stacked-bar chart (weights, gradients, optimizer, activations,
//! overhead).

use ridgeline::hardware::HardwareDb;
use ridgeline::model::ModelDb;
use ridgeline::train::{Recompute, TrainConfig, zero_stages};

fn main() -> ridgeline::Result<()> {
    let model = ModelDb::builtin()?.resolve("llama-2-7b")?;
    let gpu = HardwareDb::builtin()?.get("a100-80gb-sxm")?.clone();
    let cfg = TrainConfig {
        gpus: 8,
        micro_batch: 1,
        global_batch: Some(8),
        seq: 4096,
        recompute: Recompute::Selective,
        ..TrainConfig::default()
    };
    println!("stage  weights  grads  optimizer  activations  overhead  total  (GB per GPU)");
    for (stage, m) in zero_stages(&model, &gpu, &cfg)?.iter().enumerate() {
        println!(
            "ZeRO-{stage} {:8.2} {:6.2} {:10.2} {:12.2} {:9.2} {:6.2}{}",
            m.params_bytes / 1e9,
            m.grads_bytes / 1e9,
            m.optimizer_bytes / 1e9,
            m.activations_bytes / 1e9,
            m.overhead_bytes / 1e9,
            m.total_bytes / 1e9,
            if m.fits { "" } else { "  does not fit" }
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn runs() {
        super::main().unwrap();
    }
}
