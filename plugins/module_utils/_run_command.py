# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Run a command without a shell and keep what it printed: the runner the module utils take by default.

Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
"""

from __future__ import annotations

import subprocess
import typing as t

# Runs an argv and returns (rc, stdout, stderr); tests pass their own.
Runner = t.Callable[[list[str]], tuple[int, str, str]]


def run_command(argv: list[str]) -> tuple[int, str, str]:
    """Run ``argv`` (no shell, no stdin) and return its rc, stdout and stderr; rc 127 when it cannot start."""
    try:
        proc = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, errors="replace", check=False)
    except OSError as exc:
        return 127, "", f"cannot run {argv[0]}: {exc}"
    return proc.returncode, proc.stdout, proc.stderr
