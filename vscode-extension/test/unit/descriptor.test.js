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
