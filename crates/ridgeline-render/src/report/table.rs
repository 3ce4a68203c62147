//! Plain-text tables for terminals.

use crate::dtype::ComputeDtype;
use crate::hardware::Hardware;
use crate::units::{GB, TERA, fmt_bytes_per_s};

/// Left-aligned columns separated by two spaces; the first row is the header.
pub fn render(rows: &[Vec<String>]) -> String {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let mut widths = vec![0usize; cols];
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            widths[i] = widths[i].max(c.chars().count());
        }
    }
    let mut out = String::new();
    for (n, r) in rows.iter().enumerate() {
        let mut line = String::new();
        for (i, c) in r.iter().enumerate() {
            if i + 1 == r.len() {
                line.push_str(c);
            } else {
                line.push_str(c);
                line.push_str(&" ".repeat(widths[i] - c.chars().count() + 2));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
        if n == 0 {
            let total: usize = widths.iter().sum::<usize>() + 2 * cols.saturating_sub(1);
            out.push_str(&"-".repeat(total));
            out.push('\n');
        }
    }
    out
}

/// A header row of `names`.
pub(crate) fn header(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| n.to_string()).collect()
}

fn tflops(x: Option<f64>) -> String {
    x.map(|v| format!("{:.0}", v / TERA))
        .unwrap_or_else(|| "-".into())
}

/// The `ridgeline hardware` listing: one row per device.
pub fn hardware_list(devices: &[Hardware]) -> String {
    let mut rows = vec![header(&[
        "id",
        "name",
        "memory",
        "bandwidth",
        "bf16 TFLOP/s",
        "fp8 TFLOP/s",
        "ridge (bf16)",
    ])];
    for d in devices {
        rows.push(vec![
            d.id.clone(),
            d.name.clone(),
            format!("{:.0} GB {}", d.memory.capacity_bytes / GB, d.memory.kind),
            fmt_bytes_per_s(d.memory.bandwidth_bytes_per_s),
            tflops(
                d.peak_flops_per_s
                    .rates
                    .bf16
                    .or(d.peak_flops_per_s.rates.fp16),
            ),
            tflops(d.peak_flops_per_s.rates.fp8),
            format!("{:.0} FLOP/B", d.ridge_point(ComputeDtype::Bf16)),
        ]);
    }
    let mut s = render(&rows);
    s.push_str("\nGB = 1e9 bytes; TFLOP/s dense; ridge = peak / bandwidth. `ridgeline hardware show ID` for sources.\n");
    s
}

/// The `ridgeline instances` table.
pub fn instance_list(instances: &[crate::instances::Instance]) -> String {
    let mut rows = vec![header(&[
        "provider",
        "instance",
        "devices",
        "link",
        "host memory",
        "network",
        "$/hour",
        "$/device-hour",
        "price date",
    ])];
    for i in instances {
        rows.push(vec![
            i.provider.clone(),
            i.name.clone(),
            format!("{} x {}", i.count, i.gpu),
            i.scaleup_link.as_ref().map_or("PCIe (host)".into(), |l| {
                fmt_bytes_per_s(l.bytes_per_s_per_direction)
            }),
            format!("{:.0} GiB", i.host_memory_bytes / crate::units::GIB),
            i.network_bytes_per_s
                .map_or("single".into(), |n| format!("{:.0} Gb/s", n * 8.0 / 1e9)),
            format!("{:.2}", i.price.usd_per_hour),
            format!("{:.3}", i.usd_per_gpu_hour()),
            i.price.date.clone(),
        ]);
    }
    let mut s = render(&rows);
    s.push_str("\nOn-demand prices; link per direction per device; network between instances for the whole instance (single: planned alone). `--json` for sources; `--instances-file` adds or overrides shapes.\n");
    s
}

/// The `ridgeline kernels` table: what each measured kernel table covers.
pub fn kernel_list(coverage: &[crate::kernels::Coverage]) -> String {
    let mut rows = vec![header(&[
        "device",
        "engine",
        "version",
        "op classes",
        "dtypes",
        "points",
    ])];
    for c in coverage {
        rows.push(vec![
            c.device.clone(),
            c.backend.clone(),
            c.version.clone(),
            c.op_classes
                .iter()
                .map(|o| o.name())
                .collect::<Vec<_>>()
                .join(", "),
            c.dtypes.join(", "),
            c.points.to_string(),
        ]);
    }
    let mut s = render(&rows);
    s.push_str("\nMeasured kernel times as a fraction of the roofline (aiconfigurator-core 0.12.0, Apache-2.0, NVIDIA): docs/kernels.md. Every command that predicts reads them by default under TensorRT-LLM, vLLM and SGLang on a device a table (or a sibling's) covers; `--kernels none` reads none, `--kernels DIR` adds or replaces tables.\n");
    s
}

/// The `ridgeline hardware show ID` page.
pub fn hardware_show(d: &Hardware) -> String {
    let mut s = format!("{} ({}, {})\n", d.name, d.id, d.vendor);
    if !d.aliases.is_empty() {
        s.push_str(&format!("aliases: {}\n", d.aliases.join(", ")));
    }
    s.push_str(&format!(
        "memory: {:.0} GB {} at {}\n",
        d.memory.capacity_bytes / GB,
        d.memory.kind,
        fmt_bytes_per_s(d.memory.bandwidth_bytes_per_s)
    ));
    s.push_str("dense peaks (TFLOP/s):");
    for dt in ComputeDtype::ALL {
        if let Some(p) = d.peak_flops_per_s.get(dt) {
            s.push_str(&format!(" {}={}", dt.name(), crate::units::sig3(p / TERA)));
        }
    }
    if let Some(p) = d.peak_flops_per_s.rates.fp16_acc16 {
        s.push_str(&format!(
            " (fp16 with fp16 accumulate={})",
            crate::units::sig3(p / TERA)
        ));
    }
    s.push('\n');
    if let Some(f) = d.peak_flops_per_s.warp_mma_fraction {
        s.push_str(&format!(
            "  (kernels on warp-level mma.sync reach {}% of the tensor peaks; the rest needs warpgroup MMA)\n",
            crate::units::sig3(f * 100.0)
        ));
    }
    if let Some(f) = d.peak_flops_per_s.flops_per_exp2 {
        s.push_str(&format!(
            "  (special-function units: one base-2 exponential in the time of {} 16-bit tensor FLOPs)\n",
            crate::units::sig3(f)
        ));
    }
    if d.peak_flops_per_s.sparse_halved {
        s.push_str("  (the datasheet prints sparse figures; they were halved to dense)\n");
    }
    s.push_str(&format!(
        "ridge point: {:.1} FLOP/byte (bf16)\n",
        d.ridge_point(ComputeDtype::Bf16)
    ));
    if let Some(l) = &d.host_link {
        s.push_str(&format!(
            "host link: {} ({} per direction)\n",
            l.name,
            fmt_bytes_per_s(l.bytes_per_s_per_direction)
        ));
    }
    if let Some(l) = &d.scaleup_link {
        s.push_str(&format!(
            "scale-up link: {} ({} per direction{})\n",
            l.name,
            fmt_bytes_per_s(l.bytes_per_s_per_direction),
            l.domain_devices
                .map(|n| format!(", {n} devices per domain"))
                .unwrap_or_default()
        ));
    }
    if let Some(t) = d.tdp_w {
        s.push_str(&format!("TDP: {t:.0} W\n"));
    }
    if let Some(r) = &d.power_reference {
        s.push_str(&format!(
            "sustained tensor rate: {:.3} of the rated peaks (board power per tensor FLOP/s against {r}, the same die at its rated clock); predictions use it\n",
            d.sustained_tensor_fraction
        ));
    }
    if let Some(p) = &d.price {
        s.push_str(&format!("price: ${:.2}/h ({})\n", p.usd_per_hour, p.date));
    }
    if !d.notes.is_empty() {
        s.push_str(&format!("notes: {}\n", d.notes));
    }
    s.push_str("sources:\n");
    for src in d.all_sources() {
        s.push_str(&format!("  - {src}\n"));
    }
    s
}

/// The `ridgeline models` listing.
pub fn model_list(models: &[crate::model::ModelConfig]) -> String {
    let mut rows = vec![header(&[
        "id", "name", "params", "active", "layers", "hidden", "heads/kv", "context", "dtype",
    ])];
    for m in models {
        let p = m.params();
        rows.push(vec![
            m.id.clone(),
            m.name.clone(),
            format!("{:.2} B", p.total as f64 / 1e9),
            format!("{:.2} B", p.active as f64 / 1e9),
            m.layers.to_string(),
            m.hidden.to_string(),
            format!("{}/{}", m.heads, m.kv_heads),
            m.max_context.to_string(),
            m.native_label(),
        ]);
    }
    let mut s = render(&rows);
    s.push_str("\nB = 1e9 parameters. `--model PATH/config.json` reads any Hugging Face config.\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_align() {
        let t = render(&[
            vec!["a".into(), "bb".into()],
            vec!["ccc".into(), "d".into()],
        ]);
        assert_eq!(t, "a    bb\n-------\nccc  d\n");
    }
}
