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
//! - Bad input is 400 with `{"error": "...", "param": "<name>"}` naming the
//!   parameter; work over the per-request budget ([`WORK_BUDGET`]) is refused up
//!   front with 413 and the parameter that asked for the most; work still running at
//!   the [`DEADLINE`] is stopped and answered 503 with `Retry-After`; an unknown route
//!   is 404.
//!
//! The server reads and writes no files: options that name a file (`--out`, `--svg`,
//! `--trace`, `--hardware-file`, ...) are refused, and `--model` takes only bundled
//! ids or the posted document.
//!
//! HTTP is hyper's (HTTP/1.1, one request per connection) on a tokio runtime: the
//! head is bounded in size ([`http::MAX_HEAD_BYTES`]) and must arrive within
//! [`http::REQUEST_TIMEOUT`] (a slow or idle client is dropped then), the body
//! likewise ([`http::MAX_BODY_BYTES`]). Connections cost a task each, not a thread:
//! up to [`MAX_CONNECTIONS`] are served, past it a connection is read and answered
//! 503 with `Retry-After`. Computations run on a bounded pool of blocking threads
//! (tower's concurrency limit, [`Server::workers`]); when every worker is busy a
//! computing request is shed at once with 503 and `Retry-After` (tower's load-shed),
//! while the page, `/api/meta`, `hardware`, `models`, `instances` and `kernels` are answered
//! beside them. Each computation runs inside its own [`crate::work::Work`]: stopped at
//! its deadline, when its client closes the connection, or when the server shuts
//! down (Ctrl-C: no new connection is taken, running work is stopped, and the server
//! ends once its answers are written).
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

use crate::work::{Stop, Work};
use crate::{Error, Result};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper_util::rt::{TokioIo, TokioTimer};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tower::{Service, ServiceBuilder, ServiceExt};

/// Connections served at once by default ([`Server::max_connections`]); past it a
/// new connection is answered 503.
pub const MAX_CONNECTIONS: usize = 512;

/// How long one request's computation may run before it is stopped (503).
pub const DEADLINE: Duration = Duration::from_secs(30);

/// Most work one request may ask for, in units of one configuration predicted or one
/// request simulated (a sweep's configurations; a simulation's requests x rates; a
/// rate plan's layouts x requests x [`crate::plan::PROBES_CHARGED`]); more is
/// refused up front with 413 (about 20 s of one core at the simulator's speed).
pub const WORK_BUDGET: f64 = 1e7;

/// The `Retry-After` of a 503, seconds.
pub const RETRY_AFTER_S: u64 = 2;

/// Computing requests that may wait for a worker beyond those computing (per
/// worker); past it they are shed at once.
pub const QUEUE_PER_WORKER: usize = 16;

/// Longest a computing request waits for a worker before it is answered 503.
pub const QUEUE_WAIT: Duration = Duration::from_secs(10);

/// How often a running computation looks whether its client is still there.
const WATCH: Duration = Duration::from_millis(50);

/// A bound listening socket, ready to [`Server::run`].
pub struct Server {
    listener: std::net::TcpListener,
    quiet: bool,
    request_timeout: Duration,
    deadline: Duration,
    budget: f64,
    workers: usize,
    max_connections: usize,
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
        let listener = std::net::TcpListener::bind(&addrs[..])
            .map_err(|e| Error::invalid("port", format!("cannot listen on {host}:{port}: {e}")))?;
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        Ok(Server {
            listener,
            quiet: false,
            request_timeout: http::REQUEST_TIMEOUT,
            deadline: DEADLINE,
            budget: WORK_BUDGET,
            workers: cores.max(2),
            max_connections: MAX_CONNECTIONS,
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

    /// The same server, stopping each computation after `deadline` (default
    /// [`DEADLINE`]).
    pub fn deadline(mut self, deadline: Duration) -> Server {
        self.deadline = deadline;
        self
    }

    /// The same server, refusing requests that ask for more than `units` of work
    /// (default [`WORK_BUDGET`]).
    pub fn budget(mut self, units: f64) -> Server {
        self.budget = units;
        self
    }

    /// The same server, running at most `n` computations at once (default: the
    /// cores, at least 2); more are shed with 503.
    pub fn workers(mut self, n: usize) -> Server {
        self.workers = n.max(1);
        self
    }

    /// The same server, serving at most `n` connections at once (default
    /// [`MAX_CONNECTIONS`]); past it a connection is answered 503.
    pub fn max_connections(mut self, n: usize) -> Server {
        self.max_connections = n.max(1);
        self
    }

    /// The address it listens on.
    pub fn addr(&self) -> Result<SocketAddr> {
        self.listener
            .local_addr()
            .map_err(|e| Error::internal("web server", e))
    }

    /// Serves until the process ends, or until the work in force on the calling
    /// thread ([`crate::work::current`]) is stopped (the CLI's Ctrl-C): then it takes
    /// no new connection, stops the running computations and returns once their
    /// answers are written.
    pub fn run(self) -> Result<()> {
        let stop = crate::work::current();
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .max_blocking_threads(self.workers + 16)
            .enable_all()
            .build()
            .map_err(|e| Error::internal("web server", e))?;
        rt.block_on(self.serve(stop))
    }

    async fn serve(self, stop: Option<Work>) -> Result<()> {
        self.listener
            .set_nonblocking(true)
            .map_err(|e| Error::internal("web server", e))?;
        let listener = tokio::net::TcpListener::from_std(self.listener)
            .map_err(|e| Error::internal("web server", e))?;
        let shared = Arc::new(Shared {
            quiet: self.quiet,
            deadline: self.deadline,
            budget: self.budget,
            shutting_down: AtomicBool::new(false),
            open: AtomicUsize::new(0),
            workers: tokio::sync::Semaphore::new(self.workers),
        });
        // computations: `workers` at once, a bounded queue waiting for them (at most
        // QUEUE_WAIT), the rest shed at once
        let compute = ServiceBuilder::new()
            .load_shed()
            .concurrency_limit(self.workers * (1 + QUEUE_PER_WORKER))
            // a backstop: the work's own deadline stops it first
            .timeout(QUEUE_WAIT + self.deadline + Duration::from_secs(10))
            .service_fn(compute);
        loop {
            let accepted = tokio::select! {
                a = listener.accept() => a,
                _ = stopped(stop.clone()) => break,
            };
            let Ok((stream, _)) = accepted else {
                // a connection that failed while being accepted: keep serving
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            };
            let busy = shared.open.fetch_add(1, Ordering::SeqCst) >= self.max_connections;
            let slot = Slot(Arc::clone(&shared));
            let (shared, compute) = (Arc::clone(&shared), compute.clone());
            let timeout = if busy {
                Duration::from_secs(1)
            } else {
                self.request_timeout
            };
            tokio::spawn(async move {
                let _slot = slot;
                connection(stream, shared, compute, busy, timeout).await;
            });
        }
        // Ctrl-C: no new connections; running work is stopped by its watcher
        shared.shutting_down.store(true, Ordering::SeqCst);
        let until = Instant::now() + Duration::from_secs(5);
        while shared.open.load(Ordering::SeqCst) > 0 && Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Ok(())
    }
}

/// Resolves once `work` is stopped (never without one).
async fn stopped(work: Option<Work>) {
    match work {
        Some(w) => {
            while w.stopped().is_none() {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        None => std::future::pending().await,
    }
}

/// What every connection of one server shares.
struct Shared {
    quiet: bool,
    deadline: Duration,
    budget: f64,
    shutting_down: AtomicBool,
    open: AtomicUsize,
    /// The computations running: one permit each.
    workers: tokio::sync::Semaphore,
}

/// One of the connections served, given back when its task ends.
struct Slot(Arc<Shared>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A request for the computing pool, with the connection's socket to watch.
struct Job {
    req: Request,
    shared: Arc<Shared>,
    peer: Option<std::net::TcpStream>,
}

/// Serves one connection: one request, or 503 when the server is full.
async fn connection(
    stream: tokio::net::TcpStream,
    shared: Arc<Shared>,
    compute: impl Service<Job, Response = Response, Error = tower::BoxError> + Clone + Send + 'static,
    busy: bool,
    timeout: Duration,
) {
    // a second handle on the socket, to see the client go away while its work runs
    let peer = stream
        .into_std()
        .ok()
        .and_then(|s| s.try_clone().ok().map(|c| (s, c)));
    let Some((std_stream, watch)) = peer else {
        return;
    };
    let Ok(stream) = tokio::net::TcpStream::from_std(std_stream) else {
        return;
    };
    let watch = Arc::new(std::sync::Mutex::new(Some(watch)));
    let svc = hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
        let (shared, compute, watch) = (Arc::clone(&shared), compute.clone(), Arc::clone(&watch));
        async move {
            let start = Instant::now();
            let line = format!("{} {}", req.method(), req.uri().path());
            let r = if busy {
                Response::unavailable("the server is busy; try again", RETRY_AFTER_S)
            } else {
                answer(req, &shared, compute, &watch, timeout).await
            };
            if !shared.quiet {
                eprintln!(
                    "{line} -> {} ({:.0} ms)",
                    r.status,
                    start.elapsed().as_secs_f64() * 1e3
                );
            }
            Ok::<_, Infallible>(to_hyper(r))
        }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(timeout)
        .max_buf_size(http::MAX_HEAD_BYTES)
        .keep_alive(false);
    let _ = builder.serve_connection(TokioIo::new(stream), svc).await;
}

/// Reads the request's body (bounded in size and time) and routes it: cheap routes
/// answered here, computations through the pool.
async fn answer(
    req: hyper::Request<Incoming>,
    shared: &Arc<Shared>,
    compute: impl Service<Job, Response = Response, Error = tower::BoxError>,
    watch: &Arc<std::sync::Mutex<Option<std::net::TcpStream>>>,
    timeout: Duration,
) -> Response {
    let method = req.method().as_str().to_string();
    let target = req
        .uri()
        .path_and_query()
        .map_or("/".to_string(), |p| p.as_str().to_string());
    let promised = req
        .headers()
        .get(hyper::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if promised.is_some_and(|n| n > http::MAX_BODY_BYTES as u64) {
        return too_large();
    }
    let body = Limited::new(req.into_body(), http::MAX_BODY_BYTES);
    let body = match tokio::time::timeout(timeout, body.collect()).await {
        Err(_) => return Response::error(408, "the request's body did not arrive in time"),
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => return too_large(),
        Ok(Err(_)) => return Response::error(400, "the request's body could not be read"),
        Ok(Ok(b)) => b.to_bytes().to_vec(),
    };
    let req = Request::new(&method, &target, body);
    if !computes(&req) {
        return tokio::task::spawn_blocking(move || handle(&req))
            .await
            .unwrap_or_else(|_| Response::error(500, "internal error"));
    }
    let peer = watch.lock().unwrap_or_else(|e| e.into_inner()).take();
    let job = Job {
        req,
        shared: Arc::clone(shared),
        peer,
    };
    match compute.oneshot(job).await {
        Ok(r) => r,
        Err(e) if e.is::<tower::load_shed::error::Overloaded>() => Response::unavailable(
            "every worker of the server is computing; try again",
            RETRY_AFTER_S,
        ),
        Err(e) if e.is::<tower::timeout::error::Elapsed>() => Response::unavailable(
            "the computation did not end by its deadline; ask for less work",
            RETRY_AFTER_S,
        ),
        Err(_) => Response::error(500, "internal error"),
    }
}

fn too_large() -> Response {
    Response::error(
        413,
        &format!("the request's body is over {} bytes", http::MAX_BODY_BYTES),
    )
}

/// Whether a request runs a computation (a command other than the listings, or a
/// chart) and so takes a worker.
fn computes(req: &Request) -> bool {
    let Some(rest) = req.path.strip_prefix("/api/") else {
        return false;
    };
    let name = rest.trim_end_matches(".txt");
    !matches!(
        name,
        "meta" | "hardware" | "models" | "instances" | "kernels"
    )
}

/// Runs a job on a blocking thread inside its own [`Work`] (the server's deadline and
/// budget), stopping it when its client goes away or the server shuts down.
fn compute(
    job: Job,
) -> std::pin::Pin<Box<dyn Future<Output = std::result::Result<Response, Infallible>> + Send>> {
    Box::pin(async move {
        let Job { req, shared, peer } = job;
        // wait for a worker, no longer than QUEUE_WAIT and not for a client gone
        let queued = Instant::now();
        let _permit = loop {
            tokio::select! {
                p = shared.workers.acquire() => match p {
                    Ok(p) => break p,
                    Err(_) => return Ok(Response::error(500, "internal error")),
                },
                _ = tokio::time::sleep(WATCH) => {
                    let over = queued.elapsed() >= QUEUE_WAIT
                        || shared.shutting_down.load(Ordering::SeqCst);
                    if over || peer.as_ref().is_some_and(gone) {
                        return Ok(Response::unavailable(
                            "every worker of the server is computing; try again",
                            RETRY_AFTER_S,
                        ));
                    }
                }
            }
        };
        let work = Work::bounded(shared.deadline, Some(shared.budget));
        let w = work.clone();
        let mut task = tokio::task::spawn_blocking(move || w.run(|| handle(&req)));
        loop {
            tokio::select! {
                done = &mut task => {
                    return Ok(done.unwrap_or_else(|_| Response::error(500, "internal error")));
                }
                _ = tokio::time::sleep(WATCH) => {
                    if shared.shutting_down.load(Ordering::SeqCst) {
                        work.cancel(Stop::Interrupted);
                    } else if peer.as_ref().is_some_and(gone) {
                        work.cancel(Stop::ClientGone);
                    }
                    // the deadline is the work's own: its next check stops it
                }
            }
        }
    })
}

/// Whether the client closed its end (a read would see the end of the stream).
fn gone(s: &std::net::TcpStream) -> bool {
    let mut b = [0u8; 1];
    match s.peek(&mut b) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => e.kind() != std::io::ErrorKind::WouldBlock,
    }
}

/// A [`Response`] as hyper sends it, with the security headers and `Connection:
/// close`.
fn to_hyper(r: Response) -> hyper::Response<Full<Bytes>> {
    let mut b = hyper::Response::builder()
        .status(r.status)
        .header(hyper::header::CONTENT_TYPE, r.content_type)
        .header(hyper::header::CONNECTION, "close");
    for (k, v) in http::SECURITY_HEADERS {
        b = b.header(k, v);
    }
    for (k, v) in &r.headers {
        b = b.header(*k, v.as_str());
    }
    b.body(Full::new(Bytes::from(r.body))).unwrap_or_else(|_| {
        let mut e = hyper::Response::new(Full::new(Bytes::from_static(b"internal error")));
        *e.status_mut() = hyper::StatusCode::INTERNAL_SERVER_ERROR;
        e
    })
}

/// `ridgeline serve`: listens on `host:port`, prints the address on stderr, and serves
/// until Ctrl-C.
pub fn serve(host: &str, port: u16) -> Result<()> {
    let server = Server::bind(host, port)?;
    let addr = server.addr()?;
    eprintln!(
        "ridgeline {} serving on http://{addr}/ (Ctrl-C stops)",
        env!("CARGO_PKG_VERSION")
    );
    server.run()
}
