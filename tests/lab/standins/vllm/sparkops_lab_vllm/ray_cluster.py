# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""vLLM 0.30.0's ``initialize_ray_cluster(parallel_config, require_gpu_on_driver=False)`` as RayExecutorV2 calls it
(``v1/executor/ray_executor_v2.py:293``; ``v1/executor/ray_utils.py:517-662``), and the bundle order it uses.

With ``require_gpu_on_driver=False`` no bundle is pinned to the driver's node (no ``node:<ip>`` key, line
636-649), so the placement group does not depend on ``VLLM_HOST_IP`` matching Ray's node IP.
"""

from __future__ import annotations

import os
import time
from collections import defaultdict
from typing import Any

from .config import Behaviour
from .logs import ENGINE, Fatal, log

DEVICE = "GPU"  # platforms/cuda.py:229 ray_device_key


def engine_log(level: str, source: str, message: str) -> None:
    log(level, source, message, ENGINE)


def connect(ray: Any, world_size: int, behaviour: Behaviour) -> None:
    """ray_utils.py:540-576: usage stats off unless enabled, the CUDA device-count warning, ``ray.init``."""
    if os.environ.get("RAY_USAGE_STATS_ENABLED", "0") != "1":
        os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    gpus = behaviour.gpus_per_node
    if world_size > 1 and world_size > gpus:
        engine_log(
            "WARNING",
            "ray_utils.py:548",
            f"Tensor parallel size ({world_size}) exceeds available GPUs ({gpus}). This may result in Ray placement group allocation "
            f"failures. Consider reducing tensor_parallel_size to {gpus} or less, or ensure your Ray cluster has {world_size} GPUs available.",
        )
    # vLLM calls ray.init(address=None): Ray then reads $RAY_ADDRESS, or starts a local Ray of its own. The lab must
    # never start one, so without $RAY_ADDRESS the stand-in asks for "auto" (connect to this node's Ray, or fail).
    address = None if os.environ.get("RAY_ADDRESS") else "auto"
    try:
        ray.init(address=address, runtime_env=None)
    except Exception as exc:  # ConnectionError when no cluster runs there
        raise Fatal(type(exc).__name__, str(exc), in_engine=True) from None


def create_placement_group(ray: Any, world_size: int, behaviour: Behaviour) -> Any:
    """ray_utils.py:612-655: one ``{"GPU": 1.0}`` bundle per rank, strategy PACK, waited for."""
    engine_log("INFO", "ray_utils.py:613", "No current placement group found. Creating a new placement group.")
    if world_size > ray.cluster_resources().get(DEVICE, 0):
        engine_log("WARNING", "ray_utils.py:619", "The number of required GPUs exceeds the total number of available GPUs in the placement group.")
    specs: list[dict[str, float]] = [{DEVICE: 1.0} for _rank in range(world_size)]
    group = ray.util.placement_group(specs, strategy="PACK")
    wait_until_ready(ray, group, specs, behaviour.placement_group_seconds)
    return group


def wait_until_ready(ray: Any, group: Any, specs: list[dict[str, float]], limit: float) -> None:
    """ray_utils.py:452-514 (PG_WAIT_TIMEOUT = 1800 at line 29; the lab's is placement_group_seconds). vLLM waits 10 s,
    then twice as long each time; here no wait runs past the deadline, so that a short lab timeout holds."""
    started, interval = time.time(), 10.0
    ready_ref = group.ready()
    while time.time() - started < limit:
        ready, _pending = ray.wait([ready_ref], timeout=min(interval, max(limit - (time.time() - started), 0.0)))
        if ready:
            break
        interval *= 2
        engine_log(
            "INFO",
            "ray_utils.py:474",
            f"Waiting for creating a placement group of specs for {int(time.time() - started)} seconds. specs={specs}. Check `ray status` and "
            "`ray list nodes` to see if you have enough resources, and make sure the IP addresses used by ray cluster are the same as "
            "VLLM_HOST_IP environment variable specified in each node if you are running on a multi-node.",
        )
    try:
        ray.get(ready_ref, timeout=0)
    except ray.exceptions.GetTimeoutError:
        required = sum(spec.get(DEVICE, 0) for spec in specs)
        shown = f"{limit:g}"
        if required > 1:
            raise Fatal(
                "ValueError",
                f"Cannot provide a placement group requiring {required} GPUs (placement_group_specs={specs}) within {shown} seconds.\n"
                "Tensor parallel size may exceed available GPUs in your cluster. Check resources with `ray status` and `ray list nodes`.\n"
                "If running on K8s with limited GPUs, consider reducing --tensor-parallel-size to match available GPU resources.",
                in_engine=True,
            ) from None
        raise Fatal(
            "ValueError",
            f"Cannot provide a placement group of placement_group_specs={specs} within {shown} seconds. See `ray status` and `ray list nodes` "
            "to make sure the cluster has enough resources.",
            in_engine=True,
        ) from None


def verify_bundles(ray: Any, group: Any, tensor_parallel_size: int) -> None:
    """ray_utils.py:286-340 without the driver check: warn for each node holding fewer bundles than -tp."""
    table = ray.util.placement_group_table(group)
    per_node: dict[str, int] = defaultdict(int)
    for _index, node_id in table["bundles_to_node_id"].items():
        per_node[node_id] += 1
    for node_id, count in per_node.items():
        if count < tensor_parallel_size:
            engine_log(
                "WARNING",
                "ray_utils.py:326",
                f"tensor_parallel_size={tensor_parallel_size} is bigger than a reserved number of GPUs ({count} GPUs) in a node {node_id}. "
                "Tensor parallel workers can be spread out to 2+ nodes which can degrade the performance unless you have fast interconnect "
                f"across nodes, like Infiniband. To resolve this issue, make sure you have more than {tensor_parallel_size} GPUs available at each node.",
            )


def bundles_sorted_by_node(ray: Any, group: Any) -> list[tuple[int, str, str]]:
    """ray_utils.py:391-449: (bundle index, node id, node IP) of the GPU bundles, the driver's node first."""
    bundle_to_node = {int(index): node for index, node in ray.util.placement_group_table(group)["bundles_to_node_id"].items()}
    node_ip = {node["NodeID"]: node["NodeManagerAddress"] for node in ray.nodes() if node["Alive"]}
    found = [(index, bundle_to_node[index], node_ip[bundle_to_node[index]]) for index, spec in enumerate(group.bundle_specs) if spec.get(DEVICE)]
    driver = ray.get_runtime_context().get_node_id()
    return sorted(found, key=lambda item: (0 if item[1] == driver else 1, item[1]))


def initialize_ray_cluster(ray: Any, world_size: int, tensor_parallel_size: int, behaviour: Behaviour) -> Any:
    connect(ray, world_size, behaviour)
    group = create_placement_group(ray, world_size, behaviour)
    verify_bundles(ray, group, tensor_parallel_size)
    return group
