// The Rearview inspector: one page over the HTTP API, with Preact and htm (vendor-preact-htm.js, shipped beside
// this file; no build step, no CDN). The API key the user enters lives in this tab only (sessionStorage).
import { html, render, useCallback, useEffect, useMemo, useState } from "/ui/vendor-preact-htm.js";

const KEY_STORE = "rearview.key";
const NS_STORE = "rearview.namespace";

// --- the API ------------------------------------------------------------------------------------------------

class ApiError extends Error {
  constructor(status, body) {
    super(body && body.message ? body.message : `HTTP ${status}`);
    this.status = status;
    this.body = body || {};
  }
}

function api(key) {
  async function call(method, path, { query, body, headers } = {}) {
    const url = new URL(path, window.location.origin);
    for (const [name, value] of Object.entries(query || {})) {
      if (value !== undefined && value !== null && value !== "") url.searchParams.set(name, String(value));
    }
    const sent = { Accept: "application/json", ...(headers || {}) };
    if (key) sent.Authorization = `Bearer ${key}`;
    if (body !== undefined) sent["Content-Type"] = "application/json";
    const response = await fetch(url, { method, headers: sent, body: body === undefined ? undefined : JSON.stringify(body) });
    const type = response.headers.get("content-type") || "";
    const parsed = type.startsWith("application/json") ? await response.json() : await response.text();
    if (!response.ok) throw new ApiError(response.status, typeof parsed === "object" ? parsed : null);
    return { body: parsed, headers: response.headers };
  }
  const ns = (namespace) => `/v1/namespaces/${encodeURIComponent(namespace).replace(/%3A/g, ":")}`;
  return {
    namespaces: async () => (await call("GET", "/v1/namespaces")).body.namespaces,
    list: async (namespace, query) => (await call("GET", `${ns(namespace)}/memories`, { query })).body,
    get: async (namespace, id) => (await call("GET", `${ns(namespace)}/memories/${encodeURIComponent(id)}`)).body,
    history: async (namespace, id) =>
      (await call("GET", `${ns(namespace)}/memories/${encodeURIComponent(id)}/history`)).body.versions,
    edit: async (namespace, id, changes, version) =>
      (await call("PATCH", `${ns(namespace)}/memories/${encodeURIComponent(id)}`, {
        body: changes,
        headers: { "If-Match": String(version) },
      })).body,
    remove: async (namespace, id) => (await call("DELETE", `${ns(namespace)}/memories/${encodeURIComponent(id)}`)).body,
    recall: async (namespace, query) =>
      (await call("POST", `${ns(namespace)}/recall`, { body: { query, explain: true, top_k: 10 } })).body,
    exportText: async (namespace) => {
      let text = "";
      let cursor = null;
      do {
        const { body, headers } = await call("GET", `${ns(namespace)}/export`, { query: { cursor } });
        text += body;
        cursor = headers.get("X-Next-Cursor");
      } while (cursor);
      return text;
    },
  };
}

// --- small pieces -------------------------------------------------------------------------------------------

const when = (iso) => (iso ? iso.replace("T", " ").slice(0, 16) : "-");
const timeOf = (m) => m.occurred_at || m.last_confirmed_at;

function ConfidenceBar({ value }) {
  const width = `${Math.round(Math.max(0, Math.min(1, value)) * 100)}%`;
  return html`<span class="bar" title=${`confidence ${value.toFixed(2)}`}><span style=${{ width }}></span></span>`;
}

function ErrorLine({ error }) {
  if (!error) return null;
  const field = error.body && error.body.field ? ` (${error.body.field})` : "";
  return html`<div class="error" role="alert" data-testid="error">${error.message}${field}</div>`;
}

function Confirm({ title, message, confirmLabel, onConfirm, onCancel }) {
  return html`<div class="modal" role="dialog" aria-modal="true" data-testid="confirm">
    <div>
      <h3>${title}</h3>
      <p>${message}</p>
      <div class="row">
        <button class="danger" data-testid="confirm-yes" onClick=${onConfirm}>${confirmLabel}</button>
        <button data-testid="confirm-no" onClick=${onCancel}>Cancel</button>
      </div>
    </div>
  </div>`;
}

// --- the memory lists ---------------------------------------------------------------------------------------

function MemoryItem({ memory, selected, onOpen }) {
  const fact = memory.layer === "semantic";
  return html`<li class=${selected ? "selected" : ""} data-testid="memory" data-id=${memory.id}
      onClick=${() => onOpen(memory.id)}>
    <div>${memory.content}</div>
    <div class="meta">
      <span>${when(timeOf(memory))}</span>
      ${fact
        ? html`<span class=${`badge ${memory.kind}`}>${memory.kind}</span>
            <${ConfidenceBar} value=${memory.confidence} /> <span>${memory.confidence.toFixed(2)}</span>
            ${memory.status === "superseded" ? html`<span class="badge superseded">superseded</span>` : null}
            ${memory.dimension ? html`<span>dimension ${memory.dimension}</span>` : null}
            ${memory.provenance.length ? html`<span>${memory.provenance.length} sources</span>` : null}`
        : html`${memory.event_type ? html`<span class="badge">${memory.event_type}</span>` : null}
            ${memory.entities.map((e) => html`<span>@${e}</span>`)}`}
      ${memory.tags.map((t) => html`<span class="badge">#${t}</span>`)}
      <span>v${memory.version}</span>
    </div>
  </li>`;
}

function MemoryList({ client, namespace, layer, selected, onOpen, refresh }) {
  const [filters, setFilters] = useState({ tag: "", event_type: "", kind: "", since: "", until: "", include_superseded: false });
  const [items, setItems] = useState([]);
  const [cursor, setCursor] = useState(null);
  const [error, setError] = useState(null);
  const [loading, setLoading] = useState(false);

  const load = useCallback(async (after) => {
    setLoading(true);
    setError(null);
    try {
      const query = { layer, limit: 50, cursor: after, tag: filters.tag, since: filters.since && `${filters.since}T00:00:00Z`,
        until: filters.until && `${filters.until}T00:00:00Z` };
      if (layer === "episodic") query.event_type = filters.event_type;
      else { query.kind = filters.kind; query.include_superseded = filters.include_superseded || undefined; }
      const page = await client.list(namespace, query);
      setItems((before) => (after ? [...before, ...page.items] : page.items));
      setCursor(page.next_cursor);
    } catch (err) {
      setError(err);
    } finally {
      setLoading(false);
    }
  }, [client, namespace, layer, filters]);

  useEffect(() => { load(null); }, [load, refresh]);
  const set = (name) => (event) =>
    setFilters({ ...filters, [name]: event.target.type === "checkbox" ? event.target.checked : event.target.value });

  return html`<div>
    <div class="filters">
      <label>tag<input data-testid="filter-tag" value=${filters.tag} onChange=${set("tag")} /></label>
      ${layer === "episodic"
        ? html`<label>event type<input data-testid="filter-event-type" value=${filters.event_type} onChange=${set("event_type")} /></label>`
        : html`<label>kind<select data-testid="filter-kind" value=${filters.kind} onChange=${set("kind")}>
              <option value="">any</option><option>preference</option><option>fact</option><option>lesson</option>
            </select></label>
            <label>superseded<input type="checkbox" checked=${filters.include_superseded} onChange=${set("include_superseded")} /></label>`}
      <label>since<input type="date" value=${filters.since} onChange=${set("since")} /></label>
      <label>until<input type="date" value=${filters.until} onChange=${set("until")} /></label>
    </div>
    <${ErrorLine} error=${error} />
    ${items.length === 0 && !loading ? html`<div class="empty">Nothing here yet.</div>` : null}
    <ul class="memories">
      ${items.map((m) => html`<${MemoryItem} key=${m.id} memory=${m} selected=${m.id === selected} onOpen=${onOpen} />`)}
    </ul>
    ${cursor ? html`<button data-testid="more" disabled=${loading} onClick=${() => load(cursor)}>Load more</button>` : null}
  </div>`;
}

// --- one memory: provenance, history, edit, delete ----------------------------------------------------------

function History({ versions }) {
  return html`<ol class="history" data-testid="history">
    ${versions.map((v) => html`<li>
      <div class="meta">
        <span>${when(v.changed_at)}</span>
        <span class="badge">${v.relation === "superseded" ? "superseded fact" : `v${v.version}`}</span>
        <span>${v.changed_by}${v.actor ? ` by ${v.actor}` : ""}</span>
      </div>
      <div>${v.memory.content}</div>
    </li>`)}
  </ol>`;
}

function EditForm({ memory, onSave, onCancel }) {
  const fact = memory.layer === "semantic";
  const [content, setContent] = useState(memory.content);
  const [tags, setTags] = useState(memory.tags.join(", "));
  const [importance, setImportance] = useState(String(memory.importance));
  const [confidence, setConfidence] = useState(fact ? String(memory.confidence) : "");
  const save = () => {
    const changes = {};
    if (content !== memory.content) changes.content = content;
    const tagList = tags.split(",").map((t) => t.trim()).filter(Boolean);
    if (tagList.join(",") !== memory.tags.join(",")) changes.tags = tagList;
    if (Number(importance) !== memory.importance) changes.importance = Number(importance);
    if (fact && Number(confidence) !== memory.confidence) changes.confidence = Number(confidence);
    onSave(changes);
  };
  return html`<div data-testid="edit-form">
    <label>Content<textarea data-testid="edit-content" value=${content} onInput=${(e) => setContent(e.target.value)}></textarea></label>
    <div class="filters">
      <label>tags (comma separated)<input data-testid="edit-tags" value=${tags} onInput=${(e) => setTags(e.target.value)} /></label>
      <label>importance<input type="number" min="0" max="1" step="0.05" value=${importance} onInput=${(e) => setImportance(e.target.value)} /></label>
      ${fact ? html`<label>confidence<input type="number" min="0" max="1" step="0.05" value=${confidence} onInput=${(e) => setConfidence(e.target.value)} /></label>` : null}
    </div>
    <div class="row">
      <button class="primary" data-testid="edit-save" onClick=${save}>Save</button>
      <button onClick=${onCancel}>Cancel</button>
    </div>
  </div>`;
}

function Detail({ client, namespace, id, onOpen, onChanged, onClose }) {
  const [memory, setMemory] = useState(null);
  const [versions, setVersions] = useState([]);
  const [editing, setEditing] = useState(false);
  const [confirming, setConfirming] = useState(false);
  const [error, setError] = useState(null);
  const [notice, setNotice] = useState(null);

  const load = useCallback(async () => {
    setError(null);
    try {
      setMemory(await client.get(namespace, id));
      setVersions(await client.history(namespace, id));
    } catch (err) {
      setError(err);
      setMemory(null);
    }
  }, [client, namespace, id]);
  useEffect(() => { setEditing(false); setNotice(null); load(); }, [load]);

  const save = async (changes) => {
    if (Object.keys(changes).length === 0) { setEditing(false); return; }
    try {
      const saved = await client.edit(namespace, id, changes, memory.version);
      setEditing(false);
      setNotice(`Saved as version ${saved.version}.`);
      await load();
      onChanged();
    } catch (err) {
      setError(err);
    }
  };
  const remove = async () => {
    setConfirming(false);
    try {
      await client.remove(namespace, id);
      onChanged();
      onClose(`Deleted ${id}.`);
    } catch (err) {
      setError(err);
    }
  };

  if (!memory) return html`<div><${ErrorLine} error=${error} /></div>`;
  const fact = memory.layer === "semantic";
  return html`<div data-testid="detail" data-id=${memory.id}>
    <div class="row"><strong>${fact ? memory.kind : "episode"}</strong> <span class="meta">${memory.id} · v${memory.version}</span>
      <span style=${{ flex: 1 }}></span><button onClick=${() => onClose(null)}>Close</button></div>
    <${ErrorLine} error=${error} />
    ${notice ? html`<div class="notice" data-testid="notice">${notice}</div>` : null}
    ${editing
      ? html`<${EditForm} memory=${memory} onSave=${save} onCancel=${() => setEditing(false)} />`
      : html`<p data-testid="detail-content">${memory.content}</p>`}
    <dl class="fields">
      <dt>when</dt><dd>${when(timeOf(memory))}</dd>
      <dt>importance</dt><dd>${memory.importance.toFixed(2)}</dd>
      ${fact ? html`<dt>confidence</dt><dd><${ConfidenceBar} value=${memory.confidence} /> ${memory.confidence.toFixed(2)}</dd>
        <dt>status</dt><dd>${memory.status}${memory.superseded_by ? html` by <button class="link" onClick=${() => onOpen(memory.superseded_by)}>${memory.superseded_by}</button>` : null}</dd>
        <dt>dimension</dt><dd>${memory.dimension || "-"}</dd>
        <dt>provenance</dt><dd data-testid="provenance">${memory.provenance.length
          ? memory.provenance.map((p) => html`<div><button class="link" data-testid="provenance-link" onClick=${() => onOpen(p)}>${p}</button></div>`)
          : "-"}</dd>`
      : html`<dt>event type</dt><dd>${memory.event_type || "-"}</dd>
        <dt>entities</dt><dd>${memory.entities.join(", ") || "-"}</dd>
        <dt>session</dt><dd>${memory.session_id || "-"}</dd>
        <dt>outcome</dt><dd>${memory.outcome || "-"}</dd>`}
      <dt>tags</dt><dd>${memory.tags.join(", ") || "-"}</dd>
      <dt>redacted</dt><dd>${memory.redacted ? "yes" : "no"}</dd>
    </dl>
    ${editing ? null : html`<div class="row">
      <button data-testid="edit" onClick=${() => setEditing(true)}>Edit</button>
      <button class="danger" data-testid="delete" onClick=${() => setConfirming(true)}>Delete</button>
    </div>`}
    <h4>History</h4>
    <${History} versions=${versions} />
    ${confirming ? html`<${Confirm} title="Delete this memory?" confirmLabel="Delete"
        message=${`"${memory.content.slice(0, 120)}" is forgotten for good; facts induced from it lose it.`}
        onConfirm=${remove} onCancel=${() => setConfirming(false)} />` : null}
  </div>`;
}

// --- search with recall's explain trace ---------------------------------------------------------------------

// Where each result's score came from: its keyword and vector shares of the fused score (min-max normalised, weighed
// as the parse stage says), then the ranking factors that turned the fused score into the final one.
export function scoreBreakdown(response) {
  const stages = Object.fromEntries((response.trace ? response.trace.stages : []).map((s) => [s.stage, s]));
  const weights = (stages.parse && stages.parse.detail.weights) || { keyword: 0.5, vector: 0.5 };
  const normalised = (stage) => {
    const candidates = stage ? stage.candidates : [];
    const scores = candidates.map((c) => c.score);
    const low = Math.min(...scores);
    const high = Math.max(...scores);
    return Object.fromEntries(candidates.map((c) => [c.id, high > low ? (c.score - low) / (high - low) : 1]));
  };
  const keyword = normalised(stages.keyword);
  const vector = normalised(stages.vector);
  const ranked = Object.fromEntries(((stages.rank && stages.rank.candidates) || []).map((c) => [c.id, c]));
  return response.results.map((hit) => ({
    id: hit.id,
    keyword: (keyword[hit.id] || 0) * weights.keyword,
    vector: (vector[hit.id] || 0) * weights.vector,
    factors: ranked[hit.id] || {},
    score: hit.score,
  }));
}

function ScoreChart({ part, best }) {
  const width = 240;
  const scale = (value) => Math.max(0, Math.min(width, value * width));
  const kw = scale(part.keyword);
  const vec = scale(part.vector);
  const final = scale(best > 0 ? part.score / best : 0);
  return html`<svg width=${width + 70} height="34" role="img" data-testid="score-chart"
      aria-label=${`keyword ${part.keyword.toFixed(2)}, vector ${part.vector.toFixed(2)}, score ${part.score.toFixed(3)}`}>
    <rect class="track" x="0" y="2" width=${width} height="12" />
    <rect class="keyword" x="0" y="2" width=${kw} height="12" />
    <rect class="vector" x=${kw} y="2" width=${vec} height="12" />
    <text x=${width + 6} y="12">fused</text>
    <rect class="track" x="0" y="20" width=${width} height="10" />
    <rect class="final" x="0" y="20" width=${final} height="10" />
    <text x=${width + 6} y="29">${part.score.toFixed(3)}</text>
  </svg>`;
}

function Factors({ factors }) {
  const shown = ["decay", "boost", "length", "session"].filter((name) => factors[name] !== undefined);
  if (!shown.length) return null;
  return html`<div class="meta">${shown.map((name) => html`<span>${name} ×${Number(factors[name]).toFixed(2)}</span>`)}</div>`;
}

function StageTable({ trace }) {
  const slowest = Math.max(...trace.stages.map((s) => s.millis), 0.001);
  const summary = (detail) =>
    Object.entries(detail).filter(([, v]) => v !== null && typeof v !== "object").map(([k, v]) => `${k}: ${v}`).join(" · ");
  return html`<table class="stages" data-testid="stages">
    <thead><tr><th>stage</th><th>time</th><th>candidates</th><th>what it did</th></tr></thead>
    <tbody>${trace.stages.map((s) => html`<tr data-testid="stage">
      <td>${s.stage}</td>
      <td><svg width="60" height="8"><rect class="vector" x="0" y="0" width=${Math.max(1, (s.millis / slowest) * 60)} height="8" /></svg>
        ${s.millis.toFixed(1)} ms</td>
      <td>${s.candidates.length || ""}</td>
      <td>${summary(s.detail)}</td>
    </tr>`)}</tbody>
  </table>`;
}

function Search({ client, namespace, onOpen }) {
  const [query, setQuery] = useState("");
  const [response, setResponse] = useState(null);
  const [error, setError] = useState(null);
  const run = async (event) => {
    event.preventDefault();
    setError(null);
    try {
      setResponse(await client.recall(namespace, query));
    } catch (err) {
      setError(err);
    }
  };
  const parts = response ? scoreBreakdown(response) : [];
  const best = Math.max(...parts.map((p) => p.score), 0);
  return html`<div>
    <form class="filters" onSubmit=${run}>
      <label>Ask what the agent would ask<input data-testid="search-input" size="50" value=${query}
        onInput=${(e) => setQuery(e.target.value)} /></label>
      <button class="primary" data-testid="search-go" type="submit" disabled=${!query.trim()}>Search</button>
    </form>
    <${ErrorLine} error=${error} />
    ${response ? html`<div data-testid="search-results">
      ${response.no_relevant_memory ? html`<div class="notice" data-testid="no-relevant">No relevant memory.</div>` : null}
      <div class="legend"><span><span class="swatch keyword"></span>keyword (BM25)</span>
        <span><span class="swatch vector"></span>vector (cosine)</span><span>green: final score after ranking</span></div>
      ${response.results.map((hit, i) => html`<div class="result" data-testid="result" data-id=${hit.id}>
        <div><button class="link" onClick=${() => onOpen(hit.id)}>${hit.content}</button></div>
        <div class="meta"><span>${hit.layer}</span><span>${when(hit.occurred_at)}</span>
          ${hit.kind ? html`<span class=${`badge ${hit.kind}`}>${hit.kind}</span>` : null}</div>
        <${ScoreChart} part=${parts[i]} best=${best} />
        <${Factors} factors=${parts[i].factors} />
      </div>`)}
      ${response.trace ? html`<h4>How recall got there</h4><${StageTable} trace=${response.trace} />` : null}
    </div>` : null}
  </div>`;
}

// --- the page -----------------------------------------------------------------------------------------------

function KeyBar({ apiKey, onKey, namespace, onNamespace, namespaces, onExport }) {
  const [draft, setDraft] = useState(apiKey);
  const [nsDraft, setNsDraft] = useState(namespace);
  useEffect(() => setNsDraft(namespace), [namespace]);
  return html`<header>
    <h1>Rearview inspector</h1>
    <label>API key<input type="password" data-testid="api-key" placeholder="rv_… (none in open mode)" value=${draft}
      onInput=${(e) => setDraft(e.target.value)} onChange=${() => onKey(draft.trim())} /></label>
    <label>namespace
      <input list="namespaces" data-testid="namespace" value=${nsDraft} onInput=${(e) => setNsDraft(e.target.value)}
        onChange=${() => onNamespace(nsDraft.trim())} />
      <datalist id="namespaces">${namespaces.map((n) => html`<option value=${n.namespace}>${n.episodic} episodes, ${n.semantic} facts</option>`)}</datalist>
    </label>
    <button data-testid="open" onClick=${() => { onKey(draft.trim()); onNamespace(nsDraft.trim()); }}>Open</button>
    <button data-testid="export" disabled=${!namespace} onClick=${onExport}>Export</button>
  </header>`;
}

function App() {
  const [apiKey, setApiKey] = useState(sessionStorage.getItem(KEY_STORE) || "");
  const [namespace, setNamespace] = useState(sessionStorage.getItem(NS_STORE) || "");
  const [namespaces, setNamespaces] = useState([]);
  const [tab, setTab] = useState("timeline");
  const [selected, setSelected] = useState(null);
  const [refresh, setRefresh] = useState(0);
  const [message, setMessage] = useState(null);
  const [error, setError] = useState(null);
  const client = useMemo(() => api(apiKey), [apiKey]);

  // A new key's answer replaces the last key's error; an answer that comes back after the key changed again is
  // dropped, so a slow answer for an older key (the page's first, keyless request) never shows over a newer one.
  useEffect(() => {
    sessionStorage.setItem(KEY_STORE, apiKey);
    let current = true;
    setError(null);
    client.namespaces().then((found) => {
      if (!current) return;
      setNamespaces(found);
      if (!namespace && found.length) setNamespace(found[0].namespace);
    }).catch((err) => { if (current) setError(err); });
    return () => { current = false; };
  }, [apiKey]);
  useEffect(() => { sessionStorage.setItem(NS_STORE, namespace); setSelected(null); }, [namespace]);

  const exportNamespace = async () => {
    try {
      const text = await client.exportText(namespace);
      const link = document.createElement("a");
      link.href = URL.createObjectURL(new Blob([text], { type: "application/x-ndjson" }));
      link.download = `${namespace.replace(/:/g, "_")}.ndjson`;
      link.click();
      setMessage(`Exported ${text.split("\n").filter(Boolean).length} memories.`);
    } catch (err) {
      setError(err);
    }
  };
  const tabs = [["timeline", "Episodes"], ["knowledge", "Facts, preferences, lessons"], ["search", "Search"]];
  const close = (note) => { setSelected(null); setMessage(note); };
  return html`<div>
    <${KeyBar} apiKey=${apiKey} onKey=${setApiKey} namespace=${namespace} onNamespace=${setNamespace}
      namespaces=${namespaces} onExport=${exportNamespace} />
    <nav>${tabs.map(([name, label]) => html`<button class=${tab === name ? "active" : ""} data-testid=${`tab-${name}`}
      onClick=${() => setTab(name)}>${label}</button>`)}</nav>
    <${ErrorLine} error=${error} />
    ${message ? html`<div class="notice" data-testid="message">${message}</div>` : null}
    ${namespace ? html`<main class=${selected ? "" : "single"}>
      <section class="view">
        ${tab === "timeline" ? html`<${MemoryList} client=${client} namespace=${namespace} layer="episodic" selected=${selected}
          onOpen=${setSelected} refresh=${refresh} />` : null}
        ${tab === "knowledge" ? html`<${MemoryList} client=${client} namespace=${namespace} layer="semantic" selected=${selected}
          onOpen=${setSelected} refresh=${refresh} />` : null}
        ${tab === "search" ? html`<${Search} client=${client} namespace=${namespace} onOpen=${setSelected} />` : null}
      </section>
      ${selected ? html`<aside><${Detail} client=${client} namespace=${namespace} id=${selected} onOpen=${setSelected}
        onChanged=${() => setRefresh(refresh + 1)} onClose=${close} /></aside>` : null}
    </main>` : html`<div class="empty view">Enter a namespace (and an API key unless the server is open) to look inside.</div>`}
  </div>`;
}

render(html`<${App} />`, document.getElementById("app"));
