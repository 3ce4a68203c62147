//! HTTP/1.1 on a blocking socket, one request per connection, with hard bounds: the
//! head (request line and headers) at most [`MAX_HEAD_BYTES`], a body at most
//! [`MAX_BODY_BYTES`] and only with `Content-Length`, the whole request within
//! [`REQUEST_TIMEOUT`], the answer written within [`WRITE_TIMEOUT`]. Parsing is
//! `httparse`'s; nothing here knows the routes.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// Largest request line plus headers accepted: 16 KiB.
pub const MAX_HEAD_BYTES: usize = 16 * 1024;
/// Largest request body accepted (a pasted `config.json`): 1 MiB.
pub const MAX_BODY_BYTES: usize = 1 << 20;
/// Most headers a request may have.
pub const MAX_HEADERS: usize = 64;
/// Time a client has to send its whole request.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// Time a client has to take the answer.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(30);

/// A request as the routes see it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Request {
    /// `GET`, `HEAD` or `POST`.
    pub method: String,
    /// The path, as sent (not decoded): routes match it exactly.
    pub path: String,
    /// The query's `name=value` pairs, decoded (`+` and `%XX`), in order.
    pub query: Vec<(String, String)>,
    /// The body (empty without one).
    pub body: Vec<u8>,
}

impl Request {
    /// A `GET` of `target` (`/api/predict?model=llama-3-8b&gpu=h100`).
    pub fn get(target: &str) -> Request {
        Request::new("GET", target, Vec::new())
    }

    /// A request of `method` for `target` with `body`.
    pub fn new(method: &str, target: &str, body: Vec<u8>) -> Request {
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        Request {
            method: method.to_string(),
            path: path.to_string(),
            query: form_urlencoded::parse(query.as_bytes())
                .into_owned()
                .collect(),
            body,
        }
    }
}

/// An answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// The `Content-Type`.
    pub content_type: &'static str,
    /// Extra headers.
    pub headers: Vec<(&'static str, String)>,
    /// The body.
    pub body: Vec<u8>,
}

impl Response {
    /// An answer with `status`, `content_type` and `body`.
    pub fn new(status: u16, content_type: &'static str, body: impl Into<Vec<u8>>) -> Response {
        Response {
            status,
            content_type,
            headers: Vec::new(),
            body: body.into(),
        }
    }

    /// `{"error": message}` with `status`.
    pub fn error(status: u16, message: &str) -> Response {
        let body = serde_json::json!({ "error": message }).to_string();
        Response::new(status, "application/json", body)
    }

    /// The body as text (lossy), for tests and logs.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// The reason phrase of a status code.
fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        411 => "Length Required",
        413 => "Content Too Large",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        503 => "Service Unavailable",
        505 => "HTTP Version Not Supported",
        _ => "",
    }
}

/// Headers every answer carries: no caching, no sniffing, nothing loaded from
/// elsewhere, no framing by other sites.
const SECURITY_HEADERS: [(&str, &str); 4] = [
    ("Cache-Control", "no-store"),
    ("X-Content-Type-Options", "nosniff"),
    ("Referrer-Policy", "no-referrer"),
    (
        "Content-Security-Policy",
        "default-src 'self'; img-src 'self' blob: data:; script-src 'self'; style-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
    ),
];

/// Writes `r` (without its body for `HEAD`) and closes the exchange.
pub fn write_response(
    stream: &mut TcpStream,
    r: &Response,
    head_only: bool,
) -> std::io::Result<()> {
    stream.set_write_timeout(Some(WRITE_TIMEOUT))?;
    let mut head = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n",
        r.status,
        reason(r.status),
        r.content_type,
        r.body.len()
    );
    for (k, v) in SECURITY_HEADERS {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    for (k, v) in &r.headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())?;
    if !head_only {
        stream.write_all(&r.body)?;
    }
    stream.flush()
}

/// One read of at most 8 KiB into `buf`, waiting until the deadline; `Err` is the
/// answer to send (408 on time-out, `None` when the client went away).
fn read_some(
    stream: &mut TcpStream,
    buf: &mut Vec<u8>,
    deadline: Instant,
) -> Result<(), Option<Response>> {
    let late = || Some(Response::error(408, "the request took too long to arrive"));
    let mut chunk = [0u8; 8192];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(late());
        }
        stream.set_read_timeout(Some(left)).map_err(|_| None)?;
        match stream.read(&mut chunk) {
            Ok(0) => return Err(None),
            Ok(n) => {
                buf.extend_from_slice(&chunk[..n]);
                return Ok(());
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return Err(late());
            }
            Err(_) => return Err(None),
        }
    }
}

/// The head of a request, parsed: method, target, body length, and whether the client
/// waits for `100 Continue`.
struct Head {
    method: String,
    target: String,
    length: usize,
    expect_continue: bool,
    len: usize,
}

/// Parses the head at the start of `buf`: `Ok(None)` while incomplete.
fn parse_head(buf: &[u8]) -> Result<Option<Head>, Response> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    let len = match req.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => {
            return Err(Response::error(431, "more than 64 headers"));
        }
        Err(e) => return Err(Response::error(400, &format!("malformed request: {e}"))),
    };
    if req.version != Some(1) && req.version != Some(0) {
        return Err(Response::error(505, "HTTP/1.0 and 1.1 only"));
    }
    let mut head = Head {
        method: req.method.unwrap_or_default().to_string(),
        target: req.path.unwrap_or_default().to_string(),
        length: 0,
        expect_continue: false,
        len,
    };
    for h in req.headers.iter() {
        let value = String::from_utf8_lossy(h.value);
        if h.name.eq_ignore_ascii_case("content-length") {
            head.length = value.trim().parse().map_err(|_| {
                Response::error(400, &format!("Content-Length '{value}' is not a length"))
            })?;
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            return Err(Response::error(
                411,
                "chunked bodies are not accepted; send Content-Length",
            ));
        } else if h.name.eq_ignore_ascii_case("expect") {
            head.expect_continue = value.trim().eq_ignore_ascii_case("100-continue");
        }
    }
    if head.length > MAX_BODY_BYTES {
        return Err(Response::error(
            413,
            &format!("the body is larger than {} KiB", MAX_BODY_BYTES >> 10),
        ));
    }
    Ok(Some(head))
}

/// Reads one request within the bounds, the whole of it within `timeout`
/// ([`REQUEST_TIMEOUT`] by default). `Err(Some(r))`: answer `r` and close; `Err(None)`:
/// the client went away.
pub fn read_request(
    stream: &mut TcpStream,
    timeout: Duration,
) -> Result<Request, Option<Response>> {
    let deadline = Instant::now() + timeout;
    let mut buf = Vec::with_capacity(8192);
    let head = loop {
        if let Some(h) = parse_head(&buf).map_err(Some)? {
            if h.len > MAX_HEAD_BYTES {
                return Err(Some(Response::error(
                    431,
                    "the request head is over 16 KiB",
                )));
            }
            break h;
        }
        if buf.len() >= MAX_HEAD_BYTES {
            return Err(Some(Response::error(
                431,
                "the request head is over 16 KiB",
            )));
        }
        read_some(stream, &mut buf, deadline)?;
    };
    if head.expect_continue && head.length > 0 && buf.len() == head.len {
        let _ = stream.write_all(b"HTTP/1.1 100 Continue\r\n\r\n");
    }
    let total = head.len + head.length;
    while buf.len() < total {
        read_some(stream, &mut buf, deadline)?;
    }
    let mut r = Request::new(&head.method, &head.target, Vec::new());
    r.body = buf[head.len..total].to_vec();
    Ok(r)
}
