// SPDX-License-Identifier: MIT
// Declares one node:test test per (case, interpreter), run DAP_JOBS at a time (default 3).
'use strict';

const { describe, test } = require('node:test');
const { pythons } = require('./target');
const { withTarget } = require('./harness');

const JOBS = Number(process.env.DAP_JOBS || 3);
const PYTHONS = pythons();
const TEST_TIMEOUT = Number(process.env.DAP_TEST_TIMEOUT || 60000);

// cases: [{name, body(ctx), allowErr?, sample?}] (sample: a file of samples/, default debuggee.py)
function suite(title, cases) {
  describe(title, { concurrency: JOBS }, () => {
    if (PYTHONS.length === 0) {
      test('interpreters', () => { throw new Error('no interpreter found (tools/pythons.sh, DAP_PYTHONS)'); });
    }
    for (const c of cases) {
      for (const py of PYTHONS) {
        test(`${c.name} [${py.id}]`, { timeout: TEST_TIMEOUT },
             () => withTarget(py, c.body, { allowErr: c.allowErr, sample: c.sample }));
      }
    }
  });
}

module.exports = { suite, PYTHONS };
