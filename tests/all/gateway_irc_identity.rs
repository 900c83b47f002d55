//! IRC identity that holds (issue 47): the gateway knows an IRC user by
//! their services account or by the `nick!user@host` masks the owner
//! configured, never by the nick alone. Against real servers: a nick
//! takeover on ngIRCd (no services) with masks, accounts on InspIRCd with
//! Atheme's NickServ, and a bare nick in `allowed_users` refused at start.

use std::time::{Duration, Instant};

use talaria_testkit::inspircd::Inspircd;
use talaria_testkit::{Script, ScriptedServer, Step, ToolCall};

use crate::common::*;
use crate::gateway::{free_port, gateway_command};
use crate::gateway_irc::IrcUser;

const SECRET: &str = "alice-secret-777";

/// The model settings and an IRC account for `allowed` on `port`.
fn irc_config(model: &ScriptedServer, port: u16, nick: &str, allowed: &str) -> String {
    format!(
        "model:\n  provider: openai\n  name: test-model\n  base_url: {}\n  api_key: sk-test\n\
         retry:\n  base_delay_ms: 20\n  max_delay_ms: 100\n\
         approvals:\n  timeout_secs: 600\n\
         gateway:\n  platforms:\n    irc:\n      server: 127.0.0.1\n      port: {port}\n      \
         nick: {nick}\n      allowed_users: [{allowed}]\n",
        model.openai_base_url()
    )
}

/// Every line `user` receives within `limit`, answering PINGs.
fn lines_for(user: &mut IrcUser, limit: Duration) -> Vec<String> {
    let mut lines = Vec::new();
    let started = Instant::now();
    while let Some(line) = user.expect_within("", limit.saturating_sub(started.elapsed())) {
        lines.push(line);
    }
    lines
}

#[test]
fn a_nick_taken_over_on_ngircd_is_not_its_owner() {
    let (_irc_dir, port, _server) = crate::gateway_irc::plain_ngircd();
    let model = ScriptedServer::spawn(Script::new([
        Step::text("noted"),
        Step::tool_calls([ToolCall::new("terminal", r#"{"command": "rm -rf build"}"#)]),
        Step::text("Left it alone."),
        Step::text(format!("Your secret is {SECRET}.")),
    ]))
    .unwrap();
    let home = Home::new();
    let work = home.workdir();
    std::fs::create_dir(work.path().join("build")).unwrap();
    // ngIRCd runs no ident lookup: alice's user name shows as ~alice.
    home.write_config(&irc_config(&model, port, "talaria", "'alice!~alice@*'"));
    let gateway = gateway_command(&home, &model, &[])
        .current_dir(work.path())
        .spawn()
        .unwrap();

    // Alice, allowed by her mask, confides a secret and starts a command
    // that waits for her approval.
    let mut alice = IrcUser::connect_as(port, "alice", "alice");
    wait_for_bot(&mut alice, "talaria");
    alice.send(&format!("PRIVMSG talaria :remember my secret: {SECRET}"));
    assert_contains(&alice.expect("PRIVMSG alice :"), "noted");
    alice.send("PRIVMSG talaria :clean up the build");
    alice.expect("Approval needed");
    // The whole prompt, before she leaves: IRC delivers to the nick, and a
    // line still queued would reach whoever holds it next.
    alice.expect("or /deny");
    alice.quit();

    // Mallory takes the free nick, with another user name.
    let mut mallory = IrcUser::connect_as(port, "alice", "mallory");
    mallory.send("PRIVMSG talaria :/approve always");
    assert_contains(&mallory.expect("PRIVMSG alice :"), "I don't know you yet");
    mallory.send("PRIVMSG talaria :what is my secret?");
    let heard = lines_for(&mut mallory, Duration::from_secs(3)).join("\n");
    assert!(!heard.contains(SECRET), "{heard}");
    assert!(!heard.contains("Left it alone"), "{heard}");
    assert!(
        work.path().join("build").exists(),
        "mallory's /approve ran nothing"
    );
    // Her pairing request names her mask, not the nick alice.
    let pending = stdout(&run(home.talaria(&["pairing", "list"])));
    assert_contains(&pending, "alice!~mallory@127.0.0.1");
    mallory.quit();

    // Alice comes back: her approval still waits for her, and her session
    // (with the secret) is still hers.
    let mut alice = IrcUser::connect_as(port, "alice", "alice");
    alice.send("PRIVMSG talaria :/deny");
    assert_contains(&alice.expect("PRIVMSG alice :"), "Left it alone.");
    alice.send("PRIVMSG talaria :what is my secret?");
    assert_contains(&alice.expect("PRIVMSG alice :"), SECRET);
    let requests = model.requests();
    assert_eq!(requests.len(), 4, "mallory never reached the model");
    assert!(
        format!("{:?}", requests[3].messages()).contains(SECRET),
        "alice continues her own session"
    );
    assert!(work.path().join("build").exists(), "denied: nothing ran");

    assert_code(&run(home.talaria(&["gateway", "stop"])), 0);
    let output = wait(gateway);
    assert!(output.status.success(), "{}", stderr(&output));
}

#[test]
fn a_services_account_is_the_identity_on_inspircd_with_atheme() {
    assert!(
        Inspircd::installed(),
        "scripts/system-deps installs inspircd and atheme-services"
    );
    build_plugins();
    let network = Inspircd::shared().unwrap();
    let port = network.port;
    let model = ScriptedServer::spawn(Script::new([
        Step::text("noted"),
        Step::text(format!("Your secret is {SECRET}.")),
    ]))
    .unwrap();
    let home = Home::new();
    let work = home.workdir();
    home.write_config(&irc_config(&model, port, "acctbot", "'$a:acctalice'"));
    let gateway = gateway_command(&home, &model, &[])
        .current_dir(work.path())
        .spawn()
        .unwrap();

    // Alice registers her account with NickServ, which signs her in.
    let mut alice = IrcUser::connect(port, "acctalice");
    alice.send("PRIVMSG NickServ :REGISTER acct-pw-1 acctalice@talaria.invalid");
    alice.expect(" 900 ");
    wait_for_bot(&mut alice, "acctbot");
    alice.send(&format!("PRIVMSG acctbot :remember my secret: {SECRET}"));
    assert_contains(&alice.expect("PRIVMSG acctalice :"), "noted");
    alice.quit();

    // Someone takes the nick, with the same user name from the same host
    // (the very same mask), without signing in.
    let mut impostor = IrcUser::connect(port, "acctalice");
    impostor.send("PRIVMSG acctbot :what is my secret?");
    let told = impostor.expect("PRIVMSG acctalice :");
    assert_contains(&told, "I don't know you yet");
    let heard = lines_for(&mut impostor, Duration::from_secs(3)).join("\n");
    assert!(!heard.contains(SECRET), "{heard}");
    impostor.quit();

    // Alice signs in again: she is known by her account, in her session.
    let mut alice = IrcUser::connect(port, "acctalice");
    alice.send("PRIVMSG NickServ :IDENTIFY acct-pw-1");
    alice.expect(" 900 ");
    alice.send("PRIVMSG acctbot :what is my secret?");
    assert_contains(&alice.expect("PRIVMSG acctalice :"), SECRET);
    let requests = model.requests();
    assert_eq!(requests.len(), 2, "the impostor never reached the model");
    assert!(format!("{:?}", requests[1].messages()).contains(SECRET));

    assert_code(&run(home.talaria(&["gateway", "stop"])), 0);
    let output = wait(gateway);
    assert!(output.status.success(), "{}", stderr(&output));
}

/// Waits until `bot` is on the network, so what is sent to it arrives.
pub(crate) fn wait_for_bot(user: &mut IrcUser, bot: &str) {
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(60) {
        user.send(&format!("ISON {bot}"));
        // RPL_ISON: `:server 303 me :nicks online`.
        if let Some(ison) = user.expect_within(" 303 ", Duration::from_secs(5))
            && ison
                .rsplit(':')
                .next()
                .is_some_and(|online| online.split_whitespace().any(|nick| nick == bot))
        {
            return;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    panic!("{bot} never came online");
}

#[test]
fn a_bare_nick_in_allowed_users_stops_the_gateway_at_start() {
    build_plugins();
    let model = ScriptedServer::spawn(Script::new([])).unwrap();
    let home = Home::new();
    // Nothing listens there: the check comes before any connection.
    home.write_config(&irc_config(&model, free_port(), "talaria", "ann"));
    let mut gateway = gateway_command(&home, &model, &[]).spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while gateway.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            gateway.kill().unwrap();
            let output = gateway.wait_with_output().unwrap();
            panic!(
                "the gateway started with a bare nick allowed:\n{}",
                stderr(&output)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = gateway.wait_with_output().unwrap();
    // A configuration the gateway cannot start with, as for no platform.
    assert_code(&output, 2);
    let error = stderr(&output);
    assert_contains(&error, "gateway.platforms.irc.allowed_users");
    assert_contains(&error, "\"ann\" is a bare nick");
    assert_contains(&error, "nick!user@host");
    assert_contains(&error, "$a:ACCOUNT");
}
