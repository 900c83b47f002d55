//! Property tests of the overlap rule and the batch plan.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use proptest::prelude::*;
use talaria_tools::{PlannedCall, overlaps, plan};

/// Absolute paths over a tiny alphabet so that overlaps are common.
fn path() -> impl Strategy<Value = PathBuf> {
    prop::collection::vec(prop::sample::select(vec!["a", "b", "ab"]), 0..4)
        .prop_map(|parts| PathBuf::from("/").join(parts.join("/")))
}

fn call() -> impl Strategy<Value = PlannedCall> {
    (any::<bool>(), any::<bool>(), prop::option::of(path())).prop_map(
        |(never_parallel, read_only, path)| PlannedCall {
            never_parallel: never_parallel && read_only,
            read_only,
            path,
        },
    )
}

proptest! {
    #[test]
    fn overlap_is_reflexive_and_symmetric(a in path(), b in path()) {
        prop_assert!(overlaps(&a, &a));
        prop_assert_eq!(overlaps(&a, &b), overlaps(&b, &a));
    }

    #[test]
    fn a_path_overlaps_everything_inside_it(a in path(), rest in path()) {
        let inside = a.join(rest.strip_prefix("/").unwrap());
        prop_assert!(overlaps(&a, &inside));
    }

    #[test]
    fn siblings_do_not_overlap(a in path(), x in "[a-c]{1,3}", y in "[d-f]{1,3}") {
        prop_assert!(!overlaps(&a.join(&x), &a.join(&y)));
        // A shared name prefix is not containment.
        let longer = format!("{x}{y}");
        prop_assert!(!overlaps(&a.join(&x), &a.join(longer)));
    }

    #[test]
    fn plans_cover_every_call_once_in_order_without_conflicts(
        calls in prop::collection::vec(call(), 0..24)
    ) {
        let batches = plan(&calls);
        let mut next = 0;
        for batch in &batches {
            prop_assert_eq!(batch.start, next, "batches are consecutive");
            prop_assert!(batch.end > batch.start, "no empty batch");
            next = batch.end;
            let members = &calls[batch.clone()];
            if members.len() > 1 {
                for (i, a) in members.iter().enumerate() {
                    prop_assert!(!a.never_parallel, "a never-parallel call shares a batch");
                    prop_assert!(a.read_only || a.path.is_some(), "an unflagged call shares a batch");
                    for b in &members[i + 1..] {
                        prop_assert!(!a.conflicts_with(b), "{:?} and {:?} share a batch", a, b);
                        if let (Some(pa), Some(pb)) = (&a.path, &b.path)
                            && overlaps(pa, pb)
                        {
                            prop_assert!(a.read_only && b.read_only, "overlapping writes share a batch");
                        }
                    }
                }
            }
        }
        prop_assert_eq!(next, calls.len(), "every call is planned");
    }

    #[test]
    fn a_batch_ends_only_at_a_conflict(calls in prop::collection::vec(call(), 1..16)) {
        // Greedy: the call after a batch could not have joined it.
        let batches = plan(&calls);
        for batch in &batches {
            if batch.end < calls.len() {
                let next = &calls[batch.end];
                let blocked = calls[batch.clone()].iter().any(|c| c.conflicts_with(next));
                prop_assert!(blocked, "batch {:?} stopped without a conflict", batch);
            }
        }
    }
}
