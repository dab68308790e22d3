# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the lab's Docker Engine API stand-in (tests/lab/standins/docker-api), against community.docker.

The stand-in runs as a subprocess on a unix socket in a temporary folder, with a temporary state folder. Requests
come from community.docker's own client (the pinned collection under .collections: AnsibleDockerClientBase, the
class its modules build, with the find_image, pull_image and delete_json its image modules call), from the modules
themselves run by ansible-playbook, and as raw HTTP where the wire format is the point (chunked progress lines,
headers, error bodies).
"""

from __future__ import annotations

import http.client
import json
import select
import signal
import socket
import subprocess
import sys
import time
import typing as t
from pathlib import Path
from urllib.parse import quote

import pytest
from ansible_run import run_playbook
from line_follower import follow

try:
    from ansible_collections.community.docker.plugins.module_utils._api import errors as docker_errors
    from ansible_collections.community.docker.plugins.module_utils.common_api import AnsibleDockerClientBase
except ImportError:  # no .collections (make setup) or no requests: the raw HTTP tests still run
    AnsibleDockerClientBase = None

STANDINS = Path(__file__).resolve().parents[2] / "lab" / "standins"
DOCKER_API, DOCKER_CLI = str(STANDINS / "docker-api"), str(STANDINS / "docker")
PINNED = "sha256:" + "d1" * 32  # the manifest digest rayproject/ray:2.60.0 has in the registry
REGISTRY = {"rayproject/ray:2.60.0": {"Layers": 2, "Digest": PINNED}, "ubuntu:22.04": {}, "example.com/lab/broken:1": {"Fail": "unexpected EOF"}}
needs_client = pytest.mark.skipif(AnsibleDockerClientBase is None, reason="community.docker's client (.collections, requests) is not importable")


class Dockerd:
    """A running docker-api: its socket, its state folder and its stdout, read line by line in the background."""

    def __init__(self, folder: Path, registry: object = None, images: dict | None = None) -> None:
        self.socket, self.state = str(folder / "docker.sock"), folder / "state"
        assert len(self.socket) < 100, "a unix socket path must fit in sun_path"
        (self.state / "images").mkdir(parents=True, exist_ok=True)
        (self.state / "images" / "registry.json").write_text(json.dumps(REGISTRY if registry is None else registry))
        if images is not None:
            (self.state / "images" / "images.json").write_text(json.dumps(images))
        argv = [sys.executable, DOCKER_API, "--socket", self.socket, "--state", str(self.state)]
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        assert self.proc.stdout is not None
        assert select.select([self.proc.stdout], [], [], 15)[0], "docker-api printed nothing"
        self.lines = [self.proc.stdout.readline().rstrip("\n")]
        assert self.lines[0].startswith(f"docker-api: API listen on {self.socket} (Docker 28.5.1, API 1.51"), self.lines
        self.reader = follow(self.proc.stdout, self.lines)

    def logged(self, text: str) -> bool:
        """Whether a request line holding ``text`` was logged (waiting a little: the log follows the answer)."""
        end = time.monotonic() + 5
        while not any(text in line for line in self.lines):
            if time.monotonic() > end:
                return False
            time.sleep(0.02)
        return True

    def images(self) -> dict:
        return json.loads((self.state / "images" / "images.json").read_text())

    def stop(self, sig: int = signal.SIGTERM) -> int:
        self.proc.send_signal(sig)
        rc = self.proc.wait(timeout=15)
        self.reader.join(timeout=5)
        return rc


@pytest.fixture
def dockerd(tmp_path: Path) -> t.Iterator[Dockerd]:
    server = Dockerd(tmp_path)
    yield server
    assert server.stop() == 0
    assert server.lines[-1] == "docker-api: stopped"
    assert not Path(server.socket).exists(), "the socket outlived the server"


class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path: str) -> None:
        super().__init__("localhost", timeout=15)
        self.path = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(15)
        self.sock.connect(self.path)


class Raw(t.NamedTuple):
    status: int
    headers: http.client.HTTPMessage
    body: bytes
    chunked: bool

    def json(self) -> t.Any:
        return json.loads(self.body)


def call(server: Dockerd, method: str, target: str) -> Raw:
    conn = UnixHTTPConnection(server.socket)
    try:
        conn.request(method, target)
        response = conn.getresponse()
        return Raw(response.status, response.headers, response.read(), bool(response.chunked))
    finally:
        conn.close()


class ModuleFailed(BaseException):
    """What AnsibleModule.fail_json does to a module: SystemExit, which the client's ``except Exception`` lets by."""


def client(server: Dockerd) -> t.Any:
    """community.docker's client as its modules build it (api_version auto, the docker_host option), failing by raising."""
    assert AnsibleDockerClientBase is not None

    class Client(AnsibleDockerClientBase):
        def __init__(self) -> None:
            self.params = {"docker_host": f"unix://{server.socket}", "api_version": "auto", "timeout": 30}
            super().__init__()

        def _get_params(self) -> dict:
            return self.params

        def fail(self, msg: str, **kwargs: t.Any) -> t.NoReturn:
            raise ModuleFailed(msg)

    return Client()


def pull_lines(server: Dockerd, image: str, tag: str) -> tuple[Raw, list[dict]]:
    raw = call(server, "POST", f"/v1.51/images/create?fromImage={quote(image, safe='')}&tag={quote(tag, safe='')}")
    assert raw.status == 200 and raw.chunked, raw
    assert raw.body.endswith(b"\r\n") and b"\n" not in raw.body.replace(b"\r\n", b""), "every line ends with CR LF, as dockerd's"
    return raw, [json.loads(line) for line in raw.body.split(b"\r\n") if line]


def container_record(state: Path, image: str, status: str) -> str:
    """A container of the docker CLI stand-in (its record's fields that docker-api reads)."""
    cid = ("ab" * 32) if status == "running" else ("cd" * 32)
    (state / f"{cid}.json").write_text(json.dumps({"Id": cid, "Name": status, "Image": image, "Status": status}))
    return cid


# --- ping, version, routing -------------------------------------------------------------------------------------


def test_ping_version_and_routing(dockerd: Dockerd) -> None:
    ping = call(dockerd, "GET", "/_ping")
    assert (ping.status, ping.body) == (200, b"OK")
    assert ping.headers["Api-Version"] == "1.51" and ping.headers["Server"] == "Docker/28.5.1 (linux)"
    assert ping.headers["Ostype"] == "linux" and ping.headers["Swarm"] == "inactive"
    head = call(dockerd, "HEAD", "/v1.51/_ping")
    assert (head.status, head.body, head.headers["Content-Length"]) == (200, b"", "0")

    version = call(dockerd, "GET", "/version")
    info = version.json()
    assert version.headers["Content-Type"] == "application/json" and version.body.endswith(b"}\n")
    assert (info["Version"], info["ApiVersion"], info["MinAPIVersion"], info["Os"]) == ("28.5.1", "1.51", "1.24", "linux")
    assert info["Components"][0]["Name"] == "Engine" and info["Components"][0]["Details"]["ApiVersion"] == "1.51"

    too_new = call(dockerd, "GET", "/v1.52/version")
    assert (too_new.status, too_new.json()) == (400, {"message": "client version 1.52 is too new. Maximum supported API version is 1.51"})
    too_old = call(dockerd, "GET", "/v1.20/version")  # older than 1.24: dockerd answers in plain text
    assert too_old.status == 400 and too_old.headers["Content-Type"] == "text/plain; charset=utf-8"
    assert too_old.body == b"client version 1.20 is too old. Minimum supported API version is 1.24, please upgrade your client to a newer version\n"
    for method, target in (("GET", "/v1.51/info"), ("PUT", "/v1.51/images/create"), ("GET", "/nothing")):
        missing = call(dockerd, method, target)
        assert (missing.status, missing.json()) == (404, {"message": "page not found"}), target
    assert dockerd.logged("GET /v1.51/info 404 (not served by the lab stand-in)")
    assert dockerd.logged("GET /_ping 200")


@needs_client
def test_client_negotiates_the_api_version(dockerd: Dockerd) -> None:
    docker = client(dockerd)
    assert docker.api_version == "1.51" and docker.docker_api_version_str == "1.51"
    assert docker.ping() is True
    assert docker.version()["Version"] == "28.5.1"
    assert dockerd.logged("GET /version 200"), "auto negotiation asks the unversioned /version first"
    assert dockerd.logged("GET /v1.51/_ping 200")


def test_sigint_stops_the_server(tmp_path: Path) -> None:
    server = Dockerd(tmp_path)
    assert call(server, "GET", "/_ping").status == 200
    assert server.stop(signal.SIGINT) == 0
    assert server.lines[-1] == "docker-api: stopped"


# --- inspect ----------------------------------------------------------------------------------------------------

SEEDED_ID = "sha256:" + "5e" * 32


@needs_client
def test_inspect_of_a_present_and_an_absent_image(tmp_path: Path) -> None:
    server = Dockerd(tmp_path, images={SEEDED_ID: {"Id": SEEDED_ID, "RepoTags": ["lab/seeded:1"], "Size": 1234}})
    try:
        docker = client(server)
        image = docker.find_image("lab/seeded", "1")
        assert image is not None and image["Id"] == SEEDED_ID
        assert (image["RepoTags"], image["RepoDigests"], image["Size"], image["Os"]) == (["lab/seeded:1"], [], 1234, "linux")
        assert image["Metadata"] == {"LastTagTime": "0001-01-01T00:00:00Z"} and image["GraphDriver"]["Name"] == "overlay2"
        assert {"Cmd", "Entrypoint", "Env", "Labels", "OnBuild", "User", "Volumes", "WorkingDir"} <= set(image["Config"])
        assert docker.find_image_by_id(SEEDED_ID) == image
        assert docker.find_image("lab/seeded", "2") is None
        assert docker.find_image("lab/absent", "latest") is None
        absent_id = "sha256:" + "0" * 64
        assert docker.find_image_by_id(absent_id, accept_missing_image=True) is None
        with pytest.raises(ModuleFailed) as failed:
            docker.find_image_by_id(absent_id)
        assert str(failed.value) == (
            f"Error inspecting image ID {absent_id} - 404 Client Error for http+docker://localhost/v1.51/images/{absent_id}/json: Not Found "
            f'("No such image: {absent_id}")'
        )
        with pytest.raises(docker_errors.ImageNotFound):  # the class the modules' `except NotFound` catch
            docker.get_json("/images/{0}/json", "lab/absent")
    finally:
        assert server.stop() == 0
    # raw: by name (a bare name is :latest), by short id, and errors
    server = Dockerd(tmp_path / "again", images={SEEDED_ID: {"Id": SEEDED_ID, "RepoTags": ["lab/seeded:latest"]}})
    try:
        assert call(server, "GET", "/v1.51/images/lab/seeded/json").json()["Id"] == SEEDED_ID
        assert call(server, "GET", f"/v1.51/images/{SEEDED_ID[7:19]}/json").json()["Id"] == SEEDED_ID
        absent = call(server, "GET", "/v1.51/images/lab/absent/json")
        assert (absent.status, absent.json()) == (404, {"message": "No such image: lab/absent:latest"})
        upper = call(server, "GET", "/v1.51/images/Lab/Absent/json")  # an uppercase first part is a domain to dockerd
        assert (upper.status, upper.json()["message"]) == (400, "invalid reference format: repository name (Absent) must be lowercase")
    finally:
        assert server.stop() == 0


# --- pull -------------------------------------------------------------------------------------------------------


def test_pull_stream_as_dockerd_writes_it(dockerd: Dockerd) -> None:
    raw, lines = pull_lines(dockerd, "rayproject/ray", "2.60.0")
    assert raw.headers["Content-Type"] == "application/json" and raw.headers["Api-Version"] == "1.51"
    assert b"\\u003e" in raw.body and b">" not in raw.body, "Go's json.Marshal escapes the progress bar's >"
    assert lines[0] == {"status": "Pulling from rayproject/ray", "id": "2.60.0"}
    layer_ids = [line["id"] for line in lines if line["status"] == "Pulling fs layer"]
    assert len(layer_ids) == 2 and all(len(i) == 12 for i in layer_ids)
    assert lines[1] == {"status": "Pulling fs layer", "progressDetail": {}, "id": layer_ids[0]}
    downloading = [line for line in lines if line["status"] == "Downloading"]
    assert downloading[-1]["progressDetail"]["current"] == downloading[-1]["progressDetail"]["total"]
    assert downloading[-1]["progress"].startswith("[" + "=" * 50 + ">] ")
    assert [line["id"] for line in lines if line["status"] == "Pull complete"] == layer_ids
    assert lines[-2]["status"].startswith("Digest: sha256:") and set(lines[-2]) == {"status"}
    assert lines[-1] == {"status": "Status: Downloaded newer image for rayproject/ray:2.60.0"}
    _stream, lines = pull_lines(dockerd, "rayproject/ray", "2.60.0")  # the image is here: nothing is downloaded
    assert [line["status"] for line in lines] == ["Pulling from rayproject/ray", lines[1]["status"], "Status: Image is up to date for rayproject/ray:2.60.0"]
    _stream, lines = pull_lines(dockerd, "ubuntu", "22.04")
    assert lines[0] == {"status": "Pulling from library/ubuntu", "id": "22.04"}
    assert lines[-1] == {"status": "Status: Downloaded newer image for ubuntu:22.04"}


@needs_client
def test_pull_of_a_registry_image_then_inspect(dockerd: Dockerd, tmp_path: Path) -> None:
    docker = client(dockerd)
    image, not_changed = docker.pull_image("rayproject/ray", tag="2.60.0")
    assert not_changed is False
    assert image["RepoTags"] == ["rayproject/ray:2.60.0"]
    (digest_ref,) = image["RepoDigests"]
    assert digest_ref.startswith("rayproject/ray@sha256:") and len(image["RootFS"]["Layers"]) == 2
    assert docker.find_image("rayproject/ray", "2.60.0") == image
    assert docker.find_image("docker.io/rayproject/ray", "2.60.0") == image  # through the client's docker.io fallbacks
    assert dockerd.logged("(Status: Downloaded newer image for rayproject/ray:2.60.0)")
    again, not_changed = docker.pull_image("rayproject/ray", tag="2.60.0")
    assert (again, not_changed) == (image, True)
    assert dockerd.logged("(Status: Image is up to date for rayproject/ray:2.60.0)")
    by_digest, not_changed = docker.pull_image("rayproject/ray", tag=digest_ref.split("@")[1])  # a pin by digest
    assert (by_digest["Id"], not_changed) == (image["Id"], True)
    assert docker.find_image("rayproject/ray", digest_ref.split("@")[1])["Id"] == image["Id"]
    official, _changed = docker.pull_image("docker.io/library/ubuntu", tag="22.04")
    assert official["RepoTags"] == ["ubuntu:22.04"] and official["RepoDigests"][0].startswith("ubuntu@sha256:")
    assert set(dockerd.images()) == {image["Id"], official["Id"]}
    # another node with the same registry gets the same image: the ray role's check of equal ids passes
    other = Dockerd(tmp_path / "node2")
    try:
        assert client(other).pull_image("rayproject/ray", tag="2.60.0")[0]["Id"] == image["Id"]
    finally:
        assert other.stop() == 0


@needs_client
def test_pull_of_an_unknown_image(dockerd: Dockerd) -> None:
    docker = client(dockerd)
    with pytest.raises(ModuleFailed) as failed:
        docker.pull_image("rayproject/nope", tag="1")
    assert str(failed.value) == (
        "Error pulling image rayproject/nope:1 - 404 Client Error for http+docker://localhost/v1.51/images/create?tag=1&fromImage=rayproject%2Fnope: "
        "Not Found (\"pull access denied for rayproject/nope, repository does not exist or may require 'docker login': denied: requested access to "
        'the resource is denied")'
    )
    with pytest.raises(ModuleFailed) as failed:
        docker.pull_image("rayproject/ray", tag="9.9.9")
    assert str(failed.value).endswith('Not Found ("manifest for rayproject/ray:9.9.9 not found: manifest unknown: manifest unknown")')
    with pytest.raises(ModuleFailed) as failed:  # a failure once the stream runs: dockerd's last line is the error
        docker.pull_image("example.com/lab/broken", tag="1")
    assert str(failed.value) == "Error pulling example.com/lab/broken - code: None message: unexpected EOF"
    assert not (dockerd.state / "images" / "images.json").exists(), "a failed pull stores nothing"
    raw = call(dockerd, "POST", "/v1.51/images/create?fromImage=rayproject%2Fnope&tag=1")
    assert raw.status == 404 and not raw.chunked and raw.headers["Content-Type"] == "application/json"
    assert raw.json()["message"].startswith("pull access denied for rayproject/nope, repository does not exist")
    _stream, lines = pull_lines(dockerd, "example.com/lab/broken", "1")
    assert lines[-1] == {"errorDetail": {"message": "unexpected EOF"}, "error": "unexpected EOF"}
    assert lines[0] == {"status": "Pulling from lab/broken", "id": "1"}


# --- delete -----------------------------------------------------------------------------------------------------


@needs_client
def test_delete(dockerd: Dockerd) -> None:
    docker = client(dockerd)
    image, _changed = docker.pull_image("rayproject/ray", tag="2.60.0")
    records = docker.delete_json("/images/{0}", "rayproject/ray:2.60.0", params={"force": False, "noprune": False})
    layers = image["RootFS"]["Layers"]
    chain_top = records[3]["Deleted"]
    assert records == [
        {"Untagged": "rayproject/ray:2.60.0"},
        {"Untagged": image["RepoDigests"][0]},
        {"Deleted": image["Id"]},
        {"Deleted": chain_top},
        {"Deleted": layers[0]},  # the bottom layer's chain id is its diff id
    ]
    assert chain_top not in layers
    assert docker.find_image("rayproject/ray", "2.60.0") is None and dockerd.images() == {}
    with pytest.raises(docker_errors.NotFound) as gone:  # docker_image_remove takes this as already removed
        docker.delete_json("/images/{0}", "rayproject/ray:2.60.0", params={"force": False, "noprune": False})
    assert gone.value.explanation == "No such image: rayproject/ray:2.60.0"
    # docker_image_remove with a name pinned by digest sends name:tag, "repo:sha256:<hex>": dockerd refuses that reference
    with pytest.raises(docker_errors.APIError) as refused:
        docker.delete_json("/images/{0}", "rayproject/ray:" + image["RepoDigests"][0].split("@")[1], params={"force": False, "noprune": False})
    assert (refused.value.status_code, refused.value.explanation) == (400, "invalid reference format")


def test_delete_conflicts(dockerd: Dockerd) -> None:
    pull_lines(dockerd, "rayproject/ray", "2.60.0")
    (image_id,) = dockerd.images()
    cid = container_record(dockerd.state, "rayproject/ray:2.60.0", "running")
    refused = call(dockerd, "DELETE", "/v1.51/images/rayproject/ray:2.60.0?force=False&noprune=False")
    assert refused.status == 409
    assert refused.json()["message"] == (
        f'conflict: unable to remove repository reference "rayproject/ray:2.60.0" (must force) - '
        f"container {cid[:12]} is using its referenced image {image_id[7:19]}"
    )
    forced = call(dockerd, "DELETE", "/v1.51/images/rayproject/ray:2.60.0?force=True")
    assert forced.status == 200 and [list(r) for r in forced.json()] == [["Untagged"], ["Untagged"]], "a running container keeps its image"
    assert dockerd.images()[image_id]["RepoTags"] == [] and dockerd.images()[image_id]["RepoDigests"] == []
    container_record(dockerd.state, image_id, "running")  # the untagged image, named by its id now (the CLI records references)
    by_id = call(dockerd, "DELETE", f"/v1.51/images/{image_id}?force=1")
    assert (by_id.status, by_id.json()["message"]) == (
        409,
        f"conflict: unable to delete {image_id[7:19]} (cannot be forced) - image is being used by running container {cid[:12]}",
    )
    (dockerd.state / f"{cid}.json").unlink()
    pull_lines(dockerd, "rayproject/ray", "2.60.0")
    pull_lines(dockerd, "ubuntu", "22.04")
    images = dockerd.images()
    images[image_id]["RepoTags"].append("lab/ray:copy")
    (dockerd.state / "images" / "images.json").write_text(json.dumps(images))
    two_repos = call(dockerd, "DELETE", f"/v1.51/images/{image_id[7:19]}")
    assert (two_repos.status, two_repos.json()["message"]) == (
        409,
        f"conflict: unable to delete {image_id[7:19]} (must be forced) - image is referenced in multiple repositories",
    )
    untag = call(dockerd, "DELETE", "/v1.51/images/lab/ray:copy")
    assert (untag.status, untag.json()) == (200, [{"Untagged": "lab/ray:copy"}])
    assert image_id in dockerd.images()


def test_image_list(dockerd: Dockerd) -> None:
    pull_lines(dockerd, "rayproject/ray", "2.60.0")
    pull_lines(dockerd, "ubuntu", "22.04")
    every = call(dockerd, "GET", "/v1.51/images/json").json()
    assert sorted(tag for s in every for tag in s["RepoTags"]) == ["rayproject/ray:2.60.0", "ubuntu:22.04"]
    assert set(every[0]) == {"Containers", "Created", "Id", "Labels", "ParentId", "RepoDigests", "RepoTags", "SharedSize", "Size"}
    assert every[0]["Containers"] == 0 and every[0]["SharedSize"] == -1
    filtered = call(dockerd, "GET", "/v1.51/images/json?filters=" + quote(json.dumps({"reference": ["rayproject/*"]}))).json()
    assert [s["RepoTags"] for s in filtered] == [["rayproject/ray:2.60.0"]]
    legacy_form = call(dockerd, "GET", "/v1.50/images/json?filters=" + quote(json.dumps({"reference": {"ubuntu": True}}))).json()
    assert [(s["RepoTags"], s["Containers"]) for s in legacy_form] == [(["ubuntu:22.04"], -1)]
    container_record(dockerd.state, "ubuntu:22.04", "exited")
    ubuntu = call(dockerd, "GET", "/v1.51/images/json?filters=" + quote(json.dumps({"reference": ["ubuntu:22.04"]}))).json()
    assert ubuntu[0]["Containers"] == 1
    bad = call(dockerd, "GET", "/v1.51/images/json?filters=" + quote(json.dumps({"volume": ["x"]})))
    assert (bad.status, bad.json()) == (400, {"message": "invalid filter 'volume'"})


def test_the_cli_standin_ignores_the_image_store(dockerd: Dockerd) -> None:
    """docker-api keeps its files in images/: the docker CLI stand-in reads every other *.json of the folder."""
    pull_lines(dockerd, "ubuntu", "22.04")
    env = {"SPARKOPS_LAB_DOCKER_STATE": str(dockerd.state), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, DOCKER_CLI, "ps", "-a", "--format", "{{.Names}}"], capture_output=True, text=True, env=env, timeout=30, check=False)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


# --- the modules themselves -------------------------------------------------------------------------------------

PLAY = """
- hosts: node
  gather_facts: false
  module_defaults:
    group/community.docker.docker:
      docker_host: "unix://{{ socket }}"
  tasks:
    - {name: pull, community.docker.docker_image_pull: {name: "rayproject/ray:2.60.0", pull: not_present}, register: first}
    - {name: pull again, community.docker.docker_image_pull: {name: "rayproject/ray:2.60.0", pull: not_present}, register: second}
    - {name: info, community.docker.docker_image_info: {name: "rayproject/ray:2.60.0"}, register: info}
    - name: unknown
      community.docker.docker_image_pull: {name: "rayproject/nope:1", pull: not_present}
      register: unknown
      ignore_errors: true
    - {name: remove, community.docker.docker_image_remove: {name: "rayproject/ray:2.60.0"}, register: removed}
    - {name: remove again, community.docker.docker_image_remove: {name: "rayproject/ray:2.60.0"}, register: removed_again}
    - {name: pull pinned, community.docker.docker_image_pull: {name: "rayproject/ray@{{ pinned }}", pull: not_present}, register: pinned_pull}
    - name: remove pinned
      community.docker.docker_image_remove: {name: "rayproject/ray@{{ pinned }}"}
      register: pinned_remove
      ignore_errors: true
    - name: keep the results
      ansible.builtin.copy:
        content: "{{ {'first': first, 'second': second, 'info': info, 'unknown': unknown, 'removed': removed, 'again': removed_again,
                      'pinned_pull': pinned_pull, 'pinned_remove': pinned_remove} | to_json }}"
        dest: "{{ out }}"
        mode: "0600"
"""


@needs_client
def test_the_modules_against_the_standin(dockerd: Dockerd, tmp_path: Path) -> None:
    play_dir = tmp_path / "play"
    play_dir.mkdir()
    inventory = {"all": {"hosts": {"node": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}}}}
    out = tmp_path / "results.json"
    run_playbook(play_dir, inventory, PLAY, {"socket": dockerd.socket, "out": str(out), "pinned": PINNED})
    results = json.loads(out.read_text())
    assert results["first"]["changed"] is True and results["first"]["actions"] == ["Pulled image rayproject/ray:2.60.0"]
    assert results["second"]["changed"] is False and results["second"]["image"]["Id"] == results["first"]["image"]["Id"]
    assert [image["Id"] for image in results["info"]["images"]] == [results["first"]["image"]["Id"]]
    assert results["unknown"]["failed"] is True
    assert "pull access denied for rayproject/nope, repository does not exist" in results["unknown"]["msg"]
    assert results["removed"]["changed"] is True
    assert results["first"]["image"]["Id"] in results["removed"]["deleted"]
    assert results["removed"]["untagged"] == sorted(["rayproject/ray:2.60.0", results["first"]["image"]["RepoDigests"][0]])
    assert results["again"]["changed"] is False
    # Pinned by digest: the pull finds and fetches it, but docker_image_remove (4.8.5) deletes "<repo>:<tag>", here
    # "rayproject/ray:sha256:<hex>", a reference dockerd refuses: the module fails and the image stays.
    assert results["pinned_pull"]["changed"] is True and results["pinned_pull"]["image"]["RepoDigests"] == [f"rayproject/ray@{PINNED}"]
    assert results["pinned_remove"]["failed"] is True
    assert results["pinned_remove"]["msg"].startswith(f"Error removing image rayproject/ray:{PINNED} - 400 Client Error for ")
    assert results["pinned_remove"]["msg"].endswith('Bad Request ("invalid reference format")')
    assert [img["RepoDigests"] for img in dockerd.images().values()] == [[f"rayproject/ray@{PINNED}"]]
