"""GPUTarget as in triton/backends/compiler.py: what a kernel is compiled for."""
from dataclasses import dataclass
from typing import Union


@dataclass(frozen=True)
class GPUTarget:
    backend: str
    arch: Union[int, str]
    warp_size: int
