# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the ray_cluster_info module: main() with run_command mocked."""

from __future__ import annotations

import functools
import json
import sys
import typing as t
from pathlib import Path
from unittest.mock import MagicMock, patch

import pytest
from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.testing import patch_module_args
from ansible_collections.sparkops.inference.plugins.module_utils import _ray_cluster
from ansible_collections.sparkops.inference.plugins.module_utils._ray_cluster import DEFAULT_PYTHON, SCRIPT
from ansible_collections.sparkops.inference.plugins.modules import ray_cluster_info
from fake_clock import FakeClock

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "ray"
ADDRESS = "192.168.200.11:6379"
FABRIC = {"spark-head": "192.168.200.11", "spark-worker1": "192.168.200.12", "spark-worker2": "192.168.200.13"}
VERSIONS_ONLY = json.dumps({"python_executable": "/opt/sparkops/ray/bin/python", "python_version": "3.11.7", "ray_version": "2.60.0"})
RESULT_KEYS = {"changed", "nodes", "alive_nodes", "total_gpus", "ready", "missing", "unexpected_nodes"}

Command = tuple[int, str, str]


def fixture_text(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def all_alive() -> str:
    """The three-node fixture with every node alive and one GPU each."""
    data = json.loads(fixture_text("nodes_three_nodes.json"))
    for node in data["nodes"]:
        node["Alive"] = node["alive"] = True
        node["Resources"]["GPU"] = 1.0
    return json.dumps(data)


def run_main(
    args: dict[str, t.Any],
    capsys: pytest.CaptureFixture[str],
    outputs: t.Sequence[Command] = ((0, VERSIONS_ONLY, ""),),
    docker: str | None = "/usr/bin/docker",
    clock: FakeClock | None = None,
) -> tuple[dict[str, t.Any], MagicMock, MagicMock]:
    """Run main() with ``args``; run_command answers ``outputs`` in turn (the last one forever).

    Returns the module result, the run_command mock and the get_bin_path mock.
    """
    answers = list(outputs)

    def answer(argv: list[str], **kwargs: t.Any) -> Command:
        return answers.pop(0) if len(answers) > 1 else answers[0]

    fake = clock or FakeClock()
    wait = functools.partial(_ray_cluster.wait_for_cluster, clock=fake.clock, sleep=fake.sleep)
    with (
        patch_module_args(args),
        patch.object(AnsibleModule, "run_command", side_effect=answer) as run_command,
        patch.object(AnsibleModule, "get_bin_path", return_value=docker) as get_bin_path,
        patch.object(ray_cluster_info, "wait_for_cluster", wait),
        pytest.raises(SystemExit),
    ):
        ray_cluster_info.main()
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert isinstance(result, dict)
    return result, run_command, get_bin_path


def test_versions_only(capsys: pytest.CaptureFixture[str]) -> None:
    result, run_command, get_bin_path = run_main({"python": sys.executable}, capsys)
    assert not result.get("failed"), result
    assert result["changed"] is False
    assert result["ray_version"] == "2.60.0"
    assert result["python_version"] == "3.11.7"
    assert result["nodes"] == [] and result["ready"] is False and result["missing"] == []
    assert set(result) >= RESULT_KEYS
    run_command.assert_called_once()
    argv = run_command.call_args.args[0]
    assert argv == [sys.executable, "-c", SCRIPT, json.dumps({"address": None, "node_ip_address": None})]
    assert run_command.call_args.kwargs == {"expand_user_and_vars": False, "environ_update": {}}
    get_bin_path.assert_not_called()


def test_a_token_file_gives_ray_the_mode_and_the_path_never_the_token(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A cluster with token authentication refuses a client without the token: the module's program gets the mode and
    the file's path in its environment (Ray's token loader reads the file), not the token in its arguments."""
    token = tmp_path / "ray-auth-token"
    token.write_text("f" * 64)
    result, run_command, _get_bin_path = run_main({"python": sys.executable, "auth_token_file": str(token)}, capsys)
    assert not result.get("failed"), result
    assert run_command.call_args.kwargs["environ_update"] == {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(token)}
    assert "f" * 64 not in json.dumps([run_command.call_args.args, result])


def test_default_python_on_the_host(capsys: pytest.CaptureFixture[str]) -> None:
    with patch.object(ray_cluster_info.os, "access", return_value=True) as access:
        result, run_command, _get_bin_path = run_main({}, capsys)
    assert not result.get("failed"), result
    access.assert_any_call(DEFAULT_PYTHON, ray_cluster_info.os.X_OK)
    assert run_command.call_args.args[0][0] == "/opt/sparkops/ray/bin/python"


def test_missing_interpreter_fails_clearly(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    missing = str(tmp_path / "no-such-python")
    result, run_command, _get_bin_path = run_main({"python": missing}, capsys)
    assert result["failed"] is True
    assert result["msg"] == f"the Ray interpreter {missing} is not an executable on this host (is Ray installed?)"
    run_command.assert_not_called()


def test_waits_for_every_expected_node(capsys: pytest.CaptureFixture[str]) -> None:
    head_only = fixture_text("nodes_three_nodes.json")
    clock = FakeClock()
    args = {
        "python": sys.executable,
        "address": ADDRESS,
        "node_ip_address": "192.168.200.11",
        "expected_nodes": FABRIC,
        "expected_gpus_per_node": 1,
        "timeout": 60,
        "poll_interval": 5,
    }
    result, run_command, _get_bin_path = run_main(args, capsys, outputs=[(0, head_only, ""), (0, all_alive(), "")], clock=clock)
    assert not result.get("failed"), result
    assert result["ready"] is True
    assert result["missing"] == []
    assert result["alive_nodes"] == 3
    assert result["total_gpus"] == 3.0
    assert [n["ip"] for n in result["nodes"]] == list(FABRIC.values())
    assert result["nodes"][0]["is_head"] is True
    assert result["unexpected_nodes"] == []
    assert run_command.call_count == 2
    assert clock.sleeps == [5]
    assert json.loads(run_command.call_args.args[0][3]) == {"address": ADDRESS, "node_ip_address": "192.168.200.11"}


def test_single_look_at_the_real_head_reports_it(capsys: pytest.CaptureFixture[str]) -> None:
    args = {"python": sys.executable, "address": "127.0.0.1:6399", "expected_nodes": {"spark-head": "127.0.0.1"}, "expected_gpus_per_node": 1}
    result, run_command, _get_bin_path = run_main(args, capsys, outputs=[(0, fixture_text("nodes_single_head.json"), "")])
    assert not result.get("failed"), result
    assert result["ready"] is True
    (node,) = result["nodes"]
    assert set(node) == {"node_id", "ip", "alive", "state", "is_head", "hostname", "resources", "gpus"}
    assert node["ip"] == "127.0.0.1" and node["state"] == "ALIVE" and node["gpus"] == 1.0 and node["is_head"] is True
    run_command.assert_called_once()


def test_timeout_names_the_missing_hosts(capsys: pytest.CaptureFixture[str]) -> None:
    clock = FakeClock()
    args = {"python": sys.executable, "address": ADDRESS, "expected_nodes": FABRIC, "expected_gpus_per_node": 1, "timeout": 120, "poll_interval": 30}
    result, run_command, _get_bin_path = run_main(args, capsys, outputs=[(0, fixture_text("nodes_three_nodes.json"), "")], clock=clock)
    assert result["failed"] is True
    assert result["msg"] == (
        "Ray cluster at 192.168.200.11:6379: after 120s, spark-worker1 (192.168.200.12) is alive with 0 GPU, expected 1; "
        "spark-worker2 (192.168.200.13) is DEAD. Last state seen: 2 alive nodes: 192.168.200.11 (head, 1 GPU), 192.168.200.12 (0 GPU)"
    )
    assert result["missing"] == ["spark-worker1", "spark-worker2"]
    assert result["ready"] is False
    assert result["alive_nodes"] == 2
    assert len(result["nodes"]) == 3
    assert clock.sleeps == [30, 30, 30, 30]
    assert run_command.call_count == 5


def test_unexpected_nodes_do_not_fail(capsys: pytest.CaptureFixture[str]) -> None:
    args = {"python": sys.executable, "address": ADDRESS, "expected_nodes": {"spark-head": "192.168.200.11"}, "expected_gpus_per_node": 1}
    result, _run_command, _get_bin_path = run_main(args, capsys, outputs=[(0, all_alive(), "")])
    assert not result.get("failed"), result
    assert result["ready"] is True
    assert [n["ip"] for n in result["unexpected_nodes"]] == ["192.168.200.12", "192.168.200.13"]


def test_unreachable_cluster(capsys: pytest.CaptureFixture[str]) -> None:
    error = "ConnectionError: Failed to connect to Ray cluster at 192.168.200.11:6379"
    stdout = json.dumps({"python_version": "3.11.7", "ray_version": "2.60.0", "connect_error": error})
    stderr = "[W rpc_client.h:153] Failed to connect to GCS at address 192.168.200.11:6379 within 5 seconds.\n"
    args = {"python": sys.executable, "address": ADDRESS, "expected_nodes": FABRIC}
    result, _run_command, _get_bin_path = run_main(args, capsys, outputs=[(0, stdout, stderr)])
    assert result["failed"] is True
    assert result["msg"].startswith(f"Ray cluster at {ADDRESS}: cannot connect (ray.init by {sys.executable}): ConnectionError: Failed to connect")
    assert result["msg"].endswith("stderr tail:\n[W rpc_client.h:153] Failed to connect to GCS at address 192.168.200.11:6379 within 5 seconds.")
    assert result["missing"] == list(FABRIC)
    assert result["ray_version"] == "2.60.0"
    assert result["nodes"] == []


def test_ray_not_installed(capsys: pytest.CaptureFixture[str]) -> None:
    stderr = "Traceback (most recent call last):\n  File \"<string>\", line 16, in <module>\nModuleNotFoundError: No module named 'ray'\n"
    result, _run_command, _get_bin_path = run_main({"python": sys.executable, "address": ADDRESS}, capsys, outputs=[(1, "", stderr)])
    assert result["failed"] is True
    assert result["msg"] == f"ray is not importable by {sys.executable}: ModuleNotFoundError: No module named 'ray'"


def test_container_argv(capsys: pytest.CaptureFixture[str]) -> None:
    args = {"container": "ray-head", "address": ADDRESS, "node_ip_address": "192.168.200.11"}
    result, run_command, get_bin_path = run_main(args, capsys, outputs=[(0, all_alive(), "")])
    assert not result.get("failed"), result
    get_bin_path.assert_called_once_with("docker", required=True)
    argv = run_command.call_args.args[0]
    assert argv[:6] == ["/usr/bin/docker", "exec", "ray-head", "python3", "-c", SCRIPT]
    assert json.loads(argv[6]) == {"address": ADDRESS, "node_ip_address": "192.168.200.11"}
    assert result["alive_nodes"] == 3


def test_container_with_its_own_python(capsys: pytest.CaptureFixture[str]) -> None:
    result, run_command, _get_bin_path = run_main({"container": "ray", "python": "/opt/ray/bin/python"}, capsys)
    assert not result.get("failed"), result
    assert run_command.call_args.args[0][:4] == ["/usr/bin/docker", "exec", "ray", "/opt/ray/bin/python"]


def test_container_ray_missing_names_the_container(capsys: pytest.CaptureFixture[str]) -> None:
    stdout = json.dumps({"python_version": "3.12.3", "import_error": "ModuleNotFoundError: No module named 'ray'"})
    result, _run_command, _get_bin_path = run_main({"container": "ray-head"}, capsys, outputs=[(0, stdout, "")])
    assert result["msg"] == "ray is not importable by python3 in container ray-head: ModuleNotFoundError: No module named 'ray'"


def test_check_mode_reads_the_same(capsys: pytest.CaptureFixture[str]) -> None:
    args = {"python": sys.executable, "address": ADDRESS, "expected_nodes": FABRIC, "_ansible_check_mode": True}
    result, run_command, _get_bin_path = run_main(args, capsys, outputs=[(0, all_alive(), "")])
    assert not result.get("failed"), result
    assert result["changed"] is False
    assert result["ready"] is True
    run_command.assert_called_once()


def test_expected_nodes_need_an_address(capsys: pytest.CaptureFixture[str]) -> None:
    result, run_command, _get_bin_path = run_main({"python": sys.executable, "expected_nodes": FABRIC}, capsys)
    assert result["failed"] is True
    assert "address" in result["msg"]
    run_command.assert_not_called()


def test_negative_timeout_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    result, run_command, _get_bin_path = run_main({"python": sys.executable, "address": ADDRESS, "timeout": -1}, capsys)
    assert result["failed"] is True
    assert result["msg"] == "timeout and poll_interval must not be negative"
    run_command.assert_not_called()
