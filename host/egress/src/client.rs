//! The HTTP transport: hyper 1 over tokio-rustls (ring), HTTP/1.1 or HTTP/2
//! by ALPN, connecting only to addresses the caller has already checked.
//!
//! Every wait is bounded (connect, each read, and the caller's deadline) and
//! the response body is read up to a limit, never past it.

pub(crate) mod pool;
mod tls;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::header::{CONTENT_ENCODING, CONTENT_LENGTH, HOST, TRANSFER_ENCODING, USER_AGENT};
use http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode, Version};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming as HyperBody;
use hyper::body::{Body as _, Frame};
use hyper::client::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls_pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::time::Instant;
use tokio_rustls::TlsConnector;
use url::Url;

use crate::config::EgressConfig;
use crate::policy::{RequestOrigin, Scheme};
use pool::{Pool, PoolKey, Sender};

/// Why the transport failed. Messages are fixed categories: no URL, header
/// or peer text passes through.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// A connect, read or total timeout elapsed.
    #[error("timed out")]
    Timeout,
    /// The response body exceeded the limit.
    #[error("body too large")]
    TooLarge,
    /// TCP connect failed.
    #[error("connection failed: {0}")]
    Connect(&'static str),
    /// The TLS handshake failed.
    #[error("TLS failed: {0}")]
    Tls(&'static str),
    /// The peer spoke HTTP wrongly, or sent something egress refuses.
    #[error("HTTP error: {0}")]
    Protocol(&'static str),
    /// The client could not be configured.
    #[error("client configuration: {0}")]
    Config(String),
}

/// A request ready for the wire (it may carry an injected secret: never log it).
#[derive(Debug)]
pub(crate) struct Outgoing {
    /// When connecting must be done by: the connect timeout counts from
    /// before the name was resolved.
    pub(crate) connect_by: Option<Instant>,
    pub(crate) method: Method,
    pub(crate) url: Url,
    pub(crate) endpoint: RequestOrigin,
    pub(crate) addrs: Vec<SocketAddr>,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
}

/// A response read in full (not yet redacted).
#[derive(Debug)]
pub(crate) struct Incoming {
    pub(crate) status: StatusCode,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Vec<u8>,
}

/// The TLS server name (and pool key) of `out`'s host: an IPv6 literal
/// without its brackets.
fn server_name(out: &Outgoing) -> String {
    out.endpoint
        .host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_owned()
}

/// A response whose body is read as it arrives.
pub(crate) struct Streaming {
    pub(crate) status: StatusCode,
    pub(crate) headers: HeaderMap,
    pub(crate) body: StreamedBody,
}

/// The body of a [`Streaming`] response. An HTTP/1.1 connection goes back
/// to the pool when the body has been read to its end. A body dropped
/// before then (rmcp drops an answer's stream as soon as the answer is in,
/// before the server's end of it arrives) is read to its end in the
/// background, for at most [`DRAIN_BYTES`] and [`DRAIN_TIME`], and only then
/// pooled; past either, its connection is closed.
#[derive(Debug)]
pub(crate) struct StreamedBody {
    /// `None` only once dropped.
    body: Option<HyperBody>,
    checkin: Option<Checkin>,
}

/// Where a streamed response's connection goes back to.
#[derive(Debug)]
struct Checkin {
    pool: Arc<Pool>,
    key: PoolKey,
    sender: Sender,
}

impl Checkin {
    fn run(self) {
        self.pool.checkin(self.key, self.sender);
    }
}

/// What is read of a dropped stream to keep its connection.
const DRAIN_BYTES: usize = 64 << 10;
/// How long a dropped stream is read to keep its connection.
const DRAIN_TIME: Duration = Duration::from_secs(1);

impl StreamedBody {
    /// The next frame; `None` at the end.
    pub(crate) async fn frame(&mut self) -> Option<Result<Frame<Bytes>, hyper::Error>> {
        let body = self.body.as_mut()?;
        let frame = body.frame().await;
        if (frame.is_none() || body.is_end_stream())
            && let Some(checkin) = self.checkin.take()
        {
            checkin.run();
        }
        frame
    }
}

impl Drop for StreamedBody {
    fn drop(&mut self) {
        let (Some(mut body), Some(checkin)) = (self.body.take(), self.checkin.take()) else {
            return;
        };
        if body.is_end_stream() {
            return checkin.run();
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        runtime.spawn(async move {
            let drained = tokio::time::timeout(DRAIN_TIME, async {
                let mut read = 0;
                while let Some(frame) = body.frame().await {
                    let Ok(data) = frame.map(Frame::into_data) else {
                        return false;
                    };
                    read += data.map_or(0, |d| d.len());
                    if read > DRAIN_BYTES {
                        return false;
                    }
                }
                true
            })
            .await;
            if drained == Ok(true) {
                checkin.run();
            }
        });
    }
}

/// The shared transport of one host.
pub(crate) struct HttpClient {
    tls: TlsConnector,
    pool: Arc<Pool>,
    connect_timeout: Duration,
    read_timeout: Duration,
    user_agent: HeaderValue,
}

impl std::fmt::Debug for HttpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpClient")
            .field("pool", &self.pool)
            .finish_non_exhaustive()
    }
}

impl HttpClient {
    /// Idle connections pooled now.
    pub(crate) fn idle_connections(&self) -> usize {
        self.pool.idle_count()
    }

    pub(crate) fn new(config: &EgressConfig) -> Result<Self, ClientError> {
        let user_agent = HeaderValue::from_str(&config.user_agent)
            .map_err(|_| ClientError::Config("user agent is not a valid header".into()))?;
        Ok(Self {
            tls: TlsConnector::from(tls::client_config(config)?),
            pool: Arc::new(Pool::new(
                config.pool_idle_timeout,
                config.pool_max_idle_per_key,
            )),
            connect_timeout: config.connect_timeout,
            read_timeout: config.read_timeout,
            user_agent,
        })
    }

    /// Send `out` and read the response, all before `deadline`.
    pub(crate) async fn send(
        &self,
        out: Outgoing,
        deadline: Instant,
        max_body: usize,
    ) -> Result<Incoming, ClientError> {
        match tokio::time::timeout_at(deadline, self.exchange(out, deadline, max_body)).await {
            Ok(result) => result,
            Err(_) => Err(ClientError::Timeout),
        }
    }

    async fn exchange(
        &self,
        out: Outgoing,
        deadline: Instant,
        max_body: usize,
    ) -> Result<Incoming, ClientError> {
        let (key, sender, response) = self.send_head(&out, deadline).await?;
        let incoming = self.read(response, max_body).await?;
        if let Sender::Http1(_) = sender {
            self.pool.checkin(key, sender);
        }
        Ok(incoming)
    }

    /// Send `out` on a pooled connection, or a new one (a pooled one found
    /// stale is replaced once), and return the response head with the
    /// connection it came on.
    async fn send_head(
        &self,
        out: &Outgoing,
        deadline: Instant,
    ) -> Result<(PoolKey, Sender, Response<HyperBody>), ClientError> {
        let tls = out.endpoint.scheme == Scheme::Https;
        let server_name = server_name(out);
        let pooled = out.addrs.iter().find_map(|addr| {
            let key = PoolKey {
                addr: *addr,
                server_name: server_name.clone(),
                tls,
            };
            self.pool.checkout(&key).map(|s| (key, s))
        });
        let (mut key, mut sender, mut reused) = match pooled {
            Some((key, sender)) => (key, sender, true),
            None => {
                let (key, sender) = self.connect(out, &server_name, deadline).await?;
                (key, sender, false)
            }
        };
        let mut request = Some(self.build(out, &sender)?);
        loop {
            let attempt = request.take().expect("request present for each attempt");
            match self.try_send(&mut sender, attempt).await {
                Ok(response) => return Ok((key, sender, response)),
                Err((err, returned)) => match returned {
                    // A stale pooled connection: retry once on a fresh one.
                    Some(_) if reused => {
                        (key, sender) = self.connect(out, &server_name, deadline).await?;
                        reused = false;
                        request = Some(self.build(out, &sender)?);
                    }
                    _ => return Err(err),
                },
            }
        }
    }

    /// Send `out` and return the response head before `deadline`, its body
    /// to be read as it arrives (a host client's event stream). The
    /// connection is pooled like any other: an HTTP/1.1 one goes back to
    /// the pool once the body has been read to its end, so a stream that
    /// answers one request (an MCP `tools/call`) costs no handshake.
    pub(crate) async fn open(
        &self,
        out: Outgoing,
        deadline: Instant,
    ) -> Result<Streaming, ClientError> {
        let head = async {
            let (key, sender, response) = self.send_head(&out, deadline).await?;
            let (parts, body) = response.into_parts();
            check_codings(&parts.headers)?;
            let checkin = match sender {
                Sender::Http1(_) => Some(Checkin {
                    pool: self.pool.clone(),
                    key,
                    sender,
                }),
                Sender::Http2(_) => None,
            };
            Ok(Streaming {
                status: parts.status,
                headers: parts.headers,
                body: StreamedBody {
                    body: Some(body),
                    checkin,
                },
            })
        };
        match tokio::time::timeout_at(deadline, head).await {
            Ok(result) => result,
            Err(_) => Err(ClientError::Timeout),
        }
    }

    /// One send attempt; on failure, the request if it was never written.
    async fn try_send(
        &self,
        sender: &mut Sender,
        request: Request<Full<Bytes>>,
    ) -> Result<Response<HyperBody>, (ClientError, Option<Request<Full<Bytes>>>)> {
        let head = async {
            match sender {
                Sender::Http1(s) => {
                    if tokio::time::timeout(Duration::from_millis(50), s.ready())
                        .await
                        .is_err()
                    {
                        return Err((ClientError::Protocol("connection not ready"), Some(request)));
                    }
                    s.try_send_request(request).await.map_err(|mut e| {
                        let returned = e.take_message();
                        (ClientError::Protocol("request failed"), returned)
                    })
                }
                Sender::Http2(s) => s.try_send_request(request).await.map_err(|mut e| {
                    let returned = e.take_message();
                    (ClientError::Protocol("request failed"), returned)
                }),
            }
        };
        match tokio::time::timeout(self.read_timeout, head).await {
            Ok(result) => result,
            Err(_) => Err((ClientError::Timeout, None)),
        }
    }

    fn build(&self, out: &Outgoing, sender: &Sender) -> Result<Request<Full<Bytes>>, ClientError> {
        let invalid = |_| ClientError::Protocol("request could not be built");
        let http2 = matches!(sender, Sender::Http2(_));
        let uri = if http2 {
            let mut url = out.url.clone();
            url.set_fragment(None);
            url.as_str().parse::<http::Uri>().map_err(invalid)?
        } else {
            let mut target = out.url.path().to_owned();
            if let Some(query) = out.url.query() {
                target.push('?');
                target.push_str(query);
            }
            target.parse::<http::Uri>().map_err(invalid)?
        };
        let mut request = Request::builder()
            .method(out.method.clone())
            .uri(uri)
            .version(if http2 {
                Version::HTTP_2
            } else {
                Version::HTTP_11
            })
            .body(Full::new(out.body.clone()))
            .map_err(|_| ClientError::Protocol("request could not be built"))?;
        let headers = request.headers_mut();
        headers.extend(out.headers.clone());
        if !http2 {
            let authority = match out.url.port() {
                Some(port) => format!("{}:{port}", out.endpoint.host),
                None => out.endpoint.host.clone(),
            };
            let host =
                HeaderValue::from_str(&authority).map_err(|_| ClientError::Protocol("host"))?;
            headers.insert(HOST, host);
        }
        headers
            .entry(USER_AGENT)
            .or_insert_with(|| self.user_agent.clone());
        headers.insert(
            http::header::ACCEPT_ENCODING,
            HeaderValue::from_static("identity"),
        );
        Ok(request)
    }

    async fn read(
        &self,
        response: Response<HyperBody>,
        max_body: usize,
    ) -> Result<Incoming, ClientError> {
        let (parts, mut body) = response.into_parts();
        check_codings(&parts.headers)?;
        let declared = parts
            .headers
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if declared.is_some_and(|len| len > max_body as u64) {
            return Err(ClientError::TooLarge);
        }
        let mut buf = Vec::with_capacity(declared.map_or(0, |len| len as usize));
        loop {
            let frame = tokio::time::timeout(self.read_timeout, body.frame())
                .await
                .map_err(|_| ClientError::Timeout)?;
            let Some(frame) = frame else { break };
            let frame = frame.map_err(|_| ClientError::Protocol("response body failed"))?;
            if let Ok(data) = frame.into_data() {
                if buf.len() + data.len() > max_body {
                    return Err(ClientError::TooLarge);
                }
                buf.extend_from_slice(&data);
            }
        }
        Ok(Incoming {
            status: parts.status,
            headers: parts.headers,
            body: buf,
        })
    }

    async fn connect(
        &self,
        out: &Outgoing,
        server_name: &str,
        deadline: Instant,
    ) -> Result<(PoolKey, Sender), ClientError> {
        let connect_by = out
            .connect_by
            .unwrap_or_else(|| Instant::now() + self.connect_timeout);
        let connect_deadline = deadline.min(connect_by);
        let tls = out.endpoint.scheme == Scheme::Https;
        let attempt = async {
            let mut failure = ClientError::Connect("no address");
            let mut connected = None;
            for addr in &out.addrs {
                match TcpStream::connect(addr).await {
                    Ok(stream) => {
                        connected = Some((*addr, stream));
                        break;
                    }
                    Err(e) => failure = ClientError::Connect(io_category(&e)),
                }
            }
            let (addr, stream) = connected.ok_or(failure)?;
            let _ = stream.set_nodelay(true);
            let key = PoolKey {
                addr,
                server_name: server_name.to_owned(),
                tls,
            };
            let sender = if tls {
                let name = ServerName::try_from(server_name.to_owned())
                    .map_err(|_| ClientError::Tls("invalid server name"))?;
                let stream = self
                    .tls
                    .connect(name, stream)
                    .await
                    .map_err(|e| ClientError::Tls(tls_category(&e)))?;
                let h2 = stream.get_ref().1.alpn_protocol() == Some(b"h2");
                handshake(stream, h2).await?
            } else {
                handshake(stream, false).await?
            };
            Ok::<_, ClientError>((key, sender))
        };
        let (key, sender) = tokio::time::timeout_at(connect_deadline, attempt)
            .await
            .map_err(|_| ClientError::Timeout)??;
        if let Sender::Http2(s) = &sender {
            self.pool.checkin(key.clone(), Sender::Http2(s.clone()));
        }
        Ok((key, sender))
    }
}

/// Refuse a body the redactor could not read as sent: every value of every
/// `Content-Encoding` line must be `identity`, and every value of every
/// `Transfer-Encoding` line `chunked` (which hyper removes). A value that is
/// not text is refused too.
fn check_codings(headers: &HeaderMap) -> Result<(), ClientError> {
    let only = |name, allowed: &str| {
        headers.get_all(name).iter().all(|value| {
            value.to_str().is_ok_and(|text| {
                text.split(',')
                    .map(str::trim)
                    .all(|coding| coding.eq_ignore_ascii_case(allowed))
            })
        })
    };
    if !only(CONTENT_ENCODING, "identity") {
        return Err(ClientError::Protocol("compressed response refused"));
    }
    if !only(TRANSFER_ENCODING, "chunked") {
        return Err(ClientError::Protocol(
            "transfer coding other than chunked refused",
        ));
    }
    Ok(())
}

async fn handshake<Io>(io: Io, h2: bool) -> Result<Sender, ClientError>
where
    Io: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let io = TokioIo::new(io);
    let failed = |_| ClientError::Protocol("handshake failed");
    if h2 {
        let (sender, conn) = http2::handshake(TokioExecutor::new(), io)
            .await
            .map_err(failed)?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        Ok(Sender::Http2(sender))
    } else {
        let (sender, conn) = http1::handshake(io).await.map_err(failed)?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        Ok(Sender::Http1(sender))
    }
}

fn io_category(e: &std::io::Error) -> &'static str {
    match e.kind() {
        std::io::ErrorKind::ConnectionRefused => "connection refused",
        std::io::ErrorKind::ConnectionReset => "connection reset",
        std::io::ErrorKind::TimedOut => "timed out",
        _ => "network unreachable",
    }
}

fn tls_category(e: &std::io::Error) -> &'static str {
    match e
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
    {
        Some(rustls::Error::InvalidCertificate(_)) => "server certificate not trusted",
        Some(rustls::Error::NoApplicationProtocol) => "no common application protocol",
        Some(_) => "handshake failed",
        None => "handshake failed",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(lines: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in lines {
            map.append(
                http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                HeaderValue::from_str(value).unwrap(),
            );
        }
        map
    }

    #[test]
    fn every_content_and_transfer_coding_is_checked() {
        let refused = [
            vec![
                ("content-encoding", "identity"),
                ("content-encoding", "gzip"),
            ],
            vec![("content-encoding", "identity, br")],
            vec![("content-encoding", "")],
            vec![("transfer-encoding", "gzip, chunked")],
            vec![
                ("transfer-encoding", "chunked"),
                ("transfer-encoding", "deflate"),
            ],
        ];
        for lines in refused {
            assert!(check_codings(&headers(&lines)).is_err(), "{lines:?}");
        }
        let accepted = [
            vec![],
            vec![
                ("content-encoding", "identity"),
                ("content-encoding", "IDENTITY"),
            ],
            vec![("transfer-encoding", "chunked")],
        ];
        for lines in accepted {
            assert!(check_codings(&headers(&lines)).is_ok(), "{lines:?}");
        }
    }
}
