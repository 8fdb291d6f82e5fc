// The inspector's calls to the HTTP API, with the key the user entered. Every answer that is not 2xx becomes an
// ApiError carrying the status and the API's {error, message, field}.

export class ApiError extends Error {
  constructor(status, body) {
    super(body && body.message ? body.message : `HTTP ${status}`);
    this.status = status;
    this.body = body || {};
  }
}

const namespacePath = (namespace) => `/v1/namespaces/${encodeURIComponent(namespace).replace(/%3A/g, ":")}`;
const memoryPath = (namespace, id) => `${namespacePath(namespace)}/memories/${encodeURIComponent(id)}`;

export function api(key) {
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
  return {
    key,
    namespaces: async () => (await call("GET", "/v1/namespaces")).body.namespaces,
    list: async (namespace, query) => (await call("GET", `${namespacePath(namespace)}/memories`, { query })).body,
    get: async (namespace, id) => (await call("GET", memoryPath(namespace, id))).body,
    history: async (namespace, id) => (await call("GET", `${memoryPath(namespace, id)}/history`)).body.versions,
    sources: async (namespace, id) => (await call("GET", `${memoryPath(namespace, id)}/sources`)).body,
    edit: async (namespace, id, changes, version) =>
      (await call("PATCH", memoryPath(namespace, id), { body: changes, headers: { "If-Match": String(version) } })).body,
    remove: async (namespace, id) => (await call("DELETE", memoryPath(namespace, id))).body,
    recall: async (namespace, request) =>
      (await call("POST", `${namespacePath(namespace)}/recall`, { body: { ...request, explain: true } })).body,
    brief: async (namespace, request) => (await call("POST", `${namespacePath(namespace)}/brief`, { body: request })).body,
    stats: async (namespace, runs) => (await call("GET", `${namespacePath(namespace)}/stats`, { query: { runs } })).body,
    exportText: async (namespace) => {
      let text = "";
      let cursor = null;
      do {
        const { body, headers } = await call("GET", `${namespacePath(namespace)}/export`, { query: { cursor } });
        text += body;
        cursor = headers.get("X-Next-Cursor");
      } while (cursor);
      return text;
    },
  };
}
