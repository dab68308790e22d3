# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""vLLM's log lines on stdout, uvicorn's, and the exceptions vLLM dies of (a traceback on stderr).

vLLM 0.30.0 logs to stdout (``envs.py:836`` VLLM_LOGGING_STREAM), each line ``LEVEL MM-DD HH:MM:SS [file:line]
message`` (``logger.py:22-26``) behind its process's prefix ``(APIServer pid=N)`` / ``(EngineCore pid=N)``
(``utils/system_utils.py:237`` decorate_logs; ``v1/engine/utils.py:192`` names the engine process ``EngineCore``
when there is no data parallelism).
"""

from __future__ import annotations

import os
import sys
import time

API = "APIServer"
ENGINE = "EngineCore"  # the engine core's lines (vLLM runs it in a process of its own; here it is the same one)
CAUSE = "The above exception was the direct cause of the following exception:"
CONTEXT = "During handling of the above exception, another exception occurred:"
FRAMES = "  (frames of vLLM are not reproduced by the lab stand-in)"


def log(level: str, source: str, message: str, process: str = API) -> None:
    """One vLLM log line, flushed: ``(APIServer pid=12) INFO 07-01 12:00:00 [api_utils.py:347] message``.

    ``process=""``: no prefix, as before run_server decorates the logs (``api_server/entry.py:166``)."""
    stamp = time.strftime("%m-%d %H:%M:%S")
    prefix = f"({process} pid={os.getpid()}) " if process else ""
    print(f"{prefix}{level} {stamp} [{source}] {message}", flush=True)


def uvicorn(level: str, message: str) -> None:
    """One uvicorn log line: ``INFO:     Application startup complete.`` (the level padded to 9 columns)."""
    print(f"{level + ':':<9} {message}", flush=True)


class Fatal(Exception):
    """An exception vLLM dies of: its type name (``ValueError``), its message, and the exception before it.

    ``cause`` is a chained exception, ``Kind: message``; ``direct`` says whether it was chained with ``raise ...
    from`` (Python prints "direct cause") or raised while handling it ("During handling"). ``in_engine`` marks an
    error of the engine core's start: vLLM logs it in the engine process and the API server dies of
    ``Engine core initialization failed`` instead.
    """

    def __init__(self, kind: str, message: str, cause: str = "", direct: bool = False, in_engine: bool = False) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.cause = cause
        self.direct = direct
        self.in_engine = in_engine


class HarnessRefusal(Exception):
    """What the stand-in does not imitate (a test-harness message, not vLLM's): exit 1."""


def traceback_lines(error: Fatal) -> list[str]:
    """``error`` as Python prints an uncaught exception (the frames of vLLM are elided)."""
    lines = []
    if error.cause:
        lines += ["Traceback (most recent call last):", FRAMES, error.cause, "", CAUSE if error.direct else CONTEXT, ""]
    return [*lines, "Traceback (most recent call last):", FRAMES, f"{error.kind}: {error.message}"]


def print_fatal(error: Fatal) -> None:
    sys.stderr.write("\n".join(traceback_lines(error)) + "\n")
    sys.stderr.flush()


def log_exception(source: str, message: str, error: Fatal, process: str = ENGINE) -> None:
    """``logger.exception``: the message, then each traceback line behind the same header, as vLLM's
    NewLineFormatter repeats it after every newline (``logging_utils/formatter.py:70-74``; its ``\r`` is left out)."""
    for line in [message, *traceback_lines(error)]:
        log("ERROR", source, line, process)
