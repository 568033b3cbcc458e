#!/usr/bin/env bash
# The pictures of docs/flamegraph.md, from a real run: samples/flamehot.py under Debian's
# python3, one perf --cc profile drawn with every native frame (--native=all: what stop 43's
# default looked like) and clean (today's default), a differential flame graph of two time
# windows, and the speedscope output opened in speedscope's own app (tests/flame's pinned
# copy); screenshots by Debian's headless chromium through playwright-core (tests/web's).
# Usage: tools/flame-pictures.sh [BUILD]   (default build/release); writes docs/img/flame-*.png
set -euo pipefail
cd "$(dirname "$0")/.."
B=${1:-build/release}
P=$PWD/$B/bin/probing
out=$PWD/docs/img
w=$(mktemp -d)
trap 'kill $pid 2>/dev/null || true; kill $srv 2>/dev/null || true; rm -rf "$w"' EXIT
[ -d tests/web/node_modules/playwright-core ] || (cd tests/web && npm ci --no-audit --no-fund)
[ -d tests/flame/node_modules/speedscope ] || (cd tests/flame && npm ci --no-audit --no-fund)
/usr/bin/python3 samples/flamehot.py > /dev/null 2>&1 &
pid=$!
sleep 1
"$P" -p $pid perf --cc > /dev/null
sleep 3
"$P" -p $pid eval "NATIVE_SECONDS = 0.01" > /dev/null
sleep 3
"$P" -p $pid perf --stop > /dev/null
"$P" -p $pid flamegraph --window :3 --native=all --width 1100 -o "$w/all.svg"
"$P" -p $pid flamegraph --window :3 --width 1100 -o "$w/clean.svg"
"$P" -p $pid flamegraph --diff-window 0:3 --width 1100 -o "$w/diff.svg"
"$P" -p $pid flamegraph --window :3 -o "$w/p.speedscope.json"
kill $pid
cp -r tests/flame/node_modules/speedscope/dist/release "$w/speedscope"
port=$((20000 + RANDOM % 20000))
(cd "$w" && exec /usr/bin/python3 -m http.server -b 127.0.0.1 $port > /dev/null 2>&1) &
srv=$!
sleep 1
W="$w" PORT=$port OUT="$out" node -e '
const { chromium } = require(process.cwd() + "/tests/web/node_modules/playwright-core");
(async () => {
  const b = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox"] });
  const p = await b.newPage({ viewport: { width: 1100, height: 560 } });
  const base = `http://127.0.0.1:${process.env.PORT}`;
  for (const n of ["all", "clean", "diff"]) {
    await p.goto(`${base}/${n}.svg`);
    await p.screenshot({ path: `${process.env.OUT}/flame-${n}.png` });
  }
  await p.goto(`${base}/speedscope/index.html#profileURL=${encodeURIComponent(base + "/p.speedscope.json")}`);
  await p.waitForTimeout(3000);
  await p.screenshot({ path: `${process.env.OUT}/flame-speedscope.png` });
  await b.close();
})().catch((e) => { console.error("flame-pictures: " + e.message); process.exit(1); });'
ls -la "$out"/flame-*.png
