#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Seeds of the eh_frame fuzz corpus (tests/fuzz/corpus/eh_frame/): a module's .eh_frame_hdr
followed by its .eh_frame, as tests/fuzz/fuzz_eh_frame.c reads them. Run from the top of the
tree; it rewrites only the files it names.

Real ones cut from ELF files (the bytes from .eh_frame_hdr's start to .eh_frame's end, where
the two are laid out that way and that is at most 64 KiB): /usr/bin/true, /usr/bin/sleep,
/usr/bin/env. Crafted ones: one CIE and FDE whose programs use every DW_CFA opcode the reader
knows and a CFA expression and register expressions with every DW_OP it evaluates; a signal
frame ('S'); an outermost frame (undefined return address); a 'zPLR' CIE with a personality
pointer; an "eh" CIE (refused: the reader reads "z" augmentations only)."""
import os
import struct

TOP = os.path.dirname(os.path.abspath(__file__))
DIR = os.path.join(TOP, "corpus", "eh_frame")


def save(name, data):
    os.makedirs(DIR, exist_ok=True)
    with open(os.path.join(DIR, name), "wb") as f:
        f.write(data)


def sections(path):
    with open(path, "rb") as f:
        d = f.read()
    if d[:4] != b"\x7fELF" or d[4] != 2:
        return d, {}
    shoff, = struct.unpack_from("<Q", d, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", d, 0x3A)
    hdrs = [struct.unpack_from("<IIQQQQIIQQ", d, shoff + i * shentsize) for i in range(shnum)]
    stroff = hdrs[shstrndx][4]
    out = {}
    for h in hdrs:
        name = d[stroff + h[0]:d.index(b"\0", stroff + h[0])].decode()
        out[name] = h  # name, type, flags, addr, offset, size, ...
    return d, out


def real(path, name):
    d, s = sections(path)
    if ".eh_frame_hdr" not in s or ".eh_frame" not in s:
        return
    h, e = s[".eh_frame_hdr"], s[".eh_frame"]
    if h[3] - h[4] != e[3] - e[4] or e[4] < h[4]:  # not laid out in one piece
        return
    data = d[h[4]:e[4] + e[5]]
    if len(data) <= 65536:
        save(name, data)


def uleb(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def sleb(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        done = (v == 0 and not b & 0x40) or (v == -1 and b & 0x40)
        out.append(b | (0 if done else 0x80))
        if done:
            return bytes(out)


def module(cie_aug, cie_aug_data, cie_insn, fdes, ra=16):
    """.eh_frame_hdr (at 0) then .eh_frame: one CIE, then one FDE per (start, size, insn);
    start is relative to the header (the code is below it, as a linker lays it out)."""
    n = len(fdes)
    hdr_len = 12 + 8 * n
    eh = 0x40 if hdr_len <= 0x40 else (hdr_len + 15) & ~15
    body = b"\x01" + cie_aug + b"\x00"
    if cie_aug == b"eh":
        body += cie_aug_data  # the eh data pointer, before the alignment factors
    body += uleb(1) + sleb(-8) + bytes([ra])
    if b"z" in cie_aug:
        body += uleb(len(cie_aug_data)) + cie_aug_data
    body += cie_insn
    body += b"\x00" * (-(len(body) + 8) % 8)
    cie = struct.pack("<II", len(body) + 4, 0) + body
    frame = bytearray(cie)
    table = []
    for start, size, insn in fdes:
        at = eh + len(frame)
        if b"R" in cie_aug:  # pcrel sdata4 (DW_EH_PE 0x1b)
            rest = struct.pack("<iI", start - (at + 8), size)
        else:  # absptr: the harness puts the header at 0x100000000
            rest = struct.pack("<QQ", (1 << 32) + start, size)
        rest += (uleb(0) if b"z" in cie_aug else b"") + insn
        rest += b"\x00" * (-(len(rest) + 8) % 8)
        frame += struct.pack("<II", len(rest) + 4, at + 4 - eh) + rest
        table.append((start, at))
    frame += b"\x00" * 4  # the terminator
    hdr = struct.pack("<BBBBiI", 1, 0x1B, 0x03, 0x3B, eh - 4, n)
    for start, at in sorted(table):
        hdr += struct.pack("<ii", start, at)
    return hdr.ljust(eh, b"\x00") + bytes(frame)


DEF_CFA = lambda r, off: b"\x0c" + uleb(r) + uleb(off)


def crafted():
    base = DEF_CFA(7, 8) + b"\x90\x01"  # CFA = rsp + 8, RA at CFA - 8
    # Every DW_CFA opcode the reader knows, in one FDE (rows split by each advance form).
    every_cfa = (
        b"\x41" + b"\x0e\x10" + b"\x86\x02"  # advance_loc 1; def_cfa_offset 16; offset rbp
        + b"\x02\x01" + b"\x0d\x06"  # advance_loc1; def_cfa_register rbp
        + b"\x03\x01\x00" + b"\x0a" + b"\x05\x03\x03"  # advance_loc2; remember; offset_extended rbx
        + b"\x04\x01\x00\x00\x00" + b"\x0b"  # advance_loc4; restore_state
        + b"\x06\x03" + b"\x07\x0c" + b"\x08\x0d" + b"\x09\x0e\x0f"  # restore_ext, undefined, same, register
        + b"\x00" + b"\x11\x0c" + sleb(-3) + b"\x12\x07" + sleb(-2)  # nop, offset_ext_sf, def_cfa_sf
        + b"\x13" + sleb(-3) + b"\x14\x0d\x02" + b"\x15\x0e" + sleb(-1)  # def_cfa_offset_sf, val_offset(_sf)
        + b"\x2e\x10" + b"\x2f\x0f\x04" + b"\xc3"  # GNU_args_size, GNU_negative_offset_ext, restore rbx
        + b"\x41" + DEF_CFA(7, 16) + b"\x86\x02"
    )
    # Every DW_OP the evaluator knows: the CFA by expression, registers by (val_)expression.
    expr_cfa = (b"\x77\x08" + b"\x92\x07\x00" + b"\x1c" + b"\x30" + b"\x22"  # breg7 8; bregx; minus; lit0; plus
                + b"\x08\x01\x09\xff\x1e" + b"\x0a\x01\x00\x0b\xff\xff\x21"  # const1u/s mul; const2u/s or
                + b"\x0c\x01\x00\x00\x00\x0d\xff\xff\xff\xff\x27" + b"\x12\x13"  # const4u/s xor; dup drop
                + b"\x0e" + struct.pack("<Q", 3) + b"\x0f" + struct.pack("<q", -1) + b"\x1a"  # const8u/s and
                + b"\x10\x05\x11\x7f\x24\x31\x25\x29\x31\x2a\x1a\x31\x2b\x1a\x31\x2c\x1a\x31\x2d\x1a"
                + b"\x31\x2e\x1a\x22" + b"\x77\x00\x23\x08\x22")  # constu/consts shl shr comparisons
    every_op = (b"\x0f" + uleb(len(expr_cfa)) + expr_cfa
                + b"\x10\x10\x02\x23\x00"  # expression RA: CFA + 0 (deref'd)
                + b"\x16\x06\x04\x77\x10\x06\x13" + b"\x41")  # val_expression rbp: breg7 16; deref; drop
    start = -0x1000
    save("crafted-every-cfa", module(b"zR", b"\x1b", base, [(start, 0x40, every_cfa)]))
    save("crafted-every-op", module(b"zR", b"\x1b", base, [(start, 0x40, every_op)]))
    save("crafted-signal", module(b"zRS", b"\x1b", base, [(start, 0x20, b"\x41\x0e\x10")]))
    save("crafted-outermost", module(b"zR", b"\x1b", base + b"\x07\x10",
                                     [(start, 0x10, b""), (start + 0x10, 0x10, b"\x41\x0e\x18")]))
    save("crafted-zplr", module(b"zPLR", b"\x1b" + struct.pack("<i", 0x100) + b"\x1b\x1b", base,
                                [(start, 0x20, b"\x44\x0e\x10\x86\x02")]))
    save("crafted-eh", module(b"eh", struct.pack("<Q", 0), base, [(start, 0x20, b"")]))


def main():
    for path, name in (("/usr/bin/true", "real-true"), ("/usr/bin/sleep", "real-sleep"),
                       ("/usr/bin/env", "real-env")):
        real(path, name)
    crafted()


if __name__ == "__main__":
    main()
