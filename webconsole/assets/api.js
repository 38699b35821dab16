// The page's only door to the daemon: every request carries the bearer
// token the user gave (kept in sessionStorage, so it ends with the tab),
// and a 401 anywhere sends the user back to the token form.

const tokenKey = 'gatewayd.token';

export class Unauthorized extends Error {}

let onUnauthorized = () => {};

export function whenUnauthorized(fn) { onUnauthorized = fn; }

export function token() { return sessionStorage.getItem(tokenKey) || ''; }

export function setToken(t) {
  if (t) sessionStorage.setItem(tokenKey, t);
  else sessionStorage.removeItem(tokenKey);
}

export async function request(path, opts = {}) {
  const headers = new Headers(opts.headers || {});
  const t = token();
  if (t) headers.set('Authorization', 'Bearer ' + t);
  const resp = await fetch(path, { ...opts, headers, credentials: 'omit' });
  if (resp.status === 401) {
    onUnauthorized(t !== '');
    throw new Unauthorized('the API token was refused');
  }
  return resp;
}

// errorOf reads the {"error": ...} body every route answers a failure with.
export async function errorOf(resp) {
  const body = await resp.json().catch(() => null);
  const err = new Error((body && body.error) || `${resp.status} ${resp.statusText}`);
  err.status = resp.status;
  return err;
}

export async function getJSON(path) {
  const resp = await request(path);
  if (!resp.ok) throw await errorOf(resp);
  return resp.json();
}

export async function postJSON(path, body) {
  const resp = await request(path, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (!resp.ok) throw await errorOf(resp);
  return resp.json();
}

export function laneName(key) {
  return key.startsWith('v1:api:') ? key.slice('v1:api:'.length) : '';
}

// lanePath is the {lane} of the console routes: the API lane's name when
// it has one, else the whole key path-escaped.
export function lanePath(key) {
  return laneName(key) || encodeURIComponent(key);
}

// download fetches a file with the token (a plain link cannot carry the
// header) and hands it to the browser as a blob URL.
export async function download(url, name) {
  const resp = await request(url);
  if (!resp.ok) throw await errorOf(resp);
  const blobURL = URL.createObjectURL(await resp.blob());
  const a = document.createElement('a');
  a.href = blobURL;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(blobURL), 60000);
}
