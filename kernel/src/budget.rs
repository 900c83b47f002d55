//! Budgets: iterations (shared with delegated children), wall-clock time and cost.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::message::Usage;

/// Default number of model calls per conversation run.
pub const DEFAULT_MAX_ITERATIONS: u32 = 90;

/// Counts model calls. Clones share one counter; a [`child`](Self::child)
/// has its own limit and also draws from its parent's, so a tree of agents
/// stays within the root's total. Safe to use from several threads.
#[derive(Debug, Clone)]
pub struct IterationBudget {
    max: u32,
    used: Arc<AtomicU32>,
    parent: Option<Box<IterationBudget>>,
}

impl IterationBudget {
    /// A budget of `max` model calls.
    pub fn new(max: u32) -> Self {
        Self {
            max,
            used: Arc::new(AtomicU32::new(0)),
            parent: None,
        }
    }

    /// A budget of at most `max` calls that also counts against this one.
    pub fn child(&self, max: u32) -> Self {
        Self {
            max,
            used: Arc::new(AtomicU32::new(0)),
            parent: Some(Box::new(self.clone())),
        }
    }

    /// Takes one iteration here and in every ancestor; false (and nothing
    /// taken) when any of them has none left.
    pub fn try_consume(&self) -> bool {
        let taken = self
            .used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                (used < self.max).then_some(used + 1)
            })
            .is_ok();
        if !taken {
            return false;
        }
        if let Some(parent) = &self.parent
            && !parent.try_consume()
        {
            self.refund_own();
            return false;
        }
        true
    }

    fn refund_own(&self) {
        // Saturating: a refund without a prior consume must not wrap.
        let _ = self
            .used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                used.checked_sub(1)
            });
    }

    /// Gives one iteration back (e.g. a turn that only ran scripts),
    /// here and in every ancestor.
    pub fn refund(&self) {
        self.refund_own();
        if let Some(parent) = &self.parent {
            parent.refund();
        }
    }

    /// Iterations used so far.
    pub fn used(&self) -> u32 {
        self.used.load(Ordering::Acquire)
    }

    /// Iterations left.
    pub fn remaining(&self) -> u32 {
        self.max.saturating_sub(self.used())
    }

    /// The configured maximum.
    pub fn max(&self) -> u32 {
        self.max
    }
}

impl Default for IterationBudget {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_ITERATIONS)
    }
}

/// Prices in USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Pricing {
    /// Uncached input tokens.
    #[serde(default)]
    pub input: f64,
    /// Output tokens.
    #[serde(default)]
    pub output: f64,
    /// Input tokens read from cache.
    #[serde(default)]
    pub cache_read: f64,
    /// Input tokens written to cache.
    #[serde(default)]
    pub cache_write: f64,
}

impl Pricing {
    /// The cost of `usage` in USD.
    pub fn cost(&self, usage: &Usage) -> f64 {
        let per_token = |tokens: u64, price: f64| tokens as f64 * price / 1_000_000.0;
        per_token(usage.input_tokens, self.input)
            + per_token(usage.output_tokens, self.output)
            + per_token(usage.cache_read_tokens, self.cache_read)
            + per_token(usage.cache_write_tokens, self.cache_write)
    }
}

/// Which budget ran out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Exhaustion {
    /// No model calls left.
    Iterations,
    /// The wall-clock limit passed.
    WallClock,
    /// The cost limit was reached.
    Cost,
}

impl std::fmt::Display for Exhaustion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Exhaustion::Iterations => "iteration budget",
            Exhaustion::WallClock => "time budget",
            Exhaustion::Cost => "cost budget",
        })
    }
}

/// All limits of one conversation run.
#[derive(Debug, Clone, Default)]
pub struct Budget {
    /// Model calls (shared with children).
    pub iterations: IterationBudget,
    /// Longest a run may take, measured on the loop's clock.
    pub wall_clock: Option<Duration>,
    /// Most a run may cost in USD.
    pub max_cost_usd: Option<f64>,
    /// Prices used to turn usage into cost.
    pub pricing: Pricing,
    spent_micro_usd: Arc<AtomicU64>,
}

impl Budget {
    /// A child's budget: its own iteration limit drawn from this one, the
    /// same wall-clock limit, and cost counted into this budget's.
    pub fn child(&self, iterations: u32) -> Self {
        Self {
            iterations: self.iterations.child(iterations),
            ..self.clone()
        }
    }

    /// A budget with only an iteration limit.
    pub fn with_iterations(max: u32) -> Self {
        Self {
            iterations: IterationBudget::new(max),
            ..Self::default()
        }
    }

    /// Records a call's usage; returns its cost in USD.
    pub fn charge(&self, usage: &Usage) -> f64 {
        let cost = self.pricing.cost(usage);
        // Micro-dollars keep the counter atomic; rounding error is negligible.
        self.spent_micro_usd
            .fetch_add((cost * 1_000_000.0).round() as u64, Ordering::AcqRel);
        cost
    }

    /// USD spent so far (shared with clones).
    pub fn spent_usd(&self) -> f64 {
        self.spent_micro_usd.load(Ordering::Acquire) as f64 / 1_000_000.0
    }

    /// Takes one iteration if every limit allows another model call.
    /// `elapsed` is the run's age on the loop's clock.
    pub fn try_start_call(&self, elapsed: Duration) -> Result<(), Exhaustion> {
        if self.wall_clock.is_some_and(|limit| elapsed >= limit) {
            return Err(Exhaustion::WallClock);
        }
        if self
            .max_cost_usd
            .is_some_and(|limit| self.spent_usd() >= limit)
        {
            return Err(Exhaustion::Cost);
        }
        if !self.iterations.try_consume() {
            return Err(Exhaustion::Iterations);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consume_stops_at_max_and_refund_gives_back() {
        let budget = IterationBudget::new(2);
        assert!(budget.try_consume());
        assert!(budget.try_consume());
        assert!(!budget.try_consume());
        assert_eq!(budget.remaining(), 0);
        budget.refund();
        assert_eq!(budget.remaining(), 1);
        assert!(budget.try_consume());
    }

    #[test]
    fn refund_never_wraps_below_zero() {
        let budget = IterationBudget::new(3);
        budget.refund();
        assert_eq!(budget.used(), 0);
        assert_eq!(budget.remaining(), 3);
    }

    #[test]
    fn clones_share_one_counter_across_threads() {
        let parent = IterationBudget::new(1000);
        // Collected so that every thread is running before the first is joined.
        #[allow(clippy::needless_collect)]
        let handles: Vec<_> = (0..8)
            .map(|_| {
                let child = parent.clone();
                std::thread::spawn(move || (0..200).filter(|_| child.try_consume()).count())
            })
            .collect();
        let granted: usize = handles.into_iter().map(|h| h.join().unwrap()).sum();
        assert_eq!(
            granted, 1000,
            "exactly max iterations granted across threads"
        );
        assert_eq!(parent.remaining(), 0);
    }

    #[test]
    fn cost_budget_uses_prices_per_million_tokens() {
        let mut budget = Budget::with_iterations(10);
        budget.pricing = Pricing {
            input: 3.0,
            output: 15.0,
            cache_read: 0.3,
            cache_write: 3.75,
        };
        budget.max_cost_usd = Some(0.02);
        let usage = Usage {
            input_tokens: 1000,
            output_tokens: 1000,
            cache_read_tokens: 10_000,
            cache_write_tokens: 0,
        };
        let cost = budget.charge(&usage);
        assert!((cost - 0.021).abs() < 1e-9, "cost was {cost}");
        assert_eq!(budget.try_start_call(Duration::ZERO), Err(Exhaustion::Cost));
    }

    #[test]
    fn wall_clock_budget_is_checked_before_iterations() {
        let mut budget = Budget::with_iterations(10);
        budget.wall_clock = Some(Duration::from_secs(5));
        assert_eq!(budget.try_start_call(Duration::from_secs(4)), Ok(()));
        assert_eq!(
            budget.try_start_call(Duration::from_secs(5)),
            Err(Exhaustion::WallClock)
        );
        assert_eq!(
            budget.iterations.used(),
            1,
            "a refused call takes no iteration"
        );
    }
}

#[cfg(test)]
mod tree_tests {
    use super::*;

    #[test]
    fn children_draw_from_their_parent() {
        let root = IterationBudget::new(3);
        let a = root.child(2);
        let b = root.child(2);
        assert!(a.try_consume() && a.try_consume());
        assert!(!a.try_consume(), "the child's own limit");
        assert!(b.try_consume());
        assert!(!b.try_consume(), "the root is spent");
        assert_eq!(
            (root.used(), b.used()),
            (3, 1),
            "a refused call takes nothing"
        );
        a.refund();
        assert_eq!((root.used(), a.used()), (2, 1), "refunds reach the root");
        assert!(b.try_consume());
    }
}
