// SPDX-License-Identifier: MIT
// The extension's settings (documented in README.md, declared in package.json).
import * as vscode from 'vscode';

// The probing CLI: "probing.path", default "probing" (looked up in PATH).
export function cliPath(): string {
  const p = vscode.workspace.getConfiguration('probing').get<string>('path');
  return typeof p === 'string' && p.trim() !== '' ? p.trim() : 'probing';
}

// Default sampling time of "Probing: Flame Graph", in seconds.
export function flameGraphSeconds(): number {
  const s = vscode.workspace.getConfiguration('probing').get<number>('flameGraph.duration');
  return typeof s === 'number' && Number.isFinite(s) && s > 0 ? s : 5;
}
