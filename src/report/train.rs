//! Human-readable text report of a training prediction (`ridgeline train`).

use crate::train::{Method, TrainReport};
use crate::units::{fmt_flops_per_s, fmt_gb, fmt_seconds};

fn count(x: f64) -> String {
    let s = format!("{:.0}", x.max(0.0));
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn pct(x: f64) -> String {
    format!("{:.1} %", 100.0 * x)
}

/// The default `ridgeline train` output.
pub fn render(r: &TrainReport) -> String {
    let c = &r.config;
    let l = &r.layout;
    let method = match c.method {
        Method::Full => "full training".to_string(),
        m => format!("{} rank {}", m.name(), c.lora_rank),
    };
    let mut s = format!(
        "{} on {}x {}: tp {} x pp {} x dp {}, ZeRO-{}, {}, {} {}, recompute {}{}\n",
        r.model.name,
        r.hardware.count,
        r.hardware.name,
        l.tp,
        l.pp,
        l.dp,
        c.zero,
        method,
        c.precision.name(),
        c.optimizer.name(),
        c.recompute.name(),
        if c.offload.name() == "cpu" {
            ", optimizer offloaded to CPU"
        } else {
            ""
        }
    );
    s.push_str(&format!(
        "seq {}, micro-batch {}, global batch {} ({} micro-batch{} per step{})\n\n",
        c.seq,
        l.micro_batch,
        l.global_batch,
        l.micro_batches,
        if l.micro_batches == 1 { "" } else { "es" },
        if c.virtual_stages > 1 {
            format!(", {} virtual stages", c.virtual_stages)
        } else {
            String::new()
        }
    ));
    let m = &r.memory.inner;
    let d = &r.memory.detail;
    s.push_str(&format!(
        "Memory per device ({} stage; GB = 1e9 bytes):\n",
        d.stage
    ));
    s.push_str(&format!("  weights      {:>12}\n", fmt_gb(m.params_bytes)));
    s.push_str(&format!("  gradients    {:>12}\n", fmt_gb(m.grads_bytes)));
    s.push_str(&format!(
        "  optimizer    {:>12}{}\n",
        fmt_gb(m.optimizer_bytes),
        if d.host_optimizer_bytes > 0.0 {
            format!(" (+ {} in host memory)", fmt_gb(d.host_optimizer_bytes))
        } else {
            String::new()
        }
    ));
    s.push_str(&format!(
        "  activations  {:>12} ({} per layer per micro-batch, {} micro-batch{} in flight{})\n",
        fmt_gb(m.activations_bytes),
        fmt_gb(d.activations_per_layer_bytes),
        d.micro_batches_in_flight,
        if d.micro_batches_in_flight == 1 {
            ""
        } else {
            "es"
        },
        if d.logits_bytes > 0.0 {
            format!(", logits {}", fmt_gb(d.logits_bytes))
        } else {
            String::new()
        }
    ));
    s.push_str(&format!(
        "  overhead     {:>12} (context {}, fragmentation {}{})\n",
        fmt_gb(m.overhead_bytes),
        fmt_gb(d.context_bytes),
        fmt_gb(d.fragmentation_bytes),
        if d.gather_buffer_bytes > 0.0 {
            format!(", ZeRO-3 gather buffers {}", fmt_gb(d.gather_buffer_bytes))
        } else {
            String::new()
        }
    ));
    s.push_str(&format!(
        "  total        {:>12} of {} -> {}\n",
        fmt_gb(m.total_bytes),
        fmt_gb(m.capacity_bytes),
        if m.fits { "fits" } else { "DOES NOT FIT" }
    ));
    s.push_str(&format!(
        "  largest micro-batch that fits: {}\n\n",
        d.max_micro_batch
    ));

    let st = &r.step;
    s.push_str(&format!(
        "Step: {} -> {} tokens/s ({} per GPU); MFU {} (HFU {}), {} model per GPU; {}-bound\n",
        fmt_seconds(st.time_s),
        count(st.tokens_per_s),
        count(st.tokens_per_s_per_gpu),
        pct(st.mfu),
        pct(st.hfu),
        fmt_flops_per_s(st.model_flops_per_s_per_gpu),
        st.bound
    ));
    s.push_str(&format!(
        "  one micro-batch (fwd + bwd{}): {}\n",
        if c.recompute.name() == "none" {
            ""
        } else {
            " + recompute"
        },
        fmt_seconds(st.micro_batch_time_s)
    ));
    s.push_str(&format!(
        "  compute-bound ops {}, memory-bound ops and update {}\n",
        fmt_seconds(st.compute_time_s),
        fmt_seconds(st.memory_time_s)
    ));
    s.push_str(&format!(
        "  communication: tensor-parallel {}, data-parallel {}, pipeline {}; exposed {}\n",
        fmt_seconds(st.tp_comm_time_s),
        fmt_seconds(st.dp_comm_time_s),
        fmt_seconds(st.pp_comm_time_s),
        fmt_seconds(st.exposed_comm_time_s)
    ));
    if l.pp > 1 {
        s.push_str(&format!(
            "  pipeline bubble {} ({} of the step)\n",
            fmt_seconds(st.bubble_time_s),
            pct(st.bubble_fraction)
        ));
    }
    if st.offload_time_s > 0.0 {
        s.push_str(&format!(
            "  host-link traffic (offload) {}\n",
            fmt_seconds(st.offload_time_s)
        ));
    }
    let e = &r.efficiency;
    s.push_str(&format!(
        "  efficiency ({}): matmuls {:.2} of peak (fp8 {:.2}), attention {:.2}, memory {:.2}, links {:.2}; overlap DP {:.2}, TP {:.2}\n",
        e.label, e.compute, e.compute_fp8, e.attention, e.memory, e.link, e.overlap_dp, e.overlap_tp
    ));
    for n in &r.notes {
        s.push_str(&format!("note: {n}\n"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_separators() {
        assert_eq!(count(1234567.4), "1,234,567");
        assert_eq!(count(999.0), "999");
        assert_eq!(count(1000.0), "1,000");
    }
}
