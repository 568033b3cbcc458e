# SPDX-License-Identifier: MIT
"""The TCP token: one length limit everywhere (PB_TOKEN_MAX, 255 characters) for
`inject --listen`, `debug --pause`, `-t HOST:PORT` and `probing.init`, so a 64-character
`openssl rand -hex 32` token works end to end and a longer-than-allowed one is refused with one
error line (never cut); and a generated token comes from getrandom, else /dev/urandom, else
there is no listener (an LD_PRELOAD shim, tests/shim/random_fault.c, takes the sources away)."""
import json
import os
import re
import secrets
import subprocess

import pytest

from conftest import BUILD, HOST_PYTHONS, ROOT, probing, sock_name
from dapclient import DAP
from test_errors import one_error_line

PY = HOST_PYTHONS[-2].values[0]
LIMIT = 255


def _tcp_ports(pid):
    """TCP ports pid listens on (from /proc/PID/net/tcp and the socket inodes it holds)."""
    inodes = set()
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            link = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            continue
        m = re.match(r"socket:\[(\d+)\]", link)
        if m:
            inodes.add(m.group(1))
    ports = set()
    for table in ("tcp", "tcp6"):
        with open("/proc/%d/net/%s" % (pid, table)) as f:
            for line in f.readlines()[1:]:
                cols = line.split()
                if cols[3] == "0A" and cols[9] in inodes:  # LISTEN
                    ports.add(int(cols[1].rsplit(":", 1)[1], 16))
    return ports


def test_64_char_hex_token_end_to_end(spawn):
    """`openssl rand -hex 32`: inject --listen keeps all 64 characters, -t sends them, a DAP
    client attaches with them; debug --pause takes the same token."""
    token = secrets.token_hex(32)
    assert len(token) == 64
    t = spawn(PY)
    r = probing("-p", t.pid, "inject", "--json", "--listen", "127.0.0.1:0",
                env={"PROBING_TOKEN": token}, check=True)
    d = json.loads(r.stdout)
    assert d["token"] == token
    r = probing("-t", d["address"], "debug", "--dump", "--json", env={"PROBING_TOKEN": token})
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["pid"] == t.pid
    host, port = d["address"].rsplit(":", 1)
    c = DAP.tcp(host, int(port))
    assert c.request("initialize", {"adapterID": "e2e"})["success"]
    assert not c.request("attach", {"token": token[:63], "probingClient": "cli"})["success"]
    c.close()
    c = DAP.tcp(host, int(port))
    assert c.request("initialize", {"adapterID": "e2e"})["success"]
    assert c.request("attach", {"token": token, "probingClient": "cli"})["success"]
    c.request("disconnect")
    c.close()
    # The longest allowed token, through debug --pause this time.
    longest = "k" * LIMIT
    r = probing("-p", t.pid, "debug", "--pause", "--address", d["address"],
                env={"PROBING_TOKEN": longest}, check=True)
    assert "token from $PROBING_TOKEN" in r.stdout
    try:
        r = probing("-t", d["address"], "debug", "--dump", "--json",
                    env={"PROBING_TOKEN": longest})
        assert r.returncode == 0, r.stderr
    finally:
        probing("-p", t.pid, "debug", "--resume", check=True)
    t.assert_responsive()
    t.check_output_clean()


@pytest.mark.parametrize("length", [LIMIT + 1, 4096])
def test_token_over_the_limit_is_refused(spawn, length):
    token = "t" * length
    t = spawn(PY)
    probing("-p", t.pid, "inject", check=True)
    r = probing("-p", t.pid, "inject", "--listen", "127.0.0.1:0", env={"PROBING_TOKEN": token})
    one_error_line(r, "PROBING_TOKEN is %d characters long: the limit is %d" % (length, LIMIT))
    r = probing("-p", t.pid, "debug", "--pause", "--address", "127.0.0.1:0",
                env={"PROBING_TOKEN": token})
    one_error_line(r, "PROBING_TOKEN is %d characters long: the limit is %d" % (length, LIMIT))
    assert _tcp_ports(t.pid) == set(), "a listener was started with a cut token"
    t.assert_responsive()  # and not left paused
    r = probing("-t", "127.0.0.1:9", "debug", "--dump", env={"PROBING_TOKEN": token})
    one_error_line(r, "PROBING_TOKEN is %d characters long: the limit is %d" % (length, LIMIT))
    # The probe's own listener (what probing.init and PROBING_LISTEN use) says the same.
    c = DAP.unix("/tmp/probing-%d/%s" % (os.geteuid(), sock_name(t.pid)))
    assert c.request("initialize", {"adapterID": "e2e"})["success"]
    assert c.request("attach", {"probingClient": "cli"})["success"]
    r = c.request("probing/listen", {"address": "127.0.0.1:0", "token": token})
    assert not r["success"] and "token of 8 to 255 characters (got %d)" % length in r["message"]
    c.close()
    assert _tcp_ports(t.pid) == set()
    t.check_output_clean()


def test_init_refuses_a_token_over_the_limit(spawn, tmp_path):
    script = ("import probing, sys\n"
              "try:\n    probing.init(listen='127.0.0.1:0', token='z' * %d)\n"
              "except RuntimeError as e:\n    print(e)\n" % (LIMIT + 1))
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "probe", "python"),
               PROBING_LIBDIR=os.path.join(BUILD, "lib", "probing"))
    if os.environ.get("PROBING_TARGET_PRELOAD"):  # make asan: the runtime first, as conftest does
        env.update(LD_PRELOAD=os.environ["PROBING_TARGET_PRELOAD"],
                   ASAN_OPTIONS="detect_leaks=0:verify_asan_link_order=0")
    r = subprocess.run([PY, "-c", script], capture_output=True, text=True, timeout=60, env=env)
    assert "token of 8 to 255 characters (got 256)" in r.stdout, (r.stdout, r.stderr)


def _shim(tmp_path):
    so = tmp_path / "random_fault.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-o", str(so),
                    os.path.join(ROOT, "tests", "shim", "random_fault.c"), "-ldl"], check=True)
    return so


def _shim_env(so, log, **faults):
    env = {"LD_PRELOAD": str(so), "RANDOM_FAULT_LOG": str(log), "PROBING_TOKEN": "",
           # under make asan the CLI is sanitized: the shim may come before the ASan runtime
           "ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0"}
    env.update({"RANDOM_FAULT_" + k: str(v) for k, v in faults.items()})
    return env


@pytest.mark.parametrize("command", ["inject", "pause"])
def test_token_from_urandom_when_getrandom_fails(spawn, tmp_path, command):
    so, log = _shim(tmp_path), tmp_path / "random.log"
    t = spawn(PY)
    tokens = []
    for _ in range(2):
        env = _shim_env(so, log, GETRANDOM=38)  # ENOSYS: an old kernel, or seccomp
        if command == "inject":
            r = probing("-p", t.pid, "inject", "--json", "--listen", "127.0.0.1:0", env=env,
                        check=True)
            d = json.loads(r.stdout)
            address, token = d["address"], d["token"]
        else:
            r = probing("-p", t.pid, "debug", "--pause", "--address", "127.0.0.1:0", env=env,
                        check=True)
            m = re.search(r"DAP on ([\d.]+:\d+), token (\w+)", r.stdout)
            address, token = m.group(1), m.group(2)
        tokens.append(token)
        assert re.fullmatch(r"[0-9a-f]{32}", token) and token != "0" * 32, token
        r = probing("-t", address, "debug", "--dump", "--json", env={"PROBING_TOKEN": token})
        assert r.returncode == 0, r.stderr
        if command == "pause":
            probing("-p", t.pid, "debug", "--resume", check=True)
    assert tokens[0] != tokens[1]
    calls = log.read_text().split("\n")
    assert "getrandom -38" in calls and "urandom 0" in calls, calls  # the shim did its part
    t.assert_responsive()
    t.check_output_clean()


@pytest.mark.parametrize("command", ["inject", "pause"])
def test_no_random_source_no_listener(spawn, tmp_path, command):
    so, log = _shim(tmp_path), tmp_path / "random.log"
    t = spawn(PY)
    env = _shim_env(so, log, GETRANDOM=1, URANDOM=2)
    if command == "inject":
        r = probing("-p", t.pid, "inject", "--listen", "127.0.0.1:0", env=env)
    else:
        r = probing("-p", t.pid, "debug", "--pause", "--address", "127.0.0.1:0", env=env)
    one_error_line(r, "no random source for a TCP token (getrandom: Operation not permitted; "
                   "/dev/urandom: No such file or directory): set PROBING_TOKEN")
    assert r.stdout == ""
    calls = log.read_text().split("\n")
    assert "getrandom -1" in calls and "urandom -2" in calls, calls
    assert t.maps_count() == 0, "the target was touched although no token could be made"
    # With a token of the user's, the same command works.
    env["PROBING_TOKEN"] = "user-token-0001"
    if command == "inject":
        r = probing("-p", t.pid, "inject", "--listen", "127.0.0.1:0", env=env, check=True)
        assert "token:" not in r.stdout
    t.assert_responsive()
    t.check_output_clean()
