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

// --- routing -------------------------------------------------------------

function route() {
  stopView();
  stopView = () => {};
  document.documentElement.classList.remove('with-composer');
  const hash = location.hash.replace(/^#/, '') || '/';
  if (hash.startsWith('/lane/')) stopView = lanePage(decodeHash(hash.slice('/lane/'.length)));
  else if (hash === '/status') stopView = statusPage();
  else stopView = lanesPage();
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
  const load = async () => {
    try {
      const q = filter.value.trim();
      const data = await api.getJSON('/api/lanes' + (q ? '?q=' + encodeURIComponent(q) : ''));
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

function lanePage(key) {
  const name = api.laneName(key);
  document.documentElement.classList.toggle('with-composer', name !== '');
  const head = el('div', { id: 'lane-head', class: 'lane-head' });
  const notes = el('div', { id: 'lane-notes', class: 'note' });
  const transcript = el('div', { id: 'transcript', class: 'transcript' });
  const older = el('button', { id: 'older', type: 'button', hidden: true }, 'Older messages');
  const live = el('div', { id: 'live', class: 'live' });
  view.replaceChildren(
    el('p', {}, el('a', { href: '#/' }, '← all lanes')),
    el('h1', { class: 'mono' }, key),
    head, commandBar(key, name, notes), notes, older, transcript, live,
    name ? composer(name, live, notes) : el('p', { class: 'note' }, 'Only API lanes (v1:api:NAME) can be written to from here.'),
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
  return poll(async () => {
    try {
      renderLaneHead(head, await api.getJSON(`/api/lanes/${api.lanePath(key)}`));
    } catch (err) {
      if (err.status === 404 && name) head.replaceChildren(el('p', { class: 'note' }, 'A new API lane: it starts with your first message.'));
      else showError(head, err);
    }
  });
}

function renderLaneHead(head, l) {
  const row = (label, value, id) => [el('dt', {}, label), el('dd', { id }, value || '—')];
  const usage = l.last_turn && l.last_turn.context_window > 0
    ? `${l.last_turn.context_tokens} / ${l.last_turn.context_window} tokens of context` : '';
  head.replaceChildren(el('dl', {},
    ...row('Platform', l.platform),
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

function messageNode(m) {
  const body = el('div', { class: 'text' });
  if (m.role === 'assistant') body.append(renderMarkdown(m.text));
  else body.textContent = m.text;
  return el('article', { class: 'msg ' + m.role, dataset: { id: String(m.id) } },
    el('header', {}, m.role, ' · ', when(m.created_at)), body);
}

const efforts = ['default', 'minimal', 'low', 'medium', 'high', 'xhigh'];
const verbosities = ['default', 'off', 'summary', 'full'];

// commandBar holds the lane's commands. On an API lane they are the slash
// commands posted as messages (so they behave exactly as typed); any lane
// can be reset through the admin route.
function commandBar(key, name, notes) {
  const reset = el('button', { id: 'cmd-reset', type: 'button', onclick: async () => {
    try {
      await api.postJSON(`/api/admin/sessions/${encodeURIComponent(key)}/reset`, {});
      notes.textContent = 'Lane reset: the next message starts a fresh thread.';
    } catch (err) {
      showError(notes, err);
    }
  } }, 'Reset');
  if (!name) return el('div', { class: 'commands' }, reset);
  const send = (text) => sendCommand(name, text, notes);
  const button = (id, label, text) => el('button', { id, type: 'button', onclick: () => send(text) }, label);
  const select = (id, label, values, cmd) => el('label', {}, label + ' ',
    el('select', { id, onchange: (e) => { if (e.target.value) send(`/${cmd} ${e.target.value}`); e.target.value = ''; } },
      el('option', { value: '' }, '—'), ...values.map((v) => el('option', { value: v }, v))));
  const typed = (id, label, cmd) => {
    const input = el('input', { id, size: 10, placeholder: label, 'aria-label': label });
    return el('form', { class: 'typed', onsubmit: (e) => { e.preventDefault(); if (input.value.trim()) send(`/${cmd} ${input.value.trim()}`); input.value = ''; } },
      input, el('button', { type: 'submit' }, 'Set'));
  };
  return el('div', { class: 'commands' },
    button('cmd-new', 'New thread', '/new'), button('cmd-stop', 'Stop', '/stop'),
    button('cmd-retry', 'Retry', '/retry'), button('cmd-compact', 'Compact', '/compact'), reset,
    typed('cmd-project', 'project', 'project'), typed('cmd-model', 'model', 'model'),
    select('cmd-effort', 'Effort', efforts, 'effort'), select('cmd-verbose', 'Verbose', verbosities, 'verbose'));
}

async function sendCommand(name, text, notes) {
  try {
    const answer = await api.postJSON(`/api/lanes/${name}/messages`, { text, user: 'console' });
    notes.textContent = answer.reply || (answer.notices || []).join('\n') || `${text}: done`;
  } catch (err) {
    showError(notes, err);
  }
}

// --- composer and the streamed reply -------------------------------------

function composer(name, live, notes) {
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
  const resp = await api.request(`/api/lanes/${name}/messages`, { method: 'POST', headers, body });
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
    file: (f) => sent.append(fileNode(f)),
    error: (d) => { state.textContent = 'error: ' + d; state.classList.add('error'); },
    done: (r) => {
      if (typeof r.reply === 'string' && r.reply !== textSoFar && r.status !== 'notice') show(r.reply);
      if (r.status === 'notice' && r.reply) extra.append(el('p', {}, r.reply));
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
  const buttons = Object.entries(decisionLabels).map(([decision, label]) => el('button', {
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
    el('p', {}, a.kind === 'command' ? 'Codex asks to run ' : 'Codex asks to change files ',
      a.command ? el('code', {}, a.command) : null, a.cwd ? ` in ${a.cwd}` : '', a.reason ? ` — ${a.reason}` : ''),
    ...buttons, outcome);
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

const shownMetrics = [
  ['gatewayd_running_turns', 'Turns running'],
  ['gatewayd_live_lanes', 'Live lanes'],
  ['gatewayd_queued_messages', 'Queued messages'],
  ['gatewayd_codex_tokens_total', 'Codex tokens'],
  ['gatewayd_codex_rate_limit_used_percent', 'Rate limit used (%)'],
  ['gatewayd_inbound_messages_total', 'Inbound messages'],
  ['gatewayd_app_server_restarts_total', 'App-server restarts'],
  ['gatewayd_store_queue_depth', 'Store queue depth'],
  ['gatewayd_build_info', 'Build'],
];

function statusPage() {
  const health = el('p', { id: 'health' }, 'checking…');
  const table = el('tbody', { id: 'metrics-body' });
  const all = el('pre', { id: 'metrics-raw' });
  view.replaceChildren(el('h1', {}, 'Status'), health,
    el('div', { class: 'table-wrap' },
      el('table', { class: 'metrics' }, el('thead', {}, el('tr', {}, el('th', {}, 'What'), el('th', {}, 'Labels'), el('th', {}, 'Value'))), table)),
    el('details', {}, el('summary', {}, 'All of /metrics'), all));
  return poll(async () => {
    try {
      const resp = await api.request('/healthz');
      const h = await resp.json();
      health.textContent = h.status === 'ok' ? 'Healthy' : `Unavailable: ${h.reason || h.status}`;
      health.className = h.status === 'ok' ? 'ok' : 'error';
      const text = await (await api.request('/metrics')).text();
      all.textContent = text;
      table.replaceChildren(...metricRows(text));
    } catch (err) {
      showError(health, err);
    }
  });
}

function metricRows(text) {
  const rows = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = line.match(/^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)/);
    if (!m) continue;
    const known = shownMetrics.find(([name]) => name === m[1]);
    if (known) rows.push(el('tr', {}, el('td', {}, known[1]), el('td', { class: 'mono' }, m[2] || ''), el('td', { class: 'num' }, m[3])));
  }
  return rows;
}

route();
