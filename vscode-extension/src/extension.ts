// SPDX-License-Identifier: MIT
// Entry point: registers the "probing" debug type's configuration provider and adapter factory,
// the commands, and the read-only stack dump documents. Activated only by its commands or a
// probing debug session (package.json activationEvents).
import * as vscode from 'vscode';
import { DUMP_SCHEME, DumpDocuments, attach, dumpStacks, flameGraph, pickProcess, runSql } from './commands';
import { DEBUG_TYPE, ProbingConfigurationProvider } from './config';
import { ProbingAdapterFactory } from './descriptor';

export const COMMANDS = {
  'probing.attach': attach,
  'probing.pickProcess': pickProcess,
  'probing.runSql': runSql,
  'probing.flameGraph': flameGraph,
};

export function activate(context: vscode.ExtensionContext): void {
  const log = vscode.window.createOutputChannel('Probing');
  const docs = new DumpDocuments();
  context.subscriptions.push(
    log,
    vscode.debug.registerDebugConfigurationProvider(DEBUG_TYPE, new ProbingConfigurationProvider()),
    vscode.debug.registerDebugAdapterDescriptorFactory(DEBUG_TYPE, new ProbingAdapterFactory((l) => log.appendLine(l))),
    vscode.workspace.registerTextDocumentContentProvider(DUMP_SCHEME, docs),
    vscode.commands.registerCommand('probing.dumpStacks', () => dumpStacks(docs)),
    vscode.debug.onDidReceiveDebugSessionCustomEvent(onCustomEvent),
    ...Object.entries(COMMANDS).map(([id, fn]) => vscode.commands.registerCommand(id, fn)),
  );
}

// The probe closes a connection it does not keep (at a limit: connections, descriptors kept
// for the target) after a `probing/refused` event saying why and what to do; VS Code itself
// then reports only a closed connection.
export function onCustomEvent(e: vscode.DebugSessionCustomEvent): void {
  if (e.session.type !== DEBUG_TYPE || e.event !== 'probing/refused') return;
  const reason = e.body && typeof e.body.reason === 'string' ? e.body.reason : 'a limit of the probe';
  const fix = e.body && typeof e.body.fix === 'string' ? `: ${e.body.fix}` : '';
  void vscode.window.showErrorMessage(`Probing: the probe refused the connection: ${reason}${fix}`);
}

export function deactivate(): void {}
