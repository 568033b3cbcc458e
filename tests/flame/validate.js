// SPDX-License-Identifier: MIT
// Validates speedscope JSON files against speedscope's own schema, the one its npm package
// ships (node_modules/speedscope/dist/release/file-format-schema.json, draft-07), with ajv.
// Usage: node validate.js FILE...  Prints "valid FILE" per file; exits 1 with ajv's errors
// on the first invalid one. tests/e2e/test_flamegraph.py runs it after `npm ci` here.
'use strict';
const fs = require('fs');
const path = require('path');
const Ajv = require('ajv');

const schemaPath = path.join(__dirname, 'node_modules', 'speedscope', 'dist', 'release',
                             'file-format-schema.json');
const schema = JSON.parse(fs.readFileSync(schemaPath, 'utf8'));
const ajv = new Ajv({allErrors: true, strict: false});
const validate = ajv.compile(schema); // its root is a $ref to FileFormat.File
let bad = 0;
for (const f of process.argv.slice(2)) {
  const doc = JSON.parse(fs.readFileSync(f, 'utf8'));
  if (validate(doc)) {
    console.log('valid ' + f);
  } else {
    console.log('invalid ' + f + ': ' + JSON.stringify(validate.errors, null, 1).slice(0, 4000));
    bad = 1;
  }
}
process.exit(bad);
