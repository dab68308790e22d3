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
    C(sparkops_serve_port) and C(sparkops_gpu_memory_utilization); the optional shared paths and ports
    C(sparkops_fabric_env_file) (default V(/etc/sparkops/fabric.env)), C(sparkops_ray_venv) (V(/opt/sparkops/ray)),
    C(sparkops_ray_port) (V(6379)) and C(sparkops_hf_home) (V(/var/lib/sparkops/huggingface)); also each host's
    C(ansible_host) and the roles' port variables as the inventory sets them, else the roles' defaults,
    C(ray_cluster_port) (C(sparkops_ray_port)), C(ray_cluster_dashboard_port) (8265), C(ray_cluster_extra_args),
    C(vllm_serve_port) (C(sparkops_serve_port)), C(vllm_serve_master_port) (29501) and C(vllm_serve_group_port)
    (29560); and C(vllm_serve_backend), how vLLM runs across the nodes, V(mp) (the default, vLLM's own multi-node
    mode, no Ray cluster) or V(ray), the same on every host.
  - C(sparkops_deployments), a list of deployments (the same on every host), replaces the model's cluster variables
    (C(sparkops_model_repo), C(sparkops_model_revision), C(sparkops_served_model_name),
    C(sparkops_tensor_parallel_size), C(sparkops_pipeline_parallel_size); setting one beside it is refused). Each
    entry takes C(name) (1 to 32 lowercase letters, digits and inner hyphens, unique), C(model) (a repo id),
    C(revision) (V(main)), C(served_model_name) (the model), C(nodes) (V(all), or inventory hosts),
    C(tensor_parallel_size) (its GPUs divided by the pipeline size), C(pipeline_parallel_size) (1), C(port) (else
    C(sparkops_serve_port)), C(gpu_memory_utilization) (else C(sparkops_gpu_memory_utilization)), C(extra_args) (a
    list) and C(env) (a mapping). Every problem is named with the entry (its index and name) and the key. Each
    deployment's TP x PP must equal its nodes' GPUs, the ports are unique among themselves and the other services,
    and the memory shares of the deployments on one node add up to at most 1. An empty list is refused (the
    teardown playbook removes everything). The roles serve one deployment across every node so far; more, or one
    on some of the nodes, are refused saying so.
  - Fails listing every violation, each naming the variable or the host, so that nothing starts on a
    cluster that cannot work. Checks that fabric IPs are distinct host addresses inside the fabric subnet,
    that cluster variables are the same on every host, that the shared paths are absolute and the shared
    port a TCP port, and that tensor parallel size times pipeline parallel size equals the number of nodes times
    GPUs per node.
  - Refuses a fabric subnet no fabric of Sparks can use. One wider than C(/8), C(0.0.0.0/0) included, since a
    fabric is a point-to-point link or one switch's small subnet and every address in it is trusted (the
    C(ray_cluster) units accept connections from all of it). One inside loopback C(127.0.0.0/8), multicast
    C(224.0.0.0/4), the unspecified block C(0.0.0.0/8) or reserved C(240.0.0.0/4). Link-local
    C(169.254.0.0/16) is accepted (a back-to-back cable may carry only that).
  - Refuses a host whose management address (C(ansible_host), else its inventory name, when it is an IPv4
    address) lies inside the fabric subnet, unless it is the host's own C(sparkops_fabric_ip) (a worker
    reached over the fabric through the head).
  - Refuses two services on one port, whatever the backend and C(ray_cluster_dashboard), among the API
    (C(sparkops_serve_port), C(vllm_serve_port)), SSH (22), Ray's GCS (C(sparkops_ray_port), C(ray_cluster_port)), dashboard
    (C(ray_cluster_dashboard_port)), client server (10001) and dashboard agent (52365), Ray's worker ports
    (10002-19999), every port flag in C(ray_cluster_extra_args) (which moves the defaults it names), and vLLM's
    C(vllm_serve_master_port) and C(vllm_serve_group_port). Each role port must be a TCP port and the same on
    every host.
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
    fabric_env_file:
      description: C(sparkops_fabric_env_file), the fabric environment file C(nccl_env) writes and the units read.
      type: str
      returned: success
      sample: /etc/sparkops/fabric.env
    ray_venv:
      description: C(sparkops_ray_venv), the venv C(ray_cluster) installs Ray into and C(vllm_serve) vLLM into.
      type: str
      returned: success
      sample: /opt/sparkops/ray
    ray_port:
      description: C(sparkops_ray_port), Ray's GCS port on the head.
      type: int
      returned: success
      sample: 6379
    hf_home:
      description: C(sparkops_hf_home), the Hugging Face home C(model_sync) keeps the model under and C(vllm_serve) reads it from.
      type: str
      returned: success
      sample: /var/lib/sparkops/huggingface
    ray_units:
      description: The Ray units' names by role (V(head), V(worker)), as C(ray_cluster) writes them.
      type: dict
      returned: success
      sample: {head: sparkops-ray-head.service, worker: sparkops-ray-worker.service}
    backend:
      description:
        - How vLLM runs across the nodes, C(vllm_serve_backend) (V(mp) unless the inventory says V(ray)). C(ray_cluster)
          deploys its units only with V(ray) and removes them otherwise; C(vllm_serve) serves with it.
      type: str
      returned: success
      sample: mp
    deployments:
      description:
        - The deployments the cluster serves, each one model served by one vLLM group. From C(sparkops_deployments)
          when the inventory sets it, else the one the cluster variables describe, named V(default), on every node.
        - Each has C(name), C(model), C(revision), C(served_model_name), C(nodes) (the plan's order), C(head) (the first
          of its nodes, its rank 0, which serves its API), C(tensor_parallel_size), C(pipeline_parallel_size),
          C(port), C(gpu_memory_utilization), C(extra_args) and C(env). The roles serve the first (and, so far, only) one.
      type: list
      elements: dict
      returned: success
      sample:
        - {name: default, model: Qwen/Qwen3.5-122B-A10B-FP8, revision: main, served_model_name: qwen3.5-122b,
           nodes: [spark-head, spark-worker1], head: spark-head, tensor_parallel_size: 2, pipeline_parallel_size: 1,
           port: 8000, gpu_memory_utilization: 0.85, extra_args: [], env: {}}
problems:
  description: Every violation of the contract, each naming the variable or the host.
  returned: failure
  type: list
  elements: str
  sample: ["host spark-worker1 has no sparkops_fabric_ip"]
"""
