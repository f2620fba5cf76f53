"""FileCacheManager as in Triton 3.6 (python/triton/runtime/cache.py), same names and same writes.
On the 3.2 line, entry folders are named in urlsafe base64 (43 characters, '-' and '_' included) as
Triton 3.2 named them; from 3.3 on in base32."""
import base64
import json
import os
import uuid
from typing import Dict, Optional

from .. import HAS_KNOBS


# Entry folders this process wrote a file into (compiles, launchers, autotune results): the
# simulator's own record of what was compiled, which tests hold kcache's claims to.
WRITTEN = set()


def default_cache_dir():
    return os.environ.get("TRITON_CACHE_DIR") or os.path.join(
        os.environ.get("TRITON_HOME") or os.path.expanduser("~"), ".triton", "cache"
    )


def _base32(key):
    # Assume key is a hex string.
    return base64.b32encode(bytes.fromhex(key)).decode("utf-8").rstrip("=")


def _base64(key):
    return base64.urlsafe_b64encode(bytes.fromhex(key)).decode("utf-8").rstrip("=")


class FileCacheManager:
    def __init__(self, key):
        self.key = key
        self.cache_dir = os.path.join(default_cache_dir(), self.key)
        self.lock_path = os.path.join(self.cache_dir, "lock")
        os.makedirs(self.cache_dir, exist_ok=True)

    def _make_path(self, filename) -> str:
        return os.path.join(self.cache_dir, filename)

    def has_file(self, filename) -> bool:
        return os.path.exists(self._make_path(filename))

    def get_file(self, filename) -> Optional[str]:
        if self.has_file(filename):
            return self._make_path(filename)
        return None

    def get_group(self, filename: str) -> Optional[Dict[str, str]]:
        grp_filename = f"__grp__{filename}"
        if not self.has_file(grp_filename):
            return None
        grp_filepath = self._make_path(grp_filename)
        with open(grp_filepath) as f:
            grp_data = json.load(f)
        child_paths = grp_data.get("child_paths", None)
        # Invalid group data.
        if child_paths is None:
            return None
        result = {}
        for c, p in child_paths.items():
            if os.path.exists(p):
                result[c] = p
        return result

    # Note a group of pushed files as being part of a group
    def put_group(self, filename: str, group: Dict[str, str]) -> str:
        grp_contents = json.dumps({"child_paths": group})
        grp_filename = f"__grp__{filename}"
        return self.put(grp_contents, grp_filename, binary=False)

    def put(self, data, filename, binary=True) -> str:
        binary = isinstance(data, bytes)
        if not binary:
            data = str(data)
        filepath = self._make_path(filename)
        # Random ID to avoid any collisions
        rnd_id = str(uuid.uuid4())
        # we use the PID in case a bunch of these around so we can see what PID made it
        pid = os.getpid()
        # use temp dir to be robust against program interruptions
        temp_dir = os.path.join(self.cache_dir, f"tmp.pid_{pid}_{rnd_id}")
        os.makedirs(temp_dir, exist_ok=True)
        temp_path = os.path.join(temp_dir, filename)
        mode = "wb" if binary else "w"
        with open(temp_path, mode) as f:
            f.write(data)
        # Replace is guaranteed to be atomic on POSIX systems if it succeeds
        # so filepath cannot see a partial write
        os.replace(temp_path, filepath)
        os.removedirs(temp_dir)
        WRITTEN.add(os.path.basename(self.cache_dir))
        return filepath


def get_cache_manager(key) -> FileCacheManager:
    return FileCacheManager(_base32(key) if HAS_KNOBS else _base64(key))
