# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the _docker_cli module util: ``docker ps`` JSON lines, matching as docker does, removal."""

from __future__ import annotations

import json
import typing as t

import pytest
from ansible_collections.sparkops.inference.plugins.module_utils._docker_cli import (
    PS_ARGS,
    Container,
    DockerCli,
    DockerError,
    match,
    parse_labels,
    parse_ps_line,
    parse_ps_output,
    remove_containers,
    resolve,
)
from fake_clock import FakeClock

VLLM_ID = "3f2a9c1b7d4e5f60718293a4b5c6d7e8f90112233445566778899aabbccddeeff"
RAY_ID = "3f2b0d4c6e8fa1b2c3d4e5f60718293a4b5c6d7e8f9011223344556677889900"
OLD_ID = "a91c7e2d44b05f3e6a7b8c9d0e1f2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b"

# What `docker ps -a --no-trunc --format '{{json .}}'` prints (Docker 28 on DGX OS), one object a line.
DOCKER_PS = "\n".join(
    [
        json.dumps(
            {
                "Command": '"/opt/nvidia/nvidia_entrypoint.sh vllm serve Qwen/Qwen3.5-122B-A10B-FP8 --tensor-parallel-size 2"',
                "CreatedAt": "2026-03-02 09:14:51 +0000 UTC",
                "ID": VLLM_ID,
                "Image": "nvcr.io/nvidia/vllm:25.09-py3",
                "Labels": "com.nvidia.cudnn.version=9.13.0.50,maintainer=NVIDIA CORPORATION <cudatools@nvidia.com>,"
                "org.opencontainers.image.ref.name=ubuntu,org.opencontainers.image.version=24.04",
                "LocalVolumes": "0",
                "Mounts": "/root/.cache/huggingface",
                "Names": "vllm-qwen3",
                "Networks": "host",
                "Ports": "",
                "RunningFor": "3 days ago",
                "Size": "0B",
                "State": "running",
                "Status": "Up 3 days",
            }
        ),
        json.dumps(
            {
                "Command": '"ray start --head --block --node-ip-address=192.168.200.11"',
                "CreatedAt": "2026-03-02 09:10:02 +0000 UTC",
                "ID": RAY_ID,
                "Image": "rayproject/ray:2.60.0-py311-gpu",
                "Labels": "",
                "LocalVolumes": "0",
                "Mounts": "",
                "Names": "sparkops-ray,vllm-qwen3/ray",
                "Networks": "host",
                "Ports": "",
                "RunningFor": "3 days ago",
                "Size": "0B",
                "State": "exited",
                "Status": "Exited (137) 2 hours ago",
            }
        ),
        "",
        json.dumps(
            {
                "Command": '"python3 -m vllm.entrypoints.openai.api_server"',
                "CreatedAt": "2026-02-20 17:40:12 +0000 UTC",
                "ID": OLD_ID,
                "Image": "sha256:9b1f3c5e7a9d",
                "Labels": "desc=a,b,c=d",
                "Names": "hungry_turing",
                "State": "created",
                "Status": "Created",
            }
        ),
    ]
)


def test_parse_real_docker_ps() -> None:
    containers = parse_ps_output(DOCKER_PS + "\n")
    assert [c.id for c in containers] == [VLLM_ID, RAY_ID, OLD_ID]
    vllm, ray, old = containers
    assert (vllm.name, vllm.names, vllm.image, vllm.state, vllm.status, vllm.running) == (
        "vllm-qwen3",
        ("vllm-qwen3",),
        "nvcr.io/nvidia/vllm:25.09-py3",
        "running",
        "Up 3 days",
        True,
    )
    assert vllm.labels["maintainer"] == "NVIDIA CORPORATION <cudatools@nvidia.com>"
    assert vllm.labels["org.opencontainers.image.version"] == "24.04"
    assert (ray.names, ray.state, ray.running, ray.labels) == (("sparkops-ray", "vllm-qwen3/ray"), "exited", False, {})
    assert (old.name, old.state, old.running) == ("hungry_turing", "created", False)
    assert vllm.as_dict() == {"id": VLLM_ID, "name": "vllm-qwen3", "image": "nvcr.io/nvidia/vllm:25.09-py3", "state": "running"}
    assert vllm.describe() == "vllm-qwen3 (3f2a9c1b7d4e)"


def test_parse_labels_keeps_commas_in_values() -> None:
    assert parse_labels("desc=a,b,c=d") == {"desc": "a,b", "c": "d"}
    assert parse_labels("") == {}
    assert parse_labels({"ray.io/node": "head"}) == {"ray.io/node": "head"}


@pytest.mark.parametrize(
    ("status", "state"),
    [
        ("Up 3 days", "running"),
        ("Up 5 minutes (Paused)", "paused"),
        ("Exited (0) 2 hours ago", "exited"),
        ("Created", "created"),
        ("Restarting (1) 3 seconds ago", "restarting"),
        ("Removal In Progress", "removing"),
        ("Dead", "dead"),
    ],
)
def test_state_from_status_when_docker_lacks_state(status: str, state: str) -> None:
    container = parse_ps_line(json.dumps({"ID": OLD_ID, "Names": "old", "Image": "busybox", "Status": status}))
    assert container.state == state
    assert container.running is (state in ("running", "paused", "restarting"))


def test_parse_podman_shape() -> None:
    """podman (and some stand-ins) print Id, Names as a list and Labels as a mapping."""
    line = json.dumps({"Id": VLLM_ID, "Names": ["vllm-qwen3"], "Image": "docker.io/vllm/vllm-openai:v0.11.0", "State": "running", "Labels": {"a": "1"}})
    container = parse_ps_line(line)
    assert (container.id, container.names, container.state, container.labels) == (VLLM_ID, ("vllm-qwen3",), "running", {"a": "1"})


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("not json", "cannot read docker ps output line 'not json'"),
        ("[1, 2]", "not a JSON object"),
        ('{"Names": "x"}', "docker ps output line has no ID"),
    ],
)
def test_parse_errors_name_the_line(line: str, message: str) -> None:
    with pytest.raises(DockerError, match=message.replace("(", r"\(").replace("[", r"\[")):
        parse_ps_line(line)


CONTAINERS = parse_ps_output(DOCKER_PS)


@pytest.mark.parametrize(
    ("reference", "expected"),
    [
        (VLLM_ID, VLLM_ID),
        ("vllm-qwen3", VLLM_ID),
        ("/vllm-qwen3", VLLM_ID),
        ("sparkops-ray", RAY_ID),
        ("vllm-qwen3/ray", RAY_ID),
        (VLLM_ID.upper(), VLLM_ID),
        (f" {RAY_ID} ", RAY_ID),
        ("hungry", None),
        ("nope", None),
        ("3f2a9c1b7d4e5f60718293a4b5c6d7e8f90112233445566778899aabbccddeeff0", None),
    ],
)
def test_resolve(reference: str, expected: str | None) -> None:
    found = resolve(CONTAINERS, reference)
    assert (found.id if found else None) == expected


@pytest.mark.parametrize("reference", ["3f2a", "3F2B0D", "a91c7e2d44b0", "3f2", OLD_ID[:63]])
def test_an_id_prefix_matches_no_container(reference: str) -> None:
    """ATTACK (issue 15): a name that no longer exists (a hex word such as ``cafe``, an old short id) took whichever
    container's id began with it, as docker's own lookup does. Only an exact name or the full 64-hex id match."""
    assert resolve(CONTAINERS, reference) is None


def test_a_name_is_matched_exactly() -> None:
    named = Container(id="b" * 64, names=("a91c",), image="busybox", state="exited")
    assert resolve([*CONTAINERS, named], "a91c") is named
    assert resolve([*CONTAINERS, named], "a91") is None


@pytest.mark.parametrize("reference", ["", "  ", "/"])
def test_empty_reference_is_refused(reference: str) -> None:
    with pytest.raises(DockerError, match="empty container reference"):
        resolve(CONTAINERS, reference)


def test_match_dedupes_and_keeps_order() -> None:
    found, absent = match(CONTAINERS, ["sparkops-ray", "gone-one", VLLM_ID, "3f2b", "gone-one", "vllm-qwen3", RAY_ID])
    assert [c.id for c in found] == [RAY_ID, VLLM_ID]
    assert absent == ["gone-one", "3f2b"]  # an id prefix names no container


class ScriptedDocker:
    """A docker CLI whose state is a list of containers; records every argv."""

    def __init__(self, containers: t.Sequence[Container], errors: dict[tuple[str, str], tuple[int, str, str]] | None = None) -> None:
        self.containers = {c.id: c for c in containers}
        self.errors = errors or {}
        self.calls: list[list[str]] = []

    def __call__(self, argv: list[str]) -> tuple[int, str, str]:
        assert isinstance(argv, list)
        self.calls.append(argv)
        verb = argv[1]
        if tuple(argv[1:]) == PS_ARGS:
            return (
                0,
                "".join(json.dumps({"ID": c.id, "Names": ",".join(c.names), "Image": c.image, "State": c.state}) + "\n" for c in self.containers.values()),
                "",
            )
        target = argv[-1]
        if (verb, target) in self.errors:
            return self.errors[(verb, target)]
        if target not in self.containers:
            return 1, "", f"Error response from daemon: No such container: {target}\n"
        if verb == "stop":
            old = self.containers[target]
            self.containers[target] = Container(id=old.id, names=old.names, image=old.image, state="exited")
        elif verb == "rm":
            del self.containers[target]
        return 0, "", ""


def test_remove_stops_running_then_removes() -> None:
    docker = ScriptedDocker(CONTAINERS)
    result = remove_containers(DockerCli("/usr/bin/docker", docker), ["vllm-qwen3", "sparkops-ray", "absent-one"], 30)
    assert docker.calls == [
        ["/usr/bin/docker", *PS_ARGS],
        ["/usr/bin/docker", "stop", "-t", "30", VLLM_ID],
        ["/usr/bin/docker", "rm", "-f", VLLM_ID],
        ["/usr/bin/docker", "rm", "-f", RAY_ID],
        ["/usr/bin/docker", *PS_ARGS],
    ]
    assert [c.id for c in result.removed] == [VLLM_ID, RAY_ID]
    assert result.absent == ["absent-one"]
    assert (result.failures, result.warnings, result.changed) == ([], [], True)
    assert list(docker.containers) == [OLD_ID]
    assert result.diff == {
        "before": f"vllm-qwen3 {VLLM_ID} nvcr.io/nvidia/vllm:25.09-py3 running\nsparkops-ray {RAY_ID} rayproject/ray:2.60.0-py311-gpu exited\n",
        "after": "",
    }


def test_check_mode_only_lists() -> None:
    docker = ScriptedDocker(CONTAINERS)
    result = remove_containers(DockerCli("docker", docker), [VLLM_ID], 30, check_mode=True)
    assert docker.calls == [["docker", *PS_ARGS]]
    assert [c.name for c in result.removed] == ["vllm-qwen3"]
    assert result.changed is True
    assert len(docker.containers) == 3


def test_rm_failure_still_listed_names_container_and_stderr() -> None:
    clock = FakeClock()
    stderr = "Error response from daemon: cannot remove container: device or resource busy\n"
    docker = ScriptedDocker(CONTAINERS, errors={("rm", OLD_ID): (1, "", stderr)})
    result = remove_containers(DockerCli("docker", docker), ["hungry_turing"], 30, clock=clock.clock, sleep=clock.sleep, confirm_timeout=2)
    assert result.removed == []
    assert [c.id for c in result.remaining] == [OLD_ID]
    assert result.failures == [
        "container hungry_turing (a91c7e2d44b0) is still there (created): docker rm -f hungry_turing (a91c7e2d44b0) failed (rc 1): "
        "Error response from daemon: cannot remove container: device or resource busy"
    ]
    # The first listing, then the confirming ones at 0, 0.5, 1, 1.5 and 2 s.
    assert sum(call[1] == "ps" for call in docker.calls) == 1 + 5
    assert clock.sleeps == [0.5] * 4
    assert result.diff["after"] == f"hungry_turing {OLD_ID} sha256:9b1f3c5e7a9d created\n"


def test_stop_failure_then_gone_is_a_warning() -> None:
    """A --rm container removed by docker after stop: stop errors, rm errors, yet it is gone."""
    docker = ScriptedDocker(CONTAINERS, errors={("stop", VLLM_ID): (1, "", "Error response from daemon: No such container: " + VLLM_ID)})

    def rm_after_stop(argv: list[str]) -> tuple[int, str, str]:
        if argv[1] == "stop":
            docker.containers.pop(VLLM_ID)
        return docker(argv)

    result = remove_containers(DockerCli("docker", rm_after_stop), ["vllm-qwen3"], 5)
    assert [c.id for c in result.removed] == [VLLM_ID]
    assert result.failures == []
    missing = f"Error response from daemon: No such container: {VLLM_ID}; the container is gone all the same"
    assert result.warnings == [
        f"docker stop -t 5 vllm-qwen3 (3f2a9c1b7d4e) failed (rc 1): {missing}",
        f"docker rm -f vllm-qwen3 (3f2a9c1b7d4e) failed (rc 1): {missing}",
    ]


def test_ps_failure_names_docker_error() -> None:
    def down(argv: list[str]) -> tuple[int, str, str]:
        return 1, "", "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?\n"

    with pytest.raises(DockerError) as exc:
        remove_containers(DockerCli("docker", down), ["vllm-qwen3"], 30)
    assert str(exc.value) == "docker ps -a failed (rc 1): Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?"


def test_nothing_to_do_runs_only_ps() -> None:
    docker = ScriptedDocker(CONTAINERS)
    result = remove_containers(DockerCli("docker", docker), ["gone-one"], 30)
    assert (result.removed, result.absent, result.changed) == ([], ["gone-one"], False)
    assert docker.calls == [["docker", *PS_ARGS]]
    assert result.diff == {"before": "", "after": ""}


def test_main_pids_from_container_inspect() -> None:
    """docker container inspect names each container's main process; a stopped one has none (0), a gone one is left out."""
    inspected = [
        {"Id": RAY_ID, "Name": "/sparkops-ray", "State": {"Status": "running", "Running": True, "Pid": 4242}},
        {"Id": OLD_ID, "Name": "/hungry_turing", "State": {"Status": "exited", "Running": False, "Pid": 0}},
    ]
    calls: list[list[str]] = []

    def run(argv: list[str]) -> tuple[int, str, str]:
        calls.append(argv)
        return 1, json.dumps(inspected, indent=4) + "\n", f"Error response from daemon: No such container: {VLLM_ID}\n"

    cli = DockerCli("docker", run)
    assert cli.main_pids([RAY_ID, OLD_ID, VLLM_ID]) == {RAY_ID: 4242, OLD_ID: 0}
    assert calls == [["docker", "container", "inspect", RAY_ID, OLD_ID, VLLM_ID]]
    assert cli.main_pids([]) == {} and len(calls) == 1


def test_main_pids_failure_names_docker_error() -> None:
    cli = DockerCli("docker", lambda argv: (1, "", "permission denied while trying to connect to the Docker daemon socket\n"))
    with pytest.raises(DockerError, match=r"^docker container inspect failed \(rc 1\): permission denied"):
        cli.main_pids([RAY_ID])
    garbled = DockerCli("docker", lambda argv: (0, "not json", ""))
    with pytest.raises(DockerError, match=r"^docker container inspect failed \(rc 0\): not json"):
        garbled.main_pids([RAY_ID])
