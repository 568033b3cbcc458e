// SPDX-License-Identifier: MIT
// package.json against the code: every contributed command is registered by activate() and
// has an activation event; the debug type, its picker variable and configurations are
// consistent; activation only on our commands or debug type; settings documented in README.
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { fake, ext } = require('../lib/hook');

const ROOT = path.join(__dirname, '..', '..');
const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));

test('activate registers every contributed command, the provider, the factory, the documents', () => {
  fake.reset();
  const subs = [];
  ext('extension.js').activate({ subscriptions: subs });
  const contributed = pkg.contributes.commands.map((c) => c.command).sort();
  assert.deepEqual([...fake.state.commands.keys()].sort(), contributed);
  assert.ok(fake.state.configProviders.has('probing'));
  assert.ok(fake.state.factories.has('probing'));
  assert.ok(fake.state.contentProviders.has('probing-dump'));
  assert.ok(subs.length >= contributed.length + 3);
});

test('a probing/refused event of a probing session: its reason and the fix in an error', () => {
  fake.reset();
  ext('extension.js').activate({ subscriptions: [] });
  assert.equal(fake.state.customEventListeners.length, 1);
  const fire = (type, event, body) => fake.state.customEventListeners[0]({ session: { type }, event, body });
  fire('python', 'probing/refused', { reason: 'x' });        // another debugger's session
  fire('probing', 'probing/somethingElse', { reason: 'x' }); // another event
  assert.deepEqual(fake.state.messages, []);
  fire('probing', 'probing/refused',
       { reason: '15 of 48 descriptors open, 64 kept for the target (net.fd_reserve)',
         fix: "raise the target's open-file limit (prlimit --pid PID --nofile=N) and retry" });
  fire('probing', 'probing/refused', { reason: '64 connections open (net.max_connections)',
                                       fix: 'retry once other clients of the probe have disconnected' });
  fire('probing', 'probing/refused', { reason: 'a limit' }); // a probe that gives no fix
  assert.deepEqual(fake.state.messages, [
    { level: 'error', text: "Probing: the probe refused the connection: 15 of 48 descriptors open, 64 kept for "
      + "the target (net.fd_reserve): raise the target's open-file limit (prlimit --pid PID --nofile=N) and retry" },
    { level: 'error', text: 'Probing: the probe refused the connection: 64 connections open (net.max_connections): '
      + 'retry once other clients of the probe have disconnected' },
    { level: 'error', text: 'Probing: the probe refused the connection: a limit' },
  ]);
});

test('activation events: only our commands and debug type', () => {
  for (const e of pkg.activationEvents) {
    assert.match(e, /^(onCommand:probing\.[a-zA-Z]+|onDebugResolve:probing)$/, e);
  }
  for (const c of pkg.contributes.commands) assert.ok(pkg.activationEvents.includes(`onCommand:${c.command}`), c.command);
  assert.ok(!pkg.activationEvents.includes('*'));
  assert.ok(!pkg.activationEvents.includes('onStartupFinished'));
});

test('the debugger contribution', () => {
  const [d] = pkg.contributes.debuggers;
  assert.equal(d.type, 'probing');
  assert.equal(d.variables.pickProcess, 'probing.pickProcess');
  const attrs = d.configurationAttributes.attach.properties;
  assert.deepEqual(Object.keys(attrs).sort(), ['connect', 'nativeFrames', 'processId', 'token']);
  const config = ext('config.js');
  assert.deepEqual(attrs.nativeFrames.enum, [...config.NATIVE_FRAMES]);
  assert.equal(attrs.nativeFrames.default, 'off');
  assert.equal(attrs.nativeFrames.enumDescriptions.length, attrs.nativeFrames.enum.length);
  assert.deepEqual(d.initialConfigurations, [config.PICK_CONFIGURATION]);
  assert.equal(d.configurationSnippets.length, 2);
  for (const s of d.configurationSnippets) assert.equal(s.body.type, 'probing');
  const titles = Object.fromEntries(pkg.contributes.commands.map((c) => [c.command, `${c.category}: ${c.title}`]));
  assert.equal(titles['probing.attach'], 'Probing: Attach to Process');
  assert.equal(titles['probing.dumpStacks'], 'Probing: Dump Stacks');
  assert.equal(titles['probing.runSql'], 'Probing: Run SQL Query');
  assert.equal(titles['probing.flameGraph'], 'Probing: Flame Graph');
});

test('every setting is documented in README.md, and @types/vscode fits engines.vscode', () => {
  const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  for (const key of Object.keys(pkg.contributes.configuration.properties)) {
    assert.ok(readme.includes('`' + key + '`'), `README.md does not document ${key}`);
  }
  const engine = pkg.engines.vscode.replace(/^\^/, '');
  assert.equal(pkg.devDependencies['@types/vscode'], engine);
});

// Without it VS Code refuses breakpoints in .py files (gutter clicks and F9 do nothing) unless
// another extension contributes them; tests/vscode/ checks it in a real VS Code.
test('breakpoints can be set in Python files', () => {
  assert.ok((pkg.contributes.breakpoints || []).some((b) => b.language === 'python'),
            'contributes.breakpoints has no {"language": "python"}');
  assert.deepEqual(pkg.contributes.debuggers[0].languages, ['python']);
});
