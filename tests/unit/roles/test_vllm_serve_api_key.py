# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The vllm_serve role's API key as Ansible runs it (issue 15, "vLLM API"): an inventory with no vllm_serve_api_key
served an endpoint that answered anyone. Run on this machine (local connection, a head and a worker) with the key's
paths in a temporary folder: the role's tasks/api_key.yml, then what units.yml writes into the secrets file and what
wait.yml hands the readiness probe, both rendered from those task files; and the tasks and variables of
playbooks/status.yml and playbooks/benchmark.yml that find the key. Every run is at -vvv, most with --diff: the key
is never in Ansible's output."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import typing as t
from pathlib import Path

import pytest
import yaml
from ansible_run import ANSIBLE_PLAYBOOK
from vllm_serve_inventory import inventory as cluster_inventory

REPO = Path(__file__).resolve().parents[3]
ROLE = REPO / "roles" / "vllm_serve"
GIVEN = "sk-given-Api-Key-0123456789abcdef"
RECAP = re.compile(r"^(\S+)\s*:\s*ok=\d+\s+changed=(\d+)\s+unreachable=\d+\s+failed=(\d+)", re.MULTILINE)

# The role writes its files as root (owner root, group root), as on a Spark.
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the role's key tasks set owner and group root")


def task_named(path: Path, name: str) -> dict[str, t.Any]:
    (task,) = [task for task in yaml.safe_load(path.read_text()) if task.get("name") == name]
    return task


def secrets_template() -> str:
    """The content units.yml writes into the engine's secrets file (the unit's VLLM_API_KEY), as written."""
    task = task_named(ROLE / "tasks" / "units.yml", "units | Write the engine's secrets (API key, token), readable by root only")
    return str(task["ansible.builtin.copy"]["content"])


def probe_template() -> str:
    """The api_key wait.yml hands sparkops.inference.serve_wait (the readiness probe), as written."""
    return str(task_named(ROLE / "tasks" / "wait.yml", "wait | Wait for the endpoint, reporting progress")["sparkops.inference.serve_wait"]["api_key"])


def inventory() -> dict[str, t.Any]:
    return cluster_inventory(ansible_become=False)


class Lab:
    """The key's paths in ``tmp_path``: the head's root-only folder and the controller's copy."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp = tmp_path
        self.private = tmp_path / "node" / "private"
        self.key_file = self.private / "vllm-api-key"
        self.controller_file = tmp_path / "controller" / "spark-head" / "vllm-api-key"
        self.out = tmp_path / "out"
        self.runs = 0

    def play(self, plays: list[dict[str, t.Any]], extra: dict[str, t.Any], *args: str) -> subprocess.CompletedProcess[str]:
        self.runs += 1
        run_dir = self.tmp / f"run{self.runs}"
        run_dir.mkdir(parents=True)
        (run_dir / "hosts.yml").write_text(yaml.safe_dump(inventory()))
        (run_dir / "play.yml").write_text(yaml.safe_dump(plays, sort_keys=False))
        (run_dir / "extra.json").write_text(json.dumps(extra))
        env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": str(REPO / ".collections"), "ANSIBLE_FORCE_COLOR": "0", "ANSIBLE_NOCOLOR": "1"}
        argv = [ANSIBLE_PLAYBOOK, "-vvv", "-i", str(run_dir / "hosts.yml"), str(run_dir / "play.yml"), "-e", f"@{run_dir / 'extra.json'}", *args]
        return subprocess.run(argv, capture_output=True, text=True, check=False, env=env, cwd=run_dir)

    def role(self, *args: str, **extra: t.Any) -> subprocess.CompletedProcess[str]:
        """tasks/api_key.yml on the head and the worker, then, on each, the secrets file's content and the probe's key
        rendered from units.yml and wait.yml into out/<host>.json (not in check mode, so that check mode's key is
        seen too)."""
        self.out.mkdir(parents=True, exist_ok=True)
        plays = [
            {
                "name": "The vllm_serve role's API key",
                "hosts": "all",
                "gather_facts": False,
                "vars_files": [str(ROLE / "defaults" / "main.yml"), str(ROLE / "vars" / "main.yml")],
                "tasks": [
                    {"name": "Choose and keep the key", "ansible.builtin.include_tasks": str(ROLE / "tasks" / "api_key.yml")},
                    {
                        "name": "Render the secrets file's content and the probe's key",
                        "ansible.builtin.copy": {
                            "content": "{{ {'secrets': test_secrets, 'probe': '(omitted)' if test_probe == omit else test_probe} | to_json }}",
                            "dest": f"{self.out}/{{{{ inventory_hostname }}}}.json",
                            "mode": "0600",
                        },
                        "vars": {"test_secrets": secrets_template(), "test_probe": probe_template()},
                        "check_mode": False,
                        "diff": False,
                        "no_log": True,
                    },
                ],
            }
        ]
        extra = {
            "vllm_serve_backend": "mp",  # a unit, and so a secrets file, on every node
            "vllm_serve_private_dir": str(self.private),
            "vllm_serve_api_key_controller_file": str(self.controller_file),
            **extra,
        }
        return self.play(plays, extra, *args)

    def rendered(self, host: str) -> dict[str, str]:
        return t.cast(dict[str, str], json.loads((self.out / f"{host}.json").read_text()))

    def key(self) -> str:
        return self.key_file.read_text()


def changed(proc: subprocess.CompletedProcess[str]) -> dict[str, int]:
    return {host: int(count) for host, count, _failed in RECAP.findall(proc.stdout)}


def shown(proc: subprocess.CompletedProcess[str]) -> str:
    return proc.stdout + proc.stderr


def assert_root_only(path: Path, mode: int) -> None:
    info = path.stat()
    assert (info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode)) == (0, 0, mode), (path, info)


def test_the_first_run_generates_a_key_kept_root_only_and_a_rerun_keeps_it(tmp_path: Path) -> None:
    lab = Lab(tmp_path)
    first = lab.role("--diff")
    assert first.returncode == 0, shown(first)[-4000:]
    key = lab.key()
    assert re.fullmatch(r"[A-Za-z0-9]{48}", key), "the generated key is not 48 letters and digits"
    assert_root_only(lab.private, 0o700)
    assert_root_only(lab.key_file, 0o600)
    assert lab.controller_file.read_text() == key
    assert stat.S_IMODE(lab.controller_file.stat().st_mode) == 0o600 and stat.S_IMODE(lab.controller_file.parent.stat().st_mode) == 0o700
    # Every rank's secrets file (mp mode) and the readiness probe get the kept key.
    for host in ("spark-head", "spark-worker1"):
        rendered = lab.rendered(host)
        assert f"\nVLLM_API_KEY={key}\n" in rendered["secrets"], host
        assert rendered["probe"] == key, host
    assert key not in shown(first)
    assert f"in {lab.key_file} (root, 0600)" in first.stdout and str(lab.controller_file) in first.stdout and "generated now" in first.stdout

    again = lab.role("--diff")
    assert again.returncode == 0, shown(again)[-4000:]
    assert changed(again) == {"spark-head": 0, "spark-worker1": 0}, again.stdout[-3000:]
    assert lab.key() == key and lab.controller_file.read_text() == key
    assert lab.rendered("spark-head")["probe"] == key and f"\nVLLM_API_KEY={key}\n" in lab.rendered("spark-worker1")["secrets"]
    assert key not in shown(again)
    assert "the one the head kept" in again.stdout


def test_check_mode_writes_nothing_and_shows_no_key(tmp_path: Path) -> None:
    lab = Lab(tmp_path)
    preview = lab.role("--check", "--diff")
    assert preview.returncode == 0, shown(preview)[-4000:]
    assert not lab.private.exists() and not lab.controller_file.parent.exists()
    key = lab.rendered("spark-head")["probe"]
    assert re.fullmatch(r"[A-Za-z0-9]{48}", key) and key not in shown(preview)
    assert "would be generated" in preview.stdout
    assert changed(preview)["spark-head"] > 0  # what a run would write


def test_a_given_key_wins_over_the_kept_one_and_is_kept(tmp_path: Path) -> None:
    lab = Lab(tmp_path)
    assert lab.role().returncode == 0
    generated = lab.key()
    given = lab.role("--diff", vllm_serve_api_key=GIVEN)
    assert given.returncode == 0, shown(given)[-4000:]
    assert lab.key() == GIVEN and lab.controller_file.read_text() == GIVEN
    assert_root_only(lab.key_file, 0o600)
    assert lab.rendered("spark-head")["probe"] == GIVEN and f"\nVLLM_API_KEY={GIVEN}\n" in lab.rendered("spark-head")["secrets"]
    assert GIVEN not in shown(given) and generated not in shown(given)
    assert "vllm_serve_api_key, from the inventory" in given.stdout


def test_a_key_and_unauthenticated_together_are_refused_naming_both_and_nothing_changes(tmp_path: Path) -> None:
    lab = Lab(tmp_path)
    refused = lab.role("--diff", vllm_serve_api_key=GIVEN, vllm_serve_unauthenticated=True)
    assert refused.returncode != 0
    assert "vllm_serve_api_key is set and vllm_serve_unauthenticated is true" in refused.stdout, refused.stdout[-3000:]
    assert GIVEN not in shown(refused)
    assert not lab.private.exists() and not lab.controller_file.parent.exists() and list(lab.out.iterdir()) == []


@pytest.mark.parametrize("bad", ["short-key-12345", "a key with spaces 0123456789", "k" * 4097], ids=["15-chars", "spaces", "4097-chars"])
def test_a_bad_key_is_refused_without_showing_it(tmp_path: Path, bad: str) -> None:
    lab = Lab(tmp_path)
    refused = lab.role(vllm_serve_api_key=bad)
    assert refused.returncode != 0
    assert "vllm_serve_api_key must be 16 to 4096 printable characters without spaces" in refused.stdout, refused.stdout[-3000:]
    assert bad not in shown(refused)
    assert not lab.private.exists() and list(lab.out.iterdir()) == []


def test_unauthenticated_serves_with_no_key_removes_the_heads_and_says_so(tmp_path: Path) -> None:
    lab = Lab(tmp_path)
    assert lab.role().returncode == 0
    kept = lab.key()
    opened = lab.role("--diff", vllm_serve_unauthenticated=True)
    assert opened.returncode == 0, shown(opened)[-4000:]
    assert not lab.key_file.exists()
    assert lab.controller_file.read_text() == kept  # the controller's copy stays, as Ray's token's does
    for host in ("spark-head", "spark-worker1"):
        assert "VLLM_API_KEY" not in lab.rendered(host)["secrets"], host
    assert lab.rendered("spark-head")["probe"] == "(omitted)"
    assert "WARNING: vllm_serve_unauthenticated is true" in opened.stdout and "answers anyone" in opened.stdout
    assert kept not in shown(opened)
    fresh = Lab(tmp_path / "fresh")
    assert fresh.role(vllm_serve_unauthenticated=True).returncode == 0
    assert not fresh.private.exists() and not fresh.controller_file.exists()


def playbook_part(playbook: str, task_name: str, var_names: tuple[str, ...]) -> tuple[dict[str, t.Any], dict[str, t.Any]]:
    """One task and some play variables of playbooks/<playbook>, as written."""
    (play, *_rest) = yaml.safe_load((REPO / "playbooks" / playbook).read_text())
    (task,) = [task for task in play["tasks"] if task.get("name") == task_name]
    variables = dict(play.get("vars") or {})
    for name in play.get("vars_files") or []:
        variables.update(yaml.safe_load((REPO / "playbooks" / name).read_text()))
    return task, {name: variables[name] for name in var_names}


# playbooks/<name>.yml's task that reads the head's key is "<Title> | Read the API key the head keeps (...)", its
# variables __<name>_api_key and __<name>_api_key_file; the facts its task's conditions read (status: on the head,
# reachable).
FINDERS: dict[str, tuple[str, dict[str, t.Any]]] = {"status": ("Status", {"__status_head": True, "__status_recon": {}}), "benchmark": ("Benchmark", {})}


@pytest.mark.parametrize("finder", sorted(FINDERS))
def test_status_and_benchmark_send_the_key_the_head_keeps(tmp_path: Path, finder: str) -> None:
    """After a deploy with a generated key and none in the inventory, status.yml and benchmark.yml read the head's key
    (their sample completion and sweep were refused with 401); the inventory's wins; none with unauthenticated."""
    lab = Lab(tmp_path)
    kept = "Kept0by0the0head0" + "x" * 31  # as the role keeps it: root's, 0600, in a 0700 folder
    lab.private.mkdir(parents=True, mode=0o700)
    lab.key_file.write_text(kept)
    lab.key_file.chmod(0o600)
    lab.out.mkdir()
    title, context = FINDERS[finder]
    playbook, key_var = f"{finder}.yml", f"__{finder}_api_key"
    task, play_vars = playbook_part(playbook, f"{title} | Read the API key the head keeps (when the inventory gives none)", (key_var, f"{key_var}_file"))

    def sent(name: str, **extra: t.Any) -> tuple[str, subprocess.CompletedProcess[str]]:
        plays = [
            {
                "name": f"What {playbook} sends",
                "hosts": "spark_head",
                "gather_facts": False,
                "vars": {**play_vars, **context},
                "tasks": [
                    task,
                    {
                        "name": "Write the key it sends",
                        "ansible.builtin.copy": {"content": "{{ " + key_var + " }}", "dest": f"{lab.out}/{name}", "mode": "0600"},
                        "no_log": True,
                    },
                ],
            }
        ]
        proc = lab.play(plays, {"vllm_serve_private_dir": str(lab.private), **extra}, "--diff")
        assert proc.returncode == 0, shown(proc)[-4000:]
        return (lab.out / name).read_text(), proc

    key, proc = sent("kept")
    assert key == kept and kept not in shown(proc)
    key, proc = sent("given", vllm_serve_api_key=GIVEN)
    assert key == GIVEN and GIVEN not in shown(proc) and kept not in shown(proc)
    key, proc = sent("open", vllm_serve_unauthenticated=True)
    assert key == ""


def test_the_role_chooses_the_key_before_anything_changes_and_its_teardown_removes_it() -> None:
    """tasks/main.yml imports api_key.yml right after the settings checks (the memory guard's among them; before the
    install and the units, so that a refusal changes nothing; the checks and the key share a block, under every tag of
    the role); the teardown removes the head's key (the controller's copy stays, as Ray's token's)."""
    top = yaml.safe_load((ROLE / "tasks" / "main.yml").read_text())
    assert top[0]["tags"] == ["vllm_serve_install", "vllm_serve_configure", "vllm_serve_run"], top[0]
    tasks = [*top[0]["block"], *top[1:]]
    assert tasks[0].get("ansible.builtin.import_tasks") == "settings_check.yml" and "ansible.builtin.assert" in tasks[1], tasks[:2]
    imports = [task.get("ansible.builtin.import_tasks") for task in tasks[2:5]]
    assert imports == ["memory_guard_check.yml", "api_key.yml", "install_venv.yml"], tasks[:5]
    teardown = task_named(
        ROLE / "tasks" / "teardown.yml",
        "teardown | Remove the engine's environment, secrets, API key, gate, rank supervisor, their settings and the compile caches",
    )
    assert "{{ vllm_serve_api_key_file }}" in teardown["loop"] and not any("controller" in item for item in teardown["loop"])
