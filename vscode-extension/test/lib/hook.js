// SPDX-License-Identifier: MIT
// Makes require('vscode') load the fake (test/lib/fake-vscode.js): the compiled extension in
// out/ is then loaded unchanged, as VS Code would load it.
'use strict';

const Module = require('node:module');
const path = require('node:path');

const FAKE = path.join(__dirname, 'fake-vscode.js');
const original = Module._resolveFilename;
Module._resolveFilename = function resolve(request, ...rest) {
  if (request === 'vscode') return FAKE;
  return original.call(this, request, ...rest);
};

const vscode = require(FAKE);
const OUT = path.resolve(__dirname, '..', '..', 'out');
module.exports = { vscode, fake: vscode.fake, OUT, ext: (name) => require(path.join(OUT, name)) };
