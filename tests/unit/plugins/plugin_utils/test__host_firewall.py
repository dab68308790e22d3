# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The host firewall's ruleset: every value checked, naming its variable; what nft reads; and what a kernel does with
it, in two network namespaces (a node and the hosts around it), each connection written as the attack."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator

import pytest
from ansible_collections.sparkops.inference.plugins.plugin_utils._host_firewall import HostFirewallError, build

NODES = {"spark-head": "10.77.0.1", "spark-worker1": "10.77.0.2"}
NFT = shutil.which("nft") or "/usr/sbin/nft"


def ruleset(**kwargs: object) -> str:
    settings: dict[str, object] = {"serve_port": 8000, "client_networks_value": ["10.77.1.0/24"], "open_ports_value": ["11000/tcp"]}
    settings.update(kwargs)
    return build(NODES, **settings).render(["test"])  # type: ignore[arg-type]


def test_the_ruleset_admits_what_it_names_and_rejects_the_rest() -> None:
    text = ruleset()
    assert text.splitlines()[:4] == ["# test", "table inet sparkops_firewall", "delete table inet sparkops_firewall", "table inet sparkops_firewall {"]
    assert "elements = { 10.77.0.1, 10.77.0.2 }" in text
    assert "tcp dport 8000 ip saddr @clients_v4 accept" in text
    assert "tcp dport { 22 } accept" in text and "tcp dport { 11000 } accept" in text
    # The last rule turns away anything else from another host; nothing after it.
    rules = [line.strip() for line in text.splitlines() if line.startswith("\t\t") and not line.startswith("\t\ttype ")]
    assert rules[-1].startswith("counter reject with icmpx admin-prohibited")
    assert text.endswith("}\n")  # the role writes the text as is: a file of whole lines


def test_metrics_networks_reach_the_metrics_ports_and_the_vllm_port_in_a_rule_of_their_own() -> None:
    text = ruleset(metrics_networks_value=["10.77.3.0/24", "fd00::/64"], metrics_ports_value=[9100, 8000])
    assert "set metrics_v4 {" in text and "elements = { 10.77.3.0/24 }" in text and "elements = { fd00::/64 }" in text
    assert "tcp dport { 8000, 9100 } ip saddr @metrics_v4 accept" in text and "tcp dport { 8000, 9100 } ip6 saddr @metrics_v6 accept" in text
    assert "metrics_v4" not in ruleset(metrics_ports_value=[9100])  # no networks: no rule, whatever the ports


def test_without_client_networks_the_api_answers_the_nodes_only() -> None:
    text = ruleset(client_networks_value=[])
    assert "clients_v4" not in text and "dport 8000" not in text


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"client_networks_value": ["10.77.1.1/24"]}, "client_networks[0] must be an IP network"),
        ({"client_networks_value": ["any"]}, "client_networks[0] must be an IP network"),
        ({"client_networks_value": ["10.0.0.0/8; flush ruleset"]}, "client_networks[0] must be one address, network or port"),
        ({"client_networks_value": ["10.0.0.0/8 }\n}"]}, "client_networks[0] must be one address, network or port"),
        ({"client_networks_value": "10.0.0.0/8"}, "client_networks must be a list"),
        ({"client_networks_value": ["224.0.0.0/4"]}, "client_networks[0] must not be a multicast network"),
        ({"serve_port": 0}, "serve_port must be a port number"),
        ({"serve_port": "8000 accept"}, "serve_port must be a port number"),
        ({"serve_port": True}, "serve_port must be a port number"),
        ({"serve_port": 22}, "serve_port 22 is also an ssh port"),
        ({"ssh_ports_value": []}, "ssh_ports must name at least one port"),
        ({"ssh_ports_value": [70000]}, "ssh_ports[0] must be a port number"),
        ({"open_ports_value": ["8000/tcp"]}, "open_ports opens the vLLM port 8000 to anyone"),
        ({"open_ports_value": ["7000-9000/tcp"]}, "open_ports opens the vLLM port 8000 to anyone"),
        ({"open_ports_value": ["11000/sctp"]}, "open_ports[0] must be PORT/tcp"),
        ({"open_ports_value": ["9010-9000/tcp"]}, "open_ports[0] is a range that ends before it starts"),
        ({"open_ports_value": ["11000/tcp accept"]}, "open_ports[0] must be one address, network or port"),
        ({"table": "x; flush ruleset"}, "table must be a name"),
        ({"metrics_networks_value": ["10.77.3.1/24"]}, "metrics_networks[0] must be an IP network"),
        ({"metrics_ports_value": [22]}, "metrics_ports names an ssh port (ssh_ports)"),
        ({"metrics_ports_value": ["9100/tcp"]}, "metrics_ports[0] must be a port number"),
    ],
)
def test_a_value_the_firewall_cannot_use_is_refused_naming_it(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(HostFirewallError, match=None) as caught:
        ruleset(**kwargs)
    assert message in str(caught.value)


@pytest.mark.parametrize(
    ("nodes", "message"),
    [
        ({"spark-head": "10.77.0.1", "spark-worker1": "spark-worker1.lan"}, "nodes of host spark-worker1 must be an IP address"),
        ({"spark-head": "10.77.0.1", "spark-worker1": "0.0.0.0"}, "nodes of host spark-worker1 must be a node's own address"),
        ({"spark-head": "127.0.0.1"}, "nodes of host spark-head must be a node's own address"),
        ({"spark-head": "10.77.0.0/16"}, "nodes of host spark-head must be an IP address"),
        ({}, "nodes must map each node"),
    ],
)
def test_a_node_address_that_is_not_one_hosts_is_refused_naming_the_host(nodes: dict[str, str], message: str) -> None:
    with pytest.raises(HostFirewallError) as caught:
        build(nodes, serve_port=8000)
    assert message in str(caught.value)


def test_nft_reads_the_ruleset_on_a_minimal_system() -> None:
    # Without /etc/protocols and /etc/services (no netbase, as the lab's minbase image): nft must resolve no name.
    script = f"mount --bind /dev/null /etc/protocols && mount --bind /dev/null /etc/services && exec {NFT} --check --file -"
    for text in (
        ruleset(),
        ruleset(client_networks_value=[]),
        ruleset(client_networks_value=["0.0.0.0/0", "::/0"], open_ports_value=["5353/udp", 9000]),
        ruleset(metrics_networks_value=["10.77.3.0/24", "fd00::/64"], metrics_ports_value=[9100]),
    ):
        check = subprocess.run(["unshare", "--net", "--mount", "sh", "-c", script], input=text, capture_output=True, text=True, check=False)
        assert check.returncode == 0, check.stderr + text


# -- What a kernel does with it ---------------------------------------------------------------------------------------
# Two network namespaces on one link: "node" (the Spark: 10.77.0.1, the firewall loaded, listeners on Ray's, vLLM's,
# ssh's and an open port) and "around" (every other host: another node 10.77.0.2, a client 10.77.1.5, a stranger on
# the fabric 10.77.2.9), each connection from one of those source addresses.
CONNECT = r"""
import errno, socket, sys
source, port = sys.argv[1], int(sys.argv[2])
s = socket.socket()
s.settimeout(3)
s.bind((source, 0))
try:
    s.connect(("10.77.0.1", port))
    print("open")
except OSError as exc:
    print(errno.errorcode.get(exc.errno, str(exc)) if exc.errno else "timeout")
"""
LISTEN = r"""
import socket, sys, time
socks = []
for port in map(int, sys.argv[1:]):
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("0.0.0.0", port)); s.listen(16); socks.append(s)
print("listening", flush=True)
time.sleep(120)
"""
PORTS = {"ray": 6379, "ray_worker": 10005, "rendezvous": 29501, "api": 8000, "ssh": 22, "open": 11000}


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


@pytest.fixture
def namespaces() -> Iterator[tuple[str, str]]:
    if os.geteuid() != 0 or shutil.which("ip") is None:
        pytest.skip("needs root and iproute2 (network namespaces); make test runs as root")
    tag = uuid.uuid4().hex[:6]
    node, around = f"fw-node-{tag}", f"fw-around-{tag}"
    _ip("netns", "add", node)
    _ip("netns", "add", around)
    try:
        _ip("link", "add", f"fwn{tag}", "netns", node, "type", "veth", "peer", "name", f"fwa{tag}", "netns", around)
        _ip("-n", node, "addr", "add", "10.77.0.1/16", "dev", f"fwn{tag}")
        for address in ("10.77.0.2", "10.77.1.5", "10.77.2.9"):
            _ip("-n", around, "addr", "add", f"{address}/16", "dev", f"fwa{tag}")
        for ns, dev in ((node, f"fwn{tag}"), (around, f"fwa{tag}")):
            _ip("-n", ns, "link", "set", dev, "up")
            _ip("-n", ns, "link", "set", "lo", "up")
        yield node, around
    finally:
        subprocess.run(["ip", "netns", "del", node], check=False)
        subprocess.run(["ip", "netns", "del", around], check=False)


def _connections(node: str, around: str, text: str | None) -> dict[tuple[str, str], str]:
    if text is not None:
        subprocess.run(["ip", "netns", "exec", node, NFT, "--file", "-"], input=text, text=True, check=True, capture_output=True)
    listener = subprocess.Popen(["ip", "netns", "exec", node, sys.executable, "-c", LISTEN, *map(str, PORTS.values())], stdout=subprocess.PIPE, text=True)
    try:
        assert listener.stdout is not None and listener.stdout.readline().strip() == "listening"
        seen = {}
        for source in ("10.77.0.2", "10.77.1.5", "10.77.2.9"):
            for name, port in PORTS.items():
                argv = ["ip", "netns", "exec", around, sys.executable, "-c", CONNECT, source, str(port)]
                run = subprocess.run(argv, capture_output=True, text=True, check=True)
                seen[(source, name)] = run.stdout.strip()
        return seen
    finally:
        listener.kill()
        listener.wait()


def test_a_stranger_reaches_ssh_and_the_open_port_only_a_client_also_the_api_a_node_everything(namespaces: tuple[str, str]) -> None:
    node, around = namespaces
    before = _connections(node, around, None)
    assert set(before.values()) == {"open"}, before  # without the firewall, every port answers everyone
    after = _connections(node, around, ruleset())
    node_peer, client, stranger = "10.77.0.2", "10.77.1.5", "10.77.2.9"
    assert {name: after[(node_peer, name)] for name in PORTS} == dict.fromkeys(PORTS, "open")
    assert {name: after[(client, name)] for name in PORTS} == {
        "ray": "EHOSTUNREACH", "ray_worker": "EHOSTUNREACH", "rendezvous": "EHOSTUNREACH", "api": "open", "ssh": "open", "open": "open",
    }  # fmt: skip
    assert {name: after[(stranger, name)] for name in PORTS} == {
        "ray": "EHOSTUNREACH", "ray_worker": "EHOSTUNREACH", "rendezvous": "EHOSTUNREACH", "api": "EHOSTUNREACH", "ssh": "open", "open": "open",
    }  # fmt: skip


def test_a_metrics_network_reaches_the_metrics_port_and_the_api_and_nothing_else(namespaces: tuple[str, str]) -> None:
    node, around = namespaces
    # The stranger's address as Prometheus, the Ray worker's port standing in for node exporter's.
    after = _connections(node, around, ruleset(metrics_networks_value=["10.77.2.9"], metrics_ports_value=[PORTS["ray_worker"]]))
    assert {name: after[("10.77.2.9", name)] for name in PORTS} == {
        "ray": "EHOSTUNREACH", "ray_worker": "open", "rendezvous": "EHOSTUNREACH", "api": "open", "ssh": "open", "open": "open",
    }  # fmt: skip
    assert after[("10.77.1.5", "ray_worker")] == "EHOSTUNREACH"  # a client of the API is not a scraper


def test_reloading_replaces_the_table_and_keeps_other_tables(namespaces: tuple[str, str]) -> None:
    node, around = namespaces
    other = "table inet theirs {\n\tchain input {\n\t\ttype filter hook input priority 10; policy accept;\n\t\ttcp dport 11000 counter\n\t}\n}\n"
    subprocess.run(["ip", "netns", "exec", node, NFT, "--file", "-"], input=other, text=True, check=True)
    _connections(node, around, ruleset())
    # Loaded again with the clients removed: the client is turned away from the API, the other table is still there.
    after = _connections(node, around, ruleset(client_networks_value=[]))
    assert after[("10.77.1.5", "api")] == "EHOSTUNREACH"
    tables = subprocess.run(["ip", "netns", "exec", node, NFT, "list", "tables"], capture_output=True, text=True, check=True).stdout.split("\n")
    assert sorted(line for line in tables if line) == ["table inet sparkops_firewall", "table inet theirs"]
    listing = subprocess.run(["ip", "netns", "exec", node, NFT, "list", "table", "inet", "sparkops_firewall"], capture_output=True, text=True, check=True)
    assert listing.stdout.count("chain input") == 1 and "clients_v4" not in listing.stdout
