# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for sparklab.inventory."""

from __future__ import annotations

import typing as t
from pathlib import Path

import pytest
import yaml
from sparklab.inventory import hosts_yaml, ssh_config
from sparklab.topology import Topology, build_topology

KEY = Path("/tmp/lab/id_ed25519")
KNOWN_HOSTS = Path("/tmp/lab/known_hosts")
SSH_CONFIG = Path("/tmp/lab/ssh_config")


def parse_ssh_config(text: str) -> dict[str, dict[str, str]]:
    """Host blocks of an ssh_config as {host: {Keyword: value}}."""
    blocks: dict[str, dict[str, str]] = {}
    current: dict[str, str] | None = None
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        keyword, _sep, value = stripped.partition(" ")
        if keyword == "Host":
            assert value not in blocks, f"duplicate Host block {value}"
            current = blocks[value] = {}
        else:
            assert current is not None, f"option outside a Host block: {line!r}"
            assert line.startswith("  "), f"option not indented: {line!r}"
            assert keyword not in current, f"duplicate {keyword} in a Host block"
            current[keyword] = value
    return blocks


def topology(count: int) -> Topology:
    return build_topology(count, "localhost/spark-node:test")


@pytest.mark.parametrize("count", [2, 3, 5])
def test_ssh_config_head_is_direct(count: int) -> None:
    topo = topology(count)
    blocks = parse_ssh_config(ssh_config(topo, KEY, KNOWN_HOSTS))
    assert list(blocks) == [n.name for n in topo.nodes]
    head = blocks["spark-head"]
    assert head["HostName"] == topo.head.mgmt_ip == "10.89.200.11"
    assert "ProxyJump" not in head


@pytest.mark.parametrize("count", [2, 3, 5])
def test_ssh_config_workers_jump_through_head(count: int) -> None:
    topo = topology(count)
    text = ssh_config(topo, KEY, KNOWN_HOSTS)
    blocks = parse_ssh_config(text)
    for worker in topo.workers:
        block = blocks[worker.name]
        assert block["ProxyJump"] == "spark-head"
        assert block["HostName"] == worker.fabric_ip
        assert not block["HostName"].startswith("10.89.200.")
    # The only management address anywhere in the file is the head's.
    assert text.count("10.89.200.") == 1


def test_ssh_config_common_options() -> None:
    blocks = parse_ssh_config(ssh_config(topology(3), KEY, KNOWN_HOSTS))
    for block in blocks.values():
        assert block["User"] == "root"
        assert block["IdentityFile"] == str(KEY)
        assert block["IdentitiesOnly"] == "yes"
        assert block["UserKnownHostsFile"] == str(KNOWN_HOSTS)
        assert block["StrictHostKeyChecking"] == "accept-new"


def test_ssh_config_ends_with_newline_and_header() -> None:
    text = ssh_config(topology(2), KEY, KNOWN_HOSTS)
    assert text.startswith("# ")
    assert text.endswith("\n")
    assert not text.endswith("\n\n")


@pytest.mark.parametrize("count", [2, 3, 16])
def test_hosts_yaml_groups_and_fabric_ips(count: int) -> None:
    topo = topology(count)
    text = hosts_yaml(topo, SSH_CONFIG)
    assert text.startswith("---\n")
    inventory: dict[str, t.Any] = yaml.safe_load(text)
    children = inventory["all"]["children"]
    assert set(children) == {"spark_head", "spark_workers"}
    head_hosts = children["spark_head"]["hosts"]
    worker_hosts = children["spark_workers"]["hosts"]
    assert list(head_hosts) == ["spark-head"]
    assert list(worker_hosts) == [f"spark-worker{i}" for i in range(1, count)]
    assert head_hosts["spark-head"] == {"ansible_host": "spark-head", "sparkops_fabric_ip": "192.168.200.11"}
    for i, name in enumerate(worker_hosts, start=1):
        assert worker_hosts[name]["sparkops_fabric_ip"] == f"192.168.200.{11 + i}"
        assert worker_hosts[name]["ansible_host"] == name


def test_hosts_yaml_all_vars() -> None:
    inventory: dict[str, t.Any] = yaml.safe_load(hosts_yaml(topology(2), SSH_CONFIG))
    all_vars = inventory["all"]["vars"]
    assert all_vars["ansible_user"] == "root"
    assert all_vars["ansible_ssh_common_args"] == f"-F {SSH_CONFIG}"
    assert all_vars["sparkops_lab"] is True
    assert all_vars["ansible_python_interpreter"] == "/usr/bin/python3"
