"""Runs a Python script (argv[1:]) with a Triton compilation listener that counts kernels compiled and
loaded from cache, then writes {"compiled": n, "loaded": n} to $COUNTS_FILE: how a GPU run proves
what a warm job compiled when kcache's own telemetry file is not there (the action's restore step)."""
import atexit
import json
import os
import runpy
import sys

counts = {"compiled": 0, "loaded": 0}


def listener(*, src, metadata, metadata_group, times, cache_hit):
    counts["loaded" if cache_hit else "compiled"] += 1


from triton import knobs  # noqa: E402

knobs.compilation.listener = listener
atexit.register(lambda: json.dump(counts, open(os.environ["COUNTS_FILE"], "w")))
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
