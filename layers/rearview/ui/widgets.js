// Small pieces every view uses: times as a person reads them (UTC, as the API keeps them), outcome marks, kind
// badges, confidence bars, errors, a confirmation dialog.
import { html } from "/ui/vendor-preact-htm.js";

// "2026-12-04 23:02", to the minute, UTC.
export const when = (iso) => (iso ? iso.replace("T", " ").slice(0, 16) : "-");
// "23:02" (UTC).
export const clock = (iso) => (iso ? iso.slice(11, 16) : "");
// "2026-12-04" (UTC).
export const dayOf = (iso) => (iso ? iso.slice(0, 10) : "");
// "Friday 4 December 2026": a day header.
export function dayTitle(day) {
  const date = new Date(`${day}T00:00:00Z`);
  return date.toLocaleDateString("en-GB", { weekday: "long", day: "numeric", month: "long", year: "numeric", timeZone: "UTC" });
}
// A memory's time: an episode's occurred_at, a fact's last confirmation.
export const timeOf = (m) => m.occurred_at || m.last_confirmed_at;
export const number = (n) => Number(n || 0).toLocaleString("en-US");
export const plural = (n, one, many) => `${number(n)} ${n === 1 ? one : many || `${one}s`}`;

const OUTCOMES = {
  success: ["✓", "went well"],
  failure: ["✗", "failed"],
  partial: ["◐", "partly worked"],
  unknown: ["?", "outcome unknown"],
};

// An episode's outcome as a mark (✓ ✗ ◐ ?), its words on hover; nothing for an episode without one.
export function OutcomeMark({ status, outcome }) {
  if (!status && !outcome) return null;
  const [mark, words] = OUTCOMES[status] || ["•", "outcome"];
  const title = outcome ? `${words}: ${outcome}` : words;
  return html`<span class=${`outcome ${status || "noted"}`} data-testid="outcome" data-outcome=${status || "noted"}
    title=${title} aria-label=${title}>${mark}</span>`;
}

export function KindBadge({ kind }) {
  return html`<span class=${`badge ${kind}`}>${kind}</span>`;
}

export function ConfidenceBar({ value }) {
  const width = `${Math.round(Math.max(0, Math.min(1, value)) * 100)}%`;
  return html`<span class="bar" title=${`confidence ${value.toFixed(2)}`}><span style=${{ width }}></span></span>`;
}

export function ErrorLine({ error }) {
  if (!error) return null;
  const field = error.body && error.body.field ? ` (${error.body.field})` : "";
  return html`<div class="error" role="alert" data-testid="error">${error.message}${field}</div>`;
}

export function Confirm({ title, message, confirmLabel, onConfirm, onCancel }) {
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
