// The console: a hash-routed page over the daemon's JSON routes.
//   #/            every lane, live; filter and transcript search
//   #/lane/KEY    one lane: transcript, commands, and for API lanes a composer
//   #/status      health and the numbers /metrics has
import * as api from './api.js';
import { render as renderMarkdown } from './markdown.js';
import { readEvents } from './sse.js';

const refreshMs = 2500;
const view = document.getElementById('view');
let stopView = () => {};

function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (k === 'class') node.className = v;
    else if (k === 'dataset') Object.assign(node.dataset, v);
    else if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
    else if (v !== undefined && v !== null && v !== false) node.setAttribute(k, v === true ? '' : v);
  }
  node.append(...children.filter((c) => c !== null && c !== undefined));
  return node;
}

function when(t) {
  if (!t || t.startsWith('0001-')) return '';
  return new Date(t).toLocaleString();
}

function showError(where, err) {
  if (err instanceof api.Unauthorized) return;
  where.replaceChildren(el('p', { class: 'error', role: 'alert' }, String(err.message || err)));
}

// --- token ---------------------------------------------------------------

const login = document.getElementById('login');
const loginForm = document.getElementById('login-form');
const loginMessage = document.getElementById('login-message');
const loginToken = document.getElementById('login-token');

api.whenUnauthorized((sentOne) => {
  stopView();
  if (sentOne) {
    api.setToken('');
    loginMessage.textContent = 'That token was refused (401 Unauthorized). Enter the API token (api.token) again.';
    loginMessage.className = 'error';
  } else {
    loginMessage.textContent = 'This gatewayd needs its API token (api.token).';
    loginMessage.className = '';
  }
  view.replaceChildren();
  login.hidden = false;
  loginToken.focus();
});

loginForm.addEventListener('submit', (e) => {
  e.preventDefault();
  api.setToken(loginToken.value.trim());
  loginToken.value = '';
  login.hidden = true;
  route();
});

// --- codex account --------------------------------------------------------

// Every page shows in its header whether codex can answer, and while it
// cannot, a banner with the reason, a "Log in" button that starts a
// device-code login and shows its URL and code, and a field for an OpenAI
// API key instead. The account is read every
// 2 s while the banner is up (so it goes once the login completes), else
// every 15 s.
const accountState = document.getElementById('account-state');
const accountBanner = document.getElementById('account-banner');
const accountReason = document.getElementById('account-reason');
const accountLogin = document.getElementById('account-login');
const accountLoginInfo = document.getElementById('account-login-info');
let accountTimer = 0, accountWatching = false;

function accountLabel(a) {
  if (!a.usable) return 'Codex: not logged in';
  if (a.account && a.account.type) return 'Codex: ' + [a.account.type, a.account.plan].filter(Boolean).join(', ');
  if (a.account && !a.account.requires_openai_auth) return 'Codex: ready (a configured model provider)';
  return 'Codex: ready';
}

function showLogin(l) {
  if (l.error) {
    accountLoginInfo.className = 'error';
    accountLoginInfo.textContent = l.error.charAt(0).toUpperCase() + l.error.slice(1) + '. Log in to try again.';
    return;
  }
  const url = /^https?:\/\//.test(l.verification_url)
    ? el('a', { id: 'account-login-url', href: l.verification_url, target: '_blank', rel: 'noopener noreferrer' }, l.verification_url)
    : el('code', { id: 'account-login-url' }, l.verification_url);
  accountLoginInfo.className = '';
  accountLoginInfo.replaceChildren('Open ', url, ' and enter the code ', el('code', { id: 'account-login-code' }, l.user_code),
    '. This banner goes once Codex reports the login.');
}

function renderAccount(a) {
  accountState.textContent = accountLabel(a);
  accountState.className = 'account-state ' + (a.usable ? 'ok' : 'error');
  accountState.dataset.usable = String(a.usable);
  accountBanner.hidden = a.usable;
  if (a.usable) {
    accountLoginInfo.replaceChildren();
    accountLogin.disabled = false;
    return;
  }
  accountReason.replaceChildren(renderMarkdown(a.reason || 'Codex cannot answer.'));
  if (a.login) showLogin(a.login);
}

async function checkAccount() {
  clearTimeout(accountTimer);
  try {
    renderAccount(await api.getJSON('/api/account'));
  } catch (err) {
    if (err instanceof api.Unauthorized) {
      accountWatching = false;
      return;
    }
    accountState.textContent = 'Codex: account unknown';
    accountState.className = 'account-state';
  }
  accountTimer = setTimeout(checkAccount, accountBanner.hidden ? 15000 : 2000);
}

function watchAccount() {
  if (accountWatching) return;
  accountWatching = true;
  checkAccount();
}

// accountAction runs one of the banner's logins with its button disabled,
// says what it is doing, shows a failure in the banner and reads the
// account again after (a 401 is the token prompt's to show).
async function accountAction(button, doing, act) {
  button.disabled = true;
  accountLoginInfo.className = 'note';
  accountLoginInfo.textContent = doing;
  try {
    await act();
  } catch (err) {
    if (!(err instanceof api.Unauthorized)) {
      accountLoginInfo.className = 'error';
      accountLoginInfo.textContent = String(err.message || err);
    }
  } finally {
    button.disabled = false;
  }
  checkAccount();
}

accountLogin.addEventListener('click', () => accountAction(accountLogin, 'Starting the login…', async () => {
  const r = await api.postJSON('/api/account/login', {});
  if (r.login) showLogin(r.login);
  else accountLoginInfo.textContent = r.note || '';
}));

// An API key instead of a ChatGPT login: codex keeps it in its home, and
// the key never comes back to the page (the field is cleared at once).
const accountKeyForm = document.getElementById('account-key-form');
const accountKey = document.getElementById('account-api-key');
const accountKeySave = document.getElementById('account-key-save');
accountKeyForm.addEventListener('submit', (e) => {
  e.preventDefault();
  const key = accountKey.value.trim();
  accountKey.value = '';
  if (!key) return;
  accountAction(accountKeySave, 'Logging Codex in with the API key…', async () => {
    try {
      renderAccount(await api.postJSON('/api/account/api-key', { api_key: key }));
    } catch (err) {
      // 409: Codex holds an account (the message names it), which the key
      // would replace; only the user's yes sends it again with replace.
      if (err.status !== 409) throw err;
      const held = err.message.replace(/; send "replace".*$/, '');
      if (!confirm(held + '. Replace it with this API key?')) {
        accountLoginInfo.textContent = held + '; the key was not used.';
        return;
      }
      renderAccount(await api.postJSON('/api/account/api-key', { api_key: key, replace: true }));
    }
  });
});

// --- routing -------------------------------------------------------------

function route() {
  watchAccount();
  stopView();
  stopView = () => {};
  document.documentElement.classList.remove('with-composer');
  const hash = location.hash.replace(/^#/, '') || '/';
  if (hash.startsWith('/lane/')) {
    const key = laneKeyOf(decodeHash(hash.slice('/lane/'.length)));
    // A name from the URL is the visitor's (or a crafted link's) text: it
    // is checked before anything is requested for it.
    stopView = api.isLaneKey(key) ? lanePage(key) : notALanePage(key);
  } else if (hash === '/status') stopView = statusPage();
  else stopView = lanesPage();
}

// laneKeyOf takes an API lane's bare name too (#/lane/web), as the JSON
// routes do: a session key always has a ':'.
function laneKeyOf(s) {
  return s.includes(':') ? s : 'v1:api:' + s;
}

// decodeHash takes a hand-typed lane key too: a stray '%' stays as it is.
function decodeHash(s) {
  try { return decodeURIComponent(s); } catch { return s; }
}

window.addEventListener('hashchange', route);

// poll runs fn now and every refreshMs until the returned stop is called;
// a slow answer never overlaps the next one.
function poll(fn) {
  let timer = 0, stopped = false;
  const tick = async () => {
    await fn();
    if (!stopped) timer = setTimeout(tick, refreshMs);
  };
  tick();
  return () => { stopped = true; clearTimeout(timer); };
}

// --- lanes ---------------------------------------------------------------

const laneColumns = ['Lane', 'Platform', 'Title', 'Binding', 'Thread', 'Project', 'Model / effort', 'Turns', 'Last active', 'Queued', 'Running'];

function lanesPage() {
  const filter = el('input', { id: 'lane-filter', type: 'search', placeholder: 'Filter lanes (key or title)', 'aria-label': 'Filter lanes' });
  const query = el('input', { id: 'search-query', type: 'search', placeholder: 'Search transcripts', 'aria-label': 'Search transcripts' });
  const results = el('ol', { id: 'search-results', class: 'results' });
  const body = el('tbody', { id: 'lanes-body' });
  const status = el('div', { class: 'note' });
  const searchForm = el('form', { class: 'search', onsubmit: (e) => { e.preventDefault(); search(query.value, results); } },
    query, el('button', { type: 'submit' }, 'Search'));
  view.replaceChildren(
    el('h1', {}, 'Lanes'),
    el('div', { class: 'toolbar' }, filter, searchForm),
    results,
    status,
    el('div', { class: 'table-wrap' },
      el('table', { class: 'lanes' }, el('thead', {}, el('tr', {}, ...laneColumns.map((c) => el('th', {}, c)))), body)),
  );
  // Each keystroke and each poll loads; only the latest answer is shown,
  // so a slow answer to an older filter never replaces a newer one.
  let latest = 0;
  const load = async () => {
    const mine = ++latest;
    try {
      const q = filter.value.trim();
      const data = await api.getJSON('/api/lanes' + (q ? '?q=' + encodeURIComponent(q) : ''));
      if (mine !== latest) return;
      body.replaceChildren(...data.lanes.map(laneRow));
      status.textContent = data.lanes.length === 0 ? 'No lanes yet.' : '';
    } catch (err) {
      showError(status, err);
    }
  };
  filter.addEventListener('input', load);
  return poll(load);
}

function laneRow(l) {
  const model = [l.model || 'default', l.effort || 'default'].join(' / ');
  return el('tr', { dataset: { key: l.key } },
    el('td', {}, el('a', { href: '#/lane/' + encodeURIComponent(l.key), class: 'lane-link' }, l.key)),
    el('td', {}, l.platform),
    el('td', {}, l.title || ''),
    el('td', {}, l.binding),
    el('td', { class: 'thread mono' }, l.thread_id || ''),
    el('td', {}, l.project || ''),
    el('td', {}, model),
    el('td', { class: 'num' }, String(l.turns)),
    el('td', {}, when(l.last_active_at)),
    el('td', { class: 'num queued' }, String(l.queued)),
    el('td', { class: 'running' }, l.running ? 'yes' : 'no'),
  );
}

async function search(q, results) {
  results.replaceChildren();
  if (q.trim() === '') return;
  try {
    const data = await api.getJSON('/api/search?q=' + encodeURIComponent(q));
    if (data.results.length === 0) results.append(el('li', {}, 'Nothing found.'));
    for (const r of data.results) {
      results.append(el('li', {},
        el('a', { href: '#/lane/' + encodeURIComponent(r.lane) }, r.lane),
        ' ', el('span', { class: 'role' }, r.role), ' ', el('span', { class: 'snippet' }, r.text)));
    }
  } catch (err) {
    showError(results, err);
  }
}

// --- one lane ------------------------------------------------------------

// notALanePage says why the URL names no lane, and requests nothing.
function notALanePage(key) {
  view.replaceChildren(
    el('p', {}, el('a', { href: '#/' }, '← all lanes')),
    el('h1', {}, 'Not a lane'),
    el('p', { id: 'lane-error', class: 'error', role: 'alert' },
      `${JSON.stringify(key)} is not a lane name. A lane is an API lane's name (1-128 of A-Z a-z 0-9 . _ -) ` +
      'or a session key such as v1:api:NAME, v1:telegram:dm:ID or v1:discord:channel:ID.'),
  );
  return () => {};
}

function lanePage(key) {
  const name = api.laneName(key);
  document.documentElement.classList.toggle('with-composer', name !== '');
  const head = el('div', { id: 'lane-head', class: 'lane-head' });
  const notes = el('div', { id: 'lane-notes', class: 'note' });
  const transcript = el('div', { id: 'transcript', class: 'transcript' });
  const older = el('button', { id: 'older', type: 'button', hidden: true }, 'Older messages');
  const live = el('div', { id: 'live', class: 'live' });
  const commands = commandBar(key, name, notes);
  // The head is refreshed by the poll and right after each reply, so it
  // shows a turn's effects (a new thread, the turn count) before the next
  // message streams rather than changing under it.
  const refreshHead = async () => {
    try {
      const l = await api.getJSON(`/api/lanes/${api.lanePath(key)}`);
      renderLaneHead(head, l);
      commands.update(l);
    } catch (err) {
      if (err.status === 404 && name) head.replaceChildren(el('p', { class: 'note' }, 'A new API lane: it starts with your first message.'));
      else showError(head, err);
    }
  };
  view.replaceChildren(
    el('p', {}, el('a', { href: '#/' }, '← all lanes')),
    el('h1', { class: 'mono' }, key),
    head, commands.node, notes, older, transcript, live,
    name ? composer(name, live, notes, refreshHead) : el('p', { class: 'note' }, 'Only API lanes (v1:api:NAME) can be written to from here.'),
  );
  let nextBefore = null;
  const loadOlder = async () => {
    try {
      const page = await api.getJSON(`/api/lanes/${api.lanePath(key)}/transcript?before=${nextBefore}`);
      transcript.prepend(...page.messages.slice().reverse().map(messageNode));
      nextBefore = page.next_before;
      older.hidden = nextBefore === null;
    } catch (err) {
      showError(notes, err);
    }
  };
  older.addEventListener('click', loadOlder);
  (async () => {
    try {
      const page = await api.getJSON(`/api/lanes/${api.lanePath(key)}/transcript`);
      transcript.replaceChildren(...page.messages.slice().reverse().map(messageNode));
      nextBefore = page.next_before;
      older.hidden = nextBefore === null;
    } catch (err) {
      // An API lane exists once it gets its first message.
      if (err.status === 404 && name) transcript.replaceChildren(el('p', { id: 'no-messages', class: 'note' }, 'No messages yet.'));
      else showError(notes, err);
    }
  })();
  return poll(refreshHead);
}

function renderLaneHead(head, l) {
  const row = (label, value, id) => [el('dt', {}, label), el('dd', { id }, value || '—')];
  const usage = l.last_turn && l.last_turn.context_window > 0
    ? `${l.last_turn.context_tokens} / ${l.last_turn.context_window} tokens of context` : '';
  head.replaceChildren(el('dl', {},
    ...row('Platform', l.platform),
    ...row('Title', l.title, 'lane-title'),
    ...row('Binding', l.binding, 'lane-binding'),
    ...row('Thread', l.thread_id, 'lane-thread'),
    ...row('Project', l.project ? `${l.project} (${l.directory || ''})` : l.directory),
    ...row('Model / effort', `${l.model || 'default'} / ${l.effort || 'default'}`),
    ...row('Verbose', l.verbose || 'default'),
    ...row('Turns', String(l.turns), 'lane-turns'),
    ...row('Last active', when(l.last_active_at)),
    ...row('Queued / running', `${l.queued} / ${l.running ? 'running' : 'idle'}`, 'lane-live'),
    ...row('Usage', usage),
  ));
}

// messageNode is one transcript row: a user's message, Codex's answer, or
// a gatewayd notice (a refusal, a command's answer), which reads like the
// reply it was when it came.
function messageNode(m) {
  const body = el('div', { class: 'text' });
  if (m.role === 'assistant') body.append(renderMarkdown(m.text));
  else body.textContent = m.text;
  const who = m.role === 'notice' ? 'gatewayd' : m.role;
  return el('article', { class: 'msg ' + m.role, dataset: { id: String(m.id) } },
    el('header', {}, who, ' · ', when(m.created_at)), body);
}

const verbosities = ['default', 'off', 'summary', 'full'];

// choiceSelect is a command as a <select>: picking a value sends
// "/CMD value", and the select goes back to its placeholder (the lane's
// head shows what is in force).
function choiceSelect(id, label, cmd, send) {
  const select = el('select', { id, onchange: () => {
    if (select.value) send(`/${cmd} ${select.value}`);
    select.value = '';
  } });
  let shown = null;
  // Refilled only when the choices change: the lane's head polls, and
  // rebuilding an open select would close it under the user's pointer.
  const fill = (values, empty) => {
    const now = JSON.stringify([values, empty]);
    if (now === shown) return;
    shown = now;
    select.replaceChildren(el('option', { value: '' }, values.length ? '—' : empty),
      ...values.map(([value, text]) => el('option', { value }, text)));
    select.disabled = values.length === 0;
  };
  fill([], 'loading…');
  return { node: el('label', {}, label + ' ', select), fill };
}

// commandBar holds the lane's commands. On an API lane they are the slash
// commands posted as messages (so they behave exactly as typed); any lane
// can be reset through the admin route. It returns the bar and a function
// the lane's head calls with each fresh lane, so the effort choices follow
// the lane's model.
function commandBar(key, name, notes) {
  const reset = el('button', { id: 'cmd-reset', type: 'button', onclick: async () => {
    try {
      await api.postJSON(api.adminSessionPath(key, 'reset'), {});
      notes.textContent = 'Lane reset: the next message starts a fresh thread.';
    } catch (err) {
      showError(notes, err);
    }
  } }, 'Reset');
  if (!name) return { node: el('div', { class: 'commands' }, reset), update: () => {} };
  const send = (text) => sendCommand(name, text, notes);
  const button = (id, label, text) => el('button', { id, type: 'button', onclick: () => send(text) }, label);
  const project = choiceSelect('cmd-project', 'Project', 'project', send);
  const model = choiceSelect('cmd-model', 'Model', 'model', send);
  const effort = choiceSelect('cmd-effort', 'Effort', 'effort', send);
  const verbose = choiceSelect('cmd-verbose', 'Verbose', 'verbose', send);
  verbose.fill(verbosities.map((v) => [v, v]));
  let models = null, lane = null;
  // The efforts are those of the lane's model, or of the default model
  // while it chose none; a model codex does not list offers every effort
  // a listed one has.
  const fillEfforts = () => {
    if (!models) return;
    const current = (lane && lane.model) || models.default;
    const m = models.models.find((x) => x.id === current);
    const levels = m ? m.efforts : [...new Set(models.models.flatMap((x) => x.efforts))];
    effort.fill([['default', 'default'], ...levels.map((e) => [e, e])]);
  };
  (async () => {
    try {
      const p = await api.getJSON('/api/projects');
      project.fill(p.projects.map((x) => [x.name, `${x.name} (${x.directory})`]), 'none configured');
    } catch (err) {
      project.fill([], 'unavailable');
      showError(notes, err);
    }
  })();
  (async () => {
    try {
      models = await api.getJSON('/api/models');
      model.fill([['default', `default (${models.default || 'codex decides'})`],
        ...models.models.map((m) => [m.id, m.display_name && m.display_name !== m.id ? `${m.display_name} (${m.id})` : m.id])]);
      fillEfforts();
    } catch (err) {
      model.fill([], 'unavailable');
      effort.fill([], 'unavailable');
      showError(notes, err);
    }
  })();
  const node = el('div', { class: 'commands' },
    button('cmd-new', 'New thread', '/new'), button('cmd-stop', 'Stop', '/stop'),
    button('cmd-retry', 'Retry', '/retry'), button('cmd-compact', 'Compact', '/compact'), reset,
    button('cmd-diff', 'Diff', '/diff'), button('cmd-review', 'Review', '/review'),
    button('cmd-undo', 'Undo', '/undo'), button('cmd-fork', 'Fork', '/fork'),
    button('cmd-threads', 'Threads', '/threads'), button('cmd-handoff', 'Hand off', '/handoff'),
    project.node, model.node, effort.node, verbose.node);
  return { node, update: (l) => { lane = l; fillEfforts(); } };
}

async function sendCommand(name, text, notes) {
  try {
    const answer = await api.postJSON(api.apiLanePath(name, 'messages'), { text, user: 'console' });
    notes.textContent = answer.reply || (answer.notices || []).join('\n') || `${text}: done`;
    // /fork's answer names the new lane: offer the way there.
    if (answer.fork && typeof answer.fork.lane === 'string') {
      notes.append(' ', el('a', { href: '#/lane/' + encodeURIComponent(answer.fork.lane) }, 'Open the fork'));
    }
  } catch (err) {
    showError(notes, err);
  }
}

// --- composer and the streamed reply -------------------------------------

function composer(name, live, notes, replied) {
  const text = el('textarea', { id: 'composer-text', rows: 3, placeholder: 'Message Codex (Enter sends, Shift+Enter new line)', 'aria-label': 'Message' });
  const picker = el('input', { id: 'composer-file', type: 'file', multiple: true });
  const attached = el('ul', { id: 'attached', class: 'attached' });
  const sendButton = el('button', { id: 'composer-send', type: 'submit' }, 'Send');
  let files = [];
  const showFiles = () => attached.replaceChildren(...files.map((f, i) => el('li', {}, `${f.name} (${f.size} bytes) `,
    el('button', { type: 'button', onclick: () => { files.splice(i, 1); showFiles(); } }, 'remove'))));
  const addFiles = (list) => { files = files.concat(Array.from(list)); showFiles(); };
  picker.addEventListener('change', () => { addFiles(picker.files); picker.value = ''; });
  const form = el('form', { id: 'composer', class: 'composer' },
    text, el('div', { class: 'composer-row' }, picker, sendButton), attached);
  const submit = async () => {
    const message = text.value;
    if (message.trim() === '' && files.length === 0) return;
    text.value = '';
    const sending = files;
    files = [];
    showFiles();
    sendButton.disabled = true;
    try {
      await converse(name, message, sending, live);
      await replied();
    } catch (err) {
      showError(notes, err);
    } finally {
      sendButton.disabled = false;
    }
  };
  form.addEventListener('submit', (e) => { e.preventDefault(); submit(); });
  text.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) { e.preventDefault(); submit(); }
  });
  form.addEventListener('dragover', (e) => { e.preventDefault(); form.classList.add('dropping'); });
  form.addEventListener('dragleave', () => form.classList.remove('dropping'));
  form.addEventListener('drop', (e) => {
    e.preventDefault();
    form.classList.remove('dropping');
    if (e.dataTransfer && e.dataTransfer.files.length) addFiles(e.dataTransfer.files);
  });
  return form;
}

function messageBody(text, files) {
  const id = crypto.randomUUID();
  if (files.length === 0) {
    return { headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ text, user: 'console', id }) };
  }
  const form = new FormData();
  form.append('text', text);
  form.append('user', 'console');
  form.append('id', id);
  for (const f of files) form.append('file', f, f.name);
  return { headers: {}, body: form };
}

// converse posts one message and renders its answer as the events come.
// The reply box is laid out before the first word (min-height in CSS), so
// the page does not jump as text streams in.
async function converse(name, text, files, live) {
  const reply = el('div', { class: 'text streaming' });
  const work = el('div', { class: 'work', hidden: true });
  const asks = el('div', { class: 'approvals' });
  const sent = el('ul', { class: 'files' });
  const extra = el('div', { class: 'notices' });
  const state = el('footer', { class: 'state' }, 'waiting for Codex…');
  const you = el('article', { class: 'msg user' }, el('header', {}, 'you'),
    el('div', { class: 'text' }, text + (files.length ? `\n[${files.map((f) => f.name).join(', ')}]` : '')));
  // The growing text comes last, so nothing in the reply moves under it.
  const answer = el('article', { class: 'msg assistant live-reply' }, el('header', {}, 'assistant'), state, work, asks, sent, extra, reply);
  document.getElementById('no-messages')?.remove();
  live.append(you, answer);
  answer.scrollIntoView({ block: 'nearest' });

  const { headers, body } = messageBody(text, files);
  headers.Accept = 'text/event-stream';
  const resp = await api.request(api.apiLanePath(name, 'messages'), { method: 'POST', headers, body });
  if (!resp.ok) {
    const err = await api.errorOf(resp);
    state.textContent = 'failed: ' + err.message;
    state.classList.add('error');
    return;
  }
  let textSoFar = '';
  const show = (t) => { textSoFar = t; reply.replaceChildren(renderMarkdown(t)); };
  const handlers = {
    delta: (d) => show(textSoFar + d),
    replace: (d) => show(d),
    notice: (d) => extra.append(el('p', {}, d)),
    progress: (v) => renderWork(work, v),
    approval: (a) => asks.append(approvalNode(a)),
    question: (q) => asks.append(questionNode(q)),
    file: (f) => sent.append(fileNode(f)),
    error: (d) => { state.textContent = 'error: ' + d; state.classList.add('error'); },
    done: (r) => {
      // A command's answer or a refusal ("Codex is not logged in…") is the
      // lane's reply to this message: it reads like one.
      if (typeof r.reply === 'string' && r.reply !== textSoFar) show(r.reply);
      if (r.status === 'notice') {
        answer.classList.add('notice');
        checkAccount();
      }
      if (r.progress) renderWork(work, r.progress);
      state.textContent = [r.status, r.summary, r.thread_id ? 'thread ' + r.thread_id : ''].filter(Boolean).join(' · ');
      state.classList.add('done');
      answer.dataset.status = r.status || '';
    },
  };
  await readEvents(resp, (event, data) => {
    const handle = handlers[event];
    if (!handle) return;
    let value;
    try { value = JSON.parse(data); } catch { value = data; }
    handle(value);
  });
  reply.classList.remove('streaming');
}

function renderWork(work, v) {
  work.hidden = false;
  const plan = (v.plan || []).map((s) => el('li', { class: 'step ' + s.status }, s.step));
  const actions = (v.actions || []).map((a) => el('li', { class: 'action ' + a.status },
    el('span', { class: 'kind' }, a.kind), ' ', el('code', {}, a.title), ' ',
    el('span', { class: 'status' }, a.status + (a.exit_code !== undefined ? ` (exit ${a.exit_code})` : '')),
    a.output ? el('pre', {}, a.output) : null));
  work.replaceChildren(...[
    plan.length ? el('ol', { class: 'plan' }, ...plan) : null,
    actions.length ? el('ul', { class: 'actions' }, ...actions) : null,
    v.retry ? el('p', { class: 'note' }, v.retry) : null,
    v.summary ? el('p', { class: 'summary' }, v.summary) : null,
  ].filter(Boolean));
}

const decisionLabels = { accept: 'Allow', acceptForSession: 'Allow for session', decline: 'Deny' };
const decisionOutcomes = { accept: 'Allowed once', acceptForSession: 'Allowed for this session', decline: 'Denied' };

function approvalNode(a) {
  const outcome = el('span', { class: 'outcome' });
  // Only the decisions the gateway takes: one that widens the lane's
  // boundary is allowed once, never for the session.
  const offered = Object.entries(decisionLabels).filter(([d]) => !a.decisions || a.decisions.includes(d));
  const buttons = offered.map(([decision, label]) => el('button', {
    type: 'button', class: 'decide-' + decision, onclick: async () => {
      buttons.forEach((b) => { b.disabled = true; });
      try {
        await api.postJSON(a.decide, { decision, user: 'console' });
        outcome.textContent = decisionOutcomes[decision];
      } catch (err) {
        outcome.textContent = String(err.message || err);
        buttons.forEach((b) => { b.disabled = false; });
      }
    },
  }, label));
  return el('div', { class: 'approval', dataset: { id: a.id } },
    el('p', {}, a.kind === 'command' ? 'Codex asks to run a command:' : 'Codex asks to change files:'),
    a.escalation ? el('p', { class: 'escalation' }, `It would ${a.escalation}: only an admin can allow it, once.`) : null,
    // What the agent chose is text in a <pre>, never markup.
    el('pre', {}, approvalDetails(a)),
    ...buttons, outcome);
}

function approvalDetails(a) {
  const lines = [];
  const add = (label, v) => { if (v) lines.push(label + v); };
  add('command: ', a.command);
  (a.files || []).forEach((f) => add('file:    ', f));
  add('grant:   writes under ', a.grant_root);
  add('network: ', a.network);
  add('in:      ', a.cwd);
  add('reason:  ', a.reason);
  return lines.join('\n');
}

// questionNode shows one of Codex's question requests (Plan mode): each
// question with a button per option and, where any text answers it, a
// text box. Each question is answered on its own, so one the user is
// still thinking about does not hold back the others.
function questionNode(q) {
  return el('div', { class: 'question', dataset: { id: q.id } },
    ...q.questions.map((item) => questionItem(q, item)));
}

function questionItem(q, item) {
  const outcome = el('span', { class: 'outcome' });
  const options = item.options || [];
  const controls = [];
  const disable = (off) => controls.forEach((c) => { c.disabled = off; });
  const answer = async (value) => {
    if (value.trim() === '') return;
    disable(true);
    try {
      await api.postJSON(q.answer, { answers: { [item.id]: [value] }, user: 'console' });
      // A secret answer is not left on the screen.
      outcome.textContent = 'Answered: ' + (item.is_secret ? '(secret)' : value);
    } catch (err) {
      outcome.textContent = String(err.message || err);
      disable(false);
    }
  };
  const buttons = options.map((o) => el('button', {
    type: 'button', class: 'answer-option', title: o.description || undefined, onclick: () => answer(o.label),
  }, o.label));
  controls.push(...buttons);
  let form = null;
  if (item.is_other || options.length === 0) {
    const input = el('input', { type: item.is_secret ? 'password' : 'text', class: 'answer-text', autocomplete: 'off',
      placeholder: options.length ? 'Another answer' : 'Your answer', 'aria-label': item.header || item.question });
    const send = el('button', { type: 'submit', class: 'answer-send' }, 'Send');
    controls.push(input, send);
    form = el('form', { class: 'answer-form', onsubmit: (e) => { e.preventDefault(); answer(input.value); } }, input, send);
  }
  if (item.answered) {
    disable(true);
    outcome.textContent = 'Answered';
  }
  return el('div', { class: 'question-item', dataset: { qid: item.id } },
    el('p', {}, item.header ? el('strong', {}, item.header + ': ') : null, item.question),
    ...buttons, form, outcome);
}

function fileNode(f) {
  const note = el('span', { class: 'note' });
  const link = el('a', { href: '#', class: 'file-link', onclick: async (e) => {
    e.preventDefault();
    link.dataset.state = 'fetching';
    try {
      await api.download(f.url, f.name);
      link.dataset.state = 'saved';
    } catch (err) {
      link.dataset.state = 'failed';
      note.textContent = String(err.message || err);
    }
  } }, f.name);
  return el('li', {}, link, ` (${f.size} bytes) `, note);
}

// --- status --------------------------------------------------------------

// metricNames are the /metrics names the status table says in words; the
// others show their help text.
const metricNames = {
  gatewayd_running_turns: 'Turns running',
  gatewayd_live_lanes: 'Live lanes',
  gatewayd_queued_messages: 'Queued messages',
  gatewayd_inbound_messages_total: 'Inbound messages',
  gatewayd_inbound_duplicates_total: 'Duplicates ignored',
  gatewayd_outbound_messages_total: 'Outbound deliveries',
  gatewayd_turns_total: 'Turns finished',
  gatewayd_turn_duration_seconds_count: 'Turns timed',
  gatewayd_turn_duration_seconds_sum: 'Turn time, total (s)',
  gatewayd_thread_resumes_total: 'Thread bindings',
  gatewayd_platform_errors_total: 'Platform errors',
  gatewayd_store_commit_duration_seconds_count: 'Store commits',
  gatewayd_store_commit_duration_seconds_sum: 'Store commit time, total (s)',
  gatewayd_store_queue_depth: 'Store queue depth',
  gatewayd_app_server_restarts_total: 'App-server restarts',
  gatewayd_codex_tokens_total: 'Codex tokens',
  gatewayd_codex_rate_limit_used_percent: 'Rate limit used (%)',
  gatewayd_build_info: 'Build',
  process_resident_memory_bytes: 'Memory (resident)',
  process_cpu_seconds_total: 'CPU time (s)',
  process_open_fds: 'Open files',
  go_goroutines: 'Goroutines',
};

function bytes(n) {
  if (n < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n, u = -1;
  do { v /= 1024; u++; } while (v >= 1024 && u < units.length - 1);
  return `${v.toFixed(v < 10 ? 1 : 0)} ${units[u]}`;
}

function duration(seconds) {
  const d = Math.floor(seconds / 86400), h = Math.floor(seconds % 86400 / 3600), m = Math.floor(seconds % 3600 / 60);
  if (d > 0) return `${d} d ${h} h`;
  if (h > 0) return m > 0 ? `${h} h ${m} min` : `${h} h`;
  return m > 0 ? `${m} min` : `${seconds} s`;
}

function metricValue(m) {
  if (m.name.endsWith('_bytes')) return bytes(m.value);
  return Number.isInteger(m.value) ? String(m.value) : m.value.toFixed(3);
}

function statusPage() {
  const health = el('p', { id: 'health' }, 'checking…');
  const overview = el('dl', { id: 'status-overview', class: 'overview' });
  const limits = el('tbody', { id: 'limits-body' });
  const limitsNote = el('p', { id: 'limits-note', class: 'note' });
  const table = el('tbody', { id: 'metrics-body' });
  view.replaceChildren(el('h1', {}, 'Status'), health, overview,
    el('h2', {}, 'Rate limits'), limitsNote,
    el('div', { class: 'table-wrap' }, el('table', { class: 'limits' },
      el('thead', {}, el('tr', {}, ...['Window', 'Used', 'Length', 'Resets at'].map((c) => el('th', {}, c)))), limits)),
    el('h2', {}, 'Metrics'),
    el('div', { class: 'table-wrap' },
      el('table', { class: 'metrics' }, el('thead', {}, el('tr', {}, el('th', {}, 'What'), el('th', {}, 'Labels'), el('th', {}, 'Value'))), table)));
  return poll(async () => {
    try {
      const s = await api.getJSON('/api/status');
      health.textContent = s.health.state === 'ok' ? 'Healthy' : `Unavailable: ${s.health.reason || s.health.state}`;
      health.className = s.health.state === 'ok' ? 'ok' : 'error';
      renderOverview(overview, s);
      renderLimits(limits, limitsNote, s.rate_limits);
      table.replaceChildren(...s.metrics.map((m) => el('tr', { dataset: { name: m.name } },
        el('td', { title: m.help }, metricNames[m.name] || m.help || m.name),
        el('td', { class: 'mono' }, Object.entries(m.labels || {}).map(([k, v]) => `${k}=${v}`).join(' ')),
        el('td', { class: 'num' }, metricValue(m)))));
    } catch (err) {
      showError(health, err);
    }
  });
}

function renderOverview(dl, s) {
  const c = s.codex;
  const version = !c.version ? 'unknown'
    : c.version === c.pinned_version ? `${c.version} (the pinned version)` : `${c.version} (this gatewayd is verified with ${c.pinned_version})`;
  let account = c.account_error ? `unknown: ${c.account_error}` : '';
  if (c.account) {
    account = c.account.type ? [c.account.type, c.account.plan].filter(Boolean).join(', ')
      : c.account.requires_openai_auth ? 'not logged in' : 'none needed (a custom model provider)';
  }
  const st = s.store.error ? `unknown: ${s.store.error}`
    : `${bytes(s.store.total_bytes)} (database ${bytes(s.store.database_bytes)}, WAL ${bytes(s.store.wal_bytes)})`;
  const row = (label, value, id) => [el('dt', {}, label), el('dd', { id }, value)];
  dl.replaceChildren(
    ...row('gatewayd', `${s.gatewayd.version}, up ${duration(s.gatewayd.uptime_seconds)}`, 'status-gatewayd'),
    ...row('Codex', version, 'status-codex-version'),
    ...row('Account / provider', account, 'status-account'),
    ...row('Turns', `${s.turns.running} running, ${s.turns.queued} queued`, 'status-turns'),
    ...row('Lanes', `${s.lanes.live} live of ${s.lanes.known} known`, 'status-lanes'),
    ...row('Store on disk', st, 'status-store'),
  );
}

function renderLimits(body, note, r) {
  const windows = (r && r.windows) || [];
  note.textContent = windows.length ? (r.reached_type ? `Limit reached: ${r.reached_type}` : '')
    : 'Codex has not reported rate limits yet (an API-key account has none).';
  body.replaceChildren(...windows.map((w) => el('tr', { dataset: { window: w.name } },
    el('td', {}, w.name),
    el('td', { class: 'num' }, `${w.used_percent}%`),
    el('td', {}, w.window_minutes ? duration(w.window_minutes * 60) : ''),
    el('td', {}, w.resets_at ? when(w.resets_at) : ''))));
}

route();
