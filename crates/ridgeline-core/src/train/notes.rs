//! The caveats of a training prediction ([`TrainNote`]) as sentences, which is also how
//! they serialize in JSON.

use super::TrainNote;
use std::fmt;

impl fmt::Display for TrainNote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TrainNote::NoFp8 { device } => write!(
                f,
                "{device} has no fp8 tensor cores: matmuls are costed in bf16"
            ),
            TrainNote::AdapterMatmuls16Bit => {
                f.write_str("LoRA/QLoRA matmuls run at 16-bit on the frozen weights")
            }
            TrainNote::SeqBeyondContext { seq, max_context } => write!(
                f,
                "seq {seq} exceeds the model's trained context of {max_context} tokens"
            ),
            TrainNote::DoesNotFit {
                needed_bytes,
                capacity_bytes,
            } => write!(
                f,
                "does not fit: {:.2} GB needed of {:.2} GB per device; step time is what it would take if it did",
                needed_bytes / 1e9,
                capacity_bytes / 1e9
            ),
            TrainNote::HostOptimizerStates { bytes } => write!(
                f,
                "{:.2} GB of optimizer states per device in host memory; the CPU update itself is not timed",
                bytes / 1e9
            ),
            TrainNote::AttentionShare {
                percent,
                full_square_ratio,
            } => write!(
                f,
                "attention is {percent:.0} % of the model FLOPs at this length, counted causally (half the s x s square); MFUs published with the full-square PaLM/Megatron count read {full_square_ratio:.2}x higher"
            ),
            TrainNote::LoraRankUnused { rank } => write!(
                f,
                "LoRA rank {rank} is unused: full training has no adapters (the rank applies to --method lora and qlora)"
            ),
            TrainNote::DefaultMicroBatches { micro_batches } => write!(
                f,
                "no --global-batch: {micro_batches} micro-batches per step (4 x pp) assumed"
            ),
            TrainNote::ContextParallelOptimistic => f.write_str(
                "context-parallel training: the published context-parallel runs ridgeline is checked against ran slower than predicted, all but one (the ring's attention runs as chunk kernels, costed here as one kernel of the same work; `ridgeline calibrate --train` lists them), so read this step time as optimistic",
            ),
            TrainNote::ExpertParallelOptimistic => f.write_str(
                "expert-parallel MoE training: the published expert-parallel runs ridgeline is checked against mostly ran slower than predicted (the token dispatch's own kernels and each local expert's launches are not counted; `ridgeline calibrate --train` lists them), so read this step time as optimistic",
            ),
        }
    }
}

/// A note is its text in JSON (`"notes": ["..."]`).
impl serde::Serialize for TrainNote {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_read_as_before() {
        let n = TrainNote::SeqBeyondContext {
            seq: 8192,
            max_context: 4096,
        };
        assert_eq!(
            n.to_string(),
            "seq 8192 exceeds the model's trained context of 4096 tokens"
        );
        assert_eq!(
            serde_json::to_string(&TrainNote::HostOptimizerStates { bytes: 28966912.0 }).unwrap(),
            "\"0.03 GB of optimizer states per device in host memory; the CPU update itself is not timed\""
        );
    }
}
