// SPDX-License-Identifier: MIT
// The process picker: Python processes from a /proc tree (a fake one built here, and the real
// one with a python child of ours), probe-loaded ones marked and first, other users' left out.
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { fake, ext } = require('../lib/hook');

const procs = ext('processes.js');

// One fake /proc/PID: comm, cmdline (NUL-separated), exe (a symlink), maps, status (Uid line).
function fakeProc(root, pid, { comm, argv, exe, maps = '', uid = 1000 }) {
  const d = path.join(root, String(pid));
  fs.mkdirSync(d, { recursive: true });
  fs.writeFileSync(path.join(d, 'comm'), comm + '\n');
  fs.writeFileSync(path.join(d, 'cmdline'), argv.join('\0') + '\0');
  if (exe) fs.symlinkSync(exe, path.join(d, 'exe'));
  fs.writeFileSync(path.join(d, 'maps'), maps);
  fs.writeFileSync(path.join(d, 'status'), `Name:\t${comm}\nUid:\t${uid}\t${uid}\t${uid}\t${uid}\n`);
}

test('a fake /proc: Python processes found by exe, comm or libpython; probe marked', () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'fake-proc-'));
  try {
    fakeProc(root, 100, { comm: 'python3.11', argv: ['/usr/bin/python3.11', 'app.py', '--port', '8'], exe: '/usr/bin/python3.11' });
    fakeProc(root, 101, { comm: 'gunicorn', argv: ['/venv/bin/python3', '/venv/bin/gunicorn', 'app:wsgi'], exe: '/usr/bin/python3.12',
                          maps: '7f00-7f10 r-xp 0 08:01 5 /home/u/.local/lib/probing/libprobing-3.12.so\n' });
    fakeProc(root, 102, { comm: 'uwsgi', argv: ['uwsgi', '--ini', 'x'], exe: '/usr/bin/uwsgi',
                          maps: '7f00-7f10 r-xp 0 08:01 5 /usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0\n' });
    fakeProc(root, 103, { comm: 'sleep', argv: ['sleep', '100'], exe: '/usr/bin/sleep' });
    fakeProc(root, 104, { comm: 'python3', argv: ['python3', 'other.py'], exe: '/usr/bin/python3.10', uid: 0 });
    fakeProc(root, 105, { comm: 'bash', argv: ['bash', '-c', 'python3 x.py'], exe: '/usr/bin/bash' });
    fakeProc(root, 106, { comm: 'python', argv: ['python', '-m', 'http.server'], exe: '/opt/py/bin/python' });
    fs.mkdirSync(path.join(root, 'self'));
    const list = procs.listPythonProcesses({ procRoot: root, uid: 1000, exclude: [] });
    assert.deepEqual(list.map((p) => p.pid), [101, 106, 102, 100], 'probe first, then newest first');
    const byPid = Object.fromEntries(list.map((p) => [p.pid, p]));
    assert.equal(byPid[101].probe, true);
    assert.equal(byPid[101].python, '3.12');
    assert.equal(byPid[100].probe, false);
    assert.equal(byPid[100].python, '3.11');
    assert.equal(byPid[102].python, '3.11');
    assert.equal(byPid[106].python, null);
    assert.equal(byPid[100].command, '/usr/bin/python3.11 app.py --port 8');
    // root sees every user's
    assert.deepEqual(procs.listPythonProcesses({ procRoot: root, uid: 0, exclude: [101] }).map((p) => p.pid), [106, 104, 102, 100]);
    // the quick pick items
    const item = procs.pickItem(byPid[101]);
    assert.deepEqual(item, { label: 'gunicorn gunicorn', description: 'pid 101 · CPython 3.12 · probe loaded',
                             detail: '/venv/bin/python3 /venv/bin/gunicorn app:wsgi', pid: 101 });
    assert.equal(procs.pickItem(byPid[100]).label, 'python3.11 app.py');
    assert.equal(procs.pickItem(byPid[100]).description, 'pid 100 · CPython 3.11');
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
});

test('the real /proc: a python child of ours is listed, we are not', async () => {
  const child = spawn('/usr/bin/python3', ['-c', 'import sys, time; print("up", flush=True); time.sleep(60)'],
                      { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    await new Promise((resolve, reject) => {
      child.stdout.once('data', resolve);
      child.once('exit', () => reject(new Error('python exited')));
    });
    const list = procs.listPythonProcesses();
    const me = list.find((p) => p.pid === child.pid);
    assert.ok(me, `pid ${child.pid} not in ${JSON.stringify(list.map((p) => p.pid))}`);
    assert.match(me.command, /^\/usr\/bin\/python3 -c import sys/);
    assert.equal(me.probe, false);
    assert.ok(!list.some((p) => p.pid === process.pid));
  } finally {
    child.kill('SIGKILL');
  }
});

test('the picker command: items shown, the chosen pid returned as a string; none, dismissed', async () => {
  fake.reset();
  const commands = ext('commands.js');
  const child = spawn('/usr/bin/python3', ['-c', 'import time; print("up", flush=True); time.sleep(60)'],
                      { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    await new Promise((resolve) => child.stdout.once('data', resolve));
    fake.answers.quickPick = (items) => items.find((i) => i.pid === child.pid);
    assert.equal(await commands.pickProcess(), String(child.pid));
    assert.equal(fake.state.quickPicks.length, 1);
    assert.match(fake.state.quickPicks[0].options.title, /Attach to a Python process/);
    fake.answers.quickPick = () => undefined;
    assert.equal(await commands.pickProcess(), undefined);
    assert.deepEqual(fake.state.messages, []);
  } finally {
    child.kill('SIGKILL');
  }
});
