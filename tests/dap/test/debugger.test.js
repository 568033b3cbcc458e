// SPDX-License-Identifier: MIT
// The debugger: pause/continue (all-stop), the stopped main thread's stack, scopes and variables,
// breakpoints (plain, conditional, hit counts, logpoints, function), stepping, setVariable,
// evaluate in a frame, source, exception breakpoints, and disconnect while stopped.
// Lines come from the sample's "# BP: name" markers.
'use strict';

const assert = require('node:assert/strict');
const { suite } = require('../lib/suite');
const { bp, lineMatching, blankAfter, SAMPLE } = require('../lib/target');
const {
  setBreakpoints, stopped, stack, topFrame, assertAt, evalIn, scopes, variables, byName, cont,
  assertNoTicks,
} = require('../lib/harness');

// Stops the main thread at a breakpoint on `marker` (then clears it); returns {event, frame}.
async function breakAt(dc, target, marker) {
  const since = dc.mark();
  const [b] = await setBreakpoints(dc, [marker]);
  assert.equal(b.verified, true, `breakpoint at ${marker}: ${JSON.stringify(b)}`);
  const event = await stopped(dc, since, 'breakpoint');
  assert.equal(event.body.threadId, target.info.main, `stopped thread (event ${JSON.stringify(event.body)})`);
  await setBreakpoints(dc, []);
  const frame = await topFrame(dc, target.info.main);
  return { event, frame, bp: b };
}

// Resumes and checks the target runs again.
async function resume(dc, target) {
  const since = target.mark();
  await cont(dc, target.info.main);
  await target.ticks(2, { since });
}

// What threading.excepthook prints for the worker's uncaught exception.
const WORKER_TRACEBACK = /^(Exception in thread worker:|Traceback \(most recent call last\):|  File .*|    .*|RuntimeError: uncaught in worker)$/;

// With the "uncaught" filter: no stop for the main thread's caught ValueErrors, then a stop on the
// worker's RuntimeError (made to happen through evaluate), described by exceptionInfo.
async function stopOnWorkerCrash(dc, target) {
  const since = dc.mark();
  await dc.setExceptionBreakpointsRequest({ filters: ['uncaught'] });
  await target.ticks(3);
  assert.deepEqual(dc.eventsSince(since, 'stopped'), [], 'caught exceptions do not stop');
  await dc.evaluateRequest({ expression: 'crash_next = True', context: 'repl' });
  const e = await stopped(dc, since, 'exception');
  assert.equal(e.body.threadId, target.info.worker);
  const f = await topFrame(dc, target.info.worker);
  assertAt(f, 'explode', bp('raise_uncaught'), 'where the exception was raised');
  const info = (await dc.exceptionInfoRequest({ threadId: target.info.worker })).body;
  assert.match(info.exceptionId, /RuntimeError/);
  assert.equal(info.breakMode, 'unhandled');
  assert.match(info.description || '', /uncaught in worker/);
  return e;
}

suite('debugger', [
  {
    name: 'pause stops all threads; continue resumes them',
    async body({ debugger: dbg, target }) {
      const dc = await dbg();
      const since = dc.mark();
      await dc.pauseRequest({ threadId: target.info.main });
      const e = await stopped(dc, since, 'pause');
      assert.equal(e.body.allThreadsStopped, true, `allThreadsStopped: ${JSON.stringify(e.body)}`);
      // All-stop: the event may name any Python thread (the one that parked first).
      assert.ok([target.info.main, target.info.worker].includes(e.body.threadId), `stopped threadId ${e.body.threadId}`);
      await assertNoTicks(target);
      // Both threads are listed and have stacks while stopped; library frames are "subtle".
      const threads = (await dc.threadsRequest()).body.threads.map((t) => t.id);
      assert.ok(threads.includes(target.info.main) && threads.includes(target.info.worker));
      const main = await stack(dc, target.info.main);
      assert.equal(main.stackFrames.at(-1).name, '<module>');
      const worker = (await stack(dc, target.info.worker)).stackFrames;
      assert.equal(worker[0].name, 'worker_loop');
      assert.notEqual(worker[0].presentationHint, 'subtle', 'the sample is not library code');
      for (const f of worker.slice(1)) {
        assert.equal(f.presentationHint, 'subtle', `threading frame ${f.name} (${f.source && f.source.path}) is library code`);
      }
      // Only one stopped event for the pause.
      assert.equal(dc.eventsSince(since, 'stopped').length, 1, 'one stopped event');
      await resume(dc, target);
      // Pause again after a continue works the same.
      const again = dc.mark();
      await dc.pauseRequest({ threadId: target.info.main });
      await stopped(dc, again, 'pause');
      await resume(dc, target);
    },
  },
  {
    name: 'stopped in compute: stackTrace, scopes, variables (paging), evaluate in frame, source',
    async body({ debugger: dbg, target }) {
      const dc = await dbg();
      const { frame } = await breakAt(dc, target, 'compute_point');
      assertAt(frame, 'compute', bp('compute_point'), 'top frame');
      const st = await stack(dc, target.info.main);
      assert.deepEqual(st.stackFrames.map((f) => f.name), ['compute', 'main', '<module>']);
      assert.equal(st.totalFrames, 3);
      assertAt(st.stackFrames[1], 'main', bp('main_call'), 'caller');
      for (const f of st.stackFrames) assert.notEqual(f.presentationHint, 'subtle', `${f.name} is user code`);
      const page = await stack(dc, target.info.main, { startFrame: 1, levels: 1 });
      assert.deepEqual(page.stackFrames.map((f) => [f.name, f.id]), [['main', st.stackFrames[1].id]]);
      assert.equal(page.totalFrames, 3);

      const sc = await scopes(dc, frame.id);
      assert.ok(sc.Locals && sc.Locals.variablesReference > 0, `Locals scope: ${JSON.stringify(sc)}`);
      assert.ok(sc.Globals && sc.Globals.variablesReference > 0, `Globals scope: ${JSON.stringify(sc)}`);
      const locals = byName(await variables(dc, sc.Locals.variablesReference));
      assert.deepEqual(Object.keys(locals).sort(), ['mapping', 'n', 's', 'values'], 'locals at compute_point');
      const n = Number(locals.n.value);
      assert.ok(Number.isInteger(n) && n >= 0, `n = ${locals.n.value}`);
      assert.equal(locals.n.type, 'int');
      assert.equal(locals.n.variablesReference, 0, 'an int has no children');
      assert.equal(locals.s.value, String(n + 1));
      assert.equal(locals.values.value, `[${n}, ${2 * n}, ${3 * n}]`);
      assert.equal(locals.values.indexedVariables, 3);
      assert.ok(locals.values.variablesReference > 0);
      const items = await variables(dc, locals.values.variablesReference);
      assert.deepEqual(items.map((v) => v.value), [String(n), String(2 * n), String(3 * n)]);
      assert.ok(locals.mapping.variablesReference > 0);
      const mapping = await variables(dc, locals.mapping.variablesReference);
      const nEntry = mapping.find((v) => /^'?n'?$/.test(v.name));
      assert.ok(nEntry && nEntry.value === String(n), `mapping children: ${JSON.stringify(mapping)}`);

      const globals = byName(await variables(dc, sc.Globals.variablesReference));
      for (const name of ['settings', 'numbers', 'unique', 'pair', 'slotted', 'compute']) {
        assert.ok(globals[name], `global ${name} listed`);
      }
      assert.equal(globals.numbers.indexedVariables, 250);
      const slice = await variables(dc, globals.numbers.variablesReference, { filter: 'indexed', start: 10, count: 5 });
      assert.deepEqual(slice.map((v) => v.value), ['10', '11', '12', '13', '14'], 'numbers[10:15] by paging');
      const tail = await variables(dc, globals.numbers.variablesReference, { filter: 'indexed', start: 248, count: 10 });
      assert.deepEqual(tail.map((v) => v.value), ['248', '249'], 'a page running past the end is cut');
      // namedVariables matches what a 'named' fetch returns; every evaluateName evaluates to the
      // value shown.
      assert.equal(globals.settings.namedVariables, 3);
      const entries = await variables(dc, globals.settings.variablesReference, { filter: 'named' });
      assert.equal(entries.length, 3);
      for (const v of entries) {
        if (v.evaluateName) assert.equal(await evalIn(dc, frame.id, v.evaluateName), v.value, `evaluateName ${v.evaluateName}`);
      }
      assert.equal(globals.pair.indexedVariables, 2);
      assert.deepEqual((await variables(dc, globals.pair.variablesReference)).map((v) => v.value), ['1', "'one'"]);
      const slotted = byName(await variables(dc, globals.slotted.variablesReference));
      assert.equal(slotted.a && slotted.a.value, '1', `slotted: ${JSON.stringify(slotted)}`);
      assert.equal(slotted.b && slotted.b.value, "'two'");

      assert.equal(await evalIn(dc, frame.id, 's + n'), String(2 * n + 1));
      assert.equal(await evalIn(dc, frame.id, 'values[2]', 'hover'), String(3 * n));
      assert.equal(await evalIn(dc, st.stackFrames[1].id, 'n'), String(n), "main's n in main's frame");

      const src = await dc.sourceRequest({ source: frame.source, sourceReference: frame.source.sourceReference || 0 });
      assert.match(src.body.content, /# BP: compute_point/);
      await resume(dc, target);
      // Frame ids of the past stop are stale now.
      const stale = await dc.requestError('scopes', { frameId: frame.id });
      assert.match(stale.message, /\S/);
    },
  },
  {
    name: 'breakpoint at add_body is hit (hitBreakpointIds); a line without code is not verified',
    async body({ debugger: dbg, target }) {
      const dc = await dbg();
      const since = dc.mark();
      const blank = blankAfter(bp('add_return'));
      const [b, nocode] = await setBreakpoints(dc, ['add_body', { line: blank }]);
      assert.equal(b.verified, true, JSON.stringify(b));
      assert.equal(b.line, bp('add_body'));
      assert.ok(Number.isInteger(b.id), 'a breakpoint has an id');
      assert.equal(nocode.verified, false, `line ${blank} has no code: ${JSON.stringify(nocode)}`);
      assert.ok(typeof nocode.message === 'string' && nocode.message.length > 0, 'an unverified breakpoint says why');
      const e = await stopped(dc, since, 'breakpoint');
      assert.equal(e.body.threadId, target.info.main);
      assert.deepEqual(e.body.hitBreakpointIds, [b.id]);
      assert.equal(e.body.allThreadsStopped, true);
      const st = (await stack(dc, target.info.main)).stackFrames;
      assertAt(st[0], 'add', bp('add_body'), 'top frame');
      assertAt(st[1], 'compute', bp('compute_call'), 'caller');
      await setBreakpoints(dc, []);
      await resume(dc, target);
    },
  },
  {
    name: 'conditional breakpoint stops only when the condition holds',
    async body({ debugger: dbg, target }) {
      const dc = await dbg();
      let since = dc.mark();
      const [b] = await setBreakpoints(dc, [{ line: bp('compute_first'), condition: 'n % 3 == 1' }]);
      assert.equal(b.verified, true, JSON.stringify(b));
      await stopped(dc, since, 'breakpoint');
      let f = await topFrame(dc, target.info.main);
      assertAt(f, 'compute', bp('compute_first'));
      const n1 = Number(await evalIn(dc, f.id, 'n'));
      assert.equal(n1 % 3, 1, `stopped with n = ${n1}`);
      since = dc.mark();
      await cont(dc, target.info.main);
      await stopped(dc, since, 'breakpoint');
      f = await topFrame(dc, target.info.main);
      const n2 = Number(await evalIn(dc, f.id, 'n'));
      assert.equal(n2, n1 + 3, 'the next stop is the next n satisfying the condition');
      await setBreakpoints(dc, []);
      await resume(dc, target);
    },
  },
  {
    name: 'hit conditions "3", "%2" and ">=2"',
    async body({ debugger: dbg, target }) {
      const dc = await dbg();
      const main = target.info.main;
      // A stop at main_sleep gives a known origin: n there is the next compute(n).
      const origin = async () => {
        const { frame } = await breakAt(dc, target, 'main_sleep');
        return Number(await evalIn(dc, frame.id, 'n'));
      };
      const nextStopN = async () => {
        const since = dc.mark();
        await cont(dc, main);
        await stopped(dc, since, 'breakpoint');
        const f = await topFrame(dc, main);
        assertAt(f, 'compute', bp('compute_first'));
        return Number(await evalIn(dc, f.id, 'n'));
      };
      const withHit = async (hitCondition) => {
        const [b] = await setBreakpoints(dc, [{ line: bp('compute_first'), hitCondition }]);
        assert.equal(b.verified, true, JSON.stringify(b));
      };
      let n0 = await origin();
      await withHit('3');
      assert.equal(await nextStopN(), n0 + 2, 'hitCondition "3": the third hit');
      await setBreakpoints(dc, []);
      await cont(dc, main);

      n0 = await origin();
      await withHit('%2');
      assert.equal(await nextStopN(), n0 + 1, 'hitCondition "%2": hit 2');
      assert.equal(await nextStopN(), n0 + 3, 'hitCondition "%2": hit 4');
      await setBreakpoints(dc, []);
      await cont(dc, main);

      n0 = await origin();
      await withHit('>=2');
      assert.equal(await nextStopN(), n0 + 1, 'hitCondition ">=2": hit 2');
      assert.equal(await nextStopN(), n0 + 2, 'hitCondition ">=2": hit 3');
      await setBreakpoints(dc, []);
      await resume(dc, target);
    },
  },
  {
    name: 'logpoint: output event with {expr} interpolated, no stop',
    async body({ debugger: dbg, target }) {
      const dc = await dbg();
      const since = dc.mark();
      const [b] = await setBreakpoints(dc, [{ line: bp('compute_after'), logMessage: 'logpoint n={n} s={s} sum={n + s}' }]);
      assert.equal(b.verified, true, JSON.stringify(b));
      const rx = /^logpoint n=(\d+) s=(\d+) sum=(\d+)\n?$/;
      const seen = [];
      for (let i = 0; i < 3; i++) {
        const e = await dc.waitEvent('output', { since, pred: (ev) => rx.test(ev.body.output) && !seen.includes(ev) });
        seen.push(e);
      }
      const ns = seen.map((e) => {
        const [, n, s, sum] = rx.exec(e.body.output).map(Number);
        assert.equal(s, n + 1, e.body.output);
        assert.equal(sum, 2 * n + 1, e.body.output);
        return n;
      });
      assert.deepEqual(ns, [ns[0], ns[0] + 1, ns[0] + 2], 'one output per execution');
      await target.ticks(2);
      assert.deepEqual(dc.eventsSince(since, 'stopped'), [], 'a logpoint does not stop');
      await setBreakpoints(dc, []);
    },
  },
  {
    name: 'function breakpoint on add',
    async body({ debugger: dbg, target }) {
      const dc = await dbg();
      const since = dc.mark();
      const r = await dc.setFunctionBreakpointsRequest({ breakpoints: [{ name: 'add' }] });
      const [b] = r.body.breakpoints;
      assert.equal(b.verified, true, JSON.stringify(b));
      const e = await stopped(dc, since, ['function breakpoint', 'breakpoint']);
      assert.equal(e.body.threadId, target.info.main);
      assert.deepEqual(e.body.hitBreakpointIds, [b.id]);
      const f = await topFrame(dc, target.info.main);
      assert.equal(f.name, 'add');
      assert.ok([lineMatching(/^def add\(/), bp('add_body')].includes(f.line), `stopped in add at line ${f.line}`);
      await dc.setFunctionBreakpointsRequest({ breakpoints: [] });
      await resume(dc, target);
    },
  },
  {
    name: 'stepIn, next, stepOut land on the expected lines',
    async body({ debugger: dbg, target }) {
      const dc = await dbg();
      const main = target.info.main;
      const step = async (request, name, marker) => {
        const since = dc.mark();
        await dc[`${request}Request`]({ threadId: main });
        const e = await stopped(dc, since, 'step');
        assert.equal(e.body.threadId, main);
        assertAt(await topFrame(dc, main), name, bp(marker), `after ${request}`);
      };
      const { frame } = await breakAt(dc, target, 'compute_call');
      assertAt(frame, 'compute', bp('compute_call'));
      await step('stepIn', 'add', 'add_body');
      await step('next', 'add', 'add_return');
      await step('stepOut', 'compute', 'compute_point');
      await step('next', 'compute', 'compute_after');
      await step('next', 'compute', 'compute_return');
      await cont(dc, main);
      // next over a call does not enter it.
      await breakAt(dc, target, 'compute_call');
      await step('next', 'compute', 'compute_point');
      await resume(dc, target);
    },
  },
  {
    name: 'setVariable s at compute_after changes the printed value',
    async body({ debugger: dbg, target }) {
      const dc = await dbg();
      const { frame } = await breakAt(dc, target, 'compute_after');
      assertAt(frame, 'compute', bp('compute_after'));
      const sc = await scopes(dc, frame.id);
      const locals = byName(await variables(dc, sc.Locals.variablesReference));
      const n = Number(locals.n.value);
      assert.equal(locals.s.value, String(n + 1));
      const point = byName(await variables(dc, locals.point.variablesReference));
      assert.equal(point.x && point.x.value, String(n), `point: ${JSON.stringify(point)}`);
      assert.equal(point.y && point.y.value, String(n + 1));
      const r = await dc.setVariableRequest({ variablesReference: sc.Locals.variablesReference, name: 's', value: '1000' });
      assert.equal(r.body.value, '1000');
      assert.equal(await evalIn(dc, frame.id, 's'), '1000', 'the frame sees the new value');
      const bad = await dc.requestError('setVariable', { variablesReference: sc.Locals.variablesReference, name: 's', value: '1 +' });
      assert.match(bad.message, /SyntaxError/);
      const since = target.mark();
      await cont(dc, target.info.main);
      await target.waitLine(new RegExp(`^tick ${n} value=2000$`), { since });
      const [next] = await target.ticks(1);
      assert.equal(next.value, (next.n + 1) * 2, 'later ticks are unaffected');
    },
  },
  {
    name: 'exception breakpoint "raised" stops at raise_caught; exceptionInfo names ValueError',
    async body({ debugger: dbg, target }) {
      const dc = await dbg();
      const since = dc.mark();
      await dc.setExceptionBreakpointsRequest({ filters: ['raised'] });
      const e = await stopped(dc, since, 'exception');
      assert.equal(e.body.threadId, target.info.main);
      assertAt(await topFrame(dc, target.info.main), 'raise_and_catch', bp('raise_caught'));
      const info = (await dc.exceptionInfoRequest({ threadId: target.info.main })).body;
      assert.match(info.exceptionId, /ValueError/);
      assert.equal(info.breakMode, 'always');
      assert.match(info.description || '', /caught \d+/);
      await dc.setExceptionBreakpointsRequest({ filters: [] });
      await resume(dc, target);
    },
  },
  {
    name: 'exception breakpoint "uncaught" skips caught exceptions and stops on the worker\'s',
    allowErr: WORKER_TRACEBACK,
    async body({ debugger: dbg, target }) {
      const dc = await dbg();
      await stopOnWorkerCrash(dc, target);
      // Continuing lets the exception go on to threading.excepthook, which prints it.
      await resume(dc, target);
      await target.waitErr(/RuntimeError: uncaught in worker/, { timeout: 3000 });
    },
  },
  {
    name: 'exception filters cleared while stopped at an uncaught exception: it still reaches threading.excepthook',
    allowErr: WORKER_TRACEBACK,
    async body({ debugger: dbg, target }) {
      const dc = await dbg();
      await stopOnWorkerCrash(dc, target);
      await dc.setExceptionBreakpointsRequest({ filters: [] });
      await resume(dc, target);
      await target.waitErr(/RuntimeError: uncaught in worker/, { timeout: 3000 });
    },
  },
  {
    name: 'disconnect while stopped at an uncaught exception: it still reaches threading.excepthook',
    allowErr: WORKER_TRACEBACK,
    async body({ debugger: dbg, target }) {
      const dc = await dbg();
      await stopOnWorkerCrash(dc, target);
      const mark = target.mark();
      await dc.disconnectRequest({});
      await dc.waitClosed();
      await target.ticks(2, { since: mark });
      await target.waitErr(/RuntimeError: uncaught in worker/, { timeout: 3000 });
    },
  },
  {
    name: 'disconnect while stopped resumes the target',
    async body({ debugger: dbg, target }) {
      const dc = await dbg('first');
      const since = dc.mark();
      await setBreakpoints(dc, ['compute_after']);
      await stopped(dc, since, 'breakpoint');
      await assertNoTicks(target, 200);
      const mark = target.mark();
      await dc.disconnectRequest({});
      await dc.waitClosed();
      await target.ticks(3, { since: mark });
      // The breakpoint went with the client: a new debugger sees a running target.
      const again = await dbg('second');
      const s2 = again.mark();
      await target.ticks(3);
      assert.deepEqual(again.eventsSince(s2, 'stopped'), [], 'no breakpoint left behind');
    },
  },
  {
    name: 'stopped events go to the debugger only; a CLI client evaluates while stopped',
    async body({ debugger: dbg, cli, target }) {
      const dc = await dbg();
      const c = await cli();
      const since = dc.mark();
      await dc.pauseRequest({ threadId: target.info.main });
      await stopped(dc, since, 'pause');
      assert.equal((await c.evaluateRequest({ expression: 'settings["level"]', context: 'repl' })).body.result, '3');
      assert.deepEqual(c.eventsSince(0, 'stopped'), [], 'the CLI client gets no stopped event');
      // Pausing a stopped target may succeed or fail, but must not stop it again later: the
      // resume below waits for ticks.
      await dc.request('pause', { threadId: target.info.main });
      await resume(dc, target);
      assert.equal(dc.eventsSince(since, 'stopped').length, 1, 'one stopped event');
    },
  },
  {
    name: 'attach nativeFrames "merged": native frames in the stack (subtle, pc, module), modules',
    async body({ connect, target }) {
      const dc = await connect('debugger');
      const caps = await dc.handshake({ attachArgs: { nativeFrames: 'merged' } });
      assert.equal(caps.supportsModulesRequest, true);
      const since = dc.mark();
      await dc.pauseRequest({ threadId: target.info.main });
      const e = await stopped(dc, since, 'pause');
      // The thread the event names is parked in Python (another may still be in time.sleep).
      const frames = (await stack(dc, e.body.threadId)).stackFrames;
      // Its Python frames first (the probe's own are never shown), then the C that started
      // the thread or the interpreter (clone, __libc_start_main...), CPython's internals
      // collapsed.
      assert.ok(frames[0].source && frames[0].source.path === SAMPLE, `top frame ${JSON.stringify(frames[0])}`);
      const native = frames.filter((f) => f.instructionPointerReference !== undefined);
      assert.ok(native.length > 0, `no native frame in ${frames.map((f) => f.name).join(', ')}`);
      const mods = (await dc.customRequest('modules', { startModule: 0, moduleCount: 0 })).body.modules;
      for (const f of native) {
        assert.equal(f.presentationHint, 'subtle', `native frame ${f.name}`);
        assert.match(f.instructionPointerReference, /^0x[0-9a-f]+$/);
        assert.ok(mods.some((m) => m.id === f.moduleId), `moduleId of ${f.name}: ${f.moduleId}`);
      }
      assert.ok(frames.some((f) => f.presentationHint === 'label' && /CPython internal/.test(f.name)));
      assert.deepEqual((await dc.scopesRequest({ frameId: native[0].id })).body.scopes, []);
      assert.ok((await scopes(dc, frames[0].id)).Locals, 'a Python frame still has its scopes');
      await resume(dc, target);
    },
  },
]);
