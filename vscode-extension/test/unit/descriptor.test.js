// SPDX-License-Identifier: MIT
// The debug adapter descriptor factory against a fake CLI (test/lib/fake-cli.sh as
// probing.path): the inject run, the socket reached through /proc/PID/root, TCP, and errors
// reaching the user as the CLI's one line.
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { vscode, fake, ext } = require('../lib/hook');

const { ProbingAdapterFactory } = ext('descriptor.js');
const FAKE_CLI = path.join(__dirname, '..', 'lib', 'fake-cli.sh');
let logFile;

test.beforeEach(() => {
  fake.reset();
  fake.state.settings['probing.path'] = FAKE_CLI;
  logFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'probing-ext-')), 'cli.log');
  process.env.FAKE_CLI_LOG = logFile;
  process.env.FAKE_CLI_MODE = 'ok';
});
// Each test's log directory goes with it: nothing left in the machine's /tmp.
test.afterEach(() => fs.rmSync(path.dirname(logFile), { recursive: true, force: true }));
const runs = () => (fs.existsSync(logFile) ? fs.readFileSync(logFile, 'utf8').trim().split('\n') : []);
const session = (configuration) => ({ type: 'probing', name: configuration.name, configuration });

test('processId: inject through the CLI, then the probe\'s socket through /proc/PID/root', async () => {
  const lines = [];
  const f = new ProbingAdapterFactory((l) => lines.push(l));
  const d = await f.createDebugAdapterDescriptor(session({ type: 'probing', request: 'attach', name: 'x', processId: 4242 }));
  assert.ok(d instanceof vscode.DebugAdapterNamedPipeServer);
  assert.equal(d.path, '/proc/4242/root/tmp/probing-1000/4242.sock');
  assert.deepEqual(runs(), ['-p 4242 inject|token=']);
  assert.match(lines.join('\n'), /probe loaded in 4242 \(CPython 3\.12\.4\)/);
});

test('processId as the picker gives it (a string), probe already loaded', async () => {
  process.env.FAKE_CLI_MODE = 'already';
  const d = await new ProbingAdapterFactory().createDebugAdapterDescriptor(
    session({ type: 'probing', request: 'attach', name: 'x', processId: '7' }));
  // the socket the probe reports (its namespace pid may differ), reached through the pid's root
  assert.equal(d.path, '/proc/7/root/tmp/probing-0/7.sock');
});

test('connect: a DebugAdapterServer, no CLI run (the token goes in attach)', async () => {
  const d = await new ProbingAdapterFactory().createDebugAdapterDescriptor(
    session({ type: 'probing', request: 'attach', name: 'x', connect: { host: 'box', port: 9922 }, token: 'tok12345' }));
  assert.ok(d instanceof vscode.DebugAdapterServer);
  assert.equal(d.port, 9922);
  assert.equal(d.host, 'box');
  assert.deepEqual(runs(), []);
});

test('errors reach the user as one line', async () => {
  const f = new ProbingAdapterFactory();
  const cfg = { type: 'probing', request: 'attach', name: 'x', processId: 31 };
  process.env.FAKE_CLI_MODE = 'notpython';
  await assert.rejects(f.createDebugAdapterDescriptor(session(cfg)),
    { message: 'probing: error: process 31 (sleep) is not a Python process: give the pid of a python program' });
  process.env.FAKE_CLI_MODE = 'garbage';
  await assert.rejects(f.createDebugAdapterDescriptor(session(cfg)),
    (e) => /^probing: error: unexpected answer from 'probing -p 31 inject': "hello": is probing.path a probing CLI\?$/.test(e.message));
  process.env.FAKE_CLI_MODE = 'silent';
  await assert.rejects(f.createDebugAdapterDescriptor(session(cfg)),
    (e) => /^probing: error: '.*fake-cli\.sh -p 31 inject' failed with exit status 3$/.test(e.message));
  fake.state.settings['probing.path'] = '/nonexistent/probing';
  await assert.rejects(f.createDebugAdapterDescriptor(session(cfg)),
    { message: 'probing: error: the probing CLI was not found (\'/nonexistent/probing\'): install probing or set "probing.path" to the probing binary' });
  fake.state.settings['probing.path'] = __filename; // not executable
  await assert.rejects(f.createDebugAdapterDescriptor(session(cfg)), (e) => /permission denied.*probing\.path/.test(e.message));
});

test('probing.path unset: "probing" from PATH', async () => {
  delete fake.state.settings['probing.path'];
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'probing-path-'));
  fs.symlinkSync(FAKE_CLI, path.join(dir, 'probing'));
  const saved = process.env.PATH;
  process.env.PATH = `${dir}:${saved}`;
  try {
    const d = await new ProbingAdapterFactory().createDebugAdapterDescriptor(
      session({ type: 'probing', request: 'attach', name: 'x', processId: 5 }));
    assert.equal(d.path, '/proc/5/root/tmp/probing-1000/5.sock');
  } finally {
    process.env.PATH = saved;
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

// VS Code's extension host may run with a login shell's PATH that lacks the install directory:
// the usual install places are looked in after PATH, and the error says where.
test('probing.path unset, not in PATH: found in ~/.local/bin (and the other install places)', async () => {
  const cli = ext('cli.js');
  assert.deepEqual(cli.cliSearchDirs({ PATH: '/a:/b::/usr/bin' }, '/home/u', '/opt/p'),
                   ['/a', '/b', '/usr/bin', '/usr/local/bin', '/home/u/.local/bin', '/opt/p/bin']);
  assert.deepEqual(cli.cliSearchDirs({}, '/home/u', null), ['/usr/local/bin', '/home/u/.local/bin', '/usr/bin']);

  delete fake.state.settings['probing.path'];
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'probing-home-'));
  fs.mkdirSync(path.join(home, '.local', 'bin'), { recursive: true });
  fs.symlinkSync(FAKE_CLI, path.join(home, '.local', 'bin', 'probing'));
  const saved = { PATH: process.env.PATH, HOME: process.env.HOME };
  process.env.PATH = '/nonexistent-bin';
  process.env.HOME = home;
  try {
    // what is looked in, in order; the first executable 'probing' there is run
    const dirs = cli.cliSearchDirs();
    assert.deepEqual(dirs.slice(0, 3), ['/nonexistent-bin', '/usr/local/bin', path.join(home, '.local', 'bin')]);
    const first = dirs.map((d) => path.join(d, 'probing')).find((p) => fs.existsSync(p));
    assert.equal(cli.findCli('probing'), first);
    if (first === path.join(home, '.local', 'bin', 'probing')) { // no /usr/local/bin/probing here
      const d = await new ProbingAdapterFactory().createDebugAdapterDescriptor(
        session({ type: 'probing', request: 'attach', name: 'x', processId: 6 }));
      assert.equal(d.path, '/proc/6/root/tmp/probing-1000/6.sock');
      assert.deepEqual(runs(), ['-p 6 inject|token=']);
    }
  } finally {
    Object.assign(process.env, saved);
    fs.rmSync(home, { recursive: true, force: true });
  }
});

test('findCli: the first executable file in the dirs; not found names every place looked in', () => {
  const cli = ext('cli.js');
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'probing-find-'));
  const [a, b, c] = ['a', 'b', 'c'].map((n) => path.join(root, n));
  for (const d of [a, b, c]) fs.mkdirSync(d);
  fs.writeFileSync(path.join(a, 'probing'), '#!/bin/sh\n', { mode: 0o644 }); // not executable
  fs.mkdirSync(path.join(b, 'probing'));                                      // a directory
  fs.writeFileSync(path.join(c, 'probing'), '#!/bin/sh\n', { mode: 0o755 });
  try {
    assert.equal(cli.findCli('probing', [a, b, c]), path.join(c, 'probing'));
    assert.equal(cli.findCli('/x/y/probing', [a]), '/x/y/probing', 'a path is taken as given');
    assert.throws(() => cli.findCli('probing', [a, b]), {
      name: 'CliError',
      message: `probing: error: the probing CLI was not found ('probing'; looked in ${a}, ${b}): ` +
               'install probing (make install) or set "probing.path" to the probing binary',
    });
    // the prefix `make vsix PREFIX=...` wrote
    const pj = path.join(root, 'prefix.json');
    fs.writeFileSync(pj, '{"prefix": "/opt/probing"}');
    assert.equal(cli.builtPrefix(pj), '/opt/probing');
    assert.equal(cli.builtPrefix(path.join(root, 'none.json')), null);
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
});

// The platform-specific .vsix (make vsix-linux-x64) carries the release under bundled/: its CLI
// is looked in after every install place (one on PATH or installed wins), and a mode lost in the
// unpacking is given back.
test('the platform .vsix: its bundled CLI is looked in last and made executable again', () => {
  const cli = ext('cli.js');
  assert.deepEqual(cli.cliSearchDirs({ PATH: '/a' }, '/home/u', null, '/ext/bundled/bin'),
                   ['/a', '/usr/local/bin', '/home/u/.local/bin', '/usr/bin', '/ext/bundled/bin']);
  assert.deepEqual(cli.cliSearchDirs({ PATH: '/a' }, '/home/u', '/opt/p', null),
                   ['/a', '/usr/local/bin', '/home/u/.local/bin', '/usr/bin', '/opt/p/bin']);
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'probing-bundled-'));
  try {
    assert.equal(cli.bundledBin(root), null, 'the plain .vsix has no bundled/');
    fs.mkdirSync(path.join(root, 'bin'));
    fs.mkdirSync(path.join(root, 'lib', 'probing'), { recursive: true });
    fs.writeFileSync(path.join(root, 'bin', 'probing'), '#!/bin/sh\n', { mode: 0o644 });
    fs.writeFileSync(path.join(root, 'lib', 'probing', 'probing-serve'), '#!/bin/sh\n', { mode: 0o644 });
    assert.equal(cli.bundledBin(root), path.join(root, 'bin'));
    for (const p of [path.join(root, 'bin', 'probing'), path.join(root, 'lib', 'probing', 'probing-serve')]) {
      assert.equal(fs.statSync(p).mode & 0o111, 0o111, p + ' made executable');
    }
    assert.equal(cli.findCli('probing', ['/nonexistent-bin', path.join(root, 'bin')]),
                 path.join(root, 'bin', 'probing'));
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
});
