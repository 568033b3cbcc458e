// SPDX-License-Identifier: MIT
// The extension against real targets (samples/debuggee.py, started as tests/dap does) and the
// real CLI and probe (PROBING_BUILD): the configuration is resolved exactly as VS Code does it
// with this extension (provider, ${command:pickProcess} through our picker command, the
// descriptor factory), then VS Code's side of the connection is played by Microsoft's
// DebugClient (@vscode/debugadapter-testsupport) on the descriptor's socket: initialize,
// attach with the configuration as arguments, threads, pause, stack trace, scopes, variables,
// `%sql`, continue, disconnect. Also: the commands on the real CLI, TCP with a token, errors.
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const net = require('node:net');
const path = require('node:path');
const { spawn, execFile } = require('node:child_process');
const { DebugClient } = require('@vscode/debugadapter-testsupport');
const { vscode, fake, ext } = require('../lib/hook');

// The probe's socket's name: <pid>-<pid namespace inode>.sock, the pid as the target sees it
// (NSpid's last; probe/core/rundir.c).
function sockName(pid) {
  let inner = pid;
  const m = /^NSpid:(.*)$/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (m) inner = Number(m[1].trim().split(/\s+/).pop());
  return `${inner}-${fs.statSync(`/proc/${pid}/ns/pid`, { bigint: true }).ino}.sock`;
}

// tests/dap's targets: the sample in its own process group, ready line, ticks, kill.
const ROOT = path.resolve(__dirname, '..', '..', '..');
const { Target, pythons, SAMPLE, CLI } = require(path.join(ROOT, 'tests', 'dap', 'lib', 'target.js'));
const extension = ext('extension.js');

const TIMEOUT = 60000;
const PYTHONS = pythons();

// What VS Code does on F5 with our extension active: resolveDebugConfiguration, substitute
// variables (${command:pickProcess} -> the command the debugger contribution maps it to),
// resolveDebugConfigurationWithSubstitutedVariables, then the descriptor factory.
const pkg = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'package.json'), 'utf8'));
async function resolveAsVsCode(initial) {
  const provider = fake.state.configProviders.get('probing');
  let config = provider.resolveDebugConfiguration(undefined, initial);
  const variables = pkg.contributes.debuggers[0].variables;
  for (const [k, v] of Object.entries(config)) {
    const m = typeof v === 'string' ? /^\$\{command:(\w+)\}$/.exec(v) : null;
    if (m) {
      const picked = await vscode.commands.executeCommand(variables[m[1]] || m[1]);
      if (picked === undefined) return { config: undefined };
      config = { ...config, [k]: picked };
    }
  }
  config = provider.resolveDebugConfigurationWithSubstitutedVariables(undefined, config);
  if (!config) return { config };
  const session = { id: 's1', type: config.type, name: config.name, configuration: config };
  const descriptor = await fake.state.factories.get('probing').createDebugAdapterDescriptor(session);
  return { config, session, descriptor };
}

// VS Code's end of the connection to a descriptor.
async function connectTo(descriptor) {
  const dc = new DebugClient('unused', 'unused', 'probing');
  dc.defaultTimeout = 10000;
  const sock = descriptor instanceof vscode.DebugAdapterNamedPipeServer
    ? net.createConnection(descriptor.path)
    : net.createConnection(descriptor.port, descriptor.host);
  await new Promise((resolve, reject) => { sock.once('connect', resolve); sock.once('error', reject); });
  dc.connect(sock, sock);
  dc.sock = sock;
  return dc;
}

// initialize (as VS Code sends it), `initialized`, attach with the configuration.
async function handshake(dc, config) {
  const initialized = dc.waitForEvent('initialized');
  const init = await dc.initializeRequest({
    clientID: 'vscode', clientName: 'Visual Studio Code', adapterID: 'probing', pathFormat: 'path',
    linesStartAt1: true, columnsStartAt1: true, supportsVariableType: true, supportsVariablePaging: true,
    supportsRunInTerminalRequest: true, locale: 'en',
  });
  await initialized;
  await dc.attachRequest(config);
  return init.body || {};
}

function cli(args, env = {}) {
  return new Promise((resolve, reject) => {
    execFile(CLI, args, { timeout: 30000, env: { ...process.env, ...env } }, (e, stdout, stderr) => {
      if (e) reject(new Error(`${CLI} ${args.join(' ')}: ${stderr || e.message}`)); else resolve(stdout);
    });
  });
}

function setUp() {
  fake.reset();
  fake.state.settings['probing.path'] = CLI;
  extension.activate({ subscriptions: [] });
}

async function withTarget(python, body) {
  const target = new Target(python);
  let failure = null;
  try {
    await target.ready();
    await body(target);
  } catch (e) {
    failure = e;
  }
  await target.kill().catch(() => {});
  const problems = target.outputProblems();
  if (failure || problems.length) {
    const log = target.probeLog().slice(-2000);
    target.cleanup();
    const msg = `${failure ? failure.stack || failure.message : ''}\n${problems.join('\n')}\n---- probe log ----\n${log}`;
    throw new Error(msg);
  }
  target.cleanup();
}

for (const python of PYTHONS) {
  test(`${python.id}: pick, inject, attach through the named pipe, pause, stack, variables, %sql, continue, disconnect`,
       { timeout: TIMEOUT }, () => withTarget(python, async (target) => {
    setUp();
    const pid = target.pid;
    const mainTid = target.info.main;
    // The picker lists the target (no probe yet) and the choice becomes the processId.
    let offered = null;
    fake.answers.quickPick = (items) => { offered = items.find((i) => i.pid === pid); return offered; };
    const { config, descriptor } = await resolveAsVsCode({});
    assert.ok(offered, `the picker did not offer ${pid}`);
    assert.doesNotMatch(offered.description, /probe loaded/);
    assert.match(offered.detail, /debuggee\.py/);
    assert.deepEqual(config, { type: 'probing', request: 'attach', name: 'Attach to Python process (probing)', processId: pid });
    assert.ok(descriptor instanceof vscode.DebugAdapterNamedPipeServer);
    assert.equal(descriptor.path, `/proc/${pid}/root/tmp/probing-${process.geteuid()}/${sockName(pid)}`);
    assert.match(fake.state.output.join('\n'), new RegExp(`probe loaded in ${pid} \\(CPython 3\\.\\d+`));

    const dc = await connectTo(descriptor);
    try {
      const caps = await handshake(dc, config);
      assert.equal(caps.supportsConfigurationDoneRequest, true);
      await dc.configurationDoneRequest();

      const threads = (await dc.threadsRequest()).body.threads;
      const ids = threads.map((t) => t.id);
      assert.ok(ids.includes(mainTid) && ids.includes(target.info.worker), `threads ${JSON.stringify(threads)}`);
      assert.equal(threads.find((t) => t.id === mainTid).name, 'MainThread');

      const stopped = dc.waitForEvent('stopped');
      await dc.pauseRequest({ threadId: mainTid });
      const ev = await stopped;
      assert.equal(ev.body.reason, 'pause');
      assert.equal(ev.body.allThreadsStopped, true);
      const before = target.mark();

      // The thread the event names (as VS Code does): stopped in the sample's code.
      const tid = ev.body.threadId;
      assert.ok([mainTid, target.info.worker].includes(tid), `stopped thread ${tid}`);
      const st = (await dc.stackTraceRequest({ threadId: tid })).body;
      const names = st.stackFrames.map((f) => f.name);
      const bottom = tid === mainTid ? '<module>' : 'worker_loop';
      assert.ok(names.includes(bottom), `frames ${JSON.stringify(names)}`);
      const frame = st.stackFrames.find((f) => f.source && f.source.path === SAMPLE);
      assert.ok(frame, `no frame in ${SAMPLE}: ${JSON.stringify(st.stackFrames)}`);

      const scopes = (await dc.scopesRequest({ frameId: frame.id })).body.scopes;
      const locals = scopes.find((s) => s.name === 'Locals');
      const globals = scopes.find((s) => s.name === 'Globals');
      assert.ok(locals && globals, JSON.stringify(scopes));
      // Each function of the sample and one local it always has when it is on a stack.
      const known = { main: 'n', worker_loop: 'beats', compute: 'n', add: 'a', raise_and_catch: 'n', '<module>': 'settings' };
      const lv = (await dc.variablesRequest({ variablesReference: locals.variablesReference })).body.variables;
      const want = known[frame.name];
      assert.ok(want, `unexpected frame ${frame.name}`);
      const local = lv.find((v) => v.name === want);
      assert.ok(local && local.value !== '' && local.type, `${frame.name}: locals ${JSON.stringify(lv)}`);
      const gv = (await dc.variablesRequest({ variablesReference: globals.variablesReference })).body.variables;
      const settings = gv.find((v) => v.name === 'settings');
      assert.ok(settings && settings.variablesReference > 0, JSON.stringify(settings));
      const kids = (await dc.variablesRequest({ variablesReference: settings.variablesReference })).body.variables;
      assert.equal(kids.find((v) => v.name === "'mode'").value, "'fast'");

      // %sql in the debug console, through the adapter itself.
      const sql = await dc.evaluateRequest({ expression: '%sql SELECT name FROM python.threads ORDER BY name', context: 'repl' });
      assert.match(sql.body.result, /MainThread/);
      assert.match(sql.body.result, /\(\d+ rows?\)\s*$/);

      // Stopped: no tick printed meanwhile.
      await new Promise((r) => setTimeout(r, 300));
      assert.deepEqual(target.lines().slice(before).filter((l) => l.startsWith('tick')), []);

      const c = await dc.continueRequest({ threadId: mainTid });
      assert.equal(c.body.allThreadsContinued, true);
      await target.ticks(2, { since: before });

      await dc.disconnectRequest({});
    } finally {
      dc.sock.destroy();
    }
    // Detached: still running, and the picker now marks the probe loaded.
    await target.ticks(2);
    fake.answers.quickPick = (items) => { offered = items.find((i) => i.pid === pid); return undefined; };
    await vscode.commands.executeCommand('probing.pickProcess');
    assert.match(offered.description, /probe loaded/);
  }));
}

// The rest on one interpreter (Debian's, else the first found): cheap and version-independent.
const one = PYTHONS.find((p) => p.id === 'debian') || PYTHONS[0];

test(`${one.id}: the commands on the real CLI: Dump Stacks, Run SQL Query`, { timeout: TIMEOUT }, () => withTarget(one, async (target) => {
  setUp();
  vscode.debug.activeDebugSession = { type: 'probing', configuration: { type: 'probing', request: 'attach', name: 'x', processId: target.pid } };
  fake.answers.quickPick = () => assert.fail('the active session gives the process');
  const uri = await vscode.commands.executeCommand('probing.dumpStacks');
  assert.ok(uri, JSON.stringify(fake.state.messages));
  const text = fake.state.documents[0].getText();
  assert.match(text, new RegExp(`Thread ${target.info.main} "MainThread"`));
  assert.match(text, /debuggee\.py/);
  fake.answers.inputBox = () => "SELECT name, native_id FROM python.threads WHERE name = 'MainThread'";
  const panel = await vscode.commands.executeCommand('probing.runSql');
  assert.ok(panel, JSON.stringify(fake.state.messages));
  assert.match(panel.webview.html, /<tr><th>name<\/th><th>native_id<\/th><\/tr>/);
  assert.match(panel.webview.html, new RegExp(`<tr><td>MainThread</td><td>${target.info.main}</td></tr>`));
  fake.answers.inputBox = () => 'SELECT nope FROM python.threads';
  assert.equal(await vscode.commands.executeCommand('probing.runSql'), undefined);
  assert.equal(fake.state.messages.length, 1);
  assert.match(fake.state.messages[0].text, /^probing: error: .*no such column: nope/);
}));

test(`${one.id}: connect over TCP with the token from the configuration`, { timeout: TIMEOUT }, () => withTarget(one, async (target) => {
  setUp();
  const token = `vscode-test-${process.pid}-${Date.now()}`;
  const out = await cli(['-p', String(target.pid), 'inject', '--listen', '127.0.0.1:0'], { PROBING_TOKEN: token });
  const m = /^listening on 127\.0\.0\.1:(\d+)$/m.exec(out);
  assert.ok(m, out);
  const port = Number(m[1]);
  const { config, descriptor } = await resolveAsVsCode({ type: 'probing', request: 'attach', name: 'tcp',
                                                         connect: { port }, token });
  assert.ok(descriptor instanceof vscode.DebugAdapterServer);
  assert.equal(descriptor.port, port);
  assert.equal(descriptor.host, '127.0.0.1');
  const dc = await connectTo(descriptor);
  try {
    await handshake(dc, config);
    await dc.configurationDoneRequest();
    const threads = (await dc.threadsRequest()).body.threads;
    assert.ok(threads.some((t) => t.id === target.info.main));
    await dc.disconnectRequest({});
  } finally {
    dc.sock.destroy();
  }
  // a wrong token: the attach fails (the probe's message), as VS Code would show it
  const bad = await connectTo(descriptor);
  try {
    await assert.rejects(handshake(bad, { ...config, token: 'wrong-token-0000' }), /token/i);
  } finally {
    bad.sock.destroy();
  }
}));

test(`${one.id}: "nativeFrames": "merged" from the configuration reaches the probe: native frames in the stack`,
     { timeout: TIMEOUT }, () => withTarget(one, async (target) => {
  setUp();
  const base = { type: 'probing', request: 'attach', name: 'native', processId: target.pid };
  // A value the probe would refuse is stopped before anything runs, with one message.
  assert.equal((await resolveAsVsCode({ ...base, nativeFrames: 'on' })).config, undefined);
  assert.match(fake.state.messages[0].text, /"nativeFrames": "on" is not one of "off", "merged", "all"/);
  const { config, descriptor } = await resolveAsVsCode({ ...base, nativeFrames: 'merged' });
  assert.equal(config.nativeFrames, 'merged');
  const dc = await connectTo(descriptor);
  try {
    const caps = await handshake(dc, config);
    assert.equal(caps.supportsModulesRequest, true);
    await dc.configurationDoneRequest();
    const stopped = dc.waitForEvent('stopped');
    await dc.pauseRequest({ threadId: target.info.main });
    const ev = await stopped;
    // The thread the event names is parked in Python (the other may still be in time.sleep).
    const frames = (await dc.stackTraceRequest({ threadId: ev.body.threadId })).body.stackFrames;
    assert.ok(frames[0].source && frames[0].source.path === SAMPLE, JSON.stringify(frames[0]));
    const native = frames.filter((f) => f.instructionPointerReference);
    assert.ok(native.length > 0 && native.every((f) => f.presentationHint === 'subtle'),
              JSON.stringify(frames.map((f) => f.name)));
    assert.ok(native.some((f) => /^(__libc_start_main|pythread_wrapper)\+0x/.test(f.name)),
              JSON.stringify(native.map((f) => f.name)));
    await dc.continueRequest({ threadId: target.info.main });
    await dc.disconnectRequest({});
  } finally {
    dc.sock.destroy();
  }
  await target.ticks(2);
}));

test('a process that is not Python: the factory fails with the CLI\'s one line', { timeout: TIMEOUT }, async () => {
  setUp();
  const sleeper = spawn('sleep', ['30'], { stdio: 'ignore' });
  try {
    await assert.rejects(resolveAsVsCode({ type: 'probing', request: 'attach', name: 'x', processId: sleeper.pid }),
      (e) => e.message === `probing: error: process ${sleeper.pid} (sleep) is not a Python process: give the pid of a python program`);
    await assert.rejects(resolveAsVsCode({ type: 'probing', request: 'attach', name: 'x', processId: 2 ** 31 - 2 }),
      (e) => /^probing: error: no process \d+: check the pid$/.test(e.message));
  } finally {
    sleeper.kill('SIGKILL');
  }
});

// ---- Flame Graph on the real CLI (perf --cc, flamegraph) ----

const CALLHEAVY = path.join(ROOT, 'samples', 'callheavy.py');
const CHROMIUM = ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome'].find((p) => fs.existsSync(p));

// samples/callheavy.py (CPU-bound), in its own process group, until its ready line.
async function startBusy(exe) {
  const proc = spawn(exe, [CALLHEAVY, '0.05'], { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let err = '';
  proc.stderr.on('data', (d) => { err += d; });
  await new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`callheavy.py: no ready line in 20 s: ${err}`)), 20000);
    proc.stdout.on('data', (d) => { out += d; if (/^ready /m.test(out)) { clearTimeout(timer); resolve(); } });
    proc.once('exit', (c) => { clearTimeout(timer); reject(new Error(`callheavy.py exited (${c}): ${err}`)); });
  });
  proc.stdout.resume();
  const exited = new Promise((resolve) => proc.once('exit', resolve));
  const kill = async () => {
    try { process.kill(-proc.pid, 'SIGKILL'); } catch { /* gone */ }
    await exited;
    // the probe's socket file outlives a SIGKILL: nothing serves this pid now
    try { fs.unlinkSync(`/tmp/probing-${process.geteuid()}/${sockName(proc.pid)}`); } catch { /* not there */ }
  };
  return { proc, stderr: () => err, kill };
}

function svgOf(html) {
  const m = /src="data:image\/svg\+xml;base64,([A-Za-z0-9+/=]+)"/.exec(html);
  assert.ok(m, 'no data: SVG frame in the webview');
  return Buffer.from(m[1], 'base64').toString('utf8');
}

let flameHtml = null;

test(`${one.id}: Flame Graph: perf --cc for the asked time, the SVG in a webview, sampling stopped`, { timeout: TIMEOUT }, async () => {
  setUp();
  const busy = await startBusy(one.exe);
  try {
    const pid = busy.proc.pid;
    vscode.debug.activeDebugSession = { type: 'probing', configuration: { type: 'probing', request: 'attach', name: 'x', processId: pid } };
    fake.answers.inputBox = (o) => { assert.equal(o.value, '5'); return '1'; };
    const panel = await vscode.commands.executeCommand('probing.flameGraph');
    assert.ok(panel, JSON.stringify(fake.state.messages));
    assert.deepEqual(fake.state.messages, []);
    assert.equal(panel.viewType, 'probing.flameGraph');
    assert.equal(panel.options.enableScripts, true);
    const svg = svgOf(panel.webview.html);
    assert.match(svg, /^<\?xml[^]*<svg [^>]*width="\d+" height="\d+"/);
    assert.match(svg, /<script[^>]*>/);
    assert.match(svg, /fib \([^)]*callheavy\.py:\d+\)/, 'the sampled Python function is in the graph');
    // the command stopped the sampler it started
    assert.equal((await cli(['-p', String(pid), 'perf', '--cc', '--stop'])).trim(), 'perf --cc was not running');
    flameHtml = panel.webview.html;
  } finally {
    await busy.kill();
  }
  assert.equal(busy.stderr(), '', 'the target printed on stderr');
});

// The webview's page in a real browser engine: the SVG's own script runs in the frame under the
// page's policy (a #search= fragment highlights matching frames in rgb(230,0,230)), and does
// not run without script-src 'unsafe-inline' (the policy is what allows it).
test('Flame Graph page: the SVG\'s script runs in headless Chromium under the page\'s CSP',
     { timeout: TIMEOUT, skip: CHROMIUM ? false : 'no chromium on this machine' }, async (t) => {
  if (!flameHtml) return t.skip('the previous test produced no page');
  const { decode, count } = require('../lib/png');
  const dir = fs.mkdtempSync(path.join(require('node:os').tmpdir(), 'probing-flame-page-'));
  const shot = async (html, name) => {
    const file = path.join(dir, `${name}.html`);
    fs.writeFileSync(file, html);
    const png = path.join(dir, `${name}.png`);
    await new Promise((resolve, reject) => {
      execFile(CHROMIUM, ['--headless', '--no-sandbox', '--disable-gpu', '--hide-scrollbars', '--window-size=1250,700',
                          `--user-data-dir=${path.join(dir, 'profile')}`, `--screenshot=${png}`, `file://${file}`],
               { timeout: 45000 }, (e, _o, stderr) => (e ? reject(new Error(`chromium: ${e.message} ${stderr}`)) : resolve()));
    });
    return count(decode(fs.readFileSync(png)), [230, 0, 230]);
  };
  try {
    const withSearch = flameHtml.replace(/(src="data:image\/svg\+xml;base64,[A-Za-z0-9+/=]+)"/, '$1#search=fib"');
    assert.notEqual(withSearch, flameHtml);
    const highlighted = await shot(withSearch, 'search');
    assert.ok(highlighted > 200, `search highlighted ${highlighted} pixels`);
    const noScript = withSearch.replace(" script-src 'unsafe-inline';", '');
    assert.notEqual(noScript, withSearch);
    assert.equal(await shot(noScript, 'noscript'), 0, 'the script ran without the policy allowing it');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
