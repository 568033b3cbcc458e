# SPDX-License-Identifier: MIT
"""Having the probe from the start: `make install` into a venv, then `PROBING=1 python app.py`
(the start-up hook) and `probing.init(listen=...)`; TCP with a token; `probing list`."""
import json
import os
import subprocess

import pytest

import sidroot
from conftest import BUILD, CLI, HOST_PYTHONS, PYTHONS, ROOT, bp, dump_json, probing, sock_name
from dapclient import DAP


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """`make install PREFIX=<venv>` for every Python we test, into a venv of that Python."""
    base = tmp_path_factory.mktemp("venvs")
    venvs = {}
    for p in PYTHONS:
        exe = p.values[0]
        if sidroot.is_sid(exe):
            continue  # see SID_NO_VENV
        venv = base / p.id
        subprocess.run([exe, "-m", "venv", "--without-pip", str(venv)], check=True)
        subprocess.run(["make", "-s", "-C", ROOT, "install", "PREFIX=%s" % venv],
                       check=True, capture_output=True, timeout=600)
        venvs[p.id] = venv
    return venvs


# `make install` into a venv of the interpreter: the sid root is shared and read-only, and has
# no python3.X-venv (Debian splits it out), so there is no venv to install into in it.
SID_NO_VENV = "the sid root is read-only and has no python3.X-venv: no venv to install into"


@pytest.mark.parametrize("python", [p if not sidroot.is_sid(p.values[0]) else
                                    pytest.param(*p.values, id=p.id,
                                                 marks=pytest.mark.skip(reason=SID_NO_VENV))
                                    for p in PYTHONS])
def test_probing_env_startup_hook(python, installed, spawn):
    venv = installed[[p.id for p in PYTHONS if p.values[0] == python][0]]
    assert os.access(venv / "bin" / "probing", os.X_OK)
    t = spawn(str(venv / "bin" / "python"), env={"PROBING": "1"})
    assert t.maps_count() == 1, "PROBING=1 loaded the probe at start-up"
    # The installed CLI finds the probe already there: no injection.
    r = subprocess.run([str(venv / "bin" / "probing"), "-p", str(t.pid), "inject"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "already loaded" in r.stdout, r.stderr
    d = json.loads(subprocess.run([str(venv / "bin" / "probing"), "-p", str(t.pid), "debug",
                                   "--dump", "--json"], capture_output=True, text=True,
                                  timeout=60, check=True).stdout)
    main = [x for x in d["threads"] if x["main"]][0]
    assert main["frames"][0]["line"] == bp("threads.py", "main_sleep")
    # PROBING unset or 0: no probe.
    t2 = spawn(str(venv / "bin" / "python"), env={"PROBING": "0"})
    assert t2.maps_count() == 0
    t.assert_responsive()
    t.check_output_clean()
    t2.check_output_clean()


def _init_target(spawn, python, listen="127.0.0.1:0"):
    env = {"PYTHONPATH": os.path.join(ROOT, "probe", "python"),
           "PROBING_LIBDIR": os.path.join(BUILD, "lib", "probing")}
    return spawn(python, "init_listen.py", env=env, args=(listen,))


@pytest.mark.parametrize("python", PYTHONS)
def test_probing_init_listen_with_token(python, spawn):
    t = _init_target(spawn, python)
    info = t.ready
    assert t.maps_count() == 1 and info["socket"].endswith("/" + sock_name(t.pid))
    host, port = info["address"].rsplit(":", 1)
    assert host == "127.0.0.1" and int(port) > 0 and len(info["token"]) >= 16

    # Only initialize and attach before authentication; anything else closes the connection.
    c = DAP.tcp(host, int(port))
    assert c.request("initialize", {"adapterID": "probing"})["success"]
    c.send("threads")
    assert c.closed_within(5)

    # A wrong token: error, then closed.
    c = DAP.tcp(host, int(port))
    c.request("initialize", {"adapterID": "probing"})
    r = c.request("attach", {"token": "x" * len(info["token"])})
    assert r["success"] is False and "token" in r["message"]
    assert c.closed_within(5)

    # The right token: a working session.
    c = DAP.tcp(host, int(port))
    c.request("initialize", {"adapterID": "probing"})
    assert any(e["event"] == "initialized" for e in c.events) or c.read()["event"] == "initialized"
    assert c.request("attach", {"token": info["token"]})["success"]
    th = c.request("threads")["body"]["threads"]
    assert [x["name"] for x in th] == ["MainThread"] and th[0]["id"] == t.pid
    st = c.request("stackTrace", {"threadId": t.pid, "startFrame": 0, "levels": 1})["body"]
    assert st["totalFrames"] >= 2 and len(st["stackFrames"]) == 1
    assert st["stackFrames"][0]["line"] == bp("init_listen.py", "init_sleep")
    r = c.request("probing/listen", {"address": "127.0.0.1:0", "token": "y" * 20})
    assert r["success"] is False and "local socket" in r["message"]
    assert c.request("disconnect")["success"]
    c.close()

    # The CLI over TCP, with the token from the environment.
    target = "127.0.0.1:%s" % port
    r = probing("-t", target, "debug", "--dump", "--json", env={"PROBING_TOKEN": info["token"]})
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["pid"] == t.pid
    r = probing("-t", target, "debug", "--dump", env={"PROBING_TOKEN": "wrong-token-123"})
    assert r.returncode == 1 and "token" in r.stderr
    r = probing("-t", target, "debug", "--dump", env={"PROBING_TOKEN": ""})
    assert r.returncode == 1 and "PROBING_TOKEN" in r.stderr
    t.assert_responsive()
    t.check_output_clean()


def test_inject_listen_and_list(spawn):
    py = HOST_PYTHONS[0].values[0]
    a = spawn(py)
    b = spawn(HOST_PYTHONS[-1].values[0])
    r = probing("-p", a.pid, "inject", "--listen", "127.0.0.1:0", env={"PROBING_TOKEN": ""},
                check=True)
    lines = r.stdout.splitlines()
    assert lines[1].startswith("listening on 127.0.0.1:")
    address = lines[1].split()[-1]
    token = lines[2].split()[-1]
    assert lines[2].startswith("token: ") and len(token) == 32
    probing("-p", b.pid, "inject", check=True)
    r = probing("-t", address, "debug", "--dump", "--json", env={"PROBING_TOKEN": token},
                check=True)
    assert json.loads(r.stdout)["pid"] == a.pid
    # A token given by the user is used as is, and listening again keeps the same address.
    r = probing("-p", a.pid, "inject", "--listen", address, env={"PROBING_TOKEN": "my-own-token"},
                check=True)
    assert "token:" not in r.stdout
    r = probing("-t", address, "debug", "--dump", env={"PROBING_TOKEN": "my-own-token"})
    assert r.returncode == 0, r.stderr

    listed = {p["pid"]: p for p in json.loads(probing("list", "--json", check=True).stdout)}
    assert a.pid in listed and b.pid in listed
    assert listed[a.pid]["tcp"] == address and listed[b.pid]["tcp"] is None
    assert listed[a.pid]["python"].startswith("3.8") and listed[b.pid]["socket"].endswith(
        "/" + sock_name(b.pid))
    assert "threads.py" in listed[b.pid]["command"] and listed[b.pid]["error"] is None
    text = probing("list", check=True).stdout
    assert text.splitlines()[0].split() == ["PID", "PYTHON", "SOCKET", "TCP", "COMMAND"]
    assert any(l.split()[0] == str(a.pid) and address in l for l in text.splitlines())
    a.assert_responsive()
    b.assert_responsive()
    a.check_output_clean()
    b.check_output_clean()


def test_inject_json(spawn):
    """inject --json: one JSON object (what the VS Code extension and scripts read), with the
    socket as the target sees it and as reachable from here; --listen adds address and token."""
    t = spawn(HOST_PYTHONS[-1].values[0])
    r = probing("-p", t.pid, "inject", "--json", check=True)
    d = json.loads(r.stdout)
    assert d["pid"] == t.pid and d["state"] == "loaded" and d["python"].count(".") == 2
    assert d["socket"].endswith("/" + sock_name(t.pid))
    assert d["reachable"] == "/proc/%d/root%s" % (t.pid, d["socket"])
    assert os.path.exists(d["reachable"])
    r = probing("-p", t.pid, "inject", "--json", "--listen", "127.0.0.1:0",
                env={"PROBING_TOKEN": "token-12345"}, check=True)
    d = json.loads(r.stdout)
    assert d["state"] == "already loaded" and d["token"] == "token-12345"
    assert d["address"].startswith("127.0.0.1:") and not d["address"].endswith(":0")
    r = probing("-p", t.pid, "inject", "--json", "--crash")
    assert r.returncode == 2 and r.stdout == "" and "--json goes with --listen only" in r.stderr
    t.assert_responsive()
    t.check_output_clean()
