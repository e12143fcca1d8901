//! Serving a service on a TCP port: plain or TLS, HTTP/1.1 and HTTP/2 on the same port (gRPC clients speak
//! HTTP/2 with prior knowledge, REST clients either), the verified client certificate of a TLS connection
//! attached to each of its requests, and a graceful stop: on shutdown the listener closes, open connections
//! finish their requests, and whatever still runs after the grace period is dropped.

use std::{convert::Infallible, net::SocketAddr, sync::Arc, time::Duration};

use axum::body::Body;
use hyper_util::{
    rt::{TokioExecutor, TokioIo},
    server::{conn::auto, graceful::GracefulShutdown},
};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tower::ServiceExt;

use crate::auth::ClientCertificate;

/// A TLS handshake that takes longer than this is dropped.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The address a request came from, in its extensions.
#[derive(Debug, Clone, Copy)]
pub struct PeerAddr(pub SocketAddr);

/// Serves `service` on `listener` until `shutdown` resolves, then waits up to `grace` for open connections.
pub async fn serve<S>(
    name: &'static str,
    listener: TcpListener,
    tls: Option<Arc<rustls::ServerConfig>>,
    service: S,
    shutdown: impl Future<Output = ()>,
    grace: Duration,
) where
    S: tower::Service<http::Request<Body>, Response = http::Response<Body>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    let graceful = GracefulShutdown::new();
    let acceptor = tls.map(TlsAcceptor::from);
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    tracing::warn!(listener = name, error = %e, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let service = service.clone();
        let watcher = graceful.watcher();
        let acceptor = acceptor.clone();
        tokio::spawn(async move {
            match acceptor {
                None => serve_connection(TokioIo::new(stream), service, PeerAddr(peer), None, watcher).await,
                Some(acceptor) => {
                    let stream = match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await
                    {
                        Ok(Ok(stream)) => stream,
                        Ok(Err(e)) => {
                            return tracing::debug!(listener = name, %peer, error = %e, "TLS handshake failed");
                        }
                        Err(_) => return tracing::debug!(listener = name, %peer, "TLS handshake timed out"),
                    };
                    let certificate = stream
                        .get_ref()
                        .1
                        .peer_certificates()
                        .and_then(|chain| chain.first())
                        .and_then(|leaf| ClientCertificate::from_der(leaf));
                    serve_connection(
                        TokioIo::new(stream),
                        service,
                        PeerAddr(peer),
                        certificate,
                        watcher,
                    )
                    .await
                }
            }
        });
    }
    drop(listener);
    tracing::info!(
        listener = name,
        open = graceful.count(),
        "stopped accepting; finishing open requests"
    );
    if tokio::time::timeout(grace, graceful.shutdown()).await.is_err() {
        tracing::warn!(
            listener = name,
            "open connections did not finish within {grace:?}; dropping them"
        );
    }
}

async fn serve_connection<I, S>(
    io: TokioIo<I>,
    service: S,
    peer: PeerAddr,
    certificate: Option<ClientCertificate>,
    watcher: hyper_util::server::graceful::Watcher,
) where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    S: tower::Service<http::Request<Body>, Response = http::Response<Body>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    let hyper_service = hyper::service::service_fn(move |request: http::Request<hyper::body::Incoming>| {
        let mut request = request.map(Body::new);
        request.extensions_mut().insert(peer);
        if let Some(certificate) = &certificate {
            request.extensions_mut().insert(certificate.clone());
        }
        service.clone().oneshot(request)
    });
    let builder = auto::Builder::new(TokioExecutor::new());
    let connection = builder.serve_connection_with_upgrades(io, hyper_service);
    if let Err(e) = watcher.watch(connection.into_owned()).await {
        tracing::debug!(peer = %peer.0, error = %e, "connection ended with an error");
    }
}
