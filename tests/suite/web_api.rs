//! `ridgeline serve`'s API against the command line: the same words give the same
//! bytes (JSON and charts), bad input is 400 naming the flag, options that read or
//! write files are refused (and no file appears), unknown routes are 404; and the HTTP
//! layer's bounds (head size, body size, time-out, methods) over a real socket.

use ridgeline::web::{Request, Response, Server, handle};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_ridgeline");
const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// What the binary prints on stdout for `args` (which must succeed).
fn cli(args: &[&str]) -> Vec<u8> {
    let out = Command::new(BIN)
        .args(args)
        .current_dir(ROOT)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "ridgeline {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

fn get(target: &str) -> Response {
    handle(&Request::get(target))
}

/// The `error` of a JSON error answer with `status`.
fn error(r: &Response, status: u16) -> String {
    assert_eq!(r.status, status, "{}", r.text());
    assert_eq!(r.content_type, "application/json");
    let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    v["error"].as_str().unwrap().to_string()
}

fn scratch(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ridgeline-web-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn api_json_is_the_cli_json_byte_for_byte() {
    let cases: [(&str, &[&str]); 11] = [
        (
            "/api/predict?model=llama-3-8b&gpu=h100&batch=8",
            &[
                "predict",
                "--model",
                "llama-3-8b",
                "--gpu",
                "h100",
                "--batch",
                "8",
                "--json",
            ],
        ),
        (
            "/api/predict?model=llama-2-70b&gpu=a100&gpus=4&weights=fp8&kv=fp8&engine=vllm&no-flash=true",
            &[
                "predict",
                "--model",
                "llama-2-70b",
                "--gpu",
                "a100",
                "--gpus",
                "4",
                "--weights",
                "fp8",
                "--kv",
                "fp8",
                "--engine",
                "vllm",
                "--no-flash",
                "--json",
            ],
        ),
        (
            "/api/predict?model=deepseek-v3&gpu=h200&gpus=8&ep=8&spec_k=2&spec_accept=0.8&flash",
            &[
                "predict",
                "--model",
                "deepseek-v3",
                "--gpu",
                "h200",
                "--gpus",
                "8",
                "--ep",
                "8",
                "--spec-k",
                "2",
                "--spec-accept",
                "0.8",
                "--flash",
                "--json",
            ],
        ),
        (
            "/api/explain?model=mixtral-8x7b&gpu=rtx-4090&weights=q4_k_m",
            &[
                "explain",
                "--model",
                "mixtral-8x7b",
                "--gpu",
                "rtx-4090",
                "--weights",
                "q4_k_m",
                "--json",
            ],
        ),
        (
            "/api/train?model=llama-2-7b&gpu=a100&gpus=8&zero=3&micro-batch=4",
            &[
                "train",
                "--model",
                "llama-2-7b",
                "--gpu",
                "a100",
                "--gpus",
                "8",
                "--zero",
                "3",
                "--micro-batch",
                "4",
                "--json",
            ],
        ),
        (
            "/api/sweep?model=llama-3-8b&gpu=h100,l4&batch=1..8:x2",
            &[
                "sweep",
                "--model",
                "llama-3-8b",
                "--gpu",
                "h100,l4",
                "--batch",
                "1..8:x2",
                "--json",
            ],
        ),
        (
            "/api/simulate?model=llama-3-8b&gpu=h100&rate=2&requests=40&seed=3",
            &[
                "simulate",
                "--model",
                "llama-3-8b",
                "--gpu",
                "h100",
                "--rate",
                "2",
                "--requests",
                "40",
                "--seed",
                "3",
                "--json",
            ],
        ),
        ("/api/models", &["models", "--json"]),
        (
            "/api/hardware?id=h100",
            &["hardware", "show", "h100", "--json"],
        ),
        ("/api/instances", &["instances", "--json"]),
        ("/api/kernels", &["kernels", "--json"]),
    ];
    for (target, args) in cases {
        let r = get(target);
        assert_eq!(r.status, 200, "{target}: {}", r.text());
        assert_eq!(r.content_type, "application/json");
        assert!(r.body == cli(args), "{target}: not the CLI's bytes");
    }
    // the text route prints what the CLI prints without --json
    let r = get("/api/predict.txt?model=llama-3-8b&gpu=l4");
    assert_eq!(r.status, 200);
    assert_eq!(
        r.body,
        cli(&["predict", "--model", "llama-3-8b", "--gpu", "l4"])
    );
}

#[test]
fn charts_are_the_files_the_cli_writes() {
    let dir = scratch("charts");
    let file = |name: &str| dir.join(name).display().to_string();
    let read = |name: &str| std::fs::read(dir.join(name)).unwrap();
    let base = ["--model", "llama-3-8b", "--gpu", "h100", "--batch", "4"];
    cli(&[&["predict"], &base[..], &["--svg", &file("t.svg")]].concat());
    cli(&[
        &["predict"],
        &base[..],
        &["--svg", &file("m.svg"), "--chart", "memory"],
    ]
    .concat());
    let q = "model=llama-3-8b&gpu=h100&batch=4";
    assert_eq!(get(&format!("/api/throughput.svg?{q}")).body, read("t.svg"));
    assert_eq!(get(&format!("/api/memory.svg?{q}")).body, read("m.svg"));
    // the roofline of several devices: `roofline --out -`
    let r = get("/api/roofline.svg?model=llama-3-8b&gpu=h100,a100&gpus=2&links=true");
    assert_eq!(r.content_type, "image/svg+xml");
    let roof = cli(&[
        "roofline",
        "--model",
        "llama-3-8b",
        "--gpu",
        "h100,a100",
        "--gpus",
        "2",
        "--links",
        "--out",
        "-",
    ]);
    assert!(r.body == roof, "roofline.svg differs from roofline --out -");
    cli(&[
        "train",
        "--model",
        "llama-2-7b",
        "--gpu",
        "a100",
        "--gpus",
        "8",
        "--svg",
        &file("z.svg"),
    ]);
    assert_eq!(
        get("/api/zero.svg?model=llama-2-7b&gpu=a100&gpus=8").body,
        read("z.svg")
    );
    let sim = [
        "--model",
        "llama-3-8b",
        "--gpu",
        "h100",
        "--rate",
        "2,4",
        "--requests",
        "30",
    ];
    cli(&[&["simulate"], &sim[..], &["--svg", &file("s.svg")]].concat());
    let r = get("/api/serving.svg?model=llama-3-8b&gpu=h100&rate=2,4&requests=30");
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.body, read("s.svg"));
    // a chart the options of another command do not describe
    let e = error(&get("/api/memory.svg?model=llama-3-8b&gpu=h100,a100"), 400);
    assert!(e.contains("--gpu") && e.contains("one device"), "{e}");
}

#[test]
fn bad_input_is_400_naming_the_flag() {
    let cases = [
        ("/api/predict?model=llama-3-8b&gpu=h100&batch=0", "--batch"),
        ("/api/predict?model=llama-3-8b&gpu=h100&gen=abc", "--gen"),
        (
            "/api/predict?model=llama-3-8b&gpu=h10",
            "unknown hardware id 'h10'; did you mean",
        ),
        ("/api/predict?model=llama-3-8b&gpu=h100&weights=q9", "q9"),
        (
            "/api/predict?model=llama-3-8b&gpu=h100&flash=maybe",
            "--flash",
        ),
        (
            "/api/predict?model=llama-3-8b&gpu=h100&flsh=1",
            "unknown option 'flsh'; did you mean flash",
        ),
        (
            "/api/predict?model=lama-3-8b&gpu=h100",
            "unknown model id 'lama-3-8b'; did you mean llama-3-8b",
        ),
        ("/api/predict?gpu=h100", "--model"),
        (
            "/api/predict?model=llama-3-8b&gpu=h100&spec-k=4",
            "--spec-accept",
        ),
        ("/api/train?model=llama-2-7b&gpu=a100&gpus=8&tp=3", "--tp"),
        (
            "/api/simulate?model=llama-3-8b&gpu=h100&rate=2&requests=100001",
            "--requests",
        ),
    ];
    for (target, needle) in cases {
        let e = error(&get(target), 400);
        assert!(e.contains(needle), "{target}: '{e}' does not name {needle}");
        // and it is the command line's message where the command line has one
    }
    let e = error(&get("/api/predict?model=llama-3-8b&gpu=h100&batch=0"), 400);
    let out = Command::new(BIN)
        .args([
            "predict",
            "--model",
            "llama-3-8b",
            "--gpu",
            "h100",
            "--batch",
            "0",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        format!("error: {e}\n"),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn options_naming_files_are_refused_and_no_file_appears() {
    let dir = scratch("refused");
    let target = dir.join("x");
    let p = target.display().to_string();
    for (route, flag) in [
        ("predict", "out"),
        ("predict", "svg"),
        ("predict", "html"),
        ("explain", "html"),
        ("sweep", "out"),
        ("predict", "hardware-file"),
        ("predict", "engine_file"),
        ("train", "instances-file"),
        ("simulate", "trace"),
        ("kernels", "kernels"),
        ("predict", "save"),
        ("predict", "measurements"),
        ("predict", "markdown"),
        ("sweep", "csv"),
        ("predict", "help"),
    ] {
        // (kernels takes no model and no device)
        let q = match route {
            "kernels" => format!("/api/{route}?{flag}={p}"),
            _ => format!("/api/{route}?model=llama-3-8b&gpu=h100&{flag}={p}"),
        };
        let e = error(&get(&q), 400);
        let dashed = flag.replace('_', "-");
        assert!(e.contains(&format!("--{dashed}")), "{q}: {e}");
        assert!(!target.exists(), "{q} made a file");
    }
    // a model or draft is a bundled id, never a path, even to a valid config.json
    let config = Path::new(ROOT).join("examples/data/my-model/config.json");
    for name in ["model", "draft"] {
        let q = format!(
            "/api/predict?model=llama-3-8b&gpu=h100&spec-k=2&spec-accept=0.5&{name}={}",
            config.display()
        );
        let e = error(&get(&q), 400);
        assert!(e.contains("unknown model id"), "{q}: {e}");
        assert!(e.starts_with(&format!("invalid --{name}:")), "{q}: {e}");
    }
    // every option of the API's commands whose value is a file is refused, named
    use clap::CommandFactory;
    let root = ridgeline::cli::Cli::command();
    let mut files = 0;
    for command in ridgeline::web::api::COMMANDS {
        let sub = root.find_subcommand(command).unwrap();
        for arg in sub.get_arguments().chain(root.get_arguments()) {
            let Some(long) = arg.get_long() else { continue };
            if !ridgeline::web::api::names_a_file(arg) {
                continue;
            }
            files += 1;
            let q = format!("/api/{command}?{long}={p}&model=llama-3-8b&gpu=h100");
            let e = error(&get(&q), 400);
            assert!(e.contains(&format!("--{long}")), "{q}: {e}");
            assert!(!target.exists(), "{q} made a file");
        }
    }
    // --hardware-file, --engine-file, --instances-file on each of 10 commands, and
    // at least predict's --svg and --html and the kernels' folder
    assert!(files >= 3 * 10 + 3, "{files} file options found");
    // the calibration reads a file: no route
    error(&get("/api/calibrate?measurements=/etc/passwd"), 404);
}

#[test]
fn unknown_routes_are_404_and_other_methods_405() {
    for path in [
        "/nope",
        "/api/nope",
        "/api/calibrate",
        "/api/serve",
        "/api/nope.svg",
        "/api/predict.json",
        "/../Cargo.toml",
        "/%2e%2e/Cargo.toml",
        "/web/app.js",
        "/src/lib.rs",
        "//etc/passwd",
        "/app.js/",
    ] {
        let r = get(path);
        assert_eq!(r.status, 404, "{path}");
        assert!(
            error(&r, 404).contains(path.trim_start_matches("/api/")),
            "{path}"
        );
    }
    let r = handle(&Request::new("DELETE", "/api/predict", Vec::new()));
    assert_eq!(
        error(&r, 405),
        "DELETE is not served here; use GET, HEAD, POST"
    );
    assert!(
        r.headers
            .contains(&("Allow", "GET, HEAD, POST".to_string()))
    );
    error(&handle(&Request::new("POST", "/", Vec::new())), 405);
}

#[test]
fn a_posted_config_is_a_model() {
    let text = std::fs::read_to_string(Path::new(ROOT).join("examples/data/my-model/config.json"))
        .unwrap();
    let r = handle(&Request::new(
        "POST",
        "/api/predict?gpu=l40s&batch=2",
        text.clone().into_bytes(),
    ));
    assert_eq!(r.status, 200, "{}", r.text());
    let mut api: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    let mut line: serde_json::Value = serde_json::from_slice(&cli(&[
        "predict",
        "--model",
        "examples/data/my-model/config.json",
        "--gpu",
        "l40s",
        "--batch",
        "2",
        "--json",
    ]))
    .unwrap();
    // the CLI names the model after its folder; a posted document is `custom`
    assert_eq!(api["model"]["id"], "custom");
    assert_eq!(line["model"]["id"], "my-model");
    for v in [&mut api, &mut line] {
        v["model"]["id"] = "x".into();
        v["model"]["name"] = "x".into();
    }
    assert!(
        api == line,
        "the posted model predicts otherwise than the CLI's"
    );
    // a chart of the posted model; a broken document names itself
    let r = handle(&Request::new(
        "POST",
        "/api/roofline.svg?gpu=l40s",
        text.into_bytes(),
    ));
    assert_eq!(r.status, 200);
    let e = error(
        &handle(&Request::new(
            "POST",
            "/api/predict?gpu=l40s",
            b"{\"hidden_size\": ".to_vec(),
        )),
        400,
    );
    assert!(
        e.starts_with("the posted config.json: not valid JSON"),
        "{e}"
    );
}

#[test]
fn the_page_is_in_the_binary_and_loads_nothing_from_elsewhere() {
    let page = get("/");
    assert_eq!(page.status, 200);
    assert_eq!(page.content_type, "text/html; charset=utf-8");
    assert_eq!(page.body, get("/index.html").body);
    let html = page.text();
    assert!(html.contains("<script src=\"/app.js\""));
    assert!(html.contains("href=\"/style.css\""));
    let js = get("/app.js");
    let css = get("/style.css");
    assert_eq!(js.content_type, "text/javascript; charset=utf-8");
    assert_eq!(css.content_type, "text/css; charset=utf-8");
    for (name, text) in [
        ("index.html", html),
        ("app.js", js.text()),
        ("style.css", css.text()),
    ] {
        for outside in [
            "http://",
            "https://",
            "@import",
            "url(",
            "src=\"//",
            "href=\"//",
        ] {
            assert!(
                !text.contains(outside),
                "{name} refers to something outside ({outside})"
            );
        }
    }
}

#[test]
fn meta_lists_the_menus_and_the_chart_colours() {
    let r = get("/api/meta");
    let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(v["version"], env!("CARGO_PKG_VERSION"));
    assert!(v["engines"].as_array().unwrap().iter().any(|e| e == "vllm"));
    assert!(
        v["formats"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f == "q4_k_m")
    );
    // Okabe-Ito: devices black, blue, vermillion; memory weights blue, KV orange
    assert_eq!(v["series_colors"][0], "#000000");
    assert_eq!(v["series_colors"][1], "#0072b2");
    assert_eq!(v["series_colors"][2], "#d55e00");
    assert_eq!(v["segment_colors"][0], "#0072b2");
    assert_eq!(v["segment_colors"][1], "#e69f00");
    // every key is documented in the reference's /api/meta table
    let doc = include_str!("../../docs/reference.md");
    let table = doc
        .split("### /api/meta")
        .nth(1)
        .unwrap()
        .split("\n## ")
        .next()
        .unwrap();
    for key in v.as_object().unwrap().keys() {
        assert!(
            table.contains(&format!("| `{key}` |")),
            "/api/meta key {key} undocumented"
        );
    }
}

// ---------------------------------------------------------------------------------
// Over a socket

/// The connections the socket tests' servers take at once.
const IDLE_MAX: usize = 64;

fn start(timeout: Duration) -> SocketAddr {
    crate::support::net::serve(
        Server::bind("127.0.0.1", 0)
            .unwrap()
            .request_timeout(timeout)
            .max_connections(IDLE_MAX),
    )
}

/// [`exchange`] with a 30 s wait.
fn exchange(addr: SocketAddr, raw: &[u8]) -> String {
    crate::support::net::exchange(addr, raw, Duration::from_secs(30))
}

#[test]
fn the_socket_layer_is_bounded() {
    let addr = start(Duration::from_millis(400));
    let ok = exchange(
        addr,
        b"GET /api/predict?model=llama-3-8b&gpu=h100 HTTP/1.1\r\nHost: x\r\n\r\n",
    );
    assert!(ok.starts_with("HTTP/1.1 200 OK\r\n"), "{ok}");
    assert!(ok.contains("content-type: application/json\r\n"));
    assert!(ok.contains("connection: close\r\n"));
    assert!(ok.contains("content-security-policy: default-src 'self'"));
    let body = ok.split_once("\r\n\r\n").unwrap().1;
    assert_eq!(
        body.as_bytes(),
        cli(&[
            "predict",
            "--model",
            "llama-3-8b",
            "--gpu",
            "h100",
            "--json"
        ])
    );
    // HEAD: the head only
    let head = exchange(addr, b"HEAD / HTTP/1.1\r\n\r\n");
    assert!(
        head.starts_with("HTTP/1.1 200 OK") && head.ends_with("\r\n\r\n"),
        "{head}"
    );
    // a head over 16 KiB
    let big = format!("GET / HTTP/1.1\r\nX-Big: {}\r\n\r\n", "a".repeat(20_000));
    assert!(exchange(addr, big.as_bytes()).starts_with("HTTP/1.1 431 "));
    // a body over 1 MiB is refused before it is read
    let huge = b"POST /api/predict HTTP/1.1\r\nContent-Length: 2000000\r\n\r\n{";
    assert!(exchange(addr, huge).starts_with("HTTP/1.1 413 "));
    // a chunked body over 1 MiB is cut off at the limit
    let mut chunked = b"POST /api/predict HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    for _ in 0..3 {
        chunked.extend_from_slice(format!("80000\r\n{}\r\n", " ".repeat(0x80000)).as_bytes());
    }
    chunked.extend_from_slice(b"0\r\n\r\n");
    assert!(exchange(addr, &chunked).starts_with("HTTP/1.1 413 "));
    // garbage
    assert!(exchange(addr, b"\x00\x01 nonsense\r\n\r\n").starts_with("HTTP/1.1 400 "));
    // a client that stops sending its head is dropped after the time-out, unanswered
    let t = std::time::Instant::now();
    let slow = exchange(addr, b"GET / HTTP/1.1\r\nHost: x\r\n");
    assert_eq!(slow, "");
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    // a body promised and not sent
    let short = exchange(
        addr,
        b"POST /api/predict?gpu=l4 HTTP/1.1\r\nContent-Length: 50\r\n\r\n{}",
    );
    assert!(short.starts_with("HTTP/1.1 408 "), "{short}");
}

#[test]
fn concurrent_requests_all_get_their_own_answer() {
    let addr = start(Duration::from_secs(10));
    let batches = ["1", "2", "4", "8", "16", "32", "64", "128"];
    let answers: Vec<(String, String)> = std::thread::scope(|s| {
        let handles: Vec<_> = batches
            .iter()
            .map(|b| {
                s.spawn(move || {
                    let raw = format!(
                        "GET /api/predict?model=llama-3-8b&gpu=a100&batch={b} HTTP/1.1\r\n\r\n"
                    );
                    (b.to_string(), exchange(addr, raw.as_bytes()))
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (b, answer) in answers {
        assert!(answer.starts_with("HTTP/1.1 200 "), "batch {b}: {answer}");
        let body = answer.split_once("\r\n\r\n").unwrap().1;
        let v: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(v["config"]["batch"].to_string(), b);
    }
}

#[test]
fn idle_connections_hold_up_no_one_and_are_bounded() {
    // clients that connect and send nothing (a browser's preconnections) keep their
    // connection for the whole minute the server allows; others are still answered
    let addr = start(Duration::from_secs(60));
    let mut idle: Vec<TcpStream> = (0..8).map(|_| TcpStream::connect(addr).unwrap()).collect();
    let answer = |timeout: Duration| {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(timeout)).unwrap();
        s.write_all(b"GET /api/meta HTTP/1.1\r\n\r\n").unwrap();
        let mut out = Vec::new();
        let _ = s.read_to_end(&mut out);
        String::from_utf8_lossy(&out).into_owned()
    };
    // well inside the minute the idle ones may wait
    let ok = answer(Duration::from_secs(20));
    assert!(ok.starts_with("HTTP/1.1 200 "), "{ok}");
    // with IDLE_MAX open, the next is told the server is busy
    let max = IDLE_MAX;
    idle.extend((8..max).map(|_| TcpStream::connect(addr).unwrap()));
    // the server counts a connection once it accepts it: wait until all are
    // asks until the answer starts with `status` or 20 s have passed; the last answer
    let answer_until = |status: &str| {
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        loop {
            let r = answer(Duration::from_secs(20));
            if r.starts_with(status) || std::time::Instant::now() > deadline {
                break r;
            }
        }
    };
    let busy = answer_until("HTTP/1.1 503 ");
    assert!(busy.starts_with("HTTP/1.1 503 "), "{busy}");
    assert!(busy.contains("busy"), "{busy}");
    // one closes: a place is free again
    idle.truncate(max - 1);
    let again = answer_until("HTTP/1.1 200 ");
    assert!(again.starts_with("HTTP/1.1 200 "), "{again}");
}
