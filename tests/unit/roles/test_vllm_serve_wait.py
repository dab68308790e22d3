# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The vllm_serve role's wait (tasks/wait.yml, the sparkops.inference.serve_wait action) as Ansible runs it, on this
machine (local connection), against a local OpenAI-compatible server that is still loading for its first requests:
the progress lines printed while the task runs, the result, and the API key in no output, at -vvv too."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import typing as t
from pathlib import Path

import pytest
import yaml
from ansible_run import ANSIBLE_PLAYBOOK
from fake_openai import MODEL, FakeVllm, Reply, Seen, models_reply

REPO = Path(__file__).resolve().parents[3]
WAIT = REPO / "roles" / "vllm_serve" / "tasks" / "wait.yml"
SECRET = "sk-lab-wait-0123456789abcdef"


def run(tmp_path: Path, play: list[dict[str, t.Any]], *extra: str) -> subprocess.CompletedProcess[str]:
    inventory = {"all": {"hosts": {"spark-head": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}}}}
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump(inventory))
    (tmp_path / "play.yml").write_text(yaml.safe_dump(play, sort_keys=False))
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": str(REPO / ".collections"), "ANSIBLE_FORCE_COLOR": "0", "ANSIBLE_NOCOLOR": "1"}
    argv = [ANSIBLE_PLAYBOOK, "-i", str(tmp_path / "hosts.yml"), str(tmp_path / "play.yml"), *extra]
    return subprocess.run(argv, capture_output=True, text=True, check=False, env=env, cwd=tmp_path, timeout=120)


@pytest.fixture
def late_server() -> t.Iterator[FakeVllm]:
    """Answers its first three model lists 503 (loading), then serves (with the API key)."""
    server = FakeVllm()
    server.api_key = SECRET
    asked: list[Seen] = []

    def models(seen: Seen) -> Reply:
        asked.append(seen)
        return Reply(503, {"error": "loading"}) if len(asked) <= 3 else models_reply(MODEL)

    server.set("GET", "/v1/models", models)
    server.listen()
    yield server
    server.close()


def test_the_role_waits_printing_progress_until_the_endpoint_serves(tmp_path: Path, late_server: FakeVllm) -> None:
    out = tmp_path / "endpoint.json"
    play = [
        {
            "name": "The vllm_serve role's wait",
            "hosts": "spark-head",
            "gather_facts": False,
            "vars": {
                "vllm_serve_head_ip": "127.0.0.1",
                "vllm_serve_port": late_server.port,
                "vllm_serve_served_model_name": MODEL,
                "__vllm_serve_api_key": SECRET,
                "vllm_serve_ready_timeout_s": 60,
                "vllm_serve_ready_report_s": 1,
                "vllm_serve_smoke_test": True,
                "vllm_serve_journal_lines": 5,
                "__vllm_serve_unit": "sparkops-lab-no-such-unit.service",
            },
            "tasks": [
                {"name": "The wait", "ansible.builtin.include_tasks": str(WAIT)},
                {"name": "Keep the result", "ansible.builtin.copy": {"content": "{{ vllm_serve_endpoint | to_json }}", "dest": str(out), "mode": "0600"}},
            ],
        }
    ]
    proc = run(tmp_path, play, "-vvv")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    result = json.loads(out.read_text())
    assert (result["ready"], result["ended_by"], result["state"]) == (True, "ready", "ready")
    assert result["reports"], result  # at least one step found it loading
    assert all(line.startswith("spark-head: vLLM not ready after ") and ": loading; health: HTTP 200; models: HTTP 503" in line for line in result["reports"])
    # Printed while the task ran, before its result.
    printed = [line.strip() for line in proc.stdout.splitlines() if line.strip().startswith("spark-head: vLLM not ready after ")]
    assert printed == result["reports"]
    assert f"tiny-moe served on http://127.0.0.1:{late_server.port} after" in proc.stdout
    assert SECRET not in proc.stdout and SECRET not in proc.stderr
    assert any(seen.headers.get("Authorization") == f"Bearer {SECRET}" for seen in late_server.requests)  # it was sent


def test_a_closed_port_ends_at_the_timeout_not_ready(tmp_path: Path) -> None:
    server = FakeVllm()  # bound, never listening: refused
    out = tmp_path / "endpoint.json"
    play = [
        {
            "name": "serve_wait against a closed port",
            "hosts": "spark-head",
            "gather_facts": False,
            "tasks": [
                {
                    "name": "Wait",
                    "sparkops.inference.serve_wait": {"url": server.url, "model": MODEL, "timeout": 2, "report_every": 1},
                    "register": "waited",
                },
                {"name": "Keep the result", "ansible.builtin.copy": {"content": "{{ waited | to_json }}", "dest": str(out), "mode": "0600"}},
            ],
        }
    ]
    try:
        proc = run(tmp_path, play)
    finally:
        server.close()
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    result = json.loads(out.read_text())
    assert (result["ready"], result["ended_by"], result["state"], result["changed"]) == (False, "timeout", "refused", False)
    # A step of at most 1 s each, a line after each; on a loaded machine one step (the module's own start included)
    # can take the whole 2 s.
    assert 1 <= len(result["reports"]) <= 3 and result["waited"] >= 2
    assert "(unit state unknown): refused; health: connection refused" in result["reports"][0]
