//! Whether a writer's store is answering, told while the run goes on.
//!
//! A push that meets a store that is down does not fail at once: the client retries
//! for up to three minutes (`store.rs`), and the push thread then tries again and
//! again, while the run keeps recording locally. Without a word, a user would learn
//! of the outage only when the run ends. So the push thread notes when each push
//! started and how the last one ended, and [`StoreHealth::trouble`] turns that into
//! a sentence as soon as a push has waited [`STALLED`] on the store or has failed:
//! the run's progress line shows it and says once when it begins and when it ends.
//! Reading it costs a lock, at the progress line's pace.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A push that has waited this long on the store is told as trouble: the store takes
/// well under a second to answer when it is up, and its client's own retries of a
/// refused request stay within a few seconds.
pub const STALLED: Duration = Duration::from_secs(10);

#[derive(Default)]
struct State {
    pushing_since: Option<Instant>,
    last_error: Option<String>,
}

/// A writer's view of its store, shared by the push thread and whoever shows progress.
#[derive(Clone, Default)]
pub struct StoreHealth {
    url: Arc<str>,
    state: Arc<Mutex<State>>,
}

impl StoreHealth {
    pub(crate) fn new(url: &str) -> StoreHealth {
        StoreHealth { url: url.into(), state: Arc::default() }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn pushing(&self) {
        self.state().pushing_since = Some(Instant::now());
    }

    /// A push ended: `error` when it failed (the thread will try again).
    pub(crate) fn pushed(&self, error: Option<String>) {
        let mut s = self.state();
        s.pushing_since = None;
        s.last_error = error;
    }

    /// The store's URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// What is wrong with the store now, in a sentence, or `None` while it answers.
    pub fn trouble(&self) -> Option<String> {
        let s = self.state();
        if let Some(e) = &s.last_error {
            return Some(format!("the last push to {} failed ({e}); retrying, the run keeps recording locally", self.url));
        }
        let waited = s.pushing_since.map(|t| t.elapsed()).filter(|w| *w >= STALLED)?;
        Some(format!("a push to {} has waited {} s on the store; retrying, the run keeps recording locally", self.url, waited.as_secs()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trouble_is_a_failed_push_until_one_succeeds() {
        let h = StoreHealth::new("s3://b/d");
        assert_eq!(h.trouble(), None);
        h.pushing();
        assert_eq!(h.trouble(), None, "a push in flight for less than STALLED is no trouble");
        h.pushed(Some("connection refused".into()));
        let t = h.trouble().unwrap();
        assert!(t.contains("s3://b/d") && t.contains("connection refused") && t.contains("retrying"), "{t}");
        h.pushing();
        assert!(h.trouble().is_some(), "still failing while the next try is in flight");
        h.pushed(None);
        assert_eq!(h.trouble(), None);
    }

    #[test]
    fn a_push_waiting_past_stalled_is_trouble() {
        let h = StoreHealth::new("s3://b/d");
        h.state().pushing_since = Instant::now().checked_sub(STALLED + Duration::from_secs(2));
        let t = h.trouble().unwrap();
        assert!(t.contains("has waited 12 s"), "{t}");
    }
}
