#!/usr/bin/env python3
"""Builds tests/corpus/code.txt: real source lines that name a key, token, secret or password as
code (no secret in them), which the redactor must leave unchanged.

Usage (the roots are directories of unpacked packages, one package per child directory):

    python3 collect_code_lines.py -o code.txt ~/.cargo/registry/src/*/ /tmp/redact-src/

`/tmp/redact-src/` held the PyPI sdists this corpus was built from, unpacked with
`pip download --no-binary :all: --no-deps requests httpx boto3 google-auth oauthlib
requests-oauthlib paramiko pyjwt authlib openai anthropic slack_sdk keyring python-dotenv hvac msal`
(into /tmp, never into the repository: only the picked lines land here).

What it does, deterministically:
- walks every package under the roots, reads its .rs/.py/.js/.ts/.go files;
- picks the lines matching (?i)(key|token|secret|password|passwd), stripped of trailing space;
- drops, before anything else, the lines that hold data rather than code (see DATA below: a string
  literal given to a secret-named field, a key in a provider's format, a credential after
  Bearer/Basic, a password in a URL or after a --password flag) and lines over 240 characters
  (minified code, data tables): those are secrets by the redactor's rules, not survivors;
- keeps per file at most --per-file lines, assignments (`name = …`, `name: …`) first, and per
  package the --files-per-package files with the most assignments;
- dedups lines across all files (first file wins) and writes each file's lines under a
  `# from <package>/<path>` header, so the provenance of every line is visible.

The test (tests/all.rs) reads every non-empty line as one corpus line, except those starting with
"# " (the headers and this file's preamble; unindented "# " source lines are left out for that).
"""

import argparse
import os
import re
import sys

EXTENSIONS = (".rs", ".py", ".js", ".ts", ".go")
MENTION = re.compile(r"(?i)(key|token|secret|password|passwd)")
# A secret-named word followed by an assignment or a field separator.
ASSIGNMENT = re.compile(
    r"(?i)(key|token|secret|password|passwd|pwd|passphrase)\w*[\"'\]]?\s*(:=|=>|=(?!=)|:(?!:))"
)
MAX_LINE = 240

# The names the redactor treats as secret-named (a `cache_key` or `key` alone is not one).
SECRET_NAME = (
    r"(?i:[\w.-]*(?:api[_.-]?key|apikey|access[_.-]?key|secret|private[_.-]?key|signing[_.-]?key|"
    r"encryption[_.-]?key|master[_.-]?key|token|password|passwd|pwd|passphrase))"
)
# Lines that hold data: each is a secret by the redactor's rules (or a genuine-format key that
# belongs in secrets.txt), so it is no code survivor.
DATA = {
    "string literal given to a secret-named field": re.compile(
        SECRET_NAME
        + r"[\"'\]]?\s*(?::=|=>|=(?!=)|(?<!:):(?!:))\s*"
        # A literal wrapped in a value constructor is still the value.
        + r"(?:(?:String::from|Some|str|bytes|SecretStr|SecretString::new|Secret::new)\()?"
        + r"[bfruBFRU]{0,2}[\"'`][^\"'`]{3,}"
    ),
    "string literal given to a secret-named key in a map": re.compile(
        r"[\"']" + SECRET_NAME + r"[\"']\s*,\s*[bfruBFRU]{0,2}[\"'][^\"']{3,}"
    ),
    "provider-format key": re.compile(
        r"\b(?:sk-[A-Za-z0-9_-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_|xox[abposre]-|"
        r"xapp-|AIza[0-9A-Za-z_-]{20,}|(?:AKIA|ASIA)[0-9A-Z]{16}|eyJ[A-Za-z0-9_-]{8,}\.|"
        r"glpat-|hf_[A-Za-z0-9]{20,}|npm_[A-Za-z0-9]{20,}|(?:sk|rk|pk)_(?:live|test)_|"
        r"pplx-|tvly-|ntn_|PRIVATE KEY-----|\d{8,10}:AA[0-9A-Za-z_-]{20,})"
    ),
    "credential after Bearer/Basic/Authorization: token": re.compile(
        r"(?i)(?:\b(?:bearer|basic)\s+(?=[A-Za-z0-9._~+/-]*\d)[A-Za-z0-9._~+/-]{8,}"
        r"|authorization[\"']?\s*[:=]\s*[\"']?token\s+[A-Za-z0-9])"
    ),
    "password in a URL": re.compile(r"://[^/\s:@]+:[^/\s@]{3,}@"),
    "secret-named URL query parameter with a value": re.compile(
        r"[?&;#]" + SECRET_NAME + r"=[^&\s\"'$<{]{4,}"
    ),
    "secret after a flag": re.compile(
        r"(?i)--(?:password|passwd|token|api-key|apikey|secret|client-secret|access-key)"
        r"(?:=|\s+)[^\s\"'{$<-]"
    ),
}


# The same, read inside a string literal's escapes: `"{\"password\":\"x\"}"`, and the header
# lines of an HTTP message written as `"…\r\nx-secret: value\r\n…"`.
ESCAPED_DATA = {
    "JSON field with a value inside an escaped string": re.compile(
        r'"' + SECRET_NAME + r'"\s*:\s*"[^"]{3,}'
    ),
    "header with a value inside an escaped HTTP message": re.compile(
        r"(?m)^[\w-]*" + SECRET_NAME + r"[\w-]*:[ \t]*\S{3,}"
    ),
}


def data_reason(line):
    """Why `line` holds data rather than code, or None."""
    for why, regex in DATA.items():
        if regex.search(line):
            return why
    if "\\" in line:
        unescaped = line.replace('\\"', '"').replace("\\r", "").split("\\n", 1)
        if ESCAPED_DATA["JSON field with a value inside an escaped string"].search(unescaped[0]):
            return "JSON field with a value inside an escaped string"
        if len(unescaped) > 1:
            for why, regex in ESCAPED_DATA.items():
                if regex.search(unescaped[1].replace("\\n", "\n")):
                    return why
    return None


def package_files(package_dir):
    for base, dirs, files in os.walk(package_dir):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in ("target", "node_modules"))
        for name in sorted(files):
            if name.endswith(EXTENSIONS):
                yield os.path.join(base, name)


def candidate_lines(path, dropped):
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except (UnicodeDecodeError, OSError):
        return []
    picked = []
    for line in lines:
        line = line.rstrip()
        # An unindented "# " line would read as a corpus comment.
        if not MENTION.search(line) or line.startswith("# "):
            continue
        if len(line) > MAX_LINE:
            dropped["longer than %d characters" % MAX_LINE] += 1
            continue
        reason = data_reason(line)
        if reason:
            dropped[reason] += 1
            continue
        picked.append(line)
    return picked


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("roots", nargs="+")
    parser.add_argument("-o", "--output", required=True)
    parser.add_argument("--per-file", type=int, default=5)
    parser.add_argument("--files-per-package", type=int, default=4)
    args = parser.parse_args()

    dropped = {why: 0 for why in list(DATA) + list(ESCAPED_DATA)}
    dropped["longer than %d characters" % MAX_LINE] = 0
    packages = []
    for root in args.roots:
        for name in sorted(os.listdir(root)):
            if os.path.isdir(os.path.join(root, name)):
                packages.append((name, os.path.join(root, name)))

    seen = set()
    groups = []
    for name, package_dir in packages:
        files = []
        for path in package_files(package_dir):
            lines = candidate_lines(path, dropped)
            if lines:
                assignments = [l for l in lines if ASSIGNMENT.search(l)]
                files.append((-len(assignments), os.path.relpath(path, package_dir), lines))
        files.sort()
        for _, rel, lines in files[: args.files_per_package]:
            ordered = [l for l in lines if ASSIGNMENT.search(l)] + [
                l for l in lines if not ASSIGNMENT.search(l)
            ]
            kept = []
            for line in ordered:
                key = line.strip()
                if key in seen:
                    continue
                seen.add(key)
                kept.append(line)
                if len(kept) == args.per_file:
                    break
            if kept:
                # Source order within the file, as a reader would see it.
                order = {line: index for index, line in enumerate(lines)}
                kept.sort(key=lambda l: order[l])
                groups.append(("%s/%s" % (name, rel), kept))

    with open(args.output, "w", encoding="utf-8") as out:
        out.write(
            "# Real source lines that name a key, token, secret or password as code: the redactor\n"
            "# must change none of them. Generated by collect_code_lines.py (see its top for how);\n"
            "# each group is headed by the file it comes from. Lines are raw: no escapes.\n"
        )
        for origin, lines in groups:
            out.write("# from %s\n" % origin)
            for line in lines:
                out.write(line + "\n")
    total = sum(len(lines) for _, lines in groups)
    print("%d lines from %d files of %d packages" % (total, len(groups), len({o.split("/")[0] for o, _ in groups})), file=sys.stderr)
    for why, count in dropped.items():
        print("  dropped %5d: %s" % (count, why), file=sys.stderr)


if __name__ == "__main__":
    main()
