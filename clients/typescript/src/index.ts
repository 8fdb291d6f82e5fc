// The TypeScript client of Rearview's HTTP API: the generated types (schema.ts, from /openapi.json) over
// openapi-fetch, and this thin facade: one method per route, errors as RearviewError, 429/503 retried.
import createClient, { type Client } from "openapi-fetch";
import type { components, paths } from "./schema.js";

export type { components, paths } from "./schema.js";
export type Schemas = components["schemas"];
export type Memory = Schemas["Episode"] | Schemas["Fact"];

/** An error answer of the API: its status, its stable code, its message naming the field, and the field. */
export class RearviewError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly field?: string,
  ) {
    super(message);
    this.name = "RearviewError";
  }
}

export interface RearviewOptions {
  /** The server, e.g. http://127.0.0.1:8765 (default). */
  baseUrl?: string;
  /** An API key (`rv_<key id>_<secret>`); none for a local server in open mode. */
  token?: string;
  /** Retries of a request answered 429 or 503 (default 3), with exponential backoff or Retry-After. */
  retries?: number;
  fetch?: typeof fetch;
}

const RETRIED = new Set([429, 503]);

/** fetch with retries on 429 and 503: Retry-After when the server gives it, else 0.25 s × 2^n (at most 8 s). */
export function retryingFetch(retries: number, inner: typeof fetch = fetch): typeof fetch {
  return async (input, init) => {
    for (let attempt = 0; ; attempt++) {
      const request = input instanceof Request ? input.clone() : input;
      const response = await inner(request, init);
      if (!RETRIED.has(response.status) || attempt >= retries) return response;
      const after = Number(response.headers.get("retry-after"));
      const wait = Number.isFinite(after) && after >= 0 ? after * 1000 : Math.random() * Math.min(8000, 250 * 2 ** attempt);
      await new Promise((resolve) => setTimeout(resolve, Math.min(wait, 8000)));
    }
  };
}

type Answer<T> = { data?: T; error?: unknown; response: Response };

function unwrap<T>(answer: Answer<T>): T {
  if (answer.response.ok) return answer.data as T;
  const body = (answer.error ?? {}) as { error?: string; message?: string; field?: string };
  throw new RearviewError(
    answer.response.status,
    body.error ?? "http_error",
    body.message ?? `HTTP ${answer.response.status}`,
    body.field,
  );
}

type ListQuery = NonNullable<paths["/v1/namespaces/{ns}/memories"]["get"]["parameters"]["query"]>;

/** The API's routes as methods, each taking and returning the generated types. `raw` is the openapi-fetch client. */
export function createRearview(options: RearviewOptions = {}) {
  const raw: Client<paths> = createClient<paths>({
    baseUrl: options.baseUrl ?? "http://127.0.0.1:8765",
    headers: options.token ? { Authorization: `Bearer ${options.token}` } : {},
    fetch: retryingFetch(options.retries ?? 3, options.fetch ?? fetch),
  });
  const ns = (namespace: string) => ({ path: { ns: namespace } });
  const memory = (namespace: string, id: string) => ({ path: { ns: namespace, id } });

  return {
    raw,
    health: async () => unwrap(await raw.GET("/v1/health")),
    write: async (namespace: string, item: Schemas["MemoryWrite"]) =>
      unwrap(await raw.POST("/v1/namespaces/{ns}/memories", { params: ns(namespace), body: item })),
    writeBatch: async (namespace: string, items: Schemas["MemoryWrite"][]) =>
      unwrap(await raw.POST("/v1/namespaces/{ns}/memories/batch", { params: ns(namespace), body: { items } })),
    /** A history of episodes through the bulk path (up to 1,000 a call), each with its `vector` if you bring one. */
    load: async (namespace: string, items: Schemas["EpisodeLoad"][]) =>
      unwrap(await raw.POST("/v1/namespaces/{ns}/load", { params: ns(namespace), body: { items } })),
    get: async (namespace: string, id: string): Promise<Memory> =>
      unwrap(await raw.GET("/v1/namespaces/{ns}/memories/{id}", { params: memory(namespace, id) })),
    delete: async (namespace: string, id: string) =>
      unwrap(await raw.DELETE("/v1/namespaces/{ns}/memories/{id}", { params: memory(namespace, id) })),
    recall: async (namespace: string, query: Schemas["RecallQuery"]) =>
      unwrap(await raw.POST("/v1/namespaces/{ns}/recall", { params: ns(namespace), body: query })),
    forget: async (namespace: string, request: Schemas["ForgetRequest"]) =>
      unwrap(await raw.POST("/v1/namespaces/{ns}/forget", { params: ns(namespace), body: request })),
    consolidate: async (namespace: string, request: Partial<Schemas["ConsolidateRequest"]> = {}) =>
      unwrap(
        await raw.POST("/v1/namespaces/{ns}/consolidate", {
          params: ns(namespace),
          body: request as Schemas["ConsolidateRequest"],
        }),
      ),
    stats: async (namespace: string) => unwrap(await raw.GET("/v1/namespaces/{ns}/stats", { params: ns(namespace) })),
    brief: async (namespace: string, request: Schemas["BriefRequest"]) =>
      unwrap(await raw.POST("/v1/namespaces/{ns}/brief", { params: ns(namespace), body: request })),
    feedback: async (namespace: string, request: Schemas["FeedbackRequest"]) =>
      unwrap(await raw.POST("/v1/namespaces/{ns}/feedback", { params: ns(namespace), body: request })),
    endSession: async (namespace: string, sid: string) =>
      unwrap(await raw.POST("/v1/namespaces/{ns}/sessions/{sid}/end", { params: { path: { ns: namespace, sid } } })),
    putWorking: async (namespace: string, sid: string, key: string, write: Schemas["WorkingWrite"]) =>
      unwrap(
        await raw.PUT("/v1/namespaces/{ns}/sessions/{sid}/working/{key}", {
          params: { path: { ns: namespace, sid, key } },
          body: write,
        }),
      ),
    getWorking: async (namespace: string, sid: string) =>
      unwrap(await raw.GET("/v1/namespaces/{ns}/sessions/{sid}/working", { params: { path: { ns: namespace, sid } } })),
    clearWorking: async (namespace: string, sid: string) =>
      unwrap(await raw.DELETE("/v1/namespaces/{ns}/sessions/{sid}/working", { params: { path: { ns: namespace, sid } } })),

    // memory by hand
    list: async (namespace: string, query: ListQuery = {}) =>
      unwrap(await raw.GET("/v1/namespaces/{ns}/memories", { params: { path: { ns: namespace }, query } })),
    /** Every matching memory, newest first, page after page. */
    async *iterate(namespace: string, query: ListQuery = {}): AsyncGenerator<Memory> {
      let cursor: string | null | undefined = query.cursor;
      do {
        const page = unwrap(
          await raw.GET("/v1/namespaces/{ns}/memories", { params: { path: { ns: namespace }, query: { ...query, cursor } } }),
        );
        yield* page.items;
        cursor = page.next_cursor;
      } while (cursor);
    },
    edit: async (namespace: string, id: string, changes: Schemas["MemoryEdit"], ifVersion?: number): Promise<Memory> =>
      unwrap(
        await raw.PATCH("/v1/namespaces/{ns}/memories/{id}", {
          params: { ...memory(namespace, id), header: ifVersion === undefined ? {} : { "if-match": String(ifVersion) } },
          body: changes,
        }),
      ),
    history: async (namespace: string, id: string) =>
      unwrap(await raw.GET("/v1/namespaces/{ns}/memories/{id}/history", { params: memory(namespace, id) })),
    /** The namespace's export as ndjson text, following the server's page cursor. */
    async exportNdjson(namespace: string): Promise<string> {
      let text = "";
      let cursor: string | null = null;
      do {
        const answer: Answer<unknown> = await raw.GET("/v1/namespaces/{ns}/export", {
          params: { path: { ns: namespace }, query: cursor ? { cursor } : {} },
          parseAs: "text",
        });
        text += unwrap(answer as Answer<string>);
        cursor = answer.response.headers.get("X-Next-Cursor");
      } while (cursor);
      return text;
    },
    /** Restore exported lines (ndjson text, or the parsed lines); ids already stored are skipped. */
    async import(namespace: string, lines: string | object[]): Promise<Schemas["ImportResult"]> {
      const body = typeof lines === "string" ? lines : lines.map((line) => JSON.stringify(line)).join("\n");
      return unwrap(
        (await raw.POST("/v1/namespaces/{ns}/import", {
          params: ns(namespace),
          body: body as never,
          bodySerializer: (value: unknown) => value as string,
          headers: { "Content-Type": "application/x-ndjson" },
        })) as Answer<Schemas["ImportResult"]>,
      );
    },
    namespaces: async (prefix?: string) =>
      unwrap(await raw.GET("/v1/namespaces", { params: { query: prefix === undefined ? {} : { prefix } } })),
    erase: async (namespace: string, subtree = false) =>
      unwrap(await raw.DELETE("/v1/namespaces/{ns}", { params: { path: { ns: namespace }, query: { subtree } } })),

    // API keys (admin)
    createKey: async (request: Schemas["KeyCreate"]) => unwrap(await raw.POST("/v1/keys", { body: request })),
    listKeys: async () => unwrap(await raw.GET("/v1/keys")),
    revokeKey: async (keyId: string) =>
      unwrap(await raw.DELETE("/v1/keys/{key_id}", { params: { path: { key_id: keyId } } })),
    // null: the deployment's default; 0: unlimited
    setKeyLimit: async (keyId: string, requestsPerMinute: number | null) =>
      unwrap(
        await raw.PATCH("/v1/keys/{key_id}", {
          params: { path: { key_id: keyId } },
          body: { requests_per_minute: requestsPerMinute },
        }),
      ),
  };
}

export type Rearview = ReturnType<typeof createRearview>;
