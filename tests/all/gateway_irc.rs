//! `talaria gateway run` on IRC: the first-party adapter plugin against the
//! real ngIRCd server — answers in a channel, a command approved in the
//! channel, pairing in private, a webhook's answer posted to a channel, a
//! job scheduled from the channel and delivered there by `talaria cron tick`
//! after the gateway stopped, TLS with a private CA, and a reconnect after
//! the server restarts.

use talaria_testkit::ngircd::{Ngircd, NgircdOptions};
use talaria_testkit::{Script, ScriptedServer, Step, ToolCall};

use crate::common::*;
use crate::gateway::{free_port, gateway_command, post_hook, spawn_gateway};

/// A raw IRC client on the test server.
pub struct IrcUser {
    nick: &'static str,
    reader: std::io::BufReader<std::net::TcpStream>,
    writer: std::net::TcpStream,
}

impl IrcUser {
    pub fn connect(port: u16, nick: &'static str) -> Self {
        Self::connect_as(port, nick, nick)
    }

    /// A client whose `USER` name is `user_name` (ngIRCd shows it as
    /// `~user_name`: it runs no ident lookup here).
    pub fn connect_as(port: u16, nick: &'static str, user_name: &str) -> Self {
        let stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream
            .set_read_timeout(Some(std::time::Duration::from_millis(500)))
            .unwrap();
        let mut user = Self {
            nick,
            reader: std::io::BufReader::new(stream.try_clone().unwrap()),
            writer: stream,
        };
        user.send(&format!("NICK {nick}"));
        user.send(&format!("USER {user_name} 0 * :{nick}"));
        user.expect(" 001 ");
        user
    }

    /// Signs off and waits until the server has let the nick go.
    pub fn quit(mut self) {
        use std::io::BufRead;
        self.send("QUIT :bye");
        let started = std::time::Instant::now();
        while started.elapsed() < std::time::Duration::from_secs(30) {
            let mut line = String::new();
            match self.reader.read_line(&mut line) {
                Ok(0) => return,
                Ok(_) if line.starts_with("ERROR") => return,
                _ => {}
            }
        }
        panic!("{}: the server did not close the connection", self.nick);
    }

    pub fn send(&mut self, line: &str) {
        use std::io::Write;
        self.writer
            .write_all(format!("{line}\r\n").as_bytes())
            .unwrap();
    }

    /// The next line containing `needle`, answering PINGs on the way.
    pub fn expect(&mut self, needle: &str) -> String {
        self.expect_within(needle, std::time::Duration::from_secs(60))
            .unwrap_or_else(|| panic!("{}: no line with {needle:?} within 60 s", self.nick))
    }

    pub fn expect_within(&mut self, needle: &str, limit: std::time::Duration) -> Option<String> {
        use std::io::BufRead;
        let started = std::time::Instant::now();
        while started.elapsed() < limit {
            let mut line = String::new();
            match self.reader.read_line(&mut line) {
                Ok(0) => panic!("{}: the server closed the connection", self.nick),
                Ok(_) => {}
                Err(_) => continue,
            }
            if let Some(token) = line.strip_prefix("PING ") {
                let token = token.trim_end().to_owned();
                self.send(&format!("PONG {token}"));
            }
            if line.contains(needle) {
                return Some(line);
            }
        }
        None
    }
}

#[test]
fn the_gateway_answers_on_irc_pairs_a_stranger_and_stops() {
    assert!(
        Ngircd::installed(false),
        "scripts/system-deps installs ngircd"
    );
    build_plugins();
    let irc_dir = tempfile::tempdir().unwrap();
    // The port the IRC adapter's default network grant names.
    let options = NgircdOptions {
        port: Some(6667),
        ..NgircdOptions::default()
    };
    let _server = Ngircd::start(irc_dir.path(), &options)
        .expect("ngircd on 127.0.0.1:6667 (is another IRC server running?)");
    let model = ScriptedServer::spawn(Script::new([
        Step::text("pong from talaria"),
        Step::tool_calls([ToolCall::new("terminal", r#"{"command": "rm -rf build"}"#)]),
        Step::text("Removed the build directory."),
        Step::text("hello bob"),
        Step::text("main moved by two commits"),
        Step::tool_calls([ToolCall::new(
            "cronjob",
            r#"{"action": "create", "schedule": "0 9 * * 1-5", "name": "standup",
                "prompt": "Remind the team of the standup"}"#,
        )]),
        Step::tool_calls([ToolCall::new(
            "cronjob",
            r#"{"action": "run", "job_id": "standup"}"#,
        )]),
        Step::text("Scheduled for weekdays at 09:00."),
        Step::text("Standup in 5 minutes!"),
    ]))
    .unwrap();
    let home = Home::new();
    // The agents' working directory, with something to remove once approved.
    let work = home.workdir();
    std::fs::create_dir(work.path().join("build")).unwrap();
    let hook_port = free_port();
    // The model in config.yaml too: `talaria cron tick` has no model flags.
    home.write_config(&format!(
        "model:\n  provider: openai\n  name: test-model\n  base_url: {}\n  api_key: sk-test\n\
         retry:\n  base_delay_ms: 20\n  max_delay_ms: 100\n\
         gateway:\n  platforms:\n    irc:\n      server: 127.0.0.1\n      port: 6667\n      \
         nick: talaria\n      channels: \"#test\"\n      allowed_users: ['ann!~ann@127.0.0.1']\n    \
         discord:\n      bot_token: imported-but-no-adapter\n  \
         webhook:\n    port: {hook_port}\n    routes:\n      ci:\n        secret: s3cret\n        \
         prompt: 'Summarise: {{head_commit.message}}'\n        deliver: 'irc:#test'\n",
        model.openai_base_url()
    ));
    let gateway = gateway_command(&home, &model, &[])
        .current_dir(work.path())
        .spawn()
        .unwrap();

    // Ann (allowed) waits for the bot in the channel and addresses it.
    let mut ann = IrcUser::connect(6667, "ann");
    ann.send("JOIN #test");
    ann.expect("JOIN");
    if ann
        .expect_within("talaria!", std::time::Duration::from_secs(60))
        .is_none()
    {
        panic!("the bot never joined #test");
    }
    ann.send("PRIVMSG #test :talaria: ping");
    let answer = ann.expect("PRIVMSG #test :");
    assert_contains(&answer, "pong from talaria");
    assert_contains(&answer, ":talaria!");

    // A command that needs approval is asked in the channel and runs once
    // Ann approves it there.
    ann.send("PRIVMSG #test :talaria: clean up");
    ann.expect("Approval needed");
    assert!(
        work.path().join("build").exists(),
        "nothing ran before the answer"
    );
    ann.send("PRIVMSG #test :talaria: /approve");
    assert_contains(
        &ann.expect("Removed the build directory."),
        "PRIVMSG #test :",
    );
    assert!(!work.path().join("build").exists(), "approved once: it ran");

    // Bob (a stranger) writes in private and gets a pairing code.
    let mut bob = IrcUser::connect(6667, "bob");
    bob.send("PRIVMSG talaria :hi");
    bob.expect("I don't know you yet");
    let approve = bob.expect("talaria pairing approve irc ");
    let code = approve.trim_end().rsplit(' ').next().unwrap().to_owned();
    let listed = stdout(&run(home.talaria(&["pairing", "list"])));
    assert_contains(&listed, "bob");
    assert_code(&run(home.talaria(&["pairing", "approve", "irc", &code])), 0);
    bob.send("PRIVMSG talaria :hi again");
    assert_contains(&bob.expect("PRIVMSG bob :"), "hello bob");
    assert_eq!(
        model.requests().len(),
        4,
        "a stranger's first words never reach the model"
    );

    // A signed push on the webhook: its summary is posted in the channel.
    let push = br#"{"ref": "refs/heads/main", "head_commit": {"message": "Fix the start crash"}}"#;
    let (status, reply) = post_hook(hook_port, "ci", "push", "p1", Some(b"s3cret"), push);
    assert_eq!(status, 202, "{reply}");
    assert_contains(&ann.expect("PRIVMSG #test :"), "main moved by two commits");
    let asked = model.requests()[4].messages();
    assert_contains(
        &asked.last().unwrap().text,
        "Summarise: Fix the start crash",
    );

    // A job scheduled from the channel (approved there once for the turn),
    // due at once.
    ann.send("PRIVMSG #test :talaria: remind us of the standup on weekdays");
    assert_contains(&ann.expect("Approval needed"), "cronjob wants to run");
    ann.expect("schedule a job (0 9 * * 1-5, delivered to origin)");
    ann.send("PRIVMSG #test :talaria: /approve session");
    ann.expect("Scheduled for weekdays at 09:00.");

    // A second gateway of the profile refuses to start.
    let second = run(home.talaria(&["gateway", "run"]));
    assert_code(&second, 1);
    assert_contains(&stderr(&second), "already running");

    let stopped = run(home.talaria(&["gateway", "stop"]));
    assert_code(&stopped, 0);
    let output = wait(gateway);
    assert!(output.status.success(), "{}", stderr(&output));
    let log = stderr(&output);
    assert_contains(&log, "talaria gateway: irc: started");
    assert_contains(
        &log,
        "no chat adapter plugin serves gateway.platforms.discord; it is skipped",
    );

    // With the gateway gone, a tick runs the job and opens the IRC account
    // just to deliver its answer to the channel it came from. (Should the
    // gateway's minutely tick have run it first, it delivered it itself.)
    let mut tick = home.talaria(&["cron", "tick"]);
    tick.current_dir(work.path());
    let ticked = run(tick);
    assert_code(&ticked, 0);
    if !log.contains("cron standup: ran") {
        assert_contains(&stdout(&ticked), "standup: ran");
        assert_contains(&stdout(&ticked), "delivered to origin");
    }
    assert_contains(&ann.expect("Standup in 5 minutes!"), ":talaria!");
    assert_contains(
        &model.requests()[8].messages().last().unwrap().text,
        "Remind the team of the standup",
    );
}

#[test]
fn the_gateway_speaks_tls_to_irc_and_comes_back_after_the_server_restarts() {
    assert!(
        Ngircd::installed(true),
        "scripts/system-deps installs ngircd and openssl"
    );
    build_plugins();
    let irc_dir = tempfile::tempdir().unwrap();
    // The TLS port the IRC adapter's default network grant names.
    let options = NgircdOptions {
        tls: true,
        tls_port: Some(6697),
        ..NgircdOptions::default()
    };
    let mut server = Ngircd::start(irc_dir.path(), &options)
        .expect("ngircd with TLS on 127.0.0.1:6697 (is another IRC server running?)");
    let ca = server.ca_pem.clone().unwrap();
    let model = ScriptedServer::spawn(Script::new([
        Step::text("over tls"),
        Step::text("back again"),
    ]))
    .unwrap();
    let home = Home::new();
    home.write_config(
        "gateway:\n  platforms:\n    irc:\n      server: 127.0.0.1\n      port: 6697\n      \
         tls: true\n      nick: talaria\n      channels: \"#secure\"\n      \
         allowed_users: ['ann!~ann@*']\n",
    );
    // The server's certificate is signed by the test's own CA.
    let gateway = spawn_gateway(&home, &model, &[("SSL_CERT_FILE", ca.to_str().unwrap())]);

    let mut ann = IrcUser::connect(server.port, "ann");
    ann.send("JOIN #secure");
    ann.expect("talaria!");
    ann.send("PRIVMSG #secure :talaria: are you there?");
    assert_contains(&ann.expect("PRIVMSG #secure :"), "over tls");

    // The server goes away and comes back: the bot reconnects (its backoff
    // waits 30 s after a failed attempt) and rejoins its channel.
    server.restart().unwrap();
    let mut ann = IrcUser::connect(server.port, "ann");
    ann.send("JOIN #secure");
    let rejoined = ann.expect_within("talaria!", std::time::Duration::from_secs(90));
    assert!(rejoined.is_some(), "the bot never came back to #secure");
    ann.send("PRIVMSG #secure :talaria: still there?");
    assert_contains(&ann.expect("PRIVMSG #secure :"), "back again");

    assert_code(&run(home.talaria(&["gateway", "stop"])), 0);
    let output = wait(gateway);
    assert!(output.status.success(), "{}", stderr(&output));
    let log = stderr(&output);
    assert_contains(&log, "reconnecting");
}

/// A plain ngIRCd on a free port (its directory, its port and the server), the plugins built.
pub(crate) fn plain_ngircd() -> (tempfile::TempDir, u16, Ngircd) {
    assert!(
        Ngircd::installed(false),
        "scripts/system-deps installs ngircd"
    );
    build_plugins();
    let irc_dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let options = NgircdOptions {
        port: Some(port),
        ..NgircdOptions::default()
    };
    let server = Ngircd::start(irc_dir.path(), &options).unwrap();
    (irc_dir, port, server)
}
