//! Noticing a dead connection: a TCP connection whose peer vanished stays
//! open until a write fails, so after a quiet spell the client sends a PING
//! and gives up when nothing at all arrives in answer.

/// Quiet time before we ping the server.
pub const QUIET_MS: u64 = 150_000;
/// How long the server has to answer that ping (with anything).
pub const ANSWER_MS: u64 = 60_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    Fine,
    /// Send a PING now.
    Ping,
    /// Nothing came back: the connection is dead.
    GiveUp,
}

#[derive(Debug)]
pub struct Keepalive {
    last_heard_ms: u64,
    pinged_at_ms: Option<u64>,
}

impl Keepalive {
    pub fn new(now_ms: u64) -> Self {
        Self {
            last_heard_ms: now_ms,
            pinged_at_ms: None,
        }
    }

    /// A line arrived.
    pub fn heard(&mut self, now_ms: u64) {
        self.last_heard_ms = now_ms;
        self.pinged_at_ms = None;
    }

    /// What to do at `now_ms`; a `Ping` is reported once per quiet spell.
    pub fn check(&mut self, now_ms: u64) -> Check {
        match self.pinged_at_ms {
            Some(at) if now_ms.saturating_sub(at) >= ANSWER_MS => Check::GiveUp,
            Some(_) => Check::Fine,
            None if now_ms.saturating_sub(self.last_heard_ms) >= QUIET_MS => {
                self.pinged_at_ms = Some(now_ms);
                Check::Ping
            }
            None => Check::Fine,
        }
    }

    /// Milliseconds until [`check`](Self::check) may say something new.
    pub fn next_check_in(&self, now_ms: u64) -> u64 {
        let due = match self.pinged_at_ms {
            Some(at) => at + ANSWER_MS,
            None => self.last_heard_ms + QUIET_MS,
        };
        due.saturating_sub(now_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quiet_connection_is_pinged_once_then_given_up() {
        let mut keepalive = Keepalive::new(0);
        assert_eq!(keepalive.check(QUIET_MS - 1), Check::Fine);
        assert_eq!(keepalive.next_check_in(QUIET_MS - 1), 1);
        assert_eq!(keepalive.check(QUIET_MS), Check::Ping);
        assert_eq!(keepalive.check(QUIET_MS + 10), Check::Fine);
        assert_eq!(keepalive.next_check_in(QUIET_MS), ANSWER_MS);
        assert_eq!(keepalive.check(QUIET_MS + ANSWER_MS), Check::GiveUp);
    }

    #[test]
    fn any_line_resets_the_spell() {
        let mut keepalive = Keepalive::new(0);
        assert_eq!(keepalive.check(QUIET_MS), Check::Ping);
        keepalive.heard(QUIET_MS + 5);
        assert_eq!(keepalive.check(QUIET_MS + ANSWER_MS), Check::Fine);
        assert_eq!(keepalive.check(2 * QUIET_MS + 5), Check::Ping);
    }
}
