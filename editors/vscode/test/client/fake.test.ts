// RelayClient against scripted stand-ins for the helper (node -e), for what the real helper cannot
// be made to do on cue: bursts of output, exits at chosen moments.
import assert from "node:assert/strict";
import { test } from "node:test";
import { RelayClient, type Event } from "../../src/client";

/** A fake helper: node running body, with ready(), line(obj) and the number of events n. */
function fake(body: string): { path: string; args: string[] } {
  const prelude = `
    const line = (o) => JSON.stringify({ timestamp: "2026-01-01T00:00:00Z", ...o }) + "\\n";
    const ready = () => line({ event: "ready", protocol: 2, pid: process.pid });
  `;
  return { path: process.execPath, args: ["-e", prelude + body] };
}

test("events written with ready reach listeners that subscribe when start() resolves, in order", async () => {
  const n = 20_000;
  const client = await RelayClient.start({
    ...fake(`
      let out = ready();
      for (let i = 0; i < ${n}; i++) out += line({ event: "stream", run_id: "r", session_id: "s", payload: { i } });
      process.stdout.write(out, () => process.exit(7));
      process.stdin.resume();
    `),
    restart: false,
  });
  const got: number[] = [];
  client.onEvent((e: Event) => {
    if (e.event === "stream") got.push(e.payload.i as number);
  });
  // The fake never answers; its exit fails the request, and only after every event was delivered.
  await assert.rejects(client.status(), { code: "helper_exited", message: /with status 7; restart is off/ });
  assert.equal(got.length, n);
  assert.ok(got.every((v, i) => v === i), "events out of order");
  client.dispose();
});

test("a helper that dies right after ready is restarted, each restart reported", async () => {
  const client = await RelayClient.start({
    ...fake(`process.stdout.write(ready(), () => setTimeout(() => process.exit(3), 20)); process.stdin.resume();`),
  });
  const infos = await new Promise<{ code: number | null; restarts: number }[]>((resolve) => {
    const seen: { code: number | null; restarts: number }[] = [];
    client.onRestart((info) => {
      seen.push(info);
      if (seen.length === 2) resolve(seen);
    });
  });
  assert.deepEqual(
    infos.map((i) => [i.code, i.restarts]),
    [
      [3, 1],
      [3, 2],
    ],
  );
  await client.shutdown();
});

test("shutdown() resolves once the helper exited and it is not restarted", async () => {
  const client = await RelayClient.start({
    // Exits when its stdin closes, as the real helper does after a shutdown.
    ...fake(`process.stdout.write(ready()); process.stdin.on("end", () => process.exit(0)); process.stdin.resume();`),
  });
  let restarts = 0;
  client.onRestart(() => restarts++);
  await client.shutdown();
  await assert.rejects(client.status(), { code: "disposed", message: /shutting down; status was not sent/ });
  assert.equal(restarts, 0);
});

test("the backend token reaches the helper through descriptor 3, not its environment", async () => {
  const client = await RelayClient.start({
    ...fake(`
      const fs = require("node:fs");
      const fd = Number(process.env.CLAUDE_RELAY_BACKEND_TOKEN_FD);
      const token = fs.readFileSync(fd, "utf8").trim();
      const inEnv = Object.values(process.env).some((v) => v && v.includes("sekret-token"));
      process.stdout.write(ready() + line({ event: "stream", run_id: "r", session_id: "s", payload: { fd, token, inEnv } }));
      process.stdin.resume();
    `),
    token: "sekret-token-0123456789",
    restart: false,
  });
  const got = await new Promise<Record<string, unknown>>((resolve) => {
    client.onEvent((e: Event) => {
      if (e.event === "stream") resolve(e.payload as Record<string, unknown>);
    });
  });
  assert.deepEqual(got, { fd: 3, token: "sekret-token-0123456789", inEnv: false });
  client.dispose();
});
