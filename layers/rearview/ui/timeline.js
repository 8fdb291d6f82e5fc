// The episodes as a person reads them: by day, then by session (conversation or task), each with how it went, and
// what was learnt from it; a text filter and the counts of a big namespace. Also the list of what was learnt.
import { html, useState } from "/ui/vendor-preact-htm.js";
import { useLearnedFrom, useMemoryPages } from "/ui/memory_pages.js";
import {
  ConfidenceBar, ErrorLine, KindBadge, OutcomeMark, clock, dayOf, dayTitle, number, plural, timeOf, when,
} from "/ui/widgets.js";

// Consecutive episodes (newest first) grouped by UTC day, and within a day by session, sessions in the order of
// their latest episode. Episodes without a session form a group of their own.
export function groupByDayAndSession(episodes) {
  const days = [];
  for (const episode of episodes) {
    const day = dayOf(episode.occurred_at);
    let group = days[days.length - 1];
    if (!group || group.day !== day) {
      group = { day, sessions: new Map() };
      days.push(group);
    }
    const session = episode.session_id || "";
    if (!group.sessions.has(session)) group.sessions.set(session, []);
    group.sessions.get(session).push(episode);
  }
  return days.map(({ day, sessions }) => ({ day, sessions: [...sessions].map(([id, items]) => ({ id, items })) }));
}

function Filters({ filters, onChange, fields }) {
  const [draft, setDraft] = useState(filters.text);
  const set = (name) => (event) =>
    onChange({ ...filters, [name]: event.target.type === "checkbox" ? event.target.checked : event.target.value });
  return html`<div class="filters">
    <form class="text-filter" onSubmit=${(e) => { e.preventDefault(); onChange({ ...filters, text: draft.trim() }); }}>
      <label>Filter by text<input type="search" data-testid="filter-text" value=${draft} placeholder="words in the text, a tag, a name"
        onInput=${(e) => setDraft(e.target.value)} onChange=${(e) => onChange({ ...filters, text: e.target.value.trim() })} /></label>
    </form>
    <details class="more-filters"><summary>More filters</summary><div>
    ${fields.includes("event_type") ? html`<label>event type<input data-testid="filter-event-type" value=${filters.event_type}
      onChange=${set("event_type")} /></label>` : null}
    ${fields.includes("kind") ? html`<label>kind<select data-testid="filter-kind" value=${filters.kind} onChange=${set("kind")}>
      <option value="">any</option><option>preference</option><option>fact</option><option>lesson</option></select></label>` : null}
    ${fields.includes("kind") ? html`<label class="check"><input type="checkbox" checked=${filters.include_superseded}
      onChange=${set("include_superseded")} /> replaced ones too</label>` : null}
    <label>tag<input data-testid="filter-tag" value=${filters.tag} onChange=${set("tag")} /></label>
    <label>since<input type="date" value=${filters.since} onChange=${set("since")} /></label>
    <label>until<input type="date" value=${filters.until} onChange=${set("until")} /></label>
    </div></details>
  </div>`;
}

function query(layer, filters) {
  const q = { layer, tag: filters.tag, text: filters.text || undefined,
    since: filters.since && `${filters.since}T00:00:00Z`, until: filters.until && `${filters.until}T00:00:00Z` };
  if (layer === "episodic") q.event_type = filters.event_type;
  else { q.kind = filters.kind; q.include_superseded = filters.include_superseded || undefined; }
  return q;
}

// "Showing 50 of 1,600 episodes", or with a text filter "12 episodes hold “harbour”, in the 2,000 read of 1,600".
function Counts({ pages, total, noun, text }) {
  const [one, many] = noun;
  const shown = pages.items.length;
  let words;
  if (text) {
    const read = total !== undefined ? `${number(pages.scanned)} of ${number(total)}` : number(pages.scanned);
    words = `${plural(shown, one, many)} hold “${text}”, in the ${read} read${pages.cursor ? " so far" : ""}`;
  } else if (total !== undefined) {
    words = `Showing ${number(shown)} of ${plural(total, one, many)}`;
  } else {
    words = `Showing ${plural(shown, one, many)}${pages.cursor ? " so far" : ""}`;
  }
  return html`<div class="counts" data-testid="counts">${words}</div>`;
}

function MoreButton({ pages, text }) {
  if (!pages.cursor) return null;
  return html`<button data-testid="more" disabled=${pages.loading} onClick=${pages.more}>
    ${text ? "Read further" : "Load more"}</button>`;
}

function Taught({ learned, onOpen }) {
  if (!learned || !learned.length) return null;
  return html`<div class="taught" data-testid="taught">
    <span class="taught-label">taught</span>
    ${learned.map((m) => html`<button class="chip" data-testid="taught-link" data-id=${m.id} title=${m.content}
      onClick=${(e) => { e.stopPropagation(); onOpen(m.id); }}><${KindBadge} kind=${m.kind} /> ${m.content}</button>`)}
  </div>`;
}

function EpisodeRow({ episode, selected, learned, onOpen }) {
  return html`<li class=${selected ? "selected" : ""} data-testid="memory" data-id=${episode.id} onClick=${() => onOpen(episode.id)}>
    <span class="time">${clock(episode.occurred_at)}</span>
    <span class="mark"><${OutcomeMark} status=${episode.outcome_status} outcome=${episode.outcome} /></span>
    <div class="body">
      <div class="content">${episode.content}</div>
      <div class="meta">
        ${episode.event_type ? html`<span class="badge">${episode.event_type}</span>` : null}
        ${episode.entities.map((e) => html`<span>@${e}</span>`)}
        ${episode.tags.map((t) => html`<span class="badge">#${t}</span>`)}
        ${episode.outcome ? html`<span>${episode.outcome}</span>` : null}
      </div>
      <${Taught} learned=${learned} onOpen=${onOpen} />
    </div>
  </li>`;
}

function SessionGroup({ session, selected, learnedFrom, onOpen }) {
  const { id, items } = session;
  const failed = items.filter((e) => e.outcome_status === "failure").length;
  const taught = items.filter((e) => learnedFrom.has(e.id)).length;
  const span = items.length > 1 ? `${clock(items[items.length - 1].occurred_at)}–${clock(items[0].occurred_at)}` : clock(items[0].occurred_at);
  return html`<section class="session" data-testid="session" data-session=${id}>
    <h4><span>${id ? `Session ${id}` : "Outside any session"}</span>
      <span class="meta">${plural(items.length, "episode")} · ${span}${failed ? ` · ${failed} failed` : ""}${taught ? ` · ${taught} taught something` : ""}</span></h4>
    <ul class="memories">${items.map((e) => html`<${EpisodeRow} key=${e.id} episode=${e} selected=${e.id === selected}
      learned=${learnedFrom.get(e.id)} onOpen=${onOpen} />`)}</ul>
  </section>`;
}

export function Timeline({ client, namespace, total, selected, onOpen, refresh }) {
  const [filters, setFilters] = useState({ text: "", tag: "", event_type: "", since: "", until: "" });
  const pages = useMemoryPages(client, namespace, query("episodic", filters), refresh);
  const learned = useLearnedFrom(client, namespace, refresh);
  const days = groupByDayAndSession(pages.items);
  return html`<div data-testid="timeline">
    <${Filters} filters=${filters} onChange=${setFilters} fields=${["event_type"]} />
    <${ErrorLine} error=${pages.error} />
    ${pages.error ? null : html`<${Counts} pages=${pages} total=${filters.tag || filters.event_type || filters.since || filters.until ? undefined : total} noun=${["episode", "episodes"]} text=${filters.text} />`}
    ${pages.items.length === 0 && !pages.loading && !pages.error ? html`<div class="empty">No episode here${filters.text ? " holds that text" : " yet"}.</div>` : null}
    ${days.map((day) => html`<section class="day" data-testid="day" data-day=${day.day}>
      <h3>${dayTitle(day.day)}</h3>
      ${day.sessions.map((s) => html`<${SessionGroup} key=${s.id} session=${s} selected=${selected} learnedFrom=${learned.byEpisode} onOpen=${onOpen} />`)}
    </section>`)}
    <${MoreButton} pages=${pages} text=${filters.text} />
  </div>`;
}

function KnowledgeRow({ memory, selected, onOpen }) {
  return html`<li class=${selected ? "selected" : ""} data-testid="memory" data-id=${memory.id} onClick=${() => onOpen(memory.id)}>
    <div class="body">
      <div class="content">${memory.content}</div>
      <div class="meta">
        <${KindBadge} kind=${memory.kind} />
        <span class="confidence"><${ConfidenceBar} value=${memory.confidence} /> ${memory.confidence.toFixed(2)}</span>
        ${memory.status === "superseded" ? html`<span class="badge superseded">replaced</span>` : null}
        <span title="last confirmed">${when(timeOf(memory))}</span>
        ${memory.provenance.length ? html`<span>learnt from ${plural(memory.provenance.length, "episode")}</span>` : html`<span>written directly</span>`}
        ${memory.tags.map((t) => html`<span class="badge">#${t}</span>`)}
      </div>
    </div>
  </li>`;
}

export function Knowledge({ client, namespace, total, selected, onOpen, refresh }) {
  const [filters, setFilters] = useState({ text: "", tag: "", kind: "", since: "", until: "", include_superseded: false });
  const pages = useMemoryPages(client, namespace, query("semantic", filters), refresh);
  const filtered = filters.tag || filters.kind || filters.since || filters.until || filters.include_superseded;
  return html`<div data-testid="knowledge">
    <p class="lead">What the agent has learnt: preferences, facts and lessons, each with how sure it is and the episodes it
      was learnt from.</p>
    <${Filters} filters=${filters} onChange=${setFilters} fields=${["kind"]} />
    <${ErrorLine} error=${pages.error} />
    ${pages.error ? null : html`<${Counts} pages=${pages} total=${filtered ? undefined : total} noun=${["learnt memory", "learnt memories"]} text=${filters.text} />`}
    ${pages.items.length === 0 && !pages.loading && !pages.error ? html`<div class="empty">Nothing learnt here yet: consolidation turns repeated episodes into preferences, facts and lessons.</div>` : null}
    <ul class="memories">${pages.items.map((m) => html`<${KnowledgeRow} key=${m.id} memory=${m} selected=${m.id === selected} onOpen=${onOpen} />`)}</ul>
    <${MoreButton} pages=${pages} text=${filters.text} />
  </div>`;
}
