# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The host_firewall role as Ansible renders it (its defaults and vars, the task of tasks/enable.yml that builds the
ruleset, its unit template), for a head and two workers: what each node admits, the port Ansible uses kept open, the
unit read back as systemd reads it (tests/unit/systemd_syntax.py), and bad values refused naming their variable before
anything is written. What the kernel does with the ruleset: tests/unit/plugins/plugin_utils/test__host_firewall.py; the
role on lab nodes (unit, reboot, reload, removal): molecule/serve/tests/test_firewall.py."""

from __future__ import annotations

import subprocess
import typing as t
from pathlib import Path

import pytest
import systemd_syntax
import yaml
from ansible_run import play, render_files, task_named, three_nodes

REPO = Path(__file__).resolve().parents[3]
ROLE = REPO / "roles" / "host_firewall"


def build_task() -> dict[str, t.Any]:
    return task_named(ROLE / "tasks" / "enable.yml", "enable | Build the firewall's ruleset")


def inventory(**hostvars: dict[str, t.Any]) -> dict[str, t.Any]:
    return three_nodes(ROLE, {"sparkops_serve_port": 8000}, **hostvars)


def render_play(out: Path, hosts: str) -> str:
    plays = [
        {
            "name": "Render the host firewall for each node",
            "hosts": hosts,
            "gather_facts": False,
            "vars_files": [str(ROLE / "vars" / "main.yml")],
            "tasks": [
                build_task(),
                {
                    "name": "Write the ruleset",
                    "ansible.builtin.copy": {"content": "{{ __host_firewall_ruleset }}", "dest": f"{out}/{{{{ inventory_hostname }}}}.nft", "mode": "0644"},
                },
                {
                    "name": "Render the unit",
                    "ansible.builtin.template": {
                        "src": str(ROLE / "templates" / "sparkops-firewall.service.j2"),
                        "dest": f"{out}/{{{{ inventory_hostname }}}}.service",
                        "mode": "0644",
                    },
                },
            ],
        }
    ]
    return yaml.safe_dump(plays, sort_keys=False)


def render(tmp_path: Path, hosts: str = "all", hostvars: dict[str, dict[str, t.Any]] | None = None, **extra: t.Any) -> dict[str, str]:
    return render_files(tmp_path, inventory(**(hostvars or {})), lambda out: render_play(out, hosts), extra)


@pytest.mark.parametrize("hosts", ["all", "spark-worker2"])
def test_each_node_admits_all_the_nodes_the_clients_on_the_api_and_ssh(tmp_path: Path, hosts: str) -> None:
    files = render(tmp_path, hosts, host_firewall_enabled=True, host_firewall_client_networks=["10.20.0.0/24"])
    rulesets = {name: text for name, text in files.items() if name.endswith(".nft")}
    assert sorted(rulesets) == (["spark-head.nft", "spark-worker1.nft", "spark-worker2.nft"] if hosts == "all" else ["spark-worker2.nft"])
    for text in rulesets.values():
        assert "elements = { 192.168.100.10, 192.168.100.11, 192.168.100.12 }" in text
        assert "tcp dport 8000 ip saddr @clients_v4 accept" in text and "elements = { 10.20.0.0/24 }" in text
        assert "tcp dport { 22 } accept" in text
        check = subprocess.run(["unshare", "--net", "nft", "--check", "--file", "-"], input=text, capture_output=True, text=True, check=False)
        assert check.returncode == 0, check.stderr


def test_prometheus_reaches_node_exporter_and_the_vllm_port_by_its_own_rule(tmp_path: Path) -> None:
    files = render(tmp_path, host_firewall_enabled=True, host_firewall_metrics_networks=["10.30.0.5"])
    assert "tcp dport { 8000, 9100 } ip saddr @metrics_v4 accept" in files["spark-head.nft"] and "elements = { 10.30.0.5/32 }" in files["spark-head.nft"]
    assert "clients_v4" not in files["spark-head.nft"]  # a scraper is not a client of the API


def test_the_port_ansible_reaches_a_node_on_stays_open(tmp_path: Path) -> None:
    files = render(tmp_path, hostvars={"spark_worker1": {"ansible_port": "2222"}}, host_firewall_ssh_ports=[22])
    assert "tcp dport { 22, 2222 } accept" in files["spark-worker1.nft"]
    assert "tcp dport { 22 } accept" in files["spark-head.nft"]


def test_the_unit_loads_the_ruleset_before_the_network_and_deletes_only_its_table(tmp_path: Path) -> None:
    text = render(tmp_path)["spark-head.service"]
    unit = systemd_syntax.read(text)  # the command lines, as systemd splits them
    directives = dict(line.split("=", 1) for line in text.splitlines() if "=" in line and not line.startswith("#"))
    assert unit.commands["ExecStart"] == [["/usr/sbin/nft", "--file", "/etc/sparkops/firewall.nft"]]
    assert unit.commands["ExecReload"] == [["/usr/sbin/nft", "--file", "/etc/sparkops/firewall.nft"]]
    assert unit.commands["ExecStop"] == [["/usr/sbin/nft", "delete", "table", "inet", "sparkops_firewall"]]
    assert text.count("\nExecStop=-") == 1  # a table already gone does not fail the stop
    assert directives["Type"] == "oneshot" and directives["RemainAfterExit"] == "yes"
    # Before the network, so before Ray and vLLM (After=network-online.target); no other sparkops unit named, which
    # systemd would load as "not-found" on a node without it (and the status report would list).
    assert directives["Before"].split() == ["network-pre.target", "shutdown.target"] and "sparkops-" not in directives["Before"]
    assert directives["WantedBy"] == "sysinit.target" and directives["ReloadPropagatedFrom"] == "nftables.service"


@pytest.mark.parametrize(
    ("extra", "hostvars", "message"),
    [
        ({"host_firewall_client_networks": ["10.20.0.1/24"]}, {}, "host_firewall_client_networks[0] must be an IP network"),
        ({"host_firewall_client_networks": ["10.20.0.0/24; flush ruleset"]}, {}, "host_firewall_client_networks[0] must be one address"),
        ({"host_firewall_open_ports": ["8000/tcp"]}, {}, "host_firewall_open_ports opens the vLLM port 8000 to anyone"),
        ({"host_firewall_open_ports": ["11000/icmp"]}, {}, "host_firewall_open_ports[0] must be PORT/tcp"),
        ({"host_firewall_serve_port": 22}, {}, "host_firewall_serve_port 22 is also an ssh port"),
        ({"host_firewall_metrics_networks": ["10.30.0.0/8"]}, {}, "host_firewall_metrics_networks[0] must be an IP network"),
        ({}, {"spark_worker2": {"sparkops_fabric_ip": "spark-worker2.lan"}}, "sparkops_fabric_ip of host spark-worker2 must be an IP address"),
    ],
)
def test_a_bad_value_is_refused_naming_it_before_anything_is_written(tmp_path: Path, extra: dict[str, t.Any], hostvars: dict[str, t.Any], message: str) -> None:
    out = tmp_path / "out"
    out.mkdir()
    proc = play(tmp_path, inventory(**hostvars), render_play(out, "all"), {"host_firewall_enabled": True, **extra})
    said = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode != 0 and message in said, said[-3000:]
    assert "Traceback" not in said
    assert list(out.iterdir()) == []  # the build is the role's first task: nothing written
