// SPDX-License-Identifier: MIT
// probing serve's pages in a real browser: Debian's Chromium, headless, driven by playwright-core
// (pinned by package-lock.json; nothing is downloaded at run time) against real targets from
// samples/ and this build's CLI (PROBING_BUILD). A user's path: the process list, "attach", the
// stacks (GIL holder marked, locals on click, auto-refresh), the SQL console (tables, a query,
// SQLite's error, CSV download), the flame graph (start, stop, the SVG's search and zoom), memory,
// torch (perf --torch start/stop, modules and steps, the Chrome trace), with
// no console error anywhere; screenshots in build/web/. `make web-test` runs it.
'use strict';
const {test, before, after} = require('node:test');
const assert = require('node:assert');
const {spawn, execFileSync} = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const {chromium} = require('playwright-core');

const ROOT = path.resolve(__dirname, '..', '..');
const BUILD = process.env.PROBING_BUILD || path.join(ROOT, 'build', 'release');
const CLI = path.join(BUILD, 'bin', 'probing');
const PYTHON = process.env.WEB_PYTHON || '/usr/bin/python3';
const SHOTS = path.join(ROOT, 'build', 'web');
const children = [];
let tmp, browser, server;

// Starts cmd; resolves with [child, the first stdout line matching re's match] within 20 s.
function start(cmd, args, re, env) {
  const child = spawn(cmd, args, {stdio: ['ignore', 'pipe', 'pipe'], detached: true,
                                  env: {...process.env, ...(env || {})}});
  children.push(child);
  let out = '', err = '';
  child.stderr.on('data', (d) => { err += d; });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(cmd + ' did not start: ' + out + err)), 20000);
    child.stdout.on('data', (d) => {
      out += d;
      const m = out.match(re);
      if (m) {
        clearTimeout(timer);
        resolve([child, m]);
      }
    });
    child.on('exit', (code) => reject(new Error(cmd + ' exited ' + code + ': ' + out + err)));
  });
}

before(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'probing-web-'));
  fs.mkdirSync(SHOTS, {recursive: true});
  const [, m] = await start(CLI, ['serve', '--listen', '127.0.0.1:0'],
                            /^probing serve: (http:\/\/\S+\/)$/m);
  server = m[1];
  browser = await chromium.launchPersistentContext(path.join(tmp, 'profile'), {
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
           '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: {width: 1280, height: 800},
  });
});

after(async () => {
  if (browser) await browser.close();
  for (const c of children) {
    try { process.kill(-c.pid, 'SIGKILL'); } catch (e) { /* gone */ }
  }
  if (tmp) fs.rmSync(tmp, {recursive: true, force: true});
});

// A page that records console errors and uncaught exceptions.
async function newPage() {
  const page = await browser.newPage();
  page.errors = [];
  page.on('console', (msg) => {
    if (msg.type() === 'error') page.errors.push('console: ' + msg.text());
  });
  page.on('pageerror', (e) => page.errors.push('pageerror: ' + e.message));
  return page;
}

async function shot(page, name) {
  await page.screenshot({path: path.join(SHOTS, name + '.png'), fullPage: false});
}

async function target(sample) {
  const [child, m] = await start(PYTHON, [path.join(ROOT, 'samples', sample)], /^ready (\{.*\})$/m);
  return {pid: child.pid, ready: JSON.parse(m[1])};
}

test('process list, attach, stacks with the GIL holder and locals', async () => {
  const t = await target('stuck_gil.py');
  const page = await newPage();
  const t0 = Date.now();
  await page.goto(server);
  const row = page.locator('#procs tr[data-pid="' + t.pid + '"]');
  await row.waitFor();
  console.log('process list rendered in ' + (Date.now() - t0) + ' ms');
  assert.match(await row.locator('td.cmd').textContent(), /stuck_gil\.py/);
  await shot(page, 'processes');
  await row.locator('button.attach').click();
  await page.waitForURL('**/#/p/' + t.pid + '/stacks');
  const gil = page.locator('#threads .thread.gil');
  await gil.waitFor();
  assert.equal(await page.locator('#threads .thread').count(), 2);
  assert.match(await gil.locator('h3').textContent(), /main.*holds the GIL/);
  assert.equal(await gil.locator('ol.frames li').first().locator('span').first().textContent(),
               'hold_gil_forever');
  assert.match(await page.locator('#stacks-gil').textContent(),
               new RegExp('GIL held by thread ' + t.pid));
  // Locals on click: the GIL is held forever, so the probe reads them from memory and says so.
  await gil.locator('ol.frames li').first().click();
  const loc = gil.locator('li.locals-row');
  await loc.waitFor();
  assert.match(await loc.textContent(), /GIL is held by thread .* read from memory/);
  assert.match(await loc.textContent(), /readyTruebool/);
  // Auto-refresh: the status line's time changes.
  await page.locator('#stacks-auto').check();
  const before = await page.locator('#stacks-gil').textContent();
  await page.waitForFunction((b) => document.getElementById('stacks-gil').textContent !== b,
                             before, {timeout: 10000});
  await shot(page, 'stacks');
  assert.deepEqual(page.errors, []);
  await page.close();
});

// Line number of the '# BP: name' marker in samples/<sample>.
function bp(sample, name) {
  const lines = fs.readFileSync(path.join(ROOT, 'samples', sample), 'utf8').split('\n');
  const i = lines.findIndex((l) => new RegExp('#\\s*BP:\\s*' + name + '\\b').test(l));
  assert.ok(i >= 0, 'no BP marker ' + name + ' in ' + sample);
  return i + 1;
}

test('asyncio tasks in the stacks view: a box per loop, the await tree, the cycle', async () => {
  const S = 'asyncio_tasks.py';
  const t = await target(S);
  const page = await newPage();
  await page.goto(server);
  await page.locator('#procs tr[data-pid="' + t.pid + '"] button.attach').click();
  await page.waitForURL('**/#/p/' + t.pid + '/stacks');
  await page.locator('#threads .thread').first().waitFor();
  assert.equal(await page.locator('#tasks').isHidden(), true);  // asked for only
  await page.locator('#stacks-tasks').check();
  const loops = page.locator('#tasks .loop');
  await loops.first().waitFor();
  // Debian's python3 (3.11) keeps the done and cancelled tasks too: 20 in 4 loops.
  assert.equal(await page.locator('#tasks h2').textContent(), 'asyncio: 20 tasks, read with the GIL');
  assert.equal(await loops.count(), 4);
  const heads = await loops.locator('h3').allTextContents();
  for (const [label, tid] of [['MainThread', t.pid], ['loop-a', t.ready.threads['loop-a']],
                              ['loop-b', t.ready.threads['loop-b']], ['loop-c', t.ready.threads['loop-c']]]) {
    assert.equal(heads.filter((h) => new RegExp('^Loop 0x[0-9a-f]+ in thread ' + tid + ' "' + label +
                                                '"$').test(h)).length, 1, heads.join('\n'));
  }
  assert.match(await page.locator('#tasks p.deadlock').textContent(),
               /^deadlock: await cycle: "dl-(a|b)" -> "dl-(b|a)" -> "dl-\1"$/);
  // The awaited task under the one awaiting it, each with its chain innermost first.
  const waiter = page.locator('#tasks li.task[data-name="task-waiter"]');
  assert.match(await waiter.locator('> .task-head').textContent(),
               /^\(T\) "task-waiter" pending awaits task "napper"$/);
  assert.deepEqual(await waiter.locator('> ol.chain li').allTextContents(),
                   ['wait_task (' + path.join(ROOT, 'samples', S) + ':' + bp(S, 'task_await') + ')']);
  const napper = waiter.locator('> ul.tasks > li.task[data-name="napper"]');
  assert.match(await napper.locator('> .task-head').textContent(),
               /^\(T\) "napper" pending awaits _asyncio\.Future 0x[0-9a-f]+$/);
  const chain = await napper.locator('> ol.chain li').allTextContents();
  assert.match(chain[0], /^sleep \(.*\/asyncio\/tasks\.py:\d+\)$/);
  assert.deepEqual(chain.slice(1), [
    'nap (' + path.join(ROOT, 'samples', S) + ':' + bp(S, 'nap_sleep') + ')',
    'sleeper (' + path.join(ROOT, 'samples', S) + ':' + bp(S, 'sleeper_nap') + ')']);
  // The cycle: drawn from its first task, the second under it, stopping where it comes back.
  const dl = page.locator('#tasks li.task.cycle');
  assert.equal(await dl.count(), 3);
  assert.match(await dl.nth(2).locator('> .task-head').textContent(), /\(await cycle: see above\)$/);
  // The running task of loop-c, and the gather's children under the gatherer.
  assert.match(await page.locator('#tasks li.task[data-name="loop-c-busy"] > .task-head').textContent(),
               /^\(T\) "loop-c-busy" pending running$/);
  assert.deepEqual(await page.locator('#tasks li.task[data-name="gatherer"] > ul.tasks > li.task')
                       .evaluateAll((ls) => ls.map((l) => l.dataset.name).sort()), ['g1', 'g2']);
  await shot(page, 'stacks-tasks');
  // Unchecked: the tasks go away; the API refuses a bad value, naming it.
  await page.locator('#stacks-tasks').uncheck();
  await page.locator('#tasks').waitFor({state: 'hidden'});
  const bad = await page.request.get(server + 'api/processes/' + t.pid + '/stacks?tasks=yes');
  assert.deepEqual([bad.status(), (await bad.json()).error], [400, "tasks 'yes': expected 0 or 1"]);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('child processes in the stacks view: DataLoader workers under their parent', async () => {
  // samples/dataloader_job.py alone: two DataLoader workers stuck in Toy.__getitem__, a
  // multiprocessing child, a `sleep` (no Python) and a zombie beside them.
  const S = 'dataloader_job.py';
  const t = await target(S);
  const page = await newPage();
  await page.goto(server);
  await page.locator('#procs tr[data-pid="' + t.pid + '"] button.attach').click();
  await page.waitForURL('**/#/p/' + t.pid + '/stacks');
  await page.locator('#threads .thread').first().waitFor();
  assert.equal(await page.locator('#children').isHidden(), true);  // asked for only
  await page.locator('#stacks-children').check();
  const kids = page.locator('#children .child');
  await kids.first().waitFor();
  const byPid = {};
  for (const d of await kids.evaluateAll((ds) => ds.map((x) => x.innerText))) {
    byPid[d.match(/^Process (\d+)/)[1]] = d;
  }
  for (const [i, w] of t.ready.children.workers.entries()) {
    const text = byPid[w];
    assert.ok(text, 'worker ' + w + ' not shown: ' + JSON.stringify(byPid));
    assert.match(text, new RegExp('child of ' + t.pid + '\\)'));
    assert.match(text, new RegExp('DataLoader worker ' + i + ' of 2'));
    assert.ok(text.includes('__getitem__ (' + path.join(ROOT, 'samples', S) + ':' + bp(S, 'getitem') + ')'),
              text);
  }
  assert.ok(byPid[t.ready.children.mp].includes('mp_child (' + path.join(ROOT, 'samples', S) + ':' +
                                                bp(S, 'mp_child') + ')'), byPid[t.ready.children.mp]);
  assert.match(byPid[t.ready.children.sleep], /sleep 1000/);  // listed by its command line
  assert.match(await page.locator('#children h2').textContent(), /^child processes: \d+/);
  await shot(page, 'stacks-children');
  await page.locator('#stacks-children').uncheck();
  await page.locator('#children').waitFor({state: 'hidden'});
  const bad = await page.request.get(server + 'api/processes/' + t.pid + '/stacks?subprocesses=2');
  assert.deepEqual([bad.status(), (await bad.json()).error], [400, "subprocesses '2': expected 0 or 1"]);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('asyncio tasks not read when a C call holds the GIL: the reason shown', async () => {
  const t = await target('stuck_gil.py');
  const page = await newPage();
  await page.goto(server);
  await page.locator('#procs tr[data-pid="' + t.pid + '"] button.attach').click();
  await page.waitForURL('**/#/p/' + t.pid + '/stacks');
  await page.locator('#threads .thread.gil').waitFor();
  await page.locator('#stacks-tasks').check();
  const e = page.locator('#tasks p.error');
  await e.waitFor({timeout: 20000});
  assert.match(await e.textContent(), new RegExp('^asyncio tasks: not read: the GIL is held by thread ' +
                                                 t.pid + ' .*asyncio tasks are read with the GIL: not read$'));
  assert.equal(await page.locator('#threads .thread').count(), 2);  // the stacks still there
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('SQL console and flame graph', async () => {
  const t = await target('flamehot.py');
  const page = await newPage();
  await page.goto(server);
  await page.locator('#procs tr[data-pid="' + t.pid + '"] button.attach').click();
  await page.waitForURL('**/#/p/' + t.pid + '/stacks');
  await page.locator('#threads .thread').first().waitFor();
  await shot(page, 'stacks-flamehot');

  await page.locator('#tab-sql').click();
  await page.waitForURL('**/#/p/' + t.pid + '/sql');
  await page.locator('#tables-list summary', {hasText: 'python.threads'}).waitFor();
  await page.locator('#sql-text').fill('SELECT name, daemon FROM python.threads ORDER BY name');
  await page.locator('#sql-run').click();
  await page.locator('#sql-result tbody td', {hasText: 'spinner'}).waitFor();
  assert.deepEqual(await page.locator('#sql-result thead th').allTextContents(), ['name', 'daemon']);
  const [download] = await Promise.all([page.waitForEvent('download'),
                                        page.locator('#sql-csv').click()]);
  const csv = fs.readFileSync(await download.path(), 'utf8');
  assert.match(csv, /^name,daemon\r\n/);
  assert.match(csv, /\r\nspinner,/);
  await shot(page, 'sql');
  // A double-click on a table writes a query for it; Ctrl-Enter runs the box.
  await page.locator('#tables-list summary', {hasText: 'python.threads'}).dblclick();
  assert.equal(await page.locator('#sql-text').inputValue(), 'SELECT * FROM python.threads LIMIT 100');
  await page.locator('#sql-text').fill('SELECT nope FROM python.threads');
  await page.locator('#sql-text').press('Control+Enter');
  const err = page.locator('#sql-error');
  await err.waitFor();
  assert.match(await err.textContent(), /no such column: nope/);
  await shot(page, 'sql-error');
  // Chromium logs the failed request (the API's 400) itself: that one is expected, no other.
  assert.deepEqual(page.errors, ['console: Failed to load resource: the server responded with ' +
                                 'a status of 400 (Bad Request)']);
  page.errors.length = 0;

  await page.locator('#tab-flame').click();
  await page.waitForURL('**/#/p/' + t.pid + '/flame');
  await page.locator('#flame-empty', {hasText: 'no profile yet'}).waitFor();
  await page.locator('#perf-start').click();
  await page.waitForFunction(() => /profiling: ([1-9]\d{2,}) samples/.test(
      document.getElementById('perf-status').textContent), null, {timeout: 30000});
  await page.locator('#perf-stop').click();
  await page.locator('#perf-status', {hasText: 'stopped:'}).waitFor();
  await page.locator('#flame:not([hidden])').waitFor();
  const frame = page.frameLocator('#flame');
  await frame.locator('#frames g', {hasText: 'native_share'}).first().waitFor();
  await shot(page, 'flame');
  // The SVG's own search box and click-to-zoom (flame_svg.c), used as a user would.
  await frame.locator('#q').fill('spin_python');
  await frame.locator('#q').press('Enter');
  await frame.locator('#matched', {hasText: /Matched: \d/}).waitFor();
  await frame.locator('#frames g', {hasText: 'native_share'}).first().click();
  await frame.locator('svg[data-zoomed^="native_share ("]').waitFor();
  await shot(page, 'flame-zoom');
  // Downloads: folded text, speedscope and Chrome trace JSON, pprof (gzip).
  for (const [id, re] of [['#dl-folded', /native_share.* \d+\n/], ['#dl-speedscope', /speedscope/],
                          ['#dl-chrometrace', /traceEvents/], ['#dl-pprof', /^\x1f\x8b/]]) {
    const [dl] = await Promise.all([page.waitForEvent('download'), page.locator(id).click()]);
    assert.match(fs.readFileSync(await dl.path(), 'latin1'), re);
  }
  // Filters: every native frame shows the start-up at the root (Debian's python3: _start);
  // one thread (the spinner) shows its function and not the main thread's; a thread with no
  // samples says so instead of drawing.
  const root = frame.locator('#frames g', {hasText: /^_start/});
  assert.equal(await root.count(), 0);
  await page.locator('#flt-all').check();
  await frame.locator('#frames g', {hasText: /^_start/}).first().waitFor();
  assert.match(await page.locator('#dl-folded').getAttribute('href'), /native=all/);
  await page.locator('#flt-all').uncheck();
  await page.locator('#flt-thread').fill(String(t.ready.spinner));
  await page.locator('#flt-thread').dispatchEvent('change');
  await page.waitForFunction(() => /thread=/.test(document.getElementById('flame').src));
  await frame.locator('#frames g', {hasText: 'spin_python'}).first().waitFor();
  assert.equal(await frame.locator('#frames g', {hasText: 'native_share'}).count(), 0);
  await page.locator('#flt-gil').check();
  await frame.locator('#frames g', {hasText: 'spin_python'}).first().waitFor();
  await page.locator('#flt-gil').uncheck();
  await page.locator('#flt-thread').fill('1');
  await page.locator('#flt-thread').dispatchEvent('change');
  await page.locator('#flame-empty', {hasText: 'no samples for thread 1'}).waitFor();
  await page.locator('#flt-thread').fill('');
  await page.locator('#flt-thread').dispatchEvent('change');
  await frame.locator('#frames g', {hasText: 'native_share'}).first().waitFor();
  page.errors.length = 0; // the 404 of the empty thread's graph, asked on purpose
  await page.locator('#tab-memory').click();
  await page.waitForURL('**/#/p/' + t.pid + '/memory');
  await page.locator('#mem-types tbody td', {hasText: /^dict$/}).waitFor();
  assert.match(await page.locator('#mem-process').textContent(), /RSS\d+\.\d MiB/);
  await shot(page, 'memory');

  // A phone's width: no page wider than the screen, whatever else runs on the machine: this
  // test makes its own long names (a 400-character unbroken argument, a torchrun job with a
  // 200-character run id), so the width does not depend on other processes.
  const long = 'x'.repeat(400);
  await start(PYTHON, [path.join(ROOT, 'samples', 'fake_rank.py'), '--' + long],
              /^ready (\{.*\})$/m,
              {RANK: '0', WORLD_SIZE: '1', LOCAL_RANK: '0', MASTER_ADDR: '127.0.0.1',
               MASTER_PORT: '29999', TORCHELASTIC_RUN_ID: 'run' + 'y'.repeat(200)});
  await page.setViewportSize({width: 390, height: 844});
  for (const [hash, name] of [['#/', 'phone-processes'], ['#/p/' + t.pid + '/stacks', 'phone-stacks'],
                              ['#/p/' + t.pid + '/sql', 'phone-sql']]) {
    await page.goto(server + hash);
    await page.locator(hash === '#/' ? '#procs tbody tr' : hash.endsWith('sql') ?
                       '#tables-list summary' : '#threads .thread').first().waitFor();
    if (hash === '#/') {
      await page.locator('#procs td.cmd', {hasText: long}).waitFor();
      await page.locator('#jobs-table td', {hasText: 'yyyyyyyy'}).first().waitFor();
      // the whole text is there (wrapped), and on hover
      const cell = page.locator('#procs td.cmd', {hasText: long});
      assert.equal(await cell.getAttribute('title'), await cell.textContent());
    }
    await shot(page, name);
    assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= 391), name);
  }
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('torch: perf --torch start/stop, modules and steps, the Chrome trace', async () => {
  const t = await target('torch_train.py');
  const page = await newPage();
  await page.goto(server);
  await page.locator('#procs tr[data-pid="' + t.pid + '"] button.attach').click();
  await page.waitForURL('**/#/p/' + t.pid + '/stacks');
  await page.locator('#tab-torch').click();
  await page.waitForURL('**/#/p/' + t.pid + '/torch');
  await page.locator('#torch-modules th', {hasText: 'no data yet'}).waitFor();
  await page.locator('#torch-every').fill('1');
  await page.locator('#torch-start').click();
  await page.locator('#torch-status', {hasText: 'tracing one step in 1'}).waitFor();
  await page.locator('#torch-modules tbody td', {hasText: /^TinyTransformer$/}).first()
      .waitFor({timeout: 30000});
  await page.locator('#torch-steps tbody tr').nth(2).waitFor({timeout: 30000});
  assert.deepEqual(await page.locator('#torch-modules thead th').allTextContents(),
                   ['module', 'stage', 'ms', 'calls']);
  const [dl] = await Promise.all([page.waitForEvent('download'),
                                  page.locator('#torch-trace').click()]);
  const trace = JSON.parse(fs.readFileSync(await dl.path(), 'utf8'));
  assert.equal(trace.otherData.pid, t.pid);
  assert.ok(trace.traceEvents.some((e) => e.ph === 'X' && e.cat === 'backward'));
  // "Open in Perfetto": ui.perfetto.dev cannot be reached from here, so the browser is given a
  // page at its address that does what Perfetto's documented protocol does (answers 'PONG' to
  // the opener's 'PING', then takes {perfetto: {buffer, title, ...}}) and shows what it got.
  await browser.route('https://ui.perfetto.dev/**', (route) => route.fulfill({
    contentType: 'text/html',
    body: '<!doctype html><title>Perfetto stand-in</title><pre id="got">nothing</pre><script>' +
          'addEventListener("message", (e) => {' +
          ' if (e.source !== window.opener) return;' +
          ' if (e.data === "PING") { e.source.postMessage("PONG", "*"); return; }' +
          ' const p = e.data && e.data.perfetto; if (!p) return;' +
          ' document.getElementById("got").textContent = JSON.stringify({title: p.title,' +
          '  fileName: p.fileName, url: p.url, origin: e.origin,' +
          '  trace: JSON.parse(new TextDecoder().decode(p.buffer))}); });</script>',
  }));
  const [popup] = await Promise.all([page.waitForEvent('popup'),
                                     page.locator('#torch-perfetto').click()]);
  await popup.locator('#got', {hasText: 'traceEvents'}).waitFor({timeout: 30000});
  const got = JSON.parse(await popup.locator('#got').textContent());
  assert.equal(popup.url(), 'https://ui.perfetto.dev/');
  assert.equal(got.title, 'probing: perf --torch of process ' + t.pid);
  assert.equal(got.fileName, 'torch-trace-' + t.pid + '.json');
  assert.equal(got.origin, new URL(server).origin);
  assert.equal(got.trace.otherData.pid, t.pid);
  assert.ok(got.trace.traceEvents.some((e) => e.ph === 'X' && e.cat === 'backward'));
  await page.locator('#perfetto-status', {hasText: /^sent to Perfetto \(\d+ KiB\)$/}).waitFor();
  await popup.close();
  await browser.unroute('https://ui.perfetto.dev/**');
  await shot(page, 'torch');
  await page.locator('#torch-stop').click();
  await page.locator('#torch-status', {hasText: 'not running'}).waitFor();
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('a remote probe (serve --target HOST:PORT) listed and its stacks shown', async () => {
  const t = await target('threads.py');
  const token = 'web-remote-token-0123456789';
  const out = execFileSync(CLI, ['-p', String(t.pid), 'inject', '--listen', '127.0.0.1:0'],
                           {env: {...process.env, PROBING_TOKEN: token}, encoding: 'utf8'});
  const address = out.match(/^listening on (\S+)$/m)[1];
  const [, m] = await start(CLI, ['serve', '--listen', '127.0.0.1:0', '--target', address],
                            /^probing serve: (http:\/\/\S+\/)$/m, {PROBING_TOKEN: token});
  const page = await newPage();
  await page.goto(m[1]);
  const row = page.locator('#procs tr[data-id="' + address + '"]');
  await row.waitFor();
  assert.match(await row.locator('td').first().textContent(),
               new RegExp(address.replace(/\./g, '\\.') + ' \\(pid ' + t.pid + '\\)'));
  await row.locator('a', {hasText: 'stacks'}).click();
  await page.waitForURL('**/#/p/' + address + '/stacks');
  await page.locator('#threads .thread').first().waitFor();
  assert.ok(await page.locator('#threads .thread').count() >= 2);
  await shot(page, 'remote-stacks');
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('a distributed job: listed, its grouped stacks on click', async () => {
  const port = String(30000 + process.pid % 20000);
  const job = 'torch:10.21.0.1:' + port;
  for (let r = 0; r < 3; r++) {
    const [child] = await start(PYTHON, [path.join(ROOT, 'samples', 'fake_rank.py')], /^ready /m,
                                {RANK: String(r), WORLD_SIZE: '3', MASTER_ADDR: '10.21.0.1',
                                 MASTER_PORT: port});
    assert.ok(child.pid);
  }
  const page = await newPage();
  await page.goto(server);
  const row = page.locator('#jobs-table tr[data-job="' + job + '"]');
  await row.waitFor();
  assert.deepEqual((await row.locator('td').allTextContents()).slice(0, 5),
                   [job, 'torch', '3', '3', os.hostname()]);
  await row.locator('a', {hasText: 'grouped stacks'}).click();
  await page.waitForURL('**/#/job/' + encodeURIComponent(job));
  const g = page.locator('#job-groups .thread');
  await g.first().waitFor({timeout: 30000});
  assert.equal(await g.count(), 1);
  assert.match(await g.locator('h3').textContent(), /^ranks 0-2 \(3\) on /);
  assert.equal(await g.locator('ol.frames li span').first().textContent(), 'wait_for_work');
  await shot(page, 'job');
  assert.deepEqual(page.errors, []);
  await page.close();
});
