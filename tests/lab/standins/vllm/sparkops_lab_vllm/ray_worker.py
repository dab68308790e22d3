# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The Ray actor vLLM 0.30.0's RayExecutorV2 starts per rank: ``RayWorkerProc`` (``v1/executor/ray_executor_v2.py:79-234``).

Ray runs it in a worker process of the Ray node and titles that process itself: ``ray::RayWorkerProc.<method>``
while a method runs and ``ray::RayWorkerProc`` between methods (Ray's ``_raylet.pyx`` execute_task and
``worker.py`` _changeproctitle). vLLM retitles it ``VLLM::Worker_TP<r>`` inside ``initialize_worker``
(``v1/executor/multiproc_executor.py:1062-1095`` via ``utils/system_utils.py:184-198``, when ``setproctitle`` is
importable), which Ray overwrites when the method returns; from then on the actor runs ``run()`` for ever, so the
lasting title is ``ray::RayWorkerProc.run``. The GPU marker comes with the actor's ``runtime_env``.
"""

from __future__ import annotations

import importlib
import os
import socket
import threading
from typing import Any

MARKER = "SPARKOPS_LAB_GPU_MIB"
READY_STR = "READY"  # v1/executor/multiproc_executor.py:603


class RayWorkerProc:
    """One GPU worker: lightweight at creation, initialised once its GPU is known, then ``run()`` until killed."""

    def __init__(self, rank: int, tp_size: int, pp_size: int, is_driver_worker: bool, is_driver_node: bool) -> None:
        self.rank, self.tp_size, self.pp_size = rank, tp_size, pp_size
        self.is_driver_worker, self.is_driver_node = is_driver_worker, is_driver_node
        self.stop = threading.Event()

    def get_node_and_physical_gpu_ids(self) -> tuple[str, list[int]]:
        """ray_executor_v2.py:141-153: the node id and the GPU ids Ray assigned to this actor."""
        ray: Any = importlib.import_module("ray")
        context = ray.get_runtime_context()
        return str(context.get_node_id()), [int(x) for x in context.get_accelerator_ids().get("GPU", [])]

    def create_dist_init_method(self) -> str:
        """ray_executor_v2.py:127-139: ``tcp://<Ray's node IP>:<port>`` (vLLM holds a TCPStore there; the stand-in
        only finds a free port)."""
        ray: Any = importlib.import_module("ray")
        host = ray.util.get_node_ip_address()
        with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as sock:
            sock.bind(("", 0))
            port = sock.getsockname()[1]
        return f"tcp://[{host}]:{port}" if ":" in host else f"tcp://{host}:{port}"

    def initialize_worker(
        self,
        local_rank: int,
        env_vars: dict[str, str],
        distributed_init_method: str,
        driver_env_vars: dict[str, str] | None = None,
        assigned_physical_gpu_ids: list[int] | None = None,
    ) -> None:
        """ray_executor_v2.py:155-188: the driver's variables with setdefault (node-local values win), then
        ``env_vars`` overwriting; then the worker's title (model loading is the driver's load_seconds here)."""
        for key, value in (driver_env_vars or {}).items():
            os.environ.setdefault(key, value)
        os.environ.update(env_vars)
        self.local_rank = local_rank
        self.distributed_init_method = distributed_init_method
        self.assigned_physical_gpu_ids = assigned_physical_gpu_ids
        set_process_title(worker_name(self.rank, self.tp_size, self.pp_size))

    def wait_for_init(self) -> dict[str, Any]:
        """ray_executor_v2.py:213-219 (the response queue handle is not reproduced)."""
        return {"status": READY_STR, "handle": None}

    def run(self) -> None:
        """ray_executor_v2.py:221-234: the worker's busy loop; it ends only with the actor."""
        while not self.stop.wait(3600):
            pass

    def environment(self) -> dict[str, str]:
        """Not vLLM's: lets tests read the actor's environment."""
        return dict(os.environ)


def worker_name(rank: int, tp_size: int, pp_size: int) -> str:
    """multiproc_executor.py:1062-1095 for TP/PP only: ``Worker``, ``_PP<r>`` then ``_TP<r>`` when above 1."""
    name = "Worker"
    if pp_size > 1:
        name += f"_PP{(rank // tp_size) % pp_size}"
    if tp_size > 1:
        name += f"_TP{rank % tp_size}"
    return name


def set_process_title(name: str) -> None:
    """utils/system_utils.py:184-198: ``VLLM::<name>`` (VLLM_PROCESS_NAME_PREFIX), nothing without setproctitle."""
    try:
        setproctitle: Any = importlib.import_module("setproctitle")
    except ImportError:
        return
    setproctitle.setproctitle(f"{os.environ.get('VLLM_PROCESS_NAME_PREFIX', 'VLLM')}::{name}")
