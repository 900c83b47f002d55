#!/usr/bin/env python3
"""Talaria vs Hermes Agent on the same scripted work (issue 9).

Both agents run as real processes against the scripted model server
(`talaria-scripted-server`) on loopback. Each scenario is a *run set*: a fresh
agent home, one unmeasured warm-up run (reported separately as the first run
in a fresh home), then N measured runs. Every run is one process tree, reaped
with wait4(2), which gives its wall time, CPU time (user + system of the
process and every descendant it waited for) and peak RSS (of the largest
process in the tree). The server records every request; the bytes sent to the
model are the sum of the recorded request bodies.

See benches/hermes/README.md for what each figure means and how Hermes is configured.
Standard library only (Python >= 3.9).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional

HERMES_VERSION = "0.19.0"
ROOT = Path(__file__).resolve().parents[2]
MODEL = "bench-model"
# Hermes refuses models with a context window under 64K; an explicit
# model.context_length also stops it from probing the endpoint for one.
CONTEXT_LENGTH = 131072
API_KEY = "sk-bench-not-a-real-key"
# The same tools on both sides: the `file` toolset (read_file, write_file,
# patch, search_files) and the `terminal` toolset (terminal, process). Hermes
# enables tools by toolset only and its `terminal` toolset always brings
# `process`, so both agents get these six.
TOOLSETS = ["file", "terminal"]
# Extra Talaria rows for the first-request figure; a row whose settings this
# build does not recognise is reported as skipped.
DEFAULT_VARIANTS = ["lazy schemas=tools.schemas=lazy"]
READS = 20

# Targets from the issue: Hermes/Talaria ratio of the medians must reach these.
CPU_TARGET = 100.0
RSS_TARGET = 4.0
FIRST_REQUEST_TARGET = 2.0


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def run_checked(argv: List[str], **kwargs) -> None:
    log("$ " + " ".join(shlex.quote(str(a)) for a in argv))
    subprocess.run([str(a) for a in argv], check=True, **kwargs)


# ---------------------------------------------------------------- scenarios


@dataclass
class Scenario:
    key: str
    title: str
    prompt: Optional[str]  # None: `--version`
    steps: List[dict] = field(default_factory=list)
    expect_text: str = ""
    # Substrings every measured run's last request must carry in its tool
    # results (proof that the tools really ran).
    expect_results: List[str] = field(default_factory=list)
    toolsets: Optional[List[str]] = field(default_factory=lambda: list(TOOLSETS))
    variants: bool = False  # also run the Talaria variants

    @property
    def expect_requests(self) -> int:
        return len(self.steps)


def part_name(i: int) -> str:
    return f"notes/part-{i:02d}.txt"


def part_marker(i: int) -> str:
    return f"bench-marker-{i:02d}"


def tool_call(name: str, arguments: dict, n: int = 1) -> dict:
    # Fixed ids: the server's own counter runs on across looped runs, which
    # would change the bytes sent from one run to the next.
    return {"kind": "tool_calls", "calls": [{"id": f"call_{n:02d}", "name": name, "arguments": arguments}]}


def scenarios() -> List[Scenario]:
    done = "BENCH-DONE"
    reads = [tool_call("read_file", {"path": part_name(i)}, i) for i in range(1, READS + 1)]
    return [
        Scenario("version", "`--version`", None),
        Scenario(
            "terminal",
            "one-shot, 1 `terminal` call (`echo hi`)",
            "Run `echo hi` in the terminal and tell me what it printed.",
            [tool_call("terminal", {"command": "echo hi"}), {"kind": "text", "text": f"It printed hi. {done}"}],
            expect_text=done,
            expect_results=["hi"],
        ),
        Scenario(
            "read1",
            "one-shot, 1 `read_file` call",
            "Read notes/part-01.txt and summarise it.",
            [reads[0], {"kind": "text", "text": f"Read one file. {done}"}],
            expect_text=done,
            expect_results=[part_marker(1)],
        ),
        Scenario(
            "read20",
            f"one-shot, {READS} `read_file` calls (one per turn)",
            f"Read notes/part-01.txt to notes/part-{READS:02d}.txt one by one and summarise them.",
            reads + [{"kind": "text", "text": f"Read {READS} files. {done}"}],
            expect_text=done,
            expect_results=[part_marker(i) for i in range(1, READS + 1)],
        ),
        Scenario(
            "first",
            "first request, same 6 tools",
            "Say hello.",
            [{"kind": "text", "text": f"Hello. {done}"}],
            expect_text=done,
            variants=True,
        ),
        Scenario(
            "first-default",
            "first request, each agent's default tools",
            "Say hello.",
            [{"kind": "text", "text": f"Hello. {done}"}],
            expect_text=done,
            toolsets=None,
        ),
    ]


def make_workdir(path: Path) -> None:
    """The agents' working directory: 20 small text files to read."""
    notes = path / "notes"
    notes.mkdir(parents=True)
    for i in range(1, READS + 1):
        lines = [f"# Part {i:02d}", part_marker(i)]
        lines += [f"line {n}: the quick brown fox jumps over the lazy dog" for n in range(1, 31)]
        (path / part_name(i)).write_text("\n".join(lines) + "\n")


# ------------------------------------------------------------------- agents


def set_dotted(config: dict, dotted: str, value) -> None:
    keys = dotted.split(".")
    node = config
    for key in keys[:-1]:
        node = node.setdefault(key, {})
    node[keys[-1]] = value


def parse_value(text: str):
    try:
        return json.loads(text)
    except ValueError:
        return text


@dataclass
class Settings:
    """Config keys (dotted, for config.yaml) and extra CLI arguments."""

    config: Dict[str, object] = field(default_factory=dict)
    args: List[str] = field(default_factory=list)

    @staticmethod
    def parse(spec: str) -> "Settings":
        """`key.path=value` tokens set config keys; tokens starting with `-` are arguments."""
        settings = Settings()
        for token in shlex.split(spec):
            if token.startswith("-"):
                settings.args.append(token)
            elif "=" in token:
                key, value = token.split("=", 1)
                settings.config[key] = parse_value(value)
            else:
                raise SystemExit(f"cannot read '{token}' in '{spec}': use key.path=value or --flag")
        return settings

    def merged(self, other: "Settings") -> "Settings":
        return Settings({**self.config, **other.config}, self.args + other.args)

    def describe(self) -> str:
        parts = [f"{k}={json.dumps(v)}" for k, v in self.config.items()] + self.args
        return " ".join(parts) or "(none)"


class Agent:
    name = ""
    label = ""

    def home(self, base: Path) -> Path:
        raise NotImplementedError

    def prepare(self, home: Path, base_url: str, scenario: Scenario) -> None:
        raise NotImplementedError

    def argv(self, scenario: Scenario, base_url: str) -> List[str]:
        raise NotImplementedError

    def env(self, home: Path) -> Dict[str, str]:
        raise NotImplementedError


class Talaria(Agent):
    name = "talaria"

    def __init__(self, binary: Path, settings: Settings, label: str = "Talaria", variant: bool = False):
        self.binary = binary
        self.settings = settings
        self.label = label
        self.variant = variant

    def home(self, base: Path) -> Path:
        return base / ".talaria"

    def prepare(self, home: Path, base_url: str, scenario: Scenario) -> None:
        home.mkdir(parents=True, exist_ok=True)
        config: dict = {}
        if scenario.toolsets is not None:
            set_dotted(config, "tools.enabled", list(scenario.toolsets))
        for key, value in self.settings.config.items():
            set_dotted(config, key, value)
        # JSON is YAML: no YAML library needed.
        (home / "config.yaml").write_text(json.dumps(config, indent=2) + "\n")

    def argv(self, scenario: Scenario, base_url: str) -> List[str]:
        if scenario.prompt is None:
            return [str(self.binary), "--version"]
        return [
            str(self.binary), "-q", scenario.prompt, "--yolo",
            "--provider", "openai", "--base-url", base_url, "--model", MODEL,
        ] + self.settings.args

    def env(self, home: Path) -> Dict[str, str]:
        return {"TALARIA_HOME": str(home), "TALARIA_API_KEY": API_KEY}


class Hermes(Agent):
    name = "hermes"
    label = "Hermes"

    def __init__(self, venv: Path):
        self.venv = venv
        self.binary = venv / "bin" / "hermes"

    def home(self, base: Path) -> Path:
        return base / ".hermes"

    def prepare(self, home: Path, base_url: str, scenario: Scenario) -> None:
        home.mkdir(parents=True, exist_ok=True)
        # Hermes ignores OPENAI_BASE_URL: a custom provider in its config.
        (home / "config.yaml").write_text(
            "model:\n"
            "  provider: custom\n"
            f"  base_url: {base_url}\n"
            f"  api_key: {API_KEY}\n"
            f"  default: {MODEL}\n"
            f"  context_length: {CONTEXT_LENGTH}\n"
        )

    def argv(self, scenario: Scenario, base_url: str) -> List[str]:
        if scenario.prompt is None:
            return [str(self.binary), "--version"]
        argv = [str(self.binary), "-z", scenario.prompt, "--yolo"]
        if scenario.toolsets is not None:
            argv += ["-t", ",".join(scenario.toolsets)]
        return argv

    def env(self, home: Path) -> Dict[str, str]:
        # As with an activated virtualenv: its python3 comes first on PATH.
        return {
            "HERMES_HOME": str(home),
            "PATH": f"{self.venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
            "VIRTUAL_ENV": str(self.venv),
        }


def base_env(home_dir: Path) -> Dict[str, str]:
    """A small, fixed environment: nothing from the caller's API keys or agent settings."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
        "HOME": str(home_dir),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TERM": "dumb",
    }
    for name in ("USER", "LOGNAME", "TMPDIR", "TZ"):
        if name in os.environ:
            env[name] = os.environ[name]
    return env


# ------------------------------------------------------------- measurement


@dataclass
class Sample:
    wall: float
    cpu: float
    rss_kib: int
    requests: int = 0
    bytes_sent: int = 0
    first_bytes: int = 0
    first_system: int = 0
    first_tools: int = 0
    first_tool_count: int = 0


@dataclass
class RunSet:
    scenario: Scenario
    agent: Agent
    cold: Optional[Sample] = None
    samples: List[Sample] = field(default_factory=list)
    error: Optional[str] = None
    skipped: Optional[str] = None
    leftovers: int = 0
    tag: str = ""

    def median(self, attr: str) -> float:
        return statistics.median(getattr(s, attr) for s in self.samples)

    def spread(self, attr: str):
        values = [getattr(s, attr) for s in self.samples]
        return statistics.median(values), min(values), max(values)

    @property
    def ok(self) -> bool:
        return bool(self.samples) and self.error is None and self.skipped is None


def kill_group(pgid: int) -> bool:
    """Kills what is left of a process group this harness started; True if anything was."""
    try:
        os.killpg(pgid, signal.SIGKILL)
        return True
    except (ProcessLookupError, PermissionError):
        return False


@dataclass
class Outcome:
    code: int
    wall: float
    cpu: float
    rss_kib: int
    stdout: str
    stderr: str
    leftovers: bool
    timed_out: bool


def measure(spawner: Path, argv: List[str], env: Dict[str, str], cwd: Path, timeout: float) -> Outcome:
    """Runs `argv` under `bench-spawn` (see benches/hermes/spawn.rs), which reaps it with wait4(2)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.TemporaryDirectory() as scratch:
        result = Path(scratch) / "rusage.json"
        proc = subprocess.Popen(
            [str(spawner), str(result)] + argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL,
            stdout=out, stderr=err, start_new_session=True,
        )
        timed_out = False
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            kill_group(proc.pid)
            proc.wait()
        # Whatever the run left behind in its process group.
        leftovers = kill_group(proc.pid)
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode("utf-8", "replace")
        stderr = err.read().decode("utf-8", "replace")
        try:
            usage = json.loads(result.read_text())
        except (OSError, ValueError):
            usage = {"wall": 0.0, "utime": 0.0, "stime": 0.0, "maxrss_kib": 0,
                     "code": proc.returncode if proc.returncode else -1}
        return Outcome(
            code=int(usage["code"]),
            wall=float(usage["wall"]),
            cpu=float(usage["utime"]) + float(usage["stime"]),
            rss_kib=int(usage["maxrss_kib"]),
            stdout=stdout,
            stderr=stderr,
            leftovers=leftovers,
            timed_out=timed_out,
        )


class ScriptedServer:
    """One `talaria-scripted-server --loop` per run set, recording to a JSON-lines file."""

    def __init__(self, binary: Path, steps: List[dict], directory: Path, chunk_size: str):
        directory.mkdir(parents=True, exist_ok=True)
        self.script = directory / "script.json"
        self.record = directory / "requests.jsonl"
        self.script.write_text(json.dumps(steps, indent=1))
        self.record.write_text("")
        argv = [str(binary), "--script", str(self.script), "--record", str(self.record), "--loop",
                "--chunk-size", chunk_size]
        self.log = open(directory / "server.log", "wb")
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=self.log, stdin=subprocess.DEVNULL)
        line = self.proc.stdout.readline().decode().strip() if self.proc.stdout else ""
        match = re.search(r"http://127\.0\.0\.1:(\d+)", line)
        if not match:
            self.stop()
            raise SystemExit(f"the scripted server did not start: {line!r} (see {directory / 'server.log'})")
        self.base_url = f"http://127.0.0.1:{match.group(1)}/v1"
        self.seen = 0

    def take(self) -> List[dict]:
        """Requests recorded since the last call."""
        lines = [l for l in self.record.read_text().splitlines() if l.strip()]
        new = [json.loads(l) for l in lines[self.seen:]]
        self.seen = len(lines)
        return new

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def body_bytes(request: dict) -> int:
    for name, value in request.get("headers", []):
        if name.lower() == "content-length":
            return int(value)
    return len(request.get("raw_body", "").encode("utf-8"))


def compact_bytes(value) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


def system_bytes(body: dict) -> int:
    total = 0
    for message in body.get("messages", []):
        if message.get("role") in ("system", "developer"):
            content = message.get("content")
            if isinstance(content, str):
                total += len(content.encode("utf-8"))
            elif isinstance(content, list):
                total += sum(len(str(p.get("text", "")).encode("utf-8")) for p in content if isinstance(p, dict))
    return total


def tool_results(body: dict) -> str:
    parts = []
    for message in body.get("messages", []):
        if message.get("role") == "tool":
            content = message.get("content")
            parts.append(content if isinstance(content, str) else json.dumps(content))
    return "\n".join(parts)


def check_tool_shapes(body: dict, steps: List[dict]) -> Optional[str]:
    """Each scripted call names an offered tool, with arguments its schema knows and requires."""
    tools = {t.get("function", {}).get("name"): t.get("function", {}) for t in body.get("tools", [])}
    for step in steps:
        for call in step.get("calls", []):
            spec = tools.get(call["name"])
            if spec is None:
                return f"the scripted call {call['name']} is not among the offered tools {sorted(tools)}"
            params = spec.get("parameters") or {}
            props = params.get("properties")
            if props is None:  # an open schema (lazy schemas): nothing to check
                continue
            args = call["arguments"]
            unknown = [a for a in args if a not in props]
            missing = [r for r in params.get("required", []) if r not in args]
            if unknown or missing:
                return f"{call['name']} arguments {args} do not fit its schema (unknown {unknown}, missing {missing})"
    return None


def run_set(
    spawner: Path,
    agent: Agent,
    scenario: Scenario,
    runs: int,
    dirs: Path,
    workroot: Path,
    server_bin: Path,
    timeout: float,
    chunk_size: str,
    tag: str,
) -> RunSet:
    result = RunSet(scenario, agent, tag=tag)
    base = dirs / tag
    if base.exists():
        shutil.rmtree(base)
    home_dir = base / "home"
    home = agent.home(home_dir)
    cwd = workroot / tag
    make_workdir(cwd)
    server = None
    base_url = "http://127.0.0.1:9/v1"  # `--version` talks to nobody
    try:
        if scenario.steps:
            server = ScriptedServer(server_bin, scenario.steps, base / "server", chunk_size)
            base_url = server.base_url
        agent.prepare(home, base_url, scenario)
        env = base_env(home_dir)
        env.update(agent.env(home))
        argv = agent.argv(scenario, base_url)
        (base / "command.txt").write_text(" ".join(shlex.quote(a) for a in argv) + "\n")
        for i in range(runs + 1):
            outcome = measure(spawner, argv, env, cwd, timeout)
            (base / f"run-{i}.stdout").write_text(outcome.stdout)
            (base / f"run-{i}.stderr").write_text(outcome.stderr)
            requests = server.take() if server else []
            problem = None
            if outcome.timed_out:
                problem = f"timed out after {timeout:.0f} s"
            elif outcome.code != 0:
                problem = f"exit code {outcome.code}"
            elif scenario.expect_text and scenario.expect_text not in outcome.stdout:
                problem = f"the final answer is missing from stdout: {outcome.stdout[-300:]!r}"
            elif len(requests) != scenario.expect_requests:
                problem = f"{len(requests)} model requests, expected {scenario.expect_requests}"
            elif requests:
                problem = check_tool_shapes(requests[0]["body"], scenario.steps)
                results = tool_results(requests[-1]["body"])
                missing = [s for s in scenario.expect_results if s not in results]
                if problem is None and missing:
                    problem = f"tool results lack {missing[:3]}: {results[:300]!r}"
            if problem:
                detail = outcome.stderr.strip().splitlines()[-5:]
                result.error = f"run {i}: {problem}" + (f" — stderr: {' | '.join(detail)}" if detail else "")
                if i == 0 and isinstance(agent, Talaria) and agent.variant and outcome.code == 2:
                    errors = [l for l in outcome.stderr.splitlines() if l.lower().startswith("error")]
                    result.skipped = "not recognised by this build: " + (errors or detail or ["exit 2"])[0]
                    result.error = None
                log(f"  {agent.label} / {scenario.key}: {result.skipped or result.error}")
                break
            if outcome.leftovers:
                result.leftovers += 1
            sample = Sample(outcome.wall, outcome.cpu, outcome.rss_kib, len(requests))
            if requests:
                first = requests[0]["body"]
                sample.bytes_sent = sum(body_bytes(r) for r in requests)
                sample.first_bytes = body_bytes(requests[0])
                sample.first_system = system_bytes(first)
                sample.first_tools = compact_bytes(first.get("tools", []))
                sample.first_tool_count = len(first.get("tools", []))
            if i == 0:
                result.cold = sample
            else:
                result.samples.append(sample)
            log(f"  {agent.label:<24} {scenario.key:<14} run {i}{' (warm-up)' if i == 0 else ''}: "
                f"wall {fmt_ms(outcome.wall)}, cpu {fmt_ms(outcome.cpu)}, rss {fmt_mib(outcome.rss_kib)}"
                + (f", {len(requests)} requests, {sample.bytes_sent:,} B" if requests else ""))
    finally:
        if server:
            server.stop()
    return result


# -------------------------------------------------------------- reporting


def fmt_ms(seconds: float) -> str:
    ms = seconds * 1000
    if ms < 10:
        return f"{ms:.2f} ms"
    if ms < 100:
        return f"{ms:.1f} ms"
    return f"{ms:,.0f} ms"


def fmt_mib(kib: float) -> str:
    return f"{kib / 1024:.1f} MiB"


def fmt_bytes(n: float) -> str:
    return f"{n:,.0f} B"


def fmt_ratio(r: Optional[float]) -> str:
    if r is None:
        return "—"
    if r >= 100:
        return f"{r:,.0f}×"
    if r >= 10:
        return f"{r:.1f}×"
    return f"{r:.2f}×"


FIGURES = {
    "wall": ("wall time", fmt_ms),
    "cpu": ("CPU time (user+sys)", fmt_ms),
    "rss_kib": ("peak RSS", fmt_mib),
    "bytes_sent": ("bytes sent to the model", fmt_bytes),
    "first_bytes": ("first request", fmt_bytes),
}


def cell(rs: Optional[RunSet], attr: str, fmt: Callable) -> str:
    if rs is None:
        return "—"
    if rs.skipped:
        return "skipped (see notes)"
    if not rs.ok:
        return "failed (see notes)" if rs.error else "—"
    mid, low, high = rs.spread(attr)
    if low == high:
        return fmt(mid)
    return f"{fmt(mid)} ({fmt(low)}–{fmt(high)})"


def ratio(t: Optional[RunSet], h: Optional[RunSet], attr: str) -> Optional[float]:
    if not (t and h and t.ok and h.ok):
        return None
    tm = t.median(attr)
    return h.median(attr) / tm if tm else None


def verdict(r: Optional[float], target: Optional[float]) -> str:
    if target is None:
        return ""
    if r is None:
        return f"≥ {target:g}×: not measured"
    return f"≥ {target:g}×: {'**met**' if r >= target else '**missed**'}"


def per_turn(rs1: Optional[RunSet], rs20: Optional[RunSet], attr: str) -> Optional[float]:
    if not (rs1 and rs20 and rs1.ok and rs20.ok):
        return None
    return (rs20.median(attr) - rs1.median(attr)) / (READS - 1)


def framing(chunk_size: str) -> str:
    if chunk_size == "event":
        return "one HTTP chunk per SSE event, as hosted APIs flush (`--chunk-size event`)"
    return f"HTTP chunks of {chunk_size} bytes (`--chunk-size {chunk_size}`)"


def report(
    sets: Dict[str, Dict[str, RunSet]],
    variants: List[RunSet],
    scenario_list: List[Scenario],
    meta: Dict[str, str],
    runs: int,
) -> str:
    out: List[str] = []
    add = out.append
    add("# Talaria vs Hermes Agent: the same work, side by side")
    add("")
    add(f"Measured {meta['date']} by `{meta['command']}` "
        f"({runs} measured runs per row after one warm-up run; medians, with min–max in brackets).")
    add("Ratios (Hermes / Talaria, of the medians) are the claim; absolute times depend on the machine.")
    add("How each figure is taken and how Hermes is configured: `benches/hermes/README.md`.")
    add("")
    add(f"- Machine: {meta['cpu']}, {meta['cores']} cores, {meta['memory']} memory; {meta['os']}")
    add(f"- Load average when the run started / ended: {meta['load_start']} / {meta['load_end']} "
        "(a shared machine: wall times carry its noise, CPU time much less)")
    add(f"- Talaria: {meta['talaria_version']} (commit {meta['commit']}), {meta['talaria_plugins']}")
    add(f"- Hermes Agent: {meta['hermes_version']} (PyPI `hermes-agent=={HERMES_VERSION}`), {meta['python']}")
    add(f"- Streamed replies: the scripted server sends {framing(meta['chunk_size'])}; "
        "connections are kept alive between requests")
    add(f"- Tools offered (except where noted): the `file` and `terminal` toolsets on both = "
        "`read_file`, `write_file`, `patch`, `search_files`, `terminal`, `process`")
    add("")
    add("| scenario | figure | Talaria | Hermes | Hermes / Talaria | target |")
    add("|---|---|---|---|---|---|")
    targets = {"cpu": CPU_TARGET, "rss_kib": RSS_TARGET}
    for sc in scenario_list:
        if sc.key.startswith("first"):
            continue
        t, h = sets.get(sc.key, {}).get("talaria"), sets.get(sc.key, {}).get("hermes")
        attrs = ["wall", "cpu", "rss_kib"] + (["bytes_sent"] if sc.steps else [])
        for attr in attrs:
            name, fmt = FIGURES[attr]
            r = ratio(t, h, attr)
            target = targets.get(attr)
            add(f"| {sc.title} | {name} | {cell(t, attr, fmt)} | {cell(h, attr, fmt)} | {fmt_ratio(r)} | {verdict(r, target)} |")
        if sc.key == "read20":
            r1, r20 = sets.get("read1", {}), sets.get("read20", {})
            for attr in ("wall", "cpu", "bytes_sent"):
                name, fmt = FIGURES[attr]
                tv = per_turn(r1.get("talaria"), r20.get("talaria"), attr)
                hv = per_turn(r1.get("hermes"), r20.get("hermes"), attr)
                r = hv / tv if (tv and hv is not None and tv > 0) else None
                target = CPU_TARGET if attr == "cpu" else None
                add(f"| per extra turn ({READS} reads − 1 read) / {READS - 1} | {name} | "
                    f"{fmt(tv) if tv is not None else '—'} | {fmt(hv) if hv is not None else '—'} | "
                    f"{fmt_ratio(r)} | {verdict(r, target)} |")
    for sc in scenario_list:
        if not sc.key.startswith("first"):
            continue
        t, h = sets.get(sc.key, {}).get("talaria"), sets.get(sc.key, {}).get("hermes")
        name, fmt = FIGURES["first_bytes"]
        r = ratio(t, h, "first_bytes")
        target = FIRST_REQUEST_TARGET if sc.key == "first" else None
        add(f"| {sc.title} | {name} | {cell(t, 'first_bytes', fmt)} | {cell(h, 'first_bytes', fmt)} | "
            f"{fmt_ratio(r)} | {verdict(r, target)} |")
        if sc.variants:
            for v in variants:
                r = ratio(v, h, "first_bytes")
                add(f"| {sc.title}: {v.agent.label} | {name} | {cell(v, 'first_bytes', fmt)} | "
                    f"{cell(h, 'first_bytes', fmt)} | {fmt_ratio(r)} | {verdict(r, target)} |")
    breakdown: List[str] = []
    for sc in scenario_list:
        if not sc.key.startswith("first"):
            continue
        rows = [sets.get(sc.key, {}).get("talaria"), sets.get(sc.key, {}).get("hermes")]
        if sc.variants:
            rows[1:1] = variants
        for rs in rows:
            if rs is None or not rs.ok:
                continue
            s = rs.samples[len(rs.samples) // 2]
            breakdown.append(f"| {sc.title}: {rs.agent.label} | {s.first_tool_count} | {fmt_bytes(s.first_tools)} | "
                             f"{fmt_bytes(s.first_system)} | {fmt_bytes(s.first_bytes)} |")
    if breakdown:
        add("")
        add("What the first requests hold (one measured run; tool schemas re-serialised as compact JSON):")
        add("")
        add("| request | tools | tool schemas | system prompt | whole request |")
        add("|---|---|---|---|---|")
        out.extend(breakdown)
    add("")
    add("First run in a fresh home (the warm-up run, one sample each; Hermes sets up its home on this run):")
    add("")
    add("| scenario | Talaria wall | Talaria CPU | Hermes wall | Hermes CPU | Hermes / Talaria (CPU) |")
    add("|---|---|---|---|---|---|")
    for sc in scenario_list:
        t, h = sets.get(sc.key, {}).get("talaria"), sets.get(sc.key, {}).get("hermes")
        if not (t and h and t.cold and h.cold):
            continue
        r = h.cold.cpu / t.cold.cpu if t.cold.cpu else None
        add(f"| {sc.title} | {fmt_ms(t.cold.wall)} | {fmt_ms(t.cold.cpu)} | {fmt_ms(h.cold.wall)} | "
            f"{fmt_ms(h.cold.cpu)} | {fmt_ratio(r)} |")
    notes = []
    for group in sets.values():
        for rs in group.values():
            if rs.leftovers:
                notes.append(f"- {rs.agent.label} / {rs.scenario.key}: {rs.leftovers} run(s) left processes "
                             "behind in their process group (killed; their CPU is not counted).")
    for rs in [rs for g in sets.values() for rs in g.values()] + variants:
        if rs.skipped:
            notes.append(f"- {rs.agent.label} / {rs.scenario.key}: skipped, {rs.skipped}")
        elif rs.error:
            notes.append(f"- {rs.agent.label} / {rs.scenario.key}: failed, {rs.error} "
                         f"(commands and output in runs/{rs.tag}/ of the bench directory)")
    if notes:
        add("")
        add("Notes:")
        add("")
        out.extend(notes)
    add("")
    return "\n".join(out)


# ------------------------------------------------------------- environment


def machine() -> Dict[str, str]:
    cpu = platform.processor() or "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory = "unknown"
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                memory = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
                break
    except OSError:
        pass
    system = f"{platform.system()} {platform.release()}"
    try:
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                system = f"{line.split('=', 1)[1].strip(chr(34))}, {system}"
    except OSError:
        pass
    return {"cpu": cpu, "cores": str(os.cpu_count()), "memory": memory, "os": system}


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def first_line(argv: List[str], env: Optional[Dict[str, str]] = None) -> str:
    try:
        out = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
        lines = (out.stdout or out.stderr).strip().splitlines()
        return lines[0] if lines else "unknown"
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"


def ensure_hermes(venv: Path) -> None:
    """Installs hermes-agent==HERMES_VERSION from PyPI into `venv` unless it is there already."""
    python = venv / "bin" / "python"
    if (venv / "bin" / "hermes").exists() and python.exists():
        have = first_line([str(python), "-c",
                           "import importlib.metadata as m; print(m.version('hermes-agent'))"])
        if have == HERMES_VERSION:
            log(f"hermes-agent {HERMES_VERSION} already in {venv}")
            return
    if not python.exists():
        run_checked([sys.executable, "-m", "venv", str(venv)])
    run_checked([str(python), "-m", "pip", "install", "--disable-pip-version-check", "--quiet",
                 f"hermes-agent=={HERMES_VERSION}"])


def build_spawner(bench_dir: Path) -> Path:
    """Compiles benches/hermes/spawn.rs (standard library only) unless the binary is newer than it."""
    source = ROOT / "benches" / "hermes" / "spawn.rs"
    binary = bench_dir / "bench-spawn"
    if not binary.exists() or binary.stat().st_mtime < source.stat().st_mtime:
        run_checked(["rustc", "--edition", "2021", "-O", source, "-o", binary], cwd=ROOT)
    return binary


def cargo_target_dir() -> Path:
    out = subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--no-deps", "--locked"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    )
    return Path(json.loads(out.stdout)["target_directory"])


def installed_plugins(talaria_bin: Path) -> str:
    """The plugins the binary finds next to itself (where it looks for the distribution's), and
    whether they were compiled ahead of time."""
    exe_dir = talaria_bin.parent
    names, compiled = [], False
    for directory in (exe_dir / "plugins", exe_dir / "../share/talaria/plugins", exe_dir / "../plugins/dist"):
        if directory.is_dir():
            names += sorted(p.name for p in directory.iterdir() if (p / "plugin.toml").is_file())
            compiled |= (directory / ".compiled").is_dir()
    how = "compiled ahead of time" if compiled else "compiled on the warm-up run"
    return f"with the plugins {', '.join(names) or '(none)'} next to it ({how})"


def build(bench_dir: Path) -> tuple:
    """Release builds of Talaria (as the default distribution) and the scripted server."""
    target = cargo_target_dir()
    run_checked(["cargo", "build", "--release", "--locked", "-p", "talaria", "--bin", "talaria"], cwd=ROOT)
    dist = bench_dir / "dist"
    env = dict(os.environ, TALARIA_HOME=str(bench_dir / "build-home"))
    run_checked([target / "release" / "talaria", "dist", "build", "distributions/default.toml", "--out", dist],
                cwd=ROOT, env=env)
    run_checked(["cargo", "build", "--release", "--locked", "-p", "talaria-testkit",
                 "--bin", "talaria-scripted-server"], cwd=ROOT)
    return dist / "talaria", target / "release" / "talaria-scripted-server"


def main() -> int:
    all_scenarios = scenarios()
    parser = argparse.ArgumentParser(
        description="Talaria vs Hermes Agent on the same scripted work (see benches/hermes/README.md).")
    parser.add_argument("--runs", type=int, default=5, help="measured runs per row (default 5)")
    parser.add_argument("--scenarios", default=",".join(s.key for s in all_scenarios),
                        help="comma-separated subset of: " + ", ".join(s.key for s in all_scenarios))
    parser.add_argument("--bench-dir", type=Path, default=ROOT / "target" / "bench",
                        help="venv, distribution, homes and recordings (default target/bench)")
    parser.add_argument("--skip-build", action="store_true",
                        help="use what a previous run built in --bench-dir and the cargo target dir")
    parser.add_argument("--talaria", type=Path,
                        help="use this talaria binary (e.g. DIST/talaria of a built distribution) instead of building")
    parser.add_argument("--scripted-server", type=Path,
                        help="use this talaria-scripted-server binary instead of building")
    parser.add_argument("--talaria-config", action="append", default=[], metavar="KEY=VALUE",
                        help="a config.yaml setting (dotted key, JSON or text value) for every Talaria run")
    parser.add_argument("--talaria-variant", action="append", metavar="LABEL=SPEC",
                        help="an extra Talaria row for the first-request figure; SPEC holds key.path=value "
                             "settings and --flags (default: " + "; ".join(DEFAULT_VARIANTS) + ")")
    parser.add_argument("--no-variants", action="store_true", help="no extra Talaria rows")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per run (default 600)")
    parser.add_argument("--chunk-size", default="event",
                        help="how the scripted server cuts a streamed reply into HTTP chunks: `event` "
                             "(default, one per SSE event, as hosted APIs flush) or a number of bytes "
                             "(11 is the test suite's stress framing)")
    parser.add_argument("--results", type=Path, default=ROOT / "benches" / "hermes" / "RESULTS.md",
                        help="where to write the report (default benches/hermes/RESULTS.md)")
    parser.add_argument("--no-results", action="store_true", help="print the report only")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    wanted = [k.strip() for k in args.scenarios.split(",") if k.strip()]
    unknown = [k for k in wanted if k not in {s.key for s in all_scenarios}]
    if unknown:
        parser.error(f"unknown scenarios: {', '.join(unknown)}")
    chosen = [s for s in all_scenarios if s.key in wanted]

    bench_dir = args.bench_dir.resolve()
    bench_dir.mkdir(parents=True, exist_ok=True)
    venv = bench_dir / "hermes-venv"
    ensure_hermes(venv)
    if args.talaria and args.scripted_server:
        talaria_bin, server_bin = args.talaria, args.scripted_server
    elif args.skip_build:
        talaria_bin = args.talaria or bench_dir / "dist" / "talaria"
        server_bin = args.scripted_server or cargo_target_dir() / "release" / "talaria-scripted-server"
    else:
        built_talaria, built_server = build(bench_dir)
        talaria_bin = args.talaria or built_talaria
        server_bin = args.scripted_server or built_server
    talaria_bin, server_bin = talaria_bin.resolve(), server_bin.resolve()
    spawner = build_spawner(bench_dir)
    for path in (talaria_bin, server_bin):
        if not path.exists():
            raise SystemExit(f"{path} does not exist (build it, or drop --skip-build)")

    base_settings = Settings.parse(" ".join(shlex.quote(s) for s in args.talaria_config))
    specs = [] if args.no_variants else (args.talaria_variant or DEFAULT_VARIANTS)
    variant_agents = []
    for spec in specs:
        label, _, rest = spec.partition("=")
        if not label or not rest:
            parser.error(f"--talaria-variant '{spec}': expected LABEL=SPEC")
        settings = base_settings.merged(Settings.parse(rest))
        variant_agents.append(Talaria(talaria_bin, settings, f"Talaria ({label})", variant=True))
    talaria = Talaria(talaria_bin, base_settings)
    hermes = Hermes(venv)

    env = base_env(bench_dir)
    meta = machine()
    meta["chunk_size"] = args.chunk_size
    meta.update({
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "command": " ".join(["benches/hermes/compare-hermes.sh"] + [shlex.quote(a) for a in sys.argv[1:]]),
        "load_start": load(),
        "talaria_version": first_line([str(talaria_bin), "--version"], env),
        "talaria_plugins": installed_plugins(talaria_bin),
        "commit": first_line(["git", "-C", str(ROOT), "describe", "--always", "--dirty"]),
        "python": "Python " + first_line([str(venv / "bin" / "python"), "-c",
                                          "import platform; print(platform.python_version())"]),
    })
    # The version line only; `hermes --version` goes on to check for updates.
    hermes_env = dict(env, **hermes.env(bench_dir / "version-home" / ".hermes"))
    meta["hermes_version"] = first_line([str(hermes.binary), "--version"], hermes_env)
    log(f"talaria: {talaria_bin} ({meta['talaria_version']}); hermes: {meta['hermes_version']}")

    runs_dir = bench_dir / "runs"
    workroot = Path(tempfile.mkdtemp(prefix="talaria-bench-work-"))
    sets: Dict[str, Dict[str, RunSet]] = {}
    variants: List[RunSet] = []
    try:
        for sc in chosen:
            log(f"scenario {sc.key}: {sc.title}")
            for agent in (talaria, hermes):
                sets.setdefault(sc.key, {})[agent.name] = run_set(
                    spawner, agent, sc, args.runs, runs_dir, workroot, server_bin, args.timeout,
                    args.chunk_size, f"{sc.key}-{agent.name}")
            if sc.variants:
                for i, agent in enumerate(variant_agents):
                    variants.append(run_set(
                        spawner, agent, sc, args.runs, runs_dir, workroot, server_bin, args.timeout,
                        args.chunk_size, f"{sc.key}-talaria-variant{i + 1}"))
    finally:
        shutil.rmtree(workroot, ignore_errors=True)
    meta["load_end"] = load()

    text = report(sets, variants, chosen, meta, args.runs)
    print(text)
    if not args.no_results:
        args.results.write_text(text)
        log(f"wrote {args.results}")
    failed = [rs for g in sets.values() for rs in g.values() if rs.error] + [v for v in variants if v.error]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
