// read_trace.mjs FILE: loads a Chrome trace JSON (probing's --format chrometrace) with the trace
// engine of Chrome DevTools' Performance panel (@paulirish/trace_engine, pinned by
// package-lock.json): an independent reader of the format Perfetto and chrome://tracing open.
// Prints one JSON line: what the engine made of it (processes, threads with their names, how
// many trace entries each holds, the roots of each thread's call tree, the engine's warnings,
// the trace's bounds in microseconds), for tests/e2e/test_record.py to compare with the file.
import fs from 'node:fs';
import * as Trace from '@paulirish/trace_engine';

// The engine reads DOMRect, which Node does not have (its README says to polyfill it).
globalThis.DOMRect ??= class DOMRect {
  constructor(x = 0, y = 0, width = 0, height = 0) {
    Object.assign(this, {x, y, width, height, top: y, left: x, right: x + width, bottom: y + height});
  }
};

const file = process.argv[2];
if (!file) {
  console.error('usage: node read_trace.mjs FILE');
  process.exit(2);
}
const json = JSON.parse(fs.readFileSync(file, 'utf8'));
const model = Trace.TraceModel.Model.createWithAllHandlers();
await model.parse(json.traceEvents ?? json);
const parsed = model.parsedTrace();
if (!parsed) {
  console.error(`${file}: the trace engine made nothing of it`);
  process.exit(1);
}
const data = parsed.data;
const out = {processes: [], warnings: [], bounds: {
  min: Number(data.Meta.traceBounds.min), max: Number(data.Meta.traceBounds.max)}};
for (const [pid, p] of data.Renderer.processes) {
  const threads = [];
  for (const [tid, t] of p.threads) {
    const names = (t.entries ?? []).map((e) => e.name);
    threads.push({tid: Number(tid), name: t.name ?? null, entries: names.length,
                  roots: t.tree ? t.tree.roots.size : 0, names: [...new Set(names)]});
  }
  out.processes.push({pid: Number(pid), threads});
}
for (const [kind, evs] of data.Warnings.perWarning ?? [])
  out.warnings.push({kind, count: evs.length});
console.log(JSON.stringify(out));
