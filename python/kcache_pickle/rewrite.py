"""Relocates torch.compile's pickled cache entries, structurally: kcache's rewrite of a path in a pickle.

Usage: python rewrite.py normalize [--out FILE] ROOT [ROOT...] < pickle > stored
       python rewrite.py relocate [--out FILE] ROOT < stored > pickle
       python rewrite.py batch < jobs > results   (a restore's pickles, one process for all of them:
           each input line {"mode", "roots", "in", "out"}, each output line {"size"} or {"error", "exit"})

Inductor's FX graph and AOTAutograd cache entries are pickles that name the absolute cache folder
(the generated modules' paths, the bundled Triton kernels' folders and group files). A byte
substitution would corrupt them (string lengths are encoded in the stream), so this walks the
pickle's opcodes with the standard library's pickletools and rewrites only the arguments of string
and text-bytes opcodes that name the folder, re-encoded with the opcode their new length needs;
every other byte is copied as it is, frames included (a frame's length is recomputed when something
inside it changed). A pickle that names nothing is written back byte for byte.

The rules are the same as src/kinds/root-placeholder.ts applies to text (its tests hold both to
the same cases):
- `normalize` replaces each ROOT (its spellings, longest first) with the placeholder where it is a
  whole path: not preceded by a name character, followed by `/`, a quote or the end of the value
  (a sibling folder `ROOT_old` is left alone). Text that already holds the placeholder's prefix
  `@@KCACHE_INDUCTOR_` is escaped first (`@@KCACHE_INDUCTOR_LITERAL@@`), so content can never be
  mistaken for the placeholder.
- `relocate` writes ROOT for each placeholder and undoes the escape, in one pass.
Binary values (with a NUL byte: a cubin, whose debug section may name the folder at fixed offsets)
are never touched. Nothing is unpickled, so no class is imported and no code runs: it needs no torch.

Memory: the input once, plus at most a few copies of the largest single value (its bytes, its
decoded string as pickletools reads it, the rewritten bytes) and one frame's output; the output is
streamed. test/kinds/pickle-rewriter.test.ts measures a 64 MB pickle against the bound that
docs/inductor.md states. Exit 3 when the input is not a pickle this can rewrite exactly (damaged,
truncated, an opcode it does not know, or a protocol-0 string naming the folder): kcache then does
not store, or place, the entry.
"""
import io
import os
import pickletools
import re
import struct
import sys

MARK = b"@@KCACHE_INDUCTOR_"
PLACEHOLDER = MARK + b"CACHE_ROOT@@"
LITERAL = MARK + b"LITERAL@@"
ENCODED = re.compile(re.escape(MARK) + b"(CACHE_ROOT@@|LITERAL@@)")

# opcode name -> bytes of its length field
TEXT_OPS = {"SHORT_BINUNICODE": 1, "BINUNICODE": 4, "BINUNICODE8": 8}
BYTES_OPS = {
    "SHORT_BINBYTES": 1,
    "BINBYTES": 4,
    "BINBYTES8": 8,
    "SHORT_BINSTRING": 1,
    "BINSTRING": 4,
    "BYTEARRAY8": 8,
}
# Protocol 0's text opcodes: rewriting them exactly is not worth it (Inductor pickles with protocol 4+).
UNREWRITTEN_TEXT_OPS = {"UNICODE", "STRING"}


class CannotRewrite(Exception):
    pass


# Each opcode's code -> its name and how long its argument is (pickletools' descriptors): opcodes() walks
# a pickle by these lengths alone, decoding no value (pickletools.genops decodes every one: a copy of
# each bytes value, and most of the rewrite's time on a pickle of 100,000 opcodes).
_OPS = {
    op.code.encode("latin-1")[0]: (
        op.name,
        0 if op.arg is None else op.arg.n,
        op.arg is not None and op.arg.name == "stringnl_noescape_pair",
    )
    for op in pickletools.opcodes
}


def opcodes(data):
    """(name, start, end) of each opcode up to STOP; ValueError where the pickle is damaged or truncated."""
    pos, size, unpack_from = 0, len(data), struct.unpack_from
    while pos < size:
        entry = _OPS.get(data[pos])
        if entry is None:
            raise ValueError("unknown opcode %#x at byte %d" % (data[pos], pos))
        name, n, two_lines = entry
        at = pos + 1
        if n >= 0:
            head, want = 0, n
        elif n == pickletools.UP_TO_NEWLINE:
            end = data.find(b"\n", at) + 1
            if two_lines and end > 0:
                end = data.find(b"\n", end) + 1
            if end <= 0:
                raise ValueError("no newline after %s at byte %d (truncated)" % (name, pos))
            head, want = 0, end - at
        else:
            head, fmt = {
                pickletools.TAKEN_FROM_ARGUMENT1: (1, "<B"),
                pickletools.TAKEN_FROM_ARGUMENT4: (4, "<i"),
                pickletools.TAKEN_FROM_ARGUMENT4U: (4, "<I"),
                pickletools.TAKEN_FROM_ARGUMENT8U: (8, "<Q"),
            }[n]
            if at + head > size:
                raise ValueError("%s at byte %d has no length (truncated)" % (name, pos))
            want = unpack_from(fmt, data, at)[0]
            if want < 0:
                raise ValueError("%s at byte %d has a negative length" % (name, pos))
        end = at + head + want
        if end > size:
            raise ValueError(
                "%s at byte %d expected %d bytes, but only %d remain (truncated)" % (name, pos, want, size - at - head)
            )
        yield name, pos, end
        if name == "STOP":
            return
        pos = end
    raise ValueError("no STOP opcode (truncated)")


class Rewrite:
    """What one direction replaces in a value: a pattern and each match's replacement."""

    def __init__(self, pattern, replace, watch):
        self.pattern, self.replace, self.watch = pattern, replace, watch

    def touches(self, data, start, end):
        return any(data.find(w, start, end) != -1 for w in self.watch)

    def new_length(self, value):
        return len(value) + sum(len(self.replace(m)) - (m.end() - m.start()) for m in self.pattern.finditer(value))

    def write(self, value, write):
        """The value rewritten, written in pieces: never held whole a second time."""
        at, parts = 0, []
        for m in self.pattern.finditer(value):
            parts += (value[at : m.start()], self.replace(m))
            at = m.end()
            if len(parts) >= 8192:  # a bounded batch: far fewer writes than pieces
                write(b"".join(parts))
                parts.clear()
        parts.append(value[at:])
        write(b"".join(parts))


def normalizer(roots):
    alternatives = b"|".join(re.escape(r) for r in sorted(roots, key=len, reverse=True))
    pattern = re.compile(
        re.escape(MARK) + rb"|(?<![\w.\-\x80-\xff])(?:" + alternatives + rb")(?=[/'\"]|\Z)"
    )
    return Rewrite(pattern, lambda m: LITERAL if m.group(0) == MARK else PLACEHOLDER, roots + [MARK])


def relocator(root):
    return Rewrite(ENCODED, lambda m: root if m.group(1) == b"CACHE_ROOT@@" else MARK, [MARK])


def text_header(n):
    if n < 256:
        return b"\x8c" + bytes([n])
    if n < 2**32:
        return b"X" + struct.pack("<I", n)
    return b"\x8d" + struct.pack("<Q", n)


def bytes_header(name, n):
    if name == "BYTEARRAY8":
        return b"\x96" + struct.pack("<Q", n)
    if name in ("SHORT_BINSTRING", "BINSTRING"):
        # Protocol 0-2 strings: keep their kind, only the length form changes.
        return b"U" + bytes([n]) if n < 256 else b"T" + struct.pack("<i", n)
    if n < 256:
        return b"C" + bytes([n])
    if n < 2**32:
        return b"B" + struct.pack("<I", n)
    return b"\x8e" + struct.pack("<Q", n)


class Output:
    """Writes opcodes through, holding only the current frame (its length is written before it)."""

    def __init__(self, write):
        self.direct = write
        self.frame = None  # [end offset in the input, its output so far, changed, its header]

    def at(self, pos):
        """Where the opcode at `pos` is written (a frame it is past is written out first)."""
        if self.frame is not None and pos >= self.frame[0]:
            self.close_frame()
        return self.frame[1].write if self.frame is not None else self.direct

    def changed(self):
        if self.frame is not None:
            self.frame[2] = True

    def open_frame(self, pos, header, length):
        if self.frame is not None:
            self.close_frame()
        self.frame = [pos + len(header) + length, io.BytesIO(), False, header]

    def close_frame(self):
        _, body, changed, header = self.frame
        self.frame = None
        self.direct(b"\x95" + struct.pack("<Q", body.getbuffer().nbytes) if changed else header)
        self.direct(body.getbuffer())


def rewrite(data, how, write):
    out = Output(write)
    view = memoryview(data)  # what is copied as it is, without a copy
    # Bytes copied as they are wait as one range, [copy_from, the current opcode), and are written
    # only when something else must be (a rewritten value, a frame's header): one write per run of
    # unchanged opcodes, not one per opcode.
    copy_from = 0

    def copy_to(upto):
        nonlocal copy_from
        while copy_from < upto:
            frame = out.frame
            if frame is not None and copy_from >= frame[0]:
                out.close_frame()
                continue
            stop = upto if frame is None else min(upto, frame[0])
            (out.direct if frame is None else frame[1].write)(view[copy_from:stop])
            copy_from = stop

    for name, pos, end in opcodes(data):
        if name == "STOP":
            end = len(data)  # bytes after STOP are copied as they are
        if name == "FRAME":
            copy_to(pos)
            out.open_frame(pos, view[pos : pos + 9], struct.unpack("<Q", view[pos + 1 : pos + 9])[0])
            copy_from = pos + 9
        elif name in TEXT_OPS or name in BYTES_OPS:
            start = pos + 1 + (TEXT_OPS.get(name) or BYTES_OPS[name])
            # Text kept as bytes (group files, IR) is rewritten; binaries (cubins) never are.
            binary = name in BYTES_OPS and data.find(b"\0", start, end) != -1
            if binary or not how.touches(data, start, end):
                continue
            value = view[start:end]
            n = how.new_length(value)
            if n == len(value) and not any(True for _ in how.pattern.finditer(value)):
                continue
            copy_to(pos)
            sink = out.at(pos)
            sink(text_header(n) if name in TEXT_OPS else bytes_header(name, n))
            how.write(value, sink)
            out.changed()
            copy_from = end
        elif name in UNREWRITTEN_TEXT_OPS and how.touches(data, pos, end):
            raise CannotRewrite("a protocol-0 %s at byte %d names the folder" % (name, pos))
    copy_to(len(data))
    if out.frame is not None:
        out.close_frame()


def rewriter(mode, roots):
    if mode == "normalize" and roots:
        return normalizer(roots)
    if mode == "relocate" and len(roots) == 1:
        return relocator(roots[0])
    return None


def refusal(data, how, write):
    """Rewrites one pickle to `write`: None, or exit 3's message where it cannot be rewritten exactly."""
    try:
        rewrite(data, how, write)
    except Exception as e:  # not a pickle, truncated, an opcode this does not know, or not exact
        return "not a pickle kcache can rewrite: %s" % (e,)
    return None


def batch():
    """Many rewrites in one process (a restore's pickles): a JSON job per input line, a JSON result per
    output line, in order. A job that cannot be rewritten says why; the others go on."""
    import json

    for line in sys.stdin:
        if not line.strip():
            continue
        job = json.loads(line)
        how = rewriter(job["mode"], [os.fsencode(r) for r in job["roots"]])
        if how is None:
            result = {"error": "bad job %r" % (job["mode"],), "exit": 2}
        else:
            with open(job["in"], "rb") as f:
                data = f.read()
            with open(job["out"], "wb") as out:
                error = refusal(data, how, out.write)
            data = None
            result = {"error": error, "exit": 3} if error else {"size": os.stat(job["out"]).st_size}
        sys.stdout.write(json.dumps(result) + "\n")
        sys.stdout.flush()


def main():
    args = sys.argv[1:]
    if args == ["batch"]:
        return batch()
    out_file = None
    if len(args) > 2 and args[1] == "--out":
        out_file = args.pop(2)
        args.pop(1)
    how = rewriter(args[0] if args else "", [os.fsencode(r) for r in args[1:]])
    if how is None:
        sys.stderr.write("usage: rewrite.py normalize|relocate [--out FILE] ROOT [ROOT...] | batch\n")
        sys.exit(2)
    data = sys.stdin.buffer.read()
    out = open(out_file, "wb") if out_file else sys.stdout.buffer
    error = refusal(data, how, out.write)
    if error:
        sys.stderr.write(error + "\n")
        sys.exit(3)
    out.flush()


main()
