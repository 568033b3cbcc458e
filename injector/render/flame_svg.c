/* SPDX-License-Identifier: MIT */
/* A self-contained interactive flame graph as SVG (flame.h): inline CSS and JavaScript, no
 * network. Icicle layout: the outermost frame ("all") on top, callees below their callers;
 * widths proportional to samples; Python frames in blues, native frames in oranges. Click a
 * frame to zoom to it, click "all" or press Escape to reset; the search box (Ctrl-F focuses
 * it, Enter or "Search" runs it) highlights frames matching a regular expression and shows the
 * share of samples they cover. The URL
 * fragment "#search=RE" runs a search on load (used by tests/e2e/test_flamegraph.py).
 * With a "before" profile (flame_svg_opts.before) it is a differential flame graph: the same
 * shape, each frame coloured by the change of its share of all samples (data-delta). */
#include <string.h>

#include "flame.h"

#define ROW 16     /* frame height in pixels */
#define TOP 52     /* first row's y */
#define PAD 10     /* left and right margin */
#define CHAR_W 7.0 /* average glyph width at font-size 12 */

/* The script, our own: zoom, reset, search with matched percentage, hover details. */
/* The URL fragment may also hold "zoom=RE": zoom to the widest frame matching RE on load. */
static const char script[] =
    "var W, X0, XW, svg, frames, details, matched, zoomedTo = null, term = null;\n"
    "function num(g, k) { return parseFloat(g.getAttribute('data-' + k)); }\n"
    "function fname(g) { return g.querySelector('title').textContent.split('\\n')[0]; }\n"
    "function init() {\n"
    "  svg = document.documentElement;\n"
    "  W = parseFloat(svg.getAttribute('width')); X0 = "
    "10"
    "; XW = W - 2 * X0;\n"
    "  frames = Array.prototype.slice.call(document.querySelectorAll('g.f'));\n"
    "  details = document.getElementById('details');\n"
    "  matched = document.getElementById('matched');\n"
    "  document.getElementById('frames').addEventListener('click', function (e) {\n"
    "    var g = e.target.closest ? e.target.closest('g.f') : null;\n"
    "    if (g) { if (num(g, 'd') === 0) resetZoom(); else zoom(g); }\n"
    "  });\n"
    "  document.getElementById('frames').addEventListener('mouseover', function (e) {\n"
    "    var g = e.target.closest ? e.target.closest('g.f') : null;\n"
    "    if (g) details.textContent = g.querySelector('title').textContent.replace('\\n', ': ');\n"
    "  });\n"
    "  document.getElementById('reset').addEventListener('click', resetZoom);\n"
    "  var q = document.getElementById('q');\n"
    "  document.getElementById('search').addEventListener('click', function () {\n"
    "    if (term !== null && q.value === term) { q.value = ''; clearSearch(); return; }\n"
    "    if (q.value) search(q.value); else q.focus();\n"
    "  });\n"
    "  q.addEventListener('keydown', function (e) {\n"
    "    if (e.key === 'Enter') { e.preventDefault(); if (q.value) search(q.value); else "
    "clearSearch(); }\n"
    "  });\n"
    "  window.addEventListener('keydown', function (e) {\n"
    "    if ((e.ctrlKey || e.metaKey) && e.key === 'f') { e.preventDefault(); q.focus(); "
    "q.select(); }\n"
    "    else if (e.key === 'Escape') { resetZoom(); q.value = ''; clearSearch(); }\n"
    "  });\n"
    "  var m = /[#&]search=([^&]*)/.exec(window.location.hash);\n"
    "  if (m) { q.value = decodeURIComponent(m[1]); search(q.value); }\n"
    "  m = /[#&]zoom=([^&]*)/.exec(window.location.hash);\n"
    "  if (m) zoomTo(decodeURIComponent(m[1]));\n"
    "}\n"
    "function label(g, w) {\n"
    "  var t = g.querySelector('text'), name = fname(g), n = Math.floor((w - 6) / 7);\n"
    "  t.textContent = n < 3 ? '' : name.length <= n ? name : name.substring(0, n - 2) + '..';\n"
    "}\n"
    "function place(g, x, w, show, faded) {\n"
    "  var r = g.querySelector('rect'), t = g.querySelector('text');\n"
    "  g.style.display = show ? '' : 'none';\n"
    "  if (!show) return;\n"
    "  r.setAttribute('x', x.toFixed(2)); r.setAttribute('width', w.toFixed(2));\n"
    "  t.setAttribute('x', (x + 3).toFixed(2));\n"
    "  g.classList.toggle('anc', !!faded);\n"
    "  label(g, w);\n"
    "}\n"
    "function zoom(z) {\n"
    "  var zx = num(z, 'x'), zw = num(z, 'w'), zd = num(z, 'd'), s = XW / zw;\n"
    "  zoomedTo = z;\n"
    "  svg.setAttribute('data-zoomed', fname(z));\n"
    "  frames.forEach(function (g) {\n"
    "    var x = num(g, 'x'), w = num(g, 'w'), d = num(g, 'd');\n"
    "    if (d < zd) place(g, X0, XW, x <= zx + 1e-9 && x + w >= zx + zw - 1e-9, true);\n"
    "    else if (x >= zx - 1e-9 && x + w <= zx + zw + 1e-9) place(g, X0 + (x - zx) * s, w * s, w "
    "* s >= 0.1, false);\n"
    "    else place(g, 0, 0, false, false);\n"
    "  });\n"
    "  document.getElementById('reset').style.display = '';\n"
    "}\n"
    "function zoomTo(t) {\n"
    "  var re = new RegExp(t), best = null;\n"
    "  frames.forEach(function (g) {\n"
    "    if (num(g, 'd') > 0 && re.test(fname(g)) && (!best || num(g, 'w') > num(best, 'w'))) best "
    "= g;\n"
    "  });\n"
    "  if (best) zoom(best);\n"
    "}\n"
    "function resetZoom() {\n"
    "  zoomedTo = null;\n"
    "  svg.removeAttribute('data-zoomed');\n"
    "  frames.forEach(function (g) { place(g, X0 + num(g, 'x') * XW, num(g, 'w') * XW, true, "
    "false); });\n"
    "  document.getElementById('reset').style.display = 'none';\n"
    "}\n"
    "function search(t) {\n"
    "  var re;\n"
    "  try { re = new RegExp(t); } catch (e) { re = new RegExp(t.replace(/[.*+?^${}()|[\\]\\\\]/g, "
    "'\\\\$&')); }\n"
    "  term = t;\n"
    "  var spans = [];\n"
    "  frames.forEach(function (g) {\n"
    "    var hit = num(g, 'd') > 0 && re.test(fname(g));\n"
    "    g.classList.toggle('hit', hit);\n"
    "    if (hit) spans.push([num(g, 'x'), num(g, 'x') + num(g, 'w')]);\n"
    "  });\n"
    "  spans.sort(function (a, b) { return a[0] - b[0]; });\n"
    "  var covered = 0, end = -1;\n"
    "  spans.forEach(function (s) {\n"
    "    if (s[0] >= end) { covered += s[1] - s[0]; end = s[1]; }\n"
    "    else if (s[1] > end) { covered += s[1] - end; end = s[1]; }\n"
    "  });\n"
    "  var pct = (100 * covered).toFixed(1);\n"
    "  matched.textContent = spans.length ? 'Matched: ' + pct + '% (' + spans.length + "
    "(spans.length === 1 ? ' frame)' : ' frames)') : 'No match';\n"
    "  svg.setAttribute('data-matched', spans.length ? pct : '0');\n"
    "  svg.setAttribute('data-matched-frames', String(spans.length));\n"
    "  document.getElementById('search').textContent = 'Clear';\n"
    "}\n"
    "function clearSearch() {\n"
    "  term = null;\n"
    "  frames.forEach(function (g) { g.classList.remove('hit'); });\n"
    "  matched.textContent = '';\n"
    "  svg.removeAttribute('data-matched');\n"
    "  svg.removeAttribute('data-matched-frames');\n"
    "  document.getElementById('search').textContent = 'Search';\n"
    "}\n"
    "window.addEventListener('load', init);\n";

static const char style[] =
    "text { font-family: monospace; font-size: 12px; fill: #000; }\n"
    "#title { font-size: 17px; text-anchor: middle; }\n"
    "#subtitle { fill: #555; text-anchor: middle; }\n"
    ".button { cursor: pointer; fill: #1a4d8f; text-decoration: underline; }\n"
    "#matched { text-anchor: end; }\n"
    "g.f { cursor: pointer; }\n"
    "g.f text { pointer-events: none; }\n"
    "g.f:hover rect { stroke: #000; stroke-width: 0.5; }\n"
    "g.anc { opacity: 0.55; }\n"
    "g.hit rect { fill: rgb(230,0,230) !important; }\n";

/* FNV-1a: a stable colour per name, so the same function has the same colour in every
 * graph. */
static unsigned hash(const char *s)
{
    unsigned h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

static void colour(const struct flame_node *n, char *buf, size_t len)
{
    if (n->kind == FLAME_ROOT) {
        snprintf(buf, len, "rgb(200,200,200)");
        return;
    }
    unsigned h = hash(n->name);
    unsigned a = h % 60, b = (h >> 8) % 50;
    if (n->kind == FLAME_PYTHON)
        snprintf(buf, len, "rgb(%u,%u,240)", 70 + a, 150 + b);
    else
        snprintf(buf, len, "rgb(240,%u,%u)", 120 + a + b, 40 + a / 2);
}

/* The label drawn inside a frame w pixels wide: as much of the name as fits, ".." when cut
 * (the script uses the same rule after a zoom). Cuts only at UTF-8 character boundaries. */
static void write_label(FILE *f, const char *name, double w)
{
    int fit = (int)((w - 6) / CHAR_W);
    if (fit < 3)
        return;
    size_t chars = 0, i = 0, cut = 0, n = strlen(name);
    while (i < n) {
        size_t l = flame_utf8_len(name + i);
        i += l ? l : 1;
        chars++;
        if (chars == (size_t)fit - 2)
            cut = i;
    }
    if (chars <= (size_t)fit) {
        flame_xml_escape(f, name);
        return;
    }
    char buf[1024];
    if (cut >= sizeof buf)
        cut = sizeof buf - 1;
    memcpy(buf, name, cut);
    buf[cut] = '\0';
    flame_xml_escape(f, buf);
    fputs("..", f);
}

struct ctx {
    FILE *f;
    double total, xw, minw;
    size_t drawn;
    double btotal;   /* samples of the before profile; 0: no diff */
    double maxdelta; /* the largest |change of share| of any frame drawn */
};

/* The callee of b (before's tree, sorted by name) named name, or NULL. */
static const struct flame_node *before_kid(const struct flame_node *b, const char *name)
{
    if (!b)
        return NULL;
    size_t lo = 0, hi = b->nkids;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(b->kids[mid]->name, name);
        if (c == 0)
            return b->kids[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

static double delta_of(const struct ctx *c, const struct flame_node *n, const struct flame_node *b)
{
    return (double)n->total / c->total - (b ? (double)b->total / c->btotal : 0);
}

/* The largest |delta| over the frames that will be drawn. */
static void max_delta(struct ctx *c, const struct flame_node *n, const struct flame_node *b)
{
    if ((double)n->total / c->total * c->xw < c->minw)
        return;
    double d = delta_of(c, n, b);
    if (n->kind != FLAME_ROOT && (d < 0 ? -d : d) > c->maxdelta)
        c->maxdelta = d < 0 ? -d : d;
    for (size_t i = 0; i < n->nkids; i++)
        max_delta(c, n->kids[i], before_kid(b, n->kids[i]->name));
}

/* Red for a share that grew, blue for one that shrank, deeper with the change; grey when it
 * changed by less than 0.1% of the samples. */
static void diff_colour(const struct ctx *c, double d, char *buf, size_t len)
{
    double a = d < 0 ? -d : d;
    if (a < 0.001 || c->maxdelta <= 0) {
        snprintf(buf, len, "rgb(225,225,225)");
        return;
    }
    int k = 40 + (int)(180 * (a / c->maxdelta)); /* 40..220 */
    k = k > 220 ? 220 : k;
    if (d > 0)
        snprintf(buf, len, "rgb(255,%d,%d)", 255 - k, 255 - k);
    else
        snprintf(buf, len, "rgb(%d,%d,255)", 255 - k, 255 - k);
}

static void frame(struct ctx *c, const struct flame_node *n, const struct flame_node *b, double x,
                  int depth)
{
    double w = (double)n->total / c->total * c->xw;
    if (w < c->minw)
        return;
    char fill[48];
    double d = c->btotal > 0 ? delta_of(c, n, b) : 0;
    if (c->btotal > 0)
        diff_colour(c, d, fill, sizeof fill);
    else
        colour(n, fill, sizeof fill);
    double px = PAD + x / c->total * c->xw;
    int y = TOP + depth * ROW;
    const char *name = n->kind == FLAME_ROOT ? "all" : n->name;
    fprintf(c->f, "<g class=\"f %s\" data-x=\"%.9f\" data-w=\"%.9f\" data-d=\"%d\"",
            n->kind == FLAME_PYTHON   ? "py"
            : n->kind == FLAME_NATIVE ? "native"
                                      : "root",
            x / c->total, (double)n->total / c->total, depth);
    if (c->btotal > 0)
        fprintf(c->f, " data-delta=\"%.6f\"", d);
    fputs("><title>", c->f);
    flame_xml_escape(c->f, name);
    if (c->btotal > 0)
        fprintf(c->f, "\n%llu sample%s (%.2f%%), before %llu (%.2f%%): %+.2f points", n->total,
                n->total == 1 ? "" : "s", 100.0 * (double)n->total / c->total, b ? b->total : 0ULL,
                b ? 100.0 * (double)b->total / c->btotal : 0.0, 100 * d);
    else
        fprintf(c->f, "\n%llu sample%s (%.2f%%)", n->total, n->total == 1 ? "" : "s",
                100.0 * (double)n->total / c->total);
    fprintf(c->f,
            "</title><rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" "
            "height=\"%d\" rx=\"2\" fill=\"%s\"/><text x=\"%.2f\" y=\"%d\">",
            px, y, w, ROW - 1, fill, px + 3, y + ROW - 4);
    write_label(c->f, name, w);
    fputs("</text></g>\n", c->f);
    c->drawn++;
    double kx = x;
    for (size_t i = 0; i < n->nkids; i++) {
        frame(c, n->kids[i], c->btotal > 0 ? before_kid(b, n->kids[i]->name) : NULL, kx, depth + 1);
        kx += (double)n->kids[i]->total;
    }
}

int flame_write_svg(const struct flame_tree *t, const struct flame_svg_opts *o, FILE *f)
{
    int width = o && o->width > 0 ? o->width : 1200;
    double minw = o && o->minwidth >= 0 ? o->minwidth : 0.1;
    const char *title = o && o->title ? o->title : "Flame graph";
    int height = TOP + (t->maxdepth + 1) * ROW + 30;
    fprintf(f,
            "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
            "<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
            "height=\"%d\" viewBox=\"0 0 %d %d\" data-samples=\"%llu\">\n",
            width, height, width, height, t->root.total);
    fprintf(f, "<style type=\"text/css\"><![CDATA[\n%s]]></style>\n", style);
    fprintf(f, "<script type=\"text/ecmascript\"><![CDATA[\n%s]]></script>\n", script);
    fprintf(f, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#f8f8f4\"/>\n", width,
            height);
    fprintf(f, "<text id=\"title\" x=\"%d\" y=\"22\">", width / 2);
    flame_xml_escape(f, title);
    fputs("</text>\n", f);
    if (o && o->subtitle) {
        fprintf(f, "<text id=\"subtitle\" x=\"%d\" y=\"40\">", width / 2);
        flame_xml_escape(f, o->subtitle);
        fputs("</text>\n", f);
    }
    fprintf(f,
            "<text id=\"reset\" class=\"button\" x=\"%d\" y=\"22\" style=\"display:none\">"
            "Reset zoom</text>\n",
            PAD);
    /* The search box is an HTML input (no window.prompt: VS Code webviews block dialogs). */
    fprintf(f,
            "<foreignObject x=\"%d\" y=\"7\" width=\"190\" height=\"22\">"
            "<input xmlns=\"http://www.w3.org/1999/xhtml\" id=\"q\" type=\"search\" "
            "placeholder=\"search (regular expression)\" title=\"Enter: search; Ctrl-F: "
            "focus; Escape: clear\" style=\"width:180px;font:12px monospace\"/>"
            "</foreignObject>\n",
            width - PAD - 250);
    fprintf(f,
            "<text id=\"search\" class=\"button\" x=\"%d\" y=\"22\" "
            "style=\"text-anchor:end\">Search</text>\n",
            width - PAD);
    fprintf(f, "<text id=\"matched\" x=\"%d\" y=\"40\"></text>\n", width - PAD);
    fprintf(f, "<text id=\"details\" x=\"%d\" y=\"%d\"> </text>\n", PAD, height - 10);
    fputs("<g id=\"frames\">\n", f);
    if (t->root.total) {
        struct ctx c = {f, (double)t->root.total, (double)(width - 2 * PAD), minw, 0, 0, 0};
        const struct flame_node *b = NULL;
        if (o && o->before && o->before->root.total) {
            c.btotal = (double)o->before->root.total;
            b = &o->before->root;
            max_delta(&c, &t->root, b);
        }
        frame(&c, &t->root, b, 0, 0);
    }
    fputs("</g>\n</svg>\n", f);
    return ferror(f) ? -1 : 0;
}
