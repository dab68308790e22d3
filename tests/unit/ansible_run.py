"""Run ansible-playbook from the unit tests on this machine (local connection), with this checkout's collections."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import typing as t
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
ANSIBLE_PLAYBOOK = str(Path(sys.executable).parent / "ansible-playbook")


def play(tmp_path: Path, inventory: dict[str, t.Any], playbook: str, extra: dict[str, t.Any]) -> subprocess.CompletedProcess[str]:
    """Write ``inventory``, ``playbook`` and ``extra`` (extra vars) into ``tmp_path`` and run the play; its result."""
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump(inventory))
    (tmp_path / "play.yml").write_text(playbook)
    (tmp_path / "extra.json").write_text(json.dumps(extra))
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": str(REPO / ".collections"), "ANSIBLE_FORCE_COLOR": "0", "ANSIBLE_NOCOLOR": "1"}
    return subprocess.run(
        [ANSIBLE_PLAYBOOK, "-i", str(tmp_path / "hosts.yml"), str(tmp_path / "play.yml"), "-e", f"@{tmp_path / 'extra.json'}"],
        capture_output=True,
        text=True,
        check=False,
        env=env,
        cwd=tmp_path,
    )


def run_playbook(tmp_path: Path, inventory: dict[str, t.Any], playbook: str, extra: dict[str, t.Any]) -> None:
    """play(), asserting rc 0."""
    proc = play(tmp_path, inventory, playbook, extra)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
