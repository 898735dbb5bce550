// One HTTP request to memdir's service on 127.0.0.1, bounded in time: the JSON routes of
// memdir's service/agent_routes.py. Every failure becomes a ServiceUnavailable (a clear message)
// or a MemdirError (what memdir said), never a hang.

import { request } from "node:http";

import { ServiceUnavailable, findService } from "./endpoint.js";

/** What memdir answered with an error (bad arguments, a path outside memory, …). */
export class MemdirError extends Error {}

/**
 * Call `path` (e.g. "/v1/tools/memory_search") on the service of `home`.
 * @param {{home: string, workspace: string, scope?: string, timeoutMs: number}} where
 * @param {string} path
 * @param {object | undefined} body  JSON body (POST), or undefined (GET)
 */
export function callService(where, path, body) {
  const { port, token } = findService(where.home);
  const query = new URLSearchParams({ workspace: where.workspace });
  if (where.scope && where.scope !== "private") query.set("scope", where.scope);
  const data = body === undefined ? undefined : Buffer.from(JSON.stringify(body), "utf8");
  return new Promise((resolveCall, rejectCall) => {
    let timer;
    const done = (value) => {
      clearTimeout(timer);
      resolveCall(value);
    };
    const fail = (err) => {
      clearTimeout(timer);
      rejectCall(err);
    };
    const req = request(
      {
        host: "127.0.0.1",
        port,
        path: `${path}?${query}`,
        method: data ? "POST" : "GET",
        headers: {
          Host: `127.0.0.1:${port}`,
          Authorization: `Bearer ${token}`,
          "Content-Type": "application/json",
          ...(data ? { "Content-Length": data.length } : {}),
        },
      },
      (res) => {
        const chunks = [];
        res.on("data", (chunk) => chunks.push(chunk));
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          let parsed;
          try {
            parsed = JSON.parse(text);
          } catch {
            parsed = { error: text.trim() || `HTTP ${res.statusCode}` };
          }
          if (res.statusCode === 200) done(parsed);
          else if (res.statusCode === 401 || res.statusCode === 421) {
            fail(new ServiceUnavailable(`the memdir service refused the request: ${parsed.error}`));
          } else fail(new MemdirError(parsed.error ?? `HTTP ${res.statusCode}`));
        });
        res.on("error", (err) => fail(new ServiceUnavailable(`memdir service: ${err.message}`)));
      },
    );
    timer = setTimeout(() => {
      fail(
        new ServiceUnavailable(
          `the memdir service did not answer within ${where.timeoutMs} ms (memdir daemon status)`,
        ),
      );
      req.destroy();
    }, where.timeoutMs);
    req.on("error", (err) => {
      fail(
        new ServiceUnavailable(
          `the memdir service on 127.0.0.1:${port} cannot be reached (${err.code ?? err.message}): ` +
            "restart it with `memdir daemon start`",
        ),
      );
    });
    req.end(data);
  });
}
