//! Bounded, cancellable work: the API refuses work over its budget up front (413,
//! naming the parameter) and names the parameter of every 400; a computation stops at
//! its deadline (503 with Retry-After), when its client goes away, and on Ctrl-C (the
//! CLI exits 130 and writes no file); a loaded server answers every cheap request
//! while slow clients hang on; long commands draw a progress bar on a terminal.

use crate::support::net::{exchange, on_tty, serve};
use ridgeline::web::{Request, Response, Server, handle};
use ridgeline::work::Work;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_ridgeline");

/// `(status, error, param)` of a JSON answer.
fn parts(r: &Response) -> (u16, String, String) {
    let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    let s = |k: &str| v[k].as_str().unwrap_or_default().to_string();
    (r.status, s("error"), s("param"))
}

/// The answer to `target` under a budget of `units` (the server's per-request work).
fn under_budget(units: f64, target: &str) -> Response {
    Work::bounded(Duration::from_secs(60), Some(units)).run(|| handle(&Request::get(target)))
}

#[test]
fn work_over_the_budget_is_refused_up_front_naming_the_parameter() {
    // a sweep of 2000 x 100 = 200000 configurations against a budget of 10000: the
    // longest list (batch, 2000 values) is named
    let t = Instant::now();
    let (status, e, param) = parts(&under_budget(
        1e4,
        "/api/sweep?model=llama-3-8b&gpu=h100&batch=1..2000&prompt=1..100",
    ));
    assert_eq!((status, param.as_str()), (413, "batch"), "{e}");
    assert!(
        e.contains("200000 configurations") && e.contains("10000"),
        "{e}"
    );
    // 20000 requests x 1 rate = 20000 simulated requests
    let (status, e, param) = parts(&under_budget(
        1e4,
        "/api/simulate?model=llama-3-8b&gpu=h100&rate=5&requests=20000",
    ));
    assert_eq!((status, param.as_str()), (413, "requests"), "{e}");
    assert!(e.contains("20000 simulated requests"), "{e}");
    // 100 requests x 200 rates = 20000: the rates weigh more
    let rates: Vec<String> = (1..=200).map(|r| r.to_string()).collect();
    let target = format!(
        "/api/simulate?model=llama-3-8b&gpu=h100&requests=100&rate={}",
        rates.join(",")
    );
    // (the CLI caps a rate list at 100 values: that refusal names rate too)
    let (status, _, param) = parts(&under_budget(1e4, &target));
    assert_eq!(param, "rate");
    assert!(status == 413 || status == 400);
    // a rate plan: layouts x 1000 requests x 16 probes > 10000 at any layout count
    let (status, e, param) = parts(&under_budget(
        1e4,
        "/api/plan?model=llama-3-8b&gpu=h100&rate=5&requests=1000",
    ));
    assert_eq!((status, param.as_str()), (413, "requests"), "{e}");
    // refused before any work: all four in well under the time one would take
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    // within the budget the same request is answered
    let r = under_budget(
        1e4,
        "/api/simulate?model=llama-3-8b&gpu=h100&rate=5&requests=200",
    );
    assert_eq!(r.status, 200, "{}", r.text());
}

#[test]
fn every_bad_request_names_its_parameter() {
    for (target, param) in [
        ("/api/predict?model=llama-3-8b&gpu=h1000", "gpu"),
        ("/api/predict?model=llama-3-9b&gpu=h100", "model"),
        ("/api/predict?model=llama-3-8b&gpu=h100&batch=8.5", "batch"),
        ("/api/predict?model=llama-3-8b&gpu=h100&batch=-1", "batch"),
        (
            "/api/predict?model=llama-3-8b&gpu=h100&engine=vlm",
            "engine",
        ),
        ("/api/predict?model=llama-3-8b&gpu=h100&batchh=8", "batchh"),
        ("/api/predict?model=llama-3-8b&gpu=h100&out=x.json", "out"),
        ("/api/simulate?model=llama-3-8b&gpu=h100&rate=1e-12", "rate"),
        (
            "/api/plan?model=llama-3-8b&gpu=h100&p99_ttft_ms=abc",
            "p99-ttft-ms",
        ),
    ] {
        let r = handle(&Request::get(target));
        let (status, e, p) = parts(&r);
        assert_eq!((status, p.as_str()), (400, param), "{target}: {e}");
    }
    // a posted document that does not parse
    let r = handle(&Request::new(
        "POST",
        "/api/predict?gpu=h100",
        b"{not json".to_vec(),
    ));
    let (status, e, p) = parts(&r);
    assert_eq!((status, p.as_str()), (400, "body"), "{e}");
}

// ---------------------------------------------------------------------------------
// Over a socket

fn get(target: &str) -> Vec<u8> {
    format!("GET {target} HTTP/1.1\r\nHost: x\r\n\r\n").into_bytes()
}

/// About 100000 x 100 = 1e7 simulated requests (the whole default budget): many
/// seconds of work on any machine.
const LONG: &str = "/api/simulate?model=llama-3-8b&gpu=h100&requests=100000&rate=1..100";

#[test]
fn a_computation_stops_at_its_deadline_and_when_its_client_goes() {
    let addr = serve(
        Server::bind("127.0.0.1", 0)
            .unwrap()
            .deadline(Duration::from_millis(500))
            .workers(1),
    );
    let t = Instant::now();
    let r = exchange(addr, &get(LONG), Duration::from_secs(30));
    assert!(r.starts_with("HTTP/1.1 503 "), "{r}");
    assert!(r.contains("retry-after: 2"), "{r}");
    assert!(r.contains("stopped at its deadline of 0.5 s"), "{r}");
    // stopped at the deadline's next check, not after the whole computation
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());

    // one worker, a long deadline: a client that sends the long request and goes away
    // frees the worker for the next one
    let addr = serve(
        Server::bind("127.0.0.1", 0)
            .unwrap()
            .deadline(Duration::from_secs(120))
            .workers(1),
    );
    {
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(&get(LONG)).unwrap();
        std::thread::sleep(Duration::from_millis(300));
        // dropped: the connection closes
    }
    let t = Instant::now();
    let r = exchange(
        addr,
        &get("/api/predict?model=llama-3-8b&gpu=h100"),
        Duration::from_secs(60),
    );
    assert!(r.starts_with("HTTP/1.1 200 "), "{}", &r[..r.len().min(300)]);
    assert!(t.elapsed() < Duration::from_secs(8), "{:?}", t.elapsed());
}

#[test]
fn a_loaded_server_answers_every_cheap_request_while_slow_clients_hang_on() {
    // 2 workers, each computation at most 2 s; 100 slow-loris connections (a head
    // sent a byte at a time, never finished) and 200 requests at once: half cheap
    // (the page, the menus, the device list), half expensive (simulations)
    let addr = serve(
        Server::bind("127.0.0.1", 0)
            .unwrap()
            .deadline(Duration::from_secs(2))
            .request_timeout(Duration::from_secs(20))
            .workers(2),
    );
    let slow: Vec<TcpStream> = (0..100)
        .map(|_| {
            let mut s = TcpStream::connect(addr).unwrap();
            s.write_all(b"GET / HTTP/1.1\r\nX-Slow: ").unwrap();
            s
        })
        .collect();
    let cheap = ["/", "/api/meta", "/api/hardware", "/api/models"];
    let t = Instant::now();
    let answers: Vec<(bool, String, Duration)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..200)
            .map(|i| {
                s.spawn(move || {
                    let is_cheap = i % 2 == 0;
                    let target = if is_cheap {
                        cheap[i / 2 % cheap.len()].to_string()
                    } else {
                        format!(
                            "/api/simulate?model=llama-3-8b&gpu=h100&requests=20000&rate={}",
                            1 + i % 7
                        )
                    };
                    let start = Instant::now();
                    let r = exchange(addr, &get(&target), Duration::from_secs(60));
                    (is_cheap, r, start.elapsed())
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let (mut ok, mut refused) = (0, 0);
    for (is_cheap, r, took) in &answers {
        let head = &r[..r.len().min(200)];
        if *is_cheap {
            assert!(r.starts_with("HTTP/1.1 200 "), "cheap: {head}");
        } else if r.starts_with("HTTP/1.1 200 ") {
            ok += 1;
        } else {
            assert!(r.starts_with("HTTP/1.1 503 "), "expensive: {head}");
            assert!(r.contains("retry-after: "), "{head}");
            refused += 1;
        }
        // answered or refused within the queue's wait and the deadline, with room
        assert!(*took < Duration::from_secs(20), "{took:?}: {head}");
    }
    assert_eq!(ok + refused, 100);
    assert!(t.elapsed() < Duration::from_secs(30), "{:?}", t.elapsed());
    // the slow clients still hold their connections, and a new client is served
    assert_eq!(slow.len(), 100);
    let r = exchange(addr, &get("/api/meta"), Duration::from_secs(10));
    assert!(r.starts_with("HTTP/1.1 200 "), "{r}");
}

// ---------------------------------------------------------------------------------
// The command line

#[test]
fn ctrl_c_stops_a_long_run_with_130_and_writes_no_file() {
    let dir = std::env::temp_dir().join(format!("ridgeline-ctrlc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (name, args) in [
        (
            "rows.csv",
            vec![
                "sweep",
                "--model",
                "llama-3-8b",
                "--gpu",
                "h100",
                "--batch",
                "1..20000",
                "--prompt",
                "1..3000",
                "--out",
            ],
        ),
        (
            "serving.svg",
            vec![
                "simulate",
                "--model",
                "llama-3-8b",
                "--gpu",
                "h100",
                "--requests",
                "1000000",
                "--rate",
                "1..50",
                "--svg",
            ],
        ),
    ] {
        let out = dir.join(name);
        std::fs::write(&out, "old").unwrap();
        let mut child = Command::new(BIN)
            .args(&args)
            .arg(&out)
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(1500));
        let t = Instant::now();
        // SIGINT, as Ctrl-C sends
        let kill = Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(kill.success());
        let status = child.wait().unwrap();
        let mut err = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        assert_eq!(status.code(), Some(130), "{args:?}: {err}");
        assert!(err.contains("interrupted"), "{err}");
        assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
        // the old file stands; no temporary file is left
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "old");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1, "{args:?}");
        std::fs::remove_file(&out).unwrap();
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn long_commands_draw_a_progress_bar_on_a_terminal() {
    // `script` gives the command a terminal for stderr
    let simulate = format!(
        "{BIN} simulate --model llama-3-8b --gpu h100 --requests 50000 --rate 1..20 > /dev/null"
    );
    let drawn = on_tty(&simulate);
    assert!(drawn.contains("simulate: ["), "no bar drawn: {drawn:?}");
    // counted in simulated requests: 50000 x 20 in all
    assert!(drawn.contains("/1,000,000"), "{drawn:?}");
    assert!(!on_tty(&format!("{simulate} --quiet")).contains("simulate: ["));
    // not a terminal: nothing on stderr
    let piped = Command::new(BIN)
        .args([
            "simulate",
            "--model",
            "llama-3-8b",
            "--gpu",
            "h100",
            "--requests",
            "50000",
            "--rate",
            "1..20",
        ])
        .output()
        .unwrap();
    assert!(piped.status.success());
    assert!(!String::from_utf8_lossy(&piped.stderr).contains("simulate: ["));
}
