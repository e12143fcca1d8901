//! One unary gRPC call made in-process: the request message framed as gRPC and handed to a tower service
//! (the tonic `Routes` of the gRPC services, with their layers), the answer's status read from the
//! trailers (or trailers-only headers) and its one message unframed.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use http::{HeaderName, HeaderValue, Method, Request, Response, StatusCode, Version, header};
use http_body_util::{BodyExt, Full};
use tonic::{Code, Status};
use tower::{Service, ServiceExt};

/// Request headers passed on to the gRPC call as metadata.
pub(crate) const FORWARDED_HEADERS: &[&str] = &["authorization", "x-request-id"];

/// Calls `grpc` at `path` (`/<package.Service>/<Method>`) with the encoded request `message`. `parts` are
/// those of the HTTP request: the forwarded headers become metadata and the extensions move to the gRPC
/// request. Returns the encoded response message, or the status the call ended with, and the extensions of
/// the gRPC response (the layers behind `grpc` leave notes there, such as who was authenticated).
pub(crate) async fn unary<S, B>(
    grpc: S,
    path: &str,
    message: Vec<u8>,
    parts: http::request::Parts,
) -> (Result<Bytes, Status>, http::Extensions)
where
    S: Service<Request<tonic::body::Body>, Response = Response<B>>,
    S::Error: Into<tower::BoxError>,
    B: http_body::Body<Data = Bytes>,
    B::Error: Into<tower::BoxError>,
{
    let request = match grpc_request(path, &message, parts) {
        Ok(request) => request,
        Err(status) => return (Err(status), http::Extensions::new()),
    };
    let response = match grpc.oneshot(request).await {
        Ok(response) => response,
        Err(e) => {
            let status = Status::internal(format!("the gRPC service failed: {}", e.into()));
            return (Err(status), http::Extensions::new());
        }
    };
    let (mut head, body) = response.into_parts();
    let extensions = std::mem::take(&mut head.extensions);
    (answer(head, body).await, extensions)
}

/// The message of a gRPC answer, or the status it ended with.
async fn answer<B>(head: http::response::Parts, body: B) -> Result<Bytes, Status>
where
    B: http_body::Body<Data = Bytes>,
    B::Error: Into<tower::BoxError>,
{
    if head.status != StatusCode::OK {
        return Err(Status::new(
            code_from_http(head.status),
            format!("the gRPC service answered HTTP {}", head.status),
        ));
    }
    if let Some(status) = Status::from_header_map(&head.headers)
        && status.code() != Code::Ok
    {
        return Err(status);
    }
    let collected = body
        .collect()
        .await
        .map_err(|e| Status::internal(format!("reading the gRPC response failed: {}", e.into())))?;
    let trailers = collected.trailers().and_then(Status::from_header_map);
    let status = trailers
        .or_else(|| Status::from_header_map(&head.headers))
        .ok_or_else(|| Status::internal("the gRPC response has no grpc-status"))?;
    if status.code() != Code::Ok {
        return Err(status);
    }
    unframe(collected.to_bytes())
}

/// The HTTP/2 request tonic expects, carrying `message` as one uncompressed frame.
fn grpc_request(
    path: &str,
    message: &[u8],
    parts: http::request::Parts,
) -> Result<Request<tonic::body::Body>, Status> {
    let body = tonic::body::Body::new(Full::new(frame(message)?));
    let mut request = Request::new(body);
    *request.method_mut() = Method::POST;
    *request.version_mut() = Version::HTTP_2;
    *request.uri_mut() = path
        .parse()
        .map_err(|e| Status::internal(format!("gRPC path {path:?}: {e}")))?;
    let headers = request.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
    headers.insert(header::TE, HeaderValue::from_static("trailers"));
    for name in FORWARDED_HEADERS {
        let name = HeaderName::from_static(name);
        for value in parts.headers.get_all(&name) {
            headers.append(name.clone(), value.clone());
        }
    }
    *request.extensions_mut() = parts.extensions;
    Ok(request)
}

/// `message` with gRPC's 5-byte prefix: not compressed, then the length (big-endian).
fn frame(message: &[u8]) -> Result<Bytes, Status> {
    let length =
        u32::try_from(message.len()).map_err(|_| Status::resource_exhausted("the request is too large"))?;
    let mut framed = BytesMut::with_capacity(message.len() + 5);
    framed.put_u8(0);
    framed.put_u32(length);
    framed.put_slice(message);
    Ok(framed.freeze())
}

/// The first message of a gRPC response body.
fn unframe(mut data: Bytes) -> Result<Bytes, Status> {
    if data.len() < 5 {
        return Err(Status::internal("the gRPC response has no message"));
    }
    let compressed = data.get_u8();
    let length = data.get_u32() as usize;
    if compressed != 0 {
        return Err(Status::internal("the gRPC response is compressed"));
    }
    if data.len() < length {
        return Err(Status::internal("the gRPC response message is truncated"));
    }
    Ok(data.split_to(length))
}

/// The gRPC code for a non-200 HTTP answer of a gRPC server (gRPC's HTTP-to-status mapping).
fn code_from_http(status: StatusCode) -> Code {
    match status.as_u16() {
        400 => Code::Internal,
        401 => Code::Unauthenticated,
        403 => Code::PermissionDenied,
        404 => Code::Unimplemented,
        429 | 502..=504 => Code::Unavailable,
        _ => Code::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip() {
        let framed = frame(b"hello").unwrap();
        assert_eq!(&framed[..5], &[0, 0, 0, 0, 5]);
        assert_eq!(unframe(framed).unwrap(), Bytes::from_static(b"hello"));
        assert_eq!(unframe(frame(b"").unwrap()).unwrap(), Bytes::new());
        assert_eq!(
            unframe(Bytes::from_static(&[0, 0, 0])).unwrap_err().code(),
            Code::Internal
        );
        assert_eq!(
            unframe(Bytes::from_static(&[0, 0, 0, 0, 9, 1]))
                .unwrap_err()
                .code(),
            Code::Internal
        );
        assert_eq!(
            unframe(Bytes::from_static(&[1, 0, 0, 0, 1, 1]))
                .unwrap_err()
                .code(),
            Code::Internal
        );
    }
}
