// SPDX-License-Identifier: MIT
// The commands against a fake CLI (test/lib/fake-cli.sh as probing.path): attach, dump stacks
// into a read-only document, SQL into a table, the flame graph's runs and webview, errors, and
// the target taken from the active probing session (pid or TCP with its token).
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { fake, ext } = require('../lib/hook');

const commands = ext('commands.js');
const views = ext('views.js');
const FAKE_CLI = path.join(__dirname, '..', 'lib', 'fake-cli.sh');
let logFile;

test.beforeEach(() => {
  fake.reset();
  fake.state.settings['probing.path'] = FAKE_CLI;
  logFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'probing-ext-')), 'cli.log');
  process.env.FAKE_CLI_LOG = logFile;
  process.env.FAKE_CLI_MODE = 'ok';
  // commands act on the active probing session's process
  fake.answers.quickPick = () => assert.fail('no picker expected: the session gives the target');
});
// Each test's log directory goes with it: nothing left in the machine's /tmp.
test.afterEach(() => fs.rmSync(path.dirname(logFile), { recursive: true, force: true }));
const runs = () => (fs.existsSync(logFile) ? fs.readFileSync(logFile, 'utf8').trim().split('\n') : []);
const pidSession = (pid) => ({ type: 'probing', configuration: { type: 'probing', request: 'attach', name: 's', processId: pid } });

test('Attach to Process: picker, then a probing attach session for that pid', async () => {
  const child = spawn('/usr/bin/python3', ['-c', 'import time; print("up", flush=True); time.sleep(60)'],
                      { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise((resolve) => child.stdout.once('data', resolve));
  const pid = child.pid;
  fake.answers.quickPick = (items) => items.find((i) => i.pid === pid);
  const ok = await commands.attach();
  child.kill('SIGKILL');
  assert.equal(ok, true);
  assert.deepEqual(fake.state.started[0].config, { type: 'probing', request: 'attach', name: `probing ${pid}`, processId: pid });
  fake.answers.quickPick = () => undefined;
  assert.equal(await commands.attach(), false);
  assert.equal(fake.state.started.length, 1);
});

test('Dump Stacks: debug --dump of the session\'s pid in a read-only document', async () => {
  require('vscode').debug.activeDebugSession = pidSession(4242);
  const docs = new commands.DumpDocuments();
  fake.state.contentProviders.set(commands.DUMP_SCHEME, docs);
  const uri = await commands.dumpStacks(docs);
  assert.equal(uri.scheme, 'probing-dump');
  assert.deepEqual(runs(), ['-p 4242 debug --dump|token=']);
  const text = fake.state.documents[0].getText();
  assert.match(text, /^# probing debug --dump of process 4242 at \d{4}-\d\d-\d\dT[\d:]+Z\n\nThread 42 "MainThread" \(main\)\n  #0 main \(\/app\/x\.py:3\)\n$/);
  assert.equal(fake.state.shown.length, 1);
  assert.deepEqual(fake.state.messages, []);
});

test('a TCP session: commands go to -t HOST:PORT with the token in $PROBING_TOKEN', async () => {
  require('vscode').debug.activeDebugSession = { type: 'probing', configuration: {
    type: 'probing', request: 'attach', name: 't', connect: { host: '::1', port: 9922 }, token: 'tok-abcdef' } };
  const docs = new commands.DumpDocuments();
  fake.state.contentProviders.set(commands.DUMP_SCHEME, docs);
  await commands.dumpStacks(docs);
  assert.deepEqual(runs(), ['-t [::1]:9922 debug --dump|token=tok-abcdef']);
});

test('Run SQL Query: query --format csv into an escaped table, notes kept', async () => {
  require('vscode').debug.activeDebugSession = pidSession(77);
  fake.answers.inputBox = () => 'SELECT name, native_id FROM python.threads';
  const panel = await commands.runSql();
  assert.deepEqual(runs(), ['-p 77 query SELECT name, native_id FROM python.threads --format csv|token=']);
  assert.equal(panel.viewType, 'probing.sql');
  assert.equal(panel.options.enableScripts, false);
  const html = panel.webview.html;
  assert.match(html, /Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline';"/);
  assert.match(html, /<tr><th>name<\/th><th>native_id<\/th><th>note<\/th><\/tr>/);
  assert.match(html, /<tr><td>MainThread<\/td><td>42<\/td><td>a &quot;quoted&quot;, &lt;b&gt;bold&lt;\/b&gt;\r\nline2<\/td><\/tr>/);
  assert.match(html, /<tr><td>worker<\/td><td><\/td><td><\/td><\/tr>/);
  assert.match(html, /2 rows/);
  assert.match(html, /<div class="note">probing: note: result truncated to 2 rows \(query.max_rows\)<\/div>/);
  // an SQL error: one message, no panel
  fake.answers.inputBox = () => 'SELECT bad';
  assert.equal(await commands.runSql(), undefined);
  assert.deepEqual(fake.state.messages, [{ level: 'error', text: 'probing: error: SQL error: near "bad": syntax error (at column 8)' }]);
  // dismissed: nothing run
  fake.answers.inputBox = () => undefined;
  const before = runs().length;
  assert.equal(await commands.runSql(), undefined);
  assert.equal(runs().length, before);
});

test('Flame Graph: perf --cc --mode cpu --duration S, flamegraph --format svg -o FILE, perf --stop; SVG in a webview', async () => {
  require('vscode').debug.activeDebugSession = pidSession(88);
  fake.state.settings['probing.flameGraph.duration'] = 3;
  fake.answers.inputBox = (o) => { assert.equal(o.value, '3'); return '2'; };
  const panel = await commands.flameGraph();
  const r = runs();
  assert.equal(r.length, 3);
  assert.equal(r[0], '-p 88 perf --cc --mode cpu --duration 2|token=');
  const m = /^-p 88 flamegraph --format svg -o (\/\S+\/flame\.svg)\|token=$/.exec(r[1]);
  assert.ok(m, r[1]);
  assert.equal(fs.existsSync(m[1]), false, 'the temporary SVG is removed');
  assert.equal(r[2], '-p 88 perf --cc --stop|token=');
  assert.equal(panel.viewType, 'probing.flameGraph');
  assert.equal(panel.options.enableScripts, true);
  const html = panel.webview.html;
  assert.match(html, /Content-Security-Policy" content="default-src 'none'; frame-src data:; style-src 'unsafe-inline'; script-src 'unsafe-inline';"/);
  // the SVG as its own document in a frame (its script needs the SVG as the root), sized by it
  const f = /<iframe title="Flame graph: process 88" style="height: 108px" src="data:image\/svg\+xml;base64,([A-Za-z0-9+/=]+)"><\/iframe>/.exec(html);
  assert.ok(f, html);
  const svg = Buffer.from(f[1], "base64").toString("utf8");
  assert.match(svg, /^<\?xml version="1.0" standalone="no"\?>\n<svg xmlns="http:\/\/www.w3.org\/2000\/svg" width="1200" height="100"><script>function init\(\)\{\}<\/script>/);
  assert.deepEqual(fake.state.messages, []);
  assert.equal(fake.state.progress.length, 1);
});

test('Flame Graph without samples: the CLI\'s error, sampling stopped, no panel', async () => {
  require('vscode').debug.activeDebugSession = pidSession(89);
  process.env.FAKE_CLI_MODE = 'noflame';
  fake.answers.inputBox = () => '1';
  assert.equal(await commands.flameGraph(), undefined);
  assert.deepEqual(fake.state.messages, [{ level: 'error',
    text: "probing: error: flamegraph: no samples in process 89: run 'probing -p 89 perf --cc' first" }]);
  assert.equal(runs()[2], '-p 89 perf --cc --stop|token=');
  assert.equal(fake.state.panels.length, 0);
  // a bad duration is refused by the input box's validation
  assert.equal((await fake.state.inputBoxes[0].validateInput('abc')), 'a number of seconds');
  assert.equal((await fake.state.inputBoxes[0].validateInput('0')), 'a number of seconds');
  assert.equal((await fake.state.inputBoxes[0].validateInput('2.5')), undefined);
});

test('Flame Graph when sampling fails: the CLI\'s error, no flamegraph run, the sampler stopped anyway', async () => {
  require('vscode').debug.activeDebugSession = pidSession(90);
  process.env.FAKE_CLI_MODE = 'perffail';
  fake.answers.inputBox = () => '1';
  assert.equal(await commands.flameGraph(), undefined);
  assert.deepEqual(fake.state.messages, [{ level: 'error', text: 'probing: error: perf --cc: the target exited while sampling' }]);
  assert.deepEqual(runs(), ['-p 90 perf --cc --mode cpu --duration 1|token=', '-p 90 perf --cc --stop|token=']);
});

test('Flame Graph while the user\'s own sampler runs: its samples drawn, the sampler left running', async () => {
  require('vscode').debug.activeDebugSession = pidSession(91);
  process.env.FAKE_CLI_MODE = 'running';
  fake.answers.inputBox = () => '1';
  const panel = await commands.flameGraph();
  const r = runs();
  assert.equal(r.length, 2, r.join('\n'));
  assert.equal(r[0], '-p 91 perf --cc --mode cpu --duration 1|token=');
  assert.match(r[1], /^-p 91 flamegraph --format svg -o \/\S+\/flame\.svg\|token=$/);
  assert.ok(!r.some((x) => x.includes('--stop')), 'a sampler we did not start is not stopped');
  assert.deepEqual(fake.state.messages, []);
  assert.equal(panel.viewType, 'probing.flameGraph');
});

test('Flame Graph of an idle process: too few CPU samples, so sampled again in wall mode, and said', async () => {
  require('vscode').debug.activeDebugSession = pidSession(92);
  process.env.FAKE_CLI_MODE = 'idle';
  fake.answers.inputBox = () => '1';
  const panel = await commands.flameGraph();
  const r = runs();
  assert.equal(r.length, 5, r.join('\n'));
  assert.equal(r[0], '-p 92 perf --cc --mode cpu --duration 1|token=');
  assert.equal(r[1], '-p 92 perf --cc --stop|token=');
  assert.equal(r[2], '-p 92 perf --cc --mode wall --duration 1|token=');
  // the wall-clock graph keeps the sleeping threads: --idle
  assert.match(r[3], /^-p 92 flamegraph --format svg -o \/\S+\/flame\.svg --idle\|token=$/);
  assert.equal(r[4], '-p 92 perf --cc --stop|token=');
  assert.equal(panel.title, 'Flame graph (wall clock): process 92');
  const note = 'process 92 was mostly idle (1 CPU sample in 1 s): this graph is of wall-clock time, ' +
               'sleeping threads included (perf --cc --mode wall)';
  assert.deepEqual(fake.state.messages, [{ level: 'info', text: `probing: ${note}` }]);
  assert.ok(panel.webview.html.includes(`<div class="note" style="margin: 4px 8px">${note}</div>`), panel.webview.html);
});

test('Flame Graph of an idle process with nothing to sample in wall mode either: says it was idle', async () => {
  require('vscode').debug.activeDebugSession = pidSession(93);
  process.env.FAKE_CLI_MODE = 'idlewall';
  fake.answers.inputBox = () => '1';
  assert.equal(await commands.flameGraph(), undefined);
  assert.deepEqual(fake.state.messages, [{ level: 'error', text: 'probing: error: flame graph: process 93 was idle: ' +
    '1 CPU samples, and no Python thread to sample in wall-clock time, in 1 s' }]);
  assert.equal(runs().filter((x) => x.includes('flamegraph')).length, 0);
  assert.equal(runs().at(-1), '-p 93 perf --cc --stop|token=');
  assert.equal(fake.state.panels.length, 0);
});

test('Flame Graph while the user\'s sampler runs and has no samples yet: says the process was idle', async () => {
  require('vscode').debug.activeDebugSession = pidSession(94);
  process.env.FAKE_CLI_MODE = 'idlerunning';
  fake.answers.inputBox = () => '1';
  assert.equal(await commands.flameGraph(), undefined);
  assert.equal(fake.state.messages.length, 1);
  assert.match(fake.state.messages[0].text, /^probing: error: flame graph: process 94 was idle: the sampler already running in it \(probing perf --cc\) has no samples yet/);
  assert.ok(!runs().some((x) => x.includes('--stop')), 'a sampler we did not start is not stopped');
});

test('the picker is titled for what each command does', async (t) => {
  const child = spawn('/usr/bin/python3', ['-c', 'import time; print("up", flush=True); time.sleep(60)'],
                      { stdio: ['ignore', 'pipe', 'inherit'] });
  t.after(() => child.kill('SIGKILL'));
  await new Promise((resolve) => child.stdout.once('data', resolve));
  const titles = [];
  fake.answers.quickPick = (items, options) => { titles.push(options.title); return undefined; };
  fake.answers.inputBox = () => assert.fail('nothing picked: no input box');
  const docs = new commands.DumpDocuments();
  await commands.pickProcess();
  await commands.dumpStacks(docs);
  await commands.runSql();
  await commands.flameGraph();
  assert.deepEqual(fake.state.messages, []);
  assert.deepEqual(titles, ['Attach to a Python process', 'Dump the stacks of a Python process',
                            'Run SQL in a Python process', 'Flame graph of a Python process']);
  assert.deepEqual(runs(), []);
});

test('no session: the picker chooses the target; dismissing it runs nothing', async () => {
  const picked = [];
  fake.answers.quickPick = (items) => { picked.push(items); return undefined; };
  const docs = new commands.DumpDocuments();
  assert.equal(await commands.dumpStacks(docs), undefined);
  assert.equal(picked.length + fake.state.messages.length, 1, 'the picker, or "no Python process" when there is none');
  assert.deepEqual(runs(), []);
});

test('views: HTML escaping', () => {
  assert.equal(views.escapeHtml(`<a href="x">'&'</a>`), '&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;');
});
