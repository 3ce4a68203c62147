//! A large synthetic measurements file for benchmarks and tests: the bundled rows
//! repeated with new ids (`m003-s1`, ...) and values jittered by up to ±5%
//! (deterministic), optionally with prompt and generation lengths moved by a few
//! tokens so that no two rows ask for the same prediction.

/// `rows` data rows (and the header) built from the bundled measurements; with
/// `distinct_shapes`, stated prompt and generation lengths grow by 0..16 tokens per
/// copy, so repeated rows are distinct configurations.
pub fn synthetic_measurements(rows: usize, distinct_shapes: bool) -> String {
    let text = ridgeline::calibrate::BUILTIN_MEASUREMENTS_CSV;
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(text.as_bytes());
    let records: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    let (header, data) = records.split_first().unwrap();
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let (id, value, prompt, gen_len) = (col("id"), col("value"), col("prompt_len"), col("gen_len"));
    let mut out = csv::WriterBuilder::new().from_writer(Vec::new());
    out.write_record(header).unwrap();
    // a 64-bit LCG: the same file every run
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut unit = || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1);
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut written = 0;
    for k in 0.. {
        for r in data {
            if written == rows {
                return String::from_utf8(out.into_inner().unwrap()).unwrap();
            }
            let mut f: Vec<String> = r.iter().map(str::to_string).collect();
            f[id] = format!("{}-s{k}", f[id]);
            if let Ok(v) = f[value].parse::<f64>() {
                f[value] = format!("{}", v * (1.0 + 0.1 * (unit() - 0.5)));
            }
            if distinct_shapes && k > 0 {
                for c in [prompt, gen_len] {
                    if let Ok(n) = f[c].parse::<u64>()
                        && n > 0
                    {
                        f[c] = (n + k * 16 + (unit() * 16.0) as u64).to_string();
                    }
                }
            }
            out.write_record(&f).unwrap();
            written += 1;
        }
    }
    unreachable!()
}
