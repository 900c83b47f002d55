//! Deciding what a newly installed or updated plugin may do: nothing is
//! granted silently. The user answers on a terminal, or says it up front with
//! `--grant all|none|CAP,...`; an update asking for more asks again.

use std::io::{BufRead as _, IsTerminal as _, Write as _};

use talaria_agent::grants::{GrantSource, GrantStore, describe, parse_grant_list};
use talaria_plugin_manifest::{Grants, Manifest};

use super::Failure;

/// What to record for the plugin being installed from `source`, or `None` to
/// keep the user's existing decision for that source (a decision made for the
/// same name from another source does not count: the user is asked again).
pub(crate) fn decide(
    store: &GrantStore,
    source: &GrantSource,
    new: &Manifest,
    previous: Option<&Manifest>,
    flag: Option<&str>,
) -> Result<Option<Grants>, Failure> {
    let requested = describe(&Grants::all_requested(new));
    if let Some(text) = flag {
        return Ok(Some(parse_grant_list(new, text)?));
    }
    if requested.is_empty() {
        return Ok(Some(Grants::none()));
    }
    let earlier: Vec<String> = previous
        .map(|m| describe(&Grants::all_requested(m)))
        .unwrap_or_default();
    let more: Vec<&String> = requested.iter().filter(|c| !earlier.contains(c)).collect();
    if previous.is_some() && more.is_empty() && store.decided(source, &new.name).is_some() {
        return Ok(None);
    }
    let asking = if previous.is_some() && store.decided(source, &new.name).is_some() {
        format!(
            "{} {} asks for more than the installed version: {}",
            new.name,
            new.version,
            join(&more)
        )
    } else {
        format!(
            "{} {} asks for: {}",
            new.name,
            new.version,
            requested.join(", ")
        )
    };
    if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
        return Err(Failure::Usage(format!(
            "{asking}\npass --grant all, --grant none or --grant CAP,CAP,... to decide \
             (nothing was installed)"
        )));
    }
    ask(new, &asking)
}

fn join(items: &[&String]) -> String {
    items
        .iter()
        .map(|s| s.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

fn ask(manifest: &Manifest, asking: &str) -> Result<Option<Grants>, Failure> {
    let mut stderr = std::io::stderr();
    let stdin = std::io::stdin();
    loop {
        let _ = write!(
            stderr,
            "{asking}\nGrant [a]ll, [n]one, a list (CAP,CAP,...), or [c]ancel? "
        );
        let _ = stderr.flush();
        let mut line = String::new();
        match stdin.lock().read_line(&mut line) {
            Ok(0) | Err(_) => {
                return Err(Failure::Failed("cancelled; nothing was installed".into()));
            }
            Ok(_) => {}
        }
        let answer = line.trim();
        let text = match answer {
            "a" | "all" | "y" | "yes" => "all",
            "n" | "none" | "no" => "none",
            "c" | "cancel" | "" => {
                return Err(Failure::Failed("cancelled; nothing was installed".into()));
            }
            list => list,
        };
        match parse_grant_list(manifest, text) {
            Ok(grants) => return Ok(Some(grants)),
            Err(error) => {
                let _ = writeln!(stderr, "{error}");
            }
        }
    }
}
