# SPDX-License-Identifier: MIT
"""Hostile ELF files and cores against the real CLI (docs/security.md, "Files the CLI reads"):
whatever the bytes, `probing` answers with valid output or a one-line error and a non-zero exit,
never a crash signal, and within a timeout.

- a working copy of an interpreter with one section header patched so that its offset plus its
  size wraps past 2^64 (the kernel never reads section headers: the copy runs), read by
  `debug --dump --no-inject` and `debug --dump` while it runs;
- cores built here: e_phoff near 2^64 (offset + table size wraps), a PT_NOTE whose offset plus
  size wraps, a note whose name and descriptor sizes wrap when rounded up, an NT_FILE whose last
  name runs past the note unterminated, an NT_FILE naming a FIFO (opened, it would block
  forever) and one naming a directory."""
import os
import struct

import pytest

from conftest import probing

NT_FILE = 0x46494C45
PT_LOAD, PT_NOTE = 1, 4
WRAP = 1 << 64


def sane(r, what):
    """Valid output (exit 0, JSON or text) or one line of error with a non-zero exit."""
    assert r.returncode >= 0, "%s: killed by signal %d; stderr %r" % (what, -r.returncode,
                                                                      r.stderr[-2000:])
    if r.returncode != 0:
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("probing"), \
            "%s: exit %d, not a one-line error: %r" % (what, r.returncode, r.stderr[-2000:])
    return r


# ---- a patched interpreter ----

def section_headers(data):
    """(file offset of each section header, name) of a 64-bit little-endian ELF."""
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    strtab_off, = struct.unpack_from("<Q", data, shoff + shstrndx * shentsize + 0x18)
    out = []
    for i in range(shnum):
        at = shoff + i * shentsize
        name, = struct.unpack_from("<I", data, at)
        end = data.index(b"\0", strtab_off + name)
        out.append((at, data[strtab_off + name:end].decode()))
    return out


def patched_python(tmp_path, src, section):
    """A copy of the interpreter src whose section's sh_offset + sh_size wraps to a small
    in-file value (the sum the unfixed bounds check compared with the file's size). .rodata is
    read for the version string of interpreters without Py_Version (before 3.11)."""
    data = bytearray(open(src, "rb").read())
    at = dict((n, a) for a, n in section_headers(data))[section]
    # 2^40 below the file's mapping (nothing is mapped there), 24 KiB past the wrap
    back = 1 << 40
    size = back + 24 * 1024
    struct.pack_into("<QQ", data, at + 0x18, WRAP - back, size)  # sh_offset, sh_size
    out = tmp_path / os.path.basename(src)  # keeps the name pythonX.Y
    out.write_bytes(bytes(data))
    os.chmod(out, 0o755)
    return str(out)


def debian_python():
    """Debian's python3.11 carries the interpreter in the executable, so the CLI reads the
    executable's own symbol tables (pyenv's read libpython's)."""
    p = os.path.realpath("/usr/bin/python3")
    if not os.path.exists(p):
        pytest.skip("no /usr/bin/python3")
    return p


@pytest.mark.parametrize("section", [".dynsym", ".dynstr", ".gnu.hash", ".rodata"])
def test_patched_section_header(section, spawn, tmp_path):
    exe = patched_python(tmp_path, debian_python(), section)
    t = spawn(exe, "threads.py")
    for args in (["--no-inject", "--json"], ["--json"]):
        r = sane(probing("-p", t.pid, "debug", "--dump", *args, timeout=60),
                 "debug --dump %s on a copy with %s wrapping" % (" ".join(args), section))
        assert r.returncode != 0 or '"threads"' in r.stdout, r.stdout[-2000:]
    t.assert_responsive()


# ---- crafted cores ----

def ehdr(phoff, phnum):
    ident = b"\x7fELF\x02\x01\x01" + b"\0" * 9
    return struct.pack("<16sHHIQQQIHHHHHH", ident, 4, 62, 1, 0, phoff, 0, 0, 64, 56, phnum, 64,
                       0, 0)


def phdr(ptype, offset, filesz, vaddr=0, memsz=None):
    return struct.pack("<IIQQQQQQ", ptype, 4, offset % WRAP, vaddr, 0, filesz % WRAP,
                       filesz if memsz is None else memsz, 1)


def note(ntype, desc, name=b"CORE\0", namesz=None, descsz=None):
    pad = lambda b: b + b"\0" * (-len(b) % 4)
    return struct.pack("<III", len(name) if namesz is None else namesz,
                       len(desc) if descsz is None else descsz, ntype) + pad(name) + pad(desc)


def nt_file(maps, terminate=True):
    """NT_FILE's descriptor: maps is [(start, end, page offset, path bytes)]."""
    d = struct.pack("<QQ", len(maps), 4096)
    for s, e, o, _ in maps:
        d += struct.pack("<QQQ", s, e, o)
    names = [p + b"\0" for *_, p in maps]
    if not terminate:
        names[-1] = names[-1][:-1]
    return d + b"".join(names)


def core_with_notes(notes, trailer=b""):
    """An ET_CORE with one PT_NOTE holding notes, then trailer bytes outside any segment."""
    off = 64 + 56
    return ehdr(64, 1) + phdr(PT_NOTE, off, len(notes)) + notes + trailer


def write(tmp_path, name, data):
    p = tmp_path / name
    p.write_bytes(data)
    return str(p)


def run_core(path, *extra):
    return sane(probing("dump", "--core", path, *extra, timeout=20), "dump --core %s" % path)


def test_core_phoff_wraps(tmp_path):
    r = run_core(write(tmp_path, "phoff", ehdr(WRAP - 16, 1) + b"\0" * 4096))
    assert r.returncode == 1 and "is not a 64-bit ELF core file" in r.stderr, r.stderr


def test_core_note_wraps(tmp_path):
    data = ehdr(64, 1) + phdr(PT_NOTE, WRAP - 4, 4096) + b"\0" * 4096
    r = run_core(write(tmp_path, "note", data))
    assert r.returncode == 1, r.stderr


def test_core_note_sizes_wrap(tmp_path):
    """n_namesz and n_descsz of 0xfffffffd round up (in 32 bits) to 0: an NT_FILE that claims
    4 GiB of descriptor inside a one-page segment."""
    body = note(NT_FILE, struct.pack("<QQ", 65536, 4096), name=b"", namesz=0xFFFFFFFD,
                descsz=0xFFFFFFFD)
    r = run_core(write(tmp_path, "sizes", core_with_notes(body + b"\0" * 64)))
    assert r.returncode == 1, r.stderr


def test_core_unterminated_name(tmp_path):
    """The last NT_FILE name runs to the end of its note unterminated; the bytes after the note
    (outside every segment) must never be read as part of it."""
    lib = b"/usr/lib/xy/libpython3.11.so.1.0"  # 32 bytes: no padding NUL after it either
    body = note(NT_FILE, nt_file([(0x10000, 0x20000, 0, lib)], terminate=False))
    data = core_with_notes(body, trailer=b"TRAILER-NOT-IN-THE-NOTE\0")
    r = run_core(write(tmp_path, "unterminated", data))
    assert "TRAILER" not in r.stdout + r.stderr, r.stderr
    assert r.returncode == 1, r.stderr


@pytest.mark.parametrize("kind", ["fifo", "directory"])
def test_core_names_special_file(kind, tmp_path):
    """An NT_FILE naming a FIFO (opening it for reading would block until a writer came) or a
    directory where the interpreter's file should be: refused, at once."""
    d = tmp_path / "lib"
    d.mkdir()
    lib = d / "libpython3.11.so.1.0"
    if kind == "fifo":
        os.mkfifo(lib)
    else:
        lib.mkdir()
    body = note(NT_FILE, nt_file([(0x10000, 0x20000, 0, str(lib).encode())]))
    data = core_with_notes(body)
    r = run_core(write(tmp_path, kind, data))
    assert r.returncode == 1 and "cannot read the symbols of" in r.stderr, r.stderr


def test_core_is_fifo(tmp_path):
    """dump --core given a FIFO: refused at once (it is no core file)."""
    p = tmp_path / "core.fifo"
    os.mkfifo(p)
    r = run_core(str(p))
    assert r.returncode == 1 and "not a regular file" in r.stderr, r.stderr
