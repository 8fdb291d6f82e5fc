// The TypeScript client against a live `rearview serve` that this test starts (SQLite in a temporary directory, the
// hashing embedder): the generated types are those of the server's /openapi.json, and every route answers.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { promisify } from "node:util";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createRearview, RearviewError, type Memory } from "../src/index.js";

const PACKAGE = fileURLToPath(new URL("../../", import.meta.url));
const REARVIEW = process.env.REARVIEW_BIN ?? join(PACKAGE, "../../.venv/bin/rearview");
const NS = "acme:u-42";
// Bound on waiting for the server to come up (interpreter, imports, SQLite); not a timing assertion.
const STARTUP_MS = 60_000;

let server: ChildProcess;
let dataDir: string;
let baseUrl: string;

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      probe.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}

before(async () => {
  dataDir = await mkdtemp(join(tmpdir(), "rearview-ts-"));
  const port = await freePort();
  baseUrl = `http://127.0.0.1:${port}`;
  const env = { ...process.env, REARVIEW_DATA_DIR: dataDir, REARVIEW_EMBEDDER: "hashing", REARVIEW_HINDSIGHT__WORKER: "false" };
  server = spawn(REARVIEW, ["serve", "--port", String(port)], { env, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  server.stdout?.on("data", (chunk) => (output += chunk));
  server.stderr?.on("data", (chunk) => (output += chunk));
  const deadline = Date.now() + STARTUP_MS;
  for (;;) {
    try {
      if ((await fetch(`${baseUrl}/v1/health`)).ok) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline || server.exitCode !== null) throw new Error(`rearview serve did not start:\n${output}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
});

after(async () => {
  server?.kill("SIGTERM");
  await new Promise((resolve) => server?.once("exit", resolve));
  await rm(dataDir, { recursive: true, force: true });
});

test("the committed types are generated from this server's /openapi.json", async () => {
  const generator = new URL("../../scripts/generate.mjs", import.meta.url).href;
  const { generate } = (await import(generator)) as { generate: (source: string) => Promise<string> };
  const committed = await readFile(join(PACKAGE, "src/schema.ts"), "utf-8");
  assert.equal(await generate(baseUrl), committed, "src/schema.ts is stale: run `npm run generate` against the server");
});

test("write, recall, list, edit, history, export, import, namespaces, erase", async () => {
  const rv = createRearview({ baseUrl });
  assert.equal((await rv.health()).status, "ok");
  const flight = await rv.write(NS, { content: "Booked the 9:40 flight to Lisbon with an aisle seat", tags: ["travel"] });
  assert.equal(flight.status, "stored");
  const fact = await rv.write(NS, { layer: "semantic", content: "The user prefers aisle seats", dimension: "seat" });

  const recalled = await rv.recall(NS, { query: "which seat did I book to Lisbon?", explain: true });
  assert.ok(recalled.results.some((hit) => hit.id === flight.id));
  assert.ok(recalled.trace && recalled.trace.stages.length > 3);

  const page = await rv.list(NS, { limit: 1 });
  assert.equal(page.items.length, 1);
  assert.ok(page.next_cursor);
  const all: Memory[] = [];
  for await (const item of rv.iterate(NS, { limit: 1 })) all.push(item);
  assert.deepEqual(new Set(all.map((m) => m.id)), new Set([flight.id, fact.id]));

  const edited = await rv.edit(NS, fact.id, { content: "The user prefers window seats" }, 1);
  assert.equal(edited.version, 2);
  await assert.rejects(rv.edit(NS, fact.id, { importance: 0.9 }, 1), (err: RearviewError) => err.status === 412);
  const history = await rv.history(NS, fact.id);
  assert.deepEqual(history.versions.map((v) => v.changed_by), ["write", "edit"]);

  const ndjson = await rv.exportNdjson(NS);
  assert.equal(ndjson.trim().split("\n").length, 2);
  const restored = await rv.import("acme:u-43", ndjson);
  assert.deepEqual([restored.restored, restored.skipped], [2, 0]);
  assert.equal((await rv.import("acme:u-43", ndjson)).skipped, 2);
  const names = (await rv.namespaces("acme")).namespaces.map((n) => n.namespace);
  assert.deepEqual(names.sort(), [NS, "acme:u-43"]);

  const receipt = await rv.erase("acme:u-43", true);
  assert.equal(receipt.namespaces["acme:u-43"]?.episodic, 1);
  await assert.rejects(rv.get("acme:u-43", flight.id), (err: RearviewError) => err.status === 404);

  const line = { id: "h-1", content: "Ana: the Alfama flat has a terrace", session_id: "chat-1" };
  assert.deepEqual((await rv.load("acme:u-44", [line])).ids, ["h-1"]);
  assert.equal((await rv.load("acme:u-44", [line])).skipped, 1);
  await assert.rejects(
    rv.load("acme:u-44", [{ content: "A fact", layer: "semantic" }]),
    (err: RearviewError) => err.status === 422 && err.field === "items.0.layer",
  );
  await rv.erase("acme:u-44", true);
});

test("working memory, brief, feedback, consolidate, stats, forget, keys", async () => {
  const rv = createRearview({ baseUrl });
  const ns = "acme:u-44";
  const written = await rv.write(ns, { content: "Signed the Lisbon venue contract for the March offsite", session_id: "s-1" });
  assert.deepEqual((await rv.putWorking(ns, "s-1", "goal", { value: { step: 2 }, ttl_seconds: 600 })).value, { step: 2 });
  assert.deepEqual((await rv.getWorking(ns, "s-1")).entries, { goal: { step: 2 } });
  assert.equal((await rv.clearWorking(ns, "s-1")).cleared, 1);
  assert.equal((await rv.endSession(ns, "s-1")).session_id, "s-1");
  assert.ok(Array.isArray((await rv.brief(ns, { task: "Plan the Lisbon offsite" })).items));
  assert.equal((await rv.feedback(ns, { memory_id: written.id, verdict: "useful" })).verdict, "useful");
  assert.equal((await rv.consolidate(ns)).namespace, ns);
  assert.equal((await rv.stats(ns)).counts.episodic, 1);
  assert.equal((await rv.forget(ns, { ids: [written.id] })).deleted?.episodic, 1);

  // An open server creates no key (a page of another site could): the first comes from the CLI, and closes the
  // server's open mode; from here on every call carries one.
  await assert.rejects(rv.createKey({ namespace: "acme", permissions: ["admin"] }), (err: RearviewError) => err.status === 403);
  const { stdout } = await promisify(execFile)(
    REARVIEW,
    ["keys", "create", "--namespace", "acme", "--permissions", "read,write,forget,admin", "--json"],
    { env: { ...process.env, REARVIEW_DATA_DIR: dataDir, REARVIEW_EMBEDDER: "hashing" } },
  );
  const admin = createRearview({ baseUrl, token: (JSON.parse(stdout) as { key: string }).key });
  const created = await admin.createKey({ namespace: ns, permissions: ["read"] });
  assert.ok(created.key.startsWith("rv_"));
  assert.ok((await admin.listKeys()).keys.some((k) => k.key_id === created.key_id));
  // Now that a key exists the server enforces keys: this one reads, and may not write.
  const reader = createRearview({ baseUrl, token: created.key });
  assert.equal((await reader.stats(ns)).namespace, ns);
  await assert.rejects(reader.write(ns, { content: "nope" }), (err: RearviewError) => err.status === 403);
  await assert.rejects(createRearview({ baseUrl }).stats(ns), (err: RearviewError) => err.status === 401);
  await assert.rejects(
    reader.list(ns, { limit: 501 }),
    (err: RearviewError) => err.status === 422 && err.field === "limit" && err.code === "invalid_input",
  );
  assert.equal((await admin.revokeKey(created.key_id)).status, "revoked");
  await assert.rejects(reader.stats(ns), (err: RearviewError) => err.status === 401);
});
