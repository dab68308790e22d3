# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""vLLM's CPU platform with the Ray executor allowed (the package's docstring says why and where)."""

from __future__ import annotations

from vllm.platforms.cpu import CpuPlatform


class CpuRayPlatform(CpuPlatform):
    """``CpuPlatform`` whose Ray workers ask Ray for one logical GPU each (the lab's ``ray start --num-gpus 1``), and
    whose communicator keeps shared memory to ranks on one host (sparklab_cpu_ray.communicator)."""

    ray_device_key: str = "GPU"

    @classmethod
    def get_device_communicator_cls(cls) -> str:
        """``CpuPlatform``'s (``vllm/platforms/cpu.py:609-612``), host-aware: a group's ranks may be on two nodes."""
        return "sparklab_cpu_ray.communicator.CpuRayCommunicator"
