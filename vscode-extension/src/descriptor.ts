// SPDX-License-Identifier: MIT
// Where VS Code's debug session goes. The probe is the debug adapter, so there is nothing to
// launch: for a processId, the CLI makes sure the probe is loaded (`probing -p PID inject`) and
// says where its Unix socket is, and VS Code connects straight to it; for `connect`, VS Code
// connects to the probe's TCP address and the token travels in `attach` (the configuration is
// the attach request's arguments).
import * as vscode from 'vscode';
import { inject } from './cli';
import { normalize } from './config';
import { cliPath } from './settings';

export class ProbingAdapterFactory implements vscode.DebugAdapterDescriptorFactory {
  // Set by tests (and the output channel): called with each line worth logging.
  constructor(private readonly log: (line: string) => void = () => {}) {}

  async createDebugAdapterDescriptor(session: vscode.DebugSession): Promise<vscode.DebugAdapterDescriptor> {
    const config = normalize(session.configuration);
    if (config === null) throw new Error('probing: no process was picked');
    if (config.connect) {
      this.log(`connecting to the probe at ${config.connect.host}:${config.connect.port}`);
      return new vscode.DebugAdapterServer(config.connect.port, config.connect.host);
    }
    const pid = config.processId as number;
    const cli = cliPath();
    const injected = await inject(cli, pid);
    this.log(`probe ${injected.state} in ${pid} (CPython ${injected.python}), connecting to ${injected.reachable}`);
    return new vscode.DebugAdapterNamedPipeServer(injected.reachable);
  }
}
