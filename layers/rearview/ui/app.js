// The Rearview inspector: one page over the HTTP API, with Preact and htm (vendor-preact-htm.js, shipped beside
// this file; no build step, no CDN). The API key the user enters lives in this tab only (sessionStorage).
//
// The views: the episodes as a timeline (timeline.js), what was learnt (timeline.js), search as the agent would
// (search.js), the namespace's statistics (stats.js), and one memory beside them (detail.js). Every view belongs to
// one namespace and one key: a new namespace or key starts each from nothing, and a memory opened in one namespace
// is never asked for in another.
import { html, render, useEffect, useMemo, useRef, useState } from "/ui/vendor-preact-htm.js";
import { api } from "/ui/api.js";
import { Detail } from "/ui/detail.js";
import { Search } from "/ui/search.js";
import { StatsPage } from "/ui/stats.js";
import { Knowledge, Timeline } from "/ui/timeline.js";
import { ErrorLine, number } from "/ui/widgets.js";

const KEY_STORE = "rearview.key";
const NS_STORE = "rearview.namespace";
const TABS = [["timeline", "Episodes"], ["knowledge", "What it learnt"], ["search", "Search"], ["stats", "Stats"]];

function KeyBar({ apiKey, onKey, namespace, onNamespace, namespaces, onExport }) {
  const [draft, keyField] = useDraft(apiKey);
  const [nsDraft, nsField] = useDraft(namespace);
  return html`<header>
    <h1>Rearview inspector</h1>
    <label>API key<input type="password" data-testid="api-key" placeholder="rv_… (none in open mode)" ...${keyField}
      onChange=${() => onKey(draft.trim())} /></label>
    <label>namespace
      <input list="namespaces" data-testid="namespace" ...${nsField} onChange=${() => onNamespace(nsDraft.trim())} />
      <datalist id="namespaces">${namespaces.map((n) => html`<option value=${n.namespace}>${number(n.episodic)} episodes, ${number(n.semantic)} learnt</option>`)}</datalist>
    </label>
    <button data-testid="open" onClick=${() => { onKey(draft.trim()); onNamespace(nsDraft.trim()); }}>Open</button>
    <button data-testid="export" disabled=${!namespace} onClick=${onExport}>Export</button>
  </header>`;
}

// A field's text, and the props that keep it: it follows `value` when that is set elsewhere (the key prompt, the
// first namespace offered), except while the user is in the field, where what they type stays theirs; a field left
// without typing shows `value` again.
function useDraft(value) {
  const [draft, setDraft] = useState(value);
  const input = useRef(null);
  const latest = useRef(value);
  const typed = useRef(false);
  useEffect(() => {
    if (latest.current !== value && document.activeElement !== input.current) setDraft(value);
    latest.current = value;
  }, [value]);
  return [draft, {
    ref: input,
    value: draft,
    onFocus: () => { typed.current = false; },
    onInput: (e) => { typed.current = true; setDraft(e.target.value); },
    onBlur: () => { if (!typed.current) setDraft(latest.current); },
  }];
}

// The first thing a server with API keys shows: a prompt for one, not an error.
function KeyPrompt({ onKey }) {
  const [draft, setDraft] = useState("");
  return html`<section class="prompt" data-testid="key-prompt">
    <h2>This server asks for an API key</h2>
    <p>Paste a key to look inside the namespaces it may read. It stays in this tab and goes to this server only.</p>
    <p class="meta">No key yet? On the server: <code>rearview keys create NAMESPACE --permissions read</code>.</p>
    <form class="row" onSubmit=${(e) => { e.preventDefault(); onKey(draft.trim()); }}>
      <input type="password" data-testid="key-prompt-input" placeholder="rv_…" value=${draft} autofocus
        onInput=${(e) => setDraft(e.target.value)} />
      <button class="primary" type="submit" disabled=${!draft.trim()}>Use this key</button>
    </form>
  </section>`;
}

function View({ tab, client, namespace, totals, selected, onOpen, refresh }) {
  const shared = { client, namespace, selected, onOpen, refresh };
  if (tab === "knowledge") return html`<${Knowledge} ...${shared} total=${totals && totals.semantic} />`;
  if (tab === "search") return html`<${Search} client=${client} namespace=${namespace} onOpen=${onOpen} />`;
  if (tab === "stats") return html`<${StatsPage} client=${client} namespace=${namespace} refresh=${refresh} />`;
  return html`<${Timeline} ...${shared} total=${totals && totals.episodic} />`;
}

function App() {
  const [apiKey, setApiKey] = useState(sessionStorage.getItem(KEY_STORE) || "");
  const [namespace, setNamespace] = useState(sessionStorage.getItem(NS_STORE) || "");
  const [namespaces, setNamespaces] = useState([]);
  // checking | open (answers without a key) | needed (asks for one, none given) | ok | refused
  const [access, setAccess] = useState("checking");
  const [tab, setTab] = useState("timeline");
  // The memory open beside the view, and the namespace it belongs to.
  const [selection, setSelection] = useState(null);
  const [refresh, setRefresh] = useState(0);
  const [message, setMessage] = useState(null);
  const [error, setError] = useState(null);
  const client = useMemo(() => api(apiKey), [apiKey]);

  // A new key's answer replaces the last key's; an answer that comes back after the key changed again is dropped,
  // so a slow answer for an older key (the page's first, keyless request) never shows over a newer one.
  useEffect(() => {
    sessionStorage.setItem(KEY_STORE, apiKey);
    let current = true;
    setError(null);
    setAccess("checking");
    client.namespaces().then((found) => {
      if (!current) return;
      setNamespaces(found);
      setAccess(apiKey ? "ok" : "open");
      if (!namespace && found.length) setNamespace(found[0].namespace);
    }).catch((err) => {
      if (!current) return;
      setNamespaces([]);
      if (err.status === 401 && !apiKey) { setAccess("needed"); return; }
      setAccess(err.status === 401 ? "refused" : "ok");
      setError(err);
    });
    return () => { current = false; };
  }, [apiKey]);
  useEffect(() => { sessionStorage.setItem(NS_STORE, namespace); setSelection(null); setMessage(null); }, [namespace]);

  const open = (id) => setSelection({ namespace, id });
  const selected = selection && selection.namespace === namespace ? selection.id : null;
  const close = (note) => { setSelection(null); setMessage(note); };
  const exportNamespace = async () => {
    try {
      const text = await client.exportText(namespace);
      const link = document.createElement("a");
      link.href = URL.createObjectURL(new Blob([text], { type: "application/x-ndjson" }));
      link.download = `${namespace.replace(/:/g, "_")}.ndjson`;
      link.click();
      setMessage(`Exported ${number(text.split("\n").filter(Boolean).length)} memories.`);
    } catch (err) {
      setError(err);
    }
  };
  const totals = namespaces.find((n) => n.namespace === namespace);
  const ready = access === "ok" || access === "open";
  return html`<div class="page">
    <${KeyBar} apiKey=${apiKey} onKey=${setApiKey} namespace=${namespace} onNamespace=${setNamespace}
      namespaces=${namespaces} onExport=${exportNamespace} />
    ${access === "needed" ? html`<${KeyPrompt} onKey=${setApiKey} />` : null}
    <${ErrorLine} error=${error} />
    ${ready ? html`<nav>${TABS.map(([name, label]) => html`<button class=${tab === name ? "active" : ""} data-testid=${`tab-${name}`}
      onClick=${() => setTab(name)}>${label}</button>`)}</nav>` : null}
    ${message ? html`<div class="notice" data-testid="message">${message}</div>` : null}
    ${ready && namespace ? html`<main class=${selected ? "with-detail" : ""}>
      <section class="view" data-testid="view">
        <${View} key=${`${apiKey}|${namespace}|${tab}`} tab=${tab} client=${client} namespace=${namespace} totals=${totals}
          selected=${selected} onOpen=${open} refresh=${refresh} />
      </section>
      ${selected ? html`<aside class="detail-pane" data-testid="detail-pane"><${Detail} key=${`${namespace}|${selected}`} client=${client}
        namespace=${namespace} id=${selected} onOpen=${open} onChanged=${() => setRefresh(refresh + 1)} onClose=${close} /></aside>` : null}
    </main>` : null}
    ${ready && !namespace ? html`<div class="empty view">Enter a namespace to look inside${namespaces.length ? "" : ": this key sees none holding memory yet"}.</div>` : null}
  </div>`;
}

render(html`<${App} />`, document.getElementById("app"));
