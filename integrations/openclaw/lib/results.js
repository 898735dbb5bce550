// memdir's answers in the shapes of OpenClaw's builtin memory (memory-core): a search hit is
// {path, startLine, endLine, score, snippet, citation, source}, a read {status, path, text, …},
// and a tool answers {content: [{type: "text", text: JSON}], details: the same object}.

/** A memdir search hit (path, start_line, end_line, score, snippet, citation, context). */
export function toHit(result, withCitation) {
  const hit = {
    path: result.path,
    startLine: result.start_line,
    endLine: result.end_line,
    score: result.score,
    snippet: result.context ? `(${result.context}) ${result.snippet}` : result.snippet,
    source: "memory",
  };
  if (withCitation) {
    hit.citation = result.citation;
    hit.snippet = `${hit.snippet.trimEnd()}\n\nSource: ${result.citation}`;
  }
  return hit;
}

/** memdir's memory_search reply → the tool's payload. */
export function searchPayload(reply, citationsMode) {
  const withCitation = citationsMode !== "off";
  const payload = {
    results: (reply.results ?? []).map((r) => toHit(r, withCitation)),
    provider: "memdir",
    mode: reply.mode,
    citations: citationsMode,
  };
  if (reply.warnings?.length) payload.warning = reply.warnings.join(" ");
  return payload;
}

/** memdir's memory_get reply → OpenClaw's read result. */
export function readPayload(reply) {
  if (reply.exists === false) return { status: "not_found", text: "", path: reply.path };
  const read = { status: "ok", path: reply.path, text: reply.text ?? "" };
  if (reply.from !== undefined) read.from = reply.from;
  if (reply.lines !== undefined) read.lines = reply.lines;
  if (reply.truncated) {
    read.truncated = true;
    read.nextFrom = reply.next_from;
    if (reply.note) read.note = reply.note;
  }
  return read;
}

/** What a tool answers when memdir cannot: the builtin's "unavailable" shape, with the reason. */
export function unavailablePayload(error) {
  return {
    results: [],
    disabled: true,
    unavailable: true,
    error: error.message,
    warning: `memdir memory is unavailable: ${error.message}`,
    action: "Tell the user memory could not be searched and why; do not guess from memory.",
  };
}

export function toolResult(payload) {
  return { content: [{ type: "text", text: JSON.stringify(payload, null, 2) }], details: payload };
}
