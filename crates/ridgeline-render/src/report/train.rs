//! Human-readable text report of a training prediction (`ridgeline train`); the text of
//! its notes is the core's (`ridgeline_core::train::notes`).

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

/// A fraction as a percentage with one decimal (`12.3 %`).
pub fn pct(x: f64) -> String {
    format!("{:.1} %", 100.0 * x)
}

/// `text` when `cond`, else nothing.
pub fn when(cond: bool, text: impl FnOnce() -> String) -> String {
    if cond { text() } else { String::new() }
}

/// `""` for one, `"es"` for several (micro-batch / micro-batches).
fn es(n: u64) -> &'static str {
    if n == 1 { "" } else { "es" }
}

/// The two header lines: model, devices, layout and recipe; sequence and batches.
fn header(r: &TrainReport) -> String {
    let c = &r.config;
    let l = &r.layout;
    let method = match c.method {
        Method::Full => "full training".to_string(),
        m => format!("{} rank {}", m.name(), c.effective_lora_rank()),
    };
    format!(
        "{} on {}x {}: tp {}{} x pp {} x dp {}, ZeRO-{}, {}, {} {}, recompute {}{}\nseq {}, micro-batch {}, global batch {} ({} micro-batch{} per step{})\n\n",
        r.model.name,
        r.hardware.count,
        r.hardware.name,
        l.tp,
        when(l.cp > 1, || format!(" x cp {}", l.cp)),
        l.pp,
        l.dp,
        c.zero,
        method,
        c.precision.name(),
        c.optimizer.name(),
        c.recompute.name(),
        when(c.offload.name() == "cpu", || ", optimizer offloaded to CPU"
            .into()),
        c.seq,
        l.micro_batch,
        l.global_batch,
        l.micro_batches,
        es(l.micro_batches),
        when(c.virtual_stages > 1, || format!(
            ", {} virtual stages",
            c.virtual_stages
        )),
    )
}

/// The memory block: one line per term, the total and the largest micro-batch.
fn memory(r: &TrainReport) -> String {
    let m = &r.memory.inner;
    let d = &r.memory.detail;
    let lines = [
        format!("Memory per device ({} stage; GB = 1e9 bytes):", d.stage),
        format!("  weights      {:>12}", fmt_gb(m.params_bytes)),
        format!("  gradients    {:>12}", fmt_gb(m.grads_bytes)),
        format!(
            "  optimizer    {:>12}{}",
            fmt_gb(m.optimizer_bytes),
            when(d.host_optimizer_bytes > 0.0, || format!(
                " (+ {} in host memory)",
                fmt_gb(d.host_optimizer_bytes)
            ))
        ),
        format!(
            "  activations  {:>12} ({} per layer per micro-batch, {} micro-batch{} in flight{})",
            fmt_gb(m.activations_bytes),
            fmt_gb(d.activations_per_layer_bytes),
            d.micro_batches_in_flight,
            es(d.micro_batches_in_flight),
            when(d.logits_bytes > 0.0, || format!(
                ", logits {}",
                fmt_gb(d.logits_bytes)
            ))
        ),
        format!(
            "  overhead     {:>12} (context {}, fragmentation {}{})",
            fmt_gb(m.overhead_bytes),
            fmt_gb(d.context_bytes),
            fmt_gb(d.fragmentation_bytes),
            when(d.gather_buffer_bytes > 0.0, || format!(
                ", ZeRO-3 gather buffers {}",
                fmt_gb(d.gather_buffer_bytes)
            ))
        ),
        format!(
            "  total        {:>12} of {} -> {}",
            fmt_gb(m.total_bytes),
            fmt_gb(m.capacity_bytes),
            if m.fits { "fits" } else { "DOES NOT FIT" }
        ),
        format!("  largest micro-batch that fits: {}\n\n", d.max_micro_batch),
    ];
    lines.join("\n")
}

/// The step block: time, throughput and utilization, then where the time goes.
fn step(r: &TrainReport) -> String {
    let st = &r.step;
    let mut lines = vec![
        format!(
            "Step: {} -> {} tokens/s ({} per GPU); MFU {} (HFU {}), {} model per GPU; {}-bound",
            fmt_seconds(st.time_s),
            count(st.tokens_per_s),
            count(st.tokens_per_s_per_gpu),
            pct(st.mfu),
            pct(st.hfu),
            fmt_flops_per_s(st.model_flops_per_s_per_gpu),
            st.bound
        ),
        format!(
            "  one micro-batch (fwd + bwd{}): {}",
            when(r.config.recompute.name() != "none", || " + recompute"
                .into()),
            fmt_seconds(st.micro_batch_time_s)
        ),
        format!(
            "  compute-bound ops {}, memory-bound ops and update {}",
            fmt_seconds(st.compute_time_s),
            fmt_seconds(st.memory_time_s)
        ),
        format!(
            "  communication: tensor-parallel {}{}{}, data-parallel {}, pipeline {}; exposed {}",
            fmt_seconds(st.tp_comm_time_s),
            when(r.layout.cp > 1, || format!(
                ", context-parallel ring {}",
                fmt_seconds(st.cp_comm_time_s)
            )),
            when(r.layout.ep > 1, || format!(
                ", expert all-to-all {}",
                fmt_seconds(st.ep_comm_time_s)
            )),
            fmt_seconds(st.dp_comm_time_s),
            fmt_seconds(st.pp_comm_time_s),
            fmt_seconds(st.exposed_comm_time_s)
        ),
    ];
    if r.layout.pp > 1 {
        lines.push(format!(
            "  pipeline bubble {} ({} of the step)",
            fmt_seconds(st.bubble_time_s),
            pct(st.bubble_fraction)
        ));
    }
    if st.offload_time_s > 0.0 {
        lines.push(format!(
            "  host-link traffic (offload) {}",
            fmt_seconds(st.offload_time_s)
        ));
    }
    if let Some(line) = interval_line(r) {
        lines.push(line);
    }
    let e = &r.efficiency;
    let query = r.config.seq / r.layout.cp.max(1);
    let attention = match &e.attention_measured {
        Some(id) => format!(
            "attention {:.2} (measured kernels {id} at {query} tokens)",
            e.attention_at(query)
        ),
        None => format!("attention {:.2}", e.attention),
    };
    lines.push(format!(
        "  efficiency ({}): matmuls {:.2} of peak (fp8 {:.2}), {attention}, memory {:.2}, links {:.2}; overlap DP {:.2}, TP {:.2}",
        e.label, e.compute, e.compute_fp8, e.memory, e.link, e.overlap_dp, e.overlap_tp
    ));
    lines.into_iter().map(|l| l + "\n").collect()
}

/// The `80% interval` line of the step throughput and the memory (`None` without
/// intervals).
fn interval_line(r: &TrainReport) -> Option<String> {
    let i = &r.intervals;
    let mut parts = Vec::new();
    if let Some([lo, hi]) = i.get("step.tokens_per_s_per_gpu") {
        parts.push(format!("{} to {} tokens/s per GPU", count(*lo), count(*hi)));
    }
    if let Some([lo, hi]) = i.get("memory.total_bytes") {
        parts.push(format!("memory {} to {}", fmt_gb(*lo), fmt_gb(*hi)));
    }
    (!parts.is_empty()).then(|| {
        format!(
            "  80% interval: {} (errors of the training runs, in sample)",
            parts.join("; ")
        )
    })
}

/// The default `ridgeline train` output.
pub fn render(r: &TrainReport) -> String {
    let mut s = header(r) + &memory(r) + &step(r);
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
