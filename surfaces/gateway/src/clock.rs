//! Wall-clock seconds that follow tokio's clock, so pairing intervals and idle
//! resets are tested with paused time instead of waiting.

use tokio::time::Instant;

/// Unix seconds: the wall clock read once, then advanced by tokio's clock.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    unix_at_start: u64,
    start: Instant,
}

impl Clock {
    /// Starts from the system clock.
    pub fn system() -> Self {
        Self::starting_at(talaria_pairing::now())
    }

    /// Starts from `unix_secs` (tests).
    pub fn starting_at(unix_secs: u64) -> Self {
        Self {
            unix_at_start: unix_secs,
            start: Instant::now(),
        }
    }

    /// Now, in Unix seconds.
    pub fn unix_now(&self) -> u64 {
        self.unix_at_start + self.start.elapsed().as_secs()
    }
}
