#!/usr/bin/env python3
"""Wraps kcache's single executable in a Python wheel (`npm run build:wheel`; docs/releasing.md), so
that `pip install kcache-<version>-py3-none-manylinux_2_28_<arch>.whl` puts `kcache` on PATH where a
job has Python and no Node.js.

    python3 scripts/build-wheel.py [build/sea/kcache-linux-<arch>...] [--out build/sea]

(by default, a wheel for each executable build/sea holds).

Written with zipfile alone (no build backend, nothing from the network). The wheel holds
kcache/bin/kcache (the executable, mode 0755), kcache/__main__.py (the `kcache` console script and
`python -m kcache`: it execs the executable, so a command costs one Python start-up more than the
executable alone) and the executable's bill of materials and license texts when they lie beside it.
Tagged py3-none (no Python code that cares which Python) and manylinux_2_28: Node.js 20's linux
binaries need glibc 2.28 (Debian 10, Ubuntu 18.10, RHEL 8 and later), so pip on an older system
refuses the wheel instead of installing one that cannot start.
"""

import argparse
import base64
import hashlib
import json
import os
import re
import stat
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# ELF e_machine to the wheel's platform tag and the executable's name.
MACHINES = {0x3E: "x86_64", 0xB7: "aarch64"}
# Every file's date in the wheel: the same executable gives the same wheel.
EPOCH = (1980, 1, 1, 0, 0, 0)

MAIN = '''"""Runs kcache's single executable, which this wheel carries (kcache/bin/kcache)."""
import os
import sys


def main():
    exe = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "kcache")
    # Node reads NODE_OPTIONS as the executable starts, and V8 flags there (--max-old-space-size)
    # stop it loading its start-up snapshot: moved aside, the commands kcache runs get it back
    # (the job's NODE_OPTIONS, over any KCACHE_NODE_OPTIONS it also set).
    if "NODE_OPTIONS" in os.environ:
        os.environ["KCACHE_NODE_OPTIONS"] = os.environ.pop("NODE_OPTIONS")
    os.execv(exe, ["kcache"] + sys.argv[1:])


if __name__ == "__main__":
    main()
'''


def pep440(version):
    """npm's 0.2.0-rc.1 as PEP 440's 0.2.0rc1; a plain x.y.z as it is."""
    m = re.fullmatch(r"(\d+\.\d+\.\d+)(?:-(alpha|beta|rc)\.(\d+))?", version)
    if not m:
        raise SystemExit(f"version {version!r}: expected x.y.z or x.y.z-(alpha|beta|rc).n")
    return m.group(1) + ({"alpha": "a", "beta": "b", "rc": "rc"}[m.group(2)] + m.group(3) if m.group(2) else "")


def machine(path):
    with open(path, "rb") as f:
        head = f.read(20)
    if head[:4] != b"\x7fELF" or int.from_bytes(head[18:20], "little") not in MACHINES:
        raise SystemExit(f"{path}: not a linux x86_64 or aarch64 executable")
    return MACHINES[int.from_bytes(head[18:20], "little")]


def record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def build(exe, out):
    with open(os.path.join(ROOT, "package.json")) as f:
        pkg = json.load(f)
    version = pep440(pkg["version"])
    tag = f"py3-none-manylinux_2_28_{machine(exe)}"
    dist_info = f"kcache-{version}.dist-info"
    files = [
        ("kcache/__init__.py", f'"""kcache {version}: its single executable, run by `kcache` or `python -m kcache`."""\n__version__ = "{version}"\n'.encode(), 0o644),
        ("kcache/__main__.py", MAIN.encode(), 0o644),
        ("kcache/bin/kcache", open(exe, "rb").read(), 0o755),
    ]
    for suffix, name in ((".cdx.json", "sbom.cdx.json"), (".licenses.txt", "THIRD_PARTY_LICENSES.txt")):
        if os.path.exists(exe + suffix):
            files.append((f"{dist_info}/licenses/{name}", open(exe + suffix, "rb").read(), 0o644))
    files += [
        (f"{dist_info}/licenses/LICENSE", open(os.path.join(ROOT, "LICENSE"), "rb").read(), 0o644),
        (
            f"{dist_info}/METADATA",
            "\n".join(
                [
                    "Metadata-Version: 2.1",
                    "Name: kcache",
                    f"Version: {version}",
                    f"Summary: {pkg['description']}",
                    f"License: {pkg['license']}",
                    "Requires-Python: >=3.7",
                    "Classifier: Operating System :: POSIX :: Linux",
                    "",
                    "kcache's single executable (Node.js and its bundled packages inside; no Node.js needed).",
                    "",
                ]
            ).encode(),
            0o644,
        ),
        (
            f"{dist_info}/WHEEL",
            f"Wheel-Version: 1.0\nGenerator: kcache scripts/build-wheel.py\nRoot-Is-Purelib: false\nTag: {tag}\n".encode(),
            0o644,
        ),
        (f"{dist_info}/entry_points.txt", b"[console_scripts]\nkcache = kcache.__main__:main\n", 0o644),
    ]
    record = "\n".join([record_line(n, d) for n, d, _ in files] + [f"{dist_info}/RECORD,,", ""])
    files.append((f"{dist_info}/RECORD", record.encode(), 0o644))

    os.makedirs(out, exist_ok=True)
    wheel = os.path.join(out, f"kcache-{version}-{tag}.whl")
    with zipfile.ZipFile(wheel + ".part", "w", zipfile.ZIP_DEFLATED, compresslevel=6) as z:
        for name, data, mode in files:
            info = zipfile.ZipInfo(name, EPOCH)
            info.external_attr = (stat.S_IFREG | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    os.replace(wheel + ".part", wheel)
    return wheel


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Wrap kcache's single executable in a wheel.")
    sea = os.path.join(ROOT, "build", "sea")
    parser.add_argument("executables", nargs="*", help="build/sea/kcache-linux-<arch> (scripts/build-sea.mjs)")
    parser.add_argument("--out", default=sea, help="folder for the wheels (default build/sea)")
    args = parser.parse_args()
    exes = args.executables or [
        p for p in (os.path.join(sea, f"kcache-linux-{a}") for a in ("x64", "arm64")) if os.path.exists(p)
    ]
    if not exes:
        raise SystemExit("no executable in build/sea: npm run build:sea first")
    for exe in exes:
        print(build(exe, args.out))
