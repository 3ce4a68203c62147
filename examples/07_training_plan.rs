//! Fine-tuning Llama-2-7B on 200 M tokens: is one RTX 4090 with QLoRA enough, or are two
//! A100s for a full fine-tune worth it? The training-plan search over both devices, one
//! or two of each, every method: the cheapest, the fastest, each method's cheapest with
//! what binds it, and the cost-vs-time chart as SVG.

use ridgeline::hardware::HardwareDb;
use ridgeline::model::ModelDb;
use ridgeline::plan::train::{Pool, TrainPlanRequest, plan_training};
use ridgeline::plot::cost_time::cost_time;
use ridgeline::report::train_plan::{explain_option, hours, usd};

fn main() -> ridgeline::Result<()> {
    let model = ModelDb::builtin()?.resolve("llama-2-7b")?;
    let hw = HardwareDb::builtin()?;
    let pools = vec![
        Pool::device(hw.get("rtx-4090")?),
        Pool::device(hw.get("a100-80gb-sxm")?),
    ];
    let mut req = TrainPlanRequest::new(model, pools, 200_000_000);
    req.gpu_counts = vec![1, 2];
    let plan = plan_training(&req)?;
    for (label, e) in [("cheapest", &plan.best), ("fastest", &plan.fastest)] {
        if let Some(e) = e {
            println!(
                "{label}: {} on {} x {}: {} for {}",
                e.method,
                e.gpus,
                e.gpu,
                hours(e.hours),
                e.usd.map_or("no price".into(), usd)
            );
        }
    }
    for o in &plan.options {
        println!("- {}", explain_option(o));
    }
    let svg = cost_time(&plan)?;
    println!("chart: {} bytes of SVG", svg.len());
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn runs() {
        super::main().unwrap();
    }
}
