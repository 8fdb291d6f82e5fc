// What the agent gets: a recall's or a brief's answer as the compact text an agent reads (one memory a line: its
// content, when, kind, confidence and id), and its size in tokens as recall counts them for its budget.
//
// The MCP tools will answer this text themselves (a renderer shared by the server); until then the inspector
// renders it here from the JSON answer, in the same shape, and switches to the server's when it lands.

const day = (iso) => (iso ? iso.slice(0, 10) : "");
const minute = (iso) => (iso ? iso.replace("T", " ").slice(0, 16) : "");

function memoryLine(hit, rank, why) {
  const parts = [];
  if (hit.layer === "semantic") {
    parts.push(hit.kind || "fact");
    if (typeof hit.confidence === "number") parts.push(`confidence ${hit.confidence.toFixed(2)}`);
    parts.push(`since ${day(hit.occurred_at)}`);
  } else {
    parts.push("episode", minute(hit.occurred_at));
    if (hit.outcome_status) parts.push(hit.outcome_status);
  }
  if (why) parts.push(`why: ${why}`);
  parts.push(`id ${hit.id}`);
  return `${rank}. ${hit.content} [${parts.join(" · ")}]`;
}

// The recall answer's text.
export function recallBlock(response) {
  if (response.no_relevant_memory || !response.results.length) {
    return "No relevant memory: nothing stored answers this. Say so rather than guess.";
  }
  const lines = [`Memories, most relevant first (${response.results.length}):`];
  response.results.forEach((hit, i) => lines.push(memoryLine(hit, i + 1)));
  if (response.truncated) lines.push("(More matched than the token budget holds.)");
  if (response.working && Object.keys(response.working).length) {
    lines.push("Working memory:");
    for (const [key, value] of Object.entries(response.working)) lines.push(`- ${key}: ${JSON.stringify(value)}`);
  }
  return lines.join("\n");
}

// The brief answer's text.
export function briefBlock(response) {
  if (response.no_relevant_memory || !response.items.length) return "No preference or lesson applies to this task.";
  const lines = [`Before this task, follow these (${response.items.length}):`];
  response.items.forEach((item, i) => lines.push(memoryLine({ ...item.memory, confidence: item.confidence }, i + 1, item.why)));
  if (response.truncated) lines.push("(More applied than the token budget holds.)");
  return lines.join("\n");
}

function isCjk(ch) {
  const code = ch.codePointAt(0);
  return (code >= 0x3040 && code <= 0x30ff) || (code >= 0x3400 && code <= 0x4dbf) || (code >= 0x4e00 && code <= 0x9fff)
    || (code >= 0xac00 && code <= 0xd7af) || (code >= 0xf900 && code <= 0xfaff) || (code >= 0x20000 && code <= 0x2fa1f);
}

// Tokens as recall estimates them for its budget (`rearview.text_analysis.estimate_tokens`): one per CJK character,
// and for the rest the larger of characters / 4 and words / 0.75.
export function estimateTokens(text) {
  if (!text) return 0;
  let cjk = 0;
  let rest = "";
  for (const ch of text) {
    if (isCjk(ch)) { cjk += 1; rest += " "; } else rest += ch;
  }
  const words = rest.split(/\s+/).filter(Boolean).length;
  const chars = words ? rest.trim().length : 0;
  return Math.max(1, cjk + Math.round(Math.max(chars / 4, words / 0.75)));
}
