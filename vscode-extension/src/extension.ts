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
    ...Object.entries(COMMANDS).map(([id, fn]) => vscode.commands.registerCommand(id, fn)),
  );
}

export function deactivate(): void {}
