# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""``vllm serve``: the phases of a vLLM 0.30.0 start, then serving until SIGTERM or the engine's death.

1. ``setup_server`` (``entrypoints/launchers/launcher.py:254-289``): version and non-default args logged, the API
   port bound without listening; then ``create_engine_config`` (model, cache, parallel configs: checks.py);
2. the engine core starts: the Ray executor (placement group, workers) and the model loading (``load_seconds``,
   the port still closed); an error here is logged by the engine core (``v1/engine/core.py:1366``) and the API
   server dies of ``Engine core initialization failed`` (``v1/engine/utils.py:1320-1328``): exit 1;
3. uvicorn listens (``unhealthy_seconds`` of 503, guessed), then serves;
4. SIGTERM or SIGINT while serving: vLLM's graceful shutdown (launcher.py:126-180), exit 0; before uvicorn
   serves they raise ``KeyboardInterrupt("terminated")`` (``api_server/entry.py:168-173``), which Python ends
   with death by SIGINT;
5. the engine dying while serving: /health answers 503 (``serve/instrumentator/health.py:22-33``) until the
   watchdog (every 5 s, ``launcher.py:187-209``) or a failed request (``exception_handling/handlers/vllm_error.py:63``)
   stops uvicorn cleanly; ``run_server`` returns and ``vllm`` exits 0 (``entry.py:163-201``, ``cli/main.py:100-107``;
   vllm#48966).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import time
from types import FrameType
from typing import Any

from . import checks
from .config import Behaviour, ConfigError, load_behaviour
from .flexible import log_warnings
from .logs import ENGINE, Fatal, HarnessRefusal, log, log_exception, print_fatal, uvicorn
from .model import Model, max_model_len, resolve
from .ray_executor import RayExecutorV2, import_ray
from .ray_worker import MARKER
from .server import Api, HttpServer, bind_server, serve_in_background
from .state import State

ROUTES = (("/health", "GET"), ("/metrics", "GET"), ("/version", "GET"), ("/v1/models", "GET"), ("/v1/chat/completions", "POST"), ("/v1/completions", "POST"))
LOGO = (
    "",
    "       \u2588     \u2588     \u2588\u2584   \u2584\u2588",
    " \u2584\u2584 \u2584\u2588 \u2588     \u2588     \u2588 \u2580\u2584\u2580 \u2588  version {version}",
    "  \u2588\u2584\u2588\u2580 \u2588     \u2588     \u2588     \u2588  model   {model}",
    "   \u2580\u2580  \u2580\u2580\u2580\u2580\u2580 \u2580\u2580\u2580\u2580\u2580 \u2580     \u2580",
    "",
)  # api_utils.py:329-345, monochrome (stdout is no terminal), one line per line of the message


class Stopped(BaseException):
    """SIGTERM or SIGINT arrived (a BaseException: no `except Exception` on the way swallows it)."""


class Resources:
    """What has to be let go at the end, whichever way it comes."""

    def __init__(self) -> None:
        self.server: HttpServer | None = None
        self.serving = False
        self.executor: RayExecutorV2 | None = None

    def release(self) -> None:
        if self.executor is not None:
            self.executor.leave()
        if self.server is not None:
            if self.serving:
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


def catch_stop_signals(state: State) -> None:
    """SIGTERM and SIGINT raise Stopped in the main thread, once."""

    def on_signal(signum: int, frame: FrameType | None) -> None:
        if not state.stopping.is_set():
            state.stopping.set()
            raise Stopped()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)


def pause(seconds: float) -> None:
    """Sleep in short steps (a signal interrupts it)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        time.sleep(min(0.1, max(end - time.monotonic(), 0.0)))


def setup_server(args: argparse.Namespace, non_default: dict[str, Any], version: str, held: Resources) -> None:
    """launcher.py:254-289: log_version_and_model (api_utils.py:325-347), log_non_default_args (:284-286), bind."""
    if os.environ.get("VLLM_DISABLE_LOG_LOGO", "0") not in ("", "0"):
        log("INFO", "api_utils.py:347", f"vLLM server version {version}, serving model {args.model}")
    else:
        for line in LOGO:
            log("INFO", "api_utils.py:347", line.format(version=version, model=args.model))
    log("INFO", "api_utils.py:286", f"non-default args: {non_default}")
    try:
        held.server = bind_server(args.host, args.port)
    except OSError as exc:
        raise Fatal("OSError", f"[Errno {exc.errno}] {exc.strerror}") from None


def engine_config(args: argparse.Namespace, behaviour: Behaviour) -> tuple[Model, int, str, Any]:
    """create_engine_config's checks in its order: model, cache, nodes, parallel (and Ray's import)."""
    model = resolve(args.model, args.revision, args.chat_template)
    length = max_model_len(model, args.max_model_len)
    checks.check_cache_config(args)
    checks.check_nodes(args)
    backend = checks.choose_backend(args, behaviour)
    ray = None
    if backend == "ray":
        try:
            ray = import_ray()
        except ImportError as exc:
            raise checks.ray_import_error(exc, args) from None
    return model, length, backend, ray


def installed_version() -> str:
    """The installed wheel's version (the distribution ``vllm``), for ``crash_at_start_version``."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("vllm")
    except PackageNotFoundError:
        return ""


def start_engine(args: argparse.Namespace, behaviour: Behaviour, state: State, held: Resources, model: Model, backend: str, ray: Any) -> None:
    """The engine core's start: its executor, and the model loading (in Ray mode, within initialize_worker)."""

    def load() -> None:
        log("INFO", "gpu_model_runner.py:5317", f"Starting to load model {model.path}...", ENGINE)
        pause(behaviour.load_seconds)
        if behaviour.crash_at_start or (behaviour.crash_at_start_version and behaviour.crash_at_start_version == installed_version()):
            raise Fatal("RuntimeError", "CUDA error: an illegal memory access was encountered (lab stand-in: crash_at_start)", in_engine=True)
        if not model.has_weights and args.load_format != "dummy":  # model_executor/model_loader/default_loader.py:237-240
            raise Fatal("RuntimeError", f"Cannot find any model weights with `{model.path}`", in_engine=True)
        log("INFO", "default_loader.py:430", f"Loading weights took {behaviour.load_seconds:.2f} seconds", ENGINE)

    if backend == "ray":
        held.executor = RayExecutorV2(args.tensor_parallel_size, args.pipeline_parallel_size, behaviour, state.engine_dead, ray)
        held.executor.start(load)
        catch_stop_signals(state)  # in case ray.init put handlers of its own in place
    else:
        load()


def serve(args: argparse.Namespace, version: str, behaviour: Behaviour, state: State, held: Resources, model: Model, length: int) -> int:
    """build_and_serve and serve_http (entry.py:115-160, launcher.py:50-111), then the watchdog's watch."""
    assert held.server is not None
    held.server.api = Api(
        version=version,
        model=args.model,
        served_names=list(args.served_model_name or [args.model]),
        max_model_len=length,
        api_keys=[key for key in (args.api_key or [os.environ.get("VLLM_API_KEY") or ""]) if key],
        reasoning_parser=args.reasoning_parser or None,
        auto_tools=bool(args.enable_auto_tool_choice and args.tool_call_parser),
        chat_template=model.chat_template,
        max_num_seqs=args.max_num_seqs or 256,
        behaviour=behaviour,
        state=state,
        access_log=not args.disable_uvicorn_access_log and args.uvicorn_log_level in ("info", "debug", "trace"),
        log_requests=bool(args.enable_log_requests),
    )
    log("INFO", "entry.py:139", f"Starting vLLM server on http://{args.host or '0.0.0.0'}:{args.port}")
    log("INFO", "launcher.py:61", "Available routes are:")
    for route, methods in ROUTES:
        log("INFO", "launcher.py:70", f"Route: {route}, Methods: {methods}")
    serve_in_background(held.server)
    held.serving = True
    state.listening.set()
    uvicorn("INFO", f"Started server process [{os.getpid()}]")
    uvicorn("INFO", "Waiting for application startup.")
    uvicorn("INFO", "Application startup complete.")
    if not state.dead.is_set():
        state.phase = "unhealthy"
        pause(behaviour.unhealthy_seconds)
    if not state.dead.is_set():
        state.phase = "healthy"
    return until_the_end(state, behaviour.watchdog_seconds)


def until_the_end(state: State, watchdog_seconds: float) -> int:
    """watchdog_loop (launcher.py:187-209): every watchdog_seconds, a dead engine stops uvicorn; exit 0."""
    next_check = time.monotonic() + watchdog_seconds
    while not state.exit_now.is_set():
        now = time.monotonic()
        if now >= next_check:
            if state.dead.is_set():
                break
            next_check += watchdog_seconds
        state.exit_now.wait(min(0.1, max(next_check - now, 0.0)))
    state.stopping.set()
    for line in ("Shutting down", "Waiting for application shutdown.", "Application shutdown complete.", f"Finished server process [{os.getpid()}]"):
        uvicorn("INFO", line)
    return 0


def graceful_shutdown() -> int:
    """SIGTERM/SIGINT while serving: handle_shutdown (launcher.py:126-180), then uvicorn's shutdown."""
    log("INFO", "launcher.py:129", "[shutdown] API server: shutdown triggered")
    log("INFO", "launcher.py:145", "[shutdown] API server: stopping engine client mode=abort timeout=0s")
    log("INFO", "launcher.py:154", "[shutdown] API server: engine client stopped")
    log("INFO", "launcher.py:157", "[shutdown] API server: signalling HTTP server shutdown")
    log("INFO", "launcher.py:179", "[shutdown] API server: shutting down FastAPI HTTP server")
    for line in ("Shutting down", "Waiting for application shutdown.", "Application shutdown complete."):
        uvicorn("INFO", line)
    return 0


def die_by_sigint() -> None:
    """An uncaught KeyboardInterrupt: Python prints it and ends the process with SIGINT (a shell's 130)."""
    print_fatal(Fatal("KeyboardInterrupt", "terminated"))
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGINT)


def start(args: argparse.Namespace, non_default: dict[str, Any], version: str, behaviour: Behaviour, state: State, held: Resources) -> int:
    setup_server(args, non_default, version, held)
    model, length, backend, ray = engine_config(args, behaviour)
    start_engine(args, behaviour, state, held, model, backend, ray)
    return serve(args, version, behaviour, state, held, model, length)


def run(args: argparse.Namespace, non_default: dict[str, Any], version: str, warnings: list[str]) -> int:
    try:
        behaviour = load_behaviour()
        checks.refuse_unimitated(args)
    except (ConfigError, HarnessRefusal) as exc:
        print(f"vllm (lab stand-in): {exc}", file=sys.stderr, flush=True)
        return 1
    if args.distributed_executor_backend != "ray":  # uni: the GPU is the serving process's; Ray: the actors'
        reexec_with_marker(behaviour.gpu_mib)
    log_warnings(warnings)  # after the re-execution, so that they show once
    state, held = State(), Resources()
    catch_stop_signals(state)
    interrupted = False
    try:
        return start(args, non_default, version, behaviour, state, held)
    except Stopped:
        if state.listening.is_set():
            return graceful_shutdown()
        interrupted = True
        return 130
    except HarnessRefusal as exc:
        print(f"vllm (lab stand-in): {exc}", file=sys.stderr, flush=True)
        return 1
    except Fatal as error:
        state.stopping.set()
        if error.in_engine:
            log_exception("core.py:1366", "EngineCore failed to start.", error, ENGINE)
            error = Fatal("RuntimeError", "Engine core initialization failed. See root cause above. Failed core proc(s): {'EngineCore': 1}")
        print_fatal(error)
        return 1
    finally:
        state.stopping.set()
        with contextlib.suppress(Exception):
            held.release()
        if interrupted:
            die_by_sigint()
