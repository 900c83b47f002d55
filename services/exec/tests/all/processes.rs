//! Background processes: start through the gate, read by offsets, wait,
//! stdin, kill, per-session visibility and clean-up.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use crate::common::{HANG_GUARD, eventually, live_in_group, sh};
use talaria_approval::{ApprovalPolicy, DenyAll};
use talaria_exec::{ExecError, ExecOrigin, ExecRequest, GatedExecutor, LocalBackend, ProcessTable};

const SESSION: &str = "s1";
const OTHER: &str = "s2";

struct Fixture {
    table: ProcessTable,
    work: tempfile::TempDir,
    _profile: tempfile::TempDir,
}

fn fixture() -> Fixture {
    let profile = tempfile::tempdir().unwrap();
    let policy = ApprovalPolicy::load(profile.path().join("approvals.toml")).unwrap();
    let gate = GatedExecutor::new(
        Arc::new(LocalBackend::new()),
        Arc::new(policy),
        Arc::new(DenyAll),
    );
    Fixture {
        table: ProcessTable::new(Arc::new(gate)),
        work: tempfile::tempdir().unwrap(),
        _profile: profile,
    }
}

fn origin(session: &str) -> ExecOrigin {
    ExecOrigin::new("core", "process", session)
}

impl Fixture {
    async fn start(&self, session: &str, script: &str) -> u64 {
        self.table
            .start(sh(script, self.work.path()), &origin(session))
            .await
            .unwrap()
    }

    /// Reads from `offset` until `expected` was read (returns the offset after it).
    async fn read_until(&self, session: &str, id: u64, offset: u64, expected: &[u8]) -> u64 {
        let mut got = Vec::new();
        let mut next = offset;
        eventually("output to arrive", || {
            let chunk = self.table.read(session, id, next, 1 << 20).unwrap();
            assert_eq!(chunk.next_offset, next + chunk.data.len() as u64);
            next = chunk.next_offset;
            got.extend(chunk.data);
            got.len() >= expected.len()
        })
        .await;
        assert_eq!(got, expected);
        next
    }

    /// Starts a process that prints its group id then sleeps with a
    /// background child; returns its id and group.
    async fn start_sleepers(&self, session: &str) -> (u64, i32) {
        let id = self.start(session, "echo $$; sleep 300 & sleep 300").await;
        let mut pgid = None;
        eventually("the group id", || {
            let chunk = self.table.read(session, id, 0, 100).unwrap();
            pgid = String::from_utf8_lossy(&chunk.data)
                .strip_suffix('\n')
                .and_then(|line| line.parse().ok());
            pgid.is_some()
        })
        .await;
        let pgid = pgid.unwrap();
        eventually("both sleeps to start", || live_in_group(pgid) >= 2).await;
        (id, pgid)
    }
}

#[tokio::test]
async fn output_is_read_incrementally_by_offset() {
    let f = fixture();
    let id = f.start(SESSION, "echo one; sleep 0.2; echo two").await;
    let after_one = f.read_until(SESSION, id, 0, b"one\n").await;
    assert_eq!(after_one, 4);
    let after_two = f.read_until(SESSION, id, after_one, b"two\n").await;
    assert_eq!(after_two, 8);

    let info = f.table.wait(SESSION, id, HANG_GUARD).await.unwrap();
    assert!(!info.running);
    assert_eq!(info.status, Some(0));
    assert_eq!(info.command, "echo one; sleep 0.2; echo two");

    let chunk = f.table.read(SESSION, id, 0, 1 << 20).unwrap();
    assert_eq!(chunk.data, b"one\ntwo\n");
    assert_eq!(chunk.next_offset, 8);
    assert!(!chunk.running);
    assert_eq!(chunk.status, Some(0));
    assert_eq!(chunk.dropped_bytes, 0);
    let partial = f.table.read(SESSION, id, 2, 3).unwrap();
    assert_eq!(
        (partial.data.as_slice(), partial.next_offset),
        (&b"e\nt"[..], 5)
    );
}

#[tokio::test]
async fn stdout_and_stderr_share_the_log() {
    let f = fixture();
    let id = f
        .start(SESSION, "echo out; sleep 0.1; echo err >&2; exit 4")
        .await;
    let info = f.table.wait(SESSION, id, HANG_GUARD).await.unwrap();
    assert_eq!(info.status, Some(4));
    assert_eq!(
        f.table.read(SESSION, id, 0, 100).unwrap().data,
        b"out\nerr\n"
    );
}

#[tokio::test]
async fn the_log_keeps_the_newest_bytes() {
    let profile = tempfile::tempdir().unwrap();
    let policy = ApprovalPolicy::load(profile.path().join("approvals.toml")).unwrap();
    let gate = GatedExecutor::new(
        Arc::new(LocalBackend::new()),
        Arc::new(policy),
        Arc::new(DenyAll),
    );
    let table = ProcessTable::new(Arc::new(gate)).with_log_cap(1000);
    let work = tempfile::tempdir().unwrap();
    let id = table
        .start(
            ExecRequest::new("seq", vec!["1".into(), "3000".into()], work.path()),
            &origin(SESSION),
        )
        .await
        .unwrap();
    table.wait(SESSION, id, HANG_GUARD).await.unwrap();
    let all: String = (1..=3000).map(|i| format!("{i}\n")).collect();
    let chunk = table.read(SESSION, id, 0, 1 << 20).unwrap();
    assert_eq!(chunk.next_offset, all.len() as u64);
    assert_eq!(chunk.dropped_bytes, all.len() as u64 - 1000);
    assert_eq!(chunk.data, all.as_bytes()[all.len() - 1000..]);
}

#[tokio::test]
async fn stdin_reaches_the_process() {
    let f = fixture();
    let mut request = ExecRequest::new("cat", vec![], f.work.path());
    request.stdin = Some(b"first\n".to_vec());
    let id = f.table.start(request, &origin(SESSION)).await.unwrap();
    let offset = f.read_until(SESSION, id, 0, b"first\n").await;
    f.table
        .write(&origin(SESSION), id, b"hello\n")
        .await
        .unwrap();
    let offset = f.read_until(SESSION, id, offset, b"hello\n").await;
    f.table
        .write(&origin(SESSION), id, b"again\n")
        .await
        .unwrap();
    f.read_until(SESSION, id, offset, b"again\n").await;
    assert!(f.table.read(SESSION, id, 0, 0).unwrap().running);

    f.table.close_stdin(SESSION, id).await.unwrap();
    let info = f.table.wait(SESSION, id, HANG_GUARD).await.unwrap();
    assert_eq!((info.running, info.status), (false, Some(0)));
    let err = f
        .table
        .write(&origin(SESSION), id, b"late")
        .await
        .unwrap_err();
    assert!(matches!(err, ExecError::Failed(_)), "{err:?}");
}

#[tokio::test]
async fn kill_stops_the_whole_group() {
    let f = fixture();
    let (id, pgid) = f.start_sleepers(SESSION).await;
    f.table.kill(SESSION, id).unwrap();
    let info = f.table.wait(SESSION, id, HANG_GUARD).await.unwrap();
    assert!(!info.running);
    assert_eq!(info.status, None);
    eventually("the process group to die", || live_in_group(pgid) == 0).await;
    // Killed processes stay listed with their output until removed.
    assert_eq!(f.table.list(SESSION).len(), 1);
    f.table.remove(SESSION, id).unwrap();
    assert!(f.table.list(SESSION).is_empty());
}

#[tokio::test]
async fn wait_returns_running_when_the_timeout_passes() {
    let f = fixture();
    let id = f.start(SESSION, "sleep 300").await;
    let info = f
        .table
        .wait(SESSION, id, std::time::Duration::from_millis(50))
        .await
        .unwrap();
    assert!(info.running);
    assert_eq!(info.status, None);
}

#[tokio::test]
async fn processes_are_listed_per_session() {
    let f = fixture();
    let a = f.start(SESSION, "sleep 300").await;
    let b = f.start(SESSION, "echo hi").await;
    let c = f.start(OTHER, "sleep 301").await;
    let mine: Vec<(u64, String)> = f
        .table
        .list(SESSION)
        .into_iter()
        .map(|p| (p.id, p.command))
        .collect();
    assert_eq!(
        mine,
        vec![(a, "sleep 300".to_owned()), (b, "echo hi".to_owned())]
    );
    let theirs = f.table.list(OTHER);
    assert_eq!(theirs.len(), 1);
    assert_eq!(theirs[0].id, c);
    assert!(theirs[0].running);
    assert!(theirs[0].started <= std::time::SystemTime::now());
}

#[tokio::test]
async fn another_session_cannot_see_or_touch_a_process() {
    let f = fixture();
    let id = f.start(SESSION, "sleep 300").await;
    let not_found = ExecError::NoSuchProcess(id);
    assert_eq!(f.table.read(OTHER, id, 0, 10).unwrap_err(), not_found);
    assert_eq!(
        f.table.wait(OTHER, id, HANG_GUARD).await.unwrap_err(),
        not_found
    );
    assert_eq!(
        f.table.write(&origin(OTHER), id, b"x").await.unwrap_err(),
        not_found
    );
    assert_eq!(f.table.close_stdin(OTHER, id).await.unwrap_err(), not_found);
    assert_eq!(f.table.kill(OTHER, id).unwrap_err(), not_found);
    assert_eq!(f.table.remove(OTHER, id).unwrap_err(), not_found);
    assert!(f.table.list(OTHER).is_empty());
    f.table.end_session(OTHER);
    assert!(f.table.read(SESSION, id, 0, 10).unwrap().running);
    assert_eq!(
        f.table.read(SESSION, id + 1000, 0, 10).unwrap_err(),
        ExecError::NoSuchProcess(id + 1000)
    );
}

#[tokio::test]
async fn end_session_kills_its_processes_only() {
    let f = fixture();
    let (mine, pgid) = f.start_sleepers(SESSION).await;
    let (theirs, their_pgid) = f.start_sleepers(OTHER).await;
    f.table.end_session(SESSION);
    eventually("the session's processes to die", || {
        live_in_group(pgid) == 0
    })
    .await;
    assert!(f.table.list(SESSION).is_empty());
    assert_eq!(
        f.table.read(SESSION, mine, 0, 1).unwrap_err(),
        ExecError::NoSuchProcess(mine)
    );
    assert!(f.table.read(OTHER, theirs, 0, 1).unwrap().running);
    assert!(live_in_group(their_pgid) >= 2);
}

#[tokio::test]
async fn dropping_the_table_kills_everything() {
    let f = fixture();
    let (_, first) = f.start_sleepers(SESSION).await;
    let (_, second) = f.start_sleepers(OTHER).await;
    drop(f);
    eventually("all processes to die", || {
        live_in_group(first) + live_in_group(second) == 0
    })
    .await;
}

#[tokio::test]
async fn starting_goes_through_the_approval_gate() {
    let f = fixture();
    std::fs::create_dir(f.work.path().join("build")).unwrap();
    let err = f
        .table
        .start(sh("rm -rf build", f.work.path()), &origin(SESSION))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ExecError::Denied(m) if m.contains("recursive delete")),
        "{err:?}"
    );
    assert!(f.table.list(SESSION).is_empty());
    assert!(f.work.path().join("build").exists());
}

#[tokio::test]
async fn a_background_child_does_not_keep_a_finished_process_running() {
    let f = fixture();
    let id = f.start(SESSION, "sleep 300 & echo started").await;
    let info = f.table.wait(SESSION, id, HANG_GUARD).await.unwrap();
    assert_eq!((info.running, info.status), (false, Some(0)));
    assert_eq!(
        f.table.read(SESSION, id, 0, 100).unwrap().data,
        b"started\n"
    );
}

#[tokio::test]
async fn input_to_a_background_shell_is_screened_like_a_command() {
    let f = fixture();
    std::fs::create_dir(f.work.path().join("victim")).unwrap();
    let id = f
        .table
        .start(
            ExecRequest::new("bash", vec![], f.work.path()),
            &origin(SESSION),
        )
        .await
        .unwrap();
    let err = f
        .table
        .write(&origin(SESSION), id, b"rm -rf victim\n")
        .await
        .unwrap_err();
    assert!(matches!(err, ExecError::Denied(_)), "{err:?}");
    // Split over two writes, each harmless alone, it is still seen whole.
    f.table.write(&origin(SESSION), id, b"rm ").await.unwrap();
    let err = f
        .table
        .write(&origin(SESSION), id, b"-rf victim\n")
        .await
        .unwrap_err();
    assert!(matches!(err, ExecError::Denied(_)), "{err:?}");
    // Safe input still goes through; the shell runs it.
    f.table
        .write(&origin(SESSION), id, b"\necho alive; exit\n")
        .await
        .unwrap();
    let info = f.table.wait(SESSION, id, HANG_GUARD).await.unwrap();
    assert!(!info.running);
    let chunk = f.table.read(SESSION, id, 0, 1 << 20).unwrap();
    assert!(
        String::from_utf8_lossy(&chunk.data).contains("alive"),
        "{chunk:?}"
    );
    assert!(f.work.path().join("victim").is_dir(), "nothing was deleted");
}

#[tokio::test]
async fn initial_stdin_of_a_background_shell_is_screened() {
    let f = fixture();
    std::fs::create_dir(f.work.path().join("victim")).unwrap();
    let mut request = ExecRequest::new("sh", vec![], f.work.path());
    request.stdin = Some(b"rm -rf victim\n".to_vec());
    let err = f.table.start(request, &origin(SESSION)).await.unwrap_err();
    assert!(matches!(err, ExecError::Denied(_)), "{err:?}");
    assert!(f.table.list(SESSION).is_empty());
    assert!(f.work.path().join("victim").is_dir());
}

/// Writes `text` until it is refused (the reader changed), and returns the refusal.
async fn refused_once_read(f: &Fixture, id: u64, text: &[u8]) -> ExecError {
    let deadline = std::time::Instant::now() + HANG_GUARD;
    loop {
        if let Err(error) = f.table.write(&origin(SESSION), id, text).await {
            return error;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the input was never refused"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// Input is judged by the program reading it now, not the one first started: a shell that
/// started a Python REPL is a Python REPL, whose input needs approval (refused here: nobody
/// can answer); data programs take anything.
#[tokio::test]
async fn input_is_judged_by_the_program_that_reads_it() {
    let f = fixture();
    let request = |program: &str, args: &[&str]| {
        let args = args.iter().map(|a| (*a).to_owned()).collect();
        ExecRequest::new(program, args, f.work.path())
    };
    // The interpreter itself, not a launcher script (pyenv's shims are shell scripts that
    // run `env` and more before Python reads anything).
    let output = std::process::Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .unwrap();
    let python3 = String::from_utf8(output.stdout).unwrap().trim().to_owned();
    let refused_by_python =
        |err: &ExecError| matches!(err, ExecError::Denied(m) if m.contains("python3"));
    let python = f
        .table
        .start(request(&python3, &["-q", "-i"]), &origin(SESSION))
        .await
        .unwrap();
    let err = refused_once_read(&f, python, b"x = 1\n").await;
    assert!(refused_by_python(&err), "{err:?}");

    let shell = f
        .table
        .start(request("bash", &[]), &origin(SESSION))
        .await
        .unwrap();
    f.table
        .write(
            &origin(SESSION),
            shell,
            format!("{python3} -q -i\n").as_bytes(),
        )
        .await
        .unwrap();
    // Harmless as a shell line; once Python reads, the same text is refused.
    let err = refused_once_read(&f, shell, b"x = 1\n").await;
    assert!(refused_by_python(&err), "{err:?}");

    let cat = f
        .table
        .start(request("cat", &[]), &origin(SESSION))
        .await
        .unwrap();
    // Until `cat` runs, nobody known reads: the text is screened as a command line.
    let deadline = std::time::Instant::now() + HANG_GUARD;
    while let Err(err) = f
        .table
        .write(&origin(SESSION), cat, b"rm -rf victim\n")
        .await
    {
        assert!(matches!(err, ExecError::Denied(_)), "{err:?}");
        assert!(std::time::Instant::now() < deadline, "cat never read");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    f.read_until(SESSION, cat, 0, b"rm -rf victim\n").await;
}

/// A shell that moved its input off fd 0 (to read it with `read`, `eval` or a later `sh`) is
/// still its reader: the text is screened as a command, not passed as data.
#[tokio::test]
async fn a_shell_holding_the_input_on_another_descriptor_still_reads_it() {
    let f = fixture();
    std::fs::create_dir(f.work.path().join("victim")).unwrap();
    let id = f
        .start(
            SESSION,
            "exec 3<&0 0</dev/null; echo ready; sleep 2; while read -r line <&3; do echo \"$line\"; done",
        )
        .await;
    f.read_until(SESSION, id, 0, b"ready\n").await;
    let err = f
        .table
        .write(&origin(SESSION), id, b"rm -rf victim\n")
        .await
        .unwrap_err();
    assert!(matches!(err, ExecError::Denied(_)), "{err:?}");
    f.table.close_stdin(SESSION, id).await.unwrap();
    let info = f.table.wait(SESSION, id, HANG_GUARD).await.unwrap();
    assert!(!info.running);
    assert!(f.work.path().join("victim").is_dir(), "nothing was deleted");
}
