# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The engine's phase and the process's fate, shared by the HTTP server, the Ray monitor and serve.run."""

from __future__ import annotations

import threading

from .logs import API, ENGINE, Fatal, log_exception

EXECUTOR_FAILED = Fatal("RuntimeError", "Executor failed.")  # v1/engine/core.py:1560-1561
ENGINE_DEAD_MESSAGE = "EngineCore encountered an issue. See stack trace (above) for the root cause."  # v1/engine/exceptions.py:16


class State:
    def __init__(self) -> None:
        self.phase = "loading"  # loading (port closed), unhealthy (503), healthy, dead (503 until the server exits)
        self.listening = threading.Event()  # uvicorn serves: SIGTERM now shuts down cleanly
        self.dead = threading.Event()
        self.stopping = threading.Event()  # a shutdown we asked for: workers going away is then no failure
        self.exit_now = threading.Event()  # terminate_if_errored from a request's error handler

    def engine_dead(self, error: Fatal = EXECUTOR_FAILED) -> None:
        """What vLLM logs when the engine core dies while serving: the core's fatal error (v1/engine/core.py:1368),
        then the API server's output handler failing with EngineDeadError (v1/engine/async_llm.py:843)."""
        if self.stopping.is_set() or self.dead.is_set():
            return
        self.phase = "dead"
        log_exception("core.py:1368", "EngineCore encountered a fatal error.", error, ENGINE)
        log_exception("async_llm.py:843", "AsyncLLM output_handler failed.", Fatal("vllm.v1.engine.exceptions.EngineDeadError", ENGINE_DEAD_MESSAGE), API)
        self.dead.set()
