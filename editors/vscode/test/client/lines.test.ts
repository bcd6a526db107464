import assert from "node:assert/strict";
import { test } from "node:test";
import { LineSplitter } from "../../src/client/lines";
import { Requests, RelayError } from "../../src/client/requests";
import type { Event } from "../../src/client";

test("LineSplitter joins pieces, splits on newline, keeps UTF-8 across chunks", () => {
  const s = new LineSplitter();
  assert.deepEqual(s.push("{\"a\":"), []);
  assert.deepEqual(s.push("1}\n{\"b\""), ['{"a":1}']);
  const euro = Buffer.from(":\"€\"}\r\n\n", "utf8");
  assert.deepEqual(s.push(euro.subarray(0, 3)), []); // cuts the euro sign in half
  assert.deepEqual(s.push(euro.subarray(3)), ['{"b":"€"}', ""]);
  assert.deepEqual(s.push("tail"), []);
  assert.deepEqual(s.end(), ["tail"]);
  assert.deepEqual(s.end(), []);
});

test("LineSplitter handles a line of many megabytes", () => {
  const s = new LineSplitter();
  const piece = "x".repeat(64 * 1024);
  for (let i = 0; i < 64; i++) {
    assert.deepEqual(s.push(piece), []);
  }
  const [line] = s.push("\n");
  assert.equal(line?.length, 64 * piece.length);
});

const ev = (e: Record<string, unknown>): Event => ({ timestamp: "2026-01-01T00:00:00Z", ...e }) as Event;

test("Requests: an error with the request_id rejects; other ids and events are left alone", async () => {
  const r = new Requests();
  const id = r.newId();
  const p = r.expect(id, (e) => (e.event === "status" ? e : undefined));
  assert.equal(r.handle(ev({ event: "status", request_id: "someone-else", state: "idle", forwarder: {} })), false);
  assert.equal(r.handle(ev({ event: "stream", request_id: id, payload: {} })), false); // not its answer
  r.handle(ev({ event: "error", request_id: id, code: "bad_value", message: "no good" }));
  await assert.rejects(p, (err: unknown) => err instanceof RelayError && err.code === "bad_value" && err.message === "no good");
});

test("Requests: a barrier's answer accepts a command and is hidden; an earlier error rejects it", async () => {
  const r = new Requests();
  const ok = r.newId();
  const accepted = r.expectAccepted(ok);
  const answer = ev({ event: "status", request_id: r.barrierId(ok), state: "idle", forwarder: {} });
  assert.equal(r.isBarrierAnswer(answer), true);
  assert.equal(r.handle(answer), true);
  await accepted;
  assert.equal(r.isBarrierAnswer(ev({ event: "status", request_id: "r1", state: "idle", forwarder: {} })), false);
  const bad = r.newId();
  const refused = r.expectAccepted(bad);
  r.handle(ev({ event: "error", request_id: bad, code: "unknown_run", message: "no live run" }));
  r.handle(ev({ event: "status", request_id: r.barrierId(bad), state: "idle", forwarder: {} }));
  await assert.rejects(refused, { code: "unknown_run" });
});

test("Requests.failAll rejects everything pending", async () => {
  const r = new Requests();
  const a = r.expect(r.newId(), () => undefined);
  const b = r.expectAccepted(r.newId());
  r.failAll(new RelayError("helper gone", "helper_exited"));
  await assert.rejects(a, { message: "helper gone" });
  await assert.rejects(b, { message: "helper gone" });
});
