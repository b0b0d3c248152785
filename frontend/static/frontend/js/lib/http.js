// JSON calls to Tally's API with the session cookie and the CSRF token, and the API's error
// body as an exception. Shared by every page.

// `status` 0 means the request never got an answer (no connection).
export class ApiError extends Error {
  constructor(status, body) {
    const error = (body && body.error) || {};
    super(error.message || (status ? `HTTP ${status}` : "No connection."));
    this.status = status;
    this.code = error.code || (status ? "" : "offline");
    this.fields = error.fields || null;
    this.line = error.line || null;
  }

  // The caller is not signed in any more (or never was).
  get signedOut() {
    return this.status === 401 || (this.status === 403 && this.code !== "permission_denied");
  }
}

export function csrfToken() {
  const match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
  if (match) return decodeURIComponent(match[1]);
  const input = document.querySelector("input[name=csrfmiddlewaretoken]");
  return input ? input.value : "";
}

let clockSkew = 0; // the server's clock minus this device's, from the last Date header

// Now, by the server's clock (lease expiry times come from the server).
export function serverNow() {
  return Date.now() + clockSkew;
}

// `body`: an object (sent as JSON), FormData (multipart), or undefined.
export async function api(method, url, body) {
  const headers = { Accept: "application/json", "X-CSRFToken": csrfToken() };
  let payload = body;
  if (body !== undefined && !(body instanceof FormData)) {
    headers["Content-Type"] = "application/json";
    payload = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(url, { method, headers, body: payload, credentials: "same-origin", cache: "no-store" });
  } catch {
    throw new ApiError(0, null);
  }
  const date = Date.parse(response.headers.get("Date") || "");
  if (!Number.isNaN(date)) clockSkew = date - Date.now();
  if (response.status === 204) return null;
  let data = null;
  try {
    data = await response.json();
  } catch {
    data = null;
  }
  if (!response.ok) throw new ApiError(response.status, data);
  return data;
}

// GET `url`; null when it answers 404 (nothing there yet, or an API this server lacks).
export async function getOrNull(url) {
  try {
    return await api("GET", url);
  } catch (error) {
    if (error.status === 404) return null;
    throw error;
  }
}

// `text` ending in a full stop (or ? or !), so that another sentence can follow it.
export function asSentence(text) {
  const trimmed = String(text).trim();
  return /[.!?]$/.test(trimmed) ? trimmed : `${trimmed}.`;
}

// The error as sentences, each ending in a full stop, so that a page may add another.
export function describe(error) {
  if (error.signedOut) return "Your session has ended: sign in again.";
  if (!error.fields) return asSentence(error.message);
  const details = Object.entries(error.fields).map(([field, messages]) => asSentence(`${field}: ${messages.map(asSentence).join(" ")}`));
  return [asSentence(error.message), ...details].join(" ");
}
