//! The server's bounds and the request and answer the routes see. The HTTP itself is
//! hyper's ([`super`]): the head (request line and headers) at most
//! [`MAX_HEAD_BYTES`], a body at most [`MAX_BODY_BYTES`], the whole request within
//! [`REQUEST_TIMEOUT`]; nothing here knows the routes.

use std::time::Duration;

/// Largest request line plus headers accepted: 16 KiB.
pub const MAX_HEAD_BYTES: usize = 16 * 1024;
/// Largest request body accepted (a pasted `config.json`): 1 MiB.
pub const MAX_BODY_BYTES: usize = 1 << 20;
/// Most headers a request may have.
pub const MAX_HEADERS: usize = 64;
/// Time a client has to send its whole request.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

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

    /// `{"error": message, "param": param}` with `status`: an error that names the
    /// query parameter at fault (`gpu`, `batch`, `requests`), for the page to point at.
    pub fn error_param(status: u16, message: &str, param: &str) -> Response {
        let body = serde_json::json!({ "error": message, "param": param }).to_string();
        Response::new(status, "application/json", body)
    }

    /// 503 with `Retry-After: seconds`: the server cannot take the request now.
    pub fn unavailable(message: &str, seconds: u64) -> Response {
        let mut r = Response::error(503, message);
        r.headers.push(("Retry-After", seconds.to_string()));
        r
    }

    /// The body as text (lossy), for tests and logs.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// Headers every answer carries: no caching, no sniffing, nothing loaded from
/// elsewhere, no framing by other sites.
pub const SECURITY_HEADERS: [(&str, &str); 4] = [
    ("Cache-Control", "no-store"),
    ("X-Content-Type-Options", "nosniff"),
    ("Referrer-Policy", "no-referrer"),
    (
        "Content-Security-Policy",
        "default-src 'self'; img-src 'self' blob: data:; script-src 'self'; style-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
    ),
];
