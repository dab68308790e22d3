#!/usr/bin/python
# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: ray_cluster_info
short_description: Report the local Ray and Python versions and the nodes of a Ray cluster, optionally waiting for them
version_added: 1.0.0
description:
  - Runs on a Spark. Runs a small Python program with the Ray interpreter (the Ray virtual environment on the host,
    or C(python3) inside the Ray container with O(container)) and reports the interpreter's Ray and Python versions.
  - When O(address) is set, also connects to that Ray cluster as a driver (C(ray.init)), reads C(ray.nodes) and
    reports every node. The host must itself be a node of that cluster (Ray connects a driver through a local raylet).
  - With O(expected_nodes), waits up to O(timeout) seconds until every expected node is alive with at least
    O(expected_gpus_per_node) GPUs, and fails naming every missing host and why, with the last state seen.
  - Fails when the cluster cannot be reached at all, with the error and the tail of the program's stderr,
    and when Ray is not importable by the interpreter.
  - Never changes anything.
extends_documentation_fragment:
  - sparkops.inference._attributes
  - sparkops.inference._attributes.info_module
options:
  python:
    description:
      - The Python interpreter that has Ray installed.
      - Defaults to V(/opt/sparkops/ray/bin/python) on the host, or to V(python3) inside O(container) when that is set.
    type: path
  address:
    description:
      - The Ray GCS address of the cluster, C(ip:port), for example V(192.168.200.11:6379).
      - When not set, only the local versions are reported.
    type: str
  node_ip_address:
    description:
      - The IP address of this host's Ray node, passed to C(ray.init) as C(_node_ip_address) so that the driver
        attaches to the local raylet that registered with that address (the fabric IP on a Spark with several
        addresses).
      - When not set, Ray attaches to the raylet it finds running on this host (the head's, when there are several).
      - An address that no raylet on this host registered with makes the look fail, after about a minute.
    type: str
  container:
    description:
      - Run the program inside this running container with C(docker exec), for Ray running in a container with
        host networking. The C(docker) binary must be on the managed host.
    type: str
  auth_token_file:
    description:
      - The file holding the cluster's token, for a cluster with Ray's token authentication (C(RAY_AUTH_MODE=token),
        Ray 2.52 or later), such as the one the R(sparkops.inference.ray_cluster,ansible_collections.sparkops.inference.ray_cluster_role)
        role forms (V(/etc/sparkops/private/ray-auth-token)).
      - The program runs with C(RAY_AUTH_MODE=token) and C(RAY_AUTH_TOKEN_PATH) set to this path (inside O(container)
        when that is set); the token itself is never in its arguments, its environment or the result.
      - When not set, the program runs with the environment the module has; a cluster with token authentication then
        refuses it, and the result says the cluster cannot be reached.
    type: path
  expected_nodes:
    description:
      - The nodes the cluster must have, as a mapping of inventory host name to the node's IP address
        (the C(NodeManagerAddress) Ray reports, the fabric IP).
      - Requires O(address).
      - Alive nodes whose IP is not listed are returned in RV(unexpected_nodes) but do not make the module fail.
    type: dict
  expected_gpus_per_node:
    description:
      - The number of GPUs every node in O(expected_nodes) must offer to Ray before the cluster counts as ready.
    type: float
    default: 0
  timeout:
    description:
      - How many seconds to keep polling until the cluster is reachable and every node in O(expected_nodes) is ready.
      - V(0) looks once.
      - Each look starts a fresh Ray driver, which takes a second or more, so the module can run somewhat longer.
    type: int
    default: 0
  poll_interval:
    description:
      - Seconds to wait between two looks while O(timeout) has not passed.
    type: float
    default: 2
notes:
  - The cluster is reached only from a node of it; run the module on the head, with O(node_ip_address) set to
    the head's fabric IP.
  - When the cluster cannot be reached, each look itself takes about 40 seconds before C(ray.init) gives up
    (the module limits Ray to one connection attempt per look unless C(RAY_gcs_server_port_wait_time_s) is set).
author:
  - sparkops.inference developers (@sparkops)
"""

EXAMPLES = r"""
- name: Report the Ray and Python versions on every Spark
  sparkops.inference.ray_cluster_info:
  register: ray_versions

- name: Wait until every Spark in the inventory has joined the Ray cluster with its GPU
  sparkops.inference.ray_cluster_info:
    address: "{{ sparkops_cluster.head_fabric_ip }}:6379"
    node_ip_address: "{{ sparkops_cluster.head_fabric_ip }}"
    expected_nodes: "{{ sparkops_cluster.fabric_ips }}"
    expected_gpus_per_node: 1
    timeout: 300
    poll_interval: 5
  register: ray_cluster
  when: inventory_hostname == sparkops_cluster.head

- name: Look at the cluster once, with Ray running in the container ray-head
  sparkops.inference.ray_cluster_info:
    container: ray-head
    address: 192.168.200.11:6379
  register: ray_cluster
"""

RETURN = r"""
ray_version:
  description: The Ray version of the interpreter (C(ray.__version__)).
  returned: when Ray is importable
  type: str
  sample: 2.60.0
python_version:
  description: The Python version of the interpreter (from C(platform.python_version)), patch release included.
  returned: when Ray is importable
  type: str
  sample: 3.11.7
nodes:
  description:
    - Every node of the cluster in the last look, alive nodes first, the head first, then by IP.
    - Empty when O(address) is not set or the cluster could not be reached.
  returned: always
  type: list
  elements: dict
  contains:
    node_id:
      description: The Ray node ID.
      type: str
      returned: always
      sample: 6221fbdbab906177bedabb073713757c80bd726652559fd2504a91b4
    ip:
      description: The node's IP address (C(NodeManagerAddress)).
      type: str
      returned: always
      sample: 192.168.200.11
    alive:
      description: Whether the node is alive.
      type: bool
      returned: always
      sample: true
    state:
      description: V(ALIVE) or V(DEAD).
      type: str
      returned: always
      sample: ALIVE
    is_head:
      description: Whether the node is the head (it has the resource C(node:__internal_head__)).
      type: bool
      returned: always
      sample: true
    hostname:
      description: The node's host name (C(NodeManagerHostname)).
      type: str
      returned: always
      sample: spark-head
    resources:
      description: The node's total Ray resources.
      type: dict
      returned: always
      sample: {CPU: 20.0, GPU: 1.0, "node:192.168.200.11": 1.0, "node:__internal_head__": 1.0}
    gpus:
      description: The node's GPUs (the C(GPU) resource, V(0) when it has none).
      type: float
      returned: always
      sample: 1.0
alive_nodes:
  description: The number of alive nodes in the last look.
  returned: always
  type: int
  sample: 2
total_gpus:
  description: The GPUs of all alive nodes in the last look.
  returned: always
  type: float
  sample: 2.0
ready:
  description:
    - Whether the cluster was reached and every node in O(expected_nodes) is alive with at least
      O(expected_gpus_per_node) GPUs.
    - V(false) when O(address) is not set.
  returned: always
  type: bool
  sample: true
missing:
  description: The hosts of O(expected_nodes) that are not alive with enough GPUs, in O(expected_nodes) order.
  returned: always
  type: list
  elements: str
  sample: [spark-worker2]
unexpected_nodes:
  description:
    - Alive nodes whose IP is not in O(expected_nodes), in the shape of RV(nodes).
    - Empty when O(expected_nodes) is not set.
  returned: always
  type: list
  elements: dict
  sample:
    - node_id: 3c1f0b6f2d8a4e0d9c7b5a3e1f2d4c6b8a0e2f4d6c8b0a2e4f6d8c0b
      ip: 192.168.200.20
      alive: true
      state: ALIVE
      is_head: false
      hostname: spare-spark
      resources: {CPU: 20.0, GPU: 1.0}
      gpus: 1.0
"""

import os
import typing as t

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.sparkops.inference.plugins.module_utils._ray_cluster import (
    Probe,
    RayClusterError,
    auth_environment,
    build_argv,
    parse_output,
    resolve_python,
    wait_for_cluster,
)


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "python": {"type": "path"},
            "address": {"type": "str"},
            "node_ip_address": {"type": "str"},
            "container": {"type": "str"},
            "auth_token_file": {"type": "path"},
            "expected_nodes": {"type": "dict"},
            "expected_gpus_per_node": {"type": "float", "default": 0},
            "timeout": {"type": "int", "default": 0},
            "poll_interval": {"type": "float", "default": 2},
        },
        required_by={"expected_nodes": "address"},
        supports_check_mode=True,
    )
    params = module.params
    container: str | None = params["container"]
    address: str | None = params["address"]
    python = resolve_python(params["python"], container)
    where = f" in container {container}" if container else ""
    docker = module.get_bin_path("docker", required=True) if container else None
    result: dict[str, t.Any] = {
        "changed": False,
        "nodes": [],
        "alive_nodes": 0,
        "total_gpus": 0.0,
        "ready": False,
        "missing": [],
        "unexpected_nodes": [],
    }
    if params["timeout"] < 0 or params["poll_interval"] < 0:
        module.fail_json(msg="timeout and poll_interval must not be negative", **result)
    expected_nodes = {str(host): str(ip) for host, ip in (params["expected_nodes"] or {}).items()}

    if not container:
        found = python if os.path.isabs(python) else module.get_bin_path(python)
        if not found or not os.access(found, os.X_OK):
            module.fail_json(msg=f"the Ray interpreter {python} is not an executable on this host (is Ray installed?)", **result)
        python = found

    environment = auth_environment(params["auth_token_file"])

    def probe() -> Probe:
        argv = build_argv(python, address, params["node_ip_address"], container, docker, environment)
        rc, stdout, stderr = module.run_command(argv, expand_user_and_vars=False, environ_update={} if container else environment)
        return parse_output(rc, stdout, stderr, python, where)

    try:
        if not address:
            local = probe()
            result.update(ray_version=local.ray_version, python_version=local.python_version)
            module.exit_json(**result)
        outcome = wait_for_cluster(
            probe,
            address,
            expected_nodes,
            params["expected_gpus_per_node"],
            params["timeout"],
            params["poll_interval"],
            runner=f"{python}{where}",
        )
        result.update(ray_version=outcome.probe.ray_version, python_version=outcome.probe.python_version)
        if outcome.evaluation is not None:
            evaluation = outcome.evaluation
            result.update(
                nodes=evaluation.nodes,
                alive_nodes=evaluation.alive_nodes,
                total_gpus=evaluation.total_gpus,
                ready=evaluation.ready,
                missing=evaluation.missing,
                unexpected_nodes=evaluation.unexpected_nodes,
            )
        else:
            result["missing"] = list(expected_nodes)
        failure = outcome.failure
    except RayClusterError as exc:
        failure = str(exc)
    if failure:
        module.fail_json(msg=failure, **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
