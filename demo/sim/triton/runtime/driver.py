"""triton.runtime.driver as the simulated JIT uses it: the active driver names the device's target.
With no device visible (CUDA_VISIBLE_DEVICES or ASCEND_RT_VISIBLE_DEVICES empty) it fails as Triton
does ("0 active drivers"), unless a driver was set active (set_active, as `kcache prewarm --cpu`'s
workers show the GPU job's device to a library's import). TRITON_SIM_DEVICE_LOG names a file the
simulated driver appends a line to each time it is asked about the device: a test's proof that a
process never touched it."""
import os

from .. import BACKEND
from ..backends.compiler import GPUTarget


class _Utils:
    def get_device_properties(self, device=0):
        _touched()
        return {"max_shared_mem": 232448, "multiprocessor_count": 132, "warpSize": 32}


def _touched():
    visible = os.environ.get("ASCEND_RT_VISIBLE_DEVICES" if BACKEND == "ascend" else "CUDA_VISIBLE_DEVICES")
    log = os.environ.get("TRITON_SIM_DEVICE_LOG")
    if log:
        with open(log, "a") as f:
            f.write(f"{os.getpid()}\n")
    if visible == "":
        raise RuntimeError("0 active drivers ([]). There should only be one.")


class SimDriver:
    utils = _Utils()

    def get_current_target(self):
        _touched()
        if BACKEND == "ascend":
            return GPUTarget("npu", "Ascend910B3", 0)
        return GPUTarget("cuda", 90, 32)

    def get_current_device(self):
        _touched()
        return 0

    def get_current_stream(self, device=None):
        return 0


class DriverConfig:
    def __init__(self):
        self._active = None

    @property
    def active(self):
        if self._active is None:
            self._active = SimDriver()
        return self._active

    def set_active(self, d):
        self._active = d

    def reset_active(self):
        self._active = SimDriver()


driver = DriverConfig()
