// Small helpers shared by the dashboard pages: JSON calls with the session and CSRF token,
// the API's error body, and building elements from text (data is never parsed as HTML).

export class ApiError extends Error {
  constructor(status, body) {
    const error = (body && body.error) || {};
    super(error.message || (status ? `HTTP ${status}` : "No connection."));
    this.status = status;
    this.code = error.code || (status ? "" : "offline");
    this.fields = error.fields || null;
    this.line = error.line || null;
  }
}

export function csrfToken() {
  const match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
  if (match) return decodeURIComponent(match[1]);
  const input = document.querySelector("input[name=csrfmiddlewaretoken]");
  return input ? input.value : "";
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
    response = await fetch(url, { method, headers, body: payload, credentials: "same-origin" });
  } catch {
    throw new ApiError(0, null);
  }
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

export function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value);
  }
  node.append(...children.filter((child) => child !== null && child !== undefined));
  return node;
}

export function describe(error) {
  if (error.status === 401 || (error.status === 403 && error.code !== "permission_denied")) {
    return "Your session has ended: sign in again.";
  }
  if (!error.fields) return error.message;
  const details = Object.entries(error.fields).map(([field, messages]) => `${field}: ${messages.join(" ")}`);
  return `${error.message} ${details.join(" ")}`;
}

export function toast(text) {
  const node = el("div", { class: "toast", role: "status", text });
  document.body.append(node);
  setTimeout(() => node.remove(), 3500);
}
