// SPDX-License-Identifier: MIT
// make bench, probing serve's part (tests/bench/bench_serve.py runs it): a page's first render
// in Debian's headless Chromium against a running server. Usage: node bench.js URL PID RUNS.
// For each view, RUNS fresh pages: the time from navigation start to the first data row in the
// DOM (performance.now() in the page, taken by a MutationObserver installed before any script
// runs), and the same to the load event. Prints one JSON object {view: {render: [ms...],
// load: [ms...]}}.
'use strict';
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const {chromium} = require('playwright-core');

async function main() {
  const [url, pid, runs] = process.argv.slice(2);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'probing-web-bench-'));
  const ctx = await chromium.launchPersistentContext(path.join(tmp, 'profile'), {
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
           '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  const views = [['processes', '', '#procs tbody tr'],
                 ['stacks', '#/p/' + pid + '/stacks', '#threads .thread']];
  const out = {};
  try {
    for (const [name, hash, sel] of views) {
      out[name] = {render: [], load: []};
      for (let i = 0; i < Number(runs) + 1; i++) {
        const page = await ctx.newPage();
        await page.addInitScript((s) => {
          new MutationObserver((_, obs) => {
            if (document.querySelector(s)) {
              window.__rendered = performance.now();
              obs.disconnect();
            }
          }).observe(document, {childList: true, subtree: true});
        }, sel);
        await page.goto(url + hash);
        await page.waitForFunction(() => window.__rendered !== undefined, null, {timeout: 30000});
        const r = await page.evaluate(() => [window.__rendered,
                                             performance.getEntriesByType('navigation')[0].loadEventEnd]);
        if (i > 0) { // the first page warms the browser's caches: not counted
          out[name].render.push(r[0]);
          out[name].load.push(r[1]);
        }
        await page.close();
      }
    }
  } finally {
    await ctx.close();
    fs.rmSync(tmp, {recursive: true, force: true});
  }
  console.log(JSON.stringify(out));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
