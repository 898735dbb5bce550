// OpenClaw memory plugin backed by memdir (memdir's README, "OpenClaw: memdir as its memory").
//
// It fills OpenClaw's memory slot: the tools memory_search and memory_get, the recall section of
// the system prompt, the pre-compaction flush into today's daily log, a memory search manager for
// `openclaw doctor` / status, auto-recall and auto-capture (when the user allows the plugin
// conversation access), and `openclaw memdir search|status`. Every call goes to the one warm
// memdir of this user, its per-user service on 127.0.0.1 (`memdir daemon start`), and is bounded
// in time: with no service the tools answer at once that memory is unavailable and why, and a
// turn is never held up.

import { memdirHome } from "./lib/endpoint.js";
import { flushPlan, recallSection } from "./lib/prompts.js";
import {
  readPayload,
  searchPayload,
  toHit,
  toolResult,
  unavailablePayload,
} from "./lib/results.js";
import { MemdirError, callService } from "./lib/service.js";

const SEARCH_PARAMETERS = {
  type: "object",
  properties: {
    query: { type: "string", description: "A few keywords or a short question." },
    variants: {
      type: "array",
      items: { type: "string" },
      maxItems: 5,
      description:
        "The same question written otherwise, searched with it as one question: add it " +
        "translated into the other language (English or Chinese) when the notes may be in it.",
    },
    maxResults: { type: "integer", minimum: 1, maximum: 50, description: "Most snippets (6)." },
    minScore: { type: "number", minimum: 0, maximum: 1, description: "Drop lower scores." },
  },
  required: ["query"],
  additionalProperties: false,
};
const GET_PARAMETERS = {
  type: "object",
  properties: {
    path: { type: "string", description: "e.g. memory/2026-11-28.md or MEMORY.md" },
    from: { type: "integer", minimum: 1, description: "First line (1-based)." },
    lines: { type: "integer", minimum: 1, description: "How many lines." },
  },
  required: ["path"],
  additionalProperties: false,
};

export default {
  id: "memdir",
  name: "memdir",
  description: "Long-term memory as plain Markdown, searched by memdir's per-user service",
  kind: "memory",
  register(api) {
    const settings = api.pluginConfig ?? {};
    const home = memdirHome(settings.home);
    const timeoutMs = settings.timeoutMs ?? 4000;
    const currentConfig = () => api.runtime?.config?.current?.() ?? api.config ?? {};
    const workspaceOf = (workspaceDir, agentId) =>
      settings.workspace ||
      workspaceDir ||
      api.runtime.agent.resolveAgentWorkspaceDir(currentConfig(), agentId ?? "main");
    const where = (ctx, timeout = timeoutMs) => ({
      home,
      workspace: workspaceOf(ctx?.workspaceDir, ctx?.agentId),
      scope: sharedSession(ctx?.sessionKey) ? "shared" : "private",
      timeoutMs: timeout,
    });
    const citations = () => currentConfig().memory?.citations ?? "auto";

    api.registerMemoryCapability({
      deterministicRecallToolName: "memory_search",
      promptBuilder: recallSection,
      flushPlanResolver: flushPlan,
      runtime: {
        async getMemorySearchManager({ agentId }) {
          const at = where({ agentId });
          try {
            return { manager: await searchManager(at), debug: { backend: "builtin" } };
          } catch (err) {
            return { manager: null, error: `memdir: ${err.message}` };
          }
        },
        resolveMemoryBackendConfig: () => ({ backend: "builtin" }),
      },
    });

    api.registerTool(
      (ctx) => ({
        name: "memory_search",
        label: "Memory Search",
        description:
          "Search long-term memory (MEMORY.md, daily logs memory/YYYY-MM-DD.md, topic notes) " +
          "before answering about prior work, decisions, dates, people, preferences or todos. " +
          "Notes often mix Chinese and English: pass the question in the other language too, " +
          "in variants. Returns the best snippets with a citation path#Lstart-Lend; read more " +
          "with memory_get.",
        parameters: SEARCH_PARAMETERS,
        async execute(_id, params) {
          try {
            const reply = await callService(where(ctx), "/v1/tools/memory_search", {
              query: params.query,
              ...(Array.isArray(params.variants) && params.variants.length
                ? { variants: params.variants }
                : {}),
              ...(params.maxResults ? { max_results: params.maxResults } : {}),
              ...(params.minScore !== undefined ? { min_score: params.minScore } : {}),
            });
            return toolResult(searchPayload(reply, citations()));
          } catch (err) {
            if (err instanceof MemdirError) throw err; // the model asked for something wrong
            return toolResult(unavailablePayload(err));
          }
        },
      }),
      { names: ["memory_search"] },
    );

    api.registerTool(
      (ctx) => ({
        name: "memory_get",
        label: "Memory Get",
        description:
          "Read a memory file or some of its lines (from = first line, lines = how many), " +
          "usually around a memory_search hit. A missing file answers status not_found.",
        parameters: GET_PARAMETERS,
        async execute(_id, params) {
          try {
            const reply = await callService(where(ctx), "/v1/tools/memory_get", {
              path: params.path,
              ...(params.from ? { from: params.from } : {}),
              ...(params.lines ? { lines: params.lines } : {}),
            });
            return toolResult(readPayload(reply));
          } catch (err) {
            if (err instanceof MemdirError) throw err;
            return toolResult({ status: "error", path: params.path, error: err.message });
          }
        },
      }),
      { names: ["memory_get"] },
    );

    if (settings.autoRecall !== false) {
      api.on("before_prompt_build", async (event, ctx) => {
        if (ctx?.trigger && ctx.trigger !== "user") return;
        const prompt = event.currentUserMessage ?? event.prompt ?? "";
        try {
          const at = where(ctx, settings.recallTimeoutMs ?? 2500);
          const found = await callService(at, "/v1/recall", { prompt });
          return found.block ? { prependContext: found.block } : undefined;
        } catch (err) {
          api.logger?.warn?.(`memdir auto-recall skipped: ${err.message}`);
          return undefined;
        }
      });
    }

    if (settings.autoCapture !== false) {
      api.on("agent_end", async (event, ctx) => {
        if (!event.success || event.error) return; // a failed run is no one's words to keep
        try {
          await callService(where(ctx), "/v1/capture", {
            messages: event.messages ?? [],
            session: ctx?.sessionKey ?? ctx?.sessionId ?? "openclaw",
          });
        } catch (err) {
          api.logger?.warn?.(`memdir auto-capture skipped: ${err.message}`);
        }
      });
    }

    api.registerCli(
      ({ program, workspaceDir }) => {
        const at = (options) => ({
          home,
          workspace: options.workspace || workspaceOf(workspaceDir, options.agent),
          scope: "private",
          timeoutMs: Math.max(timeoutMs, 30_000),
        });
        const root = program
          .command("memdir")
          .description("Search memdir's memory and show the service's status");
        root
          .command("search")
          .description("Search memory as the agent's memory_search does")
          .argument("<query>", "keywords or a short question")
          .option("-n, --max-results <n>", "most results", (v) => Number.parseInt(v, 10))
          .option("--agent <id>", "the agent whose workspace to search", "main")
          .option("--workspace <path>", "a memdir workspace instead of the agent's")
          .option("--json", "print the results as JSON")
          .action(async (query, options) => {
            const reply = await run(() =>
              callService(at(options), "/v1/tools/memory_search", {
                query,
                ...(options.maxResults ? { max_results: options.maxResults } : {}),
              }),
            );
            const hits = (reply.results ?? []).map((r) => toHit(r, true));
            if (options.json) return print(JSON.stringify({ results: hits }, null, 2));
            if (!hits.length) return print("no results");
            for (const hit of hits) {
              print(`${hit.citation}  ${hit.score.toFixed(3)}`);
              print(`  ${hit.snippet.split("\n\nSource:")[0].replace(/\s+/g, " ").trim()}`);
            }
          });
        root
          .command("status")
          .description("The memdir service and the workspace it serves")
          .option("--agent <id>", "the agent whose workspace to show", "main")
          .option("--workspace <path>", "a memdir workspace instead of the agent's")
          .option("--json", "print memdir's status as JSON")
          .action(async (options) => {
            const target = at(options);
            const status = await run(() => callService(target, "/v1/status"));
            if (options.json) return print(JSON.stringify(status, null, 2));
            print(`memdir: ${status.workspace} (${status.mode}, ${status.backend})`);
            print(`  files ${status.files ?? "?"}, chunks ${status.chunks ?? "?"}`);
            print(`  embedding: ${status.embedding?.provider} ${status.embedding?.model ?? ""}`);
            print(`  service: ${target.home}`);
          });
      },
      {
        descriptors: [
          {
            name: "memdir",
            description: "Search memdir's memory and show the service's status",
            hasSubcommands: true,
          },
        ],
      },
    );
  },
};

/** The memory search manager OpenClaw's doctor, status and settings read. */
async function searchManager(at) {
  let status = await callService(at, "/v1/status");
  const toStatus = () => ({
    backend: "builtin",
    provider: `memdir (${status.embedding?.provider ?? "none"})`,
    model: status.embedding?.model ?? undefined,
    files: status.files,
    chunks: status.chunks,
    dirty: (status.dirty_files ?? 0) > 0,
    workspaceDir: status.workspace,
    dbPath: status.index_path,
    sources: ["memory"],
    fts: { enabled: true, available: true },
    vector: { enabled: status.mode === "hybrid", available: status.mode === "hybrid" },
    custom: { memdir: { home: at.home, mode: status.mode, notes: status.notes } },
  });
  return {
    async search(query, opts = {}) {
      const reply = await callService(at, "/v1/tools/memory_search", {
        query,
        ...(opts.maxResults ? { max_results: opts.maxResults } : {}),
        ...(opts.minScore !== undefined ? { min_score: opts.minScore } : {}),
      });
      return (reply.results ?? []).map((r) => toHit(r, false));
    },
    async readFile({ relPath, from, lines }) {
      const reply = await callService(at, "/v1/tools/memory_get", {
        path: relPath,
        ...(from ? { from } : {}),
        ...(lines ? { lines } : {}),
      });
      return readPayload(reply);
    },
    status: toStatus,
    async sync() {
      status = await callService(at, "/v1/status");
    },
    async probeEmbeddingAvailability() {
      return { ok: status.mode === "hybrid", checked: true };
    },
    async probeVectorAvailability() {
      return status.mode === "hybrid";
    },
    async close() {},
  };
}

/** Group and channel sessions get memdir's shared scope: MEMORY.md stays private. */
function sharedSession(sessionKey) {
  return typeof sessionKey === "string" && /:(group|channel)(:|$)/.test(sessionKey);
}

async function run(call) {
  try {
    return await call();
  } catch (err) {
    process.stderr.write(`openclaw memdir: ${err.message}\n`);
    process.exitCode = 1;
    return {};
  }
}

function print(line) {
  process.stdout.write(`${line}\n`);
}
