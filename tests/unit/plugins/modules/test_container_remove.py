# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the container_remove module: main() with run_command answered by a small fake docker."""

from __future__ import annotations

import functools
import json
import typing as t
from pathlib import Path
from unittest.mock import MagicMock, patch

import pytest
from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.testing import patch_module_args
from ansible_collections.sparkops.inference.plugins.module_utils import _docker_cli
from ansible_collections.sparkops.inference.plugins.modules import container_remove
from fake_clock import FakeClock

DOCKER = "/usr/bin/docker"
VLLM_ID = "3f2a9c1b7d4e5f60718293a4b5c6d7e8f90112233445566778899aabbccddeeff"
RAY_ID = "7c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f60718293a4b5c6d7e8f9011223344556"
EXITED_ID = "a91c7e2d44b05f3e6a7b8c9d0e1f2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b"
RESULT_KEYS = {"changed", "removed", "absent", "docker_available", "diff"}


class FakeDocker:
    """A docker CLI keeping containers in memory: ps, stop, rm, as ``run_command`` is called with them."""

    def __init__(self) -> None:
        self.containers: dict[str, dict[str, str]] = {}
        self.calls: list[list[str]] = []
        self.fail: dict[str, tuple[int, str, str]] = {}  # verb -> answer

    def add(self, container_id: str, name: str, image: str, state: str) -> FakeDocker:
        status = {"running": "Up 2 hours", "exited": "Exited (0) 5 minutes ago"}.get(state, state.title())
        self.containers[container_id] = {"ID": container_id, "Names": name, "Image": image, "State": state, "Status": status, "Labels": ""}
        return self

    def __call__(self, argv: t.Any, **kwargs: t.Any) -> tuple[int, str, str]:
        assert isinstance(argv, list), f"run_command got {argv!r}, not an argument list"
        assert "use_unsafe_shell" not in kwargs
        self.calls.append(argv)
        assert argv[0] == DOCKER or argv[0].endswith("/docker")
        verb, args = argv[1], argv[2:]
        if verb in self.fail:
            return self.fail[verb]
        if verb == "ps":
            assert args == ["-a", "--no-trunc", "--format", "{{json .}}"]
            return 0, "".join(json.dumps(c) + "\n" for c in self.containers.values()), ""
        target = args[-1]
        if target not in self.containers:
            return 1, "", f"Error response from daemon: No such container: {target}\n"
        if verb == "stop":
            assert args[:2] == ["-t", args[1]] and args[1].isdigit(), argv
            self.containers[target].update(State="exited", Status="Exited (143) Less than a second ago")
            return 0, target + "\n", ""
        if verb == "rm":
            assert args == ["-f", target], f"rm must be 'rm -f <id>' (no -v): {argv}"
            del self.containers[target]
            return 0, target + "\n", ""
        raise AssertionError(f"unexpected docker command {argv}")

    def verbs(self) -> list[str]:
        return [" ".join(c[1:3]) if c[1] != "ps" else "ps" for c in self.calls]


def sparks_docker() -> FakeDocker:
    return (
        FakeDocker()
        .add(VLLM_ID, "vllm-qwen3", "nvcr.io/nvidia/vllm:25.09-py3", "running")
        .add(RAY_ID, "sparkops-ray", "rayproject/ray:2.60.0-py311-gpu", "running")
        .add(EXITED_ID, "vllm-old", "vllm/vllm-openai:v0.9.2", "exited")
    )


def run_main(
    args: dict[str, t.Any],
    capsys: pytest.CaptureFixture[str],
    docker: FakeDocker,
    docker_path: str | None = DOCKER,
    clock: FakeClock | None = None,
) -> tuple[dict[str, t.Any], list[str], MagicMock]:
    """Run main(); returns the result, the warnings and the get_bin_path mock."""
    fake = clock or FakeClock()
    remove = functools.partial(_docker_cli.remove_containers, clock=fake.clock, sleep=fake.sleep)
    warn = MagicMock()
    with (
        patch_module_args(args),
        patch.object(AnsibleModule, "run_command", side_effect=docker),
        patch.object(AnsibleModule, "get_bin_path", return_value=docker_path) as get_bin_path,
        patch.object(AnsibleModule, "warn", warn),
        patch.object(container_remove, "remove_containers", remove),
        pytest.raises(SystemExit),
    ):
        container_remove.main()
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    return result, [c.args[0] for c in warn.call_args_list], get_bin_path


def test_removes_running_and_exited(capsys: pytest.CaptureFixture[str]) -> None:
    docker = sparks_docker()
    result, warnings, get_bin_path = run_main({"containers": ["vllm-qwen3", "vllm-old", "not-there"], "stop_timeout": 20}, capsys, docker)
    assert not result.get("failed"), result
    get_bin_path.assert_called_once_with("docker")
    assert result["changed"] is True
    assert result["docker_available"] is True
    assert result["removed"] == [
        {"id": VLLM_ID, "name": "vllm-qwen3", "image": "nvcr.io/nvidia/vllm:25.09-py3", "state": "running"},
        {"id": EXITED_ID, "name": "vllm-old", "image": "vllm/vllm-openai:v0.9.2", "state": "exited"},
    ]
    assert result["absent"] == ["not-there"]
    assert docker.calls[1:3] == [[DOCKER, "stop", "-t", "20", VLLM_ID], [DOCKER, "rm", "-f", VLLM_ID]]
    assert docker.verbs() == ["ps", "stop -t", "rm -f", "rm -f", "ps"]  # the exited one is not stopped
    assert list(docker.containers) == [RAY_ID]
    assert warnings == []
    assert set(result) >= RESULT_KEYS


def test_second_run_changes_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    docker = sparks_docker()
    first = run_main({"containers": ["sparkops-ray"]}, capsys, docker)[0]
    docker.calls.clear()
    second = run_main({"containers": ["sparkops-ray"]}, capsys, docker)[0]
    assert first["changed"] is True and first["removed"][0]["id"] == RAY_ID
    assert (second["changed"], second["removed"], second["absent"]) == (False, [], ["sparkops-ray"])
    assert docker.verbs() == ["ps"]
    assert second["diff"] == {"before": "", "after": ""}


def test_default_stop_timeout_is_30(capsys: pytest.CaptureFixture[str]) -> None:
    docker = sparks_docker()
    run_main({"containers": [RAY_ID]}, capsys, docker)
    assert [DOCKER, "stop", "-t", "30", RAY_ID] in docker.calls


def test_check_mode_changes_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    docker = sparks_docker()
    result = run_main({"containers": ["vllm-qwen3", "vllm-old"], "_ansible_check_mode": True, "_ansible_diff": True}, capsys, docker)[0]
    assert not result.get("failed"), result
    assert result["changed"] is True
    assert [c["name"] for c in result["removed"]] == ["vllm-qwen3", "vllm-old"]
    assert docker.verbs() == ["ps"]
    assert len(docker.containers) == 3 and docker.containers[VLLM_ID]["State"] == "running"
    assert result["diff"] == {
        "before": f"vllm-qwen3 {VLLM_ID} nvcr.io/nvidia/vllm:25.09-py3 running\nvllm-old {EXITED_ID} vllm/vllm-openai:v0.9.2 exited\n",
        "after": "",
    }


def test_diff_lists_removed_containers(capsys: pytest.CaptureFixture[str]) -> None:
    docker = sparks_docker()
    result = run_main({"containers": ["sparkops-ray", "/vllm-qwen3"], "_ansible_diff": True}, capsys, docker)[0]
    assert result["diff"]["before"].splitlines() == [
        f"sparkops-ray {RAY_ID} rayproject/ray:2.60.0-py311-gpu running",
        f"vllm-qwen3 {VLLM_ID} nvcr.io/nvidia/vllm:25.09-py3 running",
    ]
    assert result["diff"]["after"] == ""


def test_docker_missing_is_not_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    docker = FakeDocker()
    result, warnings, get_bin_path = run_main({"containers": ["vllm-qwen3"]}, capsys, docker, docker_path=None)
    assert warnings == []
    assert not result.get("failed"), result
    assert (result["changed"], result["docker_available"], result["removed"], result["absent"]) == (False, False, [], ["vllm-qwen3"])
    get_bin_path.assert_called_once_with("docker")
    assert docker.calls == []


def test_explicit_path_that_does_not_exist_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "bin" / "docker"
    docker = sparks_docker()
    result = run_main({"containers": ["vllm-qwen3"], "docker_cli": str(missing)}, capsys, docker, docker_path=None)[0]
    assert result["failed"] is True
    assert result["msg"] == f"docker_cli {missing} does not exist or is not an executable file"
    assert docker.calls == []


def test_explicit_name_not_on_path_fails(capsys: pytest.CaptureFixture[str]) -> None:
    result, warnings, get_bin_path = run_main({"containers": ["vllm-qwen3"], "docker_cli": "nerdctl"}, capsys, FakeDocker(), docker_path=None)
    assert warnings == []
    assert result["failed"] is True
    assert result["msg"] == "docker_cli nerdctl was not found on PATH"
    get_bin_path.assert_called_once_with("nerdctl")


def test_explicit_path_is_used(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cli = tmp_path / "docker"
    cli.write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
    cli.chmod(0o755)
    docker = sparks_docker()
    result, warnings, get_bin_path = run_main({"containers": ["vllm-old"], "docker_cli": str(cli)}, capsys, docker, docker_path=None)
    assert warnings == []
    assert not result.get("failed"), result
    get_bin_path.assert_not_called()
    assert {c[0] for c in docker.calls} == {str(cli)}
    assert result["removed"][0]["name"] == "vllm-old"


def test_rm_error_surfaces_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    docker = sparks_docker()
    docker.fail["rm"] = (1, "", 'Error response from daemon: cannot remove container "/vllm-old": could not kill: permission denied\n')
    result = run_main({"containers": ["vllm-old"]}, capsys, docker)[0]
    assert result["failed"] is True
    assert result["msg"] == (
        "container vllm-old (a91c7e2d44b0) is still there (exited): docker rm -f vllm-old (a91c7e2d44b0) failed (rc 1): "
        'Error response from daemon: cannot remove container "/vllm-old": could not kill: permission denied'
    )
    assert result["removed"] == []
    assert result["diff"]["after"] == f"vllm-old {EXITED_ID} vllm/vllm-openai:v0.9.2 exited\n"


def test_ps_error_surfaces_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    docker = sparks_docker()
    docker.fail["ps"] = (1, "", "permission denied while trying to connect to the Docker daemon socket at unix:///var/run/docker.sock\n")
    result = run_main({"containers": ["vllm-qwen3"]}, capsys, docker)[0]
    assert result["failed"] is True
    assert result["msg"] == "docker ps -a failed (rc 1): permission denied while trying to connect to the Docker daemon socket at unix:///var/run/docker.sock"
    assert result["docker_available"] is True


def test_absent_name_never_takes_a_container_by_id_prefix(capsys: pytest.CaptureFixture[str]) -> None:
    """ATTACK (issue 15): gpu_reclaim_containers named an old container ``cafe`` that is gone; docker's lookup (and the
    module's) then took the container whose id begins with ``cafe``. Only an exact name or the full id match."""
    cafe_id = "cafe" + VLLM_ID[4:]
    docker = FakeDocker().add(cafe_id, "sparkops-vllm", "img", "running").add(RAY_ID, "jupyter", "img", "running")
    result = run_main({"containers": ["cafe", RAY_ID[:12], "3f2"]}, capsys, docker)[0]
    assert not result.get("failed"), result
    assert (result["changed"], result["removed"], result["absent"]) == (False, [], ["cafe", RAY_ID[:12], "3f2"])
    assert docker.verbs() == ["ps"]
    assert set(docker.containers) == {cafe_id, RAY_ID}


def test_full_id_is_matched(capsys: pytest.CaptureFixture[str]) -> None:
    docker = sparks_docker()
    result = run_main({"containers": [EXITED_ID]}, capsys, docker)[0]
    assert not result.get("failed"), result
    assert [c["name"] for c in result["removed"]] == ["vllm-old"]


class AutoRemoveDocker(FakeDocker):
    """Containers run with --rm: docker removes them itself once stopped."""

    def __call__(self, argv: t.Any, **kwargs: t.Any) -> tuple[int, str, str]:
        answer = super().__call__(argv, **kwargs)
        if argv[1] == "stop":
            self.containers.pop(argv[-1], None)
        return answer


def test_auto_removed_container_warns(capsys: pytest.CaptureFixture[str]) -> None:
    """The module's rm -f of a --rm container fails once docker stop removed it; it is gone all the same."""
    docker = AutoRemoveDocker().add(RAY_ID, "sparkops-ray", "rayproject/ray:2.60.0-py311-gpu", "running")
    result, warnings = run_main({"containers": ["sparkops-ray"]}, capsys, docker)[:2]
    assert not result.get("failed"), result
    assert result["changed"] is True and result["removed"][0]["id"] == RAY_ID
    assert docker.verbs() == ["ps", "stop -t", "rm -f", "ps"]
    assert warnings == [
        f"docker rm -f sparkops-ray (7c1d2e3f4a5b) failed (rc 1): Error response from daemon: No such container: {RAY_ID}; the container is gone all the same"
    ]
