// Recall's explain trace in words a person reads: what each stage did, why a candidate fell (below the relevance
// floor, outside the time range, cut by the token budget, folded into a near-duplicate, ranked below the top k),
// and what a ranking factor did to a score. The technical figure goes along, for a hover.
//
// The trace is read tolerantly: a stage this page does not know is named as it is, a field it does not know is
// shown as `name value` in the technical text, and a missing stage or field leaves its sentence out.

const pct = (value) => `${Math.round(value * 100)}%`;
const fixed = (value, digits = 2) => (typeof value === "number" ? value.toFixed(digits) : String(value));
const figure = (value) => (Number.isInteger(value) ? String(value) : fixed(value, 3));
// A row's plain fields as `name value` (a list by its length), for the technical text.
const scalars = (row, skip = []) =>
  Object.entries(row || {})
    .filter(([name, value]) => !skip.includes(name) && value !== null && value !== undefined)
    .filter(([, value]) => typeof value !== "object" || Array.isArray(value))
    .map(([name, value]) => `${name} ${Array.isArray(value) ? `[${value.length}]` : typeof value === "number" ? figure(value) : value}`)
    .join(", ");
const count = (value) => (Array.isArray(value) ? value.length : value);

export function stagesOf(response) {
  const stages = (response && response.trace && response.trace.stages) || [];
  return Object.fromEntries(stages.map((s) => [s.stage, s]));
}

// The time a query named, as recall understood it: {expression, since, until, appliedAs} or null.
export function timeRangeOf(response) {
  const stages = stagesOf(response);
  const parsed = (stages.parse && stages.parse.detail && stages.parse.detail.time_range) || response.time_range;
  if (!parsed) return null;
  return { expression: parsed.expression, since: parsed.since, until: parsed.until, appliedAs: parsed.applied_as || "filter" };
}

export function timeRangeWords(range) {
  if (!range) return null;
  const span = `${(range.since || "").slice(0, 10)} to ${(range.until || "").slice(0, 10)}`;
  return range.appliedAs === "boost"
    ? `“${range.expression}” was read as ${span}: memories from then rank higher, the others still count.`
    : `“${range.expression}” was read as ${span}: only memories from then were searched.`;
}

// One line per stage: {stage, words, technical, millis, candidates}.
export function stageLines(response) {
  const stages = (response && response.trace && response.trace.stages) || [];
  return stages.map((s) => ({
    stage: s.stage,
    words: stageWords(s) || s.stage,
    technical: scalars(s.detail, []),
    millis: s.millis,
    candidates: s.candidates || [],
  }));
}

const STAGE_WORDS = {
  parse: (d) => {
    const range = d.time_range ? `, with the time “${d.time_range.expression}”` : "";
    return `Read the question as “${d.keyword_text}”${range}`;
  },
  structure: (d) => `Looked at how this namespace's conversations are shaped${d.reason ? ` (${d.reason})` : ""}`,
  embed: () => "Turned the question into a vector of its meaning",
  search: (d) => `Found ${d.keyword_count} memories sharing words with the question and ${d.vector_count} close in meaning`,
  keyword: (d) => `Found ${d.count} memories sharing words with the question`,
  vector: (d) => `Found ${d.count} memories close in meaning`,
  across: (d) => `Searched again as if asked in the other language (Chinese or not), and added ${count(d.added)} memories written in it`,
  fresh: (d) => `Added ${count(d.added)} episodes written in the last moments`,
  fuse: (d) => `Merged both lists into one ranking of ${d.count}`,
  feedback: () => "Searched again, from what the best first answers have in common",
  rank: () => "Weighed each candidate's age, importance, use and length",
  neighbours: (d) => `Added the turns around the best episodes${d.added !== undefined ? ` (${count(d.added)})` : ""}`,
  entities: () => "Lifted the memories about the names in the question",
  time_answers: () => "Lifted the memories that say when, for a question asking when",
  questions: () => "Put the memories that only ask a question below their answers",
  exclude: (d) => `Left out ${count(d.left_out)} memories about what the question excludes`,
  rerank: () => "Re-ordered the best candidates with the rerank model",
  latest_first: () => "Put the most recent matching episode first",
  collapse: (d) => `Folded ${Object.values(d.folded || {}).flat().length} near-duplicates into the best of each`,
  relevance: (d) => d.no_relevant_memory
    ? `Judged nothing relevant: the closest scored ${fixed(d.best)} on relevance, under the floor of ${fixed(d.floor)}`
    : `Judged the best relevant (${fixed(d.best)}, floor ${fixed(d.floor)})`,
  budget: (d) => `Kept ${d.kept} within the budget of ${d.budget} tokens${d.dropped ? `, cut ${d.dropped}` : ""}`,
  deadline: () => "Ran out of its time budget and skipped the refinements left",
};

function stageWords(stage) {
  const words = STAGE_WORDS[stage.stage];
  try {
    return words ? words(stage.detail || {}) : null;
  } catch {
    return null;
  }
}

// What a ranking factor did to a score, in words (null where it changed nothing), and the figure for a hover.
const FACTOR_WORDS = {
  decay: (v) => (v < 0.995 ? `older: counts ${pct(v)}` : null),
  boost: (v) => (v > 1.005 ? `important or often recalled: +${pct(v - 1)}` : v < 0.995 ? `less important: ${pct(v)}` : null),
  length: (v) => (v < 0.995 ? `short text: counts ${pct(v)}` : v > 1.005 ? `fuller text: +${pct(v - 1)}` : null),
  stale: (v) => `not confirmed for long: counts ${pct(v)}`,
};
const FACTOR_TECHNICAL = {
  decay: "recency decay",
  boost: "importance and access boost",
  length: "length prior",
  stale: "stale factor",
};
const NOT_FACTORS = ["id", "score", "fused", "rank", "layer"];

export function factorWords(factors) {
  return Object.entries(factors || {})
    .filter(([name, value]) => !NOT_FACTORS.includes(name) && typeof value === "number")
    .map(([name, value]) => {
      const words = FACTOR_WORDS[name] ? FACTOR_WORDS[name](value) : `${name} ×${fixed(value)}`;
      return words && { name, words, technical: `${name} ×${fixed(value, 3)}: ${FACTOR_TECHNICAL[name] || "a ranking factor"}` };
    })
    .filter(Boolean);
}

// Why each candidate that recall considered is not among the results, best first: {id, reason, words, technical}.
// reason: floor, budget, collapsed, excluded, ranked.
export function droppedCandidates(response) {
  const stages = stagesOf(response);
  const returned = new Set(response.results.map((hit) => hit.id));
  const seen = new Set(returned);
  const dropped = [];
  const add = (id, reason, words, technical) => {
    if (seen.has(id)) return;
    seen.add(id);
    dropped.push({ id, reason, words, technical });
  };
  const relevance = stages.relevance;
  if (relevance) {
    const floor = relevance.detail.floor;
    for (const row of relevance.candidates) {
      const score = row.strength;
      if (response.no_relevant_memory) {
        add(row.id, "floor", floorWords(score, floor),
          `strength ${fixed(score, 3)} < floor ${fixed(floor, 3)}${extra(row, ["id", "strength"])}`);
      } else {
        const budget = stages.budget ? stages.budget.detail.budget : undefined;
        add(row.id, "budget", "relevant, but cut by the token budget",
          `strength ${fixed(score, 3)}; budget ${budget} tokens${extra(row, ["id", "strength"])}`);
      }
    }
  }
  const folded = (stages.collapse && stages.collapse.detail.folded) || {};
  for (const [kept, ids] of Object.entries(folded)) {
    for (const id of ids) {
      add(id, "collapsed", "a near-duplicate of a memory ranked above it, folded into it",
        `cosine ≥ ${fixed(stages.collapse.detail.threshold)} with ${kept}`);
    }
  }
  for (const exclusion of (response.query_form && response.query_form.exclusions) || []) {
    for (const id of exclusion.left_out) {
      add(id, "excluded", `about “${exclusion.phrase}”, which the question leaves out`, `exclusion from the ${exclusion.source}`);
    }
  }
  const ranked = (stages.rank && stages.rank.candidates) || [];
  ranked.forEach((row, i) => {
    add(row.id, "ranked", `ranked ${i + 1}${ordinal(i + 1)}, below the best that were kept`,
      `score ${fixed(row.score, 3)}${extra(row, ["id", "score"])}`);
  });
  return dropped;
}

// How far under the relevance floor a candidate fell, in words.
function floorWords(score, floor) {
  const share = typeof score === "number" && floor > 0 ? score / floor : 0;
  if (share >= 0.8) return "nearly relevant: just under what counts as relevant";
  if (share >= 0.4) return "somewhat related, not close enough to count as relevant";
  return "not close enough to the question to count as relevant";
}

const extra = (row, skip) => {
  const rest = scalars(row, skip);
  return rest ? `; ${rest}` : "";
};
const ordinal = (n) => (n % 10 === 1 && n % 100 !== 11 ? "st" : n % 10 === 2 && n % 100 !== 12 ? "nd" : n % 10 === 3 && n % 100 !== 13 ? "rd" : "th");

// The question's words a memory holds (the parse stage's terms, matched as word prefixes, as stemming does).
export function matchedTerms(response, content) {
  const stages = stagesOf(response);
  const terms = (stages.parse && stages.parse.detail.terms) || [];
  const words = content.toLowerCase().split(/[^\p{L}\p{N}]+/u).filter(Boolean);
  return terms.filter((term) => words.some((word) => word.startsWith(String(term).toLowerCase())));
}
