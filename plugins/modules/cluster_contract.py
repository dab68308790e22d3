#!/usr/bin/python
# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: cluster_contract
short_description: Check the sparkops.inference inventory contract and plan the cluster
version_added: 1.0.0
description:
  - Runs on the controller. Reads the groups C(spark_head) (exactly one host) and C(spark_workers) (one or
    more hosts), each host's C(sparkops_fabric_ip), and the cluster variables C(sparkops_model_repo),
    C(sparkops_model_revision), C(sparkops_served_model_name), C(sparkops_tensor_parallel_size),
    C(sparkops_pipeline_parallel_size), C(sparkops_gpus_per_node), C(sparkops_fabric_subnet),
    C(sparkops_serve_port) and C(sparkops_gpu_memory_utilization).
  - Fails listing every violation, each naming the variable or the host, so that nothing starts on a
    cluster that cannot work. Checks that fabric IPs are distinct host addresses inside the fabric subnet,
    that cluster variables are the same on every host, and that tensor parallel size times pipeline
    parallel size equals the number of nodes times GPUs per node.
  - On success sets the fact C(sparkops_cluster) with the plan the roles share.
  - "Takes no options. Run it once (C(run_once: true)) in a play over the Spark hosts."
extends_documentation_fragment:
  - sparkops.inference._attributes
  - sparkops.inference._attributes.info_module
  - sparkops.inference._attributes.actiongroup_controller
attributes:
  facts:
    description: Action returns an C(ansible_facts) dictionary that will update existing host facts.
    support: full
options: {}
author:
  - sparkops.inference developers (@sparkops)
"""

EXAMPLES = r"""
- name: Check the inventory contract and plan the cluster
  sparkops.inference.cluster_contract:
  run_once: true

- name: Show where the head listens on the fabric
  ansible.builtin.debug:
    msg: "Ray GCS will bind {{ sparkops_cluster.head_fabric_ip }}"
"""

RETURN = r"""
cluster:
  description: The cluster plan, also set as the fact C(sparkops_cluster).
  returned: success
  type: dict
  contains:
    head:
      description: The head host (the only host in C(spark_head)).
      type: str
      returned: success
      sample: spark-head
    workers:
      description: The worker hosts, in inventory order.
      type: list
      elements: str
      returned: success
      sample: [spark-worker1]
    nodes:
      description: The head followed by the workers.
      type: list
      elements: str
      returned: success
      sample: [spark-head, spark-worker1]
    fabric_ips:
      description: Each host's fabric IPv4 address.
      type: dict
      returned: success
      sample: {spark-head: 192.168.200.11, spark-worker1: 192.168.200.12}
    head_fabric_ip:
      description: The head's fabric address (Ray GCS, MASTER_ADDR).
      type: str
      returned: success
      sample: 192.168.200.11
    fabric_subnet:
      description: The fabric subnet in CIDR form.
      type: str
      returned: success
      sample: 192.168.200.0/24
    world_size:
      description: Tensor parallel size times pipeline parallel size (the GPUs vLLM uses).
      type: int
      returned: success
      sample: 2
problems:
  description: Every violation of the contract, each naming the variable or the host.
  returned: failure
  type: list
  elements: str
  sample: ["host spark-worker1 has no sparkops_fabric_ip"]
"""
