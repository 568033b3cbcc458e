// SPDX-License-Identifier: MIT
// The process picker's data: Python processes read from /proc (comm, exe, cmdline, maps), the
// ones with the probe already loaded (a libprobing-* mapping) marked. Only processes we could
// attach to are listed: our own user's, or everyone's for root. Nothing here runs the CLI or
// connects to a probe, so listing is quick and touches no target.
import * as fs from 'node:fs';
import * as path from 'node:path';

export interface PyProcess {
  pid: number;
  // Short name (comm), e.g. "python3.12" or "gunicorn".
  name: string;
  // Executable path ("" when it cannot be read).
  exe: string;
  // Command line, arguments joined by spaces.
  command: string;
  // The probe is loaded (maps a libprobing-*.so).
  probe: boolean;
  // CPython version when known ("3.12"): from the probe library or the executable's name.
  python: string | null;
}

const PY_NAME = /^python(\d+(\.\d+)?)?(d|m|dm)?$/;

function read(p: string): string | null {
  try {
    return fs.readFileSync(p, 'utf8');
  } catch {
    return null;
  }
}

function uidOf(status: string): number | null {
  const m = /\nUid:\s+(\d+)\s+(\d+)/.exec(status);
  return m ? Number(m[2]) : null; // effective uid, as the CLI checks
}

// Whether one /proc/PID entry is a Python process; null if not (or gone meanwhile).
export function describeProcess(procRoot: string, pid: number): PyProcess | null {
  const dir = path.join(procRoot, String(pid));
  const comm = (read(path.join(dir, 'comm')) ?? '').trim();
  const cmdline = read(path.join(dir, 'cmdline'));
  if (cmdline === null) return null;
  const argv = cmdline.split('\0').filter((a, i, all) => a !== '' || i < all.length - 1);
  let exe = '';
  try {
    exe = fs.readlinkSync(path.join(dir, 'exe')).replace(/ \(deleted\)$/, '');
  } catch { /* another user's process, or a kernel thread */ }
  const maps = read(path.join(dir, 'maps')) ?? '';
  const probeLib = /\/libprobing-(\d+\.\d+)[^/\s]*\.so/.exec(maps);
  const libpython = /\/libpython(\d+\.\d+)[^/\s]*\.so/.exec(maps);
  const exeName = path.basename(exe);
  const argv0 = argv.length ? path.basename(argv[0]) : '';
  const isPython = PY_NAME.test(exeName) || PY_NAME.test(comm) || libpython !== null ||
                   (exe === '' && PY_NAME.test(argv0));
  if (!isPython) return null;
  const v = /^python(\d+\.\d+)/.exec(exeName) ?? /^python(\d+\.\d+)/.exec(comm);
  return {
    pid,
    name: comm || exeName || argv0,
    exe,
    command: argv.join(' '),
    probe: probeLib !== null,
    python: probeLib ? probeLib[1] : libpython ? libpython[1] : v ? v[1] : null,
  };
}

export interface ListOptions {
  procRoot?: string;
  // Effective uid whose processes are listed; 0 lists everyone's. Default: ours.
  uid?: number;
  // Left out (the extension host itself, for one).
  exclude?: number[];
}

// Python processes, probe-loaded ones first, then newest (highest pid) first.
export function listPythonProcesses(opts: ListOptions = {}): PyProcess[] {
  const procRoot = opts.procRoot ?? '/proc';
  const uid = opts.uid ?? (process.geteuid ? process.geteuid() : 0);
  const exclude = new Set(opts.exclude ?? [process.pid]);
  let entries: string[];
  try {
    entries = fs.readdirSync(procRoot);
  } catch (e) {
    throw new Error(`probing: error: cannot read ${procRoot}: ${(e as Error).message}`);
  }
  const found: PyProcess[] = [];
  for (const name of entries) {
    if (!/^\d+$/.test(name)) continue;
    const pid = Number(name);
    if (exclude.has(pid)) continue;
    if (uid !== 0) {
      const status = read(path.join(procRoot, name, 'status'));
      if (status === null || uidOf(status) !== uid) continue;
    }
    const p = describeProcess(procRoot, pid);
    if (p) found.push(p);
  }
  found.sort((a, b) => (a.probe === b.probe ? b.pid - a.pid : a.probe ? -1 : 1));
  return found;
}

// What the quick pick shows for one process.
export interface PickItem {
  label: string;
  description: string;
  detail: string;
  pid: number;
}

export function pickItem(p: PyProcess): PickItem {
  const script = p.command.split(' ').slice(1).find((a) => a !== '' && !a.startsWith('-')) ?? '';
  return {
    label: `${p.name}${script ? ' ' + path.basename(script) : ''}`,
    description: `pid ${p.pid}${p.python ? ` · CPython ${p.python}` : ''}${p.probe ? ' · probe loaded' : ''}`,
    detail: p.command.length > 300 ? p.command.slice(0, 300) + '…' : p.command,
    pid: p.pid,
  };
}
