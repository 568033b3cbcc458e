// SPDX-License-Identifier: MIT
// The session and the running target: initialize/attach/configurationDone, capabilities,
// threads, stackTrace paging, evaluate (contexts, output events, exceptions, console commands),
// custom probing/* requests, disconnect, TCP with a token, and the debugger's seat.
'use strict';

const assert = require('node:assert/strict');
const { suite } = require('../lib/suite');
const { bp, lineMatching, SAMPLE } = require('../lib/target');
const { ProbeClient } = require('../lib/client');

const isUnknown = (r) => r.success === false && /unknown command/.test(r.message || '');

// A capability and a schema-valid request that exercises the command behind it (the request may
// fail for its arguments; only "unknown command" means the command is not implemented).
function capabilityProbes(info) {
  return [
    ['supportsConfigurationDoneRequest', 'configurationDone', undefined],
    ['supportsEvaluateForHovers', 'evaluate', { expression: '1', context: 'hover' }],
    ['supportsClipboardContext', 'evaluate', { expression: '1', context: 'clipboard' }],
    ['supportsSetVariable', 'setVariable', { variablesReference: 987654, name: 'x', value: '1' }],
    ['supportsFunctionBreakpoints', 'setFunctionBreakpoints', { breakpoints: [] }],
    ['supportsExceptionInfoRequest', 'exceptionInfo', { threadId: info.main }],
    ['supportsLoadedSourcesRequest', 'loadedSources', {}],
    ['supportsModulesRequest', 'modules', { startModule: 0 }],
  ];
}

suite('session', [
  {
    name: 'initialize advertises what is implemented; initialized follows; attach; configurationDone',
    async body({ connect, target }) {
      const dc = await connect();
      const caps = await dc.handshake({ configure: false });
      const seq = dc.messages.map((m) => (m.msg.type === 'event' ? `event:${m.msg.event}` : `${m.msg.type}:${m.msg.command}`));
      assert.deepEqual(seq.slice(0, 3), ['request:initialize', 'response:initialize', 'event:initialized'],
                       'initialize response, then the initialized event');
      for (const [cap, command, args] of capabilityProbes(target.info)) {
        const r = await dc.request(command, args);
        assert.equal(Boolean(caps[cap]), !isUnknown(r),
                     `${cap} is ${caps[cap] ? '' : 'not '}advertised but '${command}' answers ${JSON.stringify(r.success ? 'success' : r.message)}`);
      }
      // Breakpoint features: advertised when setBreakpoints exists (clients hide them otherwise).
      const sb = await dc.request('setBreakpoints', { source: { path: SAMPLE }, breakpoints: [] });
      for (const cap of ['supportsConditionalBreakpoints', 'supportsHitConditionalBreakpoints', 'supportsLogPoints']) {
        assert.equal(Boolean(caps[cap]), !isUnknown(sb), `${cap} vs setBreakpoints (${sb.message || 'implemented'})`);
      }
      const seb = await dc.request('setExceptionBreakpoints', { filters: [] });
      const filters = (caps.exceptionBreakpointFilters || []).map((f) => f.filter).sort();
      assert.deepEqual(filters, isUnknown(seb) ? [] : ['raised', 'uncaught'],
                       `exceptionBreakpointFilters (setExceptionBreakpoints: ${seb.message || 'implemented'})`);
      // Nothing is advertised that no request backs.
      for (const cap of ['supportsTerminateRequest', 'supportsCancelRequest', 'supportsStepBack',
                         'supportsRestartRequest', 'supportsDataBreakpoints']) {
        if (caps[cap]) {
          const cmd = { supportsTerminateRequest: 'terminate', supportsCancelRequest: 'cancel', supportsStepBack: 'stepBack',
                        supportsRestartRequest: 'restart', supportsDataBreakpoints: 'dataBreakpointInfo' }[cap];
          assert.fail(`${cap} advertised; is '${cmd}' implemented?`);
        }
      }
      await dc.configurationDoneRequest();
      // Still a running target.
      await target.ticks(2);
    },
  },
  {
    name: 'a request before initialize and attach is refused; an unknown command is an error',
    async body({ connect }) {
      const dc = await connect();
      const r = await dc.requestError('threads');
      assert.match(r.message, /\S/);
      await dc.handshake();
      const u = await dc.requestError('noSuchCommand', { x: 1 });
      assert.match(u.message, /unknown command 'noSuchCommand'/);
      // The session survives both.
      const t = await dc.threadsRequest();
      assert.ok(t.body.threads.length >= 2);
    },
  },
  {
    name: 'threads: native ids and threading names',
    async body({ debugger: dbg, target }) {
      const dc = await dbg();
      const r = await dc.threadsRequest();
      const byId = Object.fromEntries(r.body.threads.map((t) => [t.id, t.name]));
      assert.equal(byId[target.info.main], 'MainThread', `threads: ${JSON.stringify(r.body.threads)}`);
      assert.equal(byId[target.info.worker], 'worker', `threads: ${JSON.stringify(r.body.threads)}`);
    },
  },
  {
    name: 'stackTrace of a running thread: frames, totalFrames, startFrame/levels paging',
    async body({ debugger: dbg, target }) {
      const dc = await dbg();
      const worker = target.info.worker;
      // The worker's stack has a stable shape: worker_loop on threading's bootstrap frames.
      const full = (await dc.stackTraceRequest({ threadId: worker })).body;
      const names = full.stackFrames.map((f) => f.name);
      assert.equal(names[0], 'worker_loop', `frames: ${names}`);
      const f0 = full.stackFrames[0];
      assert.equal(f0.source && f0.source.path, SAMPLE);
      assert.ok(f0.line >= lineMatching(/^def worker_loop/) && f0.line <= bp('worker_sleep'),
                `worker_loop line ${f0.line} is inside worker_loop`);
      assert.ok(names.length >= 3 && names.slice(1).every((n) => /^(Thread\.)?(_bootstrap|_bootstrap_inner|run)$/.test(n)),
                `frames below worker_loop are threading's: ${names}`);
      assert.equal(full.totalFrames, names.length, 'totalFrames of an unpaged request');
      const ids = new Set(full.stackFrames.map((f) => f.id));
      assert.equal(ids.size, names.length, 'frame ids are unique');

      const page = (await dc.stackTraceRequest({ threadId: worker, startFrame: 1, levels: 2 })).body;
      assert.deepEqual(page.stackFrames.map((f) => f.name), names.slice(1, 3), 'startFrame 1, levels 2');
      assert.equal(page.totalFrames, names.length, 'totalFrames is the whole stack when paging');
      const last = (await dc.stackTraceRequest({ threadId: worker, startFrame: names.length - 1, levels: 5 })).body;
      assert.deepEqual(last.stackFrames.map((f) => f.name), names.slice(-1), 'last page');
      const beyond = (await dc.stackTraceRequest({ threadId: worker, startFrame: names.length + 3 })).body;
      assert.deepEqual(beyond.stackFrames, [], 'a page past the end is empty');

      // The main thread: <module> at the bottom, main above it.
      const main = (await dc.stackTraceRequest({ threadId: target.info.main })).body.stackFrames;
      assert.deepEqual(main.slice(-2).map((f) => f.name), ['main', '<module>'], `main thread: ${main.map((f) => f.name)}`);

      const bad = await dc.requestError('stackTrace', { threadId: 1 });
      assert.match(bad.message, /\S/);
    },
  },
  {
    name: 'evaluate: contexts, output events before the response, tracebacks, %sql, %help',
    async body({ debugger: dbg }) {
      const dc = await dbg();
      const mark = dc.messages.length;
      const r = await dc.evaluateRequest({ expression: 'print("hello from dap")\nx_dap = 6 * 7\nx_dap', context: 'repl' });
      assert.equal(r.body.result, '42');
      assert.equal(r.body.variablesReference, 0);
      const after = dc.messages.slice(mark);
      const outIdx = after.findIndex((m) => m.msg.type === 'event' && m.msg.event === 'output' && m.msg.body.output === 'hello from dap\n');
      const respIdx = after.findIndex((m) => m.msg.type === 'response' && m.msg.command === 'evaluate');
      assert.ok(outIdx >= 0, `output event for the print: ${JSON.stringify(after.map((m) => m.msg))}`);
      assert.equal(after[outIdx].msg.body.category, 'stdout');
      assert.ok(outIdx < respIdx, 'the output event comes before the response');

      assert.equal((await dc.evaluateRequest({ expression: 'settings["level"] + 1', context: 'watch' })).body.result, '4');
      assert.equal((await dc.evaluateRequest({ expression: 'pair', context: 'hover' })).body.result, "(1, 'one')");
      assert.equal((await dc.evaluateRequest({ expression: 'sorted(unique)', context: 'clipboard' })).body.result, '[1, 2, 3]');

      const e = await dc.requestError('evaluate', { expression: '1/0', context: 'repl' });
      assert.match(e.message, /Traceback[\s\S]*ZeroDivisionError/);
      assert.ok(e.body && e.body.error && typeof e.body.error.format === 'string', 'error body.error');
      const w = await dc.requestError('evaluate', { expression: 'x = (', context: 'watch' });
      assert.match(w.message, /SyntaxError/);

      const sql = await dc.evaluateRequest({ expression: '%sql SELECT 41 + 1 AS answer', context: 'repl' });
      assert.match(sql.body.result, /answer[\s\S]*42[\s\S]*\(1 row\)$/);
      const help = await dc.evaluateRequest({ expression: '%help', context: 'repl' });
      assert.match(help.body.result, /%sql/);
      const unk = await dc.requestError('evaluate', { expression: '%nope', context: 'repl' });
      assert.match(unk.message, /unknown console command '%nope'/);
    },
  },
  {
    name: 'custom probing/* requests (base Request/Response)',
    async body({ debugger: dbg, target }) {
      const dc = await dbg();
      const info = (await dc.customRequest('probing/info')).body;
      assert.equal(info.pid, target.pid);
      assert.equal(info.socket, target.socketPath);
      const q = (await dc.customRequest('probing/query', { sql: 'SELECT 6 * 7 AS v' })).body;
      assert.deepEqual(q.columns, ['v']);
      assert.deepEqual(q.rows, [[42]]);
      const d = (await dc.customRequest('probing/dump', { maxFrames: 4 })).body;
      assert.ok(d.threads.some((t) => t.nativeId === target.info.worker && t.frames[0].name === 'worker_loop'));
      const ev = (await dc.customRequest('probing/eval', { code: 'settings["mode"]', mode: 'expression' })).body;
      assert.equal(ev.result, "'fast'");
      const bad = await dc.requestError('probing/query', { sql: 'DELETE FROM probing.settings' });
      assert.match(bad.message, /\S/);
    },
  },
  {
    name: 'disconnect: answered, connection closed, target keeps running, seat freed',
    async body({ debugger: dbg, target }) {
      const dc = await dbg('first');
      await dc.disconnectRequest({});
      await dc.waitClosed();
      await target.ticks(3);
      const again = await dbg('second');
      const t = await again.threadsRequest();
      assert.ok(t.body.threads.some((x) => x.id === target.info.main));
    },
  },
  {
    name: 'attach over TCP needs the token',
    async body({ debugger: dbg, track }) {
      const dc = await dbg();
      const token = 'dap-test-token-0123456789';
      const l = (await dc.customRequest('probing/listen', { address: '127.0.0.1:0', token })).body;
      const m = /^(.*):(\d+)$/.exec(l.address);
      assert.ok(m, `listen address ${l.address}`);
      const [host, port] = [m[1], Number(m[2])];

      const early = track(new ProbeClient('tcp-early'));
      await early.openTcp(host, port);
      await early.initializeRequest({ adapterID: 'probing' });
      early.request('threads').catch(() => {});
      await early.waitClosed();

      const wrong = track(new ProbeClient('tcp-wrong'));
      await wrong.openTcp(host, port);
      await wrong.initializeRequest({ adapterID: 'probing' });
      const r = await wrong.requestError('attach', { token: 'not-the-token' });
      assert.match(r.message, /token/);
      await wrong.waitClosed();

      const right = track(new ProbeClient('tcp-right'));
      await right.openTcp(host, port);
      await right.handshake({ attachArgs: { token, probingClient: 'cli' }, configure: false });
      const t = await right.threadsRequest();
      assert.ok(t.body.threads.length >= 2);
    },
  },
  {
    name: 'a second debugger is refused while one is attached; CLI clients work beside it',
    async body({ debugger: dbg, connect, cli, target }) {
      const first = await dbg('first');
      const second = await connect('second');
      await second.initializeRequest({ adapterID: 'probing' });
      const r = await second.requestError('attach', { type: 'probing', request: 'attach', name: 'second' });
      assert.match(r.message, /\S/);

      const c = await cli('cli');
      assert.equal((await c.evaluateRequest({ expression: 'settings["level"]', context: 'repl' })).body.result, '3');
      const th = await c.threadsRequest();
      assert.ok(th.body.threads.some((t) => t.id === target.info.main));
      // The first debugger is unaffected.
      assert.ok((await first.threadsRequest()).body.threads.length >= 2);

      await first.disconnectRequest({});
      await first.waitClosed();
      const third = await dbg('third');
      assert.ok((await third.threadsRequest()).body.threads.length >= 2);
    },
  },
]);
