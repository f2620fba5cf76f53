"""Times kcache's pickle rewrite (python/kcache_pickle/rewrite.py) against an earlier revision of it
on the pickles of a real torch.compile cache that name its folder, and checks both write the same
bytes. Usage: python3 pickle_rewrite_times.py CACHE_DIR OLD_REWRITE_PY NEW_REWRITE_PY > rows.json"""
import importlib.util
import io
import json
import os
import sys
import time


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    argv, sys.argv = sys.argv, ["rewrite.py", "--help-not-run"]
    try:
        spec.loader.exec_module(module)
    except SystemExit:
        pass
    finally:
        sys.argv = argv
    return module


root, old_path, new_path = sys.argv[1:4]
old, new = load(old_path, "rewrite_old"), load(new_path, "rewrite_new")
spellings = sorted({os.fsencode(root), os.fsencode(os.path.realpath(root))}, key=len, reverse=True)
rows = []
for dirpath, _, files in os.walk(root):
    for f in files:
        p = os.path.join(dirpath, f)
        with open(p, "rb") as fh:
            data = fh.read()
        if not data.startswith(b"\x80") or not any(s in data for s in spellings):
            continue
        row = {"file": os.path.relpath(p, root), "bytes": len(data)}
        for label, m in (("old", old), ("new", new)):
            out = io.BytesIO()
            t = time.perf_counter()
            m.rewrite(data, m.normalizer(list(spellings)), out.write)
            row[label + "_s"] = time.perf_counter() - t
            row[label + "_out"] = out.getvalue()
        row["same"] = row.pop("old_out") == row.pop("new_out")
        row["frames"] = data.count(b"\x95")  # an upper bound: FRAME's opcode byte
        rows.append(row)
total = {k: sum(r[k] for r in rows) for k in ("bytes", "old_s", "new_s")}
json.dump({"pickles": len(rows), "total": total, "all_same": all(r["same"] for r in rows), "rows": rows}, sys.stdout, indent=1)
