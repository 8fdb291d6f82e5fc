// One memory: what it says and is; for a learnt memory, the episodes it was learnt from (their text inline); for an
// episode, what was learnt from it; its history; edit and delete.
import { html, useCallback, useEffect, useState } from "/ui/vendor-preact-htm.js";
import { ConfidenceBar, Confirm, ErrorLine, KindBadge, OutcomeMark, plural, timeOf, when } from "/ui/widgets.js";

function History({ versions }) {
  if (!versions.length) return html`<p class="meta" data-testid="history">Never changed since it was written.</p>`;
  return html`<ol class="history" data-testid="history">
    ${versions.map((v) => html`<li>
      <div class="meta">
        <span>${when(v.changed_at)}</span>
        <span class="badge">${v.relation === "superseded" ? "replaced memory" : `version ${v.version}`}</span>
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

// The episodes a learnt memory rests on, each with what it said, when and how it went.
function LearntFrom({ sources, count, onOpen }) {
  if (!count) return html`<p class="meta">Written directly, not learnt from episodes.</p>`;
  const gone = count - sources.length;
  return html`<ol class="sources" data-testid="sources">
    ${sources.map((s) => html`<li data-testid="source" data-id=${s.id}>
      <div class="meta"><${OutcomeMark} status=${s.outcome_status} outcome=${s.outcome} /><span>${when(s.occurred_at)}</span>
        ${s.session_id ? html`<span>session ${s.session_id}</span>` : null}
        <button class="link" data-testid="provenance-link" onClick=${() => onOpen(s.id)}>open</button></div>
      <div>${s.content}</div>
    </li>`)}
    ${gone > 0 ? html`<li class="meta">${plural(gone, "source")} forgotten since.</li>` : null}
  </ol>`;
}

// What was learnt from an episode.
function Fed({ fed, onOpen }) {
  if (!fed.length) return html`<p class="meta" data-testid="fed">Nothing learnt from it yet.</p>`;
  return html`<ul class="fed" data-testid="fed">
    ${fed.map((m) => html`<li>
      <button class="link" data-testid="fed-link" data-id=${m.id} onClick=${() => onOpen(m.id)}>${m.content}</button>
      <div class="meta"><${KindBadge} kind=${m.kind} /><span>confidence ${m.confidence.toFixed(2)}</span>
        ${m.status === "superseded" ? html`<span class="badge superseded">replaced</span>` : null}</div>
    </li>`)}
  </ul>`;
}

function Fields({ memory, onOpen }) {
  const fact = memory.layer === "semantic";
  return html`<dl class="fields">
    <dt>${fact ? "last confirmed" : "when"}</dt><dd>${when(timeOf(memory))}</dd>
    ${fact ? html`<dt>confidence</dt><dd><${ConfidenceBar} value=${memory.confidence} /> ${memory.confidence.toFixed(2)}</dd>
      <dt>status</dt><dd>${memory.status === "superseded" ? "replaced" : "active"}${memory.superseded_by ? html` by <button class="link" onClick=${() => onOpen(memory.superseded_by)}>${memory.superseded_by}</button>` : null}</dd>
      ${memory.dimension ? html`<dt>about</dt><dd>${memory.dimension}</dd>` : null}`
    : html`<dt>outcome</dt><dd><${OutcomeMark} status=${memory.outcome_status} outcome=${memory.outcome} /> ${memory.outcome || memory.outcome_status || "-"}</dd>
      <dt>session</dt><dd>${memory.session_id || "-"}</dd>
      ${memory.event_type ? html`<dt>event type</dt><dd>${memory.event_type}</dd>` : null}
      ${memory.entities.length ? html`<dt>about</dt><dd>${memory.entities.join(", ")}</dd>` : null}`}
    ${memory.tags.length ? html`<dt>tags</dt><dd>${memory.tags.join(", ")}</dd>` : null}
    <dt>importance</dt><dd>${memory.importance.toFixed(2)}</dd>
    ${memory.redacted ? html`<dt>redacted</dt><dd>secrets were taken out when it was written</dd>` : null}
    <dt>id</dt><dd class="id">${memory.id}</dd>
  </dl>`;
}

export function Detail({ client, namespace, id, onOpen, onChanged, onClose }) {
  const [found, setFound] = useState(null);
  const [editing, setEditing] = useState(false);
  const [confirming, setConfirming] = useState(false);
  const [error, setError] = useState(null);
  const [notice, setNotice] = useState(null);

  const load = useCallback(async () => {
    setError(null);
    try {
      const [memory, versions, sources] = await Promise.all([
        client.get(namespace, id), client.history(namespace, id), client.sources(namespace, id),
      ]);
      setFound({ memory, versions, sources });
    } catch (err) {
      setError(err);
      setFound(null);
    }
  }, [client, namespace, id]);
  useEffect(() => { setFound(null); setEditing(false); setNotice(null); load(); }, [load]);

  const save = async (changes) => {
    if (Object.keys(changes).length === 0) { setEditing(false); return; }
    try {
      const saved = await client.edit(namespace, id, changes, found.memory.version);
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

  const close = html`<button data-testid="close" onClick=${() => onClose(null)}>Close</button>`;
  if (!found) return html`<div class="detail" data-testid="detail-loading"><div class="row"><span class="grow"></span>${close}</div>
    <${ErrorLine} error=${error} /></div>`;
  const { memory, versions, sources } = found;
  const fact = memory.layer === "semantic";
  return html`<div class="detail" data-testid="detail" data-id=${memory.id}>
    <div class="row">${fact ? html`<${KindBadge} kind=${memory.kind} />` : html`<strong>Episode</strong>`}
      <span class="grow"></span>${close}</div>
    <${ErrorLine} error=${error} />
    ${notice ? html`<div class="notice" data-testid="notice">${notice}</div>` : null}
    ${editing
      ? html`<${EditForm} memory=${memory} onSave=${save} onCancel=${() => setEditing(false)} />`
      : html`<p class="detail-content" data-testid="detail-content">${memory.content}</p>`}
    <${Fields} memory=${memory} onOpen=${onOpen} />
    ${fact ? html`<h4>Learnt from</h4><${LearntFrom} sources=${sources.sources} count=${memory.provenance.length} onOpen=${onOpen} />`
      : html`<h4>What was learnt from it</h4><${Fed} fed=${sources.fed} onOpen=${onOpen} />`}
    ${editing ? null : html`<div class="row">
      <button data-testid="edit" onClick=${() => setEditing(true)}>Edit</button>
      <button class="danger" data-testid="delete" onClick=${() => setConfirming(true)}>Delete</button>
    </div>`}
    <h4>History</h4>
    <${History} versions=${versions} />
    ${confirming ? html`<${Confirm} title="Delete this memory?" confirmLabel="Delete"
        message=${`"${memory.content.slice(0, 120)}" is forgotten for good; what was learnt from it loses it.`}
        onConfirm=${remove} onCancel=${() => setConfirming(false)} />` : null}
  </div>`;
}
