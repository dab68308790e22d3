"""Render the lab's Ansible inventory and SSH client config (pure functions, unit-tested)."""

from __future__ import annotations

from pathlib import Path

import yaml

from .topology import Topology


def ssh_config(topo: Topology, key_file: Path, known_hosts: Path) -> str:
    """An ssh_config in which workers are reached only through the head (ProxyJump), as on real Sparks."""
    common = [
        "  User root",
        f"  IdentityFile {key_file}",
        "  IdentitiesOnly yes",
        f"  UserKnownHostsFile {known_hosts}",
        "  StrictHostKeyChecking accept-new",
        "  ConnectTimeout 10",
        "  ServerAliveInterval 15",
    ]
    head = topo.head
    blocks = [f"Host {head.name}", f"  HostName {head.mgmt_ip}", *common]
    for worker in topo.workers:
        blocks += ["", f"Host {worker.name}", f"  HostName {worker.fabric_ip}", f"  ProxyJump {head.name}", *common]
    return "\n".join(["# Written by tests/lab (make lab-up); do not edit.", *blocks, ""])


def hosts_yaml(topo: Topology, ssh_config_file: Path, wheelhouse: Path | None = None) -> str:
    """The lab inventory: groups spark_head/spark_workers and each host's sparkops_fabric_ip."""

    def host(node_name: str, fabric_ip: str) -> dict[str, str]:
        return {"ansible_host": node_name, "sparkops_fabric_ip": fabric_ip}

    inventory = {
        "all": {
            "vars": {
                "ansible_user": "root",
                "ansible_python_interpreter": "/usr/bin/python3",
                "ansible_ssh_common_args": f"-F {ssh_config_file}",
                "sparkops_lab": True,
                # One GPU per lab node (declared to Ray), all of them in one tensor-parallel group.
                "sparkops_tensor_parallel_size": len(topo.nodes),
                **({"ray_cluster_wheelhouse": str(wheelhouse)} if wheelhouse is not None else {}),
            },
            "children": {
                "spark_head": {"hosts": {topo.head.name: host(topo.head.name, topo.head.fabric_ip)}},
                "spark_workers": {"hosts": {w.name: host(w.name, w.fabric_ip) for w in topo.workers}},
            },
        }
    }
    header = "---\n# Written by tests/lab (make lab-up) for the running lab; do not edit. Cluster variables: group_vars/.\n"
    return header + yaml.safe_dump(inventory, sort_keys=False, default_flow_style=False)
