//! Caveats as sentences: the typed notes of the core ([`crate::predict::Note`])
//! rendered to text, which is also how they serialize in JSON.

use super::Note;
use std::fmt;

impl fmt::Display for Note {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Note::Approximation(text) => f.write_str(text),
            Note::NearestPeak { .. } => f.write_str(
                "the device publishes no peak for the weights' compute dtype; the nearest published rate was used",
            ),
            Note::BeyondContext {
                tokens,
                max_context,
            } => write!(
                f,
                "prompt + gen = {tokens} exceeds the model's trained context of {max_context} tokens"
            ),
            Note::Offloaded { bytes } => write!(
                f,
                "{:.2} GB of weights per device live in host memory, routed experts first: each pass streams the ones its tokens use over the host link (host_offload in the op table)",
                bytes / 1e9
            ),
            Note::DoesNotFit => {
                f.write_str("does not fit in device memory: times are what it would take if it did")
            }
            Note::BeyondScaleUp {
                gpus,
                domain,
                network_bytes_per_s,
            } => write!(
                f,
                "{gpus} devices span {} domains of {domain} joined by the scale-up link: collectives and pipeline sends between domains cross the network at {} GB/s per device (--inter-node-bw)",
                gpus.div_ceil((*domain).max(1)),
                crate::units::sig3(network_bytes_per_s / 1e9)
            ),
            Note::OverlappedExpertComm => f.write_str(
                "each pass runs as two micro-batches, one's expert all-to-all beside the other's computation (--overlap-ep): a pass hides its all-to-all up to its other ops' time, so its time is less than the op table's sum",
            ),
            Note::OtherVendorProfile {
                engine,
                vendor,
                profile,
            } => write!(
                f,
                "{engine}'s factors are fitted on its rows on other vendors' devices; on {vendor} devices it runs other kernels, and `--engine {profile}` holds the factors fitted there"
            ),
            Note::KernelTables {
                device,
                transferred,
                engine,
                refit,
            } => {
                let table = if *transferred {
                    format!("the measured kernel table of the sibling {device}, scaled to this device's roof")
                } else {
                    format!("{device}'s measured kernel table")
                };
                let rest = if *refit {
                    format!(
                        "the rest with {engine}'s factors refitted on the tables (data/engines-kernels.toml); the 80% intervals are those of its fit without tables"
                    )
                } else {
                    format!("the rest with {engine}'s own factors")
                };
                write!(f, "ops a table covers (source measured or transferred in the JSON op table) cost their time from {table}; {rest}")
            }
        }
    }
}

impl serde::Serialize for Note {
    /// As its sentence.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}
