//! Prices a buyer can act on: the bundled price book covers the devices with sources and
//! dates, unpriced devices are listed rather than dropped, a price file and a provider
//! choose the prices, and buying is set beside renting with arithmetic checkable by hand.

use crate::support::cli::{json, one_line_error, run};
use ridgeline::hardware::{HardwareDb, PriceBook};
use std::io::Write;

/// A price file in a fresh scratch directory of its own (removed when the guard drops).
fn price_file(text: &str) -> (Scratch, String) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "ridgeline-prices-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("prices.toml");
    std::fs::File::create(&path)
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let p = path.display().to_string();
    (Scratch(dir), p)
}

/// Removes its directory when dropped.
struct Scratch(std::path::PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn offer(gpu: &str, provider: &str, gpus: u64, usd: f64) -> String {
    format!(
        "[[offer]]\ngpu = \"{gpu}\"\nprovider = \"{provider}\"\nshape = \"{gpus}x\"\ngpus = {gpus}\nusd_per_hour = {usd}\ndate = \"2026-12-01\"\nsource = \"https://example.org/{provider}\"\n"
    )
}

#[test]
fn most_devices_carry_a_dated_sourced_price() {
    let db = HardwareDb::builtin().unwrap();
    // every entry of the bundled book names a device, a date and a URL
    let book = PriceBook::builtin(db).unwrap();
    assert!(book.offers.len() >= 100, "{}", book.offers.len());
    for o in &book.offers {
        assert!(o.source.starts_with("http"), "{o:?}");
    }
    for p in &book.purchases {
        assert!(p.source.starts_with("http"), "{p:?}");
    }
    // devices with a price (rented or bought) read within the 12 months before the
    // book's newest date: the count this book reaches, so that a lost source shows
    let newest = book.offers.iter().map(|o| o.date.as_str()).max().unwrap();
    let year_before = format!(
        "{}{}",
        newest[..4].parse::<u32>().unwrap() - 1,
        &newest[4..]
    );
    let fresh = db
        .devices()
        .iter()
        .filter(|d| {
            d.price.as_ref().map(|p| p.date.as_str()) > Some(year_before.as_str())
                || d.purchase.as_ref().map(|p| p.date.as_str()) > Some(year_before.as_str())
        })
        .count();
    assert!(fresh >= 40, "{fresh} of {} devices", db.devices().len());
    // the datacenter parts users ask about are rented
    for id in [
        "h100-sxm", "h200-sxm", "b200", "mi300x", "l40s", "a10g", "t4", "tpu-v5e",
    ] {
        assert!(db.get(id).unwrap().price.is_some(), "{id}");
    }
}

#[test]
fn a_marketplace_price_counts_only_where_no_provider_lists_the_device() {
    let db = HardwareDb::builtin().unwrap();
    let book = PriceBook::builtin(db).unwrap();
    for d in db.devices() {
        let listed: Vec<f64> = book
            .offers
            .iter()
            .filter(|o| o.gpu == d.id && !o.marketplace)
            .map(|o| o.usd_per_gpu_hour())
            .collect();
        if let (Some(p), false) = (&d.price, listed.is_empty()) {
            let cheapest = listed.iter().copied().fold(f64::INFINITY, f64::min);
            // the file's own [price] may be lower still
            assert!(p.usd_per_hour <= cheapest + 1e-12, "{}", d.id);
        }
    }
}

#[test]
fn unpriced_devices_are_listed_not_dropped() {
    // h800-sxm has no price in any public catalogue: it stays in the plan, marked
    let v = json(&[
        "plan",
        "--model",
        "llama-3-8b",
        "--gpu",
        "h100,h800-sxm",
        "--gpus",
        "1",
        "--json",
    ]);
    assert_eq!(v["best"]["gpu"], "h100-sxm");
    assert_eq!(v["best"]["priced"], true);
    let unpriced = v["unpriced"].as_array().unwrap();
    assert_eq!(unpriced.len(), 1, "{unpriced:?}");
    assert_eq!(unpriced[0]["gpu"], "h800-sxm");
    assert_eq!(unpriced[0]["priced"], false);
    assert!(unpriced[0]["usd_per_million_tokens"].is_null());
    let text = String::from_utf8(
        run(&[
            "plan",
            "--model",
            "llama-3-8b",
            "--gpu",
            "h100,h800-sxm",
            "--gpus",
            "1",
        ])
        .stdout,
    )
    .unwrap();
    assert!(text.contains("Not priced (1 device;"), "{text}");
    assert!(text.contains("unpriced  1 x h800-sxm"), "{text}");
    // sweep: a priced column, the cost empty (not NaN) where there is none
    let out = run(&[
        "sweep",
        "--model",
        "llama-3-8b",
        "--gpu",
        "h100,h800-sxm",
        "--batch",
        "1",
    ]);
    let csv = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert!(lines[0].ends_with(",error,priced"), "{}", lines[0]);
    assert!(lines[1].starts_with("llama-3-8b,h100-sxm") && lines[1].ends_with(",true"));
    assert!(lines[2].starts_with("llama-3-8b,h800-sxm") && lines[2].ends_with(",,1.0,,false"));
}

#[test]
fn a_price_file_and_a_provider_choose_the_price() {
    // two providers for h100-sxm: 8 devices at $16/h ($2.00 each) and 1 at $2.50
    let text = offer("h100", "alpha", 8, 16.0) + &offer("h100-sxm", "beta", 1, 2.5);
    let (_dir, path) = price_file(&text);
    let show = |extra: &[&str]| {
        let mut args = vec![
            "hardware",
            "show",
            "h100-sxm",
            "--json",
            "--price-file",
            &path,
        ];
        args.extend_from_slice(extra);
        json(&args)
    };
    let v = show(&[]);
    assert_eq!(v["price_usd_per_hour"], 2.0);
    assert_eq!(v["price_provider"], "alpha");
    assert_eq!(v["price_shape"], "8x");
    assert_eq!(v["price_source"], "https://example.org/alpha");
    let v = show(&["--provider", "BETA"]);
    assert_eq!(v["price_usd_per_hour"], 2.5);
    // the file replaced every other price of h100-sxm: with a provider it does not name,
    // the device is unpriced
    let v = show(&["--provider", "aws"]);
    assert!(v["price_usd_per_hour"].is_null(), "{v}");
    // a device the file does not name keeps its list price
    let v = json(&["hardware", "show", "h200", "--json", "--price-file", &path]);
    assert!(v["price_usd_per_hour"].as_f64().unwrap() > 0.0);
}

#[test]
fn buying_beside_renting_by_hand() {
    // h100-sxm (TDP 700 W) rented at $2.00/h and bought for $26,280
    let text = offer("h100-sxm", "alpha", 1, 2.0)
        + "[[purchase]]\ngpu = \"h100-sxm\"\nusd = 26280\nwhat = \"test\"\ndate = \"2026-12-01\"\nsource = \"https://example.org/buy\"\n";
    let (_dir, path) = price_file(&text);
    let base = [
        "plan",
        "--model",
        "llama-3-8b",
        "--gpu",
        "h100",
        "--gpus",
        "1,2",
        "--json",
        "--price-file",
        &path,
        "--own-life-years",
        "3",
        "--own-utilisation",
        "0.5",
        "--pue",
        "1.25",
        "--usd-per-kwh",
        "0.1",
    ];
    let v = json(&base);
    let b = &v["best"];
    assert_eq!(b["price_basis"], "rent");
    assert_eq!(b["gpus"], 1);
    // capital 26,280 / (3 x 8,760 h) = $1.00/h; per hour of use at 50%: $2.00, plus
    // power 0.7 kW x 1.25 x $0.10 = $0.0875: $2.0875 per device
    let own = b["own_usd_per_hour"].as_f64().unwrap();
    assert!((own - 2.0875).abs() < 1e-9, "{own}");
    // buying wins from 1.00 / (2.00 - 0.0875) = 52.3% utilisation up
    let u = b["breakeven_utilisation"].as_f64().unwrap();
    assert!((u - 1.0 / 1.9125).abs() < 1e-9, "{u}");
    assert_eq!(v["ownership"]["pue"], 1.25);
    // ranked by owning: the same device-hour, $2.0875
    let mut own_args = base.to_vec();
    own_args.extend_from_slice(&["--price-basis", "own"]);
    let v = json(&own_args);
    assert_eq!(v["best"]["price_basis"], "own");
    let h = v["best"]["usd_per_hour"].as_f64().unwrap();
    assert!(
        (h - 2.0875 * v["best"]["gpus"].as_f64().unwrap()).abs() < 1e-9,
        "{h}"
    );
}

#[test]
fn committed_use_prices_rank_a_plan_by_hand() {
    // the bundled book: GCP's a3-highgpu-8g (8 x H100) at $44,810.08066464 a month under
    // a one-year commitment and $28,370.99821392 under three, months of 730 h
    // (data/prices.toml): 44,810.08066464 / 730 / 8 = $7.672959 and
    // 28,370.99821392 / 730 / 8 = $4.858048 per device-hour
    let v = json(&["hardware", "show", "h100-sxm", "--json"]);
    let one = v["price_committed_1y_usd_per_hour"].as_f64().unwrap();
    let three = v["price_committed_3y_usd_per_hour"].as_f64().unwrap();
    assert!(
        (one - 44_810.080_664_64 / 730.0 / 8.0).abs() < 1e-5,
        "{one}"
    );
    assert!(
        (three - 28_370.998_213_92 / 730.0 / 8.0).abs() < 1e-5,
        "{three}"
    );
    assert_eq!(v["price_committed_1y_provider"], "gcp");
    // a price file's own terms: 8 x H100 at $16/h on demand, $12/h for a year, $8/h for
    // three: $1.50 and $1.00 per device-hour
    let text = offer("h100", "alpha", 8, 16.0).replace(
        "usd_per_hour = 16",
        "usd_per_hour = 16\ncommitted_1y_usd_per_hour = 12\ncommitted_3y_usd_per_hour = 8",
    );
    let (_dir, path) = price_file(&text);
    let words = |basis: &'static str| {
        let mut w = vec![
            "plan",
            "--model",
            "llama-3-8b",
            "--gpu",
            "h100,l40s",
            "--gpus",
            "1",
        ];
        w.extend(["--price-file", path.as_str(), "--price-basis", basis]);
        w
    };
    let plan = |basis| json(&[&words(basis)[..], &["--json"]].concat());
    let v = plan("committed-1y");
    let b = &v["best"];
    assert_eq!(b["gpu"], "h100-sxm");
    assert_eq!(b["price_basis"], "committed-1y");
    assert_eq!(b["price_provider"], "alpha");
    assert_eq!(b["price_date"], "2026-12-01");
    assert_eq!(b["usd_per_hour"], 1.5);
    let v3 = plan("committed-3y");
    assert_eq!(v3["best"]["usd_per_hour"], 1.0);
    // the same configuration costs a third less per token over three years than one
    let per_token = |v: &serde_json::Value| v["best"]["usd_per_million_tokens"].as_f64().unwrap();
    assert!((per_token(&v3) / per_token(&v) - 1.0 / 1.5).abs() < 1e-9);
    // l40s publishes no commitment: ranked by devices, marked unpriced, not dropped
    let unpriced = v["unpriced"].as_array().unwrap();
    assert!(
        unpriced
            .iter()
            .any(|u| u["gpu"] == "l40s" && u["priced"] == false),
        "{unpriced:?}"
    );
    let text = String::from_utf8(run(&words("committed-3y")).stdout).unwrap();
    assert!(
        text.contains("price: rented under a three-year commitment (--price-basis committed-3y) from alpha, read 2026-12-01"),
        "{text}"
    );
    // a commitment above the on-demand price is a typo: exit 2 naming the key
    let (_d, bad) = price_file(&offer("h100", "alpha", 8, 16.0).replace(
        "usd_per_hour = 16",
        "usd_per_hour = 16\ncommitted_1y_usd_per_hour = 20",
    ));
    one_line_error(
        &run(&["hardware", "--price-file", &bad]),
        &["committed_1y_usd_per_hour"],
    );
}

#[test]
fn bad_price_inputs_exit_2_naming_the_option() {
    let err = |args: &[&str]| {
        let out = run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let e = String::from_utf8(out.stderr).unwrap();
        assert_eq!(e.trim_end().lines().count(), 1, "{e}");
        e
    };
    let e = err(&["hardware", "--provider", "awz"]);
    assert!(e.contains("--provider") && e.contains("aws"), "{e}");
    let e = err(&["plan", "--model", "llama-3-8b", "--own-utilisation", "0"]);
    assert!(e.contains("--own-utilisation"), "{e}");
    let e = err(&["plan", "--model", "llama-3-8b", "--price-basis", "lease"]);
    assert!(e.contains("--price-basis"), "{e}");
    let (_d, path) = price_file(&offer("h1000", "alpha", 1, 2.0));
    let e = err(&["hardware", "--price-file", &path]);
    assert!(
        e.contains("prices.toml") && e.contains("h1000") && e.contains("h100"),
        "{e}"
    );
    let (_d, path) = price_file(&offer("h100", "alpha", 0, 2.0));
    let e = err(&["hardware", "--price-file", &path]);
    assert!(e.contains("gpus"), "{e}");
}

#[test]
fn a_rate_plan_without_prices_takes_the_smallest_fleet() {
    // h800-sxm has no price: the best is the layout whose replicas need the fewest
    // devices in all, not the most tokens/s of one replica per device
    let v = json(&[
        "plan",
        "--model",
        "llama-3-8b",
        "--gpu",
        "h800-sxm",
        "--gpus",
        "1,2,4",
        "--rate",
        "40",
        "--p99-tpot-ms",
        "40",
        "--requests",
        "60",
        "--json",
    ]);
    assert_eq!(v["best_by"], "fleet_gpus");
    let fleet =
        |e: &serde_json::Value| e["gpus"].as_u64().unwrap() * e["replicas"].as_u64().unwrap();
    let best = fleet(&v["best"]);
    for e in v["pareto"].as_array().unwrap() {
        assert!(best <= fleet(e), "{best} > {} of {e}", fleet(e));
    }
}
