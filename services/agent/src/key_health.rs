//! Keys the provider turned away, remembered for the life of the process: a key whose quota
//! is used up, that is rejected, or that is throttled for a known time is not sent again
//! until its reset time, so a new session (the REPL's `/new`, the gateway's next chat)
//! goes straight to the next key of the pool or the fallback instead of paying for the
//! same refusal again.

use std::collections::HashMap;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use talaria_kernel::{
    CancellationToken, ModelError, ModelProvider, ModelRequest, ModelResponse, StreamSink,
};

/// How long a used-up quota is skipped when the provider does not say when it comes back
/// (OpenAI's `insufficient_quota` and OpenRouter's 402 do not).
pub const QUOTA_RESET: Duration = Duration::from_secs(60 * 60);

/// Why a key is skipped, and until when (`None`: for the life of the process).
#[derive(Clone)]
struct Refusal {
    until: Option<Instant>,
    error: ModelError,
}

type Refusals = Mutex<HashMap<u64, Refusal>>;

fn refusals() -> &'static Refusals {
    static REFUSALS: OnceLock<Refusals> = OnceLock::new();
    REFUSALS.get_or_init(Refusals::default)
}

/// A provider whose key's refusals are remembered across the sessions of this process.
pub struct RememberedKey {
    inner: Arc<dyn ModelProvider>,
    /// A hash of the endpoint and the key (the key itself is not kept here).
    id: u64,
    /// The key, masked, for messages.
    masked: String,
}

impl RememberedKey {
    /// Wraps `inner`, which sends `api_key` to `base_url`.
    pub fn wrap(
        inner: Arc<dyn ModelProvider>,
        base_url: &str,
        api_key: &str,
        masked: String,
    ) -> Arc<dyn ModelProvider> {
        let mut hasher = DefaultHasher::new();
        (base_url, api_key).hash(&mut hasher);
        Arc::new(Self {
            inner,
            id: hasher.finish(),
            masked,
        })
    }

    /// The refusal still in force for this key, as the error to answer with.
    fn remembered(&self, now: Instant) -> Option<ModelError> {
        let mut map = refusals().lock().ok()?;
        let refusal = map.get(&self.id)?.clone();
        match refusal.until {
            Some(until) if until <= now => {
                map.remove(&self.id);
                None
            }
            until => Some(restate(refusal.error, until.map(|u| u - now), &self.masked)),
        }
    }

    fn remember(&self, error: &ModelError, now: Instant) {
        let until = match error {
            ModelError::Auth { .. } => None,
            ModelError::QuotaExhausted { retry_after, .. } => {
                Some(now + retry_after.unwrap_or(QUOTA_RESET))
            }
            ModelError::RateLimited {
                retry_after: Some(wait),
                ..
            } => Some(now + *wait),
            _ => return,
        };
        if let Ok(mut map) = refusals().lock() {
            map.insert(
                self.id,
                Refusal {
                    until,
                    error: error.clone(),
                },
            );
        }
    }

    fn forget(&self) {
        if let Ok(mut map) = refusals().lock() {
            map.remove(&self.id);
        }
    }
}

/// The remembered error, saying that it is remembered and for how long more.
fn restate(error: ModelError, left: Option<Duration>, masked: &str) -> ModelError {
    let note = |message: String| match left {
        Some(left) => format!(
            "{message} (key {masked} skipped for another {} s, as the provider said earlier in \
             this process)",
            left.as_secs().max(1)
        ),
        None => format!(
            "{message} (key {masked} skipped until restart, as the provider rejected it earlier \
             in this process)"
        ),
    };
    match error {
        ModelError::Auth { message } => ModelError::Auth {
            message: note(message),
        },
        ModelError::QuotaExhausted { message, .. } => ModelError::QuotaExhausted {
            message: note(message),
            retry_after: left,
        },
        ModelError::RateLimited { message, .. } => ModelError::RateLimited {
            message: note(message),
            retry_after: left,
        },
        other => other,
    }
}

#[async_trait]
impl ModelProvider for RememberedKey {
    fn name(&self) -> &str {
        self.inner.name()
    }

    async fn complete(
        &self,
        request: ModelRequest<'_>,
        sink: &dyn StreamSink,
        cancel: &CancellationToken,
    ) -> Result<ModelResponse, ModelError> {
        if let Some(error) = self.remembered(Instant::now()) {
            return Err(error);
        }
        let result = self.inner.complete(request, sink, cancel).await;
        match &result {
            Ok(_) => self.forget(),
            Err(error) => self.remember(error, Instant::now()),
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use talaria_kernel::{CacheBreakpoints, ToolChoice};

    /// Answers each call with the next scripted result, counting calls.
    struct Scripted {
        calls: AtomicUsize,
        results: Mutex<Vec<Result<ModelResponse, ModelError>>>,
    }

    #[async_trait]
    impl ModelProvider for Scripted {
        fn name(&self) -> &str {
            "scripted"
        }

        async fn complete(
            &self,
            _: ModelRequest<'_>,
            _: &dyn StreamSink,
            _: &CancellationToken,
        ) -> Result<ModelResponse, ModelError> {
            self.calls.fetch_add(1, Ordering::SeqCst);
            let mut results = self.results.lock().map_err(|_| ModelError::Cancelled)?;
            if results.is_empty() {
                return Ok(ModelResponse::default());
            }
            results.remove(0)
        }
    }

    struct NoSink;
    impl StreamSink for NoSink {
        fn on_event(&self, _: &talaria_kernel::StreamEvent) {}
    }

    fn scripted(results: Vec<Result<ModelResponse, ModelError>>) -> Arc<Scripted> {
        Arc::new(Scripted {
            calls: AtomicUsize::new(0),
            results: Mutex::new(results),
        })
    }

    async fn call(provider: &Arc<dyn ModelProvider>) -> Result<ModelResponse, ModelError> {
        let cache = CacheBreakpoints::default();
        let request = ModelRequest {
            model: "m",
            system: "",
            messages: &[],
            tools: &[],
            tool_choice: ToolChoice::Auto,
            cache: &cache,
            max_tokens: None,
        };
        provider
            .complete(request, &NoSink, &CancellationToken::new())
            .await
    }

    /// A new session: a new wrapper around a new provider, the same endpoint and key.
    fn session(inner: &Arc<Scripted>, key: &str) -> Arc<dyn ModelProvider> {
        RememberedKey::wrap(inner.clone(), "http://x", key, "…key".into())
    }

    #[tokio::test]
    async fn a_used_up_quota_is_not_asked_again_by_the_next_session() {
        let inner = scripted(vec![Err(ModelError::QuotaExhausted {
            message: "You exceeded your current quota".into(),
            retry_after: None,
        })]);
        let first = call(&session(&inner, "quota-key")).await.unwrap_err();
        assert!(matches!(first, ModelError::QuotaExhausted { .. }));
        let second = call(&session(&inner, "quota-key")).await.unwrap_err();
        assert_eq!(inner.calls.load(Ordering::SeqCst), 1, "no second request");
        let ModelError::QuotaExhausted {
            message,
            retry_after,
        } = second
        else {
            panic!("{second:?}")
        };
        assert!(
            message.contains("key …key skipped for another"),
            "{message}"
        );
        assert!(retry_after.is_some_and(|left| left <= QUOTA_RESET && left > QUOTA_RESET / 2));
        // Another key of the same endpoint is not affected.
        assert!(call(&session(&inner, "other-key")).await.is_ok());
    }

    #[tokio::test]
    async fn a_throttled_key_comes_back_after_its_reset_time() {
        let inner = scripted(vec![Err(ModelError::RateLimited {
            message: "slow down".into(),
            retry_after: Some(Duration::from_millis(30)),
        })]);
        let provider = session(&inner, "throttled-key");
        assert!(call(&provider).await.is_err());
        assert!(call(&provider).await.is_err(), "still throttled");
        assert_eq!(inner.calls.load(Ordering::SeqCst), 1);
        tokio::time::sleep(Duration::from_millis(40)).await;
        assert!(call(&provider).await.is_ok(), "the reset time has passed");
        assert_eq!(inner.calls.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn a_rejected_key_stays_skipped_and_passing_errors_are_not_remembered() {
        let inner = scripted(vec![
            Err(ModelError::Server {
                status: 500,
                message: "boom".into(),
                retry_after: None,
            }),
            Err(ModelError::Auth {
                message: "invalid x-api-key".into(),
            }),
        ]);
        let provider = session(&inner, "rejected-key");
        assert!(matches!(
            call(&provider).await,
            Err(ModelError::Server { .. })
        ));
        assert!(matches!(
            call(&provider).await,
            Err(ModelError::Auth { .. })
        ));
        let again = call(&session(&inner, "rejected-key")).await.unwrap_err();
        assert!(
            matches!(&again, ModelError::Auth { message } if message.contains("until restart")),
            "{again:?}"
        );
        assert_eq!(inner.calls.load(Ordering::SeqCst), 2);
    }
}
