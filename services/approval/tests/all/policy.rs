//! Approval policy behaviour with fake approvers.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;
use talaria_approval::{
    Approval, ApprovalError, ApprovalPolicy, ApprovalRequest, Approver, Decision, DeniedKind,
    DenyAll, PathAccess, PathContext, ProtectedPaths, Risk,
};

const DANGEROUS: &str = "rm -rf build";
const OTHER_DANGEROUS: &str = "git push --force";
const HARDLINE: &str = "sudo rm -rf /";

/// Answers every request the same way (optionally after a delay) and records what it was asked.
struct Fake {
    answer: Decision,
    delay: Option<Duration>,
    asked: Mutex<Vec<ApprovalRequest>>,
}

impl Fake {
    fn new(answer: Decision) -> Self {
        Self {
            answer,
            delay: None,
            asked: Mutex::new(Vec::new()),
        }
    }

    fn asks(&self) -> usize {
        self.asked.lock().unwrap().len()
    }
}

#[async_trait]
impl Approver for Fake {
    async fn ask(&self, request: &ApprovalRequest) -> Decision {
        self.asked.lock().unwrap().push(request.clone());
        if let Some(delay) = self.delay {
            tokio::time::sleep(delay).await;
        }
        self.answer.clone()
    }
}

fn always_file(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join("profile").join("approvals.toml")
}

fn policy(path: &Path) -> ApprovalPolicy {
    ApprovalPolicy::load(path).unwrap()
}

#[tokio::test]
async fn once_asks_every_time() {
    let dir = tempfile::tempdir().unwrap();
    let policy = policy(&always_file(&dir));
    let user = Fake::new(Decision::Once);

    for _ in 0..2 {
        let approval = policy
            .check("s1", "terminal", DANGEROUS, false, &user)
            .await;
        assert_eq!(approval, Ok(Approval::Once));
    }
    assert_eq!(user.asks(), 2);
    let request = &user.asked.lock().unwrap()[0];
    assert_eq!(request.command, DANGEROUS);
    assert_eq!(request.tool, "terminal");
    assert_eq!(request.session_id, "s1");
    assert_eq!(request.finding.id, "rm-recursive");
    assert!(
        !always_file(&dir).exists(),
        "once must not persist anything"
    );
}

#[tokio::test]
async fn session_approval_holds_for_that_session_and_finding_only() {
    let dir = tempfile::tempdir().unwrap();
    let policy = policy(&always_file(&dir));
    let user = Fake::new(Decision::Session);

    let first = policy
        .check("s1", "terminal", DANGEROUS, false, &user)
        .await;
    assert_eq!(first, Ok(Approval::Session));
    let again = policy
        .check("s1", "terminal", "rm -r dist", false, &user)
        .await;
    assert_eq!(again, Ok(Approval::Session));
    assert_eq!(
        user.asks(),
        1,
        "same finding in the same session is remembered"
    );

    policy
        .check("s2", "terminal", DANGEROUS, false, &user)
        .await
        .unwrap();
    assert_eq!(user.asks(), 2, "another session asks again");
    policy
        .check("s1", "terminal", OTHER_DANGEROUS, false, &user)
        .await
        .unwrap();
    assert_eq!(user.asks(), 3, "another finding asks again");

    policy.end_session("s1");
    policy
        .check("s1", "terminal", DANGEROUS, false, &user)
        .await
        .unwrap();
    assert_eq!(user.asks(), 4, "an ended session forgets its approvals");
    assert!(
        !always_file(&dir).exists(),
        "session approvals are not persisted"
    );
}

#[tokio::test]
async fn always_persists_across_policies_loaded_from_the_same_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = always_file(&dir);
    let user = Fake::new(Decision::Always);

    let first = policy(&path);
    let approval = first.check("s1", "terminal", DANGEROUS, false, &user).await;
    assert_eq!(approval, Ok(Approval::Always { save_error: None }));
    assert!(
        std::fs::read_to_string(&path)
            .unwrap()
            .contains("rm-recursive")
    );

    let reloaded = policy(&path);
    let nobody = Fake::new(Decision::Deny);
    let approval = reloaded
        .check("s9", "terminal", DANGEROUS, false, &nobody)
        .await;
    assert_eq!(approval, Ok(Approval::Always { save_error: None }));
    assert_eq!(nobody.asks(), 0);

    // A second "always" keeps the first one.
    reloaded
        .check("s9", "terminal", OTHER_DANGEROUS, false, &user)
        .await
        .unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.contains("rm-recursive") && text.contains("git-push-force"),
        "{text}"
    );
}

#[tokio::test]
async fn deny_refuses_with_a_message_for_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let policy = policy(&always_file(&dir));
    let user = Fake::new(Decision::Deny);

    let denied = policy
        .check("s1", "terminal", DANGEROUS, false, &user)
        .await
        .unwrap_err();
    assert_eq!(denied.kind, DeniedKind::User);
    assert_eq!(denied.message, "denied by the user: recursive delete");
    assert_eq!(denied.to_string(), denied.message);

    // Nobody was asked: the refusal must not claim a user said no.
    let denied = policy
        .check("s1", "terminal", DANGEROUS, false, &DenyAll)
        .await
        .unwrap_err();
    assert_eq!(denied.kind, DeniedKind::NoApprover);
    assert_eq!(
        denied.message,
        "refused: needs approval and nobody can answer (approvals.mode: deny / no terminal): \
         recursive delete"
    );
    assert!(!denied.message.contains("denied by the user"));
}

#[tokio::test(start_paused = true)]
async fn no_answer_within_the_timeout_is_a_denial() {
    let dir = tempfile::tempdir().unwrap();
    let policy = policy(&always_file(&dir));
    let slow = Fake {
        delay: Some(Duration::from_secs(3600)),
        ..Fake::new(Decision::Once)
    };

    let denied = policy
        .check("s1", "terminal", DANGEROUS, false, &slow)
        .await
        .unwrap_err();
    assert_eq!(denied.kind, DeniedKind::Timeout);
    assert_eq!(
        denied.message,
        "approval timed out after 60s: recursive delete"
    );

    let quick = policy.with_timeout(Duration::from_millis(1500));
    let denied = quick
        .check("s1", "terminal", DANGEROUS, false, &slow)
        .await
        .unwrap_err();
    assert_eq!(
        denied.message,
        "approval timed out after 1.5s: recursive delete"
    );
}

#[tokio::test(start_paused = true)]
async fn an_answer_just_inside_the_timeout_counts() {
    let dir = tempfile::tempdir().unwrap();
    let policy = policy(&always_file(&dir));
    let user = Fake {
        delay: Some(Duration::from_secs(59)),
        ..Fake::new(Decision::Once)
    };
    let approval = policy
        .check("s1", "terminal", DANGEROUS, false, &user)
        .await;
    assert_eq!(approval, Ok(Approval::Once));
}

#[tokio::test]
async fn yolo_skips_asking_but_hardline_is_still_blocked() {
    let dir = tempfile::tempdir().unwrap();
    let policy = policy(&always_file(&dir)).with_yolo(true);
    let user = Fake::new(Decision::Always);

    let approval = policy
        .check("s1", "terminal", DANGEROUS, false, &user)
        .await;
    assert_eq!(approval, Ok(Approval::Yolo));

    let denied = policy
        .check("s1", "terminal", HARDLINE, false, &user)
        .await
        .unwrap_err();
    assert_eq!(denied.kind, DeniedKind::Hardline);
    assert_eq!(
        denied.message,
        "blocked: recursive delete of the root, home or a system directory (hardline: never allowed)"
    );
    assert_eq!(user.asks(), 0);
}

#[tokio::test]
async fn yolo_can_be_switched_off_and_on_during_a_session() {
    let dir = tempfile::tempdir().unwrap();
    let policy = policy(&always_file(&dir)).with_yolo(true);
    let user = Fake::new(Decision::Deny);
    policy.set_yolo(false);
    assert!(!policy.yolo());
    let denied = policy
        .check("s1", "terminal", DANGEROUS, false, &user)
        .await;
    assert!(denied.is_err());
    assert_eq!(user.asks(), 1);
    policy.set_yolo(true);
    let approval = policy
        .check("s1", "terminal", DANGEROUS, false, &user)
        .await;
    assert_eq!(approval, Ok(Approval::Yolo));
    assert_eq!(user.asks(), 1);
}

#[tokio::test]
async fn sandboxed_backends_skip_asking_but_hardline_is_still_blocked() {
    let dir = tempfile::tempdir().unwrap();
    let policy = policy(&always_file(&dir));
    let user = Fake::new(Decision::Always);

    let approval = policy.check("s1", "terminal", DANGEROUS, true, &user).await;
    assert_eq!(approval, Ok(Approval::Sandboxed));
    let denied = policy
        .check("s1", "terminal", "mkfs.ext4 /dev/sda1", true, &user)
        .await;
    assert_eq!(denied.unwrap_err().kind, DeniedKind::Hardline);
    assert_eq!(user.asks(), 0);
}

#[tokio::test]
async fn hardline_cannot_be_approved_even_by_an_always_answer() {
    let dir = tempfile::tempdir().unwrap();
    let policy = policy(&always_file(&dir));
    let user = Fake::new(Decision::Always);
    let denied = policy.check("s1", "terminal", HARDLINE, false, &user).await;
    assert_eq!(denied.unwrap_err().kind, DeniedKind::Hardline);
    assert_eq!(user.asks(), 0);
}

#[tokio::test]
async fn safe_commands_never_ask() {
    let dir = tempfile::tempdir().unwrap();
    let policy = policy(&always_file(&dir));
    let user = Fake::new(Decision::Deny);
    for command in ["ls -la /", "cargo build", "git status", "rm file.txt"] {
        let approval = policy.check("s1", "terminal", command, false, &user).await;
        assert_eq!(approval, Ok(Approval::Safe), "{command}");
    }
    assert_eq!(user.asks(), 0);
}

#[test]
fn corrupt_always_file_is_an_error_naming_it_and_is_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("approvals.toml");
    let corrupt = "always = [\"rm-recursive\"\n";
    std::fs::write(&path, corrupt).unwrap();

    let err = ApprovalPolicy::load(&path).unwrap_err();
    assert!(
        matches!(err, ApprovalError::CorruptAlways { .. }),
        "{err:?}"
    );
    assert!(
        err.to_string().contains(&path.display().to_string()),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), corrupt);
}

#[tokio::test]
async fn a_file_corrupted_after_loading_is_reported_not_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("approvals.toml");
    let policy = policy(&path);
    let corrupt = "this is not toml = = =\n";
    std::fs::write(&path, corrupt).unwrap();

    let user = Fake::new(Decision::Always);
    let approval = policy
        .check("s1", "terminal", DANGEROUS, false, &user)
        .await;
    let Ok(Approval::Always {
        save_error: Some(error),
    }) = approval
    else {
        panic!("expected an unsaved always approval, got {approval:?}");
    };
    assert!(error.contains(&path.display().to_string()), "{error}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), corrupt);

    // Still approved for this process.
    let again = policy
        .check("s2", "terminal", DANGEROUS, false, &user)
        .await;
    assert_eq!(again, Ok(Approval::Always { save_error: None }));
    assert_eq!(user.asks(), 1);
}

/// A policy protecting a profile home at `<dir>/home` (user home `<dir>`), yolo on.
fn protecting(dir: &tempfile::TempDir) -> ApprovalPolicy {
    let home = dir.path().join("home");
    let paths = ProtectedPaths {
        write: vec![home.join("config.yaml"), home.join("approvals.toml")],
        read: vec![home.join("cache").join("plugins.key")],
        homes: vec![home.clone()],
    };
    let context = PathContext {
        cwd: Some(dir.path().join("work")),
        home_dir: Some(dir.path().to_path_buf()),
        talaria_home: Some(home.clone()),
    };
    policy(&home.join("approvals.toml"))
        .with_yolo(true)
        .with_protected(paths, &context)
}

const PROTECTED: &str = "sed -i 's/ask/yolo/' $TALARIA_HOME/config.yaml";

#[tokio::test]
async fn protected_commands_are_asked_about_even_in_yolo_mode_and_sandboxes() {
    let dir = tempfile::tempdir().unwrap();
    let policy = protecting(&dir);
    let user = Fake::new(Decision::Once);
    for sandboxed in [false, true] {
        let approval = policy
            .check("s1", "terminal", PROTECTED, sandboxed, &user)
            .await;
        assert_eq!(approval, Ok(Approval::Once));
    }
    let approval = policy
        .check(
            "s1",
            "terminal",
            "talaria config set approvals.mode yolo",
            true,
            &user,
        )
        .await;
    assert_eq!(approval, Ok(Approval::Once));
    assert_eq!(user.asks(), 3);
    {
        let asked = user.asked.lock().unwrap();
        assert_eq!(asked[0].finding.id, "protected-write");
        assert!(
            asked[0].finding.description.contains("config.yaml"),
            "{:?}",
            asked[0].finding
        );
        assert_eq!(asked[2].finding.id, "talaria-control");
    }

    // Dangerous but unprotected commands still skip the question in yolo mode.
    let approval = policy
        .check("s1", "terminal", DANGEROUS, false, &user)
        .await;
    assert_eq!(approval, Ok(Approval::Yolo));
    assert_eq!(user.asks(), 3);
}

#[tokio::test]
async fn protected_commands_are_refused_where_nobody_can_answer() {
    let dir = tempfile::tempdir().unwrap();
    let policy = protecting(&dir);
    for command in [
        PROTECTED,
        "echo 'x = 1' >> ~/home/approvals.toml",
        "cat ~/home/cache/plugins.key",
        "talaria plugins grant terminal exec",
    ] {
        let denied = policy
            .check("s1", "terminal", command, true, &DenyAll)
            .await
            .unwrap_err();
        assert_eq!(denied.kind, DeniedKind::NoApprover, "{command}");
        assert!(
            denied
                .message
                .starts_with("refused: needs approval and nobody can answer"),
            "{}",
            denied.message
        );
    }
    // Reading a control file, or the same file name elsewhere, is not protected.
    for command in ["cat $TALARIA_HOME/config.yaml", "sed -i s/a/b/ config.yaml"] {
        let approval = policy
            .check("s1", "terminal", command, false, &DenyAll)
            .await;
        assert_eq!(approval, Ok(Approval::Safe), "{command}");
    }
}

#[tokio::test]
async fn always_for_a_protected_command_holds_for_the_session_only() {
    let dir = tempfile::tempdir().unwrap();
    let always = dir.path().join("home").join("approvals.toml");
    let policy = protecting(&dir);
    let user = Fake::new(Decision::Always);
    let approval = policy
        .check("s1", "terminal", PROTECTED, false, &user)
        .await;
    assert_eq!(approval, Ok(Approval::Session));
    assert!(!always.exists(), "nothing stored for later sessions");
    let approval = policy
        .check("s1", "terminal", PROTECTED, false, &DenyAll)
        .await;
    assert_eq!(approval, Ok(Approval::Session));
    let denied = policy
        .check("s2", "terminal", PROTECTED, false, &DenyAll)
        .await;
    assert_eq!(denied.unwrap_err().kind, DeniedKind::NoApprover);
    // A hardline command stays hardline when it also names a protected path.
    assert!(matches!(
        policy.risk("rm -rf / ~/home/config.yaml", None),
        Risk::Hardline(_)
    ));
}

/// File tools and plugins name paths: the same protection, decided per path
/// (a symlinked home is found at its real location too).
#[tokio::test]
async fn protected_paths_named_by_tools_follow_the_protected_flow() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real");
    std::fs::create_dir_all(real.join("home").join("cache")).unwrap();
    std::os::unix::fs::symlink(&real, dir.path().join("link")).unwrap();
    let home = dir.path().join("link").join("home");
    let paths = ProtectedPaths {
        write: vec![home.join("config.yaml")],
        read: vec![home.join("cache").join("plugins.key")],
        homes: vec![home.clone()],
    };
    let policy = policy(&dir.path().join("approvals.toml"))
        .with_yolo(true)
        .with_protected(paths, &PathContext::default());
    let real_home = real.canonicalize().unwrap().join("home");
    let config = real_home.join("config.yaml");
    let key = real_home.join("cache").join("plugins.key");
    // Refused where nobody can answer, even in yolo mode; the message says which.
    let denied = policy
        .check_path("s1", "write_file", &config, PathAccess::Write, &DenyAll)
        .await
        .unwrap_err();
    assert_eq!(denied.kind, DeniedKind::NoApprover);
    assert!(denied.message.contains("config.yaml"), "{}", denied.message);
    let denied = policy
        .check_path("s1", "read_file", &key, PathAccess::Read, &DenyAll)
        .await
        .unwrap_err();
    assert_eq!(denied.finding.id, "protected-read");
    // Reading a control file is free; so is any other file.
    for (path, access) in [
        (config.clone(), PathAccess::Read),
        (real_home.join("MEMORY.md"), PathAccess::Write),
    ] {
        let approval = policy.check_path("s1", "fs", &path, access, &DenyAll).await;
        assert_eq!(approval, Ok(Approval::Safe), "{path:?}");
    }
    // "Always" holds for the session only.
    let user = Fake::new(Decision::Always);
    let approval = policy
        .check_path("s1", "write_file", &config, PathAccess::Write, &user)
        .await;
    assert_eq!(approval, Ok(Approval::Session));
    assert!(!dir.path().join("approvals.toml").exists());
    let denied = policy
        .check_path("s2", "write_file", &config, PathAccess::Write, &DenyAll)
        .await;
    assert_eq!(denied.unwrap_err().kind, DeniedKind::NoApprover);
}

/// `approvals.mode: smart`'s approver answers with a rating: it allows a dangerous command
/// once, and never a protected one, which only a person may approve; the request says which
/// is which.
#[tokio::test]
async fn a_rating_allows_a_dangerous_command_but_never_a_protected_one() {
    let dir = tempfile::tempdir().unwrap();
    let policy = protecting(&dir).with_yolo(false);
    let rating = talaria_approval::Rating {
        risk: talaria_approval::RatedRisk::Low,
        reason: "a build directory".into(),
        model: "rater".into(),
    };
    let rater = Fake::new(Decision::Rated(rating.clone()));
    let approval = policy
        .check("s1", "terminal", DANGEROUS, false, &rater)
        .await;
    assert_eq!(approval, Ok(Approval::Rated(rating)));
    let denied = policy
        .check("s1", "terminal", PROTECTED, false, &rater)
        .await
        .unwrap_err();
    assert_eq!(denied.kind, DeniedKind::NoApprover);
    assert!(denied.message.contains("person"), "{}", denied.message);
    let asked = rater.asked.lock().unwrap();
    assert!(!asked[0].protected);
    assert!(asked[1].protected);
}

/// What the user approved of the controls is reported, so a sandbox can let it happen.
#[tokio::test]
async fn an_approved_protected_command_is_reported_as_such() {
    let dir = tempfile::tempdir().unwrap();
    let policy = protecting(&dir);
    let user = Fake::new(Decision::Once);
    let check = |command| talaria_approval::CommandCheck {
        session_id: "s1",
        tool: "terminal",
        command,
        ..Default::default()
    };
    let admitted = policy.admit(check(PROTECTED), &user).await.unwrap();
    assert_eq!(
        admitted.protected.map(|finding| finding.id),
        Some("protected-write".to_owned())
    );
    let admitted = policy.admit(check(DANGEROUS), &user).await.unwrap();
    assert_eq!(admitted.protected, None);
}
