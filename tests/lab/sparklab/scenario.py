"""What the Molecule scenarios' tests share: a project playbook run on the scenario's inventory, and its recap."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[3]


def playbook(path: str, *args: str) -> subprocess.CompletedProcess[str]:
    """ansible-playbook PROJECT/path on $MOLECULE_INVENTORY_FILE with the project's collections, output captured."""
    return subprocess.run(
        ["ansible-playbook", "-i", os.environ["MOLECULE_INVENTORY_FILE"], str(PROJECT / path), *args],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "ANSIBLE_COLLECTIONS_PATH": str(PROJECT / ".collections"), "ANSIBLE_FORCE_COLOR": "0"},
    )


def recap(run: subprocess.CompletedProcess[str]) -> dict[str, dict[str, int]]:
    """The PLAY RECAP's counts by host: {"host": {"ok": 3, "changed": 0, ...}}."""
    found = re.findall(r"^(\S+)\s+:\s+(ok=.*)$", run.stdout, re.MULTILINE)
    return {host: {key: int(value) for key, value in re.findall(r"(\w+)=(\d+)", counts)} for host, counts in found}


def tail(run: subprocess.CompletedProcess[str], chars: int = 3000) -> str:
    """The end of a run's output, for an assertion's message."""
    return run.stdout[-chars:] + run.stderr[-chars // 2 :]
