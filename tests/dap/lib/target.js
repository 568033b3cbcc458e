// SPDX-License-Identifier: MIT
// Real targets: samples/debuggee.py under a given interpreter, in its own process group, with
// its stdout/stderr collected; the probe injected with the real CLI. Every wait is bounded.
'use strict';

const { spawn, execFile, execFileSync } = require('node:child_process');
const { StringDecoder } = require('node:string_decoder');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..', '..', '..');
const BUILD = process.env.PROBING_BUILD || path.join(ROOT, 'build', 'release');
const CLI = path.join(BUILD, 'bin', 'probing');
const SAMPLE = path.join(ROOT, 'samples', 'debuggee.py');
const POLL_MS = 10;

// Interpreters: tools/pythons.sh (pyenv first) plus Debian's /usr/bin/python3. DAP_PYTHONS
// ("3.12 debian") narrows the list by id.
function pythons() {
  const out = execFileSync(path.join(ROOT, 'tools', 'pythons.sh'), { encoding: 'utf8' });
  const found = [];
  for (const line of out.split('\n')) {
    const parts = line.trim().split(/\s+/);
    if (parts.length === 3) found.push({ id: parts[0], exe: parts[2] });
  }
  if (fs.existsSync('/usr/bin/python3')) found.push({ id: 'debian', exe: '/usr/bin/python3' });
  const only = (process.env.DAP_PYTHONS || '').split(/[\s,]+/).filter(Boolean);
  return only.length ? found.filter((p) => only.includes(p.id)) : found;
}

// Line of the "# BP: name" marker in the sample (never a hard-coded number).
const sampleLines = fs.readFileSync(SAMPLE, 'utf8').split('\n');
function bp(name) {
  const rx = new RegExp(`#\\s*BP:\\s*${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\b`);
  const i = sampleLines.findIndex((l) => rx.test(l));
  if (i < 0) throw new Error(`no BP marker ${name} in ${SAMPLE}`);
  return i + 1;
}
// Line of the first line matching rx (for things that are not markers, e.g. a `def`).
function lineMatching(rx) {
  const i = sampleLines.findIndex((l) => rx.test(l));
  if (i < 0) throw new Error(`no line matching ${rx} in ${SAMPLE}`);
  return i + 1;
}
// First blank line after the given line (a line without code).
function blankAfter(line) {
  for (let i = line; i < sampleLines.length; i++) if (sampleLines[i].trim() === '') return i + 1;
  throw new Error(`no blank line after ${line}`);
}

// What the sample itself prints; anything else on its stdout leaked from the probe.
const OWN_LINE = /^(ready \{.*\}|tick \d+( value=-?\d+)?)$/;

// Targets still alive if this process goes away early (an interrupted run): killed with it.
const live = new Set();
function killLive() {
  for (const pid of live) {
    try { process.kill(-pid, 'SIGKILL'); } catch { /* gone */ }
  }
  live.clear();
}
process.on('exit', killLive);
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.once(sig, () => { killLive(); process.exit(128 + (sig === 'SIGINT' ? 2 : 15)); });
}

class Target {
  // sample: a file of samples/ (default debuggee.py, which the helpers' bp() and source() read).
  constructor(python, { env, sample } = {}) {
    this.python = python;
    this.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dap-test-'));
    this.logPath = path.join(this.dir, 'probe.log');
    this.out = '';
    this.err = '';
    this.exited = null;
    this.lineWaiters = new Set();
    const e = { ...process.env, PROBING_LOG: this.logPath, PROBING_LOG_LEVEL: 'debug',
                PYTHONDONTWRITEBYTECODE: '1', ...(env || {}) };
    delete e.PROBING;
    // stdout/stderr go to files, read back by polling: a line the target wrote before the probe
    // sent a message is in the file by the time that message arrives (a pipe gives no such order
    // against the socket), so positions taken with mark() are exact.
    this.outPath = path.join(this.dir, 'stdout');
    this.errPath = path.join(this.dir, 'stderr');
    const wOut = fs.openSync(this.outPath, 'w');
    const wErr = fs.openSync(this.errPath, 'w');
    try {
      this.proc = spawn(python.exe, [sample ? path.join(ROOT, 'samples', sample) : SAMPLE], { stdio: ['ignore', wOut, wErr], detached: true, env: e });
    } finally {
      fs.closeSync(wOut);
      fs.closeSync(wErr);
    }
    this.rOut = fs.openSync(this.outPath, 'r');
    this.rErr = fs.openSync(this.errPath, 'r');
    this.decOut = new StringDecoder('utf8');
    this.decErr = new StringDecoder('utf8');
    this.pid = this.proc.pid;
    if (this.pid) live.add(this.pid);
    this.poller = setInterval(() => this._poll(), POLL_MS);
    this.exitPromise = new Promise((resolve) => {
      this.proc.on('error', (err) => { this.exited = { error: err.message }; this._poll(); this._wake(); resolve(); });
      this.proc.on('exit', (code, signal) => {
        this.exited = { code, signal };
        live.delete(this.pid);
        this._poll();
        this._wake();
        resolve();
      });
    });
  }

  // Reads what the target wrote since the last call; wakes waiters when there is something.
  _poll() {
    if (this.rOut === null) return;
    let got = false;
    const buf = Buffer.alloc(65536);
    for (const [fd, dec, key] of [[this.rOut, this.decOut, 'out'], [this.rErr, this.decErr, 'err']]) {
      for (;;) {
        const n = fs.readSync(fd, buf, 0, buf.length, null);
        if (n <= 0) break;
        this[key] += dec.write(buf.subarray(0, n));
        got = true;
      }
    }
    if (got) this._wake();
  }

  // The probe's socket: <pid>-<pid namespace inode>.sock, the pid as the target sees it
  // (NSpid's last; probe/core/rundir.c).
  get socketPath() {
    let inner = this.pid;
    const m = /^NSpid:(.*)$/m.exec(fs.readFileSync(`/proc/${this.pid}/status`, 'utf8'));
    if (m) inner = Number(m[1].trim().split(/\s+/).pop());
    const ns = fs.statSync(`/proc/${this.pid}/ns/pid`, { bigint: true }).ino;
    return `/tmp/probing-${process.geteuid()}/${inner}-${ns}.sock`;
  }

  lines() { this._poll(); return this.out.split('\n').filter((l) => l !== ''); }

  _wake() { for (const w of [...this.lineWaiters]) w(); }

  // Waits for a complete stdout line matching rx, searched from line index `since`; resolves
  // with {match, index}.
  waitLine(rx, { timeout = 10000, since = 0 } = {}) {
    return new Promise((resolve, reject) => {
      const check = () => {
        const complete = this.out.slice(0, this.out.lastIndexOf('\n') + 1).split('\n');
        for (let i = since; i < complete.length; i++) {
          const m = rx.exec(complete[i]);
          if (m) { done(); resolve({ match: m, index: i }); return; }
        }
        if (this.exited) {
          done();
          reject(new Error(`target exited (${JSON.stringify(this.exited)}) waiting for ${rx}; ` +
                           `stderr: ${this.err.slice(-2000)}`));
        }
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`timed out after ${timeout} ms waiting for ${rx} on the target's stdout; ` +
                         `last lines: ${JSON.stringify(this.lines().slice(-3))}`));
      }, timeout);
      const done = () => { clearTimeout(timer); this.lineWaiters.delete(check); };
      this._poll();
      this.lineWaiters.add(check);
      check();
    });
  }

  // Waits until the target's stderr matches rx.
  waitErr(rx, { timeout = 10000 } = {}) {
    return new Promise((resolve, reject) => {
      const check = () => {
        if (rx.test(this.err)) { done(); resolve(); } else if (this.exited) {
          done(); reject(new Error(`target exited waiting for ${rx} on stderr`));
        }
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`timed out after ${timeout} ms waiting for ${rx} on the target's stderr: ${JSON.stringify(this.err.slice(-500))}`));
      }, timeout);
      const done = () => { clearTimeout(timer); this.lineWaiters.delete(check); };
      this._poll();
      this.lineWaiters.add(check);
      check();
    });
  }

  // Number of complete stdout lines so far (a position for waitLine's `since`).
  mark() {
    this._poll();
    return this.out.slice(0, this.out.lastIndexOf('\n') + 1).split('\n').length - 1;
  }

  async ready() {
    const { match } = await this.waitLine(/^ready (\{.*\})$/, { timeout: 20000 });
    this.info = JSON.parse(match[1]);
    return this.info;
  }

  // Waits for `count` new tick lines after position `since`; returns the parsed ticks.
  async ticks(count, { since = this.mark(), timeout = 10000 } = {}) {
    const ticks = [];
    let at = since;
    while (ticks.length < count) {
      const { match, index } = await this.waitLine(/^tick (\d+)(?: value=(-?\d+))?$/, { since: at, timeout });
      ticks.push({ n: Number(match[1]), value: Number(match[2]) });
      at = index + 1;
    }
    return ticks;
  }

  inject({ timeout = 30000 } = {}) {
    return new Promise((resolve, reject) => {
      execFile(CLI, ['-p', String(this.pid), 'inject'], { timeout, env: { ...process.env, PROBING_LOG: this.logPath } },
        (error, stdout, stderr) => {
          if (error) reject(new Error(`probing inject failed (${error.code ?? error.signal}): ${(stderr || stdout || error.message).trim()}`));
          else resolve(stdout);
        });
    });
  }

  // Asserts that the target printed nothing but its own lines; `allowErr` filters stderr lines
  // the test caused on purpose (e.g. an uncaught exception's traceback).
  outputProblems({ allowErr } = {}) {
    this._poll();
    const problems = [];
    const bad = this.lines().filter((l) => !OWN_LINE.test(l));
    if (bad.length) problems.push(`unexpected lines on the target's stdout: ${JSON.stringify(bad.slice(0, 5))}`);
    let err = this.err;
    if (allowErr) err = err.split('\n').filter((l) => !allowErr.test(l)).join('\n');
    if (err.trim() !== '') problems.push(`unexpected stderr from the target: ${JSON.stringify(err.slice(-2000))}`);
    return problems;
  }

  probeLog() {
    try { return fs.readFileSync(this.logPath, 'utf8'); } catch { return '(no probe log)'; }
  }

  async kill() {
    if (!this.exited) {
      for (const sig of ['SIGCONT', 'SIGKILL']) {
        try { process.kill(-this.pid, sig); } catch { /* gone */ }
      }
      let timer;
      await Promise.race([this.exitPromise,
        new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`target ${this.pid} did not die`)), 10000); })])
        .finally(() => clearTimeout(timer));
    }
    this._stopPolling();
    // Our target's socket file outlives a SIGKILL: remove it (nothing else serves this pid now).
    try { fs.unlinkSync(this.socketPath); } catch { /* not there */ }
  }

  _stopPolling() {
    clearInterval(this.poller);
    if (this.rOut !== null) {
      this._poll();
      fs.closeSync(this.rOut);
      fs.closeSync(this.rErr);
      this.rOut = this.rErr = null;
    }
  }

  cleanup() {
    this._stopPolling();
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

module.exports = { Target, pythons, bp, lineMatching, blankAfter, SAMPLE, CLI, ROOT };
