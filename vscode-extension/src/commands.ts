// SPDX-License-Identifier: MIT
// The commands: pick a process, attach, dump stacks (a read-only document), run SQL (a table
// in a webview), flame graph (perf --cc for a while, then the SVG in a webview). Each works on
// the process of the active probing debug session when there is one, else asks with the picker.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { CliError, Target, parseCsv, run, targetLabel } from './cli';
import { DEBUG_TYPE, normalize } from './config';
import { listPythonProcesses, pickItem } from './processes';
import { cliPath, flameGraphSeconds } from './settings';
import { flameGraphHtml, queryHtml } from './views';

export const DUMP_SCHEME = 'probing-dump';

// Read-only documents for "Dump Stacks": the text is kept here, by URI.
export class DumpDocuments implements vscode.TextDocumentContentProvider {
  private readonly texts = new Map<string, string>();
  private n = 0;

  add(label: string, text: string): vscode.Uri {
    const uri = vscode.Uri.parse(`${DUMP_SCHEME}:/${encodeURIComponent(label)}.txt?${++this.n}`);
    this.texts.set(uri.toString(), text);
    return uri;
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.toString()) ?? '';
  }
}

// What the picker is for: its title and placeholder.
export interface PickPurpose {
  title: string;
  placeHolder: string;
}

export const PICK_ATTACH: PickPurpose = {
  title: 'Attach to a Python process',
  placeHolder: 'Pick the process to attach to (probe loaded ones first)',
};

// The quick pick of Python processes; resolves with the pid as a string (what
// ${command:pickProcess} substitutes), or undefined when dismissed.
export async function pickProcess(): Promise<string | undefined> {
  return pickProcessFor(PICK_ATTACH);
}

export async function pickProcessFor(purpose: PickPurpose): Promise<string | undefined> {
  const procs = listPythonProcesses();
  if (procs.length === 0) {
    void vscode.window.showErrorMessage('probing: no Python process of yours is running (looked in /proc)');
    return undefined;
  }
  const picked = await vscode.window.showQuickPick(procs.map(pickItem), {
    title: purpose.title,
    placeHolder: purpose.placeHolder,
    matchOnDescription: true,
    matchOnDetail: true,
  });
  return picked ? String(picked.pid) : undefined;
}

// The target of a command: the active probing session's, else a process picked for purpose.
export async function chooseTarget(purpose: PickPurpose): Promise<Target | undefined> {
  const s = vscode.debug.activeDebugSession;
  if (s && s.type === DEBUG_TYPE) {
    try {
      const c = normalize(s.configuration);
      if (c && c.connect && typeof c.token === 'string') {
        return { kind: 'tcp', host: c.connect.host, port: c.connect.port, token: c.token };
      }
      if (c && typeof c.processId === 'number') return { kind: 'pid', pid: c.processId };
    } catch { /* not usable: ask */ }
  }
  const pid = await pickProcessFor(purpose);
  return pid ? { kind: 'pid', pid: Number(pid) } : undefined;
}

function showError(e: unknown): void {
  const msg = e instanceof Error ? e.message : String(e);
  void vscode.window.showErrorMessage(msg);
}

export async function attach(): Promise<boolean> {
  const pid = await pickProcess();
  if (!pid) return false;
  return vscode.debug.startDebugging(vscode.workspace.workspaceFolders?.[0], {
    type: DEBUG_TYPE, request: 'attach', name: `probing ${pid}`, processId: Number(pid),
  });
}

export async function dumpStacks(docs: DumpDocuments): Promise<vscode.Uri | undefined> {
  const target = await chooseTarget({
    title: 'Dump the stacks of a Python process',
    placeHolder: 'Pick the process whose threads\' stacks to show (probing debug --dump)',
  });
  if (!target) return undefined;
  try {
    const { stdout } = await run(cliPath(), target, ['debug', '--dump']);
    const stamp = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    const uri = docs.add(`stacks ${targetLabel(target)} ${stamp}`,
                         `# probing debug --dump of ${targetLabel(target)} at ${stamp}\n\n${stdout}`);
    const doc = await vscode.workspace.openTextDocument(uri);
    await vscode.window.showTextDocument(doc, { preview: false });
    return uri;
  } catch (e) {
    showError(e);
    return undefined;
  }
}

let lastSql = 'SELECT * FROM python.threads';

export async function runSql(): Promise<vscode.WebviewPanel | undefined> {
  const target = await chooseTarget({
    title: 'Run SQL in a Python process',
    placeHolder: 'Pick the process to query (probing query)',
  });
  if (!target) return undefined;
  const sql = await vscode.window.showInputBox({
    title: `SQL over ${targetLabel(target)}`,
    prompt: 'One read-only SQL statement over the probe\'s tables (probing tables lists them)',
    value: lastSql,
  });
  if (sql === undefined || sql.trim() === '') return undefined;
  lastSql = sql;
  try {
    const t0 = Date.now();
    const { stdout, stderr } = await run(cliPath(), target, ['query', sql, '--format', 'csv']);
    const { columns, rows } = parseCsv(stdout);
    const notes = stderr.split('\n').map((l) => l.trim()).filter((l) => l.startsWith('probing: note:'));
    const title = `SQL: ${targetLabel(target)}`;
    const panel = vscode.window.createWebviewPanel('probing.sql', title, vscode.ViewColumn.Active,
                                                   { enableScripts: false });
    panel.webview.html = queryHtml({ title, sql, columns, rows, notes, elapsedMs: Date.now() - t0 });
    return panel;
  } catch (e) {
    showError(e);
    return undefined;
  }
}

// "perf --cc: 190 samples of 2 threads in 1.0 s (wall mode, 100 Hz); ..." (perf --duration,
// perf --stop): how many samples the run took, in which mode.
export interface PerfSummary {
  samples: number;
  threads: number;
  seconds: number;
  mode: string;
}

export function parsePerfSummary(stdout: string): PerfSummary | null {
  const m = /^perf --cc: (\d+) samples? of (\d+) threads? in ([\d.]+) s \((\w+) mode/m.exec(stdout);
  return m ? { samples: Number(m[1]), threads: Number(m[2]), seconds: Number(m[3]), mode: m[4] } : null;
}

// Fewer CPU samples than this in a Flame Graph's run: the process was mostly idle (a CPU-mode
// sample is taken per 10 ms of a thread's CPU time), and a graph of so few says nothing. The
// command samples again in wall mode (every Python thread, sleeping ones too) and says so.
export const MIN_CPU_SAMPLES = 20;

const FLAME_PICK: PickPurpose = {
  title: 'Flame graph of a Python process',
  placeHolder: 'Pick the process to sample (probing perf --cc), then draw its flame graph',
};

export async function flameGraph(): Promise<vscode.WebviewPanel | undefined> {
  const target = await chooseTarget(FLAME_PICK);
  if (!target) return undefined;
  const answer = await vscode.window.showInputBox({
    title: `Flame graph of ${targetLabel(target)}`,
    prompt: 'Seconds of CPU sampling (probing perf --cc) before drawing; an idle process is sampled again in wall-clock time',
    value: String(flameGraphSeconds()),
    validateInput: (v) => (/^\d+(\.\d+)?$/.test(v.trim()) && Number(v) > 0 ? undefined : 'a number of seconds'),
  });
  if (answer === undefined) return undefined;
  const seconds = Number(answer.trim());
  if (!(seconds > 0)) return undefined;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'probing-flame-'));
  const out = path.join(dir, 'flame.svg');
  const label = targetLabel(target);
  try {
    const cli = cliPath();
    const sample = (mode: string) => run(cli, target, ['perf', '--cc', '--mode', mode, '--duration', String(seconds)],
                                         { timeoutMs: seconds * 1000 + 60000 });
    const stop = () => run(cli, target, ['perf', '--cc', '--stop']);
    let note: string | null = null;
    const svg = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: `probing: sampling ${label}`, cancellable: false },
      async (progress) => {
        progress.report({ message: `${seconds} s of perf --cc` });
        // A sampler the user started (probing perf --cc) is left alone: its samples are drawn
        // and it keeps running. Only one started here is stopped.
        let started = false;
        try {
          let summary: PerfSummary | null = null;
          try {
            summary = parsePerfSummary((await sample('cpu')).stdout);
            started = true;
          } catch (e) {
            if (!(e instanceof CliError) || !/sampling is already running/.test(e.message)) {
              started = true; // it may have started before failing: stop it below
              throw e;
            }
          }
          if (started && summary && summary.samples < MIN_CPU_SAMPLES) {
            // Mostly idle: a start clears the profile, so the graph is of the wall-clock run only.
            const cpu = summary;
            await stop();
            progress.report({ message: `idle in CPU time: ${seconds} s of wall-clock sampling` });
            const wall = parsePerfSummary((await sample('wall')).stdout);
            if (wall && wall.samples === 0) {
              throw new CliError(`probing: error: flame graph: ${label} was idle: ${cpu.samples} CPU ` +
                                 `samples, and no Python thread to sample in wall-clock time, in ${seconds} s`);
            }
            note = `${label} was mostly idle (${plural(cpu.samples, 'CPU sample')} in ${cpu.seconds} s): ` +
                   `this graph is of wall-clock time, sleeping threads included (perf --cc --mode wall)`;
          }
          progress.report({ message: 'drawing the flame graph' });
          try {
            // the wall-clock run is of sleeping threads: keep them (flamegraph leaves off-CPU
            // samples out unless --idle, as py-spy does)
            await run(cli, target, ['flamegraph', '--format', 'svg', '-o', out, ...(note ? ['--idle'] : [])]);
          } catch (e) {
            if (!started && e instanceof CliError && /no samples/.test(e.message)) {
              throw new CliError(`probing: error: flame graph: ${label} was idle: the sampler already ` +
                                 `running in it (probing perf --cc) has no samples yet; try again later, or ` +
                                 `stop it ('probing perf --stop') and run Flame Graph again`);
            }
            throw e;
          }
        } finally {
          // The sampler keeps going after perf --duration: stop what we started.
          if (started) await stop().catch(() => undefined);
        }
        return fs.readFileSync(out, 'utf8');
      });
    if (!/<svg[\s>]/.test(svg)) throw new CliError(`probing: error: flamegraph wrote no SVG to ${out}`);
    const title = note ? `Flame graph (wall clock): ${label}` : `Flame graph: ${label}`;
    const panel = vscode.window.createWebviewPanel('probing.flameGraph', title, vscode.ViewColumn.Active,
                                                   { enableScripts: true });
    panel.webview.html = flameGraphHtml(title, svg, '', note);
    if (note) void vscode.window.showInformationMessage(`probing: ${note}`);
    return panel;
  } catch (e) {
    showError(e);
    return undefined;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

function plural(n: number, what: string): string {
  return `${n} ${what}${n === 1 ? '' : 's'}`;
}
