"""Run host commands for the lab, failing with the command line and its stderr."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence


class LabError(RuntimeError):
    """A lab step failed; the message says which and why."""


def run(argv: Sequence[str], *, check: bool = True, capture: bool = False, input_text: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``argv``; with ``check`` a non-zero exit raises LabError naming the command."""
    proc = subprocess.run(
        list(argv),
        text=True,
        input=input_text,
        stdout=subprocess.PIPE if capture else None,
        stderr=subprocess.PIPE if capture else None,
        check=False,
    )
    if check and proc.returncode != 0:
        detail = (proc.stderr or "").strip()
        raise LabError(f"command failed (rc={proc.returncode}): {' '.join(argv)}" + (f"\n{detail}" if detail else ""))
    return proc


def out(argv: Sequence[str]) -> str:
    """Run ``argv`` and return its stripped stdout."""
    return run(argv, capture=True).stdout.strip()


def log(message: str) -> None:
    print(f"[spark-lab] {message}", file=sys.stderr, flush=True)
