# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""``--distributed-executor-backend ray``: vLLM 0.30.0's default Ray executor, ``RayExecutorV2``
(``VLLM_USE_RAY_V2_EXECUTOR_BACKEND`` defaults to 1, ``envs.py:918-920``; ``v1/executor/abstract.py:61-69``).

``_init_executor`` (``v1/executor/ray_executor_v2.py:282-483``): join the cluster and get the placement group
(ray_cluster), order the bundles driver-node first, start one ``RayWorkerProc`` actor per bundle, ask each for
its node and GPU ids, initialise them with the driver's whole environment (applied with setdefault), then start
their ``run()`` and watch those calls (``start_worker_monitor``, line 485-535): the first that ends means a
worker died, and the executor shuts down and fails the engine. ``ray`` is imported in Ray mode only; tests hand
in a fake module.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import threading
import uuid
from collections.abc import Callable
from typing import Any

from .config import Behaviour
from .logs import ENGINE, Fatal, log, log_exception
from .ray_cluster import bundles_sorted_by_node, initialize_ray_cluster
from .ray_worker import MARKER, READY_STR, RayWorkerProc

# v1/executor/ray_utils.py:33-41: set per worker, never copied from the driver.
WORKER_SPECIFIC_ENV_VARS = frozenset(
    {"VLLM_HOST_IP", "VLLM_HOST_PORT", "VLLM_NIXL_SIDE_CHANNEL_HOST", "LOCAL_RANK", "CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES"}
)
NOSET_DEVICE_ENV_VARS = ("RAY_EXPERIMENTAL_NOSET_CUDA_VISIBLE_DEVICES",)  # platforms/cuda.py:232-234
PRE_IMPORT_ENV_VARS = ("VLLM_USE_BREAKABLE_CUDAGRAPH",)  # v1/executor/ray_env_utils.py:7
MONITOR_WAIT_SECONDS = 5.0  # ray_executor_v2.py:506


def engine_log(level: str, source: str, message: str) -> None:
    log(level, source, message, ENGINE)


def import_ray() -> Any:
    """The import vLLM checks in ParallelConfig (``config/parallel.py:1075-1078``; ``ray_utils.py:277-283``): its
    ValueError comes wrapped in pydantic's ValidationError (``checks.parallel_error``)."""
    return importlib.import_module("ray")


def non_carry_over(environ: dict[str, str]) -> set[str]:
    """vllm/ray/ray_env.py:11-29: the names listed in ``$VLLM_CONFIG_ROOT/ray_non_carry_over_env_vars.json``
    (``envs.py:686-691``: default ``$XDG_CONFIG_HOME/vllm``, else ``~/.config/vllm``)."""
    home = environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    root = os.path.expanduser(environ.get("VLLM_CONFIG_ROOT") or os.path.join(home, "vllm"))
    path = os.path.join(root, "ray_non_carry_over_env_vars.json")
    if not os.path.exists(path):
        return set()
    try:
        with open(path, encoding="utf-8") as handle:
            return {str(name) for name in set(json.load(handle))}
    except ValueError:
        engine_log("WARNING", "ray_env.py:25", f"Failed to parse {path}. Using an empty set for non-carry-over env vars.")
        return set()
    except TypeError as exc:  # set(json.load(f)) of a number: vLLM's import fails the same way
        raise Fatal("TypeError", str(exc), in_engine=True) from None


def driver_env_vars(environ: dict[str, str]) -> dict[str, str]:
    """ray_env_utils.py:10-20 get_driver_env_vars: the driver's whole environment but the excluded names."""
    excluded = WORKER_SPECIFIC_ENV_VARS | non_carry_over(environ)
    return {key: value for key, value in environ.items() if key not in excluded}


def runtime_env(behaviour: Behaviour) -> dict[str, Any]:
    """ray_executor_v2.py:253-271 (with the lab's GPU marker added: the environment the actor's process starts with)."""
    env_vars = dict.fromkeys(NOSET_DEVICE_ENV_VARS, "1")
    env_vars.update({name: os.environ[name] for name in PRE_IMPORT_ENV_VARS if name in os.environ})
    env_vars[MARKER] = str(behaviour.worker_gpu_mib)
    return {"env_vars": env_vars}


def actor_name(instance_id: str, rank: int, tp_size: int, pp_size: int) -> str:
    """ray_utils.py:343-358 build_actor_name (no prefill context parallelism)."""
    name = f"vllm_Worker_{instance_id}"
    if tp_size > 1:
        name += f"_TP{rank % tp_size}"
    if pp_size > 1:
        name += f"_PP{(rank // tp_size) % pp_size}"
    return name


class RayExecutorV2:
    def __init__(self, tp_size: int, pp_size: int, behaviour: Behaviour, on_failure: Callable[[], None], ray: Any = None) -> None:
        self.tp_size, self.pp_size, self.world_size = tp_size, pp_size, tp_size * pp_size
        self.behaviour, self.on_failure = behaviour, on_failure
        self.ray = ray if ray is not None else import_ray()
        self.actors: list[Any] = []
        self.ranks: list[int] = []
        self.run_refs: list[Any] = []
        self.lock = threading.Lock()
        self.shutting_down = False
        self.monitor_thread: threading.Thread | None = None

    def start(self, load: Callable[[], None]) -> None:
        """_init_executor, steps 1 to 9; ``load`` stands for the model loading of initialize_worker."""
        ray = self.ray
        group = initialize_ray_cluster(ray, self.world_size, self.tp_size, self.behaviour)
        driver_node = ray.get_runtime_context().get_node_id()
        instance_id = uuid.uuid4().hex[:5]  # config/vllm.py:1953-1954
        driver_env = driver_env_vars(dict(os.environ))
        strategies: Any = importlib.import_module("ray.util.scheduling_strategies")
        options = {"num_cpus": 0, "num_gpus": float(os.environ.get("VLLM_RAY_PER_WORKER_GPUS", "1.0")), "runtime_env": runtime_env(self.behaviour)}
        for rank, (bundle, node_id, _node_ip) in enumerate(bundles_sorted_by_node(ray, group)):
            strategy = strategies.PlacementGroupSchedulingStrategy(placement_group=group, placement_group_bundle_index=bundle)
            actor_class = ray.remote(RayWorkerProc).options(
                name=actor_name(instance_id, rank, self.tp_size, self.pp_size), scheduling_strategy=strategy, **options
            )
            self.actors.append(
                actor_class.remote(
                    rank=rank,
                    tp_size=self.tp_size,
                    pp_size=self.pp_size,
                    is_driver_worker=rank % self.tp_size == 0,
                    is_driver_node=node_id == driver_node,
                )
            )
            self.ranks.append(rank)
        try:
            self.initialize_workers(load, driver_env)
        except Fatal:
            raise
        except Exception as exc:  # a RayActorError / RayTaskError of an actor that died while starting
            raise Fatal(type(exc).__name__, str(exc), in_engine=True) from None
        self.monitor_thread = threading.Thread(target=self.monitor, name="RayWorkerMonitor", daemon=True)
        self.monitor_thread.start()

    def initialize_workers(self, load: Callable[[], None], driver_env: dict[str, str]) -> None:
        """Steps 5 to 9: GPU ids, the init method, initialize_worker, wait_for_init, run()."""
        ray = self.ray
        placed = ray.get([actor.get_node_and_physical_gpu_ids.remote() for actor in self.actors])
        node_ranks: dict[str, list[int]] = {}
        node_gpus: dict[str, list[int]] = {}
        for index, (node_id, gpu_ids) in enumerate(placed):
            node_ranks.setdefault(node_id, []).append(index)
            node_gpus.setdefault(node_id, []).extend(gpu_ids)
        init_method = ray.get(self.actors[0].create_dist_init_method.remote())
        load()
        refs = []
        for index, (node_id, _gpus) in enumerate(placed):
            local_rank = node_ranks[node_id].index(index)
            refs.append(
                self.actors[index].initialize_worker.remote(local_rank, {}, init_method, driver_env, assigned_physical_gpu_ids=sorted(node_gpus[node_id]))
            )
        ray.get(refs)
        for index, result in enumerate(ray.get([actor.wait_for_init.remote() for actor in self.actors])):
            if result["status"] != READY_STR:
                raise Fatal("RuntimeError", f"Worker {index} failed to initialize: {result}", in_engine=True)
        self.run_refs = [actor.run.remote() for actor in self.actors]

    def monitor(self) -> None:
        """start_worker_monitor's loop (ray_executor_v2.py:500-529)."""
        ray = self.ray
        while not self.shutting_down and ray.is_initialized():
            try:
                done, _pending = ray.wait(self.run_refs, num_returns=1, timeout=MONITOR_WAIT_SECONDS)
            except Exception as exc:
                log_exception("ray_executor_v2.py:508", "RayWorkerMonitor: unexpected error, exiting monitor thread", Fatal(type(exc).__name__, str(exc)))
                return
            if not done or self.shutting_down:
                continue
            dead = [self.ranks[index] for index, ref in enumerate(self.run_refs) if any(ref is finished for finished in done)]
            engine_log("ERROR", "ray_executor_v2.py:520", f"RayWorkerProc rank={dead} died unexpectedly, shutting down executor.")
            self.shutdown()
            self.on_failure()
            return

    def shutdown(self) -> None:
        """ray_executor_v2.py:554-580: once; wait for the monitor (unless it is the caller), kill every actor."""
        with self.lock:
            if self.shutting_down:
                return
            self.shutting_down = True
        thread = self.monitor_thread
        if thread is not None and thread.is_alive() and threading.current_thread() is not thread:
            thread.join(timeout=10)
        for index, actor in enumerate(self.actors):
            rank = self.ranks[index]
            try:
                self.ray.kill(actor)
            except Exception as exc:
                engine_log("ERROR", "ray_executor_v2.py:572", f"Failed to kill actor rank={rank} ({type(exc).__name__}: {exc})")

    def leave(self) -> None:
        """Ray's atexit ``ray.shutdown()`` (the job ends: Ray removes its placement group), bounded to a few seconds."""
        thread = threading.Thread(target=self.shutdown_ray, name="ray-shutdown", daemon=True)
        thread.start()
        thread.join(5.0)

    def shutdown_ray(self) -> None:
        self.shutdown()
        with contextlib.suppress(Exception):
            self.ray.shutdown()
