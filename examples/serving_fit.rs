//! The serving front end's time per request, fitted on the published times to first
//! token, and the serving benchmarks held out by publication.
//!
//! A request sent to a server waits for the server's host work (HTTP, parsing,
//! tokenization, the first token's trip back) before and after the device computes its
//! first token; the simulation adds it to each request's time to first token and
//! end-to-end latency (`Serving::request_overhead_s`). Its value is fitted on the `ttft_s_*`
//! rows of data/measurements/serving.csv, simulated with the engines as fitted and no
//! front end: the time that minimises their mean |ln(simulated / published)|
//! (`fit_front_end`). Each publication's rows are then simulated with the time fitted on
//! the other publications' rows.
//!
//! Run: `cargo run --release -q --example serving_fit` prints the fit, the median
//! |error| per metric held out by publication and the held-out error of every row;
//! `-- --save` writes data/front-end.toml (tests/suite/serving.rs checks it is current).

use ridgeline::simulate::validation::{
    BUILTIN_SERVING_CSV, error_table, fit_front_end, front_end_held_out, front_end_toml,
    parse_serving,
};
use std::path::Path;

fn main() -> ridgeline::Result<()> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let rows = parse_serving(BUILTIN_SERVING_CSV, "serving.csv")?;
    let fit = fit_front_end(&rows, root, None)?;
    let toml = front_end_toml(&fit);
    if std::env::args().any(|a| a == "--save") {
        let path = root.join("data/front-end.toml");
        ridgeline::files::write_atomic(&path, toml.as_bytes())?;
        eprintln!("wrote {}", path.display());
    }
    println!(
        "request_overhead_s = {:.4} (fitted on {} rows from {} devices in {} publications)\n",
        fit.request_overhead_s,
        fit.fitted_on.len(),
        fit.devices,
        fit.publications
    );
    println!(
        "Held out by publication (each publication's rows simulated with the time fitted on the others'):\n"
    );
    println!(
        "{}",
        error_table(&front_end_held_out(&rows, root, None, &fit)?)
    );
    println!("The time fitted without each publication's rows:\n");
    for (p, d) in &fit.folds {
        println!("- without {p}: {d:.4} s");
    }
    Ok(())
}
