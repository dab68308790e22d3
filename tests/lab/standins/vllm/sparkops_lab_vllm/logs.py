# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""vLLM's log lines on stdout, uvicorn's, and the errors vLLM ends with (a traceback on stderr, exit status 1)."""

from __future__ import annotations

import os
import sys
import time

_process = "APIServer"
ENGINE = "EngineCore_DP0"  # the engine core's lines (vLLM runs it in a process of its own; here it is the same one)


def set_process(name: str) -> None:
    """The process name vLLM puts before its log lines: ``(APIServer pid=N)``, ``(EngineCore_DP0 pid=N)``."""
    global _process
    _process = name


def log(level: str, source: str, message: str, process: str | None = None) -> None:
    """One vLLM log line, flushed: ``(APIServer pid=12) INFO 07-01 12:00:00 [api_server.py:1885] message``."""
    stamp = time.strftime("%m-%d %H:%M:%S")
    print(f"({process or _process} pid={os.getpid()}) {level} {stamp} [{source}] {message}", flush=True)


def uvicorn(level: str, message: str) -> None:
    """One uvicorn log line: ``INFO:     Application startup complete.`` (the level padded to 9 columns)."""
    print(f"{level + ':':<9} {message}", flush=True)


class Fatal(Exception):
    """An exception vLLM dies of: its type name (``ValueError``), its message, and what happened before it."""

    def __init__(self, kind: str, message: str, cause: str = "") -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.cause = cause  # a chained exception, "Kind: message", printed first as Python prints __context__


def print_fatal(error: Fatal) -> None:
    """Print ``error`` as Python prints an uncaught exception (the frames of vLLM are not reproduced)."""
    lines = []
    if error.cause:
        lines += ["Traceback (most recent call last):", "  (frames of vLLM are not reproduced by the lab stand-in)", error.cause, ""]
        lines += ["During handling of the above exception, another exception occurred:", ""]
    lines += ["Traceback (most recent call last):", "  (frames of vLLM are not reproduced by the lab stand-in)", f"{error.kind}: {error.message}"]
    sys.stderr.write("\n".join(lines) + "\n")
    sys.stderr.flush()
