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


def run_playbook(tmp_path: Path, inventory: dict[str, t.Any], playbook: str, extra: dict[str, t.Any]) -> None:
    """Write ``inventory``, ``playbook`` and ``extra`` (extra vars) into ``tmp_path``, run the play, assert rc 0."""
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump(inventory))
    (tmp_path / "play.yml").write_text(playbook)
    (tmp_path / "extra.json").write_text(json.dumps(extra))
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": str(REPO / ".collections"), "ANSIBLE_FORCE_COLOR": "0", "ANSIBLE_NOCOLOR": "1"}
    proc = subprocess.run(
        [ANSIBLE_PLAYBOOK, "-i", str(tmp_path / "hosts.yml"), str(tmp_path / "play.yml"), "-e", f"@{tmp_path / 'extra.json'}"],
        capture_output=True,
        text=True,
        check=False,
        env=env,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
