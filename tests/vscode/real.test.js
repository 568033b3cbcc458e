// SPDX-License-Identifier: MIT
// The extension in a real VS Code, used as a user would: code-server (VS Code in a browser,
// from npm, installed once outside the clone by tools/code-server.sh) with our .vsix and no
// other extension, in Debian's headless chromium driven by playwright-core. A real target
// (samples/debuggee.py, copied into the workspace folder that VS Code opens) with this build's
// CLI and probe. Through the UI only: attach with the process picker, pause, the call stack
// and variables, the debug console (an expression, %sql), a breakpoint set by clicking the
// .py file's gutter and hit, a step, continue, Dump Stacks, Run SQL Query, Flame Graph, a
// second debugger refused (one dialog, no toasts), disconnect, the target running on.
// Screenshots go to build/vscode-real/ (PROBING_SHOTS). Every wait is bounded; code-server,
// chromium and the target are killed at the end, also on failure.
//   CODE_SERVER=<dir of code-server> PROBING_BUILD=build/release VSIX=build/probing-0.1.0.vsix \
//     node --test tests/vscode/
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const net = require('node:net');
const path = require('node:path');
const http = require('node:http');
const { spawn, execFileSync } = require('node:child_process');
const { chromium } = require('playwright-core');

const ROOT = path.resolve(__dirname, '..', '..');
const BUILD = path.resolve(process.env.PROBING_BUILD || path.join(ROOT, 'build', 'release'));
const CLI = path.join(BUILD, 'bin', 'probing');
const CODE_SERVER = process.env.CODE_SERVER;
const VSIX = path.resolve(process.env.VSIX || '');
const PYTHON = process.env.PROBING_VSCODE_PYTHON || '/usr/bin/python3';
const SHOTS = path.resolve(process.env.PROBING_SHOTS || path.join(ROOT, 'build', 'vscode-real'));
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
// PROBING_VSCODE_BUNDLED=1: VSIX is the platform-specific .vsix (make vsix-linux-x64) and no
// probing is on PATH nor set: the extension must run the CLI and probe it carries.
const BUNDLED = process.env.PROBING_VSCODE_BUNDLED === '1';
const STEP_MS = 30000;   // the longest any one UI step may take

const started = [];      // {name, pid} of process groups we started: killed at the end
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'probing-vscode-'));
const T0 = Date.now();
const log = (...a) => console.log(`# ${((Date.now() - T0) / 1000).toFixed(1)} s:`, ...a);

function killAll() {
  for (const p of started.reverse()) {
    try { process.kill(-p.pid, 'SIGKILL'); } catch { /* gone */ }
  }
  started.length = 0;
}
process.on('exit', killAll);

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => { const { port } = srv.address(); srv.close(() => resolve(port)); });
  });
}

async function until(what, fn, ms = STEP_MS, every = 200) {
  const deadline = Date.now() + ms;
  let last;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (e) { last = e; }
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}${last ? `: ${last.message}` : ''}`);
    await new Promise((r) => setTimeout(r, every));
  }
}

function httpOk(url) {
  return new Promise((resolve) => {
    const req = http.get(url, { timeout: 2000 }, (res) => { res.resume(); resolve(res.statusCode < 500); });
    req.on('error', () => resolve(false));
    req.on('timeout', () => { req.destroy(); resolve(false); });
  });
}

// The target: the workspace's copy of samples/debuggee.py, in its own process group; its
// stdout lines are kept ("ready {...}", then "tick N value=V").
function startTarget(script, launcher = []) {
  const argv = [...launcher, PYTHON, '-u', script];
  const child = spawn(argv[0], argv.slice(1), { detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  started.push({ name: 'target', pid: child.pid });
  const t = { child, pid: child.pid, lines: [], err: '' };
  let buf = '';
  child.stdout.on('data', (d) => {
    buf += d;
    let i;
    while ((i = buf.indexOf('\n')) >= 0) { t.lines.push(buf.slice(0, i)); buf = buf.slice(i + 1); }
  });
  child.stderr.on('data', (d) => { t.err += d; });
  t.ticks = () => t.lines.filter((l) => l.startsWith('tick ')).length;
  return t;
}

// Lines of the sample marked "# BP: name" (1-based), as the project's tests find them.
function bpLines(file) {
  const lines = fs.readFileSync(file, 'utf8').split('\n');
  const out = {};
  lines.forEach((l, i) => { const m = /# BP: (\w+)/.exec(l); if (m) out[m[1]] = i + 1; });
  return out;
}

test('the extension in a real VS Code (code-server) on a real target', { timeout: 600000 }, async (t) => {
  // Cleanup, whatever happened: chromium (what is left of it by pid: its profile names it),
  // code-server and the target (their process groups), the temporary directory.
  const profile = path.join(tmp, 'chromium-profile');
  let context = null;
  t.after(async () => {
    if (context) await Promise.race([context.close().catch(() => {}), new Promise((r) => setTimeout(r, 10000))]);
    for (const pid of fs.readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
      try {
        if (fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(profile)) process.kill(Number(pid), 'SIGKILL');
      } catch { /* gone */ }
    }
    killAll();
    fs.rmSync(tmp, { recursive: true, force: true });
  });
  assert.ok(CODE_SERVER && fs.existsSync(path.join(CODE_SERVER, 'out', 'node', 'entry.js')),
            `CODE_SERVER (${CODE_SERVER}) is not a code-server install: run tools/code-server.sh`);
  assert.ok(fs.existsSync(VSIX), `VSIX (${VSIX}) is missing: make vsix`);
  assert.ok(fs.existsSync(CLI), `${CLI} is missing: make`);
  fs.rmSync(SHOTS, { recursive: true, force: true });
  fs.mkdirSync(SHOTS, { recursive: true });

  // The workspace: a folder with the sample, which the target runs (so the breakpoint's path
  // is the file the target executes).
  const ws = path.join(tmp, 'workspace');
  fs.mkdirSync(ws);
  const script = path.join(ws, 'debuggee.py');
  fs.copyFileSync(path.join(ROOT, 'samples', 'debuggee.py'), script);
  const BP = bpLines(script);
  const target = startTarget(script);
  await until('the target\'s ready line', () => target.lines.some((l) => l.startsWith('ready ')), 20000);
  log(`target pid ${target.pid}`);

  // code-server: its own user data and extensions, our .vsix and nothing else, 127.0.0.1 only,
  // no auth. probing.path: this build's CLI.
  const userData = path.join(tmp, 'user-data');
  const extDir = path.join(tmp, 'extensions');
  fs.mkdirSync(path.join(userData, 'User'), { recursive: true });
  fs.writeFileSync(path.join(userData, 'User', 'settings.json'), JSON.stringify({
    ...(BUNDLED ? {} : { 'probing.path': CLI }),
    'probing.flameGraph.duration': 2,
    'workbench.startupEditor': 'none',
    'workbench.tips.enabled': false,
    'workbench.welcomePage.walkthroughs.openOnInstall': false,
    'security.workspace.trust.enabled': false,
    'extensions.autoCheckUpdates': false,
    'extensions.autoUpdate': false,
    'extensions.ignoreRecommendations': true,
    'telemetry.telemetryLevel': 'off',
    'update.mode': 'none',
    'editor.minimap.enabled': false,
    'chat.commandCenter.enabled': false,
    'window.commandCenter': false,
    'debug.toolBarLocation': 'docked',
    'workbench.colorTheme': 'Default Light Modern',
  }, null, 2));
  const entry = path.join(CODE_SERVER, 'out', 'node', 'entry.js');
  const csArgs = ['--user-data-dir', userData, '--extensions-dir', extDir];
  execFileSync(process.execPath, [entry, ...csArgs, '--install-extension', VSIX], { timeout: 120000, stdio: 'pipe' });
  const listed = execFileSync(process.execPath, [entry, ...csArgs, '--list-extensions'], { timeout: 60000, encoding: 'utf8' });
  assert.deepEqual(listed.trim().split('\n'), ['probing.probing'], 'our extension and no other');

  const port = await freePort();
  const csLog = fs.openSync(path.join(SHOTS, 'code-server.log'), 'w');
  const cs = spawn(process.execPath, [entry, ...csArgs, '--bind-addr', `127.0.0.1:${port}`, '--auth', 'none',
                                      '--disable-telemetry', '--disable-update-check', '--disable-workspace-trust',
                                      '--disable-getting-started-override', '--ignore-last-opened', ws],
                   { detached: true, stdio: ['ignore', csLog, csLog],
                     env: BUNDLED ? { ...process.env, PROBING_TOKEN: '', PATH: '/usr/bin:/bin', HOME: tmp }
                                  : { ...process.env, PROBING_TOKEN: '' } });
  started.push({ name: 'code-server', pid: cs.pid });
  await until('code-server to answer', () => httpOk(`http://127.0.0.1:${port}/healthz`), 60000, 300);

  // chromium, headless, a fresh profile; nothing downloaded.
  context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    chromiumSandbox: false,
    viewport: { width: 1280, height: 800 },
    timeout: 60000,
    args: ['--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
           '--disable-component-update', '--disable-sync'],
  });
  const page = context.pages()[0] || await context.newPage();
  page.setDefaultTimeout(STEP_MS);
  let shot = 0;
  const snap = async (name) => {
    const file = path.join(SHOTS, `${String(++shot).padStart(2, '0')}-${name}.png`);
    await page.screenshot({ path: file });
    log(`screenshot ${path.relative(ROOT, file)}`);
  };
  const fail = async (e) => { await snap('failure').catch(() => {}); throw e; };

  try {
    await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(ws)}`, { timeout: 60000 });
    await page.locator('.monaco-workbench').waitFor({ timeout: 60000 });
    await page.locator('.explorer-folders-view, .explorer-viewlet').first().waitFor({ timeout: 60000 });

    // ---- the sample open in an editor ----
    const quick = page.locator('.quick-input-widget');
    const quickInput = quick.locator('input.input');
    await page.keyboard.press('Control+P');
    await quickInput.waitFor();
    await quickInput.fill('debuggee.py');
    await quick.locator('.monaco-list-row', { hasText: 'debuggee.py' }).first().waitFor();
    await page.keyboard.press('Enter');
    const editor = page.locator('.editor-instance .monaco-editor').first();
    await editor.locator('.view-line', { hasText: 'class Point' }).waitFor();

    // ---- attach with the process picker ----
    const command = async (title) => {
      await page.keyboard.press('F1');
      await quickInput.waitFor();
      await quickInput.fill(`>${title}`);
      await quick.locator('.monaco-list-row', { hasText: title }).first().waitFor();
      await page.keyboard.press('Enter');
    };
    // The attach picker, open: the palette's Enter can be lost right after a dialog was
    // dismissed (CI: no picker came in 30 s), so the command is given again when the picker's
    // title has not shown within 5 s, at most three times.
    const attachPicker = async () => {
      for (let i = 0; ; i++) {
        await command('Probing: Attach to Process');
        try {
          await until('the picker titled for attaching', async () => (await quick.locator('.quick-input-title').innerText()).includes('Attach to a Python process'), 5000);
          return;
        } catch (e) {
          if (i >= 2) throw e;
          await page.keyboard.press('Escape');
        }
      }
    };
    await attachPicker();
    await quickInput.fill(`pid ${target.pid}`);
    const row = quick.locator('.monaco-list-row', { hasText: `pid ${target.pid}` }).first();
    await row.waitFor();
    assert.match(await row.innerText(), /debuggee\.py/);
    await snap('picker');
    await page.keyboard.press('Enter');
    // the debug actions, docked in the Run and Debug view (debug.toolBarLocation)
    const disconnect = page.locator('.codicon-debug-disconnect').first();
    await disconnect.waitFor({ timeout: 60000 });
    const callStack = page.locator('.debug-call-stack');
    await until('threads in the call stack', async () => /MainThread/.test(await callStack.innerText()), STEP_MS);
    log('attached');
    if (BUNDLED) { // the probe loaded is the one the .vsix carries, under its extension folder
      const maps = fs.readFileSync(`/proc/${target.pid}/maps`, 'utf8');
      const probe = maps.split('\n').find((l) => /libprobing-3\.\d+\.so/.test(l)) || '';
      assert.ok(probe.includes(`${extDir}/`) && probe.includes('/bundled/lib/probing/'), `not the bundled probe: ${probe}`);
      log(`the bundled probe: ${probe.split(/\s+/).pop()}`);
    }

    // ---- pause: call stack and variables ----
    await page.keyboard.press('F6');
    await until('a paused thread with frames of the sample', async () => {
      const s = await callStack.innerText();
      return /paused/i.test(s) && /debuggee\.py/.test(s);
    });
    const variables = page.locator('.debug-variables');
    await until('locals in the Variables view', async () => /Locals/.test(await variables.innerText()) &&
                (await variables.locator('.monaco-list-row').count()) > 1);
    const stackText = await callStack.innerText();
    assert.match(stackText, /MainThread/);
    assert.match(stackText, /worker/);
    log('paused:', stackText.replace(/\s+/g, ' ').slice(0, 300));
    await snap('paused');

    // ---- the debug console: an expression, %sql ----
    await page.keyboard.press('Control+Shift+Y');
    const repl = page.locator('.repl');
    const replInput = repl.locator('.repl-input-wrapper .monaco-editor textarea');
    await replInput.waitFor();
    const evaluate = async (expr, expect) => {
      await replInput.focus();
      await page.keyboard.type(expr);
      await page.keyboard.press('Enter');
      await until(`the console's answer to ${expr}`, async () => expect.test(await repl.locator('.repl-tree').innerText()));
    };
    await evaluate('6 * 7', /^42$/m);
    await evaluate('%sql SELECT name FROM python.threads ORDER BY name', /MainThread[\s\S]*worker/);
    await snap('debug-console');

    // ---- continue; a breakpoint by clicking the gutter of the .py, hit; a step ----
    await page.keyboard.press('F5');
    await until('running again', async () => !/paused/i.test(await callStack.innerText()));
    const ticksBefore = target.ticks();
    await until('the target ticking', () => target.ticks() > ticksBefore + 2, 10000);
    await editor.click({ position: { x: 300, y: 100 } });
    await page.keyboard.press('Control+G');
    await quickInput.waitFor();
    await quickInput.fill(`:${BP.add_body}`);
    await page.keyboard.press('Enter');
    const line = editor.locator('.view-line', { hasText: '# BP: add_body' });
    await line.waitFor();
    const lineBox = await line.boundingBox();
    const glyph = await editor.locator('.glyph-margin').boundingBox();
    assert.ok(lineBox && glyph, 'the line and the glyph margin are on screen');
    const gutter = { x: glyph.x + glyph.width / 2, y: lineBox.y + lineBox.height / 2 };
    await page.mouse.move(gutter.x, gutter.y);
    await page.mouse.click(gutter.x, gutter.y);
    const bpDecoration = editor.locator('.codicon-debug-breakpoint, .codicon-debug-breakpoint-unverified, .codicon-debug-stackframe');
    await until('a breakpoint in the gutter (VS Code refuses it in .py files without a breakpoints contribution)',
                async () => (await bpDecoration.count()) > 0, 10000);
    await until('the breakpoint hit', async () => {
      const s = await callStack.innerText();
      return /paused on breakpoint/i.test(s) && new RegExp(`\\badd\\b[\\s\\S]*debuggee\\.py\\s*${BP.add_body}:`).test(s);
    });
    const topLine = editor.locator('.debug-top-stack-frame-line');
    await topLine.first().waitFor();
    await until('the Variables view showing add()\'s arguments', async () => {
      const v = await variables.innerText();
      return /\ba\b/.test(v) && /\bb\b/.test(v);
    });
    await snap('breakpoint-hit');
    await page.keyboard.press('F10');
    await until('the step to the next line', async () =>
      new RegExp(`\\badd\\b[\\s\\S]*debuggee\\.py\\s*${BP.add_return}:`).test(await callStack.innerText()));
    await until('total in the Variables view', async () => /\btotal\b/.test(await variables.innerText()));
    await snap('stepped');
    // the breakpoint off (a second click), then continue
    const box2 = await editor.locator('.view-line', { hasText: '# BP: add_body' }).boundingBox();
    await page.mouse.click(glyph.x + glyph.width / 2, box2.y + box2.height / 2);
    await until('the breakpoint removed', async () => (await editor.locator('.codicon-debug-breakpoint').count()) === 0, 10000);
    await page.keyboard.press('F5');
    await until('running again', async () => !/paused/i.test(await callStack.innerText()));
    const ticksAfterBp = target.ticks();
    await until('the target ticking after the breakpoint', () => target.ticks() > ticksAfterBp + 2, 10000);
    log('breakpoint hit, stepped, continued');

    // ---- the commands on the session's process ----
    await command('Probing: Dump Stacks');
    const dump = page.locator('.editor-instance .view-lines', { hasText: `probing debug --dump of process ${target.pid}` });
    await dump.waitFor();
    assert.match((await dump.innerText()).replace(/\u00a0/g, ' '), /"MainThread"[\s\S]*main \(.*debuggee\.py:\d+(:\d+)?\)/); // :column on 3.11+
    await page.locator('.tab', { hasText: `stacks process ${target.pid}` }).first().waitFor();
    await snap('dump-stacks');

    const frameText = async (re) => {
      for (const f of page.frames()) {
        try {
          const s = await f.evaluate(() => document.body ? document.body.innerText : '');
          if (re.test(s)) return s;
        } catch { /* a frame going away */ }
      }
      return null;
    };
    await command('Probing: Run SQL Query');
    await quickInput.waitFor();
    await quickInput.fill('SELECT name, native_id FROM python.threads ORDER BY name');
    await page.keyboard.press('Enter');
    const sql = await until('the SQL table in its webview', () => frameText(/native_id[\s\S]*MainThread[\s\S]*worker/));
    assert.match(sql, /2 rows/);
    await snap('run-sql');

    await command('Probing: Flame Graph');
    await until('the duration box', async () => (await quick.innerText()).includes('Flame graph of process'));
    await page.keyboard.press('Enter');   // the default, 2 s (settings)
    const flame = await until('the flame graph in its webview', async () => {
      for (const f of page.frames()) {
        try {
          const n = await f.evaluate(() => document.documentElement && document.documentElement.tagName === 'svg'
            ? document.querySelectorAll('g').length : 0);
          if (n > 1) return { frame: f, groups: n };
        } catch { /* a frame going away */ }
      }
      return null;
    }, 60000, 500);
    const flameSvg = await flame.frame.evaluate(() => document.documentElement.textContent);
    assert.match(flameSvg, /debuggee\.py/);
    // not a graph of one sample: an idle target is sampled again in wall-clock time
    const samples = Number((/: (\d+) samples/.exec(flameSvg) || [])[1]);
    assert.ok(samples >= 20, `the flame graph has ${samples} samples`);
    const idleNote = await frameText(/was mostly idle/);
    log(`flame graph: ${flame.groups} groups${idleNote ? ', sampled in wall mode (the target was mostly idle)' : ''}`);
    await snap('flame-graph');

    // ---- a second debugger on the same process: refused in one dialog, no toasts ----
    await attachPicker();
    await quickInput.fill(`pid ${target.pid}`);
    await quick.locator('.monaco-list-row', { hasText: `pid ${target.pid}` }).first().waitFor();
    await page.keyboard.press('Enter');
    const dialog = page.locator('.monaco-dialog-box');
    await dialog.waitFor();
    assert.match(await dialog.innerText(), /another debugging client is attached to this process/);
    await new Promise((r) => setTimeout(r, 3000)); // what would follow the refusal has come by now
    const toasts = await page.locator('.notification-toast').allInnerTexts();
    assert.deepEqual(toasts.filter((x) => /not attached/.test(x)), [], 'no toasts after the refusal');
    assert.equal(await page.locator('.notification-toast .codicon-error').count(), 0, `error toasts: ${toasts.join(' | ')}`);
    await snap('second-debugger-refused');
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });

    // ---- a target short of descriptors (soft ulimit -n 48): the probe refuses, and says why ----
    const short = startTarget(script, ['prlimit', '--nofile=48:4096', '--']);
    await until('the short target\'s ready line', () => short.lines.some((l) => l.startsWith('ready ')), 20000);
    await attachPicker();
    await quickInput.fill(`pid ${short.pid}`);
    await quick.locator('.monaco-list-row', { hasText: `pid ${short.pid}` }).first().waitFor();
    await page.keyboard.press('Enter');
    await dialog.waitFor();
    const refused = await dialog.innerText();
    assert.match(refused, /the probe refused the connection: \d+ of 48 descriptors open, 64 kept for the target \(net\.fd_reserve\)/);
    assert.match(refused, /raise the target's open-file limit/);
    await snap('refused-short-of-descriptors');
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });
    assert.equal(short.child.exitCode, null, 'the short target is alive');
    process.kill(short.pid, 'SIGKILL');

    // ---- disconnect: the target runs on ----
    await disconnect.click();
    await page.locator('.codicon-debug-disconnect').first().waitFor({ state: 'detached' });
    await page.locator('.debug-call-stack', { hasText: 'MainThread' }).waitFor({ state: 'detached' });
    const ticksAtEnd = target.ticks();
    await until('the target ticking after the disconnect', () => target.ticks() > ticksAtEnd + 5, 10000);
    assert.equal(target.child.exitCode, null, 'the target is alive');
    await snap('disconnected');
    const left = execFileSync(CLI, ['-p', String(target.pid), 'query', 'SELECT count(*) FROM python.threads', '--format', 'csv'],
                              { timeout: 30000, encoding: 'utf8' });
    assert.match(left, /^count\(\*\)\r?\n2\r?\n/);
    log('disconnected; the target runs on');
  } catch (e) {
    await fail(e);
  }
});
