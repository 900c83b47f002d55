//! Browsers kept across the agents of one session. A surface that builds an
//! agent per message (the gateway's chats) would otherwise start a browser
//! per message and lose the page between them; with a keeper, a session's
//! browser stays until it has been idle for its timeout or the surface
//! closes it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use crate::{Browser, BrowserSettings};

/// How often idle browsers are looked for, at most.
const REAP_EVERY: Duration = Duration::from_secs(15);

/// One kept browser and how long it may idle.
struct Kept {
    browser: Arc<Browser>,
    idle: Duration,
}

/// The browsers of sessions, by session id.
pub struct BrowserKeeper {
    kept: Mutex<HashMap<String, Kept>>,
    reaper: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// The long-lived runtime the browsers' connections run on: a surface
    /// may run each message on a runtime of its own that ends with it.
    runtime: Option<tokio::runtime::Handle>,
}

impl std::fmt::Debug for BrowserKeeper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BrowserKeeper")
            .field("sessions", &self.lock().len())
            .finish()
    }
}

impl Drop for BrowserKeeper {
    fn drop(&mut self) {
        if let Some(reaper) = self.reaper.get_mut().ok().and_then(Option::take) {
            reaper.abort();
        }
    }
}

impl BrowserKeeper {
    /// An empty keeper; its browsers run on the runtime it is made on
    /// (else on their first caller's).
    pub fn new() -> Arc<Self> {
        Arc::new(Self {
            kept: Mutex::default(),
            reaper: Mutex::default(),
            runtime: tokio::runtime::Handle::try_current().ok(),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Kept>> {
        self.kept.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The browser of `session`: the kept one, else a new one (started on
    /// its first call) kept until idle for `idle`.
    pub fn browser(
        self: &Arc<Self>,
        session: &str,
        settings: BrowserSettings,
        idle: Duration,
    ) -> Arc<Browser> {
        self.start_reaper();
        let mut kept = self.lock();
        let entry = kept.entry(session.to_owned()).or_insert_with(|| Kept {
            browser: Arc::new(match &self.runtime {
                Some(runtime) => Browser::on_runtime(settings, runtime.clone()),
                None => Browser::new(settings),
            }),
            idle,
        });
        entry.idle = idle;
        entry.browser.clone()
    }

    /// Closes and forgets the browser of `session` (the session ended).
    pub async fn close(&self, session: &str) {
        let removed = self.lock().remove(session);
        if let Some(kept) = removed {
            kept.browser.close().await;
        }
    }

    /// Closes and forgets the browsers idle past their timeout; how many.
    pub async fn close_idle(&self) -> usize {
        let idle: Vec<Arc<Browser>> = {
            let mut kept = self.lock();
            let sessions: Vec<String> = kept
                .iter()
                .filter(|(_, k)| k.browser.idle_for() >= k.idle)
                .map(|(session, _)| session.clone())
                .collect();
            sessions
                .iter()
                .filter_map(|session| kept.remove(session))
                .map(|k| k.browser)
                .collect()
        };
        for browser in &idle {
            browser.close().await;
        }
        idle.len()
    }

    /// Starts the task that closes idle browsers, once (it ends with the keeper).
    fn start_reaper(self: &Arc<Self>) {
        let mut reaper = self.reaper.lock().unwrap_or_else(PoisonError::into_inner);
        if reaper.is_some() {
            return;
        }
        let Some(runtime) = self
            .runtime
            .clone()
            .or_else(|| tokio::runtime::Handle::try_current().ok())
        else {
            return;
        };
        let keeper: Weak<Self> = Arc::downgrade(self);
        *reaper = Some(runtime.spawn(async move {
            loop {
                tokio::time::sleep(REAP_EVERY).await;
                let Some(keeper) = keeper.upgrade() else {
                    return;
                };
                keeper.close_idle().await;
            }
        }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> BrowserSettings {
        BrowserSettings {
            executable: "/nonexistent/chromium".into(),
            profiles: std::env::temp_dir(),
            allow_private: false,
            navigation_timeout: Duration::from_secs(1),
            hidden: Vec::new(),
        }
    }

    #[tokio::test]
    async fn a_session_gets_its_own_browser_back_until_it_idles_or_closes() {
        let keeper = BrowserKeeper::new();
        let first = keeper.browser("s1", settings(), Duration::from_secs(60));
        let again = keeper.browser("s1", settings(), Duration::from_secs(60));
        let other = keeper.browser("s2", settings(), Duration::ZERO);
        assert!(Arc::ptr_eq(&first, &again));
        assert!(!Arc::ptr_eq(&first, &other));
        // s2 may not idle at all: it goes; s1 stays.
        assert_eq!(keeper.close_idle().await, 1);
        assert!(Arc::ptr_eq(
            &first,
            &keeper.browser("s1", settings(), Duration::from_secs(60))
        ));
        assert!(!Arc::ptr_eq(
            &other,
            &keeper.browser("s2", settings(), Duration::from_secs(60))
        ));
        keeper.close("s1").await;
        assert!(!Arc::ptr_eq(
            &first,
            &keeper.browser("s1", settings(), Duration::from_secs(60))
        ));
    }
}
