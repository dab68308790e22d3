# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The lab's vLLM platform plugin: vLLM's own CPU platform, with the Ray executor allowed (lab only).

The spark lab serves the real vLLM (PyPI's CPU build, tests/lab/sparklab/engine_wheelhouse.py). Its CPU platform
refuses Ray: ``Platform.ray_device_key`` is ``""`` ("empty string means the device does not support ray",
``vllm/platforms/interface.py:147-150`` in the 0.32.0 wheel) and ``CpuPlatform`` (``vllm/platforms/cpu.py:103``)
keeps it, so ``RayExecutorV2`` stops with "current platform cpu does not support ray"
(``vllm/v1/executor/ray_executor_v2.py:147-151``). vLLM loads out-of-tree platforms from the entry point group
``vllm.platform_plugins``, and one that activates (its ``register()`` returns a class name) is chosen over the
built-in ones (``resolve_current_platform_cls_qualname``, ``vllm/platforms/__init__.py:243-296``), unless
``VLLM_TARGET_DEVICE=cpu`` is set.

This plugin returns :class:`sparklab_cpu_ray.platform.CpuRayPlatform`: ``CpuPlatform`` with ``ray_device_key = "GPU"``,
the key the CUDA platform has (``vllm/platforms/cuda.py:229``). Every lab node's ``ray start --num-gpus 1`` (the
ray_cluster role's ``--num-gpus``, from the lab's nvidia-smi stand-in) gives Ray one logical GPU a node, which the
Ray executor's placement group and worker actors ask for (``ray_executor_v2.py:276-282``: "GPU" -> ``num_gpus``).
Nothing else of the engine changes: the key is read only by the Ray executors and Ray's placement helpers
(``vllm/v1/executor/ray_utils.py``, ``ray_executor.py``, ``ray_executor_v2.py``, ``vllm/v1/engine/utils.py``).

Built by tests/lab/sparklab/cpu_ray_wheel.py into the lab's engine wheelhouse only, as a requirement of the lab's
relabelled ``vllm`` wheel; nothing the collection ships installs or names it.
"""

from __future__ import annotations

__version__ = "1.0.0"


def register() -> str:
    """vLLM's platform plugin hook: the class of the platform to use."""
    return "sparklab_cpu_ray.platform.CpuRayPlatform"
