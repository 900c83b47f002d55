// Drives `talaria acp` with the official TypeScript SDK's client side
// (@agentclientprotocol/sdk, installed by scripts/install-acp-peers) and
// prints what happened as one JSON object on stdout, for tests/all/acp.rs.
//
// Usage: node acp_client.mjs SCENARIO
// Environment: ACP_SDK (the package directory), TALARIA_BIN, ACP_WORKDIR,
// ACP_AGENT_ARGS (JSON list of extra `talaria acp` flags), ACP_SESSION (for
// "load"), plus whatever `talaria` itself needs (TALARIA_HOME, the key).
//
// Scenarios:
//   prompt      initialize, session/new, one prompt
//   permission  a prompt whose tool call asks for permission (answered "allow once")
//   cancel      a prompt cancelled while its tool runs
//   load        session/load of ACP_SESSION, then session/list
//   mcp         session/new with the MCP servers in ACP_MCP (JSON), one prompt
//   editor      one prompt
//   clarify     one prompt whose `clarify` call asks the user
// When ACP_BUFFERS is set (a JSON object path -> text), the client offers
// fs/* (those buffers, in memory) and terminal/* (real child processes);
// "cancel" then cancels once the command's terminal exists. When ACP_ELICIT
// is set (JSON: the form content to accept with, or "hang" to never answer,
// and "cancel" then cancels once the question is asked), the client offers
// form elicitation (`elicitation/create`).
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Readable, Transform, Writable } from "node:stream";
import { pathToFileURL } from "node:url";

const sdkDir = process.env.ACP_SDK;
const manifest = JSON.parse(readFileSync(join(sdkDir, "package.json"), "utf8"));
const acp = await import(pathToFileURL(join(sdkDir, manifest.exports["."].import)).href);

const scenario = process.argv[2];
const cwd = process.env.ACP_WORKDIR;
const extra = JSON.parse(process.env.ACP_AGENT_ARGS || "[]");

const agent = spawn(process.env.TALARIA_BIN, ["acp", ...extra], {
  cwd,
  stdio: ["pipe", "pipe", "pipe"],
});
let stderr = "";
agent.stderr.on("data", (chunk) => {
  stderr += chunk;
});

const result = { scenario, updates: [], permissions: [], editor: [], elicitations: [] };
let onUpdate = () => {};
let onTerminal = () => {};
let onElicit = () => {};
const offersEditor = process.env.ACP_BUFFERS !== undefined;
const elicit = process.env.ACP_ELICIT === undefined ? undefined : JSON.parse(process.env.ACP_ELICIT);

// The "editor" scenario's buffers and terminals.
const buffers = JSON.parse(process.env.ACP_BUFFERS || "{}");
const terminals = new Map();
let nextTerminal = 0;

function startTerminal({ command, args, cwd: dir, env, outputByteLimit }) {
  const id = `term-${++nextTerminal}`;
  const child = spawn(command, args || [], {
    cwd: dir || cwd,
    env: { ...process.env, ...Object.fromEntries((env || []).map((v) => [v.name, v.value])) },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const term = { output: "", truncated: false, exit: null };
  const keep = (chunk) => {
    term.output += chunk;
    const limit = outputByteLimit ?? Infinity;
    if (Buffer.byteLength(term.output) > limit) {
      term.output = term.output.slice(-limit);
      term.truncated = true;
    }
  };
  child.stdout.on("data", keep);
  child.stderr.on("data", keep);
  term.exited = new Promise((resolve) => {
    child.on("exit", (code, signal) => {
      term.exit = { exitCode: code, signal };
      resolve(term.exit);
    });
  });
  term.child = child;
  terminals.set(id, term);
  return id;
}

const client = acp
  .client()
  .onRequest("fs/read_text_file", ({ params }) => {
    result.editor.push({ method: "fs/read_text_file", path: params.path });
    if (!(params.path in buffers)) throw new Error(`no such file: ${params.path}`);
    return { content: buffers[params.path] };
  })
  .onRequest("fs/write_text_file", ({ params }) => {
    result.editor.push({ method: "fs/write_text_file", path: params.path, content: params.content });
    buffers[params.path] = params.content;
    return {};
  })
  .onRequest("terminal/create", ({ params }) => {
    result.editor.push({ method: "terminal/create", command: params.command, args: params.args, cwd: params.cwd });
    const terminalId = startTerminal(params);
    onTerminal();
    return { terminalId };
  })
  .onRequest("terminal/wait_for_exit", async ({ params }) => {
    result.editor.push({ method: "terminal/wait_for_exit" });
    return await terminals.get(params.terminalId).exited;
  })
  .onRequest("terminal/output", ({ params }) => {
    result.editor.push({ method: "terminal/output" });
    const term = terminals.get(params.terminalId);
    return { output: term.output, truncated: term.truncated, exitStatus: term.exit };
  })
  .onRequest("terminal/kill", ({ params }) => {
    result.editor.push({ method: "terminal/kill" });
    terminals.get(params.terminalId).child.kill("SIGKILL");
    return {};
  })
  .onRequest("terminal/release", ({ params }) => {
    result.editor.push({ method: "terminal/release" });
    terminals.get(params.terminalId)?.child.kill("SIGKILL");
    terminals.delete(params.terminalId);
    return {};
  })
  .onRequest("elicitation/create", ({ params }) => {
    result.elicitations.push(params);
    onElicit();
    if (elicit === "hang") return new Promise(() => {});
    return { action: "accept", content: elicit };
  })
  .onNotification("session/update", ({ params }) => {
    result.updates.push(params.update);
    onUpdate(params.update);
  })
  .onRequest("session/request_permission", ({ params }) => {
    result.permissions.push(params);
    const once = params.options.find((option) => option.kind === "allow_once");
    return once
      ? { outcome: { outcome: "selected", optionId: once.optionId } }
      : { outcome: { outcome: "cancelled" } };
  });

// What the agent wrote, kept to show when an expected update never arrived;
// and what the SDK itself complained about (it logs dropped messages).
const wire = [];
const recorder = new Transform({
  transform(chunk, _encoding, done) {
    wire.push(chunk);
    done(null, chunk);
  },
});
agent.stdout.pipe(recorder);
const sdkErrors = [];
const consoleError = console.error;
console.error = (...args) => {
  sdkErrors.push(args.map((a) => (typeof a === "string" ? a : JSON.stringify(a))).join(" "));
  consoleError(...args);
};
// The SDK runs each incoming notification's handler as a chain of promises
// of its own, so a response can resolve before the handlers of the updates
// sent ahead of it have run, and the connection drops handlers still running
// when it closes. Those chains need no I/O: one turn of the event loop lets
// every update received so far land in `result.updates`.
const settled = () => new Promise((resolve) => setImmediate(resolve));

const stream = acp.ndJsonStream(Writable.toWeb(agent.stdin), Readable.toWeb(recorder));

try {
  await client.connectWith(stream, async (cx) => {
    result.initialize = await cx.request("initialize", {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: {
        ...(offersEditor ? { fs: { readTextFile: true, writeTextFile: true }, terminal: true } : {}),
        ...(elicit !== undefined ? { elicitation: { form: {} } } : {}),
      },
      clientInfo: { name: "talaria-acp-test", version: "0" },
    });
    if (scenario === "load") {
      result.load = await cx.request("session/load", {
        sessionId: process.env.ACP_SESSION,
        cwd,
        mcpServers: [],
      });
      result.list = await cx.request("session/list", { cwd });
      await settled();
      return;
    }
    const mcpServers = JSON.parse(process.env.ACP_MCP || "[]");
    const session = await cx.request("session/new", { cwd, mcpServers });
    result.sessionId = session.sessionId;
    const prompt = async (text) => {
      const response = await cx.request("session/prompt", {
        sessionId: session.sessionId,
        prompt: [{ type: "text", text }],
      });
      await settled();
      return response;
    };
    if (scenario === "cancel") {
      // Cancel once the tool call is under way.
      const started = new Promise((resolve) => {
        if (elicit === "hang") onElicit = resolve;
        else if (offersEditor) onTerminal = resolve;
        else
          onUpdate = (update) => {
            if (update.sessionUpdate === "tool_call") resolve();
          };
      });
      const turn = prompt("wait a while");
      await started;
      result.cancelledAt = Date.now();
      await cx.notify("session/cancel", { sessionId: session.sessionId });
      result.response = await turn;
      result.cancelMs = Date.now() - result.cancelledAt;
      await settled();
      return;
    }
    result.response = await prompt(
      scenario === "permission"
        ? "clean up"
        : scenario === "mcp"
          ? "echo it"
          : scenario === "clarify"
            ? "ask me"
            : "hello",
    );
    if (scenario === "prompt") {
      const before = result.updates.length;
      result.command = await prompt("/usage");
      result.commandUpdates = result.updates.slice(before);
      if (!result.commandUpdates.some((u) => u.sessionUpdate === "agent_message_chunk")) {
        result.wire = Buffer.concat(wire).toString().slice(-20000);
      }
    }
    result.buffers = buffers;
  });
} catch (error) {
  result.error = String(error?.stack || error);
}
agent.stdin.end();
const code = await new Promise((resolve) => {
  if (agent.exitCode !== null) resolve(agent.exitCode);
  else agent.on("exit", (exitCode) => resolve(exitCode));
});
result.exitCode = code;
result.stderr = stderr;
result.sdkErrors = sdkErrors;
process.stdout.write(JSON.stringify(result) + "\n");
