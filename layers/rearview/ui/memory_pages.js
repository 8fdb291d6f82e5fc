// The memories a list shows, page by page: a new namespace or filter starts from nothing (the last namespace's
// memories never show under a new name), an error empties the list, and an answer that comes back after the
// namespace or the filter changed again is dropped.
import { useCallback, useEffect, useRef, useState } from "/ui/vendor-preact-htm.js";

const PAGE = 50;
// A text-filtered page reads at most this many memories (the API's bound): the counts say how far it got.
const LEARNED_PAGE = 500;
// The semantic memories read to mark the episodes they were learnt from: a namespace's lessons, preferences and
// facts are few next to its episodes; past this many, the marks cover the newest.
export const LEARNED_CAP = 2000;

export function useMemoryPages(client, namespace, query, refresh) {
  const [state, setState] = useState({ items: [], cursor: null, scanned: 0, error: null, loading: true });
  const generation = useRef(0);
  const key = JSON.stringify(query);

  const load = useCallback(async (after, mine) => {
    setState((s) => ({ ...s, loading: true }));
    try {
      const page = await client.list(namespace, { ...query, limit: PAGE, cursor: after });
      if (generation.current !== mine) return;
      setState((s) => ({
        items: after ? [...s.items, ...page.items] : page.items,
        cursor: page.next_cursor,
        scanned: (after ? s.scanned : 0) + (page.scanned || page.items.length),
        error: null,
        loading: false,
      }));
    } catch (error) {
      if (generation.current !== mine) return;
      setState({ items: [], cursor: null, scanned: 0, error, loading: false });
    }
  }, [client, namespace, key]);

  useEffect(() => {
    generation.current += 1;
    setState({ items: [], cursor: null, scanned: 0, error: null, loading: true });
    load(null, generation.current);
  }, [load, refresh]);

  const more = () => load(state.cursor, generation.current);
  return { ...state, more };
}

// For each episode, the semantic memories learnt from it (their provenance read backwards), and how many semantic
// memories were read.
export function useLearnedFrom(client, namespace, refresh) {
  const [found, setFound] = useState({ byEpisode: new Map(), read: 0, complete: true });
  useEffect(() => {
    let current = true;
    setFound({ byEpisode: new Map(), read: 0, complete: true });
    (async () => {
      const byEpisode = new Map();
      let cursor = null;
      let read = 0;
      do {
        const page = await client.list(namespace, { layer: "semantic", limit: LEARNED_PAGE, cursor });
        for (const fact of page.items) {
          for (const source of fact.provenance) {
            if (!byEpisode.has(source)) byEpisode.set(source, []);
            byEpisode.get(source).push({ id: fact.id, kind: fact.kind, content: fact.content });
          }
        }
        read += page.items.length;
        cursor = page.next_cursor;
      } while (cursor && read < LEARNED_CAP && current);
      if (current) setFound({ byEpisode, read, complete: !cursor });
    })().catch(() => { /* the list shows the namespace's error; the marks stay empty */ });
    return () => { current = false; };
  }, [client, namespace, refresh]);
  return found;
}
