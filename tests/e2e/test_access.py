# SPDX-License-Identifier: MIT
"""Who may reach the probe: the socket directory and file are owner-only, a directory prepared
by someone else is refused (the probe does not serve there), and the probe of a process of
another user can be loaded by root and serves that user."""
import os
import shutil
import stat
import subprocess
import tempfile

from conftest import PYTHONS, Target, dump_json, probing

PY = PYTHONS[-2].values[0]


def test_socket_dir_and_file_are_owner_only(spawn):
    t = spawn(PY)
    probing("-p", t.pid, "inject", check=True)
    d = "/tmp/probing-%d" % os.geteuid()
    st = os.stat(d)
    assert stat.S_IMODE(st.st_mode) == 0o700 and st.st_uid == os.geteuid()
    sock = os.stat("%s/%d.sock" % (d, t.pid))
    assert stat.S_ISSOCK(sock.st_mode) and stat.S_IMODE(sock.st_mode) & 0o077 == 0
    t.check_output_clean()


def test_foreign_socket_dir_is_refused(tmp_path):
    d = "/tmp/probing-65534"
    shutil.rmtree(d, ignore_errors=True)
    os.mkdir(d, 0o777)  # root's, world-writable: someone could intercept connections there
    os.chmod(d, 0o777)
    os.chmod(tmp_path, 0o777)
    t = _NobodyTarget(tmp_path)
    try:
        r = probing("--timeout", "3000", "-p", t.pid, "inject")
        assert r.returncode == 1 and "does not answer" in r.stderr, r.stderr
        assert "not a private directory" in t.probe_log()
        assert os.listdir(d) == [], "nothing was created in the foreign directory"
        t.assert_responsive()
        t.check_output_clean()
    finally:
        t.kill()
        shutil.rmtree(d, ignore_errors=True)


def test_root_injects_into_another_users_process(tmp_path):
    shutil.rmtree("/tmp/probing-65534", ignore_errors=True)
    t = _NobodyTarget(tmp_path)
    try:
        probing("-p", t.pid, "inject", check=True)
        st = os.stat("/tmp/probing-65534")
        assert st.st_uid == 65534 and stat.S_IMODE(st.st_mode) == 0o700
        d = dump_json(t.pid)  # root may connect (peer uid 0)
        assert {x["name"] for x in d["threads"]} == {"MainThread", "sleeper-1", "reader-1"}
        t.assert_responsive()
        t.check_output_clean()
    finally:
        t.kill()
        shutil.rmtree("/tmp/probing-65534", ignore_errors=True)


class _NobodyTarget(Target):
    def __init__(self, tmp_path):
        # pytest's tmp dirs sit below root-only parents: the probe (as nobody) logs elsewhere.
        logdir = tempfile.mkdtemp(prefix="probing-test-")
        os.chmod(logdir, 0o777)
        super().__init__("/usr/bin/python3", "threads.py", tmp_path,
                         env={"PROBING_LOG": os.path.join(logdir, "probe.log")}, launcher=[
                             "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"])
        self.log_path = os.path.join(logdir, "probe.log")
        self.logdir = logdir

    def kill(self):
        super().kill()
        shutil.rmtree(self.logdir, ignore_errors=True)
