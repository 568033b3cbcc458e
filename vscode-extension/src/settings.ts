// SPDX-License-Identifier: MIT
// The extension's settings (documented in README.md, declared in package.json).
import * as vscode from 'vscode';
import { findCli } from './cli';

// The probing CLI: "probing.path", default "probing": a path is run as given; a bare name is
// looked up in PATH and the usual install places (cli.ts, findCli), which throws a CliError
// naming where it looked when it is nowhere.
export function cliPath(): string {
  const p = vscode.workspace.getConfiguration('probing').get<string>('path');
  return findCli(typeof p === 'string' && p.trim() !== '' ? p.trim() : 'probing');
}

// Default sampling time of "Probing: Flame Graph", in seconds.
export function flameGraphSeconds(): number {
  const s = vscode.workspace.getConfiguration('probing').get<number>('flameGraph.duration');
  return typeof s === 'number' && Number.isFinite(s) && s > 0 ? s : 5;
}
