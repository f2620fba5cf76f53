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


# How each opcode's argument is found, by its code (pickletools' descriptors): the walk in rewrite()
# goes by these lengths alone, decoding no value (pickletools.genops decodes every one: a copy of each
# bytes value, and most of the rewrite's time on a pickle of 100,000 opcodes).
OTHER, TEXT, BYTES, PROTOCOL_0_TEXT, FRAME, STOP = range(6)
_LENGTH_FIELDS = {
    pickletools.TAKEN_FROM_ARGUMENT1: (1, "<B"),
    pickletools.TAKEN_FROM_ARGUMENT4: (4, "<i"),
    pickletools.TAKEN_FROM_ARGUMENT4U: (4, "<I"),
    pickletools.TAKEN_FROM_ARGUMENT8U: (8, "<Q"),
}


def _table():
    """256 entries: None (no such opcode) or (name, role, fixed length, length field bytes, its struct
    format, ends at a newline, at the second newline)."""
    table = [None] * 256
    for op in pickletools.opcodes:
        n = 0 if op.arg is None else op.arg.n
        head, fmt = _LENGTH_FIELDS.get(n, (0, None))
        role = (
            TEXT if op.name in TEXT_OPS
            else BYTES if op.name in BYTES_OPS
            else PROTOCOL_0_TEXT if op.name in UNREWRITTEN_TEXT_OPS
            else FRAME if op.name == "FRAME"
            else STOP if op.name == "STOP"
            else OTHER
        )
        newline = n == pickletools.UP_TO_NEWLINE
        two_lines = newline and op.arg.name == "stringnl_noescape_pair"
        table[op.code.encode("latin-1")[0]] = (op.name, role, max(n, 0), head, fmt, newline, two_lines)
    return table


_OPS = _table()


class Rewrite:
    """What one direction replaces in a value: a pattern and each match's replacement."""

    def __init__(self, pattern, replace, watch):
        self.pattern, self.replace, self.watch = pattern, replace, watch

    def touches(self, data, start, end):
        return any(data.find(w, start, end) != -1 for w in self.watch)

    def candidates(self, data, start, end):
        """Where something watched for begins in data[start:end], as offsets in it, in order (every
        match of the pattern begins at one); None for a value over 1 MiB, scanned whole instead, so
        the list stays small."""
        if end - start > 1 << 20:
            return None
        found = []
        for w in self.watch:
            i = data.find(w, start, end)
            while i != -1:
                found.append(i - start)
                i = data.find(w, i + 1, end)
        found.sort()
        return found

    def matches(self, value, candidates):
        """The pattern's matches in `value` as finditer finds them (leftmost, non-overlapping), tried
        only at `candidates` where given: a regular expression scanning every byte of every value was
        most of a rewrite's time."""
        if candidates is None:
            yield from self.pattern.finditer(value)
            return
        after, match = 0, self.pattern.match
        for c in candidates:
            if c >= after:
                m = match(value, c)
                if m:
                    after = m.end()
                    yield m

    def new_length(self, value, candidates=None):
        return len(value) + sum(len(self.replace(m)) - (m.end() - m.start()) for m in self.matches(value, candidates))

    def write(self, value, write, candidates=None):
        """The value rewritten, written in pieces: never held whole a second time."""
        at, parts = 0, []
        for m in self.matches(value, candidates):
            parts += (value[at : m.start()], self.replace(m))
            at = m.end()
            if len(parts) >= 8192:  # a bounded batch: far fewer writes than pieces
                write(b"".join(parts))
                parts.clear()
        parts.append(value[at:])
        write(b"".join(parts))


class Occurrences:
    """The next place at or after a position where something a rewrite watches for begins, for
    positions that only grow: each string is searched for once per occurrence (C speed), never held
    in a list (a 64 MB pickle may name its folder millions of times)."""

    def __init__(self, data, watch):
        self.data, self.watch, self.none = data, watch, len(data) + 1
        self.at = [-1] * len(watch)

    def first_from(self, pos):
        at, first = self.at, self.none
        for i, w in enumerate(self.watch):
            if at[i] < pos:
                found = self.data.find(w, pos)
                at[i] = found if found != -1 else self.none
            if at[i] < first:
                first = at[i]
        return first


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
    """Writes the pickle with what `how` replaces rewritten; ValueError or CannotRewrite where it cannot.

    Only opcodes where something `how` watches for begins are looked at closely, and a frame
    (protocol 4+: up to 64 KiB of whole opcodes) where nothing does is copied as it is, unwalked, as is
    the rest of a frame past its last such place: walking every opcode of a 22 MB pickle in Python took
    1.5 s of a 1.6 s save of torch.compile's cache on the GPU machine."""
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

    occurrences = Occurrences(data, how.watch)
    size, unpack_from, ops = len(data), struct.unpack_from, _OPS
    pos, frame_end, next_hit = 0, 0, -1
    while True:
        if next_hit < pos:
            next_hit = occurrences.first_from(pos)
        if pos < frame_end <= next_hit:
            # Nothing watched for in the rest of this frame: its opcodes are copied as they are.
            pos = frame_end
            if pos == size and data[pos - 1] == 0x2E:  # the pickler ends its last frame with STOP
                break
            continue
        if pos >= size:
            raise ValueError("no STOP opcode (truncated)")
        entry = ops[data[pos]]
        if entry is None:
            raise ValueError("unknown opcode %#x at byte %d" % (data[pos], pos))
        name, role, fixed, head, fmt, newline, two_lines = entry
        at = pos + 1
        if head:
            if at + head > size:
                raise ValueError("%s at byte %d has no length (truncated)" % (name, pos))
            want = unpack_from(fmt, data, at)[0]
            if want < 0:
                raise ValueError("%s at byte %d has a negative length" % (name, pos))
        elif newline:
            end = data.find(b"\n", at) + 1
            if two_lines and end > 0:
                end = data.find(b"\n", end) + 1
            if end <= 0:
                raise ValueError("no newline after %s at byte %d (truncated)" % (name, pos))
            want = end - at
        else:
            want = fixed
        end = at + head + want
        if end > size:
            raise ValueError(
                "%s at byte %d expected %d bytes, but only %d remain (truncated)" % (name, pos, want, size - at - head)
            )
        if role == STOP:
            break  # bytes after STOP are copied as they are
        if role == FRAME:
            frame_end = end + unpack_from("<Q", data, at)[0]
            if frame_end > size:
                raise ValueError("FRAME at byte %d runs past the end (truncated)" % pos)
            if frame_end > next_hit:
                copy_to(pos)
                out.open_frame(pos, view[pos:end], frame_end - end)
                copy_from = end
            pos = end
            continue
        if next_hit < end and role != OTHER:
            if role == PROTOCOL_0_TEXT:
                if how.touches(data, pos, end):
                    raise CannotRewrite("a protocol-0 %s at byte %d names the folder" % (name, pos))
            else:
                start = at + head
                # Text kept as bytes (group files, IR) is rewritten; binaries (cubins) never are.
                binary = role == BYTES and data.find(b"\0", start, end) != -1
                candidates = None if binary else how.candidates(data, start, end)
                value = view[start:end]
                if candidates is None and not binary:
                    changes = how.touches(data, start, end) and any(True for _ in how.matches(value, None))
                else:
                    changes = bool(candidates) and any(True for _ in how.matches(value, candidates))
                if changes:
                    copy_to(pos)
                    sink = out.at(pos)
                    n = how.new_length(value, candidates)
                    sink(text_header(n) if role == TEXT else bytes_header(name, n))
                    how.write(value, sink, candidates)
                    out.changed()
                    copy_from = end
        pos = end
    copy_to(size)
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
