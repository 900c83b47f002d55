//! Which calls of one turn may run together.
//!
//! A call may run alongside others when it is not `never_parallel` and is
//! either read-only or path-scoped. Two such calls conflict when both name a
//! path, the paths overlap (same path, or one inside the other) and at least
//! one of them writes. Calls are grouped, in order, into consecutive batches
//! without conflicts; a batch runs with at most [`MAX_WORKERS`] calls at once,
//! and the next batch starts when it is done, so a call never overtakes an
//! earlier call it conflicts with.

use std::ops::Range;
use std::path::PathBuf;

use crate::paths::overlaps;

/// Most calls of one batch running at the same time.
pub const MAX_WORKERS: usize = 8;

/// What the scheduler knows about one call.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PlannedCall {
    /// Must run alone.
    pub never_parallel: bool,
    /// Has no side effects.
    pub read_only: bool,
    /// The normalised path it touches, for path-scoped tools.
    pub path: Option<PathBuf>,
}

impl PlannedCall {
    fn may_share(&self) -> bool {
        !self.never_parallel && (self.read_only || self.path.is_some())
    }

    /// Whether the two may not run at the same time.
    pub fn conflicts_with(&self, other: &PlannedCall) -> bool {
        if !self.may_share() || !other.may_share() {
            return true;
        }
        match (&self.path, &other.path) {
            (Some(a), Some(b)) => !(self.read_only && other.read_only) && overlaps(a, b),
            _ => false,
        }
    }
}

/// Splits `calls` into consecutive batches (index ranges, in order) whose
/// calls may all run together.
pub fn plan(calls: &[PlannedCall]) -> Vec<Range<usize>> {
    let mut batches = Vec::new();
    let mut start = 0;
    while start < calls.len() {
        let mut end = start + 1;
        if calls[start].may_share() {
            while end < calls.len()
                && !calls[start..end]
                    .iter()
                    .any(|earlier| earlier.conflicts_with(&calls[end]))
            {
                end += 1;
            }
        }
        batches.push(start..end);
        start = end;
    }
    batches
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(path: Option<&str>) -> PlannedCall {
        PlannedCall {
            read_only: true,
            path: path.map(PathBuf::from),
            ..PlannedCall::default()
        }
    }

    fn write(path: &str) -> PlannedCall {
        PlannedCall {
            path: Some(PathBuf::from(path)),
            ..PlannedCall::default()
        }
    }

    fn exclusive() -> PlannedCall {
        PlannedCall::default()
    }

    #[test]
    fn writes_to_disjoint_paths_share_a_batch() {
        let calls = [write("/w/a.txt"), write("/w/b.txt"), read(Some("/w/c"))];
        assert_eq!(plan(&calls), vec![0..3]);
    }

    #[test]
    fn overlapping_writes_are_split_in_order() {
        let calls = [write("/w/src/a.rs"), read(Some("/w/src")), write("/w/b.rs")];
        assert_eq!(plan(&calls), [0..1, 1..3]);
    }

    #[test]
    fn reads_of_one_path_share_a_batch() {
        assert_eq!(plan(&[read(Some("/w/a")), read(Some("/w/a"))]), vec![0..2]);
    }

    #[test]
    fn unflagged_and_never_parallel_calls_run_alone() {
        let clarify = PlannedCall {
            never_parallel: true,
            read_only: true,
            ..PlannedCall::default()
        };
        let calls = [read(None), exclusive(), read(None), clarify, read(None)];
        assert_eq!(plan(&calls), [0..1, 1..2, 2..3, 3..4, 4..5]);
    }
}
