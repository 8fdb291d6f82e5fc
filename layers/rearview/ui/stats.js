// A namespace at a glance, as small charts: recalls and how often they found something, day by day; what
// consolidation learnt and when; its runs (why each ran, how long, the caps it hit, the model tokens); and the
// feedback agents gave on what they were handed, with how much of it was adopted.
import { html, useEffect, useState } from "/ui/vendor-preact-htm.js";
import { ErrorLine, dayOf, number, plural, when } from "/ui/widgets.js";

const DAYS = 30;
// Runs asked for: enough for a month of the schedule's daily runs and the triggers' between them.
const RUNS = 60;
const KINDS = ["preference", "fact", "lesson"];
const REASONS = {
  manual: "asked for",
  count: "many new episodes",
  failure_streak: "a streak of failures",
  session_end: "a session ended",
  schedule: "the schedule",
};

// The last `DAYS` UTC days up to `today`, oldest first.
export function lastDays(today, count = DAYS) {
  const end = new Date(`${today}T00:00:00Z`);
  return Array.from({ length: count }, (_, i) => new Date(end.getTime() - (count - 1 - i) * 86400000).toISOString().slice(0, 10));
}

const height = (value, top) => `${top > 0 ? Math.max(value > 0 ? 3 : 0, Math.round((value / top) * 100)) : 0}%`;
// A run is drawn however short it was (a run of a few milliseconds is still a run).
const runHeight = (value, top) => `${Math.max(4, Math.round((value / top) * 100))}%`;

function Columns({ testid, columns, caption, legend }) {
  return html`<figure class="chart" data-testid=${testid}>
    <div class="columns">${columns.map((c) => html`<div class="column" data-testid="column" title=${c.title} aria-label=${c.title}>
      ${c.parts.map((p) => html`<span class=${`part ${p.kind}`} style=${{ height: p.height }}></span>`)}
    </div>`)}</div>
    <div class="axis"><span>${columns.length ? columns[0].label : ""}</span><span>${columns.length ? columns[columns.length - 1].label : ""}</span></div>
    ${legend ? html`<div class="legend">${legend.map(([kind, words]) => html`<span><span class=${`swatch ${kind}`}></span>${words}</span>`)}</div>` : null}
    <figcaption>${caption}</figcaption>
  </figure>`;
}

function RecallChart({ stats, today }) {
  const byDay = Object.fromEntries((stats.recalls_by_day || []).map((d) => [d.day, d]));
  const days = lastDays(today);
  const top = Math.max(1, ...days.map((d) => (byDay[d] ? byDay[d].recalls : 0)));
  const columns = days.map((day) => {
    const { recalls = 0, hits = 0 } = byDay[day] || {};
    const rate = recalls ? ` (${Math.round((hits / recalls) * 100)}% found something)` : "";
    return {
      label: day.slice(5),
      title: `${day}: ${plural(recalls, "recall")}, ${number(hits)} found something${rate}`,
      parts: [{ kind: "miss", height: height(recalls - hits, top) }, { kind: "hit", height: height(hits, top) }],
    };
  });
  const recalls = days.reduce((n, d) => n + (byDay[d] ? byDay[d].recalls : 0), 0);
  const hits = days.reduce((n, d) => n + (byDay[d] ? byDay[d].hits : 0), 0);
  const caption = recalls
    ? `${plural(recalls, "recall")} in ${DAYS} days; ${Math.round((hits / recalls) * 100)}% found something (all time: ${stats.hit_rate === null ? "-" : `${Math.round(stats.hit_rate * 100)}%`} of ${number(stats.recall_count)}).`
    : `No recall in the last ${DAYS} days.`;
  return html`<${Columns} testid="recall-chart" columns=${columns} caption=${caption}
    legend=${[["hit", "found something"], ["miss", "found nothing relevant"]]} />`;
}

function LearnedChart({ runs, today }) {
  const byDay = {};
  for (const run of runs) {
    const day = dayOf(run.finished_at);
    byDay[day] = byDay[day] || { preference: 0, fact: 0, lesson: 0, confirmed: 0 };
    for (const kind of KINDS) byDay[day][kind] += (run.induced && run.induced[kind]) || 0;
    byDay[day].confirmed += run.confirmed || 0;
  }
  const days = lastDays(today);
  const total = (d) => (byDay[d] ? KINDS.reduce((n, k) => n + byDay[d][k], 0) + byDay[d].confirmed : 0);
  const top = Math.max(1, ...days.map(total));
  const columns = days.map((day) => {
    const d = byDay[day] || { preference: 0, fact: 0, lesson: 0, confirmed: 0 };
    const learnt = KINDS.filter((k) => d[k]).map((k) => plural(d[k], k)).join(", ") || "nothing new";
    return {
      label: day.slice(5),
      title: `${day}: learnt ${learnt}; confirmed ${number(d.confirmed)}`,
      parts: [{ kind: "confirmed", height: height(d.confirmed, top) }, ...KINDS.map((k) => ({ kind: k, height: height(d[k], top) }))],
    };
  });
  const learnt = KINDS.map((k) => [k, days.reduce((n, d) => n + (byDay[d] ? byDay[d][k] : 0), 0)]);
  const caption = learnt.some(([, n]) => n)
    ? `Learnt in ${DAYS} days: ${learnt.filter(([, n]) => n).map(([k, n]) => plural(n, k)).join(", ")}.`
    : `Nothing new learnt in the last ${DAYS} days.`;
  return html`<${Columns} testid="learned-chart" columns=${columns} caption=${caption}
    legend=${[["preference", "preferences"], ["fact", "facts"], ["lesson", "lessons"], ["confirmed", "confirmed again"]]} />`;
}

function durationMs(run) {
  return Math.max(0, new Date(run.finished_at).getTime() - new Date(run.started_at).getTime());
}

function runTitle(run) {
  const parts = [
    `${when(run.started_at)}`,
    `why: ${REASONS[run.reason] || run.reason}`,
    `${number(durationMs(run))} ms`,
    `${plural(run.clusters, "cluster")} from ${plural(run.new_episodes, "new episode")}`,
  ];
  if (run.clusters_deferred) parts.push(`${run.clusters_deferred} deferred: a cap was hit`);
  if (run.tokens) parts.push(`${number(run.tokens)} model tokens (${run.inducer})`);
  if (run.error) parts.push(`failed: ${run.error}`);
  return parts.join(" · ");
}

function RunsChart({ runs }) {
  const ordered = [...runs].reverse();
  const top = Math.max(1, ...ordered.map(durationMs));
  const columns = ordered.map((run) => ({
    label: when(run.started_at).slice(5),
    title: runTitle(run),
    parts: [{ kind: `reason-${run.reason}${run.error ? " failed" : ""}${run.clusters_deferred ? " capped" : ""}`, height: runHeight(durationMs(run), top) }],
  }));
  const failed = runs.filter((r) => r.error).length;
  const capped = runs.filter((r) => r.clusters_deferred).length;
  const tokens = runs.reduce((n, r) => n + (r.tokens || 0), 0);
  const caption = runs.length
    ? `The last ${plural(runs.length, "run")}, by how long each took: ${failed} failed, ${capped} hit a cap, ${number(tokens)} model tokens.`
    : "Consolidation has not run yet.";
  const reasons = [...new Set(runs.map((r) => r.reason))].map((r) => [`reason-${r}`, REASONS[r] || r]);
  return html`<${Columns} testid="runs-chart" columns=${columns} caption=${caption} legend=${reasons} />`;
}

function FeedbackChart({ feedback }) {
  const kinds = Object.keys(feedback || {}).sort();
  if (!kinds.length) return html`<figure class="chart" data-testid="feedback-chart"><figcaption>No feedback yet: agents say whether a memory helped with the feedback tool.</figcaption></figure>`;
  const top = Math.max(1, ...kinds.map((k) => feedback[k].useful + feedback[k].not_useful + feedback[k].wrong));
  const useful = kinds.reduce((n, k) => n + feedback[k].useful, 0);
  const adopted = kinds.reduce((n, k) => n + feedback[k].adopted, 0);
  return html`<figure class="chart" data-testid="feedback-chart">
    ${kinds.map((k) => {
      const f = feedback[k];
      const width = (n) => `${(n / top) * 100}%`;
      const title = `${k}: ${f.useful} useful (${f.adopted} on what recall or brief had returned), ${f.not_useful} not useful, ${f.wrong} wrong`;
      return html`<div class="hbar" data-testid="feedback-row" title=${title} aria-label=${title}>
        <span class="hbar-label">${k}</span>
        <span class="hbar-track"><span class="part useful" style=${{ width: width(f.useful) }}></span><span class="part not_useful" style=${{ width: width(f.not_useful) }}></span><span class="part wrong" style=${{ width: width(f.wrong) }}></span></span>
        <span class="meta">${f.useful + f.not_useful + f.wrong}</span>
      </div>`;
    })}
    <div class="legend"><span><span class="swatch useful"></span>useful</span><span><span class="swatch not_useful"></span>not useful</span><span><span class="swatch wrong"></span>wrong</span></div>
    <figcaption>${useful ? `${adopted} of ${plural(useful, "useful verdict")} were on memories recall or brief had handed the agent (adopted).` : "No memory was found useful yet."}</figcaption>
  </figure>`;
}

function Summary({ stats }) {
  const h = stats.hindsight || {};
  const learnt = KINDS.map((k) => [k, (h.induced || {})[k] || 0]);
  const next = h.next_trigger || {};
  const nextWords = [
    next.count_episodes_needed !== undefined && next.count_episodes_needed !== null ? `after ${plural(next.count_episodes_needed, "more episode")}` : null,
    next.schedule_at ? `on the schedule at ${when(next.schedule_at)}` : null,
  ].filter(Boolean).join(", or ");
  return html`<div class="summary" data-testid="stats-summary">
    <div><strong>${number(stats.counts.episodic)}</strong> episodes</div>
    <div><strong>${number(stats.counts.semantic)}</strong> learnt memories${stats.counts.semantic_superseded ? ` (${number(stats.counts.semantic_superseded)} replaced)` : ""}</div>
    <div><strong>${number(h.runs || 0)}</strong> consolidation ${h.runs === 1 ? "run" : "runs"}${h.runs_failed ? `, ${h.runs_failed} failed` : ""}</div>
    <div class="meta">learnt by consolidation: ${learnt.map(([k, n]) => plural(n, k)).join(", ")}; last write ${when(stats.last_write_at)}</div>
    <div class="meta">${plural(h.unconsolidated || 0, "episode")} ${h.unconsolidated === 1 ? "waits" : "wait"} for consolidation${nextWords ? `; the next run comes ${nextWords}` : ""}</div>
  </div>`;
}

export function StatsPage({ client, namespace, refresh }) {
  const [stats, setStats] = useState(null);
  const [error, setError] = useState(null);
  useEffect(() => {
    let current = true;
    setStats(null);
    setError(null);
    client.stats(namespace, RUNS).then((s) => { if (current) setStats(s); }, (e) => { if (current) setError(e); });
    return () => { current = false; };
  }, [client, namespace, refresh]);
  if (error) return html`<${ErrorLine} error=${error} />`;
  if (!stats) return html`<div class="empty">Reading the statistics…</div>`;
  const runs = (stats.hindsight && stats.hindsight.recent_runs) || [];
  // The charts end today, or on the latest day the server counted if its clock runs ahead of this browser's.
  const latest = [...(stats.recalls_by_day || []).map((d) => d.day), ...runs.map((r) => dayOf(r.finished_at))];
  const today = [new Date().toISOString().slice(0, 10), ...latest].sort().pop();
  return html`<div class="stats" data-testid="stats">
    <${Summary} stats=${stats} />
    <div class="charts">
      <section><h4>Recalls, and how often they found something</h4><${RecallChart} stats=${stats} today=${today} /></section>
      <section><h4>What was learnt, and when</h4><${LearnedChart} runs=${runs} today=${today} /></section>
      <section><h4>Consolidation runs</h4><${RunsChart} runs=${runs} /></section>
      <section><h4>Feedback and adoption</h4><${FeedbackChart} feedback=${stats.hindsight && stats.hindsight.feedback} /></section>
    </div>
  </div>`;
}
