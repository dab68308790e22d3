# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""``vllm serve``: the phases of a vLLM start, then serving until SIGTERM (exit 0) or the engine's death (exit 1).

1. the flags are checked and the model found (errors: a traceback, exit 1), the API port is bound;
2. the backend forms: Ray placement group and workers, or the mp node group;
3. load_seconds: the port is bound but not listening, so connections are refused;
4. unhealthy_seconds: listening, /health and /v1/* answer 503;
5. healthy, until SIGTERM/SIGINT (exit 0) or the engine dies (/health 503 for dead_linger_seconds, then exit 1).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
from types import FrameType
from typing import Any

from .config import Behaviour, ConfigError, load_behaviour
from .logs import ENGINE, Fatal, log, print_fatal, set_process, uvicorn
from .model import max_model_len, resolve
from .mp_backend import MpGroup
from .ray_backend import MARKER, RayExecutor
from .server import Api, HttpServer, State, make_server, serve_in_background


class Stopped(BaseException):
    """SIGTERM or SIGINT arrived (a BaseException: no `except Exception` on the way swallows it)."""


class Resources:
    """What has to be let go at the end, whichever way it comes."""

    def __init__(self) -> None:
        self.server: HttpServer | None = None
        self.thread: threading.Thread | None = None
        self.executor: RayExecutor | None = None
        self.group: MpGroup | None = None

    def release(self) -> None:
        if self.group is not None:
            self.group.shutdown()
        if self.executor is not None:
            self.executor.shutdown()
        if self.server is not None:
            if self.thread is not None:
                self.server.shutdown()
            self.server.server_close()


def reexec_with_marker(mib: int) -> None:
    """Run again with the GPU marker in the environment (/proc/<pid>/environ holds what a process started with)."""
    if MARKER in os.environ or not sys.executable:
        return
    try:
        with open("/proc/self/cmdline", "rb") as handle:
            cmdline = handle.read().split(b"\0")[:-1]
    except OSError:
        return
    os.execve(sys.executable, [sys.executable, *(os.fsdecode(arg) for arg in cmdline[1:])], {**os.environ, MARKER: str(mib)})


def check_flags(args: argparse.Namespace) -> None:
    """What vLLM refuses once the flags are parsed (each a traceback and exit 1)."""
    if args.enable_auto_tool_choice and not args.tool_call_parser:
        raise Fatal("TypeError", "Error: --enable-auto-tool-choice requires --tool-call-parser")
    value = args.gpu_memory_utilization
    if not value > 0 or value > 1:
        kind, text = ("greater_than", "greater than 0") if not value > 0 else ("less_than_equal", "less than or equal to 1")
        raise Fatal(
            "pydantic_core._pydantic_core.ValidationError",
            f"1 validation error for CacheConfig\ngpu_memory_utilization\n  Input should be {text} [type={kind}, input_value={value!r}, input_type=float]\n"
            f"    For further information visit https://errors.pydantic.dev/2.11/v/{kind}",
        )
    for name in ("tensor_parallel_size", "pipeline_parallel_size", "nnodes"):
        if getattr(args, name) < 1:
            raise Fatal("ValueError", f"{name} must be at least 1, got {getattr(args, name)}.")
    if not 0 <= args.node_rank < args.nnodes:
        raise Fatal("ValueError", f"node_rank ({args.node_rank}) must be between 0 and nnodes - 1 ({args.nnodes - 1}).")
    if args.node_rank > 0 and not args.headless:
        raise Fatal("ValueError", f"Node rank {args.node_rank} must be started with --headless: only node rank 0 runs the API server.")
    if args.headless and args.node_rank == 0:
        raise Fatal("ValueError", "--headless is for node ranks > 0: node rank 0 runs the API server (start it without --headless).")


def choose_backend(args: argparse.Namespace, world: int, behaviour: Behaviour) -> str:
    """The executor vLLM picks: mp across nodes; otherwise one process for one GPU, mp on one node, Ray beyond it."""
    backend = args.distributed_executor_backend
    if args.nnodes > 1:
        if backend not in (None, "mp"):
            raise Fatal("ValueError", f"--nnodes {args.nnodes} needs --distributed-executor-backend mp, not {backend}.")
        backend = "mp"
    elif backend is None:
        backend = "uni" if world == 1 else "mp" if world <= behaviour.gpus_per_node else "ray"
    if backend != "ray":
        if world % args.nnodes:
            raise Fatal("ValueError", f"The world size {world} (tensor x pipeline parallel) must be a multiple of nnodes ({args.nnodes}).")
        local = world // args.nnodes
        if local > behaviour.gpus_per_node:
            raise Fatal(
                "RuntimeError",
                f"CUDA error: invalid device ordinal (the {backend} backend starts {local} workers on this node, which has {behaviour.gpus_per_node} GPU)",
            )
    return backend


def pause(seconds: float, state: State) -> None:
    """Sleep, unless the engine dies meanwhile (SIGTERM interrupts it as well)."""
    end = time.monotonic() + seconds
    while not state.dead.is_set() and time.monotonic() < end:
        state.dead.wait(min(0.1, max(end - time.monotonic(), 0.0)))


def until_the_end(state: State, behaviour: Behaviour) -> int:
    """Serve until the engine dies (exit 1, after answering 503 for a while) or rank 0 ends the group (exit 0)."""
    while not state.finished.is_set():
        if state.dead.is_set():
            time.sleep(behaviour.dead_linger_seconds)
            log("ERROR", "launcher.py:110", "Engine is dead: shutting down the API server.")
            return 1
        state.dead.wait(0.2)
    return 0


def start(args: argparse.Namespace, non_default: dict[str, Any], version: str, behaviour: Behaviour, state: State, held: Resources) -> int:
    log("INFO", "api_server.py:1885", f"vLLM API server version {version}")
    log("INFO", "utils.py:328", f"non-default args: {non_default}")
    check_flags(args)
    world = args.tensor_parallel_size * args.pipeline_parallel_size
    backend = choose_backend(args, world, behaviour)
    name = args.model_tag or args.model or "Qwen/Qwen3-0.6B"
    model = resolve(name, args.revision, args.download_dir, args.chat_template)
    length = max_model_len(model, args.max_model_len)
    served = list(args.served_model_name or [name])
    log("INFO", "model.py:547", f"Resolved architecture: {(model.config.get('architectures') or ['?'])[0]}")
    log("INFO", "model.py:1510", f"Using max model len {length}")
    api = Api(
        version=version,
        model=name,
        served_names=served,
        max_model_len=length,
        api_key=args.api_key or os.environ.get("VLLM_API_KEY") or None,
        reasoning_parser=args.reasoning_parser,
        auto_tools=bool(args.enable_auto_tool_choice and args.tool_call_parser),
        chat_template=model.chat_template,
        max_num_seqs=args.max_num_seqs or 256,
        behaviour=behaviour,
        state=state,
        access_log=not args.disable_uvicorn_access_log and args.uvicorn_log_level in ("info", "debug", "trace"),
        log_requests=bool(args.enable_log_requests),
    )
    if not args.headless:  # vLLM binds the port before the engine starts, and listens once it is ready
        try:
            held.server = make_server(args.host, args.port, api)
        except OSError as exc:
            raise Fatal("OSError", f"[Errno {exc.errno}] {exc.strerror}") from None
    if backend == "ray":
        held.executor = RayExecutor(world, behaviour, state)
        held.executor.start()
        catch_stop_signals(state)  # in case ray.init put handlers of its own in place
    elif backend == "mp" and args.nnodes > 1:
        held.group = MpGroup(
            args.node_rank, args.nnodes, args.master_addr, args.master_port, args.tensor_parallel_size, args.pipeline_parallel_size, behaviour, state
        )
        held.group.start()
    log("INFO", "gpu_model_runner.py:2602", f"Starting to load model {name} ({backend} executor, world size {world})...", ENGINE)
    pause(behaviour.load_seconds, state)
    if behaviour.crash_at_start:
        raise Fatal(
            "RuntimeError",
            "Engine core initialization failed. See root cause above. Failed core proc(s): {'EngineCore_DP0': 1}",
            cause="RuntimeError: CUDA error: an illegal memory access was encountered (lab stand-in: crash_at_start)",
        )
    if not model.has_weights and args.load_format != "dummy":
        raise Fatal("RuntimeError", f"Cannot find any model weights with `{name}`")
    if state.dead.is_set():
        return until_the_end(state, behaviour)
    log("INFO", "default_loader.py:267", f"Loading weights took {behaviour.load_seconds:.2f} seconds", ENGINE)
    if held.server is None:
        log("INFO", "multiproc_executor.py:240", f"Node rank {args.node_rank} of {args.nnodes} is serving headless (no API server).")
        state.phase = "healthy"
        return until_the_end(state, behaviour)
    held.thread = serve_in_background(held.server)
    log("INFO", "api_server.py:1971", f"Starting vLLM API server 0 on http://{args.host or '0.0.0.0'}:{args.port}")
    for route, methods in (
        ("/health", "GET"),
        ("/metrics", "GET"),
        ("/version", "GET"),
        ("/v1/models", "GET"),
        ("/v1/chat/completions", "POST"),
        ("/v1/completions", "POST"),
    ):
        log("INFO", "launcher.py:46", f"Route: {route}, Methods: {methods}")
    uvicorn("INFO", f"Started server process [{os.getpid()}]")
    uvicorn("INFO", "Waiting for application startup.")
    uvicorn("INFO", "Application startup complete.")
    state.phase = "unhealthy"
    pause(behaviour.unhealthy_seconds, state)
    if not state.dead.is_set():
        state.phase = "healthy"
    return until_the_end(state, behaviour)


def catch_stop_signals(state: State) -> None:
    """SIGTERM and SIGINT raise Stopped in the main thread, once."""

    def on_signal(signum: int, frame: FrameType | None) -> None:
        if not state.stopping.is_set():
            state.stopping.set()
            raise Stopped()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)


def run(args: argparse.Namespace, non_default: dict[str, Any], version: str) -> int:
    try:
        behaviour = load_behaviour()
    except ConfigError as exc:
        print(f"vllm (lab stand-in): {exc}", file=sys.stderr, flush=True)
        return 1
    reexec_with_marker(behaviour.gpu_mib)
    set_process("Headless" if args.headless else "APIServer")
    state, held = State(), Resources()

    catch_stop_signals(state)
    try:
        return start(args, non_default, version, behaviour, state, held)
    except Stopped:
        if held.thread is not None:
            uvicorn("INFO", "Shutting down")
            uvicorn("INFO", "Waiting for application shutdown.")
            uvicorn("INFO", "Application shutdown complete.")
        return 0
    except Fatal as error:
        state.stopping.set()
        print_fatal(error)
        return 1
    finally:
        state.stopping.set()
        held.release()
