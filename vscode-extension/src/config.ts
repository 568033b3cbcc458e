// SPDX-License-Identifier: MIT
// Launch configurations of type "probing": what "Add Configuration" offers, what F5 without a
// launch.json does, and the checks run once VS Code has substituted variables (processId from
// ${command:pickProcess}). The rules are plain functions (normalize) so tests run them without
// VS Code; the provider only turns a ConfigError into one message.
import * as vscode from 'vscode';

export const DEBUG_TYPE = 'probing';

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

export interface ProbingAttach {
  type: string;
  request: string;
  name: string;
  processId?: number;
  connect?: { host: string; port: number };
  token?: string;
  nativeFrames?: NativeFrames;
  [key: string]: unknown;
}

// Native frames in the call stack (the probe's attach argument, passed as it is).
export type NativeFrames = 'off' | 'merged' | 'all';
export const NATIVE_FRAMES: readonly NativeFrames[] = ['off', 'merged', 'all'];

export const PICK_CONFIGURATION = {
  type: DEBUG_TYPE,
  request: 'attach',
  name: 'Attach to Python process (probing)',
  processId: '${command:pickProcess}',
};

export const CONNECT_CONFIGURATION = {
  type: DEBUG_TYPE,
  request: 'attach',
  name: 'Attach to a probe on TCP (probing)',
  connect: { host: '127.0.0.1', port: 9922 },
  token: '${env:PROBING_TOKEN}',
};

// The configuration to use when there is none (F5 with no launch.json).
export function defaultConfiguration(config: { [key: string]: unknown }): { [key: string]: unknown } {
  if (!config.type && !config.request && !config.name) return { ...PICK_CONFIGURATION };
  return config;
}

function describe(v: unknown): string {
  return v === undefined ? 'missing' : JSON.stringify(v);
}

// Checks a configuration after variable substitution and returns it normalized (processId a
// number, connect.host defaulted); null when the process picker was dismissed (nothing to do).
export function normalize(config: { [key: string]: unknown }): ProbingAttach | null {
  if (config.request !== 'attach') {
    throw new ConfigError(`probing attaches to running processes only: set "request": "attach" ` +
                          `(got ${describe(config.request)})`);
  }
  const hasPid = config.processId !== undefined && config.processId !== null;
  const hasConnect = config.connect !== undefined && config.connect !== null;
  if (hasPid && hasConnect) {
    throw new ConfigError('give either "processId" (a local process) or "connect" (a probe on TCP), not both');
  }
  if (!hasPid && !hasConnect) {
    throw new ConfigError('say what to attach to: "processId" (a number, or "${command:pickProcess}") ' +
                          'or "connect": {"host", "port"} with "token"');
  }
  if (config.nativeFrames !== undefined && !NATIVE_FRAMES.includes(config.nativeFrames as NativeFrames)) {
    throw new ConfigError(`"nativeFrames": ${describe(config.nativeFrames)} is not one of "off", "merged", "all"`);
  }
  const out: ProbingAttach = { ...config, type: String(config.type ?? DEBUG_TYPE), request: 'attach',
                               name: String(config.name ?? 'probing') };
  if (hasPid) {
    let pid = config.processId;
    if (typeof pid === 'string') {
      if (pid.trim() === '') return null; // the picker was dismissed
      if (!/^\s*\d+\s*$/.test(pid)) {
        throw new ConfigError(`"processId": ${JSON.stringify(pid)} is not a process id: give a number ` +
                              'or "${command:pickProcess}"');
      }
      pid = Number(pid);
    }
    if (typeof pid !== 'number' || !Number.isInteger(pid) || pid <= 0 || pid > 0x7fffffff) {
      throw new ConfigError(`"processId": ${describe(config.processId)} is not a process id: give a ` +
                            'positive integer or "${command:pickProcess}"');
    }
    out.processId = pid;
    return out;
  }
  const c = config.connect;
  if (typeof c !== 'object' || c === null || Array.isArray(c)) {
    throw new ConfigError(`"connect": expected {"host": "127.0.0.1", "port": 9922}, got ${describe(c)}`);
  }
  const { host = '127.0.0.1', port } = c as { host?: unknown; port?: unknown };
  if (typeof host !== 'string' || host === '') {
    throw new ConfigError(`"connect.host": expected a host name or address, got ${describe(host)}`);
  }
  const p = typeof port === 'string' && /^\d+$/.test(port) ? Number(port) : port;
  if (typeof p !== 'number' || !Number.isInteger(p) || p < 1 || p > 65535) {
    throw new ConfigError(`"connect.port": expected a port number (1 to 65535), got ${describe(port)}`);
  }
  if (typeof config.token !== 'string' || config.token === '') {
    throw new ConfigError('"token" is missing: a probe on TCP admits only clients that send its token ' +
                          '(printed by \'probing inject --listen\' and \'probing debug --pause\')');
  }
  out.connect = { host: host.replace(/^\[(.*)\]$/, '$1'), port: p };
  return out;
}

export class ProbingConfigurationProvider implements vscode.DebugConfigurationProvider {
  provideDebugConfigurations(): vscode.DebugConfiguration[] {
    return [{ ...PICK_CONFIGURATION }];
  }

  resolveDebugConfiguration(_folder: vscode.WorkspaceFolder | undefined,
                            config: vscode.DebugConfiguration): vscode.DebugConfiguration {
    return defaultConfiguration(config) as vscode.DebugConfiguration;
  }

  resolveDebugConfigurationWithSubstitutedVariables(_folder: vscode.WorkspaceFolder | undefined,
                                                    config: vscode.DebugConfiguration):
    vscode.DebugConfiguration | undefined {
    try {
      const c = normalize(config);
      return c === null ? undefined : (c as vscode.DebugConfiguration);
    } catch (e) {
      if (!(e instanceof ConfigError)) throw e;
      void vscode.window.showErrorMessage(`probing: launch configuration "${config.name ?? ''}": ${e.message}`);
      return undefined;
    }
  }
}
