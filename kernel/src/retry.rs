//! Retry timing: jittered exponential backoff that honours a provider's `Retry-After`.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// How the loop retries a failed model call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct RetryPolicy {
    /// Retries per call after the first attempt.
    pub max_retries: u32,
    /// Delay before the first retry.
    #[serde(with = "millis")]
    pub base_delay: Duration,
    /// Upper bound of any computed delay.
    #[serde(with = "millis")]
    pub max_delay: Duration,
    /// Upper bound on a provider-requested `Retry-After`.
    #[serde(with = "millis")]
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 3,
            base_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(30),
            max_retry_after: Duration::from_secs(120),
        }
    }
}

impl RetryPolicy {
    /// Delay before retry number `attempt` (1-based). A provider's `Retry-After`
    /// wins (capped); otherwise `base * 2^(attempt-1)`, capped, with jitter in
    /// [50 %, 100 %] so many clients don't retry in lockstep.
    pub fn delay(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        if let Some(asked) = retry_after {
            return asked.min(self.max_retry_after);
        }
        let exponent = attempt.saturating_sub(1).min(20);
        let uncapped = self.base_delay.saturating_mul(1u32 << exponent);
        let capped = uncapped.min(self.max_delay);
        capped.mul_f64(0.5 + fastrand::f64() * 0.5)
    }
}

mod millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(value: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u64(value.as_millis().try_into().unwrap_or(u64::MAX))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
        u64::deserialize(deserializer).map(Duration::from_millis)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_exponentially_with_jitter_and_cap() {
        let policy = RetryPolicy {
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(1000),
            ..RetryPolicy::default()
        };
        for _ in 0..50 {
            let first = policy.delay(1, None);
            assert!(first >= Duration::from_millis(50) && first <= Duration::from_millis(100));
            let third = policy.delay(3, None);
            assert!(third >= Duration::from_millis(200) && third <= Duration::from_millis(400));
            let tenth = policy.delay(10, None);
            assert!(tenth >= Duration::from_millis(500) && tenth <= Duration::from_millis(1000));
        }
    }

    #[test]
    fn retry_after_is_honoured_but_capped() {
        let policy = RetryPolicy::default();
        assert_eq!(
            policy.delay(1, Some(Duration::from_secs(7))),
            Duration::from_secs(7)
        );
        assert_eq!(
            policy.delay(1, Some(Duration::from_secs(9999))),
            policy.max_retry_after
        );
    }
}
