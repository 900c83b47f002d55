//! Opening an account: 30 s doubling to 5 min between failed opens, back to
//! an immediate reopen (attempt 0) after a connection that worked.

use std::time::Duration;

use super::fakes::{FakeConnector, FakePlatform, dm};
use super::{Harness, allowing};

#[tokio::test(start_paused = true)]
async fn failed_opens_back_off_30_60_120_240_300_300_and_reset_after_success() {
    let mut h = Harness::start(allowing(&["ann"]));
    h.platform
        .script_opens((0..6).map(|n| Err(format!("refused {n}"))));
    h.platform.write(dm("ann", "are you there?"));
    assert_eq!(h.next_text().await, "re: are you there?");
    let opens = h.platform.open_log.lock().unwrap().clone();
    let attempts: Vec<u32> = opens.iter().map(|(attempt, _)| *attempt).collect();
    assert_eq!(attempts, [0, 1, 2, 3, 4, 5, 6]);
    let gaps: Vec<u64> = opens
        .windows(2)
        .map(|w| (w[1].1 - w[0].1).as_secs())
        .collect();
    assert_eq!(gaps, [30, 60, 120, 240, 300, 300]);

    // Lost after working: reopened at once, counting from 0, and the next
    // failure waits 30 s again.
    h.platform.script_opens([Err("refused".to_owned())]);
    h.platform.drop_connection();
    h.platform.write(dm("ann", "back?"));
    assert_eq!(h.next_text().await, "re: back?");
    let opens = h.platform.open_log.lock().unwrap().clone();
    let tail: Vec<u32> = opens[7..].iter().map(|(attempt, _)| *attempt).collect();
    assert_eq!(tail, [0, 1]);
    assert_eq!(opens[8].1 - opens[7].1, Duration::from_secs(30));
}

#[tokio::test(start_paused = true)]
async fn a_connection_lost_before_it_worked_waits_before_reopening() {
    let h = Harness::start(allowing(&["ann"]));
    h.platform.drop_connection();
    tokio::time::sleep(Duration::from_secs(31)).await;
    let opens = h.platform.open_log.lock().unwrap().clone();
    assert_eq!(opens.len(), 2, "{opens:?}");
    assert_eq!(opens[1].1 - opens[0].1, Duration::from_secs(30));
}

#[tokio::test(start_paused = true)]
async fn shutdown_closes_the_account() {
    let h = Harness::start(allowing(&["ann"]));
    tokio::time::sleep(Duration::from_secs(1)).await;
    h.outbox.shutdown();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let outcome = h.outbox.send(crate::ports::Outbound {
        chat_id: "ann".into(),
        thread: None,
        text: "late".into(),
        reply_to: None,
        edit: None,
    });
    assert!(matches!(
        outcome.await,
        crate::ports::SendOutcome::Failed(_)
    ));
}

#[tokio::test(start_paused = true)]
async fn host_work_wakes_a_waiting_poll_so_sends_go_out_at_once() {
    let mut h = Harness::start(allowing(&["ann"]));
    // Let the driver settle into a 30 s poll.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let before = tokio::time::Instant::now();
    let outcome = h
        .outbox
        .send(crate::ports::Outbound {
            chat_id: "ann".into(),
            thread: None,
            text: "ping".into(),
            reply_to: None,
            edit: None,
        })
        .await;
    assert_eq!(outcome, crate::ports::SendOutcome::Sent(None));
    assert_eq!(
        before.elapsed(),
        Duration::ZERO,
        "not after the poll's timeout"
    );
    assert_eq!(h.next_text().await, "ping");
}

#[tokio::test(start_paused = true)]
async fn a_send_only_account_sends_and_closes_without_taking_events() {
    let (platform, mut sent) = FakePlatform::new();
    platform.write(dm("ann", "a message for the gateway"));
    let (driver, outbox) = crate::send_only_account(FakeConnector(platform.clone()));
    let running = tokio::spawn(driver.run());
    let to = crate::ports::ChatAddress {
        platform: "irc".into(),
        chat_id: "#team".into(),
        thread: None,
    };
    crate::delivery::post(&outbox, &to, "the nightly report", Duration::from_secs(5))
        .await
        .unwrap();
    let out = sent.recv().await.unwrap();
    assert_eq!(
        (out.chat_id.as_str(), out.text.as_str()),
        ("#team", "the nightly report")
    );
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert_eq!(platform.unread(), 1, "the event is left for the gateway");
    outbox.shutdown();
    tokio::time::timeout(Duration::from_secs(1), running)
        .await
        .expect("the driver stops")
        .unwrap();
}
