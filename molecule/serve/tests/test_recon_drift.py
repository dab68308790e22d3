"""Reconnaissance on the deployed lab (playbooks/recon.yml: what each node is, runs and holds, written on the
controller as JSON and Markdown) and the drift gate: a node whose Ray differs from the head's is refused by name
before anything changes."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(os.environ["RAY_LAB_PROJECT"]) / "tests" / "lab"))
from sparklab.scenario import node, playbook, recap  # noqa: E402

HEAD = os.environ["RAY_LAB_HEAD"]
WORKER = os.environ["RAY_LAB_WORKERS"].split(",")[0]
REPORTS = Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]) / "reports"
RAY_SITE = "/opt/sparkops/ray/lib/python3*/site-packages"


def installed(name: str, package: str) -> str:
    return str(node(name).check_output(f"/opt/sparkops/ray/bin/python -c \"import importlib.metadata as m; print(m.version('{package}'))\""))


def test_recon_reports_every_node_its_versions_units_and_the_fit() -> None:
    for name in ("recon.json", "recon.md"):
        (REPORTS / name).unlink(missing_ok=True)
    run = playbook("playbooks/recon.yml")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert all(counts["changed"] == 0 for counts in recap(run).values()), recap(run)  # reads only
    report = json.loads((REPORTS / "recon.json").read_text())
    assert report["schema_version"] == 1
    assert set(report["nodes"]) == {HEAD, WORKER}
    head, worker = report["nodes"][HEAD], report["nodes"][WORKER]
    assert (head["role"], worker["role"]) == ("head", "worker")
    assert (head["fabric_ip"], worker["fabric_ip"]) == (os.environ["RAY_LAB_HEAD_FABRIC_IP"], os.environ["SERVE_LAB_WORKER_FABRIC_IP"])
    for name, entry in ((HEAD, head), (WORKER, worker)):
        recon = entry["recon"]
        assert recon["versions"]["ray"] == installed(name, "ray"), name
        assert recon["versions"]["vllm"] == installed(name, "vllm") == "0.32.0+cpu", name
        assert recon["versions"]["driver"] and recon["versions"]["cuda"], recon["versions"]
        assert recon["fabric"]["interface"] == "enp1s0f1np1" and recon["fabric"]["state"] == "up", recon["fabric"]
        assert recon["memory"]["total_bytes"] > 0 and recon["disk"]["free_bytes"] > 0
        assert recon["disk"]["model_present_bytes"] > 30_000_000, recon["disk"]  # the 40 MB model is on every node
    head_units = {u["unit"] for u in head["recon"]["inference"]["enabled_units"]}
    assert {"sparkops-ray-head.service", "sparkops-vllm.service"} <= head_units, head_units
    assert "sparkops-ray-worker.service" in {u["unit"] for u in worker["recon"]["inference"]["enabled_units"]}
    assert report["drift"]["problems"] == [] and report["fit"]["fits"] is True, (report["drift"], report["fit"])
    assert report["fit"]["figures"]["weights_per_node_bytes"] > 0
    markdown = (REPORTS / "recon.md").read_text()
    assert HEAD in markdown and WORKER in markdown and "## Versions" in markdown


def test_a_node_with_another_ray_is_refused_by_name_before_anything_changes() -> None:
    """A partial upgrade: the worker's Ray reports another version. site.yml stops in the preflight, naming the
    host, the component and both values; the engine keeps running (nothing was touched)."""
    worker = node(WORKER)
    metadata = worker.check_output(f"ls -d {RAY_SITE}/ray-*.dist-info").strip() + "/METADATA"
    version = installed(WORKER, "ray")
    engine_pid = node(HEAD).check_output("systemctl show --property MainPID --value sparkops-vllm")
    worker.check_output(f"cp -p {metadata} {metadata}.orig && sed -i 's/^Version: .*/Version: 2.0.0/' {metadata}")
    try:
        run = playbook("site.yml", "--tags", "serve")
        out = run.stdout + run.stderr
        assert run.returncode != 0, out[-3000:]
        assert f"host {WORKER}: ray 2.0.0, the head {HEAD} has {version}" in out, out[-3000:]
        assert "PLAY [Serve]" not in out and "PLAY [Reclaim GPU memory]" not in out
        assert node(HEAD).check_output("systemctl show --property MainPID --value sparkops-vllm") == engine_pid
        report = json.loads((REPORTS / "recon.json").read_text())
        assert report["drift"]["problems"] == [f"host {WORKER}: ray 2.0.0, the head {HEAD} has {version}"]
        # A deliberate mix passes when the inventory says so (sparkops_drift_allowed), shown among what to know. A tag
        # no task has leaves the always-run preflight alone.
        allowed = playbook("site.yml", "--tags", "preflight-only", "-e", '{"sparkops_drift_allowed": ["ray"]}')
        assert allowed.returncode == 0, allowed.stdout[-3000:]
        assert f"host {WORKER}: ray 2.0.0, the head {HEAD} has {version}" in allowed.stdout
    finally:
        worker.check_output(f"mv {metadata}.orig {metadata}")


def test_status_report_names_every_node_unit_and_the_model_commit() -> None:
    run = playbook("playbooks/status.yml")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert all(counts["changed"] == 0 for counts in recap(run).values()), recap(run)
    status = json.loads((REPORTS / "status.json").read_text())
    assert status["schema_version"] == 1 and set(status["nodes"]) == {HEAD, WORKER}
    units = {name: {u["unit"]: u for u in entry["units"]} for name, entry in status["nodes"].items()}
    # The scenario runs the host firewall and the memory guard on every node and the liveness probe (service and timer)
    # on the head.
    liveness = {"sparkops-vllm-liveness.service", "sparkops-vllm-liveness.timer"}
    everywhere = {"sparkops-firewall.service", "sparkops-vllm-memory-guard.service"}
    assert set(units[HEAD]) == {"sparkops-ray-head.service", "sparkops-vllm.service", *everywhere, *liveness}, units[HEAD]
    assert set(units[WORKER]) == {"sparkops-ray-worker.service", *everywhere}, units[WORKER]
    assert units[WORKER]["sparkops-vllm-memory-guard.service"]["active_state"] == "active", units[WORKER]
    engine_pid = int(node(HEAD).check_output("systemctl show --property MainPID --value sparkops-vllm"))
    vllm = units[HEAD]["sparkops-vllm.service"]
    assert (vllm["active_state"], vllm["main_pid"], vllm["enabled"]) == ("active", engine_pid, "enabled"), vllm
    assert isinstance(vllm["restarts"], int) and vllm["since"], vllm
    assert status["ray"]["alive_nodes"] == 2 and status["ray"]["total_gpus"] == 2, status["ray"]
    commit = node(HEAD).check_output("cat /var/lib/sparkops/huggingface/hub/models--sparkops-lab--tiny-moe/refs/main")
    assert status["model"]["commit"] == commit and status["model"]["same_on_every_node"] is True, status["model"]
    endpoint = status["endpoint"]
    assert endpoint["ready"] is True and endpoint["completion_tokens"] > 0 and endpoint["latency_s"] > 0, endpoint
    # The lab model's weights are random: its tokens are mostly special ones, so the sample may hold no text; what
    # text there is comes from the answer or, with the reasoning parser, the reasoning.
    assert endpoint["sample_source"] in ("content", "reasoning") if endpoint["sample"] else endpoint["sample_source"] is None, endpoint
    # The GB10 workarounds: the lab's nvidia-smi says 12.1 (a GB10) and its model is not quantized, so none; recorded
    # where the engine's unit runs (the head, in Ray mode).
    workarounds = status["nodes"][HEAD]["kernel_workarounds"]
    assert workarounds["note"] == "none needed: the model is not quantized" and workarounds["applied"] == [], workarounds
    assert workarounds["model"] == "sparkops-lab/tiny-moe" and status["nodes"][WORKER]["kernel_workarounds"] is None
    markdown = (REPORTS / "status.md").read_text()
    assert f"- {HEAD}: none needed: the model is not quantized" in markdown
    assert all(name in markdown for name in (HEAD, WORKER, "sparkops-vllm.service", "sparkops-ray-worker.service", commit[:12]))
    assert os.environ.get("SERVE_LAB_API_KEY", "unset") not in markdown + json.dumps(status)
