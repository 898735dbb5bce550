// Unit tests of the plugin's own logic with a stand-in for OpenClaw's plugin API (the real
// OpenClaw runs it in memdir's tests/integrations/test_openclaw.py). Run: node --test test/

import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync, mkdirSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";

import plugin from "../index.js";
import { flushPlan, recallSection } from "../lib/prompts.js";
import { readPayload, searchPayload } from "../lib/results.js";

function register(config = {}) {
  const got = { tools: {}, hooks: {}, capability: null, cli: null, logs: [] };
  const api = {
    pluginConfig: config,
    config: {},
    logger: { warn: (m) => got.logs.push(m) },
    runtime: { agent: { resolveAgentWorkspaceDir: () => "/nowhere" } },
    registerMemoryCapability: (c) => (got.capability = c),
    registerTool: (factory, opts) => (got.tools[opts.names[0]] = factory({ workspaceDir: "/ws" })),
    on: (name, handler) => (got.hooks[name] = handler),
    registerCli: (registrar, opts) => (got.cli = opts),
  };
  plugin.register(api);
  return got;
}

test("it fills the memory slot: tools, prompt, flush, runtime, hooks, CLI", () => {
  assert.equal(plugin.kind, "memory");
  const got = register();
  assert.deepEqual(Object.keys(got.tools).sort(), ["memory_get", "memory_search"]);
  assert.deepEqual(Object.keys(got.hooks).sort(), ["agent_end", "before_prompt_build"]);
  assert.equal(typeof got.capability.runtime.getMemorySearchManager, "function");
  assert.equal(got.capability.flushPlanResolver, flushPlan);
  assert.equal(got.cli.descriptors[0].name, "memdir");
  assert.deepEqual(Object.keys(register({ autoRecall: false, autoCapture: false }).hooks), []);
});

test("without a service the tools answer at once that memory is unavailable, and why", async () => {
  const home = mkdtempSync(join(tmpdir(), "memdir-home-"));
  const got = register({ home });
  const started = Date.now();
  const result = await got.tools.memory_search.execute("1", { query: "port" });
  assert.ok(Date.now() - started < 1000);
  assert.equal(result.details.unavailable, true);
  assert.match(result.details.error, /not running .*memdir daemon start/);
  const read = await got.tools.memory_get.execute("2", { path: "MEMORY.md" });
  assert.equal(read.details.status, "error");
  const recalled = await got.hooks.before_prompt_build({ prompt: "which port?" }, {});
  assert.equal(recalled, undefined);
});

test("a service that does not answer is given up on within the time limit", async () => {
  const home = mkdtempSync(join(tmpdir(), "memdir-home-"));
  const stuck = createServer(() => {}); // accepts, never answers
  await new Promise((ok) => stuck.listen(0, "127.0.0.1", ok));
  mkdirSync(join(home, "service"));
  const state = { port: stuck.address().port, pid: process.pid, version: "x", started: "" };
  writeFileSync(join(home, "service", "service.json"), JSON.stringify(state));
  writeFileSync(join(home, "service", "token"), "t".repeat(43), { mode: 0o600 });
  const got = register({ home, timeoutMs: 300 });
  const started = Date.now();
  const result = await got.tools.memory_search.execute("1", { query: "port" });
  const took = Date.now() - started;
  stuck.close();
  stuck.closeAllConnections();
  assert.ok(took >= 250 && took < 1500, `took ${took} ms`);
  assert.match(result.details.error, /did not answer within 300 ms/);
});

test("results have the builtin memory's shapes", () => {
  const reply = {
    mode: "hybrid",
    results: [
      {
        path: "MEMORY.md",
        start_line: 4,
        end_line: 5,
        score: 0.7,
        snippet: "- Staging: port 5433",
        citation: "MEMORY.md#L4-L5",
        context: "Memory › Facts",
      },
    ],
  };
  const [hit] = searchPayload(reply, "auto").results;
  assert.deepEqual(Object.keys(hit).sort(), [
    "citation", "endLine", "path", "score", "snippet", "source", "startLine",
  ]);
  assert.equal(hit.source, "memory");
  assert.match(hit.snippet, /Source: MEMORY\.md#L4-L5$/);
  assert.equal(searchPayload(reply, "off").results[0].citation, undefined);
  assert.deepEqual(readPayload({ path: "x.md", text: "", exists: false }), {
    status: "not_found",
    text: "",
    path: "x.md",
  });
  const cut = readPayload({ path: "a.md", text: "t", from: 1, lines: 1, truncated: true, next_from: 2 });
  assert.equal(cut.nextFrom, 2);
});

test("the prompt section and the flush plan", () => {
  const lines = recallSection({ availableTools: new Set(["memory_search", "memory_get"]) });
  assert.equal(lines[0], "## Memory Recall");
  assert.deepEqual(recallSection({ availableTools: new Set() }), []);
  const plan = flushPlan({ nowMs: Date.UTC(2026, 10, 28, 12), contextWindowTokens: 200_000 });
  assert.match(plan.relativePath, /^memory\/2026-11-2[89]\.md$/);
  assert.equal(plan.reserveTokensFloor, 20_000);
  assert.equal(plan.softThresholdTokens, 4_000);
  assert.equal(plan.forceFlushTranscriptBytes, 2 * 1024 * 1024);
  assert.match(plan.prompt, /NO_REPLY/);
  const small = { agents: { defaults: { compaction: { memoryFlush: { forceFlushTranscriptBytes: "1kb" } } } } };
  assert.equal(flushPlan({ cfg: small }).forceFlushTranscriptBytes, 1000);
  const off = { agents: { defaults: { compaction: { memoryFlush: { enabled: false } } } } };
  assert.equal(flushPlan({ cfg: off }), null);
});

test("the model's translation of the question reaches memdir as a variant", async () => {
  const home = mkdtempSync(join(tmpdir(), "memdir-home-"));
  const bodies = [];
  const service = createServer((req, res) => {
    let raw = "";
    req.on("data", (part) => (raw += part));
    req.on("end", () => {
      bodies.push(JSON.parse(raw));
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify({ mode: "hybrid", results: [] }));
    });
  });
  await new Promise((ok) => service.listen(0, "127.0.0.1", ok));
  mkdirSync(join(home, "service"));
  const state = { port: service.address().port, pid: process.pid, version: "x", started: "" };
  writeFileSync(join(home, "service", "service.json"), JSON.stringify(state));
  writeFileSync(join(home, "service", "token"), "t".repeat(43), { mode: 0o600 });
  const got = register({ home });
  assert.ok(got.tools.memory_search.parameters.properties.variants);
  await got.tools.memory_search.execute("1", {
    query: "When does the points redesign launch?",
    variants: ["积分改版什么时候上线？"],
  });
  await got.tools.memory_search.execute("2", { query: "port" });
  service.close();
  service.closeAllConnections();
  assert.deepEqual(bodies[0].variants, ["积分改版什么时候上线？"]);
  assert.equal(bodies[1].variants, undefined); // none given: none sent
});
