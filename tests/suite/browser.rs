//! The page in a real browser: Debian's headless Chromium driven over WebDriver
//! (`chromedriver`, package `chromium-driver`) against the server running in this
//! process. It loads with no console error, changing the device (clicking an option)
//! updates the numbers and the chart, typing is debounced (one request per device for
//! two keystrokes), the downloads ask for the view's JSON and SVG, the chart tabs move
//! with the arrow keys and ask for the chart alone, the URL carries the state and a
//! reload restores it, a bad value shows the server's message
//! on the field it names; screenshots at 1400x1000 land in `target/screenshots/`
//! (or `$RIDGELINE_SCREENSHOTS`): `page.png` (three devices, the roofline),
//! `page-throughput.png`, `page-memory.png`, for a person to look at.
//!
//! Needs `chromium` and `chromedriver` on the PATH (`apt-get install chromium
//! chromium-driver`; `.ci/run` installs them). Without them the test fails, saying so,
//! unless `RIDGELINE_SKIP_BROWSER=1`.

use base64::Engine as _;
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A program on the PATH.
fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    })
}

/// One HTTP/1.1 exchange with a JSON body; the answer's JSON.
fn http_json(addr: SocketAddr, method: &str, path: &str, body: Option<&Value>) -> Value {
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    let mut s = TcpStream::connect(addr).expect("chromedriver listens");
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).unwrap();
    // chromedriver keeps the connection open despite `Connection: close`: read the
    // head, then the body's Content-Length (or chunks up to the last one)
    let mut out = Vec::new();
    let mut chunk = [0u8; 65536];
    let body_of = |out: &[u8]| -> Option<String> {
        let text = String::from_utf8_lossy(out);
        let (head, rest) = text.split_once("\r\n\r\n")?;
        let head = head.to_ascii_lowercase();
        if head.contains("transfer-encoding: chunked") {
            return rest.ends_with("0\r\n\r\n").then(|| dechunk(rest));
        }
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .and_then(|v| v.trim().parse().ok())?;
        (rest.len() >= length).then(|| rest[..length].to_string())
    };
    let rest = loop {
        if let Some(body) = body_of(&out) {
            break body;
        }
        let n = s.read(&mut chunk).unwrap();
        assert!(n > 0, "{method} {path}: the connection closed mid-answer");
        out.extend_from_slice(&chunk[..n]);
    };
    serde_json::from_str(&rest).unwrap_or_else(|e| panic!("{method} {path}: {e}: {rest}"))
}

/// A chunked body joined.
fn dechunk(mut rest: &str) -> String {
    let mut out = String::new();
    while let Some((size, tail)) = rest.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 {
            break;
        }
        out.push_str(&tail[..n]);
        rest = &tail[n + 2..];
    }
    out
}

/// A chromedriver process, ended when it drops (also when the test fails before a
/// session exists).
struct Driver(Child);

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A WebDriver session of a chromedriver started for it; both end when it drops.
struct Browser {
    addr: SocketAddr,
    session: String,
    // dropped after the session is deleted
    _driver: Driver,
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = TcpStream::connect(self.addr).map(|_| {
            http_json(
                self.addr,
                "DELETE",
                &format!("/session/{}", self.session),
                None,
            )
        });
    }
}

impl Browser {
    fn start(chromium: &Path, chromedriver: &Path) -> Browser {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let driver = Driver(
            Command::new(chromedriver)
                .arg(format!("--port={port}"))
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("chromedriver starts"),
        );
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect(addr).is_err() {
            assert!(
                Instant::now() < deadline,
                "chromedriver did not listen within 20 s"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": chromium,
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                         "--disable-dev-shm-usage", "--window-size=1400,1000",
                         "--force-device-scale-factor=1"],
            },
            "goog:loggingPrefs": {"browser": "ALL"},
        }}});
        let v = http_json(addr, "POST", "/session", Some(&caps));
        let session = v["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no WebDriver session: {v}"))
            .to_string();
        let b = Browser {
            addr,
            session,
            _driver: driver,
        };
        // the viewport itself 1400 x 1000 (the window has browser chrome around it)
        b.cmd(
            "POST",
            "goog/cdp/execute",
            json!({"cmd": "Emulation.setDeviceMetricsOverride",
                   "params": {"width": 1400, "height": 1000, "deviceScaleFactor": 1, "mobile": false}}),
        );
        b
    }

    /// A command of the session; its `value`.
    fn cmd(&self, method: &str, path: &str, body: Value) -> Value {
        let url = format!("/session/{}/{path}", self.session);
        let body = (method == "POST").then_some(&body);
        let v = http_json(self.addr, method, &url, body);
        if let Some(e) = v["value"].get("error") {
            panic!("WebDriver {path}: {e}: {}", v["value"]["message"]);
        }
        v["value"].clone()
    }

    fn go(&self, url: &str) {
        self.cmd("POST", "url", json!({ "url": url }));
    }

    fn js(&self, script: &str) -> Value {
        self.cmd(
            "POST",
            "execute/sync",
            json!({"script": script, "args": []}),
        )
    }

    fn element(&self, css: &str) -> String {
        let v = self.cmd(
            "POST",
            "element",
            json!({"using": "css selector", "value": css}),
        );
        v.as_object()
            .and_then(|o| o.values().next())
            .and_then(Value::as_str)
            .unwrap_or_else(|| panic!("no element {css}"))
            .to_string()
    }

    fn click(&self, css: &str) {
        let id = self.element(css);
        self.cmd("POST", &format!("element/{id}/click"), json!({}));
    }

    fn keys(&self, css: &str, text: &str) {
        let id = self.element(css);
        self.cmd(
            "POST",
            &format!("element/{id}/value"),
            json!({ "text": text }),
        );
    }

    /// Selects the field's text and types `text` over it, as a person does: input
    /// events only (WebDriver's clear would also fire a change, an update of its own).
    fn replace_text(&self, css: &str, text: &str) {
        // Control+A, release the modifiers (NULL), then the text
        self.keys(css, &format!("\u{E009}a\u{E000}{text}"));
    }

    /// Waits until the page has rendered more than `after` times and is `state`.
    fn rendered(&self, after: u64, state: &str) -> u64 {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let v = self.js(
                "return [document.body.dataset.state, Number(document.body.dataset.rendered || 0)]",
            );
            let n = v[1].as_u64().unwrap_or(0);
            if v[0] == state && (n > after || state == "error") {
                return n;
            }
            if Instant::now() > deadline {
                panic!(
                    "the page did not become {state} (after {after}): {v}; error box: {}",
                    self.text("#error")
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn text(&self, css: &str) -> String {
        let script = format!(
            "const e = document.querySelector({}); return e ? e.innerText : null",
            json!(css)
        );
        self.js(&script).as_str().unwrap_or_default().to_string()
    }

    fn url(&self) -> String {
        self.cmd("GET", "url", json!({}))
            .as_str()
            .unwrap()
            .to_string()
    }

    /// Browser console entries at level SEVERE since the last call.
    fn console_errors(&self) -> Vec<String> {
        let v = self.cmd("POST", "se/log", json!({"type": "browser"}));
        v.as_array()
            .unwrap()
            .iter()
            .filter(|e| e["level"] == "SEVERE")
            .map(|e| e["message"].to_string())
            .collect()
    }

    fn screenshot(&self, path: &Path) {
        let v = self.cmd("GET", "screenshot", json!({}));
        let png = base64::engine::general_purpose::STANDARD
            .decode(v.as_str().unwrap())
            .unwrap();
        // PNG header: width and height, big-endian, at bytes 16..24
        let (w, h) = (
            u32::from_be_bytes(png[16..20].try_into().unwrap()),
            u32::from_be_bytes(png[20..24].try_into().unwrap()),
        );
        assert_eq!((w, h), (1400, 1000), "the screenshot's size");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, png).unwrap();
    }
}

/// Records the path of every request the page makes from now on in `window.__asked`.
const RECORD_FETCHES: &str = "window.__asked = []; const f = window.fetch; \
    window.fetch = (u, ...rest) => { window.__asked.push(String(u)); return f(u, ...rest); };";

/// The numbers and chart the page shows now.
fn view(b: &Browser) -> (String, String, String) {
    let chart = b.js("const i = document.getElementById('chart'); return [i.dataset.query, i.dataset.bytes, i.complete && i.naturalWidth > 0]");
    assert_eq!(chart[2], true, "the chart image did not load: {chart}");
    (
        b.text("#rows"),
        chart[0].as_str().unwrap().to_string(),
        chart[1].as_str().unwrap().to_string(),
    )
}

#[test]
fn the_page_works_in_a_real_browser() {
    let (Some(chromium), Some(chromedriver)) = (which("chromium"), which("chromedriver")) else {
        if std::env::var("RIDGELINE_SKIP_BROWSER").as_deref() == Ok("1") {
            eprintln!("browser test skipped (RIDGELINE_SKIP_BROWSER=1)");
            return;
        }
        panic!(
            "the browser test needs chromium and chromedriver on the PATH: apt-get install -y chromium chromium-driver (or set RIDGELINE_SKIP_BROWSER=1 to skip it)"
        );
    };
    let server = ridgeline::web::Server::bind("127.0.0.1", 0).unwrap();
    let site = format!("http://{}", server.addr().unwrap());
    std::thread::spawn(move || server.run());
    let b = Browser::start(&chromium, &chromedriver);

    // loads, with the URL's state, and no console error
    b.go(&format!("{site}/?model=llama-3-8b&gpu=h100-sxm&batch=8"));
    let n = b.rendered(0, "ready");
    let (rows, chart, bytes) = view(&b);
    assert!(
        rows.contains("NVIDIA H100 SXM5 80GB") && rows.contains("fits"),
        "{rows}"
    );
    assert!(
        chart.starts_with("/api/roofline.svg?model=llama-3-8b&gpu=h100-sxm&batch=8"),
        "{chart}"
    );
    assert!(b.text("#explain-headline").contains("Llama 3 8B"));
    assert_eq!(
        b.console_errors(),
        Vec::<String>::new(),
        "console errors on load"
    );

    // choosing another device (a click on its option) updates numbers and chart
    b.click("#gpu-0");
    b.click("#gpu-0 option[value='a100-80gb-sxm']");
    let n = b.rendered(n, "ready");
    let (rows2, chart2, bytes2) = view(&b);
    assert!(rows2.contains("NVIDIA A100 80GB SXM4"), "{rows2}");
    assert_ne!(rows, rows2, "the numbers did not change");
    assert!(chart2.contains("gpu=a100-80gb-sxm"), "{chart2}");
    assert_ne!(bytes, bytes2, "the chart did not change");
    assert!(b.url().contains("gpu=a100-80gb-sxm"), "{}", b.url());

    // typing a batch: debounced (two keystrokes, one request per device), then in
    // the URL; the page's requests are recorded from here on
    b.js(RECORD_FETCHES);
    b.replace_text("#batch", "16");
    let n = b.rendered(n, "ready");
    let url = b.url();
    assert!(
        url.contains("batch=16") && url.contains("gpu=a100-80gb-sxm"),
        "{url}"
    );
    let asked = b.js("return window.__asked.filter((u) => u.startsWith('/api/predict?'))");
    assert_eq!(
        asked,
        json!(["/api/predict?model=llama-3-8b&gpu=a100-80gb-sxm&batch=16"]),
        "typing 16 asked"
    );
    // the download buttons ask the API for the same view's JSON and SVG
    b.js("window.__asked.length = 0");
    b.click("#downloads button:nth-child(2)");
    b.click("#downloads button:nth-child(3)");
    let deadline = Instant::now() + Duration::from_secs(10);
    while b.js("return window.__asked.length") != 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        b.js("return window.__asked"),
        json!([
            "/api/explain?model=llama-3-8b&gpu=a100-80gb-sxm&batch=16",
            "/api/roofline.svg?model=llama-3-8b&gpu=a100-80gb-sxm&batch=16"
        ])
    );
    // and the launch files of the view (`--emit vllm`): the API's files, saved
    b.js("window.__asked.length = 0");
    b.js("[...document.querySelectorAll('#downloads button')].find((x) => x.textContent === 'launch: vllm').click()");
    let deadline = Instant::now() + Duration::from_secs(10);
    while b.js("return window.__asked.length") != 1 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        b.js("return window.__asked"),
        json!(["/api/predict?model=llama-3-8b&gpu=a100-80gb-sxm&batch=16&emit=vllm"])
    );
    // the answer came and nothing went wrong with it
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        b.js("return document.querySelector('#error').hidden"),
        json!(true)
    );
    let (rows16, _, _) = view(&b);

    // the arrow keys move between the chart tabs; a new tab asks for its chart only
    b.js("window.__asked.length = 0");
    b.keys("#tab-roofline", "\u{E014}"); // ArrowRight
    b.rendered(n, "ready");
    let (_, chart3, _) = view(&b);
    assert!(chart3.starts_with("/api/throughput.svg?"), "{chart3}");
    assert_eq!(
        b.js("return window.__asked"),
        json!([chart3]),
        "a tab change asked"
    );
    assert_eq!(b.js("return document.activeElement.id"), "tab-throughput");
    assert!(b.url().contains("chart=throughput"));

    // the URL round-trips: a fresh load of it shows the same state and numbers
    let url = b.url();
    b.go(&format!("{site}/"));
    b.rendered(0, "ready");
    b.go(&url);
    b.rendered(0, "ready");
    assert_eq!(b.js("return document.getElementById('batch').value"), "16");
    assert_eq!(
        b.js("return document.getElementById('gpu-0').value"),
        "a100-80gb-sxm"
    );
    assert_eq!(
        b.js("return document.querySelector('[aria-selected=true]').dataset.chart"),
        "throughput"
    );
    assert_eq!(view(&b).0, rows16, "the reloaded URL shows other numbers");
    assert_eq!(b.console_errors(), Vec::<String>::new(), "console errors");

    // the view a person looks at: three devices compared
    b.go(&format!(
        "{site}/?model=llama-3-8b&gpu=h100-sxm,a100-80gb-sxm,l40s&batch=8"
    ));
    let n = b.rendered(0, "ready");
    assert_eq!(
        b.js("return document.querySelectorAll('#rows tr').length"),
        3
    );
    assert_eq!(b.console_errors(), Vec::<String>::new(), "console errors");
    let shots = std::env::var_os("RIDGELINE_SCREENSHOTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/screenshots"));
    b.screenshot(&shots.join("page.png"));
    // and with each other chart shown
    let mut n = n;
    for chart in ["throughput", "memory"] {
        b.click(&format!("#tab-{chart}"));
        n = b.rendered(n, "ready");
        assert!(view(&b).1.starts_with(&format!("/api/{chart}.svg?")));
        b.screenshot(&shots.join(format!("page-{chart}.png")));
    }
    assert_eq!(b.console_errors(), Vec::<String>::new(), "console errors");

    // the routed experts in a format of their own (llama.cpp's gpt-oss GGUF: mxfp4
    // experts, the rest q8_0), from the URL: the menu shows it, the page asks for it and
    // shows predict's memory (63.21 GB of weights + KV, activations and overhead)
    b.go(&format!(
        "{site}/?model=gpt-oss-120b&gpu=h100-sxm&weights=q8_0&expert-weights=mxfp4"
    ));
    let n = b.rendered(0, "ready");
    assert_eq!(
        b.js("return document.getElementById('expert-weights').value"),
        "mxfp4"
    );
    let total = crate::support::cli::json(&[
        "predict",
        "--model",
        "gpt-oss-120b",
        "--gpu",
        "h100-sxm",
        "--weights",
        "q8_0",
        "--expert-weights",
        "mxfp4",
        "--json",
    ])["memory"]["total_bytes"]
        .as_f64()
        .unwrap();
    let rows = view(&b).0;
    assert!(
        rows.contains(&format!("{:.1} GB", total / 1e9)),
        "{rows} lacks {total}"
    );

    // a bad value: the server's message, on the field it names (the 400 is logged)
    b.replace_text("#batch", "0");
    b.rendered(n, "error");
    let message = b.text("#error");
    assert!(message.contains("--batch"), "{message}");
    assert_eq!(
        b.js("return document.getElementById('batch').getAttribute('aria-invalid')"),
        "true"
    );
}
