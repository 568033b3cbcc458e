// SPDX-License-Identifier: MIT
// A small stand-in for the `vscode` module (which exists only inside VS Code): the parts the
// extension uses, recording what the extension asked for (messages, quick picks, webviews,
// documents, registrations) and answering from what a test scripted (fake.answers).
'use strict';

class Uri {
  constructor(scheme, p, query) { this.scheme = scheme; this.path = p; this.query = query; }
  static parse(s) {
    const m = /^([a-z][a-z0-9+.-]*):([^?]*)(?:\?(.*))?$/i.exec(s);
    if (!m) throw new Error(`fake Uri.parse: ${s}`);
    return new Uri(m[1], m[2], m[3] || '');
  }
  static file(p) { return new Uri('file', p, ''); }
  toString() { return `${this.scheme}:${this.path}${this.query ? '?' + this.query : ''}`; }
}

class DebugAdapterServer {
  constructor(port, host) { this.port = port; this.host = host; }
}

class DebugAdapterNamedPipeServer {
  constructor(p) { this.path = p; }
}

class Disposable {
  constructor(fn) { this.fn = fn; }
  dispose() { if (this.fn) this.fn(); }
}

const state = {
  settings: {},          // 'probing.path' -> value
  messages: [],          // {level, text}
  quickPicks: [],        // {items, options}
  inputBoxes: [],        // options
  panels: [],            // fake webview panels
  documents: [],         // opened documents {uri, text}
  shown: [],             // documents shown
  commands: new Map(),   // id -> fn
  configProviders: new Map(),
  factories: new Map(),
  contentProviders: new Map(),
  started: [],           // startDebugging calls {folder, config}
  progress: [],          // withProgress titles and reports
  output: [],            // output channel lines
  customEventListeners: [], // onDidReceiveDebugSessionCustomEvent
};
// Scripted answers: functions called with what the extension showed.
const answers = {
  quickPick: () => undefined,   // (items, options) -> item | undefined
  inputBox: () => undefined,    // (options) -> string | undefined
  startDebugging: () => true,
};

function reset() {
  state.settings = {};
  for (const k of ['messages', 'quickPicks', 'inputBoxes', 'panels', 'documents', 'shown', 'started', 'progress', 'output', 'customEventListeners']) state[k] = [];
  for (const k of ['commands', 'configProviders', 'factories', 'contentProviders']) state[k] = new Map();
  answers.quickPick = () => undefined;
  answers.inputBox = () => undefined;
  answers.startDebugging = () => true;
  debug.activeDebugSession = undefined;
}

const window = {
  showErrorMessage: async (text) => { state.messages.push({ level: 'error', text }); return undefined; },
  showWarningMessage: async (text) => { state.messages.push({ level: 'warning', text }); return undefined; },
  showInformationMessage: async (text) => { state.messages.push({ level: 'info', text }); return undefined; },
  showQuickPick: async (items, options) => {
    const list = await items;
    state.quickPicks.push({ items: list, options });
    return answers.quickPick(list, options);
  },
  showInputBox: async (options) => {
    state.inputBoxes.push(options);
    const v = answers.inputBox(options);
    if (v !== undefined && options && options.validateInput) {
      const err = await options.validateInput(v);
      if (err) throw new Error(`fake showInputBox: the extension's validateInput refused ${JSON.stringify(v)}: ${err}`);
    }
    return v;
  },
  createWebviewPanel: (viewType, title, column, options) => {
    const panel = { viewType, title, column, options, webview: { html: '' }, dispose() {} };
    state.panels.push(panel);
    return panel;
  },
  withProgress: async (options, task) => {
    state.progress.push({ title: options.title, reports: [] });
    const entry = state.progress[state.progress.length - 1];
    return task({ report: (r) => entry.reports.push(r) }, { isCancellationRequested: false });
  },
  showTextDocument: async (doc, options) => { state.shown.push({ doc, options }); return {}; },
  createOutputChannel: (name) => ({ name, appendLine: (l) => state.output.push(l), dispose() {} }),
};

const workspace = {
  workspaceFolders: undefined,
  getConfiguration: (section) => ({
    get: (key, dflt) => {
      const full = section ? `${section}.${key}` : key;
      return full in state.settings ? state.settings[full] : dflt;
    },
  }),
  registerTextDocumentContentProvider: (scheme, provider) => {
    state.contentProviders.set(scheme, provider);
    return new Disposable(() => state.contentProviders.delete(scheme));
  },
  openTextDocument: async (uri) => {
    const provider = state.contentProviders.get(uri.scheme);
    if (!provider) throw new Error(`fake openTextDocument: no content provider for ${uri.scheme}`);
    const doc = { uri, text: await provider.provideTextDocumentContent(uri), getText() { return this.text; } };
    state.documents.push(doc);
    return doc;
  },
};

const debug = {
  activeDebugSession: undefined,
  registerDebugConfigurationProvider: (type, provider) => {
    state.configProviders.set(type, provider);
    return new Disposable();
  },
  registerDebugAdapterDescriptorFactory: (type, factory) => {
    state.factories.set(type, factory);
    return new Disposable();
  },
  onDidReceiveDebugSessionCustomEvent: (listener) => {
    state.customEventListeners.push(listener);
    return new Disposable(() => state.customEventListeners.splice(state.customEventListeners.indexOf(listener), 1));
  },
  startDebugging: async (folder, config) => {
    state.started.push({ folder, config });
    return answers.startDebugging(folder, config);
  },
};

const commands = {
  registerCommand: (id, fn) => {
    if (state.commands.has(id)) throw new Error(`fake registerCommand: ${id} registered twice`);
    state.commands.set(id, fn);
    return new Disposable(() => state.commands.delete(id));
  },
  executeCommand: async (id, ...args) => {
    const fn = state.commands.get(id);
    if (!fn) throw new Error(`fake executeCommand: command '${id}' not found`);
    return fn(...args);
  },
};

module.exports = {
  Uri, DebugAdapterServer, DebugAdapterNamedPipeServer, Disposable,
  ProgressLocation: { SourceControl: 1, Window: 10, Notification: 15 },
  ViewColumn: { Active: -1, Beside: -2, One: 1 },
  window, workspace, debug, commands,
  // Test side:
  fake: { state, answers, reset },
};
