#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Seeds of the elf_syms and core_file fuzz corpora (tests/fuzz/corpus/): real files, small,
then the crafted ones that crashed the CLI before its bounds were made overflow-safe (issue 37
item 4). Run from the top of the tree, as root (gcore); it rewrites only the files it names.

elf_syms: a tiny shared object with the symbols the CLI looks up (Py_Version, _PyRuntime, ...;
.dynsym with versions and .gnu.hash, .symtab), stripped and not, /usr/bin/true; then copies of
the small one with one section's sh_offset + sh_size wrapping past 2^64, e_phoff and e_shoff
near 2^64, a PT_LOAD whose offset wraps.
core_file: gdb's gcore of `sleep`, trimmed to its notes and the first bytes of each segment;
then cores with e_phoff near 2^64, a PT_NOTE whose offset + size wraps, note sizes that wrap
when rounded up in 32 bits, an NT_FILE whose last name is unterminated, an NT_FILE naming a
device, a PT_LOAD whose offset + size wraps."""
import os
import struct
import subprocess
import sys
import tempfile
import time

WRAP = 1 << 64
NT_FILE = 0x46494C45
TOP = os.path.dirname(os.path.abspath(__file__))
ELF_DIR = os.path.join(TOP, "corpus", "elf_syms")
CORE_DIR = os.path.join(TOP, "corpus", "core_file")

LIB_C = r"""
const unsigned int Py_Version = 0x030b04f0;
struct { long a[8]; } _PyRuntime = {{1}};
struct { long a[4]; } PyCode_Type, PyUnicode_Type, PyBytes_Type, _Py_NoneStruct;
const char version_string[] = "3.11.4 (main)";
int Py_Initialize(void) { return 0; }
int Py_Main(int n) { return n + 1; }
"""


def save(d, name, data):
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)
    print("%s/%s: %d bytes" % (os.path.basename(d), name, len(data)))


def sections(data):
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shnum, shstrndx = struct.unpack_from("<HH", data, 0x3C)
    stroff, = struct.unpack_from("<Q", data, shoff + shstrndx * 64 + 0x18)
    for i in range(shnum):
        at = shoff + i * 64
        name, = struct.unpack_from("<I", data, at)
        yield at, data[stroff + name:data.index(b"\0", stroff + name)].decode()


def elf_seeds(tmp):
    src = os.path.join(tmp, "lib.c")
    lib = os.path.join(tmp, "libpylike.so")
    open(src, "w").write(LIB_C)
    subprocess.run(["cc", "-O1", "-shared", "-fPIC", "-Wl,--hash-style=gnu", "-o", lib, src],
                   check=True)
    real = open(lib, "rb").read()
    save(ELF_DIR, "real-pylike.so", real)
    subprocess.run(["strip", "-o", lib + ".s", lib], check=True)
    save(ELF_DIR, "real-pylike-stripped.so", open(lib + ".s", "rb").read())
    save(ELF_DIR, "real-true", open("/usr/bin/true", "rb").read())
    back = 1 << 40
    for at, name in sections(real):
        if name in (".dynsym", ".dynstr", ".gnu.hash", ".gnu.version", ".dynamic", ".symtab",
                    ".strtab", ".rodata", ".shstrtab"):
            d = bytearray(real)
            struct.pack_into("<QQ", d, at + 0x18, WRAP - back, back + 24 * 64)
            save(ELF_DIR, "wrap-section-" + name.lstrip("."), bytes(d))
    d = bytearray(real)
    struct.pack_into("<Q", d, 0x20, WRAP - 16)  # e_phoff
    save(ELF_DIR, "wrap-phoff", bytes(d))
    d = bytearray(real)
    struct.pack_into("<Q", d, 0x28, WRAP - 64)  # e_shoff
    save(ELF_DIR, "wrap-shoff", bytes(d))
    d = bytearray(real)
    phoff, = struct.unpack_from("<Q", d, 0x20)
    phnum, = struct.unpack_from("<H", d, 0x38)
    for i in range(phnum):  # every PT_LOAD's offset near 2^64: a read at a symbol wraps
        at = phoff + i * 56
        if struct.unpack_from("<I", d, at)[0] == 1:
            struct.pack_into("<Q", d, at + 8, WRAP - 4096)
    save(ELF_DIR, "wrap-pt-load", bytes(d))


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
    d = struct.pack("<QQ", len(maps), 4096)
    for s, e, o, _ in maps:
        d += struct.pack("<QQQ", s, e, o)
    names = [p + b"\0" for *_, p in maps]
    if not terminate:
        names[-1] = names[-1][:-1]
    return d + b"".join(names)


def trim_core(data, keep=64):
    """The core's headers and notes, and the first keep bytes of each PT_LOAD (its p_filesz
    cut to that, its p_memsz kept)."""
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phnum, = struct.unpack_from("<H", data, 0x38)
    phs = [list(struct.unpack_from("<IIQQQQQQ", data, phoff + i * 56)) for i in range(phnum)]
    out = bytearray(ehdr(64, phnum))
    body = bytearray()
    base = 64 + 56 * phnum
    for p in phs:
        n = p[5] if p[0] == 4 else min(p[5], keep)
        chunk = data[p[2]:p[2] + n]
        while (base + len(body)) % 8:
            body += b"\0"
        p[2], p[5] = base + len(body), n
        body += chunk
    for p in phs:
        out += struct.pack("<IIQQQQQQ", *p)
    return bytes(out + body)


def core_seeds(tmp):
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        time.sleep(0.2)
        out = os.path.join(tmp, "core")
        subprocess.run(["gcore", "-o", out, str(sleeper.pid)], check=True, capture_output=True,
                       timeout=120)
        real = open("%s.%d" % (out, sleeper.pid), "rb").read()
    finally:
        sleeper.kill()
        sleeper.wait()
    save(CORE_DIR, "real-gcore-sleep-trimmed", trim_core(real))
    one = lambda notes, trailer=b"": ehdr(64, 1) + phdr(4, 120, len(notes)) + notes + trailer
    lib = b"/usr/lib/xy/libpython3.11.so.1.0"
    save(CORE_DIR, "wrap-phoff", ehdr(WRAP - 16, 1) + b"\0" * 256)
    save(CORE_DIR, "wrap-pt-note", ehdr(64, 1) + phdr(4, WRAP - 4, 4096) + b"\0" * 256)
    save(CORE_DIR, "wrap-note-sizes",
         one(note(NT_FILE, struct.pack("<QQ", 65536, 4096), name=b"", namesz=0xFFFFFFFD,
                  descsz=0xFFFFFFFD) + b"\0" * 64))
    save(CORE_DIR, "nt-file-unterminated",
         one(note(NT_FILE, nt_file([(0x10000, 0x20000, 0, lib)], terminate=False)),
             trailer=b"TRAILER-NOT-IN-THE-NOTE\0"))
    save(CORE_DIR, "nt-file-device", one(note(NT_FILE, nt_file([(0x10000, 0x20000, 0,
                                                                   b"/dev/zero")]))))
    notes = note(NT_FILE, nt_file([(0x10000, 0x20000, 0, b"/proc/self/exe")]))
    save(CORE_DIR, "wrap-pt-load",
         ehdr(64, 2) + phdr(4, 176, len(notes)) + phdr(1, WRAP - 8, 4096, 0x400000) + notes)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        elf_seeds(tmp)
        core_seeds(tmp)


if __name__ == "__main__":
    sys.exit(main())
