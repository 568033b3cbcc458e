// SPDX-License-Identifier: MIT
// One test = one real target: spawn the sample, wait for its ready line, inject the probe, run
// the body with a factory for clients, then tear down: close clients, kill the target's process
// group, and fail the test on any schema violation (either direction) or anything on the
// target's stdout/stderr that the target did not print itself.
'use strict';

const assert = require('node:assert/strict');
const { Target, SAMPLE, bp } = require('./target');
const { ProbeClient } = require('./client');

async function withTarget(python, body, { allowErr, sample } = {}) {
  const target = new Target(python, { sample });
  const clients = [];
  const ctx = {
    target,
    python,
    // A connected client (not yet initialized).
    async connect(label = `client${clients.length + 1}`) {
      const c = new ProbeClient(label);
      clients.push(c);
      await c.openUnix(target.socketPath);
      return c;
    },
    // A connected, initialized, attached and configured debugging client.
    async debugger(label = 'debugger') {
      const c = await ctx.connect(label);
      await c.handshake();
      return c;
    },
    // A CLI-style client (probingClient: "cli"): attached, not the debugger.
    async cli(label = 'cli') {
      const c = await ctx.connect(label);
      await c.handshake({ attachArgs: { probingClient: 'cli' }, configure: false });
      return c;
    },
    track(c) { clients.push(c); return c; },
  };
  let failure = null;
  try {
    await target.ready();
    await target.inject();
    await body(ctx);
  } catch (e) {
    failure = e;
  }
  for (const c of clients) c.close();
  let killError = null;
  try { await target.kill(); } catch (e) { killError = e; }
  const problems = [];
  for (const c of clients) problems.push(...c.violations);
  problems.push(...target.outputProblems({ allowErr }));
  if (killError) problems.push(killError.message);
  if (failure || problems.length) {
    const parts = [];
    if (problems.length) parts.push(`${problems.length} problem(s) at teardown:\n  ${problems.join('\n  ')}`);
    parts.push(`---- probe log of ${target.pid} (tail) ----\n${target.probeLog().slice(-2500)}`);
    parts.push(`---- target stderr (tail) ----\n${target.err.slice(-1500)}`);
    target.cleanup();
    const head = failure ? (failure.message || String(failure)) : 'schema or output problems';
    const err = new Error(`${head}\n${parts.join('\n')}`);
    if (failure && failure.stack) err.stack = `${failure.stack}\n${parts.join('\n')}`;
    throw err;
  }
  target.cleanup();
}

// ---- debugger helpers (all bounded) ----

const source = () => ({ path: SAMPLE, name: 'debuggee.py' });

// setBreakpoints on the sample; `specs` are SourceBreakpoint objects or marker names.
async function setBreakpoints(dc, specs) {
  const breakpoints = specs.map((s) => (typeof s === 'string' ? { line: bp(s) } : s));
  const r = await dc.setBreakpointsRequest({ source: source(), breakpoints });
  assert.ok(r.body && Array.isArray(r.body.breakpoints), 'setBreakpoints: body.breakpoints');
  assert.equal(r.body.breakpoints.length, breakpoints.length,
               'setBreakpoints: one answer per requested breakpoint, in order');
  return r.body.breakpoints;
}

// The next `stopped` event after position `since`, with the given reason.
async function stopped(dc, since, reason, timeout = 5000) {
  const e = await dc.waitEvent('stopped', { since, timeout });
  if (reason !== undefined) {
    const ok = Array.isArray(reason) ? reason.includes(e.body.reason) : e.body.reason === reason;
    assert.ok(ok, `stopped reason: expected ${JSON.stringify(reason)}, got ${JSON.stringify(e.body)}`);
  }
  return e;
}

async function stack(dc, threadId, args = {}) {
  const r = await dc.stackTraceRequest({ threadId, ...args });
  return r.body;
}

async function topFrame(dc, threadId) {
  const b = await stack(dc, threadId, { startFrame: 0, levels: 1 });
  assert.ok(b.stackFrames.length >= 1, `thread ${threadId} has no frames`);
  return b.stackFrames[0];
}

function assertAt(frame, name, line, what = 'frame') {
  assert.equal(frame.name, name, `${what}: function (at ${frame.name}:${frame.line})`);
  assert.equal(frame.line, line, `${what}: line of ${name}`);
  assert.ok(frame.source && frame.source.path === SAMPLE,
            `${what}: source.path ${JSON.stringify(frame.source)} should be ${SAMPLE}`);
}

// Evaluate in a frame (watch context), returns the result string.
async function evalIn(dc, frameId, expression, context = 'watch') {
  const r = await dc.evaluateRequest({ expression, frameId, context });
  return r.body.result;
}

// Scopes of a frame by name.
async function scopes(dc, frameId) {
  const r = await dc.scopesRequest({ frameId });
  const byName = {};
  for (const s of r.body.scopes) byName[s.name] = s;
  return byName;
}

async function variables(dc, variablesReference, extra = {}) {
  const r = await dc.variablesRequest({ variablesReference, ...extra });
  return r.body.variables;
}

const byName = (vars) => Object.fromEntries(vars.map((v) => [v.name, v]));

// Continue and check the DAP answer.
async function cont(dc, threadId) {
  const r = await dc.continueRequest({ threadId });
  assert.equal(r.body && r.body.allThreadsContinued, true, `continue: allThreadsContinued (body ${JSON.stringify(r.body)})`);
}

// Asserts that no new tick shows up for `ms` (the target is stopped). This is an observation
// window for an absence, not a synchronisation: the sample ticks every ~20 ms when running.
async function assertNoTicks(target, ms = 400) {
  const before = target.mark();
  await new Promise((r) => setTimeout(r, ms));
  const after = target.lines().slice(before).filter((l) => l.startsWith('tick '));
  assert.deepEqual(after, [], `target kept ticking while stopped`);
}

module.exports = {
  withTarget, setBreakpoints, stopped, stack, topFrame, assertAt, evalIn, scopes, variables,
  byName, cont, assertNoTicks, source,
};
