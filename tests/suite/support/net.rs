//! The socket tests' client side: a server on a loopback port of its own, one raw
//! exchange with it, a command run with a terminal for its stderr.

use ridgeline::web::Server;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// Runs `server` (quiet) on its own thread; its address.
pub fn serve(server: Server) -> SocketAddr {
    let server = server.quiet();
    let addr = server.addr().unwrap();
    std::thread::spawn(move || server.run());
    addr
}

/// Sends `raw` and reads the whole answer (the server closes the connection), waiting
/// at most `wait` for each read, with the head's header names in lower case (as hyper
/// writes them; HTTP's are case-insensitive).
pub fn exchange(addr: SocketAddr, raw: &[u8], wait: Duration) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(wait)).unwrap();
    let _ = s.write_all(raw);
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let text = String::from_utf8_lossy(&out).into_owned();
    match text.split_once("\r\n\r\n") {
        Some((head, body)) => {
            let mut lines = head.split("\r\n");
            let status = lines.next().unwrap_or_default().to_string();
            let headers: Vec<String> = lines
                .map(|l| match l.split_once(':') {
                    Some((k, v)) => format!("{}:{v}", k.to_ascii_lowercase()),
                    None => l.to_string(),
                })
                .collect();
            format!("{status}\r\n{}\r\n\r\n{body}", headers.join("\r\n"))
        }
        None => text,
    }
}

/// What the shell command `cmd` writes to its terminal, run under `script` (which
/// gives it one for stderr); the command must succeed.
pub fn on_tty(cmd: &str) -> String {
    let out = std::process::Command::new("script")
        .args(["-qec", cmd, "/dev/null"])
        .output()
        .expect("script (util-linux) runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}
