# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the _status_report module util and, at the end, the status_report module's main() writing the files.

The liveness probe's files are written by its own writer (_serve_liveness.save_state) and read back as the status
playbook's slurp hands them over (base64)."""

from __future__ import annotations

import base64
import copy
import json
import re
import stat
import time
import typing as t
from pathlib import Path

import pytest
from ansible.module_utils.testing import patch_module_args
from ansible_collections.sparkops.inference.plugins.module_utils._serve_liveness import State, save_state
from ansible_collections.sparkops.inference.plugins.module_utils._status_report import (
    SAMPLE_CHARS,
    SCHEMA_VERSION,
    StatusReportError,
    build_document,
    check_basename,
    duration,
    headline,
    plan,
    render_markdown,
)
from ansible_collections.sparkops.inference.plugins.modules import status_report
from ansible_collections.sparkops.inference.plugins.plugin_utils._kernel_workarounds import apply, choose

NOON = 1769860800
HEAD_COMMIT = "0123456789abcdef0123456789abcdef01234567"
OTHER_COMMIT = "fedcba9876543210fedcba9876543210fedcba98"
GENERATED = "2026-01-31T14:00:00Z"
MISSING_SHARD = "model-00002-of-00002.safetensors is missing"


def versions(vllm: str = "0.30.0") -> dict[str, t.Any]:
    return {"kernel": "6.11.0-1016-nvidia", "driver": "580.95.05", "cuda": "13.0", "nccl": "2.27.3", "python": "3.12.3", "ray": "2.60.0", "vllm": vllm}


def unit(name: str, active: str = "active", sub: str = "running", since: int | None = NOON, restarts: int = 0, result: str = "success") -> dict[str, t.Any]:
    return {
        "unit": name,
        "load_state": "loaded",
        "active_state": active,
        "sub_state": sub,
        "enabled": "enabled",
        "since": None if since is None else f"2026-01-31T{12 + (since - NOON) // 3600:02d}:00:00Z",
        "since_epoch": since,
        "restarts": restarts,
        "main_pid": 4242 if active == "active" else None,
        "result": result,
    }


def event(epoch: float, unit_name: str, message: str, priority: str = "warning") -> dict[str, t.Any]:
    return {"time": "x", "time_epoch": epoch, "unit": unit_name, "priority": priority, "message": message}


def nodes() -> dict[str, t.Any]:
    return {
        "spark-worker1": {
            "role": "worker",
            "fabric_ip": "192.168.200.12",
            "management_address": "10.0.0.12",
            "versions": versions("0.29.0"),
            "units": {
                "units": [unit("sparkops-vllm.service", "failed", "failed", NOON + 3600, 5, "exit-code"), unit("sparkops-ray-worker.service")],
                "health_events": [event(NOON + 3590, "sparkops-vllm.service", "sparkops-vllm.service: Failed with result 'exit-code'.")],
                "notes": [],
            },
            "model": {"commit": OTHER_COMMIT, "complete": False, "checked_at": GENERATED, "mode": "quick", "problems": [MISSING_SHARD]},
        },
        "spark-head": {
            "role": "head",
            "fabric_ip": "192.168.200.11",
            "management_address": "10.0.0.11",
            "versions": versions(),
            "units": {
                "units": [unit("sparkops-vllm.service"), unit("sparkops-ray-head.service")],
                "health_events": [
                    event(NOON + 10, "sparkops-ray-head.service", "raylet | low memory"),
                    event(NOON + 3600.5, "sparkops-vllm.service", "RuntimeError: boom", "err"),
                ],
                "notes": ["journalctl failed (rc 1): nope"],
            },
            "model": {"commit": HEAD_COMMIT, "complete": True, "checked_at": GENERATED, "mode": "quick", "problems": []},
        },
    }


RAY: dict[str, t.Any] = {
    "address": "192.168.200.11:6379",
    "ready": True,
    "ray_version": "2.60.0",
    "alive_nodes": 2,
    "total_gpus": 2.0,
    "nodes": [
        {"node_id": "b", "ip": "192.168.200.12", "hostname": "spark-worker1", "alive": True, "state": "ALIVE", "is_head": False, "gpus": 1.0},
        {"node_id": "a", "ip": "192.168.200.11", "hostname": "spark-head", "alive": True, "state": "ALIVE", "is_head": True, "gpus": 1.0, "resources": {}},
    ],
    "missing": [],
    "error": None,
}
ENDPOINT: dict[str, t.Any] = {
    "url": "http://127.0.0.1:8000",
    "model": "tiny-moe",
    "ready": True,
    "state": "ready",
    "latency_s": 0.8421,
    "sample": "The user wants a greeting.\nSo I say hello.",
    "sample_source": "reasoning",
    "finish_reason": "length",
    "completion_tokens": 16,
    "error": None,
}
MODEL: dict[str, t.Any] = {"repo": "sparkops-lab/tiny-moe", "revision": "main"}


def document(**overrides: t.Any) -> dict[str, t.Any]:
    args: dict[str, t.Any] = {"nodes": nodes(), "ray": RAY, "endpoint": ENDPOINT, "model": MODEL, "generated_at": GENERATED}
    args.update(overrides)
    return build_document(**args)


def test_document_shape() -> None:
    doc = document()
    assert list(doc) == ["schema_version", "generated_at", "backend", "nodes", "ray", "endpoint", "liveness", "model", "health_events"]
    assert doc["liveness"] is None  # not given: not asked
    assert doc["schema_version"] == SCHEMA_VERSION == 1
    assert list(doc["nodes"]) == ["spark-head", "spark-worker1"]
    head = doc["nodes"]["spark-head"]
    assert (head["role"], head["fabric_ip"], head["management_address"]) == ("head", "192.168.200.11", "10.0.0.11")
    assert [u["unit"] for u in head["units"]] == ["sparkops-ray-head.service", "sparkops-vllm.service"]
    assert head["versions"]["vllm"] == "0.30.0"
    assert head["model"] == {"commit": HEAD_COMMIT, "complete": True, "checked_at": GENERATED, "mode": "quick", "problems": []}
    assert head["notes"] == ["journalctl failed (rc 1): nope"]
    assert doc["model"] == {
        "repo": "sparkops-lab/tiny-moe",
        "revision": "main",
        "commit": HEAD_COMMIT,
        "same_on_every_node": False,
        "complete_on_every_node": False,
    }
    # Ray's nodes: the head first, only the reported keys.
    assert [n["hostname"] for n in doc["ray"]["nodes"]] == ["spark-head", "spark-worker1"]
    assert set(doc["ray"]["nodes"][0]) == {"ip", "hostname", "alive", "state", "is_head", "gpus"}
    assert doc["endpoint"]["latency_s"] == 0.842


def test_health_events_merged_newest_first_with_host() -> None:
    events = document()["health_events"]
    assert [(e["host"], e["time_epoch"], e["priority"]) for e in events] == [
        ("spark-head", NOON + 3600.5, "err"),
        ("spark-worker1", NOON + 3590, "warning"),
        ("spark-head", NOON + 10, "warning"),
    ]
    assert set(events[0]) == {"host", "time", "time_epoch", "unit", "priority", "message"}


def test_same_commit_everywhere() -> None:
    same = nodes()
    same["spark-worker1"]["model"].update(commit=HEAD_COMMIT, complete=True, problems=[])
    doc = document(nodes=same)
    assert (doc["model"]["same_on_every_node"], doc["model"]["complete_on_every_node"]) == (True, True)
    # A node not checked is not the same.
    same["spark-worker1"]["model"] = None
    doc = document(nodes=same)
    assert (doc["model"]["same_on_every_node"], doc["model"]["complete_on_every_node"]) == (False, False)


def test_a_node_with_nothing_read() -> None:
    broken = nodes()
    broken["spark-worker2"] = None
    broken["spark-worker3"] = {"role": "worker", "errors": ["unreachable: ssh: connect to host 10.0.0.14 port 22: No route to host"]}
    doc = document(nodes=broken)
    assert doc["nodes"]["spark-worker2"] == {
        "role": None,
        "fabric_ip": None,
        "management_address": None,
        "versions": None,
        "units": None,
        "model": None,
        "kernel_workarounds": None,
        "notes": [],
    }
    assert doc["nodes"]["spark-worker3"]["notes"] == ["unreachable: ssh: connect to host 10.0.0.14 port 22: No route to host"]
    markdown = render_markdown(doc)
    assert "| spark-worker2 | unknown | n/a | n/a | not read | not checked |" in markdown
    assert "### spark-worker3\n\nNot read.\n" in markdown
    assert "- spark-worker3: unreachable: ssh: connect to host 10.0.0.14 port 22: No route to host" in markdown


def test_sample_is_cut() -> None:
    doc = document(endpoint={**ENDPOINT, "sample": "y" * 500})
    assert doc["endpoint"]["sample"] == "y" * SAMPLE_CHARS


def test_ray_and_endpoint_may_be_null() -> None:
    doc = document(ray=None, endpoint=None, model=None)
    assert (doc["ray"], doc["endpoint"]) == (None, None)
    assert doc["model"]["repo"] is None
    markdown = render_markdown(doc)
    assert "## Ray cluster\n\nNot asked.\n" in markdown
    assert "## Endpoint\n\nNot asked.\n" in markdown
    assert "## Liveness probe\n\nNot asked.\n" in markdown
    assert "- Liveness: not asked" in markdown


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"nodes": {}}, "nodes is empty"),
        ({"nodes": {"a": {"role": "boss"}}}, "nodes.a.role must be one of head, worker"),
        ({"nodes": {"a": "head"}}, "nodes.a must be a dictionary or null"),
        ({"nodes": {"a": {"units": {"units": [{"active_state": "active"}]}}}}, "nodes.a.units.units[0] must be a unit"),
        ({"nodes": {"a": {"units": ["x"]}}}, "nodes.a.units must be a dictionary or null"),
        ({"nodes": {"a": {"model": {"problems": "all"}}}}, "nodes.a.model.problems must be a list"),
        ({"endpoint": {"url": "x", "api_key": "secret"}}, "endpoint has unknown keys api_key"),
        ({"endpoint": {"sample_source": "tools"}}, "endpoint.sample_source must be one of content, reasoning"),
        ({"model": {"repo": "x", "commit": "y"}}, "model has unknown keys commit"),
        ({"ray": {"nodes": ["x"]}}, "ray.nodes[0] must be a node"),
        ({"liveness": "on"}, "liveness must be a dictionary or null"),
        ({"liveness": {"state": None, "api_key": "x"}}, "liveness has unknown keys api_key: it holds settings, state"),
        ({"liveness": {"state": {"failures": 0}}}, "liveness.state must be the file's content in base64"),
        ({"liveness": {"settings": ["x"]}}, "liveness.settings must be the file's content in base64"),
        ({"liveness": {"state_error": 3}}, "liveness.state_error must be a string"),
    ],
)
def test_bad_options(overrides: dict[str, t.Any], message: str) -> None:
    with pytest.raises(StatusReportError, match=r"^" + message.replace("[", r"\[").replace("]", r"\]")):
        document(**overrides)


def test_check_basename() -> None:
    check_basename("status-2026.01")
    with pytest.raises(StatusReportError):
        check_basename("../status")


def test_duration() -> None:
    assert [duration(s) for s in (5, 65, 3725, 90000, -3)] == ["5s", "1m 5s", "1h 2m", "1d 1h", "0s"]


def test_markdown() -> None:
    markdown = render_markdown(document())
    assert markdown.startswith("# Cluster status\n\n2 node(s), head spark-head; generated 2026-01-31T14:00:00Z.\n")
    assert "- Endpoint: **ready** (0.84 s)" in markdown
    assert "- Units: 3 of 4 active" in markdown
    assert "- Model: `0123456789ab`, **not the same on every node**, **not complete on every node**" in markdown
    assert "- Ray: 2 node(s) alive, 2 GPU(s)" in markdown
    # Nodes: head first.
    assert markdown.index("| spark-head | head | 10.0.0.11 | 192.168.200.11 | 2 of 2 active | `0123456789ab`, complete |") < markdown.index(
        "| spark-worker1 | worker | 10.0.0.12 | 192.168.200.12 | 1 of 2 active | `fedcba987654`, **incomplete** |"
    )
    assert "| vllm | 0.30.0 | **0.29.0** (differs) | **no** |" in markdown
    # Units: state, since (and for how long at generated_at), restarts.
    assert "| `sparkops-vllm.service` | active (running) | enabled | 2026-01-31T12:00:00Z (2h 0m) | 0 | 4242 | success |" in markdown
    assert "| `sparkops-vllm.service` | **failed (failed)** | enabled | 2026-01-31T13:00:00Z (1h 0m) | 5 | n/a | exit-code |" in markdown
    assert "Ready: 2 node(s) alive, 2 GPU(s), Ray 2.60.0 at 192.168.200.11:6379." in markdown
    assert "| 192.168.200.11 | spark-head | yes | ALIVE | 1 |" in markdown
    assert f"`sparkops-lab/tiny-moe` at revision `main`: commit `{HEAD_COMMIT}` on the head." in markdown
    assert f"| spark-head | `0123456789ab` | yes | verified now (quick check, {GENERATED}) | none |" in markdown
    assert f"| spark-worker1 | `fedcba987654` | **no** | verified now (quick check, {GENERATED}) | {MISSING_SHARD} |" in markdown
    assert "**Ready**: `http://127.0.0.1:8000` serves `tiny-moe`; the sample completion answered in 0.84 s." in markdown
    assert "> The user wants a greeting.\n> So I say hello." in markdown
    assert "The text is the model's reasoning: its content was empty" in markdown
    assert "Sample (finish_reason length, 16 completion token(s)):" in markdown
    assert "| x | spark-head | sparkops-ray-head.service | warning | raylet \\| low memory |" in markdown
    assert "- spark-head: journalctl failed (rc 1): nope" in markdown


def workaround_record(skip: t.Sequence[str] = ()) -> str:
    """The vllm_serve role's record as its task writes it (the apply filter's result and the model), base64 as slurp reads it."""
    config = {"quantization_config": {"quant_method": "fp8", "weight_block_size": [128, 128]}}
    choice = choose("Qwen/Qwen3.5-122B-A10B-FP8", config, {"spark-head": ["12.1"]}, "0.32.0").as_dict()
    record = {**apply(choice, True, list(skip), {}).as_dict(), "model": "Qwen/Qwen3.5-122B-A10B-FP8"}
    return b64(json.dumps(record, sort_keys=True, indent=4).encode())


def test_the_gb10_workarounds_applied_on_each_node_and_why() -> None:
    with_record = nodes()
    with_record["spark-head"]["kernel_workarounds"] = workaround_record(skip=["deep_gemm_fp8"])
    doc = document(nodes=with_record)
    head = doc["nodes"]["spark-head"]["kernel_workarounds"]
    assert head["note"] == "1 applied, 1 skipped" and head["model"] == "Qwen/Qwen3.5-122B-A10B-FP8"
    assert [(row["name"], row["env"]) for row in head["applied"]] == [("cutlass_fp8_block_scaled", {"VLLM_DISABLED_KERNELS": "CutlassFp8BlockScaledMMKernel"})]
    assert doc["nodes"]["spark-worker1"]["kernel_workarounds"] is None  # no record there
    markdown = render_markdown(doc)
    section = markdown.split("## Engine workarounds (GB10)\n\n", 1)[1].split("\n\n## ", 1)[0]
    lines = section.splitlines()
    assert lines[0] == "- spark-head: 1 applied, 1 skipped"
    assert lines[1].startswith("  - applied cutlass_fp8_block_scaled: `VLLM_DISABLED_KERNELS=CutlassFp8BlockScaledMMKernel`: vLLM's CUTLASS")
    assert "https://github.com/vllm-project/vllm/issues/43367" in lines[1]
    assert lines[2].startswith("  - skipped (named in vllm_serve_kernel_workarounds_skip) deep_gemm_fp8: `VLLM_USE_DEEP_GEMM=0`")
    assert len(lines) == 3


def test_no_workaround_record_anywhere_says_so() -> None:
    markdown = render_markdown(document())
    assert "## Engine workarounds (GB10)\n\nNo record (vLLM not deployed" in markdown


@pytest.mark.parametrize(
    ("content", "why"),
    [(b"{not json", "could not be read: not JSON"), (b"[1]", "is not a JSON object but an array"), (None, "could not be read: not base64")],
)
def test_an_unreadable_workaround_record_is_a_note(content: bytes | None, why: str) -> None:
    broken = nodes()
    broken["spark-worker1"]["kernel_workarounds"] = "%%%" if content is None else b64(content)
    doc = document(nodes=broken)
    assert doc["nodes"]["spark-worker1"]["kernel_workarounds"] is None
    assert [note for note in doc["nodes"]["spark-worker1"]["notes"] if "GB10 workarounds record" in note] == [
        next(note for note in doc["nodes"]["spark-worker1"]["notes"] if why in note)
    ]


def test_markdown_not_ready() -> None:
    endpoint = {
        "url": "http://127.0.0.1:8000",
        "model": "tiny-moe",
        "ready": False,
        "state": "refused",
        "latency_s": 0.01,
        "sample": None,
        "error": "http://127.0.0.1:8000 not ready after 0 s (1 attempt): health: connection refused",
    }
    ray = {"address": "192.168.200.11:6379", "error": "not asked: sparkops-ray-head.service is not active on spark-head"}
    markdown = render_markdown(document(endpoint=endpoint, ray=ray))
    assert "- Endpoint: **not ready** (refused)" in markdown
    assert "**Not ready** (`refused`): `http://127.0.0.1:8000`, model `tiny-moe` in 0.01 s." in markdown
    assert "Why: http://127.0.0.1:8000 not ready after 0 s (1 attempt): health: connection refused" in markdown
    assert "- Ray: not asked: sparkops-ray-head.service is not active on spark-head" in markdown
    assert "## Ray cluster\n\n**Error**: not asked: sparkops-ray-head.service is not active on spark-head\n" in markdown


def test_the_mp_backend_has_no_ray_cluster_and_the_report_says_so_not_an_error() -> None:
    """The backend is a field of the document (the cluster plan's): with mp, no Ray part whatever was given."""
    doc = document(backend="mp")
    assert (doc["backend"], doc["ray"]) == ("mp", None)
    markdown = render_markdown(doc)
    assert "- Ray: not asked: the backend is mp (vllm_serve_backend), which runs no Ray cluster" in markdown
    assert "## Ray cluster\n\nNot asked: the backend is mp (vllm_serve_backend), which runs no Ray cluster.\n" in markdown
    assert "**Error**" not in markdown.split("## Ray cluster")[1].split("##")[0]
    with_ray = document(backend="ray")
    assert with_ray["backend"] == "ray" and with_ray["ray"] is not None
    assert document()["backend"] is None  # not given: not said
    with pytest.raises(StatusReportError, match="backend must be one of mp, ray, got 'docker'"):
        document(backend="docker")


def test_markdown_ray_error_and_no_units_found() -> None:
    quiet = nodes()
    quiet["spark-worker1"]["units"] = {"units": [], "health_events": [], "notes": ["systemctl list-units failed (rc 1): bus down"]}
    quiet["spark-head"]["model"] = None
    ray = {"address": "192.168.200.11:6379", "error": "cannot reach the Ray cluster at 192.168.200.11:6379: " + "z" * 200}
    markdown = render_markdown(document(nodes=quiet, ray=ray))
    assert "- Ray: **no answer**: cannot reach the Ray cluster at 192.168.200.11:6379: " + "z" * 67 + "…\n" in markdown
    assert "- Model: **no commit found on the head**, **not complete on every node**" in markdown
    assert "| spark-worker1 | worker | 10.0.0.12 | 192.168.200.12 | none found (see the notes) | `fedcba987654`, **incomplete** |" in markdown
    assert "### spark-worker1\n\nNo unit found; some could not be read (see the notes).\n" in markdown
    assert "| spark-head | n/a | n/a | not checked | n/a |" in markdown


def test_document_is_deterministic() -> None:
    shuffled = nodes()
    shuffled["spark-head"]["units"]["units"].reverse()
    shuffled["spark-head"]["units"]["health_events"].reverse()
    ray = copy.deepcopy(RAY)
    ray["nodes"].reverse()
    assert document(nodes=shuffled, ray=ray) == document()
    assert render_markdown(document(nodes=shuffled, ray=ray)) == render_markdown(document())


def test_plan_keeps_generated_at_and_notices_changes(tmp_path: Path) -> None:
    json_path, md_path = str(tmp_path / "status.json"), str(tmp_path / "status.md")
    first = plan(document(), json_path, md_path)
    assert (first.json_changed, first.markdown_changed) == (True, True)
    Path(json_path).write_bytes(first.json_bytes)
    Path(md_path).write_bytes(first.markdown_bytes)
    again = plan(document(generated_at="2026-02-01T00:00:00Z"), json_path, md_path)
    assert not again.changed
    assert again.document["generated_at"] == GENERATED
    # A new latency (each run's probe) is a change, with the new time.
    later = plan(document(generated_at="2026-02-01T00:00:00Z", endpoint={**ENDPOINT, "latency_s": 0.9}), json_path, md_path)
    assert (later.json_changed, later.markdown_changed) == (True, True)
    assert later.document["generated_at"] == "2026-02-01T00:00:00Z"


# ---------------------------------------------------------------------------------------------------------------
# The liveness probe

NOW = NOON + 7200  # GENERATED
LIVENESS_SETTINGS: dict[str, t.Any] = {
    "url": "http://192.168.200.11:8000",
    "model": "tiny-moe",
    "unit": "sparkops-vllm.service",
    "restart_units": ["sparkops-vllm.service"],
    "api_key_file": "/etc/sparkops/private/vllm-api-key",
    "state_file": "/var/lib/sparkops/vllm-liveness.json",
    "interval_s": 30.0,
    "failures": 3,
    "max_restarts_per_hour": 3,
    "timeout_s": 60.0,
    "startup_grace_s": 1800.0,
    "wedge_after_s": 120.0,
}
PROBE_OK = "health: 200; models: tiny-moe listed; completion: 4 token(s)"
PROBE_TIMEOUT = "health: 200; models: tiny-moe listed; completion: timed out after 60 s"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def slurped(tmp_path: Path, state: State | None = None, with_settings: bool = True) -> dict[str, t.Any]:
    """The liveness option as the status playbook gives it: the files the probe writes, as slurp reads them (null: absent)."""
    found: dict[str, t.Any] = {"settings": None, "state": None}
    if with_settings:
        found["settings"] = b64(json.dumps(LIVENESS_SETTINGS, indent=4, sort_keys=True).encode())
    if state is not None:
        path = tmp_path / "var" / "vllm-liveness.json"
        save_state(str(path), state)
        found["state"] = b64(path.read_bytes())
    return found


def with_probe_units(timer: str = "active", timer_sub: str = "waiting", result: str = "success") -> dict[str, t.Any]:
    """nodes() with the probe's timer and service among the head's units, as unit_status reads them."""
    found = nodes()
    found["spark-head"]["units"]["units"] += [
        {**unit("sparkops-vllm-liveness.timer", timer, timer_sub), "main_pid": None, "result": "success"},
        {**unit("sparkops-vllm-liveness.service", "inactive", "dead", NOW - 12, 0, result), "enabled": "static"},
    ]
    return found


def liveness_markdown(doc: dict[str, t.Any]) -> str:
    markdown = render_markdown(doc)
    return markdown[markdown.index("## Liveness probe\n") : markdown.index("## Last health events")]


def test_liveness_healthy_last_probe(tmp_path: Path) -> None:
    state = State(
        restarts=[NOW - 7000.0, NOW - 2400.0],  # the first more than an hour before generated_at
        ready_invocation="1f2e",
        generation_tokens=1234.0,
        last_probe={"at": NOW - 12.5, "ok": True, "state": "ready", "message": PROBE_OK},
    )
    doc = document(nodes=with_probe_units(), liveness=slurped(tmp_path, state))
    assert doc["liveness"] == {
        "installed": True,
        "timer": {"unit": "sparkops-vllm-liveness.timer", "active_state": "active", "sub_state": "waiting", "enabled": "enabled", "result": "success"},
        "timer_active": True,
        "service": {"unit": "sparkops-vllm-liveness.service", "active_state": "inactive", "sub_state": "dead", "enabled": "static", "result": "success"},
        "settings": {"interval_s": 30.0, "failures": 3, "max_restarts_per_hour": 3, "wedge_after_s": 120.0},
        "settings_error": None,
        "state": {
            "failures": 0,
            "restarts": [{"at": NOW - 2400.0, "time": "2026-01-31T13:20:00Z"}],
            "gave_up": False,
            "last_probe": {"at": NOW - 12.5, "time": "2026-01-31T13:59:47Z", "ok": True, "state": "ready", "message": PROBE_OK},
            "progress_at": None,
        },
        "state_error": None,
    }
    assert liveness_markdown(doc) == (
        "## Liveness probe\n\n"
        "- Timer: `sparkops-vllm-liveness.timer` active (waiting), enabled; a probe every 30 s.\n"
        f"- Last probe: 2026-01-31T13:59:47Z (12s ago), ok (`ready`): {PROBE_OK}.\n"
        "- Failed probes in a row: 0 of 3 (then it restarts vLLM).\n"
        "- Restarts in the last hour: 1 of at most 3: 2026-01-31T13:20:00Z (40m 0s ago).\n\n"
    )
    assert "- Liveness: last probe ok 12s ago, 1 restart(s) in the last hour" in headline(doc)
    assert "Stopped acting" not in render_markdown(doc)
    # The probe's service between two runs of its timer is not down.
    assert "- Units: 4 of 5 active, 1 run by its timer" in headline(doc)
    assert "| spark-head | head | 10.0.0.11 | 192.168.200.11 | 3 of 3 active, 1 run by its timer |" in render_markdown(doc)
    assert "| `sparkops-vllm-liveness.service` | inactive (dead) | static |" in render_markdown(doc)


def test_liveness_failing_probe_and_stopped_timer(tmp_path: Path) -> None:
    state = State(failures=2, last_probe={"at": NOW - 40, "ok": False, "state": "timeout", "message": PROBE_TIMEOUT})
    doc = document(nodes=with_probe_units(timer="inactive", timer_sub="dead", result="exit-code"), liveness=slurped(tmp_path, state))
    markdown = liveness_markdown(doc)
    assert doc["liveness"]["timer_active"] is False
    assert "- Timer: `sparkops-vllm-liveness.timer` **inactive (dead)**: no probe runs, enabled; a probe every 30 s.\n" in markdown
    assert "- Its last run **failed** (`exit-code`): see `journalctl -u sparkops-vllm-liveness.service`.\n" in markdown
    assert f"- Last probe: 2026-01-31T13:59:20Z (40s ago), **failed** (`timeout`): {PROBE_TIMEOUT}.\n" in markdown
    assert "- Failed probes in a row: 2 of 3 (then it restarts vLLM).\n" in markdown
    assert "- Restarts in the last hour: 0 of at most 3.\n" in markdown
    assert "- Liveness: **timer not active**, **last probe failed** 40s ago (timeout), 2 of 3 in a row" in headline(doc)
    assert "- Units: 3 of 6 active" in headline(doc)
    assert "| `sparkops-vllm-liveness.service` | **inactive (dead)** | static |" in render_markdown(doc)


def test_liveness_gave_up_is_loud(tmp_path: Path) -> None:
    state = State(
        restarts=[NOW - 3000.0, NOW - 1800.0, NOW - 600.0],
        gave_up_invocation="9a8b",
        failures=3,
        last_probe={"at": NOW - 5, "ok": False, "state": "timeout", "message": PROBE_TIMEOUT},
    )
    doc = document(nodes=with_probe_units(), liveness=slurped(tmp_path, state))
    assert doc["liveness"]["state"]["gave_up"] is True
    markdown = liveness_markdown(doc)
    # First in the section, and in the summary at the top.
    assert markdown.startswith("## Liveness probe\n\n**Stopped acting after 3 restarts in an hour: restart vLLM or rerun --tags serve.**\n\n- Timer:")
    assert "- Liveness: **stopped acting after 3 restarts in an hour: restart vLLM or rerun --tags serve**" in headline(doc)
    assert (
        "- Restarts in the last hour: 3 of at most 3: 2026-01-31T13:10:00Z (50m 0s ago), 2026-01-31T13:30:00Z (30m 0s ago), "
        "2026-01-31T13:50:00Z (10m 0s ago).\n"
    ) in markdown
    # Its settings unreadable: the restarts it counted say how many.
    doc = document(nodes=with_probe_units(), liveness={**slurped(tmp_path, state), "settings": b64(b"{")})
    assert "**Stopped acting after 3 restarts in an hour: restart vLLM or rerun --tags serve.**" in liveness_markdown(doc)
    assert "- Settings: **unreadable** (not JSON (Expecting property name enclosed in double quotes: line 1 column 2 (char 1))).\n" in liveness_markdown(doc)


def test_liveness_not_installed(tmp_path: Path) -> None:
    doc = document(liveness=slurped(tmp_path, None, with_settings=False))
    assert doc["liveness"] == {
        "installed": False,
        "timer": None,
        "timer_active": False,
        "service": None,
        "settings": None,
        "settings_error": None,
        "state": None,
        "state_error": None,
    }
    assert liveness_markdown(doc).startswith("## Liveness probe\n\n**Not installed** on the head (no settings file, no timer): nothing restarts vLLM")
    assert "- Liveness: **not installed**" in headline(doc)
    # Installed but not run yet: a settings file, no state.
    doc = document(nodes=with_probe_units(), liveness=slurped(tmp_path, None))
    assert doc["liveness"]["installed"] is True
    assert "- State: none yet (the probe has not run).\n" in liveness_markdown(doc)
    assert "- Liveness: no probe yet" in headline(doc)
    # The head's units not read: the timer is unknown, not inactive.
    unread = nodes()
    unread["spark-head"]["units"] = None
    doc = document(nodes=unread, liveness=slurped(tmp_path, State()))
    assert doc["liveness"]["timer_active"] is None
    assert "- Timer: `sparkops-vllm-liveness.timer` unknown (the head's units were not read); a probe every 30 s.\n" in liveness_markdown(doc)


@pytest.mark.parametrize(
    ("state", "why"),
    [
        (b64(b""), "empty"),
        (b64(b"\x00\xff\xfe garbage"), "not UTF-8 text"),
        (b64(b'{"failures": 2, "restarts": ['), "not JSON (Expecting value: line 1 column 30 (char 29))"),
        (b64(b"[" * 100000), "not JSON (nested too deep)"),
        (b64(b'["failures", 2]'), "not a JSON object but an array"),
        ("{not base64}", "not base64 (the file's content as ansible.builtin.slurp returns it)"),
    ],
)
def test_liveness_garbled_state_file_is_unreadable(tmp_path: Path, state: str, why: str) -> None:
    doc = document(nodes=with_probe_units(), liveness={**slurped(tmp_path), "state": state})
    assert (doc["liveness"]["installed"], doc["liveness"]["state"], doc["liveness"]["state_error"]) == (True, None, why)
    markdown = liveness_markdown(doc)
    assert f"- State: **unreadable** ({why}).\n" in markdown
    assert "Last probe" not in markdown
    assert "- Liveness: **state unreadable**" in headline(doc)


@pytest.mark.parametrize(
    ("probe_state", "ok", "headline_part"),
    [("stalled", True, "last probe ok 12s ago, **generation stalled**"), ("wedged", False, "**last probe failed** 12s ago (wedged)")],
)
def test_liveness_shows_generation_frozen_from_the_engines_counters(tmp_path: Path, probe_state: str, ok: bool, headline_part: str) -> None:
    """The probe's own reading of vLLM's /metrics (issue 35): requests running, the token counters frozen since
    progress_at; stalled below vllm_serve_liveness_wedge_after_s, wedged (and acted on) at it."""
    message = "1 request(s) running, vLLM's generated and prompt tokens not moved for 95 s"
    state = State(progress_tokens=4096.0, progress_at=NOW - 95.0, last_probe={"at": NOW - 12.5, "ok": ok, "state": probe_state, "message": message})
    doc = document(nodes=with_probe_units(), liveness=slurped(tmp_path, state))
    assert doc["liveness"]["state"]["progress_at"] == NOW - 95.0
    markdown = liveness_markdown(doc)
    line = f"- Generation: **{probe_state}**: vLLM's token counters have not moved since 2026-01-31T13:58:25Z (1m 35s ago) with requests running"
    assert line + "; a wedge after 120 s (`vllm_serve_liveness_wedge_after_s`), then the group restarts.\n" in markdown, markdown
    assert headline_part in "\n".join(headline(doc)), headline(doc)
    # Generating (the counters moved at the last probe, which then kept that time): no such line.
    moving = State(progress_tokens=4200.0, progress_at=NOW - 12.5, last_probe={"at": NOW - 12.5, "ok": True, "state": "generating", "message": "tokens moved"})
    doc = document(nodes=with_probe_units(), liveness=slurped(tmp_path, moving))
    assert "- Generation:" not in liveness_markdown(doc) and "stalled" not in "\n".join(headline(doc))


def test_liveness_keys_of_the_wrong_type_are_unknown(tmp_path: Path) -> None:
    garbled = {"failures": "many", "restarts": [NOW - 60, "soon"], "gave_up_invocation": 7, "last_probe": "yesterday"}
    doc = document(nodes=with_probe_units(), liveness={**slurped(tmp_path), "state": b64(json.dumps(garbled).encode())})
    assert doc["liveness"]["state"] == {
        "failures": None,
        "restarts": None,
        "gave_up": None,
        "last_probe": {"at": None, "time": None, "ok": None, "state": None, "message": None},
        "progress_at": None,
    }
    markdown = liveness_markdown(doc)
    assert "- Last probe: unknown (its record is garbled).\n" in markdown
    assert "- Failed probes in a row: unknown of 3 (then it restarts vLLM).\n" in markdown
    assert "- Restarts in the last hour: unknown of at most 3.\n" in markdown
    # Numbers no time can hold, NaN, and settings of the wrong type.
    huge = b'{"restarts": [1e308], "last_probe": {"at": 1e300, "ok": "yes", "state": 3, "message": ["x"]}, "failures": NaN}'
    settings = b64(json.dumps({"interval_s": "30", "failures": 0, "max_restarts_per_hour": 2.5}).encode())
    doc = document(nodes=with_probe_units(), liveness={"settings": settings, "state": b64(huge)})
    assert doc["liveness"]["settings"] == {"interval_s": None, "failures": None, "max_restarts_per_hour": None, "wedge_after_s": None}
    assert doc["liveness"]["state"]["restarts"] is None and doc["liveness"]["state"]["failures"] is None
    assert doc["liveness"]["state"]["last_probe"] == {"at": None, "time": None, "ok": None, "state": None, "message": None}
    assert "- Timer: `sparkops-vllm-liveness.timer` active (waiting), enabled.\n" in liveness_markdown(doc)


def test_liveness_file_the_playbook_could_not_read(tmp_path: Path) -> None:
    why = "Source is a directory and must be a file: /var/lib/sparkops/vllm-liveness.json"
    doc = document(nodes=with_probe_units(), liveness={**slurped(tmp_path), "state_error": why})
    assert (doc["liveness"]["state"], doc["liveness"]["state_error"]) == (None, why)
    assert f"- State: **unreadable** ({why}).\n" in liveness_markdown(doc)


# ---------------------------------------------------------------------------------------------------------------
# The module


def run_module(args: dict[str, t.Any], capsys: pytest.CaptureFixture[str]) -> dict[str, t.Any]:
    with patch_module_args(args), pytest.raises(SystemExit):
        status_report.main()
    return t.cast("dict[str, t.Any]", json.loads(capsys.readouterr().out))


def module_args(dest: Path, **extra: t.Any) -> dict[str, t.Any]:
    return {"nodes": nodes(), "ray": RAY, "endpoint": ENDPOINT, "model": MODEL, "dest_dir": str(dest), **extra}


def test_module_writes_then_reports_no_change(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dest = tmp_path / "reports" / "new"
    result = run_module(module_args(dest), capsys)
    assert result["changed"] is True
    assert result["changed_files"] == [str(dest / "status.json"), str(dest / "status.md")]
    written = json.loads((dest / "status.json").read_text())
    assert written["nodes"]["spark-head"]["units"][1]["unit"] == "sparkops-vllm.service"
    assert written["generated_at"] == result["generated_at"]
    assert (dest / "status.md").read_text().startswith("# Cluster status\n")
    assert stat.S_IMODE((dest / "status.json").stat().st_mode) == 0o644
    assert result["summary"] == [
        "Endpoint: ready (0.84 s)",
        "Liveness: not asked",
        "Units: 3 of 4 active",
        "Model: 0123456789ab, not the same on every node, not complete on every node",
        "Ray: 2 node(s) alive, 2 GPU(s)",
    ]
    again = run_module(module_args(dest), capsys)
    assert (again["changed"], again["changed_files"], again["generated_at"]) == (False, [], result["generated_at"])


def test_module_check_mode_and_diff(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result = run_module(module_args(tmp_path, basename="st", _ansible_check_mode=True, _ansible_diff=True), capsys)
    assert result["changed"] is True
    assert result["msg"].startswith("would write ")
    assert list(tmp_path.iterdir()) == []
    assert result["diff"]["before"] == ""
    assert result["diff"]["after"].startswith("# Cluster status")


def test_module_fails_on_bad_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result = run_module(module_args(tmp_path, basename=".hidden"), capsys)
    assert result["failed"] is True
    assert "basename '.hidden'" in result["msg"]
    result = run_module(module_args(tmp_path, endpoint={"token": "x"}), capsys)
    assert result["failed"] is True
    assert "endpoint has unknown keys token" in result["msg"]
    assert list(tmp_path.iterdir()) == []


def test_module_reports_the_liveness_probe(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    now = time.time()
    healthy = State(last_probe={"at": now - 20, "ok": True, "state": "ready", "message": PROBE_OK})
    args = module_args(tmp_path / "ok", nodes=with_probe_units(), liveness=slurped(tmp_path, healthy))
    result = run_module(args, capsys)
    # generated_at is to the second: 19 s to a few more.
    assert re.fullmatch(r"Liveness: last probe ok (19|2\d)s ago", result["summary"][1]), result["summary"]
    written = json.loads((tmp_path / "ok" / "status.json").read_text())
    assert written["liveness"]["state"]["last_probe"]["ok"] is True
    assert "## Liveness probe\n\n- Timer: `sparkops-vllm-liveness.timer` active (waiting)" in (tmp_path / "ok" / "status.md").read_text()
    gave_up = State(restarts=[now - 900, now - 600, now - 300], gave_up_invocation="9a8b", last_probe={"at": now - 5, "ok": False, "state": "timeout"})
    result = run_module(module_args(tmp_path / "gave-up", nodes=with_probe_units(), liveness=slurped(tmp_path, gave_up)), capsys)
    assert result["summary"][1] == "Liveness: stopped acting after 3 restarts in an hour: restart vLLM or rerun --tags serve"
    result = run_module(module_args(tmp_path / "none", liveness={"settings": None, "state": None}), capsys)
    assert result["summary"][1] == "Liveness: not installed"


def test_module_shows_a_garbled_liveness_state_and_refuses_a_bad_option(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    garbled = {**slurped(tmp_path), "state": b64(b"\x00\x00\x00\x00")}
    result = run_module(module_args(tmp_path / "garbled", nodes=with_probe_units(), liveness=garbled), capsys)
    assert "failed" not in result and result["summary"][1] == "Liveness: state unreadable", result
    assert json.loads((tmp_path / "garbled" / "status.json").read_text())["liveness"]["state_error"].startswith("not JSON (")
    result = run_module(module_args(tmp_path / "bad", liveness={"state": 3}), capsys)
    assert result["failed"] is True
    assert result["msg"] == "liveness.state must be the file's content in base64 (as ansible.builtin.slurp returns it) or null, not a number"
    assert not (tmp_path / "bad").exists()
