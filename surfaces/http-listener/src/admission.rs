//! Connections that are not being served: those still sending their request
//! headers, idle keep-alive ones between requests and those waiting for a
//! slot. Nothing proves such a connection is wanted, so they are counted per
//! source and in total: over the per-source limit the newest of that source
//! is closed at once (unless the source keeps an idle connection it was
//! served on, as a proxy's pool does: that one makes room); over the total
//! the oldest of the source holding most is shed. A valid request therefore
//! finds room at once, however many stalled clients are connected.

use std::collections::{BTreeMap, HashMap};
use std::net::{IpAddr, Ipv4Addr};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio_util::sync::CancellationToken;

/// Where a connection comes from, as far as limits go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Source {
    /// An IPv4 address (IPv4-mapped IPv6 ones included).
    V4(Ipv4Addr),
    /// An IPv6 /64: one host is usually given a whole /64, so counting single
    /// addresses would not limit it.
    V6Prefix(u64),
}

impl Source {
    /// The source a peer address counts under.
    pub fn of(ip: IpAddr) -> Self {
        match ip {
            IpAddr::V4(v4) => Source::V4(v4),
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => Source::V4(v4),
                None => {
                    let octets = v6.octets();
                    let mut prefix = [0u8; 8];
                    prefix.copy_from_slice(&octets[..8]);
                    Source::V6Prefix(u64::from_be_bytes(prefix))
                }
            },
        }
    }
}

/// One connection known to the tally.
#[derive(Debug)]
struct Entry {
    source: Source,
    /// When it last started waiting (an ordinal from the tally's counter);
    /// `None` while a request is being served.
    waiting_since: Option<u64>,
    /// Whether a request of it has been served.
    served: bool,
    /// Cancelled to close the connection.
    shed: CancellationToken,
}

#[derive(Debug, Default)]
struct Tally {
    /// Connection ids and waiting ordinals both come from here, so a larger
    /// number is always newer.
    counter: u64,
    connections: HashMap<u64, Entry>,
    /// Waiting connections by source, oldest first: ordinal → id.
    waiting: HashMap<Source, BTreeMap<u64, u64>>,
    waiting_total: usize,
}

impl Tally {
    fn next(&mut self) -> u64 {
        self.counter += 1;
        self.counter
    }

    /// Puts connection `id` among the waiting ones; `false` when its source
    /// already holds its share (then it is the one to close).
    fn start_waiting(&mut self, id: u64, limits: Caps) -> bool {
        let Some(entry) = self.connections.get(&id) else {
            return true;
        };
        if entry.waiting_since.is_some() || entry.shed.is_cancelled() {
            return true;
        }
        let source = entry.source;
        let held = self.waiting.get(&source).map_or(0, BTreeMap::len);
        if held >= limits.per_source.max(1) {
            return false;
        }
        if self.waiting_total >= limits.total.max(1) {
            self.shed_one();
        }
        let since = self.next();
        if let Some(entry) = self.connections.get_mut(&id) {
            entry.waiting_since = Some(since);
        }
        self.waiting.entry(source).or_default().insert(since, id);
        self.waiting_total += 1;
        true
    }

    /// Takes connection `id` off the waiting ones.
    fn stop_waiting(&mut self, id: u64) {
        let Some(entry) = self.connections.get_mut(&id) else {
            return;
        };
        let Some(since) = entry.waiting_since.take() else {
            return;
        };
        let source = entry.source;
        if let Some(of_source) = self.waiting.get_mut(&source) {
            if of_source.remove(&since).is_some() {
                self.waiting_total -= 1;
            }
            if of_source.is_empty() {
                self.waiting.remove(&source);
            }
        }
    }

    /// The oldest connection of `source` idle after being served.
    fn oldest_idle(&self, source: Source) -> Option<u64> {
        self.waiting
            .get(&source)?
            .values()
            .copied()
            .find(|id| self.connections.get(id).is_some_and(|entry| entry.served))
    }

    /// Stops counting connection `id` and closes it.
    fn shed(&mut self, id: u64) {
        self.stop_waiting(id);
        if let Some(entry) = self.connections.get(&id) {
            entry.shed.cancel();
        }
    }

    /// Closes the oldest waiting connection of the source holding most (of
    /// equals, the one whose oldest waits longest).
    fn shed_one(&mut self) {
        let victim = self
            .waiting
            .values()
            .filter_map(|of_source| {
                let (since, id) = of_source.first_key_value()?;
                Some((of_source.len(), std::cmp::Reverse(*since), *id))
            })
            .max()
            .map(|(_, _, id)| id);
        if let Some(id) = victim {
            self.shed(id);
        }
    }
}

/// The limits on connections not being served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caps {
    /// In total.
    pub total: usize,
    /// From one source.
    pub per_source: usize,
}

/// The tally of one listener's connections.
#[derive(Debug)]
pub struct Admission {
    limits: Caps,
    tally: Mutex<Tally>,
}

impl Admission {
    /// A tally enforcing `limits`.
    pub fn new(limits: Caps) -> Arc<Self> {
        Arc::new(Self {
            limits,
            tally: Mutex::default(),
        })
    }

    fn tally(&self) -> MutexGuard<'_, Tally> {
        // The tally holds no invariant a panicking holder could break halfway
        // that matters more than going on serving.
        self.tally
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Admits a new connection from `source`, shedding the oldest waiting
    /// one if the total is reached; `None` when its source already holds its
    /// share (close it at once).
    pub fn admit(self: &Arc<Self>, source: Source) -> Option<Ticket> {
        let mut tally = self.tally();
        let held = tally.waiting.get(&source).map_or(0, BTreeMap::len);
        if held >= self.limits.per_source.max(1) {
            // A proxy keeps a pool of connections it was served on; the
            // oldest of those makes room, where a stalled client has none.
            let idle = tally.oldest_idle(source)?;
            tally.shed(idle);
        }
        let id = tally.next();
        let shed = CancellationToken::new();
        tally.connections.insert(
            id,
            Entry {
                source,
                waiting_since: None,
                served: false,
                shed: shed.clone(),
            },
        );
        if !tally.start_waiting(id, self.limits) {
            tally.connections.remove(&id);
            return None;
        }
        Some(Ticket {
            connection: Connection {
                admission: self.clone(),
                id,
            },
            shed,
        })
    }

    /// How many connections are waiting, in total and from `source`.
    #[cfg(test)]
    pub fn waiting(&self, source: Source) -> (usize, usize) {
        let tally = self.tally();
        let of_source = tally.waiting.get(&source).map_or(0, BTreeMap::len);
        (tally.waiting_total, of_source)
    }
}

/// A connection's handle on the tally, for its requests.
#[derive(Debug, Clone)]
pub struct Connection {
    admission: Arc<Admission>,
    id: u64,
}

impl Connection {
    /// A request's headers are in and it has a slot: no longer waiting.
    pub fn serving(&self) {
        let mut tally = self.admission.tally();
        tally.stop_waiting(self.id);
        if let Some(entry) = tally.connections.get_mut(&self.id) {
            entry.served = true;
        }
    }

    /// Its request is answered and it waits for the next one: counted again,
    /// and closed when its source already holds its share.
    pub fn waiting(&self) {
        let admission = &self.admission;
        let mut tally = admission.tally();
        if !tally.start_waiting(self.id, admission.limits)
            && let Some(entry) = tally.connections.get(&self.id)
        {
            entry.shed.cancel();
        }
    }
}

/// An admitted connection: leaves the tally when dropped.
#[derive(Debug)]
pub struct Ticket {
    connection: Connection,
    shed: CancellationToken,
}

impl Ticket {
    /// Cancelled when the connection is to be closed.
    pub fn shed(&self) -> CancellationToken {
        self.shed.clone()
    }

    /// The handle its requests report through.
    pub fn connection(&self) -> Connection {
        self.connection.clone()
    }

    /// Whether a request of it has been served (its last answer may still
    /// be on its way out).
    pub fn was_served(&self) -> bool {
        let tally = self.connection.admission.tally();
        tally
            .connections
            .get(&self.connection.id)
            .is_some_and(|entry| entry.served)
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let mut tally = self.connection.admission.tally();
        tally.stop_waiting(self.connection.id);
        tally.connections.remove(&self.connection.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from(last: u8) -> Source {
        Source::V4(Ipv4Addr::new(127, 0, 0, last))
    }

    fn admission(total: usize, per_source: usize) -> Arc<Admission> {
        Admission::new(Caps { total, per_source })
    }

    #[test]
    fn over_its_share_a_source_has_its_newest_closed() {
        let admission = admission(100, 2);
        let first = admission.admit(from(2)).unwrap();
        let second = admission.admit(from(2)).unwrap();
        assert!(admission.admit(from(2)).is_none(), "the third is refused");
        assert!(admission.admit(from(3)).is_some(), "another source is not");
        assert!(!first.shed().is_cancelled() && !second.shed().is_cancelled());
        assert_eq!(admission.waiting(from(2)), (2, 2));

        // Being served frees the place; answered, it waits again.
        first.connection().serving();
        let third = admission.admit(from(2)).unwrap();
        first.connection().waiting();
        assert!(first.shed().is_cancelled(), "no room to wait again");
        drop(third);
        assert_eq!(admission.waiting(from(2)), (1, 1));
    }

    #[test]
    fn a_source_at_its_share_gives_up_an_idle_connection_it_was_served_on() {
        let admission = admission(100, 2);
        let pooled = admission.admit(from(2)).unwrap();
        pooled.connection().serving();
        pooled.connection().waiting();
        let stalled = admission.admit(from(2)).unwrap();
        let newer = admission.admit(from(2)).unwrap();
        assert!(
            pooled.shed().is_cancelled(),
            "the idle pooled one made room"
        );
        assert!(pooled.was_served() && !stalled.was_served());
        assert!(admission.admit(from(2)).is_none(), "no idle one is left");
        assert!(!stalled.shed().is_cancelled() && !newer.shed().is_cancelled());
        assert_eq!(admission.waiting(from(2)), (2, 2));
    }

    #[test]
    fn over_the_total_the_oldest_of_the_largest_source_is_shed() {
        let admission = admission(4, 10);
        let a1 = admission.admit(from(2)).unwrap();
        let b1 = admission.admit(from(3)).unwrap();
        let b2 = admission.admit(from(3)).unwrap();
        let a2 = admission.admit(from(2)).unwrap();
        // Equal holdings: the source whose oldest waits longest loses it.
        let c1 = admission.admit(from(4)).unwrap();
        assert!(a1.shed().is_cancelled());
        let b3 = admission.admit(from(3)).unwrap();
        assert!(b1.shed().is_cancelled(), "source 3 held most");
        for kept in [&b2, &a2, &c1, &b3] {
            assert!(!kept.shed().is_cancelled());
        }
        assert_eq!(admission.waiting(from(3)), (4, 2));
    }

    #[test]
    fn connections_being_served_are_never_shed_and_leave_no_trace() {
        let admission = admission(1, 1);
        let served = admission.admit(from(2)).unwrap();
        served.connection().serving();
        let waiting = admission.admit(from(2)).unwrap();
        let newer = admission.admit(from(3)).unwrap();
        assert!(!served.shed().is_cancelled());
        assert!(waiting.shed().is_cancelled(), "the oldest waiting one");
        assert!(!newer.shed().is_cancelled());
        drop((served, waiting, newer));
        assert_eq!(admission.waiting(from(2)), (0, 0));
        assert!(admission.tally().connections.is_empty());
    }

    #[test]
    fn ipv6_hosts_count_by_their_64_and_mapped_ipv4_as_ipv4() {
        let a: IpAddr = "2001:db8:1:2::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:ffff::9".parse().unwrap();
        let c: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(Source::of(a), Source::of(b));
        assert_ne!(Source::of(a), Source::of(c));
        let mapped: IpAddr = "::ffff:127.0.0.2".parse().unwrap();
        assert_eq!(Source::of(mapped), from(2));
    }
}
