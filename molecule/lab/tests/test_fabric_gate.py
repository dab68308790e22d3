"""The nccl_env role's fabric link gate on the lab's two nodes (`--tags nccl`): the real veths pass with the speed
check skipped and saying why (a veth's driver always reports 10000 Mb/s); a node whose sysfs (a fixture tree copied
into it, nccl_env_sysfs_root) reports a degraded link or another MTU fails the gate, named, and no node's
environment file changes."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import typing as t
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(os.environ["MOLECULE_PROJECT_DIRECTORY"]) / "tests" / "lab"))
from sparklab.scenario import node, playbook  # noqa: E402

PROJECT = os.environ["MOLECULE_PROJECT_DIRECTORY"]
HEAD = os.environ["SPARK_LAB_HEAD"]
WORKER = os.environ["SPARK_LAB_WORKER"]
# The lab scenario's inventory has no groups: the role's defaults name spark_head (the head's fabric address), so an
# inventory of the groups is added; the cluster variable the role needs is given.
GROUPS = f"""
spark_head:
  hosts:
    {HEAD}:
spark_workers:
  hosts:
    {WORKER}:
"""
LAB_VARS = ("-e", "sparkops_fabric_subnet=192.168.200.0/24")
PLAY = """
- name: Fabric
  hosts: all
  gather_facts: false
  become: true
  any_errors_fatal: true
  roles:
    - role: sparkops.inference.nccl_env
      tags: [nccl]
"""


def copy_sysfs(container: str, case: str, **attributes: str) -> str:
    """Materialise fixture ``case`` with ``attributes`` (speed, mtu) of enp1s0f1np1 and its twin into node ``container``."""
    sys.path.insert(0, f"{PROJECT}/tests/unit")
    from sysfs_tree import materialise

    with tempfile.TemporaryDirectory() as tmp:
        tree = materialise(case, Path(tmp))
        for name, value in attributes.items():
            for netdev in ("enp1s0f1np1", "enP2p1s0f1np1"):
                (tree / "class" / "net" / netdev / name).write_text(value + "\n", encoding="utf-8")
        subprocess.run(["podman", "exec", container, "rm", "-rf", "/tmp/sysfs-gate"], check=True)
        subprocess.run(["podman", "cp", str(tree), f"{container}:/tmp/sysfs-gate"], check=True)
    return "/tmp/sysfs-gate"


def run_nccl(tmp_path: Path, *args: str) -> tuple[int, str]:
    play = tmp_path / "fabric.yml"
    play.write_text(PLAY, encoding="utf-8")
    groups = tmp_path / "groups.yml"
    groups.write_text(GROUPS, encoding="utf-8")
    run = playbook(str(play), "-i", str(groups), "--tags", "nccl", *LAB_VARS, *args)
    return run.returncode, " ".join((run.stdout + run.stderr).split())


def env_sums() -> dict[str, t.Any]:
    sums = {}
    for name in (HEAD, WORKER):
        env = node(name).file("/etc/sparkops/fabric.env")
        sums[name] = env.sha256sum if env.exists else None
    return sums


def test_lab_veths_pass_with_the_speed_check_skipped(tmp_path: Path) -> None:
    rc, output = run_nccl(tmp_path)
    assert rc == 0, output[-3000:]
    assert "fabric link gate: passed on 2 node(s); MTU 1500" in output, output[-3000:]
    for name in (HEAD, WORKER):
        assert f"{name}: fabric link enp1s0f1np1 is a virtual netdev (no PCI device, e.g. a veth) reporting 10000 Mb/s: speed not checked" in output


@pytest.mark.parametrize(
    ("worker_attributes", "failure"),
    [
        ({"speed": "13000"}, "{worker}: fabric link enp1s0f1np1 runs at 13000 Mb/s, expected 200000 (at least 90 %)"),
        ({"mtu": "1500"}, "{worker}: fabric link enp1s0f1np1 has MTU 1500, the other nodes 9000 ({head}): the fabric MTU must be the same on every node"),
    ],
)
def test_degraded_link_or_other_mtu_fails_naming_the_node(tmp_path: Path, worker_attributes: dict[str, str], failure: str) -> None:
    run_nccl(tmp_path)  # the lab's own environment files, as the reference
    before = env_sums()
    copy_sysfs(HEAD, "both_halves")
    sysfs = copy_sysfs(WORKER, "both_halves", **worker_attributes)
    rc, output = run_nccl(tmp_path, "-e", f"nccl_env_sysfs_root={sysfs}")
    assert rc != 0, output[-3000:]
    assert failure.format(worker=WORKER, head=HEAD) in output, output[-3000:]
    assert env_sums() == before  # no node's environment was written
