//! Turn leases: one turn at a time per stored session, whichever chat (alias)
//! it comes from, handed on in the order the messages arrived; and what a
//! message does when its session is busy (the platform's busy mode). Only
//! sessions with a turn running or waiting have an entry; nothing stays once
//! they are idle.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use talaria_profile::BusyMode;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::ports::SteerNotes;

/// The running turns and those waiting, per session id (shared by every
/// account of the gateway).
#[derive(Debug, Default)]
pub struct Turns {
    sessions: Mutex<HashMap<String, SessionTurns>>,
    next_id: AtomicU64,
}

#[derive(Debug, Default)]
struct SessionTurns {
    /// The turn holding the lease.
    holder: Option<Running>,
    /// Turns waiting for it, in arrival order.
    waiting: VecDeque<Waiting>,
}

#[derive(Debug)]
struct Running {
    id: u64,
    cancel: CancellationToken,
    steer: SteerNotes,
    /// Cleared once the turn has answered: later messages start a new one.
    takes_notes: bool,
}

#[derive(Debug)]
struct Waiting {
    id: u64,
    cancel: CancellationToken,
    steer: SteerNotes,
    granted: oneshot::Sender<()>,
}

/// What to do with a message for a session.
#[derive(Debug)]
pub enum Admission {
    /// Run it once the lease is held (unless `cancel` fires first).
    Run(Ticket),
    /// Given to the running turn as a note.
    Steered,
}

/// A turn admitted to a session, waiting for its lease.
#[derive(Debug)]
pub struct Ticket {
    id: u64,
    session_id: String,
    cancel: CancellationToken,
    steer: SteerNotes,
    /// `None`: the lease was free at admission.
    granted: Option<oneshot::Receiver<()>>,
    turns: Arc<Turns>,
}

/// A turn holding its session's lease; dropping it hands the lease on.
#[derive(Debug)]
pub struct Held {
    id: u64,
    session_id: String,
    turns: Arc<Turns>,
    /// Notes for the running turn (busy mode `steer`).
    pub steer: SteerNotes,
    /// Cancelled when a later message interrupts it.
    pub cancel: CancellationToken,
}

impl Turns {
    /// Admits a message for `session_id` under `mode`.
    pub fn admit(self: &Arc<Self>, session_id: &str, mode: BusyMode, text: &str) -> Admission {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let cancel = CancellationToken::new();
        let steer = SteerNotes::default();
        let ticket = |granted| Ticket {
            id,
            session_id: session_id.to_owned(),
            cancel: cancel.clone(),
            steer: steer.clone(),
            granted,
            turns: self.clone(),
        };
        let Ok(mut sessions) = self.sessions.lock() else {
            // Poisoned: better to run unserialised than to drop the message.
            return Admission::Run(ticket(None));
        };
        let entry = sessions.entry(session_id.to_owned()).or_default();
        match (mode, &entry.holder) {
            (BusyMode::Steer, Some(running))
                if running.takes_notes && !running.cancel.is_cancelled() =>
            {
                running.steer.push(text.to_owned());
                return Admission::Steered;
            }
            (BusyMode::Interrupt, _) => {
                // The newest message wins over the running turn and any waiting one.
                if let Some(running) = &entry.holder {
                    running.cancel.cancel();
                }
                for waiting in &entry.waiting {
                    waiting.cancel.cancel();
                }
            }
            _ => {}
        }
        if entry.holder.is_none() && entry.waiting.is_empty() {
            entry.holder = Some(Running {
                id,
                cancel: cancel.clone(),
                steer: steer.clone(),
                takes_notes: true,
            });
            return Admission::Run(ticket(None));
        }
        let (granted, wait) = oneshot::channel();
        entry.waiting.push_back(Waiting {
            id,
            cancel: cancel.clone(),
            steer: steer.clone(),
            granted,
        });
        Admission::Run(ticket(Some(wait)))
    }

    /// Gives `text` to the turn running in `session_id` as a note, whatever
    /// the busy mode (an edit of the message it works on); false when no
    /// turn there takes notes.
    pub fn steer_running(&self, session_id: &str, text: &str) -> bool {
        let Ok(sessions) = self.sessions.lock() else {
            return false;
        };
        match sessions
            .get(session_id)
            .and_then(|entry| entry.holder.as_ref())
        {
            Some(running) if running.takes_notes && !running.cancel.is_cancelled() => {
                running.steer.push(text.to_owned());
                true
            }
            _ => false,
        }
    }

    /// Whether turn `id` holds the lease; if not, it leaves the queue.
    fn holds_or_leaves(&self, session_id: &str, id: u64) -> bool {
        let Ok(mut sessions) = self.sessions.lock() else {
            return false;
        };
        let Some(entry) = sessions.get_mut(session_id) else {
            return false;
        };
        if entry
            .holder
            .as_ref()
            .is_some_and(|running| running.id == id)
        {
            return true;
        }
        entry.waiting.retain(|waiting| waiting.id != id);
        if entry.holder.is_none() && entry.waiting.is_empty() {
            sessions.remove(session_id);
        }
        false
    }

    /// The notes that arrived for the running turn and that it did not take;
    /// when there are none, the turn is over (later messages start a new one).
    pub fn finish_or_take_notes(&self, held: &Held) -> Vec<String> {
        let Ok(mut sessions) = self.sessions.lock() else {
            return Vec::new();
        };
        let notes = held.steer.take();
        if notes.is_empty()
            && let Some(running) = sessions
                .get_mut(&held.session_id)
                .and_then(|entry| entry.holder.as_mut())
                .filter(|running| running.id == held.id)
        {
            running.takes_notes = false;
        }
        notes
    }

    /// Turn `id` gives the lease up: the oldest waiting turn still listening
    /// gets it, or the session is forgotten.
    fn hand_on(&self, session_id: &str, id: u64) {
        let Ok(mut sessions) = self.sessions.lock() else {
            return;
        };
        let Some(entry) = sessions.get_mut(session_id) else {
            return;
        };
        if entry.holder.as_ref().is_none_or(|running| running.id != id) {
            return;
        }
        entry.holder = None;
        while let Some(next) = entry.waiting.pop_front() {
            if next.cancel.is_cancelled() {
                // It wakes on its token, finds it does not hold the lease, and stops.
                continue;
            }
            entry.holder = Some(Running {
                id: next.id,
                cancel: next.cancel,
                steer: next.steer,
                takes_notes: true,
            });
            if next.granted.send(()).is_ok() {
                return;
            }
            entry.holder = None;
        }
        sessions.remove(session_id);
    }

    /// How many sessions have a turn running or waiting.
    pub fn active_sessions(&self) -> usize {
        self.sessions.lock().map_or(0, |sessions| sessions.len())
    }
}

impl Ticket {
    /// Cancelled when a later message interrupts this turn.
    pub fn cancel(&self) -> &CancellationToken {
        &self.cancel
    }

    /// Waits for the session's lease; `None` when the turn was cancelled
    /// first (it never runs).
    pub async fn acquire(self) -> Option<Held> {
        let Ticket {
            id,
            session_id,
            cancel,
            steer,
            granted,
            turns,
        } = self;
        if let Some(granted) = granted {
            tokio::select! {
                _ = granted => {}
                () = cancel.cancelled() => {}
            }
            if !turns.holds_or_leaves(&session_id, id) {
                return None;
            }
        }
        let held = Held {
            id,
            session_id,
            turns,
            steer,
            cancel,
        };
        // Granted and interrupted at once: hand it straight on.
        (!held.cancel.is_cancelled()).then_some(held)
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.turns.hand_on(&self.session_id, self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_lease_goes_to_waiting_turns_in_arrival_order() {
        let turns = Arc::new(Turns::default());
        let run = |text: &str| match turns.admit("s", BusyMode::Queue, text) {
            Admission::Run(ticket) => ticket,
            Admission::Steered => panic!("queued, not steered"),
        };
        let first = run("1").acquire().await.unwrap();
        let (second, third) = (run("2"), run("3"));
        let order = Arc::new(Mutex::new(Vec::new()));
        // The later ticket starts waiting first: arrival order still wins.
        let waiters = [(third, 3), (second, 2)].map(|(ticket, n)| {
            let order = order.clone();
            tokio::spawn(async move {
                let held = ticket.acquire().await.unwrap();
                order.lock().unwrap().push(n);
                tokio::task::yield_now().await;
                drop(held);
            })
        });
        tokio::task::yield_now().await;
        drop(first);
        for waiter in waiters {
            waiter.await.unwrap();
        }
        assert_eq!(*order.lock().unwrap(), [2, 3]);
        assert_eq!(turns.active_sessions(), 0);
    }

    #[tokio::test]
    async fn an_interrupted_waiting_turn_never_runs_and_the_next_one_does() {
        let turns = Arc::new(Turns::default());
        let Admission::Run(first) = turns.admit("s", BusyMode::Queue, "1") else {
            panic!()
        };
        let first = first.acquire().await.unwrap();
        let Admission::Run(second) = turns.admit("s", BusyMode::Queue, "2") else {
            panic!()
        };
        let Admission::Run(third) = turns.admit("s", BusyMode::Interrupt, "3") else {
            panic!()
        };
        assert!(first.cancel.is_cancelled() && second.cancel().is_cancelled());
        assert!(second.acquire().await.is_none());
        drop(first);
        let third = third.acquire().await.unwrap();
        assert!(!third.cancel.is_cancelled());
        drop(third);
        assert_eq!(turns.active_sessions(), 0);
    }
}
