/* SPDX-License-Identifier: MIT */
/* The flame graph renderers (injector/render/) on fixed folded input: the merged tree and
 * its counts, frame kinds, folded output, the SVG (widths proportional to samples, callers
 * above callees, XML escaping, invalid UTF-8) and speedscope JSON (frames, per-thread
 * profiles, JSON escaping). tests/e2e/test_flamegraph.py checks them on real profiles, in
 * Chromium and against speedscope's schema. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "injector/render/flame.h"
#include "unit.h"

static const char sample_folded[] =
    "main (app.py:10);work (app.py:5);compute (app.py:2);libfoo.so+0x1a2b 30\n"
    "main (app.py:10);work (app.py:5);sleep 10\n"
    "main (app.py:10);idle (app.py:20) 60\n"
    "\n"
    "not a stack line\n"
    "main (app.py:10);work (app.py:5);compute (app.py:2);libfoo.so+0x1a2b 20\n";

static void load(struct flame_tree *t, const char *text)
{
    FILE *in = fmemopen((void *)text, strlen(text), "r");
    ASSERT(in);
    flame_tree_init(t);
    ASSERT(flame_tree_parse(t, in) >= 0);
    fclose(in);
    flame_tree_sort(t);
}

/* Render into a malloc'd string. */
static char *render(const struct flame_tree *t, int which)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    ASSERT(f);
    struct flame_svg_opts o = {.title = "T <&> \"q\"", .width = 1000, .minwidth = 0};
    int rc = which == 0   ? flame_write_folded(t, f)
             : which == 1 ? flame_write_svg(t, &o, f)
                          : flame_write_speedscope(t, "name \"x\"", f);
    ASSERT_EQ(rc, 0);
    fclose(f);
    return buf;
}

static const struct flame_node *kid(const struct flame_node *n, const char *name)
{
    for (size_t i = 0; i < n->nkids; i++)
        if (strcmp(n->kids[i]->name, name) == 0)
            return n->kids[i];
    return NULL;
}

TEST(flame_tree_counts)
{
    struct flame_tree t;
    load(&t, sample_folded);
    ASSERT_EQ(t.root.total, 120);
    ASSERT_EQ(t.nstacks, 4);
    ASSERT_EQ(t.maxdepth, 4);
    const struct flame_node *m = kid(&t.root, "main (app.py:10)");
    ASSERT(m);
    ASSERT_EQ(m->total, 120);
    ASSERT_EQ(m->self, 0);
    ASSERT_EQ(m->nkids, 2);
    /* Sorted by name: idle before work. */
    ASSERT_STR_EQ(m->kids[0]->name, "idle (app.py:20)");
    const struct flame_node *w = kid(m, "work (app.py:5)");
    ASSERT_EQ(w->total, 60);
    const struct flame_node *c = kid(w, "compute (app.py:2)");
    ASSERT_EQ(c->total, 50);
    const struct flame_node *nat = kid(c, "libfoo.so+0x1a2b");
    ASSERT(nat);
    ASSERT_EQ(nat->self, 50);
    ASSERT_EQ(nat->kind, FLAME_NATIVE);
    ASSERT_EQ(c->kind, FLAME_PYTHON);
    ASSERT_EQ(kid(w, "sleep")->kind, FLAME_NATIVE);
    flame_tree_close(&t);
    flame_tree_close(NULL);
}

TEST(flame_kinds_and_names)
{
    char func[64], file[64];
    int line = 0;
    ASSERT_EQ(flame_name_split("f (a.py:3)", func, sizeof func, file, sizeof file, &line), 0);
    ASSERT_STR_EQ(func, "f");
    ASSERT_STR_EQ(file, "a.py");
    ASSERT_EQ(line, 3);
    ASSERT_EQ(flame_name_split("Cls.meth.<locals>.<lambda> (/x (y)/b c.py:120)", func, sizeof func,
                               file, sizeof file, &line),
              0);
    ASSERT_STR_EQ(func, "Cls.meth.<locals>.<lambda>");
    ASSERT_STR_EQ(file, "/x (y)/b c.py");
    ASSERT_EQ(line, 120);
    ASSERT_EQ(flame_kind_of("foo(int)"), FLAME_NATIVE);
    ASSERT_EQ(flame_kind_of("(anonymous namespace)::run(int) const"), FLAME_NATIVE);
    ASSERT_EQ(flame_kind_of("libc.so.6+0x9a1f0"), FLAME_NATIVE);
    ASSERT_EQ(flame_kind_of("f (a.py:)"), FLAME_NATIVE);
    ASSERT_EQ(flame_kind_of(" (a.py:1)"), FLAME_NATIVE);
    ASSERT_EQ(flame_kind_of("<module> (<string>:1)"), FLAME_PYTHON);
}

TEST(flame_folded_roundtrip)
{
    struct flame_tree t;
    load(&t, sample_folded);
    char *out = render(&t, 0);
    ASSERT_STR_EQ(out, "main (app.py:10);idle (app.py:20) 60\n"
                       "main (app.py:10);work (app.py:5);compute (app.py:2);libfoo.so+0x1a2b 50\n"
                       "main (app.py:10);work (app.py:5);sleep 10\n");
    /* Rendering its own output again gives the same text. */
    struct flame_tree t2;
    load(&t2, out);
    char *again = render(&t2, 0);
    ASSERT_STR_EQ(again, out);
    free(out);
    free(again);
    flame_tree_close(&t);
    flame_tree_close(&t2);
}

/* The <g> of the frame whose title starts with name, or NULL. */
static const char *frame_of(const char *svg, const char *name)
{
    char pat[256];
    snprintf(pat, sizeof pat, "<title>%s\n", name);
    const char *p = strstr(svg, pat);
    if (!p)
        return NULL;
    while (p > svg && strncmp(p, "<g class=\"f", 11) != 0)
        p--;
    return p;
}

static double attr(const char *g, const char *name)
{
    char pat[64];
    snprintf(pat, sizeof pat, " %s=\"", name);
    const char *p = strstr(g, pat);
    ASSERT(p);
    return atof(p + strlen(pat));
}

TEST(flame_svg_layout)
{
    struct flame_tree t;
    load(&t, sample_folded);
    char *svg = render(&t, 1);
    ASSERT(strncmp(svg, "<?xml", 5) == 0);
    ASSERT(strstr(svg, "</svg>\n"));
    ASSERT(!strstr(svg, "http://") || strstr(svg, "xmlns=\"http://www.w3.org/2000/svg\""));
    ASSERT(strstr(svg, "<script"));
    ASSERT(strstr(svg, "T &lt;&amp;&gt; &quot;q&quot;")); /* the title, escaped */
    const char *all = frame_of(svg, "all"), *m = frame_of(svg, "main (app.py:10)");
    const char *c = frame_of(svg, "compute (app.py:2)"), *n = frame_of(svg, "libfoo.so+0x1a2b");
    const char *idle = frame_of(svg, "idle (app.py:20)");
    ASSERT(all && m && c && n && idle);
    /* Icicle: callers above callees (smaller y), one row per depth. */
    ASSERT(attr(m, "data-d") == 1 && attr(c, "data-d") == 3 && attr(n, "data-d") == 4);
    ASSERT(attr(c, "y") < attr(n, "y"));
    /* Widths proportional to samples: 1000 px minus 20 px margins for 120 samples. */
    double px = 980.0 / 120;
    ASSERT(attr(all, "width") > 979.9 && attr(all, "width") < 980.1);
    ASSERT(attr(idle, "width") > 60 * px - 0.01 && attr(idle, "width") < 60 * px + 0.01);
    ASSERT(attr(n, "width") > 50 * px - 0.01 && attr(n, "width") < 50 * px + 0.01);
    ASSERT(attr(n, "data-w") > 50.0 / 120 - 1e-6 && attr(n, "data-w") < 50.0 / 120 + 1e-6);
    /* Kinds and tooltips. */
    ASSERT(strncmp(c, "<g class=\"f py\"", 15) == 0);
    ASSERT(strncmp(n, "<g class=\"f native\"", 18) == 0);
    ASSERT(strstr(svg, "<title>libfoo.so+0x1a2b\n50 samples (41.67%)</title>"));
    free(svg);
    flame_tree_close(&t);
}

TEST(flame_svg_escapes)
{
    struct flame_tree t;
    flame_tree_init(&t);
    ASSERT_EQ(flame_tree_add(&t, 1, "x",
                             "<module> (a&b.py:1);std::vector<int>::push_back \"q\" 'a'"
                             ";bad\xff\xfe utf8;ok \xc3\xa9",
                             3),
              0);
    flame_tree_sort(&t);
    char *svg = render(&t, 1);
    ASSERT(strstr(svg, "<title>&lt;module&gt; (a&amp;b.py:1)\n3 samples"));
    ASSERT(strstr(svg, "std::vector&lt;int&gt;::push_back &quot;q&quot; &#39;a&#39;"));
    ASSERT(strstr(svg, "bad?? utf8"));
    ASSERT(strstr(svg, "ok \xc3\xa9"));
    ASSERT(!strstr(svg, "\xff"));
    ASSERT(!strstr(svg, "<module>"));
    free(svg);
    flame_tree_close(&t);
}

TEST(flame_svg_empty_and_narrow)
{
    struct flame_tree t;
    flame_tree_init(&t);
    char *svg = render(&t, 1);
    ASSERT(strstr(svg, "<g id=\"frames\">\n</g>"));
    free(svg);
    /* A frame of 1 sample in 100000 is 0.0098 px wide at 1000 px: left out. */
    ASSERT_EQ(flame_tree_add(&t, 1, NULL, "big", 99999), 0);
    ASSERT_EQ(flame_tree_add(&t, 1, NULL, "tiny", 1), 0);
    struct flame_svg_opts o = {.width = 1000, .minwidth = 0.1};
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    ASSERT_EQ(flame_write_svg(&t, &o, f), 0);
    fclose(f);
    ASSERT(frame_of(buf, "big"));
    ASSERT(!frame_of(buf, "tiny"));
    free(buf);
    flame_tree_close(&t);
}

TEST(flame_speedscope)
{
    struct flame_tree t;
    flame_tree_init(&t);
    ASSERT_EQ(flame_tree_add(&t, 11, "MainThread", "main (a.py:1);f (a.py:2);libc.so.6+0x10", 5),
              0);
    ASSERT_EQ(flame_tree_add(&t, 11, "MainThread", "main (a.py:1);g \"x\" (b\\c.py:7)", 2), 0);
    ASSERT_EQ(flame_tree_add(&t, 12, NULL, "main (a.py:1);f (a.py:2)", 4), 0);
    char *js = render(&t, 2);
    ASSERT(strstr(js, "\"$schema\": \"https://www.speedscope.app/file-format-schema.json\""));
    ASSERT(strstr(js, "\"name\": \"name \\\"x\\\"\""));
    /* Shared frames, deduplicated, Python ones split into name/file/line. */
    ASSERT(strstr(js, "{\"name\": \"main\", \"file\": \"a.py\", \"line\": 1}"));
    ASSERT(strstr(js, "{\"name\": \"f\", \"file\": \"a.py\", \"line\": 2}"));
    ASSERT(strstr(js, "{\"name\": \"libc.so.6+0x10\", \"file\": \"libc.so.6\"}"));
    ASSERT(strstr(js, "{\"name\": \"g \\\"x\\\"\", \"file\": \"b\\\\c.py\", \"line\": 7}"));
    char *p = strstr(js, "\"name\": \"main\"");
    ASSERT(p && !strstr(p + 1, "\"name\": \"main\""));
    /* One sampled profile per thread, stacks outermost first, weights in samples. */
    ASSERT(strstr(js, "\"type\": \"sampled\", \"name\": \"Thread 11 \\\"MainThread\\\"\", "
                      "\"unit\": \"none\", \"startValue\": 0, \"endValue\": 7"));
    ASSERT(strstr(js, "\"samples\": [[0,1,2], [0,3]],\n     \"weights\": [5, 2]}"));
    ASSERT(strstr(js, "\"name\": \"Thread 12\", \"unit\": \"none\", \"startValue\": 0, "
                      "\"endValue\": 4,\n     \"samples\": [[0,1]],\n     \"weights\": [4]}"));
    free(js);
    flame_tree_close(&t);
}

/* The timeline: a frame lasts while consecutive samples of its thread keep it under the same
 * callers; a gap over two periods closes everything one period after the earlier sample;
 * events sorted by thread, start, then depth (a caller before its callee). */
TEST(flame_chrometrace)
{
    struct flame_tree t;
    flame_tree_init(&t);
    ASSERT_EQ(flame_tree_add_id(&t, 11, "Main", 1, "main (a.py:1);f (a.py:2);zlib", 2), 0);
    ASSERT_EQ(flame_tree_add_id(&t, 11, "Main", 2, "main (a.py:1);g (a.py:3)", 1), 0);
    ASSERT_EQ(flame_tree_add_id(&t, 12, NULL, 1, "run \"x\" (b.py:9)", 1), 0);
    ASSERT_EQ(flame_tree_find(&t, 11, 2), 1);
    ASSERT_EQ(flame_tree_find(&t, 12, 1), 2);
    ASSERT_EQ(flame_tree_find(&t, 12, 2), -1);
    /* thread 11: f;zlib at 100.00 and 100.01, g at 100.02, a gap, f;zlib at 100.10; thread 12
     * once at 100.005. Period 10 ms. */
    struct flame_tick ticks[] = {{0, 100.00}, {0, 100.01}, {1, 100.02}, {0, 100.10}, {2, 100.005}};
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    ASSERT(f);
    ASSERT_EQ(flame_write_chrometrace(&t, ticks, 5, 0.01, 42, "p", f), 0);
    fclose(f);
    const char *want[] = {
        "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 42, \"tid\": 11, \"args\": "
        "{\"name\": \"Main (11)\"}}",
        "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 42, \"tid\": 12, \"args\": "
        "{\"name\": \"thread 12\"}}",
        /* main from the first sample to one period after the third (the gap closes it) */
        "{\"ph\": \"X\", \"name\": \"main\", \"cat\": \"python\", \"pid\": 42, \"tid\": 11, "
        "\"ts\": 0, \"dur\": 30000, \"args\": {\"file\": \"a.py\", \"line\": 1}}",
        "{\"ph\": \"X\", \"name\": \"f\", \"cat\": \"python\", \"pid\": 42, \"tid\": 11, "
        "\"ts\": 0, \"dur\": 20000, \"args\": {\"file\": \"a.py\", \"line\": 2}}",
        "{\"ph\": \"X\", \"name\": \"zlib\", \"cat\": \"native\", \"pid\": 42, \"tid\": 11, "
        "\"ts\": 0, \"dur\": 20000}",
        "{\"ph\": \"X\", \"name\": \"g\", \"cat\": \"python\", \"pid\": 42, \"tid\": 11, "
        "\"ts\": 20000, \"dur\": 10000, \"args\": {\"file\": \"a.py\", \"line\": 3}}",
        /* after the gap: open again, one period long (the thread's last sample) */
        "{\"ph\": \"X\", \"name\": \"main\", \"cat\": \"python\", \"pid\": 42, \"tid\": 11, "
        "\"ts\": 100000, \"dur\": 10000, \"args\": {\"file\": \"a.py\", \"line\": 1}}",
        "{\"ph\": \"X\", \"name\": \"zlib\", \"cat\": \"native\", \"pid\": 42, \"tid\": 11, "
        "\"ts\": 100000, \"dur\": 10000}",
        "{\"ph\": \"X\", \"name\": \"run \\\"x\\\"\", \"cat\": \"python\", \"pid\": 42, "
        "\"tid\": 12, \"ts\": 5000, \"dur\": 10000, \"args\": {\"file\": \"b.py\", "
        "\"line\": 9}}",
    };
    const char *at = buf;
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const char *p = strstr(at, want[i]);
        if (!p)
            fprintf(stderr, "missing, in order: %s\nin: %s\n", want[i], buf);
        ASSERT(p);
        at = p + strlen(want[i]);
    }
    /* 1 + 2 metadata, 4 + 3 + 1 complete events */
    size_t events = 0;
    for (const char *p = buf; (p = strstr(p, "{\"ph\": ")); p++)
        events++;
    ASSERT_EQ(events, 11);
    free(buf);
    flame_tree_close(&t);
}
