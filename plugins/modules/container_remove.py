#!/usr/bin/python
# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: container_remove
short_description: Stop and remove docker containers through the docker CLI
version_added: 1.0.0
description:
  - Removes the docker containers named in O(containers), for example old vLLM or Ray containers that hold the
    GPU and unified memory of a DGX Spark.
  - Why not M(community.docker.docker_container) with C(state=absent) (the collection depends on community.docker and
    uses its modules for images) - the Engine API resolves a reference as a name or any id prefix, so a container
    that is gone (C(cafe), an old short id) would take another whose id begins like it; this module matches full ids
    and names only. It also removes a list in one task and confirms with a last listing, and works where only the
    C(docker) CLI is usable (a rootless or remote context the CLI is configured for, no socket for Python).
  - Lists the containers with C(docker ps -a --no-trunc --format '{{json .}}') and matches each entry of
    O(containers) exactly - the full id, then the name. Unlike docker, an id prefix matches nothing, so that a name
    that is no longer there (C(cafe), an old short id) never takes another container whose id begins like it.
  - A running, paused or restarting container is first stopped with C(docker stop -t <stop_timeout>), which sends
    its stop signal and, after O(stop_timeout) seconds, C(SIGKILL). Then every matched container is removed with
    C(docker rm -f). A last listing confirms the containers are gone.
  - Never removes images or volumes (no C(docker rm -v)).
  - Containers that do not exist are reported in RV(absent) and are not an error.
  - Fails, naming the container and docker's error, when a container is still there after C(docker rm -f), and
    fails when C(docker ps) fails (for example when the docker daemon is not running).
options:
  containers:
    description:
      - The names or full ids (64 hex digits, C(docker ps --no-trunc)) of the containers to remove. A short id or
        another id prefix names no container (it is reported in RV(absent)).
    type: list
    elements: str
    required: true
  docker_cli:
    description:
      - The docker command line client, as a path or a command name to look up on E(PATH).
      - When not set, C(docker) is looked up on E(PATH). If it is not installed, there are no containers to remove
        and the module returns RV(docker_available=false) and C(changed=false).
      - When set to a path or name that does not exist, the module fails naming it.
    type: path
  stop_timeout:
    description:
      - Seconds a running container is given to stop (C(docker stop -t)) before docker kills it and it is removed.
      - A container that is not running is removed at once.
    type: int
    default: 30
extends_documentation_fragment:
  - sparkops.inference._attributes
attributes:
  check_mode:
    support: full
    details:
      - Lists the containers and reports in RV(removed) those that would be removed, without stopping or
        removing any.
  diff_mode:
    support: full
    details:
      - The diff lists the requested containers that exist, one a line (name, id, image, state), before and after.
  idempotent:
    support: full
notes:
  - Needs permission to use docker (root, or a member of the C(docker) group); use C(become) as needed.
seealso:
  - module: community.docker.docker_container
    description: Manages containers through the Docker Engine API, with the Docker SDK for Python.
author:
  - sparkops.inference developers (@sparkops)
"""

EXAMPLES = r"""
- name: Remove the old vLLM and Ray containers that hold the GPU
  sparkops.inference.container_remove:
    containers:
      - vllm-qwen3
      - sparkops-ray
  become: true
  register: removed_containers

- name: Show what was removed
  ansible.builtin.debug:
    msg: "{{ removed_containers.removed | map(attribute='name') | list }}"

- name: Remove containers by id, giving them 60 seconds to stop
  sparkops.inference.container_remove:
    containers: "{{ gpu_containers | map(attribute='id') | list }}"
    stop_timeout: 60
  become: true

- name: Use a docker client that is not on PATH
  sparkops.inference.container_remove:
    containers: [vllm-old]
    docker_cli: /opt/docker/bin/docker
  become: true
"""

RETURN = r"""
removed:
  description:
    - The containers removed, in the order requested; in check mode, those that would be removed.
    - Each container appears once, however many entries of O(containers) name it.
  returned: success
  type: list
  elements: dict
  contains:
    id:
      description: The full container id.
      type: str
      returned: success
      sample: 3f2a9c1b7d4e5f60718293a4b5c6d7e8f90112233445566778899aabbccddeeff
    name:
      description: The container's name (its first name, or the short id when it has none).
      type: str
      returned: success
      sample: vllm-qwen3
    image:
      description: The container's image, as C(docker ps) shows it.
      type: str
      returned: success
      sample: vllm/vllm-openai:v0.11.0
    state:
      description: The container's state before it was removed, for example C(running), C(exited), C(created).
      type: str
      returned: success
      sample: running
  sample:
    - id: 3f2a9c1b7d4e5f60718293a4b5c6d7e8f90112233445566778899aabbccddeeff
      name: vllm-qwen3
      image: vllm/vllm-openai:v0.11.0
      state: running
absent:
  description:
    - The entries of O(containers) that named no container.
    - All of O(containers) when docker is not installed (RV(docker_available=false)).
  returned: success
  type: list
  elements: str
  sample: [sparkops-ray]
docker_available:
  description: Whether the docker command line client was found. When false nothing was done.
  returned: always
  type: bool
  sample: true
diff:
  description:
    - The requested containers that existed (C(before)) and those still there (C(after)), one a line as
      C(name id image state); C(after) is empty when all were removed (in check mode, would be).
  returned: success
  type: dict
  contains:
    before:
      description: The requested containers that existed.
      type: str
      returned: success
    after:
      description: The requested containers still there.
      type: str
      returned: success
  sample:
    before: "vllm-qwen3 3f2a9c1b7d4e5f60718293a4b5c6d7e8f90112233445566778899aabbccddeeff vllm/vllm-openai:v0.11.0 running\n"
    after: ""
"""

# Imports follow the documentation, as validate-modules requires.
import os  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.sparkops.inference.plugins.module_utils._docker_cli import DockerCli, DockerError, remove_containers  # noqa: E402


def _docker_cli(module: AnsibleModule) -> str | None:
    """The docker client to use; None when none was asked for and ``docker`` is not installed."""
    given = module.params["docker_cli"]
    if given is None:
        return module.get_bin_path("docker")
    if os.sep not in given:
        found = module.get_bin_path(given)
        if found is None:
            module.fail_json(msg=f"docker_cli {given} was not found on PATH", docker_available=False)
        return found
    if not os.path.isfile(given) or not os.access(given, os.X_OK):
        module.fail_json(msg=f"docker_cli {given} does not exist or is not an executable file", docker_available=False)
    return str(given)


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "containers": {"type": "list", "elements": "str", "required": True},
            "docker_cli": {"type": "path"},
            "stop_timeout": {"type": "int", "default": 30},
        },
        supports_check_mode=True,
    )
    docker = _docker_cli(module)
    if docker is None:
        module.exit_json(changed=False, removed=[], absent=list(module.params["containers"]), docker_available=False, diff={"before": "", "after": ""})

    cli = DockerCli(docker, module.run_command)
    try:
        result = remove_containers(cli, module.params["containers"], module.params["stop_timeout"], check_mode=module.check_mode)
    except DockerError as exc:
        module.fail_json(msg=str(exc), docker_available=True)
    for warning in result.warnings:
        module.warn(warning)
    if result.failures:
        module.fail_json(msg="; ".join(result.failures), changed=result.changed, docker_available=True, **result.as_dict())
    module.exit_json(changed=result.changed, docker_available=True, **result.as_dict())


if __name__ == "__main__":
    main()
