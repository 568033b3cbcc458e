// SPDX-License-Identifier: MIT
// asyncio tasks in the call stack (issue 41): when the debugger pauses samples/asyncio_tasks.py,
// threads lists after the Python threads one entry per asyncio task (ids from 3 * 2^29, the same at
// every stop), named with its state and what it awaits; stackTrace of such an entry is the
// task's coroutine chain, innermost first, down to the exact "# BP:" lines; running again, the
// tasks are gone from threads.
'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { suite } = require('../lib/suite');
const { ROOT } = require('../lib/target');
const { stopped, stack, cont } = require('../lib/harness');

const SAMPLE = 'asyncio_tasks.py';
const FILE = path.join(ROOT, 'samples', SAMPLE);
const TASK_ID_BASE = 3 * 2 ** 29;  // DAP ids are int32: thread ids stay below this

function bp(name) {
  const lines = fs.readFileSync(FILE, 'utf8').split('\n');
  const i = lines.findIndex((l) => new RegExp(`#\\s*BP:\\s*${name}\\b`).test(l));
  if (i < 0) throw new Error(`no BP marker ${name} in ${FILE}`);
  return i + 1;
}

// The task entries of a threads answer, by task name.
function tasksOf(threads) {
  const by = new Map();
  for (const t of threads) {
    if (t.id < TASK_ID_BASE) continue;
    const m = /^asyncio task "([^"]*)" \(/.exec(t.name);
    assert.ok(m, `task entry name: ${t.name}`);
    by.set(m[1], t);
  }
  return by;
}

suite('asyncio tasks', [
  {
    name: 'paused: each task an entry of the call stack, its coroutine chain as frames',
    sample: SAMPLE,
    async body({ debugger: dbg, target }) {
      const dc = await dbg();
      // Running: the threads only.
      const running = (await dc.threadsRequest()).body.threads;
      assert.equal(tasksOf(running).size, 0, JSON.stringify(running));
      const since = dc.mark();
      await dc.pauseRequest({ threadId: target.info.main });
      await stopped(dc, since, 'pause');
      const threads = (await dc.threadsRequest()).body.threads;
      assert.ok(threads.some((t) => t.id === target.info.main), 'the main thread is listed');
      for (const label of ['loop-a', 'loop-b', 'loop-c']) {
        assert.ok(threads.some((t) => t.id === target.info.threads[label]), label);
      }
      const tasks = tasksOf(threads);
      // 3.8-3.13 keep the done and the cancelled task while referenced; 3.14+ pending ones only.
      const names = [...tasks.keys()].sort();
      const expect = ['cancelled', 'consumer', 'dl-a', 'dl-b', 'executor', 'finished',
        'future-waiter', 'g1', 'g2', 'gatherer', 'lock-holder', 'lock-wanter', 'loop-a-main',
        'loop-a-serve', 'loop-b-main', 'loop-b-serve', 'loop-c-busy', 'main', 'napper', 'task-waiter'];
      assert.deepEqual(names, tasks.has('finished') ? expect
        : expect.filter((n) => n !== 'finished' && n !== 'cancelled'));
      // Names: state and what each awaits.
      assert.match(tasks.get('napper').name, /^asyncio task "napper" \(pending, awaits _asyncio\.Future\)$/);
      assert.equal(tasks.get('task-waiter').name, 'asyncio task "task-waiter" (pending, awaits task "napper")');
      assert.match(tasks.get('dl-a').name, /^asyncio task "dl-a" \(pending, awaits task "dl-b", await cycle 1\)$/);
      assert.equal(tasks.get('loop-c-busy').name, 'asyncio task "loop-c-busy" (pending, running)');
      assert.equal(tasks.get('gatherer').name, 'asyncio task "gatherer" (pending, awaits _GatheringFuture)');
      if (tasks.has('finished')) assert.equal(tasks.get('finished').name, 'asyncio task "finished" (done)');
      // The chain: innermost first, asyncio's sleep then ours at the exact lines.
      const nap = await stack(dc, tasks.get('napper').id);
      assert.equal(nap.totalFrames, 3);
      assert.equal(nap.stackFrames[0].name.split('.').pop(), 'sleep');
      assert.match(nap.stackFrames[0].source.path, /\/asyncio\/tasks\.py$/);
      assert.equal(nap.stackFrames[0].presentationHint, 'subtle', 'asyncio is library code');
      assert.deepEqual(nap.stackFrames.slice(1).map((f) => [f.name, f.source.path, f.line]),
                       [['nap', FILE, bp('nap_sleep')], ['sleeper', FILE, bp('sleeper_nap')]]);
      // Paging as for a thread.
      const page = await stack(dc, tasks.get('napper').id, { startFrame: 1, levels: 1 });
      assert.deepEqual(page.stackFrames.map((f) => f.name), ['nap']);
      assert.equal(page.totalFrames, 3);
      // A lock another task holds: Lock.acquire, __aenter__, then ours.
      const want = (await stack(dc, tasks.get('lock-wanter').id)).stackFrames;
      assert.deepEqual(want.map((f) => f.name.split('.').pop()), ['acquire', '__aenter__', 'want']);
      assert.equal(want[2].line, bp('lock_want'));
      // Another loop's task, and the thread's own stack still answers.
      const serve = (await stack(dc, tasks.get('loop-a-serve').id)).stackFrames;
      assert.deepEqual(serve.slice(1).map((f) => [f.name.split('.').pop(), f.line]),
                       [['thread_serve', bp('thread_sleep')]]);
      assert.ok((await stack(dc, target.info.main)).stackFrames.length > 0);
      // The same ids at the next threads answer.
      const again = tasksOf((await dc.threadsRequest()).body.threads);
      for (const [n, t] of tasks) assert.equal(again.get(n).id, t.id, n);
      // An id no answer gave: an error naming it.
      const bad = await dc.stackTraceRequest({ threadId: TASK_ID_BASE + 2 ** 29 - 1 }).then(
        () => null, (e) => e.message);
      assert.match(bad || '', /no asyncio task with id \d+/);
      // Running again: no task entries.
      await cont(dc, target.info.main);
      await target.ticks(2);
      assert.equal(tasksOf((await dc.threadsRequest()).body.threads).size, 0);
    },
  },
]);
