//! The client-side rate limit of every request the host sends to the Kubernetes API (`--qps`, `--burst`, as
//! client-go's token bucket behind KubeRay's flags of the same names): a request waits for a token before it
//! is sent, tokens come back at `qps` per second, and at most `burst` are saved up. Watches, lists, writes,
//! Events, the Lease and the requests to Ray heads through the API server's proxy share one bucket.
//!
//! The bucket is `governor`'s (GCRA, equivalent to a token bucket); this module only makes it a tower layer
//! that waits for a token in `poll_ready`, so kube's request buffer keeps requests in order while it waits.
//! How long a request waited goes with it (a [`RateLimitWait`] extension) to the metrics layer inside.

use std::{
    future::Future,
    num::NonZeroU32,
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
    time::{Duration, Instant},
};

use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use tower::{Layer, Service};

use crate::metrics::RateLimitWait;

/// The limit: `qps` requests per second on average, `burst` at once after a quiet period.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ApiRateLimit {
    /// Sustained requests per second (fractions allowed).
    pub qps: f64,
    /// Requests that may go at once after a quiet period (at least 1).
    pub burst: u32,
}

impl ApiRateLimit {
    /// `--qps` and `--burst` as client-go reads them: 0 is its default (5 per second, a burst of 10), a
    /// negative rate no limit.
    pub fn from_flags(qps: f64, burst: u32) -> Option<Self> {
        if qps < 0.0 {
            return None;
        }
        Some(Self {
            qps: if qps == 0.0 { 5.0 } else { qps },
            burst: if burst == 0 { 10 } else { burst },
        })
    }
}

/// A tower layer applying one shared [`ApiRateLimit`] to the services it wraps.
#[derive(Clone)]
pub(crate) struct RateLimitLayer {
    limiter: Arc<DefaultDirectRateLimiter>,
}

impl RateLimitLayer {
    /// The layer of `limit`; `None` when `qps` is not a positive, finite number.
    pub(crate) fn new(limit: ApiRateLimit) -> Option<Self> {
        if !(limit.qps.is_finite() && limit.qps > 0.0) {
            return None;
        }
        let period = Duration::from_secs_f64(1.0 / limit.qps).max(Duration::from_nanos(1));
        let burst = NonZeroU32::new(limit.burst).unwrap_or(NonZeroU32::MIN);
        let quota = Quota::with_period(period)?.allow_burst(burst);
        Some(Self {
            limiter: Arc::new(RateLimiter::direct(quota)),
        })
    }
}

impl<S> Layer<S> for RateLimitLayer {
    type Service = RateLimited<S>;

    fn layer(&self, inner: S) -> Self::Service {
        RateLimited {
            inner,
            limiter: self.limiter.clone(),
            waiting: None,
            token: None,
        }
    }
}

/// The wait for a token.
type Wait = Pin<Box<dyn Future<Output = ()> + Send>>;

/// A service whose requests each take a token first.
pub(crate) struct RateLimited<S> {
    inner: S,
    limiter: Arc<DefaultDirectRateLimiter>,
    /// The wait for the next token, and when it began, while one is under way.
    waiting: Option<(Wait, Instant)>,
    /// A token was taken for the next `call`, after this wait.
    token: Option<Duration>,
}

impl<S, B> Service<http::Request<B>> for RateLimited<S>
where
    S: Service<http::Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        if self.token.is_none() {
            let limiter = self.limiter.clone();
            let (waiting, since) = self.waiting.get_or_insert_with(|| {
                (
                    Box::pin(async move { limiter.until_ready().await }),
                    Instant::now(),
                )
            });
            if waiting.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            self.token = Some(since.elapsed());
            self.waiting = None;
        }
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: http::Request<B>) -> Self::Future {
        // tower's contract: `call` follows a `poll_ready` that answered ready, which took the token.
        if let Some(waited) = self.token.take() {
            request.extensions_mut().insert(RateLimitWait(waited));
        }
        self.inner.call(request)
    }
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;

    use tower::{ServiceExt, service_fn};

    use super::*;

    #[test]
    fn flags_read_as_client_go_reads_them() {
        let limit = |qps, burst| ApiRateLimit::from_flags(qps, burst);
        assert_eq!(limit(0.0, 0), Some(ApiRateLimit { qps: 5.0, burst: 10 }));
        assert_eq!(limit(2.5, 3), Some(ApiRateLimit { qps: 2.5, burst: 3 }));
        assert_eq!(limit(-1.0, 3), None);
    }

    /// Sends `requests` requests under `limit`: the time it took, and the wait each request carried.
    async fn send_each(limit: ApiRateLimit, requests: usize) -> (Duration, Vec<Duration>) {
        let layer = RateLimitLayer::new(limit).unwrap();
        let mut service = layer.layer(service_fn(|request: http::Request<()>| async move {
            Ok::<_, Infallible>(request.extensions().get::<RateLimitWait>().map(|w| w.0))
        }));
        let start = Instant::now();
        let mut waits = Vec::new();
        for _ in 0..requests {
            let request = http::Request::new(());
            let waited = service.ready().await.unwrap().call(request).await.unwrap();
            waits.push(waited.expect("every request carries its wait"));
        }
        (start.elapsed(), waits)
    }

    async fn send_all(limit: ApiRateLimit, requests: usize) -> Duration {
        send_each(limit, requests).await.0
    }

    #[tokio::test]
    async fn each_request_carries_how_long_it_waited() {
        // Two at once, then 50 per second: the third waits for a period of 20 ms.
        let (_, waits) = send_each(ApiRateLimit { qps: 50.0, burst: 2 }, 3).await;
        assert!(waits[2] >= Duration::from_millis(10), "{waits:?}");
    }

    #[tokio::test]
    async fn a_burst_goes_at_once_and_the_rest_at_the_rate() {
        // 20 at once, then 5 more at 50 per second: at least 4 periods of 20 ms more.
        let within_burst = send_all(ApiRateLimit { qps: 50.0, burst: 20 }, 20).await;
        let beyond = send_all(ApiRateLimit { qps: 50.0, burst: 20 }, 25).await;
        // The burst waits for nothing (19 periods would be 380 ms), the rest waits for the rate.
        assert!(within_burst < Duration::from_millis(300), "{within_burst:?}");
        assert!(beyond >= Duration::from_millis(80), "{beyond:?}");
    }

    #[test]
    fn no_limit_without_a_positive_rate() {
        for qps in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(
                RateLimitLayer::new(ApiRateLimit { qps, burst: 10 }).is_none(),
                "{qps}"
            );
        }
        assert!(RateLimitLayer::new(ApiRateLimit { qps: 0.5, burst: 0 }).is_some());
    }
}
