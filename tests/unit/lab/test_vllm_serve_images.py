# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The vllm_serve role's image removal (roles/vllm_serve/tasks/remove_image.yml: an upgrade's previous image, a
rolled-back new one, teardown) through community.docker's modules against the Docker Engine API stand-in: by
reference for a tag, by Id for a digest (community.docker 4.8.5 sends repo@sha256:... as repo:sha256:..., which
dockerd refuses: test_docker_api_standin.py shows the module failing), nothing for an image that is not there, and
check mode removing nothing."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ansible_run import run_playbook
from test_docker_api_standin import PINNED, Dockerd, needs_client

ROLE_TASKS = Path(__file__).resolve().parents[3] / "roles" / "vllm_serve" / "tasks"
TAG, DIGEST = "ubuntu:22.04", f"rayproject/ray@{PINNED}"

PLAY = """
- hosts: node
  gather_facts: false
  check_mode: {check}
  module_defaults:
    group/community.docker.docker:
      docker_host: "unix://{{{{ socket }}}}"
  tasks:
    - {{name: pull, community.docker.docker_image_pull: {{name: "{{{{ item }}}}", pull: not_present}}, loop: "{{{{ pulls }}}}", check_mode: false}}
    - name: remove
      ansible.builtin.include_tasks: {tasks}/remove_image.yml
      loop: "{{{{ removals }}}}"
      loop_control:
        loop_var: __vllm_serve_image_gone
    - name: keep what it says it removed
      ansible.builtin.copy:
        content: "{{{{ __vllm_serve_images_removed | default([]) | to_json }}}}"
        dest: "{{{{ out }}}}"
        mode: "0600"
      check_mode: false
"""


def remove(server: Dockerd, tmp_path: Path, pulls: list[str], removals: list[str], check: bool = False) -> list[str]:
    """Pull ``pulls``, then run remove_image.yml for each of ``removals``; what it counted as removed."""
    play_dir = tmp_path / ("check" if check else "run")
    play_dir.mkdir(exist_ok=True)
    out = tmp_path / "removed.json"
    inventory = {"all": {"hosts": {"node": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}}}}
    extra = {"socket": server.socket, "out": str(out), "pulls": pulls, "removals": removals}
    run_playbook(play_dir, inventory, PLAY.format(tasks=ROLE_TASKS, check=str(check).lower()), extra)
    return list(json.loads(out.read_text()))


def refs(server: Dockerd) -> set[str]:
    return {ref for image in server.images().values() for ref in (image.get("RepoTags") or []) + (image.get("RepoDigests") or [])}


@needs_client
def test_a_tag_and_a_digest_are_removed_and_a_missing_image_is_not_counted(tmp_path: Path) -> None:
    server = Dockerd(tmp_path)
    try:
        removed = remove(server, tmp_path, [TAG, DIGEST], [TAG, DIGEST, "ubuntu:24.04"])
        assert removed == [TAG, DIGEST]
        assert server.images() == {}
        assert server.logged("DELETE /v1.51/images/sha256:") and not server.logged("rayproject/ray:sha256")
    finally:
        assert server.stop() == 0


@needs_client
def test_check_mode_says_what_it_would_remove_and_removes_nothing(tmp_path: Path) -> None:
    server = Dockerd(tmp_path)
    try:
        remove(server, tmp_path, [TAG, DIGEST], [])
        before = server.images()
        assert {TAG, DIGEST} <= refs(server)
        assert remove(server, tmp_path, [], [TAG, DIGEST], check=True) == [TAG, DIGEST]
        assert server.images() == before
    finally:
        assert server.stop() == 0
