//! gRPC codes as HTTP statuses (grpc-gateway's table) and the JSON error body every REST error has:
//! `{"code":<gRPC code>,"message":"...","details":[]}` (the `proto.Status` message of `error.proto`).

use axum::body::Body;
use http::{HeaderValue, Response, StatusCode, header};
use tonic::Code;

/// The HTTP status grpc-gateway answers for a gRPC code.
pub fn http_status(code: Code) -> StatusCode {
    match code {
        Code::Ok => StatusCode::OK,
        // Client Closed Request (nginx), as grpc-gateway.
        Code::Cancelled => StatusCode::from_u16(499).unwrap_or(StatusCode::BAD_REQUEST),
        Code::InvalidArgument | Code::FailedPrecondition | Code::OutOfRange => StatusCode::BAD_REQUEST,
        Code::DeadlineExceeded => StatusCode::GATEWAY_TIMEOUT,
        Code::NotFound => StatusCode::NOT_FOUND,
        Code::AlreadyExists | Code::Aborted => StatusCode::CONFLICT,
        Code::PermissionDenied => StatusCode::FORBIDDEN,
        Code::Unauthenticated => StatusCode::UNAUTHORIZED,
        Code::ResourceExhausted => StatusCode::TOO_MANY_REQUESTS,
        Code::Unimplemented => StatusCode::NOT_IMPLEMENTED,
        Code::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        Code::Unknown | Code::Internal | Code::DataLoss => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// The body of a REST error, as JSON.
#[derive(serde::Serialize)]
struct ErrorBody<'a> {
    code: i32,
    message: &'a str,
    details: [(); 0],
}

/// An error response with the HTTP status grpc-gateway gives `code` and the JSON error body.
pub fn error_response(code: Code, message: &str) -> Response<Body> {
    error_response_with_status(http_status(code), code, message)
}

/// An error response with an explicit HTTP status, for statuses the gRPC table does not produce
/// (405 Method Not Allowed, 413 Payload Too Large) and the same JSON error body.
pub fn error_response_with_status(status: StatusCode, code: Code, message: &str) -> Response<Body> {
    let body = ErrorBody {
        code: code as i32,
        message,
        details: [],
    };
    // Serializing an integer, a string and an empty array cannot fail; keep a valid body regardless.
    let json = serde_json::to_vec(&body).unwrap_or_else(|_| br#"{"code":13,"details":[]}"#.to_vec());
    json_response(status, json)
}

/// A 413 answer for a request body over the size limit (gRPC code RESOURCE_EXHAUSTED in the body).
pub fn payload_too_large(limit: usize) -> Response<Body> {
    error_response_with_status(
        StatusCode::PAYLOAD_TOO_LARGE,
        Code::ResourceExhausted,
        &format!("the request body is larger than the limit of {limit} bytes"),
    )
}

/// A response with a JSON body.
pub(crate) fn json_response(status: StatusCode, json: Vec<u8>) -> Response<Body> {
    let mut response = Response::new(Body::from(json));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_map_as_grpc_gateway_does() {
        let table = [
            (Code::Ok, 200),
            (Code::Cancelled, 499),
            (Code::Unknown, 500),
            (Code::InvalidArgument, 400),
            (Code::DeadlineExceeded, 504),
            (Code::NotFound, 404),
            (Code::AlreadyExists, 409),
            (Code::PermissionDenied, 403),
            (Code::ResourceExhausted, 429),
            (Code::FailedPrecondition, 400),
            (Code::Aborted, 409),
            (Code::OutOfRange, 400),
            (Code::Unimplemented, 501),
            (Code::Internal, 500),
            (Code::Unavailable, 503),
            (Code::DataLoss, 500),
            (Code::Unauthenticated, 401),
        ];
        for (code, status) in table {
            assert_eq!(http_status(code).as_u16(), status, "{code:?}");
        }
    }

    #[tokio::test]
    async fn error_body_is_status_json() {
        let response = error_response(Code::NotFound, "cluster \"c\" not found");
        assert_eq!(response.status(), StatusCode::NOT_FOUND);
        assert_eq!(response.headers()[header::CONTENT_TYPE], "application/json");
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        assert_eq!(
            std::str::from_utf8(&bytes).unwrap(),
            r#"{"code":5,"message":"cluster \"c\" not found","details":[]}"#
        );
        let response = payload_too_large(10);
        assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        let json: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(json["code"], 8);
        assert_eq!(json["details"], serde_json::json!([]));
    }
}
