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

// laneKeyPattern is the server's lane-key grammar (gateway.ParseSessionKey):
// v1:api:NAME, v1:PLATFORM:dm|group|channel|thread:ID or
// v1:PLATFORM:topic:CHAT:TOPIC, each optionally with :user:ID, where an id
// is 1-128 of A-Z a-z 0-9 . _ - and a platform lower-case letters.
const keyID = '[A-Za-z0-9._-]{1,128}';
const laneKeyPattern = new RegExp(`^v1:(?:api:${keyID}|(?!api:)[a-z]{1,32}:(?:(?:dm|group|channel|thread):${keyID}|topic:${keyID}:${keyID}))(?::user:${keyID})?$`);

// isLaneKey says whether key names a lane. Anything else (a name from the
// URL such as "v1:api:../admin/…") must never become part of a request
// path. An id of "." or ".." is refused too: a URL resolves such a path
// segment even when it is escaped, and no lane can be reached by it.
export function isLaneKey(key) {
  return typeof key === 'string' && laneKeyPattern.test(key) &&
    !key.split(':').some((id) => id === '.' || id === '..');
}

// laneName is the name of an API lane (v1:api:NAME), else ''.
export function laneName(key) {
  const m = /^v1:api:([A-Za-z0-9._-]{1,128})$/.exec(key);
  return m && isLaneKey(key) ? m[1] : '';
}

// lanePath is the {lane} of the console routes, path-escaped: the API
// lane's name when it has one, else the whole key.
export function lanePath(key) {
  if (!isLaneKey(key)) throw new Error(`${JSON.stringify(key)} is not a lane name`);
  return encodeURIComponent(laneName(key) || key);
}

// adminSessionPath is the path of an operator route of the lane key.
export function adminSessionPath(key, rest) {
  if (!isLaneKey(key)) throw new Error(`${JSON.stringify(key)} is not a lane name`);
  return `/api/admin/sessions/${encodeURIComponent(key)}/${rest}`;
}

// apiLanePath is the path of an API lane's own routes (messages).
export function apiLanePath(name, rest) {
  if (!isLaneKey('v1:api:' + name)) throw new Error(`${JSON.stringify(name)} is not an API lane name`);
  return `/api/lanes/${encodeURIComponent(name)}/${rest}`;
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
