// Starts telegram-test-api (installed by scripts/install-gateway-peers), a
// Telegram Bot API emulator, on 127.0.0.1 and prints one JSON line on stdout:
// {"url": "http://127.0.0.1:PORT"}. It runs until its stdin closes (the test
// holding it dropped the pipe) or it is signalled.
//
// Usage: node telegram_emulator.mjs [PORT]   (no PORT: a free one)
// Environment: TELEGRAM_TEST_API, the package directory
// (target/peers/gateway/node_modules/telegram-test-api).
//
// The bot side is the Bot API at URL (`/bot<token>/getMe`, `getUpdates`,
// `sendMessage`, `editMessageText`; any token works). The user side is the
// emulator's own client API, JSON POSTs at URL:
//   /sendMessage        a user message: {botToken, from: {id, first_name,
//                       username, is_bot}, chat: {id, type, title?, first_name?},
//                       date, text} (the emulator adds message_id, update_id)
//   /sendCommand        the same with `entities` for a /command
//   /getUpdates         {token, chatId}: the bot's unread messages to that chat
//   /getUpdatesHistory  {token}: everything, users' and the bot's, in order
import { createServer } from "node:net";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const packageDir = process.env.TELEGRAM_TEST_API;
if (!packageDir) {
  console.error("telegram_emulator.mjs: set TELEGRAM_TEST_API to the telegram-test-api directory");
  process.exit(2);
}
const { default: TelegramServer } = await import(pathToFileURL(join(packageDir, "lib/index.js")).href);

/** A port nobody listens on now (the emulator takes 0 for its default, 9000). */
function freePort() {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });
}

const port = Number(process.argv[2]) || (await freePort());
const server = new TelegramServer({ port, host: "127.0.0.1", storeTimeout: 600 });
await server.start();
process.stdout.write(`${JSON.stringify({ url: server.config.apiURL })}\n`);

let stopping = false;
async function stop() {
  if (stopping) return;
  stopping = true;
  await server.stop();
  process.exit(0);
}
process.stdin.on("end", stop);
process.stdin.on("close", stop);
process.stdin.resume();
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
