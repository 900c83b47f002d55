//! Command positions: the places in a normalised command line where a command name can stand.
//!
//! Command-scoped patterns are anchored with `^` at each of these "views", so `rm -rf x` after `;`,
//! `&&`, `|`, inside `$( )`, behind `sudo`/`env`/`xargs`, in a `bash -c` payload or after
//! `find -exec` is seen as a command, while `echo rm -rf x` or `grep -rn kill src/` is not.

/// Wrapper commands: run the command that follows their options (and `positionals` operands).
struct Wrapper {
    names: &'static [&'static str],
    /// Options that consume the next word.
    arg_opts: &'static [&'static str],
    /// Operands before the wrapped command (`timeout 5 …`, `chroot DIR …`).
    positionals: usize,
}

const WRAPPERS: &[Wrapper] = &[
    Wrapper {
        names: &["sudo"],
        arg_opts: &[
            "-u",
            "-g",
            "-h",
            "-p",
            "-c",
            "-d",
            "-r",
            "-t",
            "--user",
            "--group",
            "--host",
            "--prompt",
            "--chdir",
            "--role",
            "--type",
            "--other-user",
            "--close-from",
        ],
        positionals: 0,
    },
    Wrapper {
        names: &["doas", "run0", "pkexec"],
        arg_opts: &["-u", "-c", "--user"],
        positionals: 0,
    },
    Wrapper {
        names: &["env"],
        arg_opts: &["-u", "-c", "--unset", "--chdir"],
        positionals: 0,
    },
    Wrapper {
        names: &["nice"],
        arg_opts: &["-n", "--adjustment"],
        positionals: 0,
    },
    Wrapper {
        names: &["ionice"],
        arg_opts: &["-c", "-n", "-p", "--class", "--classdata"],
        positionals: 0,
    },
    Wrapper {
        names: &["stdbuf"],
        arg_opts: &["-i", "-o", "-e"],
        positionals: 0,
    },
    Wrapper {
        names: &["timeout"],
        arg_opts: &["-s", "-k", "--signal", "--kill-after"],
        positionals: 1,
    },
    Wrapper {
        names: &["watch"],
        arg_opts: &["-n", "--interval", "-q", "--equexit"],
        positionals: 0,
    },
    Wrapper {
        names: &["xargs"],
        arg_opts: &[
            "-a",
            "-d",
            "-e",
            "-i",
            "-l",
            "-n",
            "-p",
            "-s",
            "--arg-file",
            "--delimiter",
            "--max-args",
            "--max-procs",
            "--max-lines",
            "--max-chars",
        ],
        positionals: 0,
    },
    Wrapper {
        names: &["chroot"],
        arg_opts: &[],
        positionals: 1,
    },
    Wrapper {
        names: &["flock"],
        arg_opts: &["-w", "-e", "--timeout", "--conflict-exit-code"],
        positionals: 1,
    },
    Wrapper {
        names: &["exec"],
        arg_opts: &["-a"],
        positionals: 0,
    },
    Wrapper {
        names: &["time"],
        arg_opts: &["-f", "-o", "--format", "--output"],
        positionals: 0,
    },
    Wrapper {
        names: &["proxychains", "proxychains4"],
        arg_opts: &["-f"],
        positionals: 0,
    },
    Wrapper {
        names: &["strace", "ltrace"],
        arg_opts: &["-e", "-o", "-p", "-s", "-u", "-a", "-b"],
        positionals: 0,
    },
    Wrapper {
        // `taskset MASK cmd`, `taskset -c LIST cmd`: the mask or list comes first either way.
        names: &["taskset"],
        arg_opts: &[],
        positionals: 1,
    },
    Wrapper {
        names: &["unshare"],
        arg_opts: &[
            "-s",
            "-g",
            "-w",
            "--setuid",
            "--setgid",
            "--root",
            "--wd",
            "--propagation",
            "--setgroups",
            "--map-user",
            "--map-group",
        ],
        positionals: 0,
    },
    Wrapper {
        names: &["setpriv"],
        arg_opts: &[
            "--reuid",
            "--regid",
            "--ruid",
            "--euid",
            "--rgid",
            "--egid",
            "--groups",
            "--inh-caps",
            "--ambient-caps",
            "--bounding-set",
            "--securebits",
            "--pdeathsig",
            "--selinux-label",
            "--apparmor-profile",
            "--landlock-access",
            "--landlock-rule",
        ],
        positionals: 0,
    },
    Wrapper {
        names: &["systemd-run"],
        arg_opts: &[
            "-p",
            "-u",
            "-e",
            "-h",
            "-m",
            "--property",
            "--unit",
            "--description",
            "--slice",
            "--setenv",
            "--uid",
            "--gid",
            "--machine",
            "--host",
            "--working-directory",
            "--nice",
            "--on-active",
            "--on-boot",
            "--on-startup",
            "--on-unit-active",
            "--on-unit-inactive",
            "--on-calendar",
            "--path-property",
            "--socket-property",
            "--timer-property",
            "--service-type",
        ],
        positionals: 0,
    },
    Wrapper {
        // `runuser -u USER -- cmd` (the `-l USER -c cmd` form is a shell payload, see SHELLS).
        names: &["runuser"],
        arg_opts: &["-u", "-g", "-l", "--user", "--group", "--supp-group", "-w"],
        positionals: 0,
    },
    Wrapper {
        names: &["fakeroot"],
        arg_opts: &["-l", "-s", "-i", "-b", "--lib", "--faked"],
        positionals: 0,
    },
    Wrapper {
        names: &["prlimit"],
        arg_opts: &[
            "-p", "--pid", "-o", "--output", "-c", "-d", "-e", "-f", "-i", "-l", "-m", "-n", "-q",
            "-r", "-s", "-t", "-u", "-v", "-x", "-y",
        ],
        positionals: 0,
    },
    Wrapper {
        names: &["rlwrap"],
        arg_opts: &[
            "-a", "-b", "-c", "-d", "-f", "-g", "-h", "-l", "-m", "-o", "-p", "-q", "-s", "-t",
            "-w", "-z",
        ],
        positionals: 0,
    },
    Wrapper {
        // `chrt -f 50 cmd`: the priority comes first.
        names: &["chrt"],
        arg_opts: &["-t", "-p", "-d"],
        positionals: 1,
    },
    Wrapper {
        names: &["nsenter"],
        arg_opts: &[
            "-t", "-s", "-g", "-r", "-w", "--target", "--setuid", "--setgid",
        ],
        positionals: 0,
    },
    Wrapper {
        names: &[
            "numactl",
            "firejail",
            "catchsegv",
            "valgrind",
            "systemd-inhibit",
        ],
        arg_opts: &["-c", "-m", "-n", "-p", "-i"],
        positionals: 0,
    },
    Wrapper {
        names: &["cpulimit", "trickle"],
        arg_opts: &["-l", "-p", "-d", "-u", "-s"],
        positionals: 0,
    },
    Wrapper {
        names: &[
            "nohup",
            "builtin",
            "setsid",
            "unbuffer",
            "eatmydata",
            "torsocks",
            "nocorrect",
            "noglob",
            "busybox",
            "if",
            "then",
            "else",
            "elif",
            "do",
            "while",
            "until",
            "!",
            "{",
        ],
        arg_opts: &[],
        positionals: 0,
    },
];

/// Shells (and `su`) whose `-c` argument is a command line.
pub(crate) const SHELLS: &[&str] = &[
    "sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "csh", "tcsh", "fish", "su", "runuser",
    "script", "flock", "sg",
];

/// Shells that run a here-string (`bash <<< "cmd"`) or piped text (`echo cmd | sh`) as a script.
pub(crate) const SCRIPT_SHELLS: &[&str] = &[
    "sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "csh", "tcsh", "fish",
];

/// How deep wrappers may nest before we stop looking (guards against pathological input).
const MAX_DEPTH: usize = 32;

/// Every command position in the normalised `line`, each as the rest of its simple command.
pub(crate) fn command_views(line: &str) -> Vec<&str> {
    let mut views = Vec::new();
    // Splitting at parentheses finds `$( … )` and subshells, but would cut `find . ( … ) -delete`
    // in two, so both splits are used.
    for segment in split(line, false).into_iter().chain(split(line, true)) {
        expand(segment, &mut views, 0);
    }
    for script in piped_scripts(line) {
        expand(script, &mut views, 0);
    }
    views
}

/// The text of `echo TEXT | sh` and `printf TEXT | bash`: the shell runs it as a command line.
fn piped_scripts(line: &str) -> Vec<&str> {
    let mut scripts = Vec::new();
    let mut rest = line;
    while let Some(bar) = rest.find('|') {
        let (before, after) = (&rest[..bar], &rest[bar + 1..]);
        rest = after;
        let shell = after.split(' ').find(|w| !w.is_empty() && *w != "sudo");
        if !shell.is_some_and(|w| SCRIPT_SHELLS.contains(&w)) {
            continue;
        }
        // The simple command before the pipe.
        let start = before.rfind([';', '&', '|', '(', '`']).map_or(0, |i| i + 1);
        let words = words(before[start..].trim());
        let Some(&(_, name)) = words.first() else {
            continue;
        };
        if matches!(name, "echo" | "printf")
            && let Some(&(offset, _)) = words.get(skip_options(&words, 1, &[]))
        {
            scripts.push(before[start..].trim()[offset..].trim());
        }
    }
    scripts
}

/// Splits at command separators; with `parens`, also at `(`, `)` and backticks.
fn split(line: &str, parens: bool) -> Vec<&str> {
    let bytes = line.as_bytes();
    let mut segments = Vec::new();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let before = i.checked_sub(1).and_then(|j| bytes.get(j)).copied();
        let is_separator = match b {
            b';' | b'\n' => true,
            // `>|` is a clobbering redirect, not a pipe.
            b'|' => before != Some(b'>'),
            // `2>&1`, `<&3` and `&>file` are redirects, not background jobs.
            b'&' => !matches!(before, Some(b'>' | b'<')) && bytes.get(i + 1) != Some(&b'>'),
            b'(' | b')' | b'`' => parens,
            _ => false,
        };
        if is_separator {
            // Separators are ASCII, so these are char boundaries.
            segments.push(line[start..i].trim());
            start = i + 1;
        }
    }
    segments.push(line[start..].trim());
    segments.retain(|s| !s.is_empty());
    segments
}

/// Adds `view` and every command position reachable from it by unwrapping.
fn expand<'a>(view: &'a str, views: &mut Vec<&'a str>, depth: usize) {
    let view = view.trim();
    if view.is_empty() || depth > MAX_DEPTH || views.contains(&view) {
        return;
    }
    views.push(view);
    for next in unwrap(view) {
        expand(next, views, depth + 1);
    }
}

/// The command positions directly inside `view` (after a wrapper, in a `-c` payload, …).
fn unwrap(view: &str) -> Vec<&str> {
    let words = words(view);
    let Some(&(_, first)) = words.first() else {
        return Vec::new();
    };
    let from = |i: usize| words.get(i).map(|&(offset, _)| &view[offset..]);
    let mut next = Vec::new();

    // `/usr/bin/rm` is `rm`. Relative paths are project files, not system commands.
    if let Some(slash) = first.rfind('/').filter(|_| first.starts_with('/'))
        && slash + 1 < first.len()
    {
        next.push(&view[slash + 1..]);
    }
    if is_assignment(first) {
        next.extend(from(1));
    }
    if first == "command" {
        // `command -v rm` looks a command up instead of running it.
        let lookup = words.iter().skip(1).any(|&(_, w)| w == "-v");
        if !lookup {
            next.extend(from(skip_options(&words, 1, &[])));
        }
    }
    if let Some(wrapper) = WRAPPERS.iter().find(|w| w.names.contains(&first)) {
        // Case folding merges flags (`-i` and `-I`), so an option may or may not take a value:
        // both readings are command positions.
        let with_values = skip_options(&words, 1, wrapper.arg_opts) + wrapper.positionals;
        let flags_only = skip_options(&words, 1, &[]) + wrapper.positionals;
        next.extend(from(with_values));
        if flags_only != with_values {
            next.extend(from(flags_only));
        }
    }
    if first == "env" {
        // `env -S'CMD ARGS'` (`--split-string=…`) splits its value into the command it runs.
        for &(offset, word) in words.iter().skip(1) {
            if let Some(at) = split_string(word) {
                next.push(&view[offset + at..]);
            }
            if !word.starts_with('-') {
                break;
            }
        }
    }
    if SHELLS.contains(&first) {
        let payload = words.iter().position(|&(_, w)| is_dash_c(w));
        next.extend(payload.and_then(|i| from(i + 1)));
    }
    if SCRIPT_SHELLS.contains(&first) {
        let here_string = words.iter().position(|&(_, w)| w == "<<<");
        next.extend(here_string.and_then(|i| from(i + 1)));
    }
    if first == "ssh" {
        // Option arity is ambiguous after case folding; any later word may start the remote command.
        next.extend((1..words.len()).filter_map(from));
    }
    if first == "find" {
        for (i, &(_, w)) in words.iter().enumerate() {
            if matches!(w, "-exec" | "-execdir" | "-ok" | "-okdir") {
                next.extend(from(i + 1));
            }
        }
    }
    next
}

/// Where the command run by the wrapper `words[0]` starts (`sudo -u bob rm …` → 3); `None`
/// when `words[0]` is not a wrapper. Options listed as taking a value are read as taking one.
pub(crate) fn wrapped_start(words: &[&str]) -> Option<usize> {
    let first = *words.first()?;
    let indexed: Vec<(usize, &str)> = words.iter().map(|&word| (0, word)).collect();
    if first == "command" {
        // `command -v rm` looks a command up instead of running it.
        let lookup = words.iter().skip(1).any(|&w| w == "-v");
        return (!lookup).then(|| skip_options(&indexed, 1, &[]));
    }
    let wrapper = WRAPPERS.iter().find(|w| w.names.contains(&first))?;
    Some(skip_options(&indexed, 1, wrapper.arg_opts) + wrapper.positionals)
}

/// Where the command line in `env`'s attached split-string option starts (`-S'rm -rf x'` is
/// `-srm -rf x` once normalised: 2; `-vsrm`: 3; `--split-string=rm`: 15).
fn split_string(word: &str) -> Option<usize> {
    if let Some(value) = word.strip_prefix("--split-string=") {
        return (!value.is_empty()).then_some(word.len() - value.len());
    }
    let flags = word
        .strip_prefix('-')
        .filter(|rest| !rest.starts_with('-'))?;
    let at = flags.find('s')?;
    (flags[..at].chars().all(|c| c.is_ascii_alphanumeric()) && at + 1 < flags.len())
        .then_some(at + 2)
}

/// Index of the first word at or after `i` that is not an option, option argument or assignment.
fn skip_options(words: &[(usize, &str)], mut i: usize, arg_opts: &[&str]) -> usize {
    while let Some(&(_, w)) = words.get(i) {
        if w == "--" {
            return i + 1;
        }
        if w.len() > 1 && w.starts_with('-') {
            i += if arg_opts.contains(&w) { 2 } else { 1 };
        } else if is_assignment(w) {
            i += 1;
        } else {
            break;
        }
    }
    i
}

/// `NAME=value`, as in `FOO=1 cmd` or `env FOO=1 cmd`.
pub(crate) fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        let mut chars = name.chars();
        chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// A shell's `-c` flag, possibly combined with others (`-lc`, `-xc`), or `--command`.
pub(crate) fn is_dash_c(word: &str) -> bool {
    word == "--command" || (word.starts_with('-') && !word.starts_with("--") && word.contains('c'))
}

/// Words of a normalised string with their byte offsets.
fn words(s: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut offset = 0;
    for word in s.split(' ') {
        if !word.is_empty() {
            out.push((offset, word));
        }
        offset += word.len() + 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::command_views;

    #[test]
    fn finds_commands_behind_separators_and_wrappers() {
        let views = command_views("ls; sudo -u root env a=1 rm -rf x && echo $(reboot)");
        assert!(views.contains(&"rm -rf x"), "{views:?}");
        assert!(views.contains(&"reboot"), "{views:?}");
        assert!(
            !views.iter().any(|v| v.starts_with("rm -rf x &&")),
            "{views:?}"
        );
    }

    #[test]
    fn finds_shell_payloads_and_find_exec() {
        let views = command_views("bash -lc rm -rf x");
        assert!(views.contains(&"rm -rf x"), "{views:?}");
        let views = command_views("find . -exec rm -rf {} +");
        assert!(views.contains(&"rm -rf {} +"), "{views:?}");
        let views = command_views("/bin/rm -rf x");
        assert!(views.contains(&"rm -rf x"), "{views:?}");
    }

    #[test]
    fn finds_here_strings_piped_scripts_and_wrapped_programs() {
        let views = command_views("bash <<< rm -rf x");
        assert!(views.contains(&"rm -rf x"), "{views:?}");
        let views = command_views("ls; echo -e rm -rf x | sudo bash");
        assert!(views.contains(&"rm -rf x"), "{views:?}");
        let views = command_views("strace -f -o /tmp/t taskset -c 0-3 rm -rf x");
        assert!(views.contains(&"rm -rf x"), "{views:?}");
        let views = command_views("script -q -c rm -rf x /dev/null");
        assert!(views.contains(&"rm -rf x /dev/null"), "{views:?}");
        for line in [
            "env -srm -rf x",
            "env -i -vsrm -rf x",
            "env --split-string=rm -rf x",
        ] {
            let views = command_views(line);
            assert!(views.contains(&"rm -rf x"), "{line}: {views:?}");
        }
    }

    #[test]
    fn arguments_are_not_commands() {
        let views = command_views("echo rm -rf x");
        assert_eq!(views, vec!["echo rm -rf x"]);
        assert_eq!(
            command_views("command -v reboot"),
            vec!["command -v reboot"]
        );
    }
}
