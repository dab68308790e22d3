# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for docker run with images: the docker CLI stand-in (tests/lab/standins/docker) against the Docker
Engine API stand-in (docker-api) on a temporary socket, as a node of the lab runs them.

docker-api serves a registry file; the CLI reaches it through DOCKER_HOST, looks the image up, pulls a missing one
and makes the container from the image's config, as docker 28.5.1 does (sources in tests/lab/standins/README.md).
Both share one state folder; systemd is not used (SPARKOPS_LAB_SYSTEMD_RUNTIME names a missing folder). An image's
content is a folder of scripts that the image's PATH names.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
import test_standins
from test_docker_api_standin import Dockerd, call
from test_standins import DOCKER, inspect, ps_json, run

docker = test_standins.docker  # test_standins' fixture: pytest takes the fixtures it finds among a module's names

DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
HELP = "\n\nRun 'docker run --help' for more information\n"
VLLM = "registry.lab/sparkops/vllm:0.30.0"
SCRIPTS = {
    "show-env": '#!/bin/sh\necho "from=$LAB_FROM keep=$LAB_KEEP extra=$LAB_EXTRA path=$PATH"\n',
    "show-args": '#!/bin/sh\necho "args: $*"\n',
    "vllm": '#!/bin/sh\necho "$0 $*"\necho "token=$HF_TOKEN fabric=$NCCL_SOCKET_IFNAME mode=$LAB_MODE"\n',
}
PULL_LINE = re.compile(r"[0-9a-f]{12}: (Pulling fs layer|Waiting|Verifying Checksum|Download complete|Pull complete)")


def registry(bin_dir: Path) -> dict:
    image_path = f"{bin_dir}:{DEFAULT_PATH}"
    tools = {"Config": {"Env": [f"PATH={image_path}", "LAB_FROM=image", "LAB_KEEP=image"], "Cmd": ["show-env"]}, "Labels": {"from": "image"}}
    entrypoint = {"Config": {"Env": [f"PATH={image_path}"], "Entrypoint": ["show-args", "--from-image"], "Cmd": ["default"]}}
    vllm = {"Config": {"Env": [f"PATH={image_path}"], "Cmd": ["vllm", "--help"]}}
    return {"lab/tools:1": tools, "lab/ep:1": entrypoint, "lab/broken:1": {"Fail": "unexpected EOF"}, VLLM: vllm}


@pytest.fixture
def lab(docker, tmp_path: Path):
    """test_standins' docker fixture pointed at a docker-api on a temporary socket, the two sharing its state folder;
    lab.server is the docker-api (test_docker_api_standin's Dockerd), lab.bin the images' scripts."""
    bin_dir = tmp_path / "image-bin"
    bin_dir.mkdir()
    for name, text in SCRIPTS.items():
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    server = Dockerd(tmp_path, registry=registry(bin_dir))
    docker.env.update(DOCKER_HOST=f"unix://{server.socket}", SPARKOPS_LAB_DOCKER_STATE=str(server.state))
    docker.env["SPARKOPS_LAB_SYSTEMD_RUNTIME"] = str(tmp_path / "no-systemd")
    docker.state, docker.server, docker.bin = server.state, server, bin_dir  # docker's teardown cleans this state
    yield docker
    assert server.stop() == 0


def image_list(lab) -> list[dict]:
    listed = call(lab.server, "GET", "/v1.51/images/json")
    assert listed.status == 200, listed
    return listed.json()


def test_the_images_env_reaches_the_container_under_the_users(lab, tmp_path: Path) -> None:
    first = lab("run", "--rm", "lab/tools:1")  # no command: the image's Cmd, found through the image's PATH
    assert (first.returncode, first.stdout) == (0, f"from=image keep=image extra= path={lab.bin}:{DEFAULT_PATH}\n"), first.stderr
    env_file = tmp_path / "lab.env"
    env_file.write_text("# the engine's settings\nLAB_FROM=file\nLAB_EXTRA=file\n")
    again = lab("run", "--rm", "--env-file", str(env_file), "-e", "LAB_EXTRA=flag", "lab/tools:1")  # the image is here: no pull
    assert (again.returncode, again.stdout, again.stderr) == (0, f"from=file keep=image extra=flag path={lab.bin}:{DEFAULT_PATH}\n", "")
    own_path = lab("run", "--rm", "-e", "PATH=/usr/bin:/bin", "lab/tools:1", "sh", "-c", 'echo "$PATH $HOSTNAME $HOME"')
    assert re.fullmatch(r"/usr/bin:/bin [0-9a-f]{12} /root\n", own_path.stdout), own_path.stderr
    assert lab("run", "--rm", "-e", "PATH=/usr/bin:/bin", "lab/tools:1").returncode == 127  # show-env is on the image's PATH only

    cid = lab("run", "-d", "--name", "kept", "-e", "LAB_FROM=flag", "--label", "mine=1", "lab/tools:1", "sleep", "300").stdout.strip()
    data = inspect(lab, "kept")
    image = call(lab.server, "GET", "/v1.51/images/lab/tools:1/json").json()
    assert (data["Id"], data["Image"], data["Config"]["Image"]) == (cid, image["Id"], "lab/tools:1")
    # moby's merge: the user's variables, then the image's that the user did not set
    assert data["Config"]["Env"] == ["LAB_FROM=flag", f"PATH={lab.bin}:{DEFAULT_PATH}", "LAB_KEEP=image"]
    assert (data["Config"]["Cmd"], data["Config"]["Entrypoint"], data["Config"]["Labels"]) == (["sleep", "300"], None, {"from": "image", "mine": "1"})
    environ = Path(f"/proc/{data['State']['Pid']}/environ").read_bytes().split(b"\0")
    assert {b"LAB_FROM=flag", b"LAB_KEEP=image", f"PATH={lab.bin}:{DEFAULT_PATH}".encode()} <= set(environ)


def test_a_missing_image_is_pulled_and_its_containers_counted_by_id(lab) -> None:
    started = lab("run", "-d", "--name", "first", "lab/tools:1", "sleep", "300")
    assert started.returncode == 0, started.stderr
    lines = started.stderr.splitlines()  # the pull as the CLI shows it without a terminal: no progress bars
    assert lines[:2] == ["Unable to find image 'lab/tools:1' locally", "1: Pulling from lab/tools"]
    assert all(PULL_LINE.fullmatch(line) for line in lines[2:-2]) and lines[-3].endswith(": Pull complete"), lines
    assert re.fullmatch(r"Digest: sha256:[0-9a-f]{64}", lines[-2]) and lines[-1] == "Status: Downloaded newer image for lab/tools:1"
    assert lab.server.logged("POST /v1.51/images/create?fromImage=docker.io%2Flab%2Ftools&tag=1 200")
    [listed] = image_list(lab)
    assert (listed["RepoTags"], listed["Containers"]) == (["lab/tools:1"], 1)

    # The registry's lab/tools:1 changes and is pulled again: the tag moves, the container keeps the image it ran.
    registry_file = lab.server.state / "images" / "registry.json"
    entries = json.loads(registry_file.read_text())
    entries["lab/tools:1"] |= {"Id": "sha256:" + "7a" * 32, "Digest": "sha256:" + "7b" * 32}
    registry_file.write_text(json.dumps(entries))
    assert call(lab.server, "POST", "/v1.51/images/create?fromImage=lab%2Ftools&tag=1").status == 200
    counts = {summary["Id"]: (summary["RepoTags"], summary["Containers"]) for summary in image_list(lab)}
    assert counts == {listed["Id"]: ([], 1), "sha256:" + "7a" * 32: (["lab/tools:1"], 0)}
    refused = call(lab.server, "DELETE", f"/v1.51/images/{listed['Id']}?force=1")
    running = inspect(lab, "first")["Id"][:12]
    assert (refused.status, refused.json()["message"]) == (
        409,
        f"conflict: unable to delete {listed['Id'][7:19]} (cannot be forced) - image is being used by running container {running}",
    )


def test_a_failed_pull_is_dockers_error_and_leaves_nothing(lab) -> None:
    unknown = lab("run", "--rm", "lab/nope:1", "true")
    denied = "pull access denied for lab/nope, repository does not exist or may require 'docker login': denied: requested access to the resource is denied"
    assert (unknown.returncode, unknown.stdout) == (125, "")
    assert unknown.stderr == f"Unable to find image 'lab/nope:1' locally\ndocker: Error response from daemon: {denied}{HELP}"
    no_tag = lab("run", "--rm", "lab/tools:9", "true")
    assert no_tag.returncode == 125
    assert no_tag.stderr.endswith(f"\ndocker: Error response from daemon: manifest for lab/tools:9 not found: manifest unknown: manifest unknown{HELP}")
    broken = lab("run", "--rm", "lab/broken:1", "true")  # an error in the pull's stream is its message alone
    assert (broken.returncode, broken.stderr.splitlines()[1]) == (125, "1: Pulling from lab/broken")
    assert broken.stderr.endswith(f": Pulling fs layer\ndocker: unexpected EOF{HELP}")
    never = lab("run", "--rm", "--pull", "never", "lab/tools:1", "true")
    assert (never.returncode, never.stderr) == (125, f"docker: Error response from daemon: No such image: lab/tools:1{HELP}")
    bad = lab("run", "--pull", "sometimes", "lab/tools:1", "true")
    assert (bad.returncode, bad.stderr) == (125, f'docker: invalid pull option: \'sometimes\': must be one of "always", "missing" or "never"{HELP}')
    assert lab("ps", "-aq").stdout == "" and image_list(lab) == []


def test_entrypoint_and_command_merge_with_the_images(lab) -> None:
    assert lab("run", "--rm", "lab/ep:1").stdout == "args: --from-image default\n"
    assert lab("run", "--rm", "lab/ep:1", "extra", "words").stdout == "args: --from-image extra words\n"
    assert lab("run", "--rm", "--entrypoint", "show-args", "lab/ep:1").stdout == "args: \n"  # the image's Cmd goes with its Entrypoint
    assert lab("run", "--rm", "--entrypoint", "show-args", "lab/ep:1", "a", "b").stdout == "args: a b\n"
    assert lab("run", "--rm", "--entrypoint=", "lab/ep:1", "show-args", "c").stdout == "args: c\n"  # an empty one resets it
    nothing = lab("run", "--rm", "--entrypoint=", "lab/ep:1")
    assert (nothing.returncode, nothing.stderr) == (125, f"docker: Error response from daemon: no command specified{HELP}")
    assert lab("run", "-d", "--name", "ep", "--entrypoint", "sleep", "lab/ep:1", "300").returncode == 0
    data = inspect(lab, "ep")
    assert (data["Path"], data["Args"], data["Config"]["Entrypoint"], data["Config"]["Cmd"]) == ("sleep", ["300"], ["sleep"], ["300"])
    assert ps_json(lab, "--no-trunc")[0]["Command"] == '"sleep 300"'
    # No socket, no images: --entrypoint with the words after IMAGE, the caller's PATH.
    alone = run(DOCKER, "run", "--rm", "--entrypoint", "echo", "no/such:image", "hello", env={**lab.env, "DOCKER_HOST": f"unix://{lab.state}/none.sock"})
    assert (alone.returncode, alone.stdout, alone.stderr) == (0, "hello\n", "")


def test_devices_are_checked_when_the_container_starts(lab, tmp_path: Path) -> None:
    missing = tmp_path / "missing"
    reason = f'error gathering device information while adding custom device "{missing}": no such file or directory'
    failed = lab("run", "--rm", "--device", str(missing), "lab/tools:1", "true")
    assert (failed.returncode, failed.stdout) == (127, "")  # toStatusError: "no such file or directory" is 127
    assert failed.stderr.endswith(f"\ndocker: Error response from daemon: {reason}{HELP}")
    assert lab("ps", "-aq").stdout == ""  # --rm: removed
    assert lab("run", "-d", "--name", "nodev", "--device", f"{missing}:/dev/x", "lab/tools:1", "true").returncode == 127
    state = inspect(lab, "nodev")["State"]
    assert (state["Status"], state["ExitCode"], state["Error"]) == ("created", 128, reason)
    empty = tmp_path / "empty"
    empty.mkdir()
    no_device = lab("run", "--rm", "--device", str(empty), "lab/tools:1", "true")
    not_a_device = f'error gathering device information while adding custom device "{empty}": not a device node'
    assert (no_device.returncode, no_device.stderr) == (125, f"docker: Error response from daemon: {not_a_device}{HELP}")

    fabric = tmp_path / "infiniband"  # a folder holding a device node (a FIFO: mknod of a character device needs root)
    fabric.mkdir()
    os.mkfifo(fabric / "uverbs0")
    assert lab("run", "--rm", "--device", str(fabric), "lab/tools:1", "true").returncode == 0
    link = tmp_path / "null"
    link.symlink_to("/dev/null")  # resolved, as moby does
    assert lab("run", "-d", "--name", "dev", "--device", f"{link}:/dev/lab-null:rw", "--device", "/dev/null", "lab/tools:1", "sleep", "300").returncode == 0
    assert inspect(lab, "dev")["HostConfig"]["Devices"] == [
        {"PathOnHost": str(link), "PathInContainer": "/dev/lab-null", "CgroupPermissions": "rw"},
        {"PathOnHost": "/dev/null", "PathInContainer": "/dev/null", "CgroupPermissions": "rwm"},
    ]
    for spec, message in (
        ("dev/null", "dev/null is not an absolute path"),
        ("/dev/null:/dev/x:rwx", "bad mode specified: rwx"),
        (":/dev/x", "bad format for path: :/dev/x"),
    ):
        refused = lab("run", "--rm", "--device", spec, "lab/tools:1", "true")
        assert (refused.returncode, refused.stderr) == (125, f"docker: {message}{HELP}"), spec


def test_capabilities_and_ulimits_as_docker_inspect_shows_them(lab) -> None:
    wrong_cap = lab("run", "--rm", "--cap-add", "nope", "lab/tools:1", "true")  # refused before the image is looked up
    assert (wrong_cap.returncode, wrong_cap.stderr) == (125, f'docker: Error response from daemon: invalid CapAdd: unknown capability: "CAP_NOPE"{HELP}')
    assert image_list(lab) == []
    flags = ("--cap-add", "ipc_lock", "--cap-add", "CAP_IPC_LOCK", "--cap-add", "sys_nice")
    flags += ("--ulimit", "stack=67108864", "--ulimit", "memlock=-1", "--ulimit", "nofile=1024:2048", "--ulimit", "nofile=4096")
    assert lab("run", "-d", "--name", "limited", *flags, "lab/tools:1", "sleep", "300").returncode == 0
    host = inspect(lab, "limited")["HostConfig"]
    assert list(host) == ["NetworkMode", "RestartPolicy", "AutoRemove", "CapAdd", "IpcMode", "Devices", "Ulimits"]  # docker's key order
    assert host["CapAdd"] == ["CAP_IPC_LOCK", "CAP_SYS_NICE"]
    assert host["Ulimits"] == [
        {"Name": "memlock", "Hard": -1, "Soft": -1},
        {"Name": "nofile", "Hard": 4096, "Soft": 4096},
        {"Name": "stack", "Hard": 67108864, "Soft": 67108864},
    ]
    assert lab("run", "-d", "--name", "plain", "lab/tools:1", "sleep", "300").returncode == 0
    plain = inspect(lab, "plain")["HostConfig"]
    assert (plain["CapAdd"], plain["Devices"], plain["Ulimits"]) == (None, [], [])
    for value, reason in (
        ("bogus=1", "invalid ulimit type: bogus"),
        ("nofile", "invalid ulimit argument: nofile"),
        ("nofile=2:1", "ulimit soft limit must be less than or equal to hard limit: 2 > 1"),
        ("nofile=-1:5", "ulimit soft limit must be less than or equal to hard limit: soft: -1 (unlimited), hard: 5"),
        ("nofile=x", 'strconv.ParseInt: parsing "x": invalid syntax'),
        ("nofile=1:2:3", "too many limit value arguments - 1:2:3, can only have up to two, `soft[:hard]`"),
    ):
        refused = lab("run", "--rm", "--ulimit", value, "lab/tools:1", "true")
        assert (refused.returncode, refused.stderr) == (125, f'invalid argument "{value}" for "--ulimit" flag: {reason}\nSee \'docker run --help\'.\n')


def test_the_vllm_units_command_line_runs_the_images_vllm(lab, tmp_path: Path) -> None:
    """The ExecStart of roles/vllm_serve's unit with the docker runtime, its paths in the test's folder."""
    fabric, hf_home = tmp_path / "infiniband", tmp_path / "hf"
    fabric.mkdir()
    hf_home.mkdir()
    os.mkfifo(fabric / "uverbs0")
    env_files = [tmp_path / name for name in ("fabric.env", "vllm.env", "secrets.env")]
    for env_file, text in zip(env_files, ("NCCL_SOCKET_IFNAME=enp1s0f0np0\nLAB_MODE=fabric\n", "LAB_MODE=vllm\n", "HF_TOKEN=hf_lab\n"), strict=True):
        env_file.write_text(text)
    argv = ["run", "--rm", "--name", "sparkops-vllm", "--network", "host", "--ipc", "host", "--gpus", "all"]
    argv += ["--device", str(fabric), "--cap-add", "IPC_LOCK", "--ulimit", "memlock=-1", "--ulimit", "stack=67108864"]
    argv += ["--volume", f"{hf_home}:{hf_home}:ro", *(arg for env_file in env_files for arg in ("--env-file", str(env_file)))]
    argv += ["--entrypoint", "vllm", VLLM, "serve", "sparkops-lab/tiny-moe", "--port", "8000"]
    result = lab(*argv)
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"{lab.bin}/vllm serve sparkops-lab/tiny-moe --port 8000\ntoken=hf_lab fabric=enp1s0f0np0 mode=vllm\n"
    assert result.stderr.startswith(f"Unable to find image '{VLLM}' locally\n0.30.0: Pulling from sparkops/vllm\n")
    assert result.stderr.endswith(f"\nStatus: Downloaded newer image for {VLLM}\n")
    assert lab("ps", "-aq").stdout == ""
    [listed] = image_list(lab)
    assert (listed["RepoTags"], listed["Containers"]) == ([VLLM], 0)
