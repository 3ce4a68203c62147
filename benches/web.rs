//! `ridgeline serve`'s answers, measured in process ([`ridgeline::web::handle`]: words
//! from the query, the command as the CLI runs it, the JSON or SVG): what one page update
//! costs the server (a prediction per device, the explanation, a chart); and over a
//! loopback socket ([`ridgeline::web::Server`]: hyper, the worker pool, the load
//! shedding), alone and with 100 slow clients holding connections open.

use criterion::{Criterion, black_box, criterion_group, criterion_main};
use ridgeline::web::{Request, Server, handle};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

fn web(c: &mut Criterion) {
    let routes = [
        (
            "predict",
            "/api/predict?model=llama-3-8b&gpu=h100-sxm&batch=8",
        ),
        (
            "explain",
            "/api/explain?model=llama-3-8b&gpu=h100-sxm&batch=8",
        ),
        (
            "roofline_3_devices",
            "/api/roofline.svg?model=llama-3-8b&gpu=h100-sxm,a100-80gb-sxm,l40s&batch=8",
        ),
        (
            "throughput_3_devices",
            "/api/throughput.svg?model=llama-3-8b&gpu=h100-sxm,a100-80gb-sxm,l40s&batch=8",
        ),
        (
            "memory",
            "/api/memory.svg?model=llama-3-8b&gpu=h100-sxm&batch=8",
        ),
        ("hardware_list", "/api/hardware"),
    ];
    for (name, target) in routes {
        let req = Request::get(target);
        assert_eq!(handle(&req).status, 200, "{target}");
        c.bench_function(&format!("web/{name}"), |b| {
            b.iter(|| handle(black_box(&req)))
        });
    }
}

/// One GET over a fresh connection, read to the end (the server closes it: the request
/// asks it to); the status line's code.
fn fetch(addr: SocketAddr, target: &str) -> u16 {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(
        s,
        "GET {target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let head = String::from_utf8_lossy(&out[..out.len().min(16)]).into_owned();
    head.split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
}

fn socket(c: &mut Criterion) {
    let server = Server::bind("127.0.0.1", 0).expect("bind").quiet();
    let addr = server.addr().expect("addr");
    std::thread::spawn(move || server.run());
    let routes = [
        ("meta", "/api/meta"),
        (
            "predict",
            "/api/predict?model=llama-3-8b&gpu=h100-sxm&batch=8",
        ),
    ];
    for (name, target) in routes {
        assert_eq!(fetch(addr, target), 200, "{target}");
        c.bench_function(&format!("socket/{name}"), |b| {
            b.iter(|| fetch(addr, black_box(target)))
        });
    }
    // 100 slow clients, each sending half a request head and waiting (opened again for
    // each route: the server drops them after its request timeout)
    for (name, target) in routes {
        let slow: Vec<TcpStream> = (0..100)
            .map(|_| {
                let mut s = TcpStream::connect(addr).expect("connect");
                s.write_all(b"GET /api/meta HTTP/1.1\r\nHost").unwrap();
                s
            })
            .collect();
        assert_eq!(fetch(addr, target), 200, "{target}");
        c.bench_function(&format!("socket_100_slow_clients/{name}"), |b| {
            b.iter(|| fetch(addr, black_box(target)))
        });
        drop(slow);
    }
}

criterion_group!(benches, web, socket);
criterion_main!(benches);
