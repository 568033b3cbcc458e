// SPDX-License-Identifier: MIT
// The validator and the client's hooks can fail: bad messages in either direction are caught.
// (No target needed.)
'use strict';

const assert = require('node:assert/strict');
const { test } = require('node:test');
const { PassThrough } = require('node:stream');
const schema = require('../lib/schema');
const { ProbeClient } = require('../lib/client');

test('definitions are picked by command/event, with base fallbacks', () => {
  assert.equal(schema.definitionFor({ type: 'request', command: 'stackTrace' }), 'StackTraceRequest');
  assert.equal(schema.definitionFor({ type: 'response', command: 'stackTrace', success: true }), 'StackTraceResponse');
  assert.equal(schema.definitionFor({ type: 'response', command: 'stackTrace', success: false }), 'ErrorResponse');
  assert.equal(schema.definitionFor({ type: 'event', event: 'stopped' }), 'StoppedEvent');
  assert.equal(schema.definitionFor({ type: 'request', command: 'probing/dump' }), 'Request');
  assert.equal(schema.definitionFor({ type: 'response', command: 'probing/dump', success: true }), 'Response');
  assert.equal(schema.definitionFor({ type: 'event', event: 'probing/x' }), 'Event');
});

test('good messages pass, bad ones are named', () => {
  const ok = [
    { seq: 1, type: 'request', command: 'initialize', arguments: { adapterID: 'probing' } },
    { seq: 2, type: 'response', request_seq: 1, command: 'threads', success: true, body: { threads: [{ id: 7, name: 'a' }] } },
    { seq: 3, type: 'response', request_seq: 1, command: 'threads', success: false, message: 'no', body: { error: { id: 1, format: 'no' } } },
    { seq: 4, type: 'event', event: 'stopped', body: { reason: 'pause', threadId: 7, allThreadsStopped: true } },
    { seq: 5, type: 'request', command: 'probing/info' },
    { seq: 6, type: 'response', request_seq: 5, command: 'probing/info', success: true, body: { pid: 1 } },
  ];
  for (const m of ok) assert.equal(schema.check(m), null, JSON.stringify(m));
  const bad = [
    [{ seq: 1, type: 'request', command: 'initialize' }, /InitializeRequest.*arguments/],
    [{ seq: 2, type: 'response', request_seq: 1, command: 'threads', success: true, body: {} }, /ThreadsResponse.*threads/],
    [{ seq: 2, type: 'response', request_seq: 1, command: 'threads', success: false, message: 'x' }, /ErrorResponse.*body/],
    [{ seq: 3, type: 'event', event: 'stopped', body: { threadId: 1 } }, /StoppedEvent.*reason/],
    [{ seq: 4, type: 'response', request_seq: 1, command: 'stackTrace', success: true,
       body: { stackFrames: [{ id: 2 ** 33, name: 'f', line: 1, column: 1 }] } }, /int32/],
    [{ seq: 0, type: 'event', event: 'output', body: { output: 'x' } }, /OutputEvent|seq/],
    [{ seq: 5, type: 'response', request_seq: 1, command: 'probing/info', success: 'yes' }, /Response.*boolean/],
    [{ seq: 6, type: 'reply' }, /ProtocolMessage/],
  ];
  for (const [m, rx] of bad) {
    const err = schema.check(m);
    assert.ok(err, `should be invalid: ${JSON.stringify(m)}`);
    assert.match(err, rx);
  }
});

test('the client checks what it sends and what it receives', async () => {
  const c = new ProbeClient('selftest');
  const sent = [];
  c.connect(new PassThrough(), { write: (d) => { sent.push(d); c._checkOutgoing(d); return true; } });
  c.doSend('initialize', undefined, () => {});   // no arguments: InitializeRequest needs them
  assert.equal(sent.length, 1);
  assert.equal(c.violations.length, 1);
  assert.match(c.violations[0], /sent InitializeRequest/);
  c.doSend('threads', undefined, () => {});
  assert.equal(c.violations.length, 1, 'a valid request adds nothing');
  // Incoming, through the library's dispatch path.
  c.dispatch(JSON.stringify({ seq: 1, type: 'response', request_seq: 2, command: 'threads', success: true, body: { threads: [{ id: 1 }] } }));
  assert.match(c.violations.at(-1), /received ThreadsResponse/);
  c.dispatch(JSON.stringify({ seq: 2, type: 'response', request_seq: 1, command: 'threads', success: true, body: { threads: [] } }));
  assert.match(c.violations.at(-1), /response command 'threads' for request 'initialize'/);
  c.dispatch(JSON.stringify({ seq: 3, type: 'event', event: 'stopped', body: {} }));
  assert.match(c.violations.at(-1), /received StoppedEvent/);
  assert.equal(c.events.length, 1, 'the event is logged');
  const n = c.violations.length;
  c.dispatch(JSON.stringify({ seq: 4, type: 'event', event: 'output', body: { output: 'x\n', category: 'stdout' } }));
  assert.equal(c.violations.length, n, 'a valid event adds nothing');
});
