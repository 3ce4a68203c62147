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
//! ([`http`]), one per connection, each connection on its own thread, at most
//! [`MAX_CONNECTIONS`] at once (then 503).
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
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Connections served at once, each on its own thread (an idle one, such as a
/// browser's speculative preconnection, holds only its thread until
/// [`http::REQUEST_TIMEOUT`]); past it new connections get 503.
pub const MAX_CONNECTIONS: usize = 64;

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
        let open = Arc::new(AtomicUsize::new(0));
        for stream in self.listener.incoming() {
            let Ok(mut stream) = stream else {
                // a connection that failed while being accepted: keep serving
                std::thread::sleep(Duration::from_millis(10));
                continue;
            };
            if open.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
                open.fetch_sub(1, Ordering::SeqCst);
                let busy = Response::error(503, "the server is busy; try again");
                let _ = stream.set_write_timeout(Some(Duration::from_secs(1)));
                let _ = http::write_response(&mut stream, &busy, false);
                continue;
            }
            let slot = Slot(Arc::clone(&open));
            let (quiet, timeout) = (self.quiet, self.request_timeout);
            std::thread::spawn(move || {
                let _slot = slot;
                serve_one(stream, quiet, timeout);
            });
        }
        Ok(())
    }
}

/// One of the [`MAX_CONNECTIONS`], given back when its thread ends (panic included).
struct Slot(Arc<AtomicUsize>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Answers the one request of a connection.
fn serve_one(mut stream: TcpStream, quiet: bool, timeout: Duration) {
    let start = Instant::now();
    let (line, r, head_only) = match http::read_request(&mut stream, timeout) {
        Ok(req) => (
            format!("{} {}", req.method, req.path),
            handle(&req),
            req.method == "HEAD",
        ),
        Err(Some(r)) => ("(bad request)".to_string(), r, false),
        Err(None) => return,
    };
    let _ = http::write_response(&mut stream, &r, head_only);
    if !quiet {
        eprintln!(
            "{line} -> {} ({:.0} ms)",
            r.status,
            start.elapsed().as_secs_f64() * 1e3
        );
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
