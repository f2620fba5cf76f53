"""Rewrites a path inside a pickle, structurally: kcache's relocation of torch.compile's cache entries.

Usage: python3 rewrite.py FROM TO < pickle > pickle

Inductor's FX graph and AOTAutograd cache entries are pickles that name the absolute cache folder
(the generated modules' paths, the bundled Triton kernels' folders and group files). A byte
substitution would corrupt them (string lengths are encoded in the stream), so this walks the
pickle's opcodes with the standard library's pickletools, replaces FROM with TO inside every string
and bytes argument, re-encodes that argument with the opcode its new length needs, and copies every
other opcode byte for byte. FRAME opcodes are dropped (framing is optional; a frame's length would
no longer hold). Nothing is unpickled, so no class is imported and no code runs: it needs no torch.
The output is canonical: rewriting it back gives the same bytes whatever the framing was. Exit 3
when the input is not a pickle this understands (kcache then keeps the bytes as they are).
"""
import pickletools
import struct
import sys

# Protocol 0's UNICODE (raw-unicode-escape text up to a newline) is copied as it is.
TEXT_OPS = {"SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8"}
BYTES_OPS = {"SHORT_BINBYTES", "BINBYTES", "BINBYTES8", "SHORT_BINSTRING", "BINSTRING", "BYTEARRAY8"}


def text_op(s):
    b = s.encode("utf-8", "surrogatepass")
    if len(b) < 256:
        return b"\x8c" + bytes([len(b)]) + b
    if len(b) < 2**32:
        return b"X" + struct.pack("<I", len(b)) + b
    return b"\x8d" + struct.pack("<Q", len(b)) + b


def bytes_op(name, b):
    if name == "BYTEARRAY8":
        return b"\x96" + struct.pack("<Q", len(b)) + b
    if name in ("SHORT_BINSTRING", "BINSTRING"):
        # Protocol 0-2 strings: keep their kind, only the length form changes.
        return (b"U" + bytes([len(b)]) if len(b) < 256 else b"T" + struct.pack("<i", len(b))) + b
    if len(b) < 256:
        return b"C" + bytes([len(b)]) + b
    if len(b) < 2**32:
        return b"B" + struct.pack("<I", len(b)) + b
    return b"\x8e" + struct.pack("<Q", len(b)) + b


def is_utf8(b):
    try:
        b.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


def rewrite(data, old, new):
    old_b, new_b = old.encode(), new.encode()
    out = []
    ops = list(pickletools.genops(data))
    for i, (op, arg, pos) in enumerate(ops):
        end = ops[i + 1][2] if i + 1 < len(ops) else len(data)
        if op.name == "FRAME":
            continue
        if op.name in TEXT_OPS:
            out.append(text_op(arg.replace(old, new)))
        elif op.name in BYTES_OPS:
            raw = arg.encode("latin-1") if isinstance(arg, str) else bytes(arg)
            # Text kept as bytes (group files, IR) is rewritten; binaries (cubins, whose debug
            # sections may name the folder at fixed offsets) never are.
            if b"\0" not in raw and is_utf8(raw):
                raw = raw.replace(old_b, new_b)
            out.append(bytes_op(op.name, raw))
        else:
            out.append(data[pos:end])
    return b"".join(out)


def main():
    old, new = sys.argv[1], sys.argv[2]
    data = sys.stdin.buffer.read()
    try:
        result = rewrite(data, old, new)
    except Exception as e:  # not a pickle, truncated, or an opcode this does not know
        sys.stderr.write("not a pickle kcache can rewrite: %s\n" % (e,))
        sys.exit(3)
    sys.stdout.buffer.write(result)


main()
