//! Sending: "try again later" is honoured, failures are retried with backoff,
//! a dead chat is given up on.

use std::time::Duration;

use crate::ports::SendOutcome;

use super::fakes::dm;
use super::{Harness, allowing};

/// The gaps between the sends tried so far.
fn gaps(h: &Harness) -> Vec<Duration> {
    let log = h.platform.send_log.lock().unwrap();
    log.windows(2).map(|w| w[1].1 - w[0].1).collect()
}

#[tokio::test(start_paused = true)]
async fn retry_after_is_waited_before_sending_again() {
    let mut h = Harness::start(allowing(&["ann"]));
    h.platform.script_sends([
        SendOutcome::Retryable(Duration::from_millis(7_500)),
        SendOutcome::Retryable(Duration::from_millis(1_000)),
    ]);
    h.platform.write(dm("ann", "hi"));
    assert_eq!(h.next_text().await, "re: hi");
    assert_eq!(
        gaps(&h),
        [Duration::from_millis(7_500), Duration::from_millis(1_000)]
    );
}

#[tokio::test(start_paused = true)]
async fn failures_are_retried_with_backoff_three_times_then_given_up() {
    let mut h = Harness::start(allowing(&["ann"]));
    h.platform.script_sends([
        SendOutcome::Failed("500".into()),
        SendOutcome::Failed("500".into()),
    ]);
    h.platform.write(dm("ann", "hi"));
    assert_eq!(h.next_text().await, "re: hi");
    assert_eq!(gaps(&h), [Duration::from_secs(2), Duration::from_secs(4)]);

    h.platform.send_log.lock().unwrap().clear();
    h.platform
        .script_sends((0..3).map(|_| SendOutcome::Failed("500".into())));
    h.platform.write(dm("ann", "again"));
    h.quiet_for(600).await;
    assert_eq!(h.platform.send_log.lock().unwrap().len(), 3, "three tries");

    h.platform.write(dm("ann", "still there?"));
    assert_eq!(
        h.next_text().await,
        "re: still there?",
        "the loop carries on"
    );
}

#[tokio::test(start_paused = true)]
async fn a_dead_target_is_tried_once() {
    let mut h = Harness::start(allowing(&["ann"]));
    h.platform
        .script_sends([SendOutcome::DeadTarget("kicked".into())]);
    h.platform.write(dm("ann", "long"));
    h.quiet_for(600).await;
    assert_eq!(
        h.platform.send_log.lock().unwrap().len(),
        1,
        "no retry and no further parts"
    );
}

#[tokio::test(start_paused = true)]
async fn sends_wait_for_the_driver_and_the_outbox_reports_capabilities() {
    let mut h = Harness::start(allowing(&["ann"]));
    h.platform.write(dm("ann", "hi"));
    h.next_text().await;
    let capabilities = h.outbox.capabilities().unwrap();
    assert_eq!(capabilities.platform, "irc");
    assert_eq!(capabilities.max_message_length, 400);
}

#[tokio::test(start_paused = true)]
async fn a_rate_limited_reply_does_not_hold_up_other_chats() {
    let mut h = Harness::start(allowing(&["ann"]));
    h.platform
        .script_sends([SendOutcome::Retryable(Duration::from_millis(120_000))]);
    h.platform.write(dm("eve", "hello"));
    tokio::time::sleep(Duration::from_secs(1)).await;
    h.platform.write(dm("ann", "hi"));
    let first = h.next_sent().await;
    assert_eq!(first.text, "re: hi", "answered while eve's reply waits");
    assert!(h.next_text().await.contains("pairing code"));
}
