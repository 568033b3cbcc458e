// SPDX-License-Identifier: MIT
// Validation of every DAP message against the official JSON schema (draft-04).
//
// A request `fooBar` is checked against `FooBarRequest` when the schema defines it, else against
// the base `Request`; a successful response against `FooBarResponse` (else `Response`), an error
// response against `ErrorResponse`; an event `baz` against `BazEvent` (else `Event`). The
// schema's integer formats (int32, uint32, int64, uint64) are enforced as ranges.
'use strict';

const fs = require('node:fs');
const path = require('node:path');
const Ajv = require('ajv-draft-04');

// The official schema (Microsoft's debugAdapterProtocol.json), kept in the
// repository so a clean clone tests against it anywhere.
const SCHEMA_PATH = process.env.DAP_SCHEMA ||
  path.resolve(__dirname, '..', 'schema', 'debugAdapterProtocol.json');

const RANGES = {
  int32: [-(2 ** 31), 2 ** 31 - 1],
  uint32: [0, 2 ** 32 - 1],
  int64: [-Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER],
  uint64: [0, Number.MAX_SAFE_INTEGER],
};

let cached = null;

function load() {
  if (cached) return cached;
  if (!fs.existsSync(SCHEMA_PATH)) {
    throw new Error(`DAP schema not found at ${SCHEMA_PATH} (set DAP_SCHEMA to its path)`);
  }
  const schema = JSON.parse(fs.readFileSync(SCHEMA_PATH, 'utf8'));
  // strict: false: the DAP schema carries its own annotations (_enum, enumDescriptions, title).
  const ajv = new Ajv({ strict: false, allErrors: true });
  for (const [name, [lo, hi]] of Object.entries(RANGES)) {
    ajv.addFormat(name, { type: 'number', validate: (n) => Number.isInteger(n) && n >= lo && n <= hi });
  }
  ajv.addSchema(schema, 'dap');
  const defs = new Set(Object.keys(schema.definitions));
  const validators = new Map();
  const get = (def) => {
    let v = validators.get(def);
    if (!v) {
      v = ajv.getSchema(`dap#/definitions/${def}`);
      if (!v) throw new Error(`schema has no definition ${def}`);
      validators.set(def, v);
    }
    return v;
  };
  cached = { defs, get, ajv };
  return cached;
}

const cap = (s) => s.charAt(0).toUpperCase() + s.slice(1);

// The definition a message must satisfy, by the rules above.
function definitionFor(msg) {
  const { defs } = load();
  const pick = (specific, base) => (defs.has(specific) ? specific : base);
  if (msg && msg.type === 'request' && typeof msg.command === 'string') {
    return pick(`${cap(msg.command)}Request`, 'Request');
  }
  if (msg && msg.type === 'response' && typeof msg.command === 'string') {
    if (msg.success === false) return 'ErrorResponse';
    return pick(`${cap(msg.command)}Response`, 'Response');
  }
  if (msg && msg.type === 'event' && typeof msg.event === 'string') {
    return pick(`${cap(msg.event)}Event`, 'Event');
  }
  return 'ProtocolMessage';
}

// Returns null when msg is valid, else a one-line description of what is wrong.
function check(msg) {
  const def = definitionFor(msg);
  const v = load().get(def);
  if (v(msg)) {
    // The envelope must always be right too (a specific definition includes it via allOf, but
    // ProtocolMessage alone says nothing about request/response/event).
    if (def === 'ProtocolMessage') return `${def}: type must be request, response or event with command/event`;
    return null;
  }
  const errs = load().ajv.errorsText(v.errors, { separator: '; ', dataVar: 'message' });
  return `${def}: ${errs}`;
}

module.exports = { check, definitionFor, SCHEMA_PATH };
