# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""``--distributed-executor-backend ray``: the placement group and worker actors vLLM's Ray executor makes.

It joins the running cluster (``$RAY_ADDRESS``, else ``auto``: it never starts one), asks for one bundle of one GPU
per rank (tensor x pipeline parallel), the first one pinned to this node (``node:<VLLM_HOST_IP>``), waits for it
(bounded), starts one ``RayWorkerWrapper`` actor per bundle carrying the GPU marker, copies the environment vLLM
copies to its workers, and then pings every actor: one that dies (or Ray itself going away) kills the engine.
``ray`` is imported here only, when this backend runs; tests hand in a fake module.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import threading
import time
from typing import Any

from .config import Behaviour
from .logs import ENGINE, Fatal, log
from .server import State

MARKER = "SPARKOPS_LAB_GPU_MIB"
COPY_PREFIXES = ("VLLM_", "NCCL_", "UCX_", "HF_", "HUGGING_FACE_", "LMCACHE_")
COPY_NAMES = ("PYTHONHASHSEED",)
WORKER_SPECIFIC = ("VLLM_HOST_IP", "VLLM_HOST_PORT", "LOCAL_RANK", "CUDA_VISIBLE_DEVICES")
STARTUP_SECONDS = 60.0  # how long the new actors may take to answer their first call


class RayWorkerWrapper:
    """One GPU worker. Ray runs each actor in a process of its own, titled ``ray::RayWorkerWrapper``."""

    def __init__(self, rank: int) -> None:
        self.rank = rank

    def update_environment_variables(self, env: dict[str, str]) -> None:
        os.environ.update(env)

    def ping(self) -> dict[str, Any]:
        return {"rank": self.rank, "pid": os.getpid(), "gpu_mib": os.environ.get(MARKER)}


def engine_log(level: str, source: str, message: str) -> None:
    log(level, source, message, ENGINE)


def import_ray() -> Any:
    try:
        return importlib.import_module("ray")  # Ray mode only
    except ImportError as exc:
        raise Fatal("ValueError", f"Failed to import Ray: {exc}. Please install Ray with `pip install ray`.") from None


def config_root(environ: dict[str, str]) -> str:
    return environ.get("VLLM_CONFIG_ROOT") or os.path.join(environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config"), "vllm")


def env_to_copy(environ: dict[str, str]) -> dict[str, str]:
    """The variables vLLM's Ray executor copies from the driver to its workers.

    Copied: the prefixes VLLM_, NCCL_, UCX_, HF_, HUGGING_FACE_, LMCACHE_, PYTHONHASHSEED and the names and prefixes
    listed (comma-separated) in $VLLM_RAY_EXTRA_ENV_VARS_TO_COPY and $VLLM_RAY_EXTRA_ENV_VAR_PREFIXES_TO_COPY; never
    the worker-specific ones, nor those listed in $VLLM_CONFIG_ROOT/ray_non_carry_over_env_vars.json.
    """
    names = set(COPY_NAMES) | {name.strip() for name in environ.get("VLLM_RAY_EXTRA_ENV_VARS_TO_COPY", "").split(",") if name.strip()}
    prefixes = COPY_PREFIXES + tuple(p.strip() for p in environ.get("VLLM_RAY_EXTRA_ENV_VAR_PREFIXES_TO_COPY", "").split(",") if p.strip())
    excluded = set(WORKER_SPECIFIC)
    non_carry = os.path.join(config_root(environ), "ray_non_carry_over_env_vars.json")
    try:
        with open(non_carry, encoding="utf-8") as handle:
            listed = json.load(handle)
        non_carry_over = {str(name) for name in listed}
    except FileNotFoundError:
        non_carry_over = set()
    except (OSError, ValueError, TypeError) as exc:
        engine_log("WARNING", "ray_env.py:60", f"Failed to load environment variables from {non_carry}: {exc}")
        non_carry_over = set()
    excluded |= non_carry_over
    engine_log("INFO", "ray_env.py:66", f"RAY_NON_CARRY_OVER_ENV_VARS from config: {non_carry_over or 'set()'}")
    return {key: value for key, value in sorted(environ.items()) if key not in excluded and (key in names or key.startswith(prefixes))}


class RayExecutor:
    def __init__(self, world_size: int, behaviour: Behaviour, state: State, ray: Any = None) -> None:
        self.world_size = world_size
        self.behaviour = behaviour
        self.state = state
        self.ray = ray if ray is not None else import_ray()
        self.placement_group: Any = None
        self.actors: list[Any] = []
        self.monitor_thread: threading.Thread | None = None

    def start(self) -> None:
        """Join the cluster, get the placement group and the workers; raise Fatal as vLLM fails."""
        ray = self.ray
        address = os.environ.get("RAY_ADDRESS") or "auto"
        try:
            ray.init(address=address)
        except Exception as exc:  # ConnectionError when no cluster runs there
            raise Fatal(type(exc).__name__, str(exc)) from None
        gpus = float(ray.cluster_resources().get("GPU", 0))
        engine_log("INFO", "ray_utils.py:330", f"Connected to the Ray cluster at {address}: {gpus:g} GPUs, {self.world_size} needed.")
        if self.world_size > gpus:
            engine_log(
                "WARNING",
                "ray_utils.py:352",
                "The number of required GPUs exceeds the total number of available GPUs in the placement group. "
                f"(required: {self.world_size}, available in the cluster: {gpus:g})",
            )
        ip = os.environ.get("VLLM_HOST_IP") or ray.util.get_node_ip_address()
        specs: list[dict[str, float]] = [{"GPU": 1.0} for _rank in range(self.world_size)]
        specs[0][f"node:{ip}"] = 0.001  # vLLM puts the first worker on the driver's node
        self.placement_group = ray.util.placement_group(specs, strategy="PACK")
        self.wait_for_placement_group(specs)
        self.start_workers()
        self.monitor_thread = threading.Thread(target=self.monitor, name="ray-monitor", daemon=True)
        self.monitor_thread.start()

    def wait_for_placement_group(self, specs: list[dict[str, float]]) -> None:
        ray, limit = self.ray, self.behaviour.placement_group_seconds
        ready = self.placement_group.ready()
        started, interval = time.monotonic(), 10.0
        while True:
            left = limit - (time.monotonic() - started)
            if left <= 0:
                break
            done, _pending = ray.wait([ready], timeout=min(interval, left))
            if done:
                engine_log("INFO", "ray_utils.py:290", f"Placement group of {len(specs)} GPU bundles is ready.")
                return
            interval *= 2
            engine_log(
                "INFO",
                "ray_utils.py:277",
                f"Waiting for creating a placement group of specs for {int(time.monotonic() - started)} seconds. specs={specs}. Check `ray status` and "
                "`ray list nodes` to see if you have enough resources, and make sure the IP addresses used by ray cluster are the same as "
                "VLLM_HOST_IP environment variable specified in each node if you are running on a multi-node.",
            )
        required = sum(spec.get("GPU", 0) for spec in specs)
        if required > 1:  # vLLM's message when tensor parallelism asks for more than one GPU
            raise Fatal(
                "ValueError",
                f"Cannot provide a placement group requiring {required} GPUs (placement_group_specs={specs}) within {limit:g} seconds.\n"
                "Tensor parallel size may exceed available GPUs in your cluster. Check resources with `ray status` and `ray list nodes`.\n"
                "If running on K8s with limited GPUs, consider reducing --tensor-parallel-size to match available GPU resources.",
            )
        raise Fatal(
            "ValueError",
            f"Cannot provide a placement group of placement_group_specs={specs} within {limit:g} seconds. See `ray status` and `ray list nodes` "
            "to make sure the cluster has enough resources.",
        )

    def start_workers(self) -> None:
        ray = self.ray
        strategies: Any = importlib.import_module("ray.util.scheduling_strategies")
        runtime_env = {"env_vars": {MARKER: str(self.behaviour.worker_gpu_mib)}}
        for rank in range(self.world_size):
            strategy = strategies.PlacementGroupSchedulingStrategy(
                placement_group=self.placement_group, placement_group_capture_child_tasks=True, placement_group_bundle_index=rank
            )
            worker = ray.remote(num_cpus=0, num_gpus=1, scheduling_strategy=strategy, runtime_env=runtime_env)(RayWorkerWrapper)
            self.actors.append(worker.remote(rank))
        copied = env_to_copy(dict(os.environ))
        engine_log("INFO", "ray_env.py:69", f"Copying the following environment variables to workers: {list(copied)}")
        try:
            ray.get([actor.update_environment_variables.remote(copied) for actor in self.actors], timeout=STARTUP_SECONDS)
            pings = ray.get([actor.ping.remote() for actor in self.actors], timeout=STARTUP_SECONDS)
        except Exception as exc:
            raise Fatal("RuntimeError", f"The Ray workers did not start: {type(exc).__name__}: {exc}") from None
        engine_log("INFO", "ray_distributed_executor.py:390", "Workers: " + ", ".join(f"rank {ping['rank']} pid {ping['pid']}" for ping in pings))

    def monitor(self) -> None:
        """Ping every worker every monitor_seconds; the first that fails (or times out) kills the engine."""
        ray, state = self.ray, self.state
        while not state.stopping.wait(self.behaviour.monitor_seconds):
            try:
                ray.get([actor.ping.remote() for actor in self.actors], timeout=self.behaviour.peer_timeout_seconds)
            except Exception as exc:
                state.engine_dead(f"A Ray worker is gone: {type(exc).__name__}: {exc}")
                return

    def shutdown(self) -> None:
        """Kill the actors, remove the placement group, leave the cluster: at most a few seconds even with Ray gone."""

        def work() -> None:
            ray = self.ray
            for actor in self.actors:
                with contextlib.suppress(Exception):  # best effort: the actor may be gone already
                    ray.kill(actor)
            if self.placement_group is not None:
                with contextlib.suppress(Exception):
                    ray.util.remove_placement_group(self.placement_group)
            with contextlib.suppress(Exception):
                ray.shutdown()

        thread = threading.Thread(target=work, name="ray-shutdown", daemon=True)
        thread.start()
        thread.join(5.0)
