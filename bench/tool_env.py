"""The environment the benches start their tools in (ansible-playbook, molecule, the lab's commands).

A bench runs as its docstring says, ``.venv/bin/python bench/<name>.py``, with the venv not activated: the tools it
starts are taken from the folder of the Python running it (``sys.executable``'s, not resolved: .venv/bin) first on
PATH, as `make` puts .venv/bin first, and Ansible finds the collection through .collections, as `make` sets it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent


def tool_env(**extra: str) -> dict[str, str]:
    """This process's environment with VENV_BIN first on PATH, ANSIBLE_COLLECTIONS_PATH the repository's
    .collections, then ``extra``."""
    env = dict(os.environ)
    path = [entry for entry in env.get("PATH", os.defpath).split(os.pathsep) if entry and entry != str(VENV_BIN)]
    env["PATH"] = os.pathsep.join([str(VENV_BIN), *path])
    env["ANSIBLE_COLLECTIONS_PATH"] = str(REPO / ".collections")
    env.update(extra)
    return env
