// SPDX-License-Identifier: MIT
// ProbeClient: Microsoft's DebugClient (@vscode/debugadapter-testsupport) speaking to the probe
// over its Unix socket (or TCP), with every message in both directions checked against the DAP
// schema, every request bounded in time, and every event kept in a log so that a test can wait
// for an event that may already have arrived.
'use strict';

const net = require('node:net');
const { DebugClient } = require('@vscode/debugadapter-testsupport');
const schema = require('./schema');

const REQUEST_TIMEOUT = Number(process.env.DAP_REQUEST_TIMEOUT || 10000);

class ProbeClient extends DebugClient {
  constructor(label = 'client') {
    super('unused', 'unused', 'probing');
    this.label = label;
    this.defaultTimeout = 10000;
    this.violations = [];   // schema or protocol violations, in both directions
    this.messages = [];     // every message, {dir: 'out'|'in', msg}
    this.events = [];       // every event received, in order
    this.commands = new Map(); // request seq -> command, for checking responses
    this.closed = false;
    this.closedPromise = new Promise((resolve) => { this._resolveClosed = resolve; });
    this.eventWaiters = new Set();
  }

  // ---- transport ----

  _attachSocket(sock, what) {
    this.sock = sock;
    sock.on('close', () => {
      this.closed = true;
      this._resolveClosed();
      for (const w of [...this.eventWaiters]) w();
    });
    sock.on('error', (e) => { this.socketError = e; });
    // The writable handed to ProtocolClient.connect: every frame the library writes (one write
    // call per message) is parsed and validated before it goes on the wire.
    const tap = {
      write: (data, encoding) => {
        this._checkOutgoing(typeof data === 'string' ? data : data.toString('utf8'));
        return sock.write(data, encoding);
      },
    };
    this.connect(sock, tap);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${this.label}: could not connect to ${what} within 5000 ms`)), 5000);
      sock.once('connect', () => { clearTimeout(timer); resolve(); });
      sock.once('error', (e) => { clearTimeout(timer); reject(new Error(`${this.label}: connect to ${what}: ${e.message}`)); });
    });
  }

  openUnix(socketPath) { return this._attachSocket(net.createConnection(socketPath), socketPath); }

  openTcp(host, port) { return this._attachSocket(net.createConnection(port, host), `${host}:${port}`); }

  close() {
    if (this.sock && !this.sock.destroyed) this.sock.destroy();
  }

  waitClosed(timeout = 5000) {
    let timer;
    return Promise.race([
      this.closedPromise,
      new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`${this.label}: connection not closed by the probe within ${timeout} ms`)), timeout); }),
    ]).finally(() => clearTimeout(timer));
  }

  // ---- validation hooks ----

  _violation(dir, msg, what) {
    const brief = JSON.stringify(msg);
    this.violations.push(`${this.label} ${dir === 'out' ? 'sent' : 'received'} ${what}: ${brief.length > 600 ? brief.slice(0, 600) + '...' : brief}`);
  }

  _checkOutgoing(frame) {
    const m = /^Content-Length: (\d+)\r\n\r\n/.exec(frame);
    if (!m) { this.violations.push(`${this.label}: unframed write ${JSON.stringify(frame.slice(0, 100))}`); return; }
    let msg;
    try { msg = JSON.parse(frame.slice(m[0].length)); } catch (e) {
      this.violations.push(`${this.label}: outgoing body is not JSON: ${e.message}`); return;
    }
    if (Buffer.byteLength(frame.slice(m[0].length), 'utf8') !== Number(m[1])) {
      this.violations.push(`${this.label}: outgoing Content-Length mismatch`);
    }
    this.messages.push({ dir: 'out', msg });
    if (msg.type === 'request') this.commands.set(msg.seq, msg.command);
    const err = schema.check(msg);
    if (err) this._violation('out', msg, err);
  }

  // ProtocolClient.dispatch(body) gets every incoming message body: validate, log, pass on.
  dispatch(body) {
    let msg;
    try { msg = JSON.parse(body); } catch (e) {
      this.violations.push(`${this.label} received a body that is not JSON (${e.message}): ${body.slice(0, 200)}`);
      return;
    }
    this.messages.push({ dir: 'in', msg });
    const err = schema.check(msg);
    if (err) this._violation('in', msg, err);
    if (msg.type === 'response') {
      const cmd = this.commands.get(msg.request_seq);
      if (cmd === undefined) this._violation('in', msg, `response to unknown request_seq ${msg.request_seq}`);
      else if (cmd !== msg.command) this._violation('in', msg, `response command '${msg.command}' for request '${cmd}'`);
      if (!msg.success && typeof msg.message !== 'string') this._violation('in', msg, 'error response without message');
    } else if (msg.type === 'event') {
      this.events.push(msg);
      for (const w of [...this.eventWaiters]) w();
    } else if (msg.type === 'request') {
      this._violation('in', msg, 'reverse request (the probe sends none)');
    }
    super.dispatch(body);
  }

  // ---- requests, bounded ----

  // The library's send() (used by all its xxxRequest methods) rejects with Error(message) on an
  // error response; here it is also bounded in time and by the connection closing.
  send(command, args) {
    return this._bounded(super.send(command, args), command).catch((e) => {
      const what = `${this.label}: '${command}'${args === undefined ? '' : ' ' + JSON.stringify(args)}`;
      throw new Error(e.message.startsWith(`${this.label}: `) ? e.message : `${what} failed: ${e.message}`);
    });
  }

  // Any response, success or not, as the full message.
  request(command, args, timeout = REQUEST_TIMEOUT) {
    const p = new Promise((resolve) => { this.doSend(command, args, resolve); });
    return this._bounded(p, command, timeout);
  }

  // A request that must fail: returns the error response.
  async requestError(command, args, timeout) {
    const r = await this.request(command, args, timeout);
    if (r.success) throw new Error(`${this.label}: '${command}' ${JSON.stringify(args)} succeeded but should have failed: ${JSON.stringify(r.body)}`);
    return r;
  }

  _bounded(p, command, timeout = REQUEST_TIMEOUT) {
    let timer;
    const limit = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${this.label}: no response to '${command}' within ${timeout} ms`)), timeout);
    });
    const closed = this.closedPromise.then(() => new Promise((_, reject) => {
      // Let a response that arrived together with the close be dispatched first.
      setImmediate(() => reject(new Error(`${this.label}: connection closed before the response to '${command}'`)));
    }));
    return Promise.race([p, limit, closed]).finally(() => clearTimeout(timer));
  }

  // ---- events ----

  // Position in the event log (for waitEvent's `since`).
  mark() { return this.events.length; }

  // Waits for an event of type `event` (and matching `pred`) received at or after position
  // `since` (default: the start of the log); consumes nothing. Bounded.
  waitEvent(event, { pred = () => true, since = 0, timeout = this.defaultTimeout } = {}) {
    return new Promise((resolve, reject) => {
      const check = () => {
        for (let i = since; i < this.events.length; i++) {
          const e = this.events[i];
          if (e.event === event && pred(e)) { done(); resolve(e); return true; }
        }
        if (this.closed) { done(); reject(new Error(`${this.label}: connection closed while waiting for event '${event}'`)); return true; }
        return false;
      };
      const timer = setTimeout(() => {
        done();
        const seen = this.events.slice(since).map((e) => e.event + (e.body && e.body.reason ? `(${e.body.reason})` : ''));
        reject(new Error(`${this.label}: no '${event}' event within ${timeout} ms (events since: ${JSON.stringify(seen.slice(-10))})`));
      }, timeout);
      const done = () => { clearTimeout(timer); this.eventWaiters.delete(check); };
      this.eventWaiters.add(check);
      check();
    });
  }

  eventsSince(since, event) { return this.events.slice(since).filter((e) => !event || e.event === event); }

  // ---- session set-up ----

  // initialize (checking the `initialized` event follows the response), attach, and for a
  // debugging client configurationDone. Returns the capabilities.
  async handshake({ attachArgs = {}, configure = true } = {}) {
    // What VS Code sends from a launch configuration; never empty, since the library drops an
    // empty `arguments` and AttachRequest requires it.
    attachArgs = { type: 'probing', request: 'attach', name: `dap tests (${this.label})`, ...attachArgs };
    const init = await this.initializeRequest({
      clientID: 'probing-dap-tests', adapterID: 'probing', linesStartAt1: true, columnsStartAt1: true,
      pathFormat: 'path', supportsVariableType: true, supportsVariablePaging: true,
    });
    this.capabilities = init.body || {};
    const initialized = await this.waitEvent('initialized');
    const iResp = this.messages.findIndex((m) => m.dir === 'in' && m.msg.type === 'response' && m.msg.command === 'initialize');
    const iEvt = this.messages.findIndex((m) => m.msg === initialized);
    if (!(iResp >= 0 && iEvt > iResp)) this.violations.push(`${this.label}: 'initialized' event came before the initialize response`);
    await this.attachRequest(attachArgs);
    if (configure) await this.configurationDoneRequest();
    return this.capabilities;
  }
}

module.exports = { ProbeClient, REQUEST_TIMEOUT };
