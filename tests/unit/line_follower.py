# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A child process's output read line by line in the background: the lab servers' request logs in unit tests."""

from __future__ import annotations

import threading
import typing as t


def follow(stream: t.IO[str] | None, lines: list[str]) -> threading.Thread:
    """Append every line of ``stream`` (newline removed) to ``lines`` from a daemon thread, until it ends."""
    assert stream is not None

    def read() -> None:
        for line in stream:
            lines.append(line.rstrip("\n"))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    return reader
