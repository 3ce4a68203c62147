//! `ridgeline serve`: a local web page and a JSON API over the library.
//!
//! - `GET /` is the page (HTML, CSS and JavaScript embedded in the binary; nothing
//!   loaded from elsewhere, so it works offline).
//! - `GET /api/<command>?<flags>` runs the command as the CLI does, with the query's
//!   `name=value` pairs as its `--name value` flags (switches as `name` or
//!   `name=true`; lists comma-separated), and answers its `--json` document
//!   byte for byte; `/api/<command>.txt` answers the text the CLI prints.
//! - `GET /api/<chart>.svg?<flags>` answers a chart ([`crate::cli::Chart`]).
//! - `POST` to the same routes with a `config.json` body adds that model: `model`
//!   defaults to its id.
//! - Bad input is 400 with `{"error": "..."}` naming the flag; an unknown route 404.
//!
//! The server reads and writes no files: options that name a file (`--out`, `--svg`,
//! `--trace`, `--hardware-file`, ...) are refused, and `--model` takes only bundled
//! ids or the posted document. Requests are bounded in size and time
//! ([`http`]), served one per connection by a fixed pool of workers; when every worker
//! is busy and the queue is full, new connections get 503.
//!
//! ```no_run
//! // what `ridgeline serve --port 8080` does
//! ridgeline::web::serve("127.0.0.1", 8080)?;
//! # Ok::<(), ridgeline::Error>(())
//! ```

pub mod api;
mod assets;
pub mod http;

pub use api::handle;
pub use http::{Request, Response};

use crate::{Error, Result};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Requests served at once.
pub const WORKERS: usize = 4;
/// Connections waiting for a worker before new ones get 503.
pub const QUEUE: usize = 64;

/// A bound listening socket, ready to [`Server::run`].
pub struct Server {
    listener: TcpListener,
    quiet: bool,
    request_timeout: Duration,
}

impl Server {
    /// Listens on `host:port` (port 0: a free port, see [`Server::addr`]).
    pub fn bind(host: &str, port: u16) -> Result<Server> {
        use std::net::ToSocketAddrs;
        let addrs: Vec<SocketAddr> = (host, port)
            .to_socket_addrs()
            .map_err(|e| {
                Error::invalid(
                    "host",
                    format!("'{host}' is not an address to listen on: {e}"),
                )
            })?
            .collect();
        let listener = TcpListener::bind(&addrs[..])
            .map_err(|e| Error::invalid("port", format!("cannot listen on {host}:{port}: {e}")))?;
        Ok(Server {
            listener,
            quiet: false,
            request_timeout: http::REQUEST_TIMEOUT,
        })
    }

    /// The same server, logging no requests on stderr.
    pub fn quiet(mut self) -> Server {
        self.quiet = true;
        self
    }

    /// The same server, giving clients `timeout` to send a request (default
    /// [`http::REQUEST_TIMEOUT`]).
    pub fn request_timeout(mut self, timeout: Duration) -> Server {
        self.request_timeout = timeout;
        self
    }

    /// The address it listens on.
    pub fn addr(&self) -> Result<SocketAddr> {
        self.listener
            .local_addr()
            .map_err(|e| Error::internal("web server", e))
    }

    /// Serves until the process ends.
    pub fn run(self) -> Result<()> {
        let (tx, rx) = sync_channel::<TcpStream>(QUEUE);
        let rx = Arc::new(Mutex::new(rx));
        for _ in 0..WORKERS {
            let rx = Arc::clone(&rx);
            let (quiet, timeout) = (self.quiet, self.request_timeout);
            std::thread::spawn(move || worker(&rx, quiet, timeout));
        }
        for stream in self.listener.incoming() {
            match stream {
                Ok(s) => dispatch(&tx, s),
                // a connection that failed while being accepted: keep serving
                Err(_) => std::thread::sleep(Duration::from_millis(10)),
            }
        }
        Ok(())
    }
}

/// Hands a connection to the workers, or answers 503 when they are all busy.
fn dispatch(tx: &SyncSender<TcpStream>, stream: TcpStream) {
    if let Err(TrySendError::Full(mut s)) = tx.try_send(stream) {
        let busy = Response::error(503, "the server is busy; try again");
        let _ = s.set_write_timeout(Some(Duration::from_secs(1)));
        let _ = http::write_response(&mut s, &busy, false);
    }
}

/// Takes connections from the queue and answers one request on each.
fn worker(rx: &Mutex<Receiver<TcpStream>>, quiet: bool, timeout: Duration) {
    loop {
        let next = match rx.lock() {
            Ok(rx) => rx.recv(),
            Err(_) => return,
        };
        let Ok(mut stream) = next else { return };
        let start = Instant::now();
        let (line, response) = match http::read_request(&mut stream, timeout) {
            Ok(req) => {
                let r = handle(&req);
                (
                    format!("{} {}", req.method, req.path),
                    Some((r, req.method == "HEAD")),
                )
            }
            Err(Some(r)) => ("(bad request)".to_string(), Some((r, false))),
            Err(None) => continue,
        };
        if let Some((r, head_only)) = response {
            let _ = http::write_response(&mut stream, &r, head_only);
            if !quiet {
                eprintln!(
                    "{line} -> {} ({:.0} ms)",
                    r.status,
                    start.elapsed().as_secs_f64() * 1e3
                );
            }
        }
    }
}

/// `ridgeline serve`: listens on `host:port`, prints the address on stderr, and serves
/// until the process ends.
pub fn serve(host: &str, port: u16) -> Result<()> {
    let server = Server::bind(host, port)?;
    let addr = server.addr()?;
    eprintln!(
        "ridgeline {} serving on http://{addr}/ (Ctrl-C stops)",
        env!("CARGO_PKG_VERSION")
    );
    server.run()
}
