# SPDX-License-Identifier: MIT
"""probing -p PID debug --dump on every CPython 3.8-3.15 (3.14, 3.15 and a late 3.13 in the sid root) and Debian's python3: inject into a
running sample, dump, and check names, ids and line numbers against the sample's BP markers."""
import json
import re

import pytest

from conftest import PYTHONS, bp, dump_json, probing


def frames_of(thread):
    return [(f["name"], f["line"]) for f in thread["frames"]]


def by_name(dump):
    return {t["name"]: t for t in dump["threads"]}


@pytest.mark.parametrize("python", PYTHONS)
def test_dump_every_thread(python, spawn):
    t = spawn(python)
    r = probing("-p", t.pid, "inject", check=True)
    assert "probe loaded in %d" % t.pid in r.stdout
    d = dump_json(t.pid)
    threads = by_name(d)
    assert set(threads) == {"MainThread", "sleeper-1", "reader-1"}, threads.keys()
    main = threads["MainThread"]
    assert main["main"] is True and main["nameSource"] == "threading"
    assert main["nativeId"] == t.ready["main"] == t.pid
    for name in ("sleeper-1", "reader-1"):
        assert threads[name]["nativeId"] == t.ready["threads"][name]
        assert threads[name]["daemon"] is True
        assert threads[name]["id"] == threads[name]["nativeId"]
    # Innermost first, with the exact lines of the markers.
    assert frames_of(threads["sleeper-1"])[0] == ("sleeper", bp("threads.py", "sleeper_sleep"))
    assert frames_of(threads["reader-1"])[0] == ("reader", bp("threads.py", "reader_read"))
    assert frames_of(threads["sleeper-1"])[-1][0].endswith("_bootstrap")
    mf = frames_of(main)
    assert mf[0] == ("tick_forever", bp("threads.py", "main_sleep"))
    assert [n for n, _ in mf[1:]] == ["main", "<module>"]
    assert all(f["file"].endswith("threads.py") for f in main["frames"])
    # No thread holds the GIL while all of them sleep or block.
    assert d["gil"]["available"] is True
    assert d["python"].startswith(python.rsplit("python", 1)[-1][:4]) or python.endswith("python3")
    t.assert_responsive()
    t.check_output_clean()


@pytest.mark.parametrize("python", PYTHONS)
def test_dump_text_and_locals(python, spawn):
    t = spawn(python)
    r = probing("-p", t.pid, "debug", "--dump", check=True)
    out = r.stdout
    assert 'Thread %d "MainThread"' % t.pid in out
    assert "sleeper (%s:%d)" % (t_file := "/samples/threads.py", 0) not in out  # sanity of format
    assert "    sleeper (" in out and ":%d)" % bp("threads.py", "sleeper_sleep") in out
    d = dump_json(t.pid, "--locals")
    threads = by_name(d)
    sl = {l["name"]: l for l in threads["sleeper-1"]["frames"][0]["locals"]}
    assert sl["seconds"]["value"] == "3600" and sl["seconds"]["type"] == "int"
    assert sl["label"]["value"] == "'sleeping'"
    rd = {l["name"]: l for l in threads["reader-1"]["frames"][0]["locals"]}
    assert rd["items"]["value"] == "[1, 2, 3]"
    assert json.loads(rd["payload"]["value"].replace("'", '"')) == {"kind": "pipe", "fd": rd["fd"]["value"] and int(rd["fd"]["value"])}
    mn = {l["name"]: l for l in threads["MainThread"]["frames"][0]["locals"]}
    assert len(mn["text"]["value"]) <= 300 and mn["text"]["value"].endswith("...")
    assert "bits" in mn["big"]["value"]
    th = {l["name"]: l for l in threads["reader-1"]["frames"][1]["locals"]}
    assert th["self"]["value"].startswith("<threading.Thread object at 0x")
    # Module-level frame: modules, functions and classes named as Python names them.
    mod = {l["name"]: l for l in threads["MainThread"]["frames"][-1]["locals"]}
    assert mod["json"]["value"] == "<module 'json'>" and mod["json"]["type"] == "module"
    assert mod["sleeper"]["value"] == "<function sleeper>"
    assert mod["started"]["value"].startswith("<threading.Barrier object at 0x")
    t.assert_responsive()
    t.check_output_clean()


@pytest.mark.parametrize("python", PYTHONS)
def test_dump_when_gil_held_forever(python, spawn):
    t = spawn(python, "stuck_gil.py")
    d = dump_json(t.pid)
    main = [x for x in d["threads"] if x["main"]][0]
    assert main["holdsGil"] is True
    assert d["gil"]["holder"] == main["id"] == t.pid
    assert d["gil"]["available"] is False
    assert main["frames"][0]["name"] == "hold_gil_forever"
    assert main["frames"][0]["line"] == bp("stuck_gil.py", "stuck_call")
    assert [f["name"] for f in main["frames"][1:]] == ["main", "<module>"]
    waiter = [x for x in d["threads"] if not x["main"]]
    assert len(waiter) == 1 and waiter[0]["frames"][0]["name"] == "worker"
    assert waiter[0]["frames"][0]["line"] == bp("stuck_gil.py", "worker_sleep")
    # --locals: says why there are none, still shows stacks.
    d = dump_json(t.pid, "--locals")
    assert "GIL is held by thread %d" % t.pid in d["localsError"]
    assert all("locals" not in f for x in d["threads"] for f in x["frames"])
    text = probing("-p", t.pid, "debug", "--dump", "--locals", check=True).stdout
    assert "note: the GIL is held by thread %d" % t.pid in text
    assert t.proc.poll() is None
    t.check_output_clean()


@pytest.mark.parametrize("python", PYTHONS)
def test_inject_twice(python, spawn):
    t = spawn(python)
    r1 = probing("-p", t.pid, "inject", check=True)
    r2 = probing("-p", t.pid, "inject", check=True)
    assert "probe loaded in" in r1.stdout
    assert "probe already loaded in %d" % t.pid in r2.stdout
    assert t.maps_count() == 1
    assert dump_json(t.pid)["pid"] == t.pid
    # The target as a bare first argument, and as -t PID.
    for args in ([t.pid], ["-t", t.pid]):
        r = probing(*args, "debug", "--dump", "--json", check=True)
        assert json.loads(r.stdout)["pid"] == t.pid
    t.assert_responsive()
    t.check_output_clean()


def test_dump_locals_show_tensors_by_shape(spawn, tmp_path):
    """Debian's python3 with torch: `debug --dump --locals` (and python.backtrace's locals) show a tensor
    by shape, dtype and device, as the debugger's variables do, never its data; inside a list
    too. A Tensor subclass with its own __torch_function__ is shown as any object: reading its
    shape would have run that Python code, which writes a file (it must not exist after)."""
    mark = tmp_path / "torch_function_called"
    t = spawn("/usr/bin/python3", "tensors.py", args=[str(mark)])
    d = dump_json(t.pid, "--locals")
    main = [x for x in d["threads"] if x["main"]][0]
    assert main["frames"][0]["name"] == "hold"
    loc = {l["name"]: l for l in main["frames"][0]["locals"]}
    assert loc["image"]["value"] == "tensor(shape=[2, 3, 4], dtype=torch.float32, device=cpu)"
    assert loc["image"]["type"] == "torch.Tensor"
    assert loc["labels"]["value"] == "tensor(shape=[5], dtype=torch.int64, device=cpu)"
    assert loc["weight"]["value"] == "tensor(shape=[7], dtype=torch.float32, device=cpu)"
    assert loc["weight"]["type"] == "torch.nn.parameter.Parameter"
    assert loc["scalar"]["value"] == "tensor(shape=[], dtype=torch.float64, device=cpu)"
    assert loc["batch"]["value"] == ("[tensor(shape=[2, 3, 4], dtype=torch.float32, device=cpu), "
                                     "tensor(shape=[5], dtype=torch.int64, device=cpu)]")
    assert loc["spy"]["value"].startswith("<__main__.Spy object at 0x"), loc["spy"]
    rows = probing("-p", t.pid, "query", "-f", "json", "SELECT locals FROM python.backtrace "
                   "WHERE func = 'hold'", check=True).stdout
    vals = json.loads(json.loads(rows)[0]["locals"])
    assert vals["image"] == loc["image"]["value"] and vals["spy"] == loc["spy"]["value"], vals
    out = probing("-p", t.pid, "debug", "--dump", "--locals", check=True).stdout
    assert "image = tensor(shape=[2, 3, 4], dtype=torch.float32, device=cpu)  (torch.Tensor)" in out
    assert not mark.exists(), mark.read_text()
    t.assert_responsive()
    t.check_output_clean()


@pytest.mark.parametrize("python", PYTHONS)
def test_dump_gil_holder_with_probe_loaded(python, spawn):
    """A thread computing in Python holds the GIL: with the probe loaded, debug --dump (text,
    JSON, with and without --locals) and python.threads name that thread, as --no-inject does,
    never 'not held' (the probe's own request for the GIL is not the answer)."""
    t = spawn(python, "gil_spin.py")
    spinner = t.ready["spinner"]

    def until_spinner(read):
        """The main thread ticks and may hold the GIL at the very moment asked (under ASan or a
        loaded machine): a few tries, each naming a holder; the spinner in one of them."""
        seen = []
        for _ in range(5):
            seen.append(read())
            assert seen[-1] in (spinner, t.pid), seen
            if seen[-1] == spinner:
                return
        raise AssertionError("the spinner %d never named: %r" % (spinner, seen))

    for extra in ((), ("--locals",)):
        def read():
            d = dump_json(t.pid, *extra)
            th = {x["nativeId"]: x for x in d["threads"]}
            assert th[spinner]["frames"][0]["name"] == "spin"
            assert d["gil"]["available"] is True and "localsError" not in d
            assert [k for k, x in th.items() if x["holdsGil"]] == [d["gil"]["holder"]], d["gil"]
            return d["gil"]["holder"]
        until_spinner(read)

    def text():
        out = probing("-p", t.pid, "debug", "--dump", check=True).stdout
        m = re.search(r"^GIL: held by thread (\d+)$", out, re.M)
        assert m, out
        return int(m.group(1))
    until_spinner(text)

    def sql():
        rows = probing("-p", t.pid, "query", "-f", "json",
                       "SELECT thread_id, holds_gil FROM python.threads", check=True).stdout
        held = [r["thread_id"] for r in json.loads(rows) if r["holds_gil"]]
        assert len(held) == 1, rows
        return held[0]
    until_spinner(sql)
    t.assert_responsive()
    t.check_output_clean()


@pytest.mark.parametrize("python", PYTHONS)
def test_dump_locals_corrupted_objects(python, spawn):
    """Locals whose type pointer or element pointer memory corruption overwrote: debug --dump
    --locals (JSON and text) shows each as <invalid object at 0x...> and the target lives on."""
    t = spawn(python, "corrupt_locals.py")
    d = dump_json(t.pid, "--locals")
    th = [x for x in d["threads"] if x["nativeId"] == t.ready["native"]][0]
    assert th["frames"][0]["line"] == bp("corrupt_locals.py", "corrupt_sleep")
    loc = {l["name"]: l for l in th["frames"][0]["locals"]}
    assert loc["fine"]["value"] == "[1, 2, 3]" and loc["fine"]["type"] == "list"
    for name in ("bad_type", "bad_fake_type"):
        assert loc[name]["value"] == "<invalid object at 0x%x>" % t.ready[name], loc[name]
        assert loc[name]["type"] == "?", loc[name]
    assert loc["bad_item"]["value"] == "[10, <invalid object at 0x8>, 30]", loc["bad_item"]
    assert loc["bad_tuple"]["value"] == "(40, <invalid object at 0x8>, 60)", loc["bad_tuple"]
    assert loc["garbage"]["value"].startswith("b'AAAA")
    t.assert_responsive()
    out = probing("-p", t.pid, "debug", "--dump", "--locals", check=True).stdout
    assert "bad_type = <invalid object at 0x%x>  (?)" % t.ready["bad_type"] in out, out
    assert "bad_item = [10, <invalid object at 0x8>, 30]  (list)" in out, out
    t.assert_responsive()
    t.check_output_clean()
