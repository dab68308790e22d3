# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Parse ``/proc/meminfo`` into the figures that matter on unified memory.

Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.

On a GB10 the GPU allocates from the same memory as the CPU and nvidia-smi reports no memory size, so
``MemAvailable`` is what a new CUDA process can get (NVIDIA's DGX Spark known issues). Page cache (``Cached`` +
``Buffers``) counts in ``MemAvailable`` but not in ``cudaMemGetInfo``'s free memory, which is why it is reported
separately: dropping it is the difference vLLM sees at start.
"""

from __future__ import annotations

import typing as t
from dataclasses import dataclass


class MeminfoError(ValueError):
    """A /proc/meminfo text without the fields needed."""


@dataclass(frozen=True)
class Meminfo:
    total_mib: int
    available_mib: int
    free_mib: int
    page_cache_mib: int
    shmem_mib: int
    swap_free_mib: int

    def as_dict(self) -> dict[str, t.Any]:
        return {
            "total_mib": self.total_mib,
            "available_mib": self.available_mib,
            "free_mib": self.free_mib,
            "page_cache_mib": self.page_cache_mib,
            "shmem_mib": self.shmem_mib,
            "swap_free_mib": self.swap_free_mib,
        }


def parse_meminfo(text: str) -> Meminfo:
    """Parse a ``/proc/meminfo`` text (values in kB) into MiB."""
    kib: dict[str, int] = {}
    for line in text.splitlines():
        name, _sep, rest = line.partition(":")
        fields = rest.split()
        if fields and fields[0].isdigit():
            kib[name.strip()] = int(fields[0])
    missing = [name for name in ("MemTotal", "MemAvailable") if name not in kib]
    if missing:
        raise MeminfoError(f"/proc/meminfo has no {' or '.join(missing)} (kernel older than 3.14?)")
    return Meminfo(
        total_mib=kib["MemTotal"] // 1024,
        available_mib=kib["MemAvailable"] // 1024,
        free_mib=kib.get("MemFree", 0) // 1024,
        page_cache_mib=(kib.get("Cached", 0) + kib.get("Buffers", 0)) // 1024,
        shmem_mib=kib.get("Shmem", 0) // 1024,
        swap_free_mib=kib.get("SwapFree", 0) // 1024,
    )
