// SPDX-License-Identifier: MIT
// Configuration resolution: defaults, the checks after variable substitution, and what the
// provider does with a bad configuration (one error message, the launch abandoned).
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { fake, ext } = require('../lib/hook');

const config = ext('config.js');

test.beforeEach(() => fake.reset());

test('F5 without launch.json: attach with the process picker', () => {
  const p = new config.ProbingConfigurationProvider();
  const c = p.resolveDebugConfiguration(undefined, {});
  assert.deepEqual(c, { type: 'probing', request: 'attach', name: 'Attach to Python process (probing)',
                        processId: '${command:pickProcess}' });
  // a configuration given is left alone until variables are substituted
  const given = { type: 'probing', request: 'attach', name: 'x', processId: 12 };
  assert.equal(p.resolveDebugConfiguration(undefined, given), given);
  assert.deepEqual(p.provideDebugConfigurations(), [config.PICK_CONFIGURATION]);
});

test('processId: a number or the picked pid as a string becomes a number', () => {
  const base = { type: 'probing', request: 'attach', name: 'n' };
  assert.equal(config.normalize({ ...base, processId: 4242 }).processId, 4242);
  assert.equal(config.normalize({ ...base, processId: '4242' }).processId, 4242);
  assert.equal(config.normalize({ ...base, processId: ' 17 ' }).processId, 17);
  // the picker dismissed: nothing to do, no error
  assert.equal(config.normalize({ ...base, processId: '' }), null);
});

test('nativeFrames: passed through to attach as it is; anything else refused', () => {
  const base = { type: 'probing', request: 'attach', name: 'n', processId: 7 };
  for (const v of ['off', 'merged', 'all']) assert.equal(config.normalize({ ...base, nativeFrames: v }).nativeFrames, v);
  assert.equal('nativeFrames' in config.normalize(base), false);
  assert.throws(() => config.normalize({ ...base, nativeFrames: 'on' }),
                /"nativeFrames": "on" is not one of "off", "merged", "all"/);
  assert.throws(() => config.normalize({ ...base, nativeFrames: true }), config.ConfigError);
});

test('connect: host defaults to loopback, port checked, token required', () => {
  const base = { type: 'probing', request: 'attach', name: 'n', token: 'secret-token' };
  assert.deepEqual(config.normalize({ ...base, connect: { port: 9922 } }).connect, { host: '127.0.0.1', port: 9922 });
  assert.deepEqual(config.normalize({ ...base, connect: { host: '[::1]', port: '9000' } }).connect, { host: '::1', port: 9000 });
  assert.equal(config.normalize({ ...base, connect: { host: 'h', port: 1 } }).token, 'secret-token');
});

test('bad configurations: each refused with a message naming the field', () => {
  const base = { type: 'probing', request: 'attach', name: 'n' };
  const cases = [
    [{ ...base, request: 'launch', processId: 1 }, /"request": "attach" \(got "launch"\)/],
    [{ ...base }, /"processId".*or "connect"/],
    [{ ...base, processId: 1, connect: { port: 1 }, token: 'x' }, /not both/],
    [{ ...base, processId: 'abc' }, /"processId": "abc" is not a process id/],
    [{ ...base, processId: -3 }, /"processId": -3 is not a process id/],
    [{ ...base, processId: 1.5 }, /"processId": 1.5/],
    [{ ...base, processId: 2 ** 31 }, /is not a process id/],
    [{ ...base, connect: 'localhost:9922', token: 't' }, /"connect": expected \{"host"/],
    [{ ...base, connect: { host: 'h' }, token: 't' }, /"connect.port": expected a port number \(1 to 65535\), got missing/],
    [{ ...base, connect: { port: 70000 }, token: 't' }, /"connect.port".*70000/],
    [{ ...base, connect: { host: '', port: 1 }, token: 't' }, /"connect.host"/],
    [{ ...base, connect: { port: 9922 } }, /"token" is missing/],
    [{ ...base, connect: { port: 9922 }, token: '' }, /"token" is missing/],
  ];
  for (const [c, rx] of cases) {
    assert.throws(() => config.normalize(c), (e) => e instanceof config.ConfigError && rx.test(e.message),
                  `expected ${rx} for ${JSON.stringify(c)}`);
  }
});

test('the provider shows one error and abandons the launch', () => {
  const p = new config.ProbingConfigurationProvider();
  const r = p.resolveDebugConfigurationWithSubstitutedVariables(undefined,
    { type: 'probing', request: 'attach', name: 'mine', connect: { port: 9922 } });
  assert.equal(r, undefined);
  assert.equal(fake.state.messages.length, 1);
  assert.equal(fake.state.messages[0].level, 'error');
  assert.match(fake.state.messages[0].text, /^probing: launch configuration "mine": "token" is missing/);
  // a good one passes through normalized, with no message
  const ok = p.resolveDebugConfigurationWithSubstitutedVariables(undefined,
    { type: 'probing', request: 'attach', name: 'mine', processId: '99', extra: 1 });
  assert.deepEqual(ok, { type: 'probing', request: 'attach', name: 'mine', processId: 99, extra: 1 });
  // a dismissed picker: no message either
  assert.equal(p.resolveDebugConfigurationWithSubstitutedVariables(undefined,
    { type: 'probing', request: 'attach', name: 'mine', processId: '' }), undefined);
  assert.equal(fake.state.messages.length, 1);
});
