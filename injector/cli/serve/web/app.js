// SPDX-License-Identifier: MIT
// probing serve's page: the views (process list, stacks, SQL console, flame graph) drawn from
// the JSON API (docs/http.md). Plain DOM, no framework; every text from the target goes in
// through textContent, never as HTML. The route is the URL's fragment: #/, #/p/PID/stacks,
// #/p/PID/sql, #/p/PID/flame, #/p/PID/torch, #/p/PID/memory, #/job/NAME.
'use strict';

const $ = (id) => document.getElementById(id);
let timer = null;      // the stacks view's auto-refresh
let perfTimer = null;  // the flame view's status poll
let view = {};         // {name, pid}

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) {
    e.textContent = String(text);
    // Long text wraps anywhere (style.css); the whole of it is also on hover.
    if (e.textContent.length > 40) e.title = e.textContent;
  }
  if (cls) e.className = cls;
  return e;
}

function showError(msg) {
  const e = $('error');
  e.textContent = msg || '';
  e.hidden = !msg;
}

// One API call; resolves to the parsed JSON (or text), rejects with the server's message.
async function api(path, body) {
  const opt = body === undefined ? {} : {
    method: 'POST', headers: {'Content-Type': 'application/json'}, body: JSON.stringify(body),
  };
  const r = await fetch(path, opt);
  const type = r.headers.get('Content-Type') || '';
  const data = type.startsWith('application/json') ? await r.json() : await r.text();
  if (!r.ok) {
    const err = new Error((data && data.error) || ('HTTP ' + r.status));
    err.status = r.status;
    throw err;
  }
  return data;
}

function mib(bytes) {
  return bytes >= 0 ? (bytes / 1048576).toFixed(1) + ' MiB' : '?';
}

// GET path's answer, or null after showing "<what> failed: ...".
async function apiOrShow(path, what) {
  try {
    return await api(path);
  } catch (e) {
    showError(what + ' failed: ' + e.message);
    return null;
  }
}

// ---- process list ----
async function loadProcesses() {
  const tbody = $('procs').tBodies[0];
  const procs = await apiOrShow('/api/processes', 'listing processes');
  if (!procs) return;
  tbody.replaceChildren();
  procs.sort((a, b) => (b.probe - a.probe) || (a.pid - b.pid));
  // A remote probe (serve --target) is named by its HOST:PORT, a local process by its pid.
  for (const p of procs) {
    const tr = el('tr');
    tr.dataset.pid = p.pid;
    tr.dataset.id = p.id;
    tr.append(el('td', p.target ? p.target + ' (pid ' + p.pid + ')' : p.pid),
              el('td', p.command, 'cmd'), el('td', p.python),
              el('td', p.job ? 'rank ' + p.rank + ' / ' + p.job : '-'), el('td', mib(p.rss)),
              el('td', p.threads));
    const td = el('td');
    if (p.probe) {
      for (const [name, label] of [['stacks', 'stacks'], ['sql', 'SQL'], ['flame', 'flame graph'],
                                     ['torch', 'torch'], ['memory', 'memory']]) {
        const a = el('a', label);
        a.href = '#/p/' + p.id + '/' + name;
        td.append(a, ' ');
      }
    } else if (p.target) {
      td.append(el('span', p.error || 'not answering', 'muted'));
    } else {
      const b = el('button', 'attach');
      b.className = 'attach';
      b.addEventListener('click', async () => {
        b.disabled = true;
        b.textContent = 'attaching…';
        try {
          await api('/api/processes/' + p.pid + '/attach', {});
          location.hash = '#/p/' + p.pid + '/stacks';
        } catch (e) {
          showError('attach to ' + p.pid + ' failed: ' + e.message);
          b.disabled = false;
          b.textContent = 'attach';
        }
      });
      td.append(b);
    }
    tr.append(td);
    tbody.append(tr);
  }
  if (!procs.length) {
    const tr = el('tr');
    const td = el('td', 'no Python processes of this user', 'muted');
    td.colSpan = 7;
    tr.append(td);
    tbody.append(tr);
  }
}

// ---- GPUs (NVML, read by the server) ----
async function loadGpus() {
  const d = await apiOrShow('/api/gpus', 'reading the GPUs');
  if (!d) return;
  const none = $('gpus-none'), table = $('gpus-table'), tbody = table.tBodies[0];
  none.hidden = !d.error;
  none.textContent = d.error || '';
  table.hidden = !!d.error;
  tbody.replaceChildren();
  const na = (v, unit) => (v === null || v === undefined ? '-' : v + unit);
  for (const g of d.gpus) {
    const procs = d.processes.filter((p) => p.gpu === g.gpu)
      .map((p) => p.pid + (p.usedMemory === null ? '' : ' (' + mib(p.usedMemory) + ')'));
    const tr = el('tr');
    tr.append(el('td', g.gpu), el('td', g.name), el('td', na(g.utilGpu, ' %')),
              el('td', mib(g.memUsed) + ' / ' + mib(g.memTotal)), el('td', na(g.temperatureC, ' C')),
              el('td', na(g.powerW, ' W')), el('td', na(g.clockSmMhz, ' MHz')),
              el('td', g.throttle === null ? '-' : g.throttle || 'none'),
              el('td', na(g.eccUncorrected, '')),
              el('td', g.xidCount ? g.xidCount + ' (last ' + g.lastXid + ')' : na(g.xidCount, '')),
              el('td', procs.join(', ') || '-'));
    tbody.append(tr);
  }
}

// ---- distributed jobs ----
async function loadJobs() {
  const doc = await apiOrShow('/api/jobs', 'listing jobs');
  if (!doc) return;
  const tbody = $('jobs-table').tBodies[0];
  tbody.replaceChildren();
  for (const j of doc.jobs || []) {
    const tr = el('tr');
    tr.dataset.job = j.job;
    const a = el('a', 'grouped stacks');
    a.href = '#/job/' + encodeURIComponent(j.job);
    const td = el('td');
    td.append(a);
    const nodes = [...new Set((j.ranks || []).map((x) => x.node))];
    tr.append(el('td', j.job), el('td', j.launcher), el('td', (j.ranks || []).length),
              el('td', j.world_size), el('td', nodes.join(', ')), td);
    tbody.append(tr);
  }
  $('jobs').hidden = !(doc.jobs || []).length;
}

function ranges(v) {
  const out = [];
  for (let i = 0; i < v.length; i++) {
    let j = i;
    while (j + 1 < v.length && v[j + 1] === v[j] + 1) j++;
    out.push(i === j ? String(v[i]) : v[i] + '-' + v[j]);
    i = j;
  }
  return out.join(',');
}

async function loadJob() {
  const box = $('job-groups');
  $('job-status').textContent = 'reading every rank…';
  try {
    const d = await api('/api/jobs/stacks', {job: view.job});
    box.replaceChildren();
    for (const g of d.groups) {
      const div = el('div', null, 'thread' + (g.stuck ? ' gil' : ''));
      const h = el('h3', 'ranks ' + ranges(g.ranks) + ' (' + g.ranks.length + ') on ' +
                         g.nodes.join(', ') + (g.pid ? ', pid ' + g.pid : ''));
      if (g.stuck) h.append(el('span', 'stuck', 'badge gil'));
      div.append(h);
      const ol = el('ol', null, 'frames');
      for (const f of g.frames) ol.append(frameLine({name: f.func, file: f.file, line: f.line}));
      div.append(ol);
      box.append(div);
    }
    $('job-status').textContent = d.groups.length + ' group' + (d.groups.length === 1 ? '' : 's') +
        ' of ' + d.world_size + ' ranks' + (d.missing.length ? ', missing: ' + ranges(d.missing) : '') +
        ', at ' + new Date().toLocaleTimeString();
    showError('');
  } catch (e) {
    $('job-status').textContent = '';
    showError('job ' + view.job + ': ' + e.message);
  }
}

// ---- open a trace in Perfetto ----
// Perfetto's documented way for a dashboard to open a trace it holds ("Deep linking to the
// Perfetto UI"): open ui.perfetto.dev in a tab, post 'PING' until it answers 'PONG', then post
// {perfetto: {buffer, title, fileName, url}}. The tab is opened in the click itself (a popup
// blocker allows only that); the trace is fetched meanwhile.
const PERFETTO = 'https://ui.perfetto.dev';

async function openInPerfetto() {
  const status = $('perfetto-status');
  const win = window.open(PERFETTO);
  if (!win) {
    status.textContent = 'the browser blocked the new tab: allow pop-ups for this page, or ' +
        'download the trace and open it in Perfetto';
    return;
  }
  status.textContent = 'fetching the trace…';
  let buffer;
  try {
    const r = await fetch('/api/processes/' + view.pid + '/torch/trace?steps=3');
    if (!r.ok) throw new Error((await r.json()).error || 'HTTP ' + r.status);
    buffer = await r.arrayBuffer();
  } catch (e) {
    win.close();
    status.textContent = '';
    showError('torch trace: ' + e.message);
    return;
  }
  status.textContent = 'waiting for Perfetto to load…';
  let tries = 0;
  const ping = setInterval(() => {
    if (win.closed || ++tries > 600) { // 30 s
      clearInterval(ping);
      window.removeEventListener('message', onMessage);
      status.textContent = win.closed ? 'the Perfetto tab was closed'
          : 'Perfetto did not answer within 30 s (no internet?): download the trace instead';
      return;
    }
    win.postMessage('PING', PERFETTO);
  }, 50);
  function onMessage(evt) {
    if (evt.source !== win || evt.origin !== PERFETTO || evt.data !== 'PONG') return;
    clearInterval(ping);
    window.removeEventListener('message', onMessage);
    const name = 'torch-trace-' + view.pid + '.json';
    win.postMessage({perfetto: {buffer, title: 'probing: perf --torch of process ' + view.pid,
                                fileName: name, url: location.href}}, PERFETTO);
    status.textContent = 'sent to Perfetto (' + Math.round(buffer.byteLength / 1024) + ' KiB)';
  }
  window.addEventListener('message', onMessage);
}

// ---- stacks ----
let lastDump = null;

function frameLine(f) {
  const li = el('li');
  li.append(el('span', f.name), ' ', el('span', '(' + f.file + ':' + f.line + ')', 'loc'));
  return li;
}

function localsTable(f, why) {
  const t = el('table', null, 'locals');
  const locals = f.locals || [];
  // why: the probe's note (locals read from memory when the GIL could not be had, or none).
  if (why || !locals.length) {
    const tr = el('tr');
    tr.append(el('td', why || '(no locals)', 'muted'));
    t.append(tr);
  }
  for (const v of locals) {
    const tr = el('tr');
    tr.append(el('td', v.name), el('td', v.value), el('td', v.type, 'muted'));
    t.append(tr);
  }
  return t;
}

async function toggleLocals(li, tid, index) {
  const next = li.nextElementSibling;
  if (next && next.classList.contains('locals-row')) {
    next.remove();
    return;
  }
  try {
    const d = await api('/api/processes/' + view.pid + '/stacks?locals=1');
    const t = d.threads.find((x) => x.id === tid);
    const f = t && t.frames[index];
    const row = el('li', null, 'locals-row');
    row.append(f ? localsTable(f, d.localsError) : el('span', 'the frame is gone', 'muted'));
    li.after(row);
  } catch (e) {
    showError('locals failed: ' + e.message);
  }
}

function drawStacks(d) {
  const box = $('threads');
  box.replaceChildren();
  const holder = d.gil && d.gil.holder;
  $('stacks-gil').textContent = 'CPython ' + d.python + ', ' + d.threads.length + ' thread' +
      (d.threads.length === 1 ? '' : 's') + ', GIL ' +
      (holder ? 'held by thread ' + holder : 'not held') + ', at ' +
      new Date().toLocaleTimeString();
  for (const t of d.threads) {
    const div = el('div', null, 'thread' + (t.holdsGil ? ' gil' : ''));
    div.dataset.tid = t.id;
    const h = el('h3', 'Thread ' + t.id + ' "' + (t.name || '') + '"');
    if (t.main) h.append(el('span', 'main', 'badge'));
    if (t.daemon) h.append(el('span', 'daemon', 'badge'));
    if (t.holdsGil) h.append(el('span', 'holds the GIL', 'badge gil'));
    if (t.truncated) h.append(el('span', 'truncated', 'badge'));
    div.append(h);
    const ol = el('ol', null, 'frames');
    t.frames.forEach((f, i) => {
      const li = frameLine(f);
      li.addEventListener('click', () => toggleLocals(li, t.id, i));
      ol.append(li);
    });
    if (!t.frames.length) ol.append(el('li', '(no Python frames)', 'muted'));
    div.append(ol);
    box.append(div);
  }
}

// ---- asyncio tasks (the stacks view's "asyncio tasks"): a box per event loop, each task under
// the task that awaits it with its coroutine chain innermost first, as debug --dump --tasks ----
const TASK_DEPTH = 64;

function taskLabel(t) {
  return '"' + (t ? t.name : '?') + '"';
}

function taskItem(byId, t, path) {
  const li = el('li', null, 'task' + (t.cycle ? ' cycle' : ''));
  li.dataset.id = t.id;
  li.dataset.name = t.name;
  const head = el('div', null, 'task-head');
  head.append(el('span', '(T) ' + taskLabel(t)), ' ', el('span', t.state, 'badge state'));
  if (t.running) head.append(' ', el('span', 'running', 'badge'));
  if (t.cycle) head.append(' ', el('span', 'await cycle ' + t.cycle, 'badge'));
  li.append(head);
  if (path.includes(t.id)) {
    head.append(' ', el('span', '(await cycle: see above)', 'muted'));
    return li;
  }
  const awaits = t.awaits || [];
  if (awaits.length === 1) {
    head.append(' ', el('span', 'awaits task ' + taskLabel(byId.get(awaits[0])), 'awaits'));
  } else if (t.waiter) {
    head.append(' ', el('span', 'awaits ' + t.waiter.type + ' ' + t.waiter.id, 'awaits'));
  }
  const ol = el('ol', null, 'frames chain');
  for (const f of t.frames || []) ol.append(frameLine(f));
  if (ol.childElementCount) li.append(ol);
  if (awaits.length && path.length + 1 < TASK_DEPTH) {
    const ul = el('ul', null, 'tasks');
    for (const id of awaits) {
      const c = byId.get(id);
      if (c) ul.append(taskItem(byId, c, path.concat([t.id])));
    }
    li.append(ul);
  }
  return li;
}

// A tree starts at a task no task awaits, and at the first task of a cycle that only the cycle
// awaits.
function taskRoot(t, cycles) {
  const by = t.awaitedBy || [];
  if (!by.length) return true;
  const c = t.cycle ? cycles[t.cycle - 1] : null;
  return by.length === 1 && !!c && c[0] === t.id;
}

function drawTasks(d) {
  const box = $('tasks');
  box.replaceChildren();
  const a = d && d.asyncio;
  box.hidden = !a;
  if (!a) return;
  if (!a.read) {
    box.append(el('p', 'asyncio tasks: not read: ' + a.error, 'error'));
    return;
  }
  const tasks = a.tasks || [], cycles = a.cycles || [];
  const byId = new Map(tasks.map((t) => [t.id, t]));
  const h = el('h2', 'asyncio: ' + tasks.length + ' task' + (tasks.length === 1 ? '' : 's') +
                ', read ' + (a.via === 'gil' ? 'with' : 'without') + ' the GIL');
  if (a.truncated) h.append(el('span', 'more not read: the bound was reached', 'badge'));
  box.append(h);
  if (!tasks.length) box.append(el('p', 'no asyncio task in this process', 'muted'));
  for (const c of cycles) {
    box.append(el('p', 'deadlock: await cycle: ' +
                  c.concat([c[0]]).map((id) => taskLabel(byId.get(id))).join(' -> '), 'deadlock'));
  }
  const names = new Map((d.threads || []).map((t) => [t.id, t.name]));
  const loops = [];
  for (const t of tasks) if (!loops.includes(t.loop)) loops.push(t.loop);
  for (const loop of loops) {
    const mine = tasks.filter((t) => t.loop === loop);
    const div = el('div', null, 'loop');
    div.dataset.loop = loop || '';
    const tid = mine[0].threadId;
    div.append(el('h3', !loop ? 'Tasks without a loop'
                  : tid ? 'Loop ' + loop + ' in thread ' + tid + ' "' + (names.get(tid) || '') + '"'
                  : 'Loop ' + loop + ' (not running)'));
    const ul = el('ul', null, 'tasks');
    for (const t of mine) if (taskRoot(t, cycles)) ul.append(taskItem(byId, t, []));
    div.append(ul);
    box.append(div);
  }
}

// ---- child processes (the stacks view's "child processes"): each child under its parent, its
// role (a DataLoader worker's id), its threads' Python stacks read from outside, or why not ----
function drawChildren(d) {
  const box = $('children');
  box.replaceChildren();
  box.hidden = !d;
  if (!d) return;
  const kids = d.children || [];
  box.append(el('h2', 'child processes: ' + kids.length +
      (d.childrenLeftOut ? ' (' + d.childrenLeftOut + ' more not read)' : '')));
  if (!kids.length) box.append(el('p', 'no child process', 'muted'));
  for (const c of kids) {
    const div = el('div', null, 'child');
    const h = el('h3', 'Process ' + c.pid + ' "' + (c.comm || '') + '" (child of ' + c.ppid + ')');
    // the role ("DataLoader worker 1"), and of how many when its stack said
    if (c.role) h.append(el('span', c.role + (c.numWorkers ? ' of ' + c.numWorkers : ''), 'badge'));
    div.append(h);
    if (c.note) {
      div.append(el('p', c.note + (c.cmdline ? ': ' + c.cmdline : ''), 'muted'));
    } else {
      for (const t of c.threads || []) {
        const name = el('p', 'Thread ' + t.id + ' "' + (t.name || '') + '"' +
            (t.main ? ' (main)' : ''), 'child-thread');
        const ol = el('ol', null, 'frames');
        for (const f of t.frames) ol.append(frameLine(f));
        if (!t.frames.length) ol.append(el('li', '(no Python frames)', 'muted'));
        div.append(name, ol);
      }
    }
    box.append(div);
  }
}

async function loadStacks() {
  try {
    const tasks = $('stacks-tasks').checked, kids = $('stacks-children').checked;
    const q = [tasks ? 'tasks=1' : '', kids ? 'subprocesses=1' : ''].filter((x) => x).join('&');
    lastDump = await api('/api/processes/' + view.pid + '/stacks' + (q ? '?' + q : ''));
    showError('');
    drawStacks(lastDump);
    drawTasks(tasks ? lastDump : null);
    drawChildren(kids ? lastDump : null);
  } catch (e) {
    showError('stacks of ' + view.pid + ': ' + e.message);
  }
}

// ---- SQL ----
let lastResult = null;

function csvField(v) {
  if (v === null || v === undefined) return '';
  const s = typeof v === 'object' ? JSON.stringify(v) : String(v);
  return /[",\r\n]/.test(s) ? '"' + s.replace(/"/g, '""') + '"' : s;
}

function toCsv(r) {
  const lines = [r.columns.map(csvField).join(',')];
  for (const row of r.rows) lines.push(row.map(csvField).join(','));
  return lines.join('\r\n') + '\r\n';
}

// A query's {columns, rows} into table's head and body; cell(v) makes each <td>.
function fillTable(table, r, cell) {
  const thead = table.tHead, tbody = table.tBodies[0];
  thead.replaceChildren();
  tbody.replaceChildren();
  const hr = el('tr');
  for (const c of r.columns) hr.append(el('th', c));
  thead.append(hr);
  for (const row of r.rows) {
    const tr = el('tr');
    for (const v of row) tr.append(cell(v));
    tbody.append(tr);
  }
}

async function runSql() {
  const sql = $('sql-text').value;
  const err = $('sql-error');
  $('sql-status').textContent = 'running…';
  try {
    const r = await api('/api/processes/' + view.pid + '/query', {sql});
    lastResult = r;
    err.hidden = true;
    fillTable($('sql-result'), r,
              v => el('td', v === null ? 'NULL' : typeof v === 'object' ? JSON.stringify(v) : v));
    $('sql-status').textContent = r.rows.length + ' row' + (r.rows.length === 1 ? '' : 's') +
        (r.truncated ? ' (truncated)' : '') + ' in ' + (r.elapsedMs || 0).toFixed(1) + ' ms';
    const a = $('sql-csv');
    if (a.href) URL.revokeObjectURL(a.href);
    a.href = URL.createObjectURL(new Blob([toCsv(r)], {type: 'text/csv'}));
    a.hidden = false;
  } catch (e) {
    err.textContent = e.message;
    err.hidden = false;
    $('sql-status').textContent = '';
  }
}

async function loadTables() {
  const box = $('tables-list');
  try {
    const r = await api('/api/processes/' + view.pid + '/query', {
      sql: 'SELECT table_name, column_name, type FROM probing.tables',
    });
    box.replaceChildren();
    box.className = '';
    const by = new Map();
    for (const [t, c, ty] of r.rows) {
      if (!by.has(t)) by.set(t, []);
      by.get(t).push(c + ' ' + (ty || ''));
    }
    for (const [t, cols] of by) {
      const d = el('details');
      const s = el('summary', t);
      s.addEventListener('dblclick', () => { $('sql-text').value = 'SELECT * FROM ' + t + ' LIMIT 100'; });
      const ul = el('ul');
      for (const c of cols) ul.append(el('li', c));
      d.append(s, ul);
      box.append(d);
    }
  } catch (e) {
    box.textContent = 'tables: ' + e.message;
  }
}

// ---- flame graph ----
// The filters of the flame view (flamegraph --gil, --idle, --native=all, --thread, --since).
function flameUrl(fmt) {
  let q = '/api/processes/' + view.pid + '/flamegraph?format=' + fmt;
  if ($('flt-gil').checked) q += '&gil=1';
  if ($('flt-idle').checked) q += '&idle=1';
  if ($('flt-all').checked) q += '&native=all';
  const tid = $('flt-thread').value.trim(), since = $('flt-since').value.trim();
  if (tid) q += '&thread=' + encodeURIComponent(tid);
  if (since && Number(since) > 0) q += '&since=' + encodeURIComponent(since);
  return q;
}

function flameLinks() {
  for (const [id, fmt, ext] of [['dl-svg', 'svg', '.svg'], ['dl-folded', 'folded', '.folded'],
                                ['dl-speedscope', 'speedscope', '.speedscope.json'],
                                ['dl-chrometrace', 'chrometrace', '.trace.json'],
                                ['dl-pprof', 'pprof', '.pb.gz']]) {
    $(id).href = flameUrl(fmt);
    $(id).download = 'flamegraph-' + view.pid + ext;
  }
}

async function perfStatus() {
  try {
    const s = await api('/api/processes/' + view.pid + '/perf', {action: 'status'});
    $('perf-status').textContent = (s.running ? 'profiling: ' : 'stopped: ') + s.samples +
        ' samples of ' + s.threads + ' threads (' + s.mode + ', ' + s.rate + ' Hz)';
    $('perf-start').disabled = s.running;
    $('perf-stop').disabled = !s.running;
    return s;
  } catch (e) {
    $('perf-status').textContent = e.message;
    return null;
  }
}

async function loadFlame() {
  const frame = $('flame'), empty = $('flame-empty');
  // The SVG goes in a frame so that its own script (search, click to zoom) runs.
  const s = await perfStatus();
  if (!s || !s.samples) {
    empty.textContent = 'no profile yet: start profiling, then stop (or refresh) to see the graph';
    empty.hidden = false;
    frame.hidden = true;
    return;
  }
  // Filters can leave nothing to draw: the server's one-line reason instead of a blank frame.
  const url = flameUrl('svg') + '&t=' + Date.now();
  const head = await fetch(flameUrl('folded'));
  if (!head.ok) {
    let msg = head.statusText;
    try { msg = (await head.json()).error || msg; } catch (e) { /* not JSON */ }
    empty.textContent = msg;
    empty.hidden = false;
    frame.hidden = true;
    return;
  }
  empty.hidden = true;
  frame.hidden = false;
  frame.src = url;
}

async function perf(action) {
  try {
    await api('/api/processes/' + view.pid + '/perf', {action});
    showError('');
  } catch (e) {
    showError('perf ' + action + ': ' + e.message);
  }
  await perfStatus();
  if (action === 'stop') await loadFlame();
}

// ---- torch ----
const torchCell = v => el('td', v === null ? '' : v, typeof v === 'number' ? 'num' : '');


async function loadTorch() {
  try {
    const s = await api('/api/processes/' + view.pid + '/torch', {action: 'status'});
    $('torch-status').textContent = (s.running ? 'tracing one step in ' + s.every : 'not running') +
        ': step ' + (s.step || 0) + ', ' + (s.tracedSteps || 0) + ' traced' +
        (s.torch === false ? ' (torch is not imported in this process)' : '');
    $('torch-start').disabled = !!s.running;
    $('torch-stop').disabled = !s.running;
    if (!s.running && !s.step) { // never started here: its tables do not exist yet
      for (const id of ['torch-modules', 'torch-steps']) {
        fillTable($(id), {columns: ['no data yet: start perf --torch'], rows: []}, torchCell);
      }
      return;
    }
    const q = (sql) => api('/api/processes/' + view.pid + '/query', {sql});
    fillTable($('torch-modules'), await q(
        "SELECT module, stage, ROUND(AVG(duration) * 1e3, 3) AS ms, COUNT(*) AS calls " +
        "FROM python.torch_trace WHERE stage IN ('forward_post', 'backward_post') " +
        'GROUP BY 1, 2 ORDER BY 3 DESC LIMIT 50'), torchCell);
    fillTable($('torch-steps'), await q(
        'SELECT step, traced, ROUND(duration * 1e3, 2) AS ms, loss, detection ' +
        'FROM python.torch_steps ORDER BY step DESC LIMIT 30'), torchCell);
    showError('');
  } catch (e) {
    showError('torch in ' + view.pid + ': ' + e.message);
  }
}

async function torch(action) {
  const body = {action};
  if (action === 'start') body.every = Number($('torch-every').value) || 10;
  try {
    await api('/api/processes/' + view.pid + '/torch', body);
  } catch (e) {
    showError('perf --torch ' + action + ': ' + e.message);
    return;
  }
  await loadTorch();
}

// ---- memory ----
function kvRows(tbody, pairs) {
  tbody.replaceChildren();
  for (const [k, v] of pairs) {
    const tr = el('tr');
    tr.append(el('td', k), el('td', v, 'num'));
    tbody.append(tr);
  }
}

async function loadMemory() {
  try {
    const m = await api('/api/processes/' + view.pid + '/memory?top=25');
    const p = m.process || {};
    kvRows($('mem-process').tBodies[0], [
      ['RSS', mib(p.rss)], ['peak RSS', mib(p.peakRss)], ['virtual', mib(p.vms)],
      ['anonymous', mib(p.rssAnon)], ['file', mib(p.rssFile)], ['shared', mib(p.rssShmem)],
      ['data', mib(p.data)], ['swap', mib(p.swap)],
    ]);
    const g = m.gc || {};
    kvRows($('mem-gc').tBodies[0], [
      ['enabled', String(g.enabled)], ['counts', (g.counts || []).join(' / ')],
      ['thresholds', (g.thresholds || []).join(' / ')],
      ['collections', (g.collections || []).join(' / ')],
      ['collected', (g.collected || []).join(' / ')],
      ['uncollectable', (g.uncollectable || []).join(' / ')],
      ['tracemalloc', m.tracemalloc && m.tracemalloc.tracing ? 'tracing' : 'off'],
      ['CUDA', m.cuda && m.cuda.available ? m.cuda.devices.length + ' device(s)' : 'not available'],
    ]);
    const o = m.objects || {};
    $('mem-measure').textContent = (o.error || o.measure || '') +
        (o.scanned ? ': ' + o.scanned + ' objects, ' + mib(o.totalBytes) : '');
    const tbody = $('mem-types').tBodies[0];
    tbody.replaceChildren();
    for (const t of o.types || []) {
      const tr = el('tr');
      tr.append(el('td', t.type), el('td', t.count, 'num'), el('td', t.bytes, 'num'));
      tbody.append(tr);
    }
    $('memory-status').textContent = 'at ' + new Date().toLocaleTimeString();
    showError('');
  } catch (e) {
    showError('memory of ' + view.pid + ': ' + e.message);
  }
}

// ---- routing ----
function stopTimers() {
  clearInterval(timer);
  clearInterval(perfTimer);
  timer = perfTimer = null;
}

function route() {
  stopTimers();
  showError('');
  const m = location.hash.match(/^#\/p\/(\d+|[^/]+:\d+)\/(stacks|sql|flame|torch|memory)$/);
  const mj = location.hash.match(/^#\/job\/(.+)$/);
  view = m ? {name: m[2], pid: /^\d+$/.test(m[1]) ? Number(m[1]) : m[1]}
      : mj ? {name: 'job', job: decodeURIComponent(mj[1])} : {name: 'processes'};
  for (const v of ['processes', 'stacks', 'sql', 'flame', 'torch', 'memory', 'job']) {
    $('view-' + v).hidden = v !== view.name;
  }
  $('tabs').hidden = !m;
  if (m) {
    $('proc-title').textContent = 'process ' + view.pid;
    for (const v of ['stacks', 'sql', 'flame', 'torch', 'memory']) {
      const a = $('tab-' + v);
      a.href = '#/p/' + view.pid + '/' + v;
      a.classList.toggle('active', v === view.name);
    }
    document.title = 'probing ' + view.pid + ' ' + view.name;
  } else {
    document.title = 'probing';
  }
  if (view.name === 'processes') {
    loadProcesses();
    loadJobs();
    loadGpus();
  } else if (view.name === 'job') {
    $('job-title').textContent = 'Job ' + view.job;
    $('job-groups').replaceChildren();
    loadJob();
  } else if (view.name === 'stacks') {
    $('threads').replaceChildren();
    loadStacks();
    if ($('stacks-auto').checked) timer = setInterval(loadStacks, 1000);
  } else if (view.name === 'sql') {
    $('tables-list').textContent = 'loading…';
    loadTables();
  } else if (view.name === 'flame') {
    flameLinks();
    perfStatus();
    loadFlame();
    perfTimer = setInterval(perfStatus, 1000);
  } else if (view.name === 'torch') {
    $('torch-trace').href = '/api/processes/' + view.pid + '/torch/trace?steps=3';
    $('torch-trace').download = 'torch-trace-' + view.pid + '.json';
    loadTorch();
    perfTimer = setInterval(loadTorch, 2000);
  } else if (view.name === 'memory') {
    loadMemory();
  }
}

function init() {
  $('procs-refresh').addEventListener('click', () => { loadProcesses(); loadJobs(); loadGpus(); });
  $('stacks-refresh').addEventListener('click', loadStacks);
  $('stacks-tasks').addEventListener('change', loadStacks);
  $('stacks-children').addEventListener('change', loadStacks);
  $('stacks-auto').addEventListener('change', () => {
    clearInterval(timer);
    timer = $('stacks-auto').checked ? setInterval(loadStacks, 1000) : null;
  });
  $('sql-run').addEventListener('click', runSql);
  $('sql-text').addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) runSql();
  });
  $('perf-start').addEventListener('click', () => perf('start'));
  $('perf-stop').addEventListener('click', () => perf('stop'));
  $('flame-refresh').addEventListener('click', loadFlame);
  for (const id of ['flt-gil', 'flt-idle', 'flt-all', 'flt-thread', 'flt-since']) {
    $(id).addEventListener('change', () => { flameLinks(); loadFlame(); });
  }
  $('memory-refresh').addEventListener('click', loadMemory);
  $('job-refresh').addEventListener('click', loadJob);
  $('torch-perfetto').addEventListener('click', openInPerfetto);
  $('torch-start').addEventListener('click', () => torch('start'));
  $('torch-stop').addEventListener('click', () => torch('stop'));
  $('torch-refresh').addEventListener('click', loadTorch);
  window.addEventListener('hashchange', route);
  route();
}

init();
