# SPDX-License-Identifier: MIT
"""probing: look inside a live Python process.

Most users never import this: ``probing -p PID inject`` loads the probe into a running process
with no code change. This package is for having the probe from the start:

    import probing
    probing.init()                             # local Unix socket only
    info = probing.init(listen="127.0.0.1:9922")  # also DAP on TCP, with a token

or ``PROBING=1 python app.py`` (the start-up hook installed with this package; ``PROBING_LISTEN``
and ``PROBING_TOKEN`` add a TCP listener).
"""
import ctypes
import os
import secrets
import sys
from collections import namedtuple

__all__ = ["init", "ProbeInfo"]

ProbeInfo = namedtuple("ProbeInfo", "socket address token")

_lib = None


def _libdir():
    env = os.environ.get("PROBING_LIBDIR")
    if env:
        return env
    try:
        from . import _config  # written by `make install`

        return _config.LIBDIR
    except ImportError:
        here = os.path.dirname(os.path.abspath(__file__))
        # Source tree: probe/python/probing -> build/release/lib/probing
        return os.path.normpath(os.path.join(here, "..", "..", "..", "build", "release", "lib", "probing"))


def _load():
    global _lib
    if _lib is not None:
        return _lib
    minor = "%d.%d" % sys.version_info[:2]
    path = os.path.join(_libdir(), "libprobing-%s.so" % minor)
    if not os.path.exists(path):
        raise RuntimeError(
            "no probe build for CPython %s at %s: build it (make PYTHONS=%s) or set PROBING_LIBDIR"
            % (minor, path, minor)
        )
    # CDLL releases the GIL around calls: probing_start never needs it.
    lib = ctypes.CDLL(path, mode=os.RTLD_NOW | os.RTLD_LOCAL)
    lib.probing_start.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
    lib.probing_start.restype = ctypes.c_int
    lib.probing_socket_path.restype = ctypes.c_char_p
    lib.probing_tcp_address.restype = ctypes.c_char_p
    _lib = lib
    return lib


def init(listen=None, token=None):
    """Start the probe in this process (idempotent) and return a ProbeInfo.

    listen: "HOST:PORT" to also serve DAP on TCP (port 0 picks a free port). Clients must send
    the token in their ``attach`` request: ``token``, else $PROBING_TOKEN, else a generated one
    (returned in ProbeInfo.token).
    """
    lib = _load()
    if listen and not token:
        token = os.environ.get("PROBING_TOKEN") or secrets.token_hex(16)
    err = ctypes.create_string_buffer(256)
    rc = lib.probing_start(
        listen.encode() if listen else None, token.encode() if token else None, err, len(err)
    )
    if rc != 0:
        raise RuntimeError("probing: " + (err.value.decode(errors="replace") or "start failed (%d)" % rc))
    address = lib.probing_tcp_address().decode() or None
    return ProbeInfo(lib.probing_socket_path().decode(), address, token if address else None)
