// api.js: the native API (/v1) as the page uses it. The bearer token lives
// in localStorage, so a reload keeps the session.

const KEY = 'feedd.token';

export const token = {
  get: () => localStorage.getItem(KEY) || '',
  set: (t) => localStorage.setItem(KEY, t),
  clear: () => localStorage.removeItem(KEY),
};

// ApiError carries the native error body: {error: {code, message}}.
export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

// onUnauthorized is called when the server refuses the token (401).
export let onUnauthorized = () => {};
export function setOnUnauthorized(f) { onUnauthorized = f; }

// api sends one request and returns the decoded JSON body (null for 204).
export async function api(method, path, body) {
  const headers = {};
  const t = token.get();
  if (t) headers.Authorization = 'Bearer ' + t;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  let resp;
  try {
    resp = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  } catch {
    throw new ApiError(0, 'network', 'The server cannot be reached. Check that feedd is running.');
  }
  if (resp.status === 204) return null;
  const data = await resp.json().catch(() => null);
  if (resp.ok) return data;
  if (resp.status === 401 && t) onUnauthorized();
  const e = (data && data.error) || {};
  throw new ApiError(resp.status, e.code || 'internal', e.message || `HTTP ${resp.status}`);
}
