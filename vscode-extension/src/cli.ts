// SPDX-License-Identifier: MIT
// Running the probing CLI: every command the extension needs goes through it (inject, dump,
// query, perf, flamegraph), so the extension never guesses what the CLI knows (where the probe
// is, how to reach a process in another mount namespace). Failures become one clear line: the
// CLI's own "probing: error: ..." line when it printed one.
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

// Where a command goes: a local process (-p PID, the probe injected when needed) or a probe
// listening on TCP (-t HOST:PORT, the token in $PROBING_TOKEN as the CLI expects it).
export type Target =
  | { kind: 'pid'; pid: number }
  | { kind: 'tcp'; host: string; port: number; token: string };

export class CliError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CliError';
  }
}

// Where the CLI is looked for when "probing.path" is a bare name (the default, "probing"):
// the extension host's PATH first (VS Code may have started it with a login shell's PATH that
// lacks the install directory), then the usual install places, then the prefix the extension
// was built for (make vsix PREFIX=...; out/prefix.json), then the release the platform-specific
// .vsix carries (make vsix-linux-x64: bundled/bin/probing, its probes in bundled/lib/probing).
// Each is tried as DIR/NAME.
export function cliSearchDirs(env: NodeJS.ProcessEnv = process.env, home: string = os.homedir(),
                              prefix: string | null = builtPrefix(),
                              bundled: string | null = bundledBin()): string[] {
  const dirs = (env.PATH ?? '').split(':').filter((d) => d !== '');
  const more = ['/usr/local/bin', path.join(home, '.local', 'bin'), '/usr/bin'];
  if (prefix) more.push(path.join(prefix, 'bin'));
  if (bundled) more.push(bundled);
  for (const d of more) if (!dirs.includes(d)) dirs.push(d);
  return dirs;
}

// The PREFIX `make vsix` wrote into out/prefix.json ({"prefix": "/usr/local"}), or null.
export function builtPrefix(file: string = path.join(__dirname, 'prefix.json')): string | null {
  try {
    const p = JSON.parse(fs.readFileSync(file, 'utf8')).prefix;
    return typeof p === 'string' && p.startsWith('/') ? p : null;
  } catch {
    return null;
  }
}

// The bin/ of the release a platform-specific .vsix carries (bundled/ beside out/), or null in
// the plain .vsix. Its programs are made executable again where the unpacking lost the mode.
export function bundledBin(root: string = path.join(__dirname, '..', 'bundled')): string | null {
  const bin = path.join(root, 'bin');
  if (!fs.existsSync(path.join(bin, 'probing'))) return null;
  for (const p of [path.join(bin, 'probing'), path.join(root, 'lib', 'probing', 'probing-serve')]) {
    try {
      if (!executable(p)) fs.chmodSync(p, 0o755);
    } catch {
      // a read-only extension folder: findCli then says it was not found
    }
  }
  return bin;
}

function executable(p: string): boolean {
  try {
    fs.accessSync(p, fs.constants.X_OK);
    return fs.statSync(p).isFile();
  } catch {
    return false;
  }
}

// The CLI to run for the setting `name`: a path (it has a '/') as given, else the first
// executable DIR/name of cliSearchDirs(). Throws a CliError naming every place looked in.
export function findCli(name: string, dirs: string[] = cliSearchDirs()): string {
  if (name.includes('/')) return name;
  for (const d of dirs) {
    const p = path.join(d, name);
    if (executable(p)) return p;
  }
  throw new CliError(`probing: error: the probing CLI was not found ('${name}'; looked in ` +
                     `${dirs.join(', ')}): install probing (make install) or set "probing.path" ` +
                     `to the probing binary`);
}

export interface CliOptions {
  // Milliseconds before the command is killed; default 60 s.
  timeoutMs?: number;
}

export function targetArgs(t: Target): string[] {
  return t.kind === 'pid' ? ['-p', String(t.pid)] : ['-t', `${hostForCli(t.host)}:${t.port}`];
}

export function targetLabel(t: Target): string {
  return t.kind === 'pid' ? `process ${t.pid}` : `${t.host}:${t.port}`;
}

function hostForCli(host: string): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
}

// The one line to show for a failed run: the CLI's "probing: error: ..." line (its format,
// docs/style.md), else the last line it wrote on stderr, else the exit status.
export function failureMessage(cli: string, args: string[], stderr: string, code: number | string | null,
                               signal: string | null): string {
  const lines = stderr.split('\n').map((l) => l.trim()).filter((l) => l !== '');
  const error = lines.find((l) => l.startsWith('probing: error:'));
  if (error) return error;
  if (lines.length) return `probing: error: ${lines[lines.length - 1]}`;
  const what = `'${[cli, ...args].join(' ')}'`;
  if (signal) return `probing: error: ${what} was killed by ${signal}`;
  return `probing: error: ${what} failed with exit status ${code}`;
}

// Runs `cli ...targetArgs ...args`; resolves with stdout (and stderr, for notes), rejects with a
// CliError whose message is one line.
export function run(cli: string, target: Target | null, args: string[],
                    opts: CliOptions = {}): Promise<{ stdout: string; stderr: string }> {
  const argv = [...(target ? targetArgs(target) : []), ...args];
  const env = { ...process.env };
  if (target && target.kind === 'tcp') env.PROBING_TOKEN = target.token;
  const timeout = opts.timeoutMs ?? 60000;
  return new Promise((resolve, reject) => {
    execFile(cli, argv, { env, timeout, maxBuffer: 256 * 1024 * 1024, encoding: 'utf8' },
      (error, stdout, stderr) => {
        if (!error) {
          resolve({ stdout, stderr });
          return;
        }
        const e = error as NodeJS.ErrnoException & { killed?: boolean; signal?: string | null; code?: number | string };
        if (e.code === 'ENOENT') {
          reject(new CliError(`probing: error: the probing CLI was not found ('${cli}'): install probing ` +
                              `or set "probing.path" to the probing binary`));
        } else if (e.code === 'EACCES') {
          reject(new CliError(`probing: error: cannot run '${cli}' (permission denied): check "probing.path"`));
        } else if (e.killed && e.signal === 'SIGTERM' && !stderr.includes('probing: error:')) {
          reject(new CliError(`probing: error: '${[cli, ...argv].join(' ')}' did not finish within ` +
                              `${Math.round(timeout / 1000)} s`));
        } else {
          reject(new CliError(failureMessage(cli, argv, stderr, e.code ?? null, e.signal ?? null)));
        }
      });
  });
}

export interface Injected {
  pid: number;
  // "loaded" (just now) or "already loaded".
  state: string;
  python: string;
  // The socket as the target sees it (its own mount namespace).
  socket: string;
  // The same socket reached from here, through the target's root: what the CLI itself
  // connects to, so that a target with a private /tmp or in a container is reached too.
  reachable: string;
}

// "probe loaded in 4242 (CPython 3.12.1), socket /tmp/probing-1000/4242-4026531836.sock"
const INJECT_LINE = /^probe (loaded|already loaded) in (\d+) \(CPython ([^)]*)\), socket (\/\S+)\s*$/m;

export function parseInject(pid: number, stdout: string): Injected {
  const m = INJECT_LINE.exec(stdout);
  if (!m) {
    throw new CliError(`probing: error: unexpected answer from 'probing -p ${pid} inject': ` +
                       `${JSON.stringify(stdout.trim().slice(0, 200))}: is probing.path a probing CLI?`);
  }
  return { pid, state: m[1], python: m[3], socket: m[4], reachable: `/proc/${pid}/root${m[4]}` };
}

// Makes sure the probe is loaded in pid (injecting it when needed) and says where it listens.
export async function inject(cli: string, pid: number, opts: CliOptions = {}): Promise<Injected> {
  const { stdout } = await run(cli, { kind: 'pid', pid }, ['inject'], opts);
  return parseInject(pid, stdout);
}

// RFC 4180 (what `query -f csv` prints: CRLF, quotes doubled): header and rows.
export function parseCsv(text: string): { columns: string[]; rows: string[][] } {
  const records: string[][] = [];
  let field = '';
  let record: string[] = [];
  let i = 0;
  let quoted = false;
  let any = false;
  while (i < text.length) {
    const c = text[i];
    if (quoted) {
      if (c === '"') {
        if (text[i + 1] === '"') { field += '"'; i += 2; continue; }
        quoted = false; i++; continue;
      }
      field += c; i++; continue;
    }
    if (c === '"') { quoted = true; any = true; i++; continue; }
    if (c === ',') { record.push(field); field = ''; any = true; i++; continue; }
    if (c === '\r' || c === '\n') {
      record.push(field);
      records.push(record);
      record = []; field = ''; any = false;
      i += c === '\r' && text[i + 1] === '\n' ? 2 : 1;
      continue;
    }
    field += c; any = true; i++;
  }
  if (any || field !== '' || record.length) { record.push(field); records.push(record); }
  const [columns = [], ...rows] = records;
  return { columns, rows };
}
