# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the _recon_report module util and, at the end, the recon_report module's main() writing the files."""

from __future__ import annotations

import copy
import json
import os
import stat
import typing as t
from pathlib import Path

import pytest
from ansible.module_utils.testing import patch_module_args
from ansible_collections.sparkops.inference.plugins.module_utils._recon_report import (
    SCHEMA_VERSION,
    ReconReportError,
    build_document,
    check_basename,
    keep_timestamp,
    plan,
    render_json,
    render_markdown,
    utc_now,
)
from ansible_collections.sparkops.inference.plugins.module_utils._version_drift import COMPONENTS
from ansible_collections.sparkops.inference.plugins.modules import recon_report

GIB = 1024**3


def recon(
    kernel: str = "6.11.0-1016-nvidia", nccl: str | None = "2.27.3", interface: str | None = "enp1s0f1np1", ip: str = "192.168.200.11"
) -> dict[str, t.Any]:
    """A node_recon result of a GB10 node."""
    return {
        "os": {"id": "ubuntu", "version_id": "24.04", "pretty_name": "Ubuntu 24.04.3 LTS"},
        "architecture": "aarch64",
        "kernel": kernel,
        "gpu": {"driver": "580.95.05", "cuda": "13.0", "names": ["NVIDIA GB10"], "count": 1},
        "fabric": {
            "ip": ip,
            "interface": interface,
            "state": "up" if interface else None,
            "speed_mbps": 200000 if interface else None,
            "mtu": 9000 if interface else None,
            "gid_index": 3 if interface else None,
            "rdma_devices": [{"name": "rocep1s0f1", "port": 1, "state": "ACTIVE", "interface": interface}] if interface else [],
        },
        "memory": {
            "total_bytes": 124610 * 2**20,
            "available_bytes": 115787 * 2**20,
            "top_processes": [{"pid": 118211, "name": "VLLM::EngineCore", "rss_bytes": 4394 * 2**20, "unit": "vllm-cluster.service"}],
            "gpu_processes": [{"pid": 118211, "name": "VLLM::EngineCore", "used_mib": 87212, "unit": "vllm-cluster.service", "container_name": None}],
        },
        "disk": {"path": "/root/.cache/huggingface/hub", "measured_path": "/root", "free_bytes": 812 * GIB, "total_bytes": 3700 * GIB},
        "inference": {
            "enabled_units": [{"unit": "vllm-cluster.service", "enabled": True, "active": True}],
            "containers": [{"name": "jupyter", "image": "nvcr.io/nvidia/pytorch:25.09-py3", "state": "running", "inference": False}],
        },
        "versions": {"kernel": kernel, "driver": "580.95.05", "cuda": "13.0", "nccl": nccl, "python": "3.12.3", "ray": "2.49.1", "vllm": "0.30.0"},
        "notes": [] if interface else [f"fabric: no interface holds {ip}; interfaces with IPv4: enP7s7 (10.0.0.6)"],
    }


NODES: dict[str, t.Any] = {
    "spark-worker1": {
        "role": "worker",
        "fabric_ip": "192.168.200.12",
        "recon": recon(kernel="6.11.0-1015-nvidia", nccl=None, interface=None, ip="192.168.200.12"),
    },
    "spark-head": {"role": "head", "fabric_ip": "192.168.200.11", "recon": recon()},
}
DRIFT = {"problems": ["host spark-worker1: kernel 6.11.0-1015-nvidia, the head spark-head has 6.11.0-1016-nvidia"], "allowed": [], "unknown": []}
FIT = {"fits": False, "problems": ["weights need 130 GiB per node, 110 GiB usable"], "warnings": [], "numbers": {"tp": 2, "weights_per_node_gib": 130.2}}


# ---------------------------------------------------------------------------------------------------------------
# The document


def test_document() -> None:
    document = build_document(NODES, DRIFT, FIT, generated_at="2026-01-31T12:00:00Z")
    assert list(document) == ["schema_version", "generated_at", "nodes", "drift", "fit"]
    assert (document["schema_version"], document["generated_at"]) == (SCHEMA_VERSION, "2026-01-31T12:00:00Z")
    assert list(document["nodes"]) == ["spark-head", "spark-worker1"]  # sorted
    assert document["nodes"]["spark-head"] == {"role": "head", "fabric_ip": "192.168.200.11", "recon": NODES["spark-head"]["recon"]}
    assert (document["drift"], document["fit"]) == (DRIFT, FIT)
    assert json.loads(render_json(document)) == document


def test_document_without_verdicts_and_recon() -> None:
    document = build_document({"n1": {"role": "head", "recon": None}}, generated_at="x")
    assert document["nodes"] == {"n1": {"role": "head", "fabric_ip": None, "recon": {}}}
    assert (document["drift"], document["fit"]) == (None, None)
    assert build_document({"n1": {"role": "head"}}, drift={"problems": ["p"]})["drift"] == {"problems": ["p"], "allowed": [], "unknown": []}


def test_utc_now() -> None:
    now = utc_now()
    assert now.endswith("Z") and len(now) == len("2026-01-31T12:00:00Z") and now[10] == "T"


@pytest.mark.parametrize(
    ("nodes", "drift", "fit", "message"),
    [
        ({}, None, None, "nodes is empty"),
        ({"n1": "head"}, None, None, "nodes.n1 must be a dictionary"),
        ({"n1": {"role": "leader", "recon": {}}}, None, None, "nodes.n1.role must be one of head, worker, not 'leader'"),
        ({"n1": {"role": "head", "recon": ["x"]}}, None, None, "nodes.n1.recon must be the recon dictionary"),
        ({"n1": {"role": "head"}}, {"problem": []}, None, "drift has unknown keys problem"),
        ({"n1": {"role": "head"}}, {"problems": "x"}, None, "drift.problems must be a list of strings"),
    ],
)
def test_bad_input(nodes: dict[str, t.Any], drift: dict[str, t.Any] | None, fit: dict[str, t.Any] | None, message: str) -> None:
    with pytest.raises(ReconReportError) as caught:
        build_document(nodes, drift, fit)
    assert str(caught.value).startswith(message)


def test_check_basename() -> None:
    check_basename("recon-2026.01")
    with pytest.raises(ReconReportError, match="basename '../x' must be a file base name"):
        check_basename("../x")


# ---------------------------------------------------------------------------------------------------------------
# Markdown


def test_markdown_has_every_host_and_marks_the_mismatch() -> None:
    text = render_markdown(build_document(NODES, DRIFT, FIT, generated_at="2026-01-31T12:00:00Z"))
    lines = text.splitlines()
    assert lines[0] == "# Reconnaissance"
    assert "2 node(s), head spark-head; generated 2026-01-31T12:00:00Z." in lines
    rows = [line for line in lines if line.startswith("| spark-")]
    assert rows[0] == (
        "| spark-head | head | aarch64 | Ubuntu 24.04.3 LTS | 6.11.0-1016-nvidia | 580.95.05 / 13.0 | 192.168.200.11 | enp1s0f1np1 | up "
        "| 200 Gb/s | 9000 | rocep1s0f1 (ACTIVE) | 121.7 | 113.1 | 812.0 at `/root/.cache/huggingface/hub` (measured `/root`) |"
    )
    assert rows[1].startswith(
        "| spark-worker1 | worker | aarch64 | Ubuntu 24.04.3 LTS | 6.11.0-1015-nvidia | 580.95.05 / 13.0 | 192.168.200.12 | none | n/a | n/a | n/a | none |"
    )
    versions = {line.split(" | ")[0][2:]: line for line in lines if line.startswith("| ") and line.split(" | ")[0][2:] in COMPONENTS}
    assert list(versions) == list(COMPONENTS)
    assert lines[lines.index("## Versions") + 4] == "| Component | spark-head | spark-worker1 | Same on all |"
    assert versions["kernel"] == "| kernel | 6.11.0-1016-nvidia | **6.11.0-1015-nvidia** (differs) | **no** |"
    assert versions["driver"] == "| driver | 580.95.05 | 580.95.05 | yes |"
    assert versions["nccl"] == "| nccl | 2.27.3 | n/a | unknown |"
    for host in NODES:
        assert f"### {host}" in lines
    assert "- unit `vllm-cluster.service` (enabled, active)" in lines
    assert "- container `jupyter` (nvcr.io/nvidia/pytorch:25.09-py3, running, not an inference stack by name)" in lines
    assert "- resident 4.3 GiB: pid 118211 `VLLM::EngineCore` in `vllm-cluster.service`" in lines
    assert "- GPU 85.2 GiB: pid 118211 `VLLM::EngineCore` in `vllm-cluster.service`" in lines
    assert "- Problem: host spark-worker1: kernel 6.11.0-1015-nvidia, the head spark-head has 6.11.0-1016-nvidia" in lines
    assert "Fits: **no**" in lines
    assert "| weights_per_node_gib | 130.2 |" in lines
    assert "- spark-worker1: fabric: no interface holds 192.168.200.12; interfaces with IPv4: enP7s7 (10.0.0.6)" in lines


def test_markdown_no_verdicts_no_notes() -> None:
    text = render_markdown(build_document({"solo": {"role": "head", "recon": recon()}}, generated_at="t"))
    assert "## Version drift\n\nNot checked.\n" in text
    assert "## Model fit\n\nNot checked.\n" in text
    assert text.endswith("## Notes\n\nNone.\n")
    assert "| kernel | 6.11.0-1016-nvidia | yes |" in text


def test_markdown_escapes_pipes_and_survives_an_empty_recon() -> None:
    text = render_markdown(build_document({"a|b": {"role": "worker", "recon": {}}}, generated_at="t"))
    assert "| a\\|b | worker | n/a | n/a | n/a | n/a / n/a | n/a | none | n/a | n/a | n/a | none | n/a | n/a | n/a |" in text
    assert "head none" in text


# ---------------------------------------------------------------------------------------------------------------
# Idempotence


def write(document: dict[str, t.Any], dest: Path) -> bool:
    """What the module does outside check mode: plan, then write what changed; whether anything was written."""
    files = plan(document, str(dest / "recon.json"), str(dest / "recon.md"))
    if files.json_changed:
        (dest / "recon.json").write_bytes(files.json_bytes)
    if files.markdown_changed:
        (dest / "recon.md").write_bytes(files.markdown_bytes)
    return files.changed


def test_second_write_is_no_change(tmp_path: Path) -> None:
    assert write(build_document(NODES, DRIFT, FIT, generated_at="2026-01-31T12:00:00Z"), tmp_path) is True
    first = (tmp_path / "recon.json").read_bytes(), (tmp_path / "recon.md").read_bytes()
    later = build_document(NODES, DRIFT, FIT, generated_at="2026-02-01T08:30:00Z")
    files = plan(later, str(tmp_path / "recon.json"), str(tmp_path / "recon.md"))
    assert (files.changed, files.document["generated_at"]) == (False, "2026-01-31T12:00:00Z")
    assert write(later, tmp_path) is False
    assert ((tmp_path / "recon.json").read_bytes(), (tmp_path / "recon.md").read_bytes()) == first


def test_a_real_change_takes_the_new_time(tmp_path: Path) -> None:
    write(build_document(NODES, DRIFT, FIT, generated_at="2026-01-31T12:00:00Z"), tmp_path)
    nodes = copy.deepcopy(NODES)
    nodes["spark-worker1"]["recon"]["versions"]["kernel"] = "6.11.0-1016-nvidia"
    assert write(build_document(nodes, DRIFT, FIT, generated_at="2026-02-01T08:30:00Z"), tmp_path) is True
    assert json.loads((tmp_path / "recon.json").read_text())["generated_at"] == "2026-02-01T08:30:00Z"
    assert "2026-02-01T08:30:00Z" in (tmp_path / "recon.md").read_text()


def test_keep_timestamp_ignores_unreadable_old_json() -> None:
    document = build_document(NODES, generated_at="new")
    assert keep_timestamp(document, b"{not json")["generated_at"] == "new"
    assert keep_timestamp(document, None)["generated_at"] == "new"
    old = render_json({**document, "generated_at": "old"})
    assert keep_timestamp(document, old)["generated_at"] == "old"


def test_markdown_deleted_is_rewritten_with_the_old_time(tmp_path: Path) -> None:
    write(build_document(NODES, generated_at="2026-01-31T12:00:00Z"), tmp_path)
    markdown = (tmp_path / "recon.md").read_bytes()
    (tmp_path / "recon.md").unlink()
    files = plan(build_document(NODES, generated_at="2026-02-01T00:00:00Z"), str(tmp_path / "recon.json"), str(tmp_path / "recon.md"))
    assert (files.json_changed, files.markdown_changed, files.markdown_bytes) == (False, True, markdown)


# ---------------------------------------------------------------------------------------------------------------
# The module


def run_module(args: dict[str, t.Any], capsys: pytest.CaptureFixture[str]) -> dict[str, t.Any]:
    with patch_module_args(args), pytest.raises(SystemExit):
        recon_report.main()
    return t.cast("dict[str, t.Any]", json.loads(capsys.readouterr().out))


def test_module_writes_then_reports_no_change(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dest = tmp_path / "reports" / "new"
    args = {"nodes": NODES, "dest_dir": str(dest), "drift": DRIFT, "fit": FIT}
    checked = run_module({**args, "_ansible_check_mode": True, "_ansible_diff": True}, capsys)
    assert (checked["changed"], checked["changed_files"]) == (True, [str(dest / "recon.json"), str(dest / "recon.md")])
    assert not dest.exists()
    assert checked["diff"]["before"] == "" and "| spark-head | head |" in checked["diff"]["after"]

    first = run_module(args, capsys)
    assert not first.get("failed"), first
    assert (first["changed"], first["json_path"], first["markdown_path"]) == (True, str(dest / "recon.json"), str(dest / "recon.md"))
    for name in ("recon.json", "recon.md"):
        assert stat.S_IMODE(os.stat(dest / name).st_mode) == 0o644
    document = json.loads((dest / "recon.json").read_text())
    assert (document["schema_version"], sorted(document["nodes"])) == (1, ["spark-head", "spark-worker1"])
    assert document["generated_at"] == first["generated_at"]

    second = run_module({**args, "_ansible_diff": True}, capsys)
    assert (second["changed"], second["changed_files"], second["generated_at"]) == (False, [], first["generated_at"])
    assert second["diff"]["before"] == second["diff"]["after"]
    assert second["msg"] == f"{dest / 'recon.json'} and {dest / 'recon.md'} are up to date"


def test_module_basename_and_bad_role(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result = run_module({"nodes": NODES, "dest_dir": str(tmp_path), "basename": "lab-recon"}, capsys)
    assert (result["json_path"], result["changed"]) == (str(tmp_path / "lab-recon.json"), True)
    assert (tmp_path / "lab-recon.md").is_file()
    bad = run_module({"nodes": {"n1": {"role": "boss", "recon": {}}}, "dest_dir": str(tmp_path)}, capsys)
    assert bad["failed"] is True
    assert bad["msg"] == "nodes.n1.role must be one of head, worker, not 'boss'"
    bad_name = run_module({"nodes": NODES, "dest_dir": str(tmp_path), "basename": ".hidden"}, capsys)
    assert bad_name["failed"] is True and bad_name["msg"].startswith("basename '.hidden' must be a file base name")
