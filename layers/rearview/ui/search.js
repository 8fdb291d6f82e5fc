// Search as the agent would: the ranked memories with where each score came from, beside the exact block recall or
// brief hands the agent (its tokens, what the budget cut); a miss explained in words (the time understood, what was
// found and why each fell), and recall's stages for whoever wants the figures.
import { html, useEffect, useState } from "/ui/vendor-preact-htm.js";
import { briefBlock, estimateTokens, recallBlock } from "/ui/agent_block.js";
import {
  droppedCandidates, factorWords, matchedTerms, stageLines, stagesOf, timeRangeOf, timeRangeWords,
} from "/ui/trace_words.js";
import { ErrorLine, KindBadge, OutcomeMark, plural, when } from "/ui/widgets.js";

const TOP_K = 10;
const DEFAULT_BUDGET = 2000;
// The dropped candidates whose text is fetched to show (one GET each).
const DROPPED_SHOWN = 8;

// Where each result's score came from: its keyword and vector shares of the fused score (min-max normalised, weighed
// as the parse stage says), then the ranking factors that turned the fused score into the final one.
export function scoreBreakdown(response) {
  const stages = stagesOf(response);
  const weights = (stages.parse && stages.parse.detail.weights) || { keyword: 0.5, vector: 0.5 };
  const lists = { keyword: [], vector: [] };
  if (stages.search) {
    // One hybrid round trip lists both, keyword first: each list's rows are ranked from 1.
    const rows = stages.search.candidates;
    const second = rows.findIndex((row, i) => i > 0 && row.rank === 1);
    const split = second < 0 ? (stages.search.detail.keyword_count ? rows.length : 0) : second;
    lists.keyword = rows.slice(0, split);
    lists.vector = rows.slice(split);
  }
  if (stages.keyword) lists.keyword = stages.keyword.candidates;
  if (stages.vector) lists.vector = stages.vector.candidates;
  const normalised = (candidates) => {
    const scores = candidates.map((c) => c.score);
    const low = Math.min(...scores);
    const high = Math.max(...scores);
    return Object.fromEntries(candidates.map((c) => [c.id, { share: high > low ? (c.score - low) / (high - low) : 1, raw: c.score }]));
  };
  const keyword = normalised(lists.keyword);
  const vector = normalised(lists.vector);
  const ranked = Object.fromEntries(((stages.rank && stages.rank.candidates) || []).map((c) => [c.id, c]));
  return response.results.map((hit) => ({
    id: hit.id,
    keyword: ((keyword[hit.id] && keyword[hit.id].share) || 0) * weights.keyword,
    vector: ((vector[hit.id] && vector[hit.id].share) || 0) * weights.vector,
    bm25: keyword[hit.id] && keyword[hit.id].raw,
    cosine: vector[hit.id] && vector[hit.id].raw,
    factors: ranked[hit.id] || {},
    score: hit.score,
  }));
}

// The text of memories the trace names by id, read once each (the results bring their own).
function useContents(client, namespace, response, wanted) {
  const [contents, setContents] = useState({});
  useEffect(() => {
    if (!response) return undefined;
    let current = true;
    const known = Object.fromEntries(response.results.map((hit) => [hit.id, hit]));
    setContents(known);
    Promise.all(wanted.filter((id) => !known[id]).map((id) => client.get(namespace, id).then((m) => [id, m], () => [id, null])))
      .then((found) => { if (current) setContents({ ...known, ...Object.fromEntries(found) }); });
    return () => { current = false; };
  }, [client, namespace, response]);
  return contents;
}

function ScoreChart({ part, best }) {
  const share = (value) => `${Math.round(Math.max(0, Math.min(1, value)) * 100)}%`;
  const final = best > 0 ? part.score / best : 0;
  const title = `fused: keyword ${part.keyword.toFixed(2)} (BM25 ${part.bm25 === undefined ? "-" : part.bm25.toFixed(3)}), `
    + `vector ${part.vector.toFixed(2)} (cosine ${part.cosine === undefined ? "-" : part.cosine.toFixed(3)}); final score ${part.score.toFixed(3)}`;
  return html`<div class="score" data-testid="score-chart" title=${title} role="img" aria-label=${title}>
    <div class="score-bar"><span class="keyword" style=${{ width: share(part.keyword) }}></span><span class="vector" style=${{ width: share(part.vector) }}></span></div>
    <div class="score-bar final"><span style=${{ width: share(final) }}></span></div>
  </div>`;
}

function WhyItCame({ response, hit, part }) {
  const terms = matchedTerms(response, hit.content);
  const reasons = [];
  if (terms.length) {
    const words = terms.length === 1 ? `shares the word “${terms[0]}”` : `shares the words ${terms.map((t) => `“${t}”`).join(", ")}`;
    reasons.push({ words, technical: `keyword (BM25) ${part.bm25 === undefined ? "-" : part.bm25.toFixed(3)}` });
  }
  if (part.cosine !== undefined) {
    const close = part.cosine >= 0.5 ? "close in meaning" : part.cosine >= 0.3 ? "somewhat close in meaning" : "loosely related in meaning";
    reasons.push({ words: close, technical: `vector cosine ${part.cosine.toFixed(3)}` });
  }
  for (const factor of factorWords(part.factors)) reasons.push(factor);
  return html`<div class="why" data-testid="why">${reasons.map((r) => html`<span title=${r.technical} data-technical=${r.technical}>${r.words}</span>`)}</div>`;
}

function Ranked({ response, onOpen }) {
  const parts = scoreBreakdown(response);
  const best = Math.max(...parts.map((p) => p.score), 0);
  return html`<div>
    <div class="legend"><span><span class="swatch keyword"></span>shared words</span>
      <span><span class="swatch vector"></span>meaning</span><span><span class="swatch final"></span>final score</span></div>
    ${response.results.map((hit, i) => html`<div class="result" data-testid="result" data-id=${hit.id}>
      <div class="result-head"><span class="rank">${i + 1}</span>
        <button class="link" onClick=${() => onOpen(hit.id)}>${hit.content}</button></div>
      <div class="meta">${hit.kind ? html`<${KindBadge} kind=${hit.kind} />` : html`<span>episode</span>`}
        <${OutcomeMark} status=${hit.outcome_status} outcome=${hit.outcome} /><span>${when(hit.occurred_at)}</span>
        ${typeof hit.confidence === "number" ? html`<span>confidence ${hit.confidence.toFixed(2)}</span>` : null}</div>
      <${ScoreChart} part=${parts[i]} best=${best} />
      <${WhyItCame} response=${response} hit=${hit} part=${parts[i]} />
    </div>`)}
  </div>`;
}

function BriefItems({ response, onOpen }) {
  return html`<div>${response.items.map((item, i) => html`<div class="result" data-testid="result" data-id=${item.memory.id}>
    <div class="result-head"><span class="rank">${i + 1}</span>
      <button class="link" onClick=${() => onOpen(item.memory.id)}>${item.memory.content}</button></div>
    <div class="meta">${item.memory.kind ? html`<${KindBadge} kind=${item.memory.kind} />` : null}
      <span>confidence ${item.confidence.toFixed(2)}</span></div>
    <div class="why"><span>${item.why}</span></div>
  </div>`)}</div>`;
}

function AgentBlock({ mode, response, budget }) {
  const text = mode === "brief" ? briefBlock(response) : recallBlock(response);
  const tokens = estimateTokens(text);
  const budgetStage = stagesOf(response).budget;
  const cut = budgetStage ? budgetStage.detail.dropped : undefined;
  return html`<section class="agent" data-testid="agent-block">
    <h4>What the agent gets</h4>
    <p class="meta">The ${mode} tool's answer as the agent reads it.</p>
    <pre data-testid="agent-text">${text}</pre>
    <div class="meta" data-testid="agent-tokens">
      <span>≈ ${plural(tokens, "token")}</span>
      <span>budget ${budget} tokens for the memories</span>
      ${cut !== undefined ? html`<span data-testid="budget-cut">${cut ? `the budget cut ${plural(cut, "memory", "memories")}` : "the budget cut nothing"}</span>` : null}
      ${response.truncated ? html`<span>truncated</span>` : null}
    </div>
  </section>`;
}

function Dropped({ dropped, contents, onOpen }) {
  if (!dropped.length) return html`<p class="meta">Nothing else came close.</p>`;
  return html`<ol class="dropped" data-testid="dropped">
    ${dropped.slice(0, DROPPED_SHOWN).map((d) => {
      const memory = contents[d.id];
      return html`<li data-testid="dropped-candidate" data-id=${d.id} data-reason=${d.reason}>
        <div>${memory ? html`<button class="link" onClick=${() => onOpen(d.id)}>${memory.content}</button>` : d.id}</div>
        <div class="meta"><span class=${`reason ${d.reason}`} title=${d.technical} data-testid="dropped-reason">${d.words}</span></div>
      </li>`;
    })}
    ${dropped.length > DROPPED_SHOWN ? html`<li class="meta">and ${dropped.length - DROPPED_SHOWN} more</li>` : null}
  </ol>`;
}

function Searched({ response }) {
  const stages = stagesOf(response);
  const keyword = stages.keyword ? stages.keyword.detail.count : stages.search && stages.search.detail.keyword_count;
  const vector = stages.vector ? stages.vector.detail.count : stages.search && stages.search.detail.vector_count;
  const range = timeRangeWords(timeRangeOf(response));
  return html`<ul class="searched" data-testid="searched">
    ${range ? html`<li data-testid="time-range">${range}</li>` : null}
    ${keyword !== undefined ? html`<li>${plural(keyword, "memory", "memories")} shared words with the question; the ${plural(vector || 0, "memory", "memories")} nearest in meaning were weighed too.</li>` : null}
  </ul>`;
}

function Miss({ response, contents, dropped, onOpen }) {
  const relevance = stagesOf(response).relevance;
  const technical = relevance ? `relevance: best strength ${relevance.detail.best} < floor ${relevance.detail.floor}` : "no relevance stage in the trace";
  return html`<div class="warning" role="status" data-testid="no-relevant">
    <strong>No relevant memory.</strong> The agent is told it remembers nothing about this.
    <p title=${technical}>${relevance && relevance.detail.best !== undefined
      ? `Recall found candidates, but none came close enough to the question: the closest scored ${Number(relevance.detail.best).toFixed(2)} where ${Number(relevance.detail.floor).toFixed(2)} counts as relevant.`
      : "Nothing in this namespace matched the question."}</p>
    <${Searched} response=${response} />
    <h4>What recall found, and why each fell</h4>
    <${Dropped} dropped=${dropped} contents=${contents} onOpen=${onOpen} />
  </div>`;
}

function TechnicalTrace({ response }) {
  const lines = stageLines(response);
  if (!lines.length) return null;
  const slowest = Math.max(...lines.map((l) => l.millis), 0.001);
  return html`<details class="technical" data-testid="technical-trace">
    <summary>How recall got there, stage by stage (${response.trace.total_millis.toFixed(1)} ms)</summary>
    <table class="stages" data-testid="stages">
      <thead><tr><th>stage</th><th>what it did</th><th>time</th></tr></thead>
      <tbody>${lines.map((l) => html`<tr data-testid="stage" data-stage=${l.stage}>
        <td>${l.stage}</td>
        <td title=${l.technical}>${l.words}${l.candidates.length ? html` <span class="meta">(${plural(l.candidates.length, "candidate")})</span>` : null}
          ${l.technical ? html`<div class="meta technical-figures">${l.technical}</div>` : null}</td>
        <td><span class="stage-time"><span style=${{ width: `${Math.max(2, (l.millis / slowest) * 100)}%` }}></span></span>${l.millis.toFixed(1)} ms</td>
      </tr>`)}</tbody>
    </table>
  </details>`;
}

export function Search({ client, namespace, onOpen }) {
  const [mode, setMode] = useState("recall");
  const [text, setText] = useState("");
  const [budget, setBudget] = useState(String(DEFAULT_BUDGET));
  const [answer, setAnswer] = useState(null);
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const run = async (event) => {
    event.preventDefault();
    setError(null);
    setBusy(true);
    try {
      const token_budget = Number(budget) || DEFAULT_BUDGET;
      const response = mode === "brief"
        ? await client.brief(namespace, { task: text, token_budget })
        : await client.recall(namespace, { query: text, top_k: TOP_K, token_budget });
      setAnswer({ mode, response, budget: token_budget });
    } catch (err) {
      setAnswer(null);
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  const recall = answer && answer.mode === "recall" ? answer.response : null;
  const dropped = recall ? droppedCandidates(recall) : [];
  const contents = useContents(client, namespace, recall, dropped.slice(0, DROPPED_SHOWN).map((d) => d.id));
  return html`<div data-testid="search">
    <form class="filters search-form" onSubmit=${run}>
      <label>Ask<select data-testid="search-mode" value=${mode} onChange=${(e) => setMode(e.target.value)}>
        <option value="recall">what the agent would recall</option><option value="brief">a brief before a task</option></select></label>
      <label class="grow">${mode === "brief" ? "The task about to start" : "The question"}<input data-testid="search-input" value=${text}
        onInput=${(e) => setText(e.target.value)} /></label>
      <label>token budget<input type="number" min="1" max="100000" data-testid="search-budget" value=${budget} onInput=${(e) => setBudget(e.target.value)} /></label>
      <button class="primary" data-testid="search-go" type="submit" disabled=${!text.trim() || busy}>Search</button>
    </form>
    <${ErrorLine} error=${error} />
    ${answer ? html`<div class="search-grid" data-testid="search-results">
      <section class="ranked">
        ${recall && recall.no_relevant_memory ? html`<${Miss} response=${recall} contents=${contents} dropped=${dropped} onOpen=${onOpen} />` : null}
        ${recall && !recall.no_relevant_memory ? html`
          ${timeRangeOf(recall) ? html`<p class="meta" data-testid="time-range">${timeRangeWords(timeRangeOf(recall))}</p>` : null}
          <${Ranked} response=${recall} onOpen=${onOpen} />
          <details class="dropped-all" data-testid="not-returned"><summary>What else recall considered, and why it is not here (${dropped.length})</summary>
            <${Dropped} dropped=${dropped} contents=${contents} onOpen=${onOpen} /></details>` : null}
        ${answer.mode === "brief" ? (answer.response.no_relevant_memory
          ? html`<div class="warning" role="status" data-testid="no-relevant"><strong>No preference or lesson applies.</strong> The agent starts the task with nothing from memory.</div>`
          : html`<${BriefItems} response=${answer.response} onOpen=${onOpen} />`) : null}
      </section>
      <${AgentBlock} mode=${answer.mode} response=${answer.response} budget=${answer.budget} />
      ${recall ? html`<div class="trace-wide"><${TechnicalTrace} response=${recall} /></div>` : null}
    </div>` : null}
  </div>`;
}
