"""An upgrade of Ray on the lab test_deploy_via_awx.py deployed (through AWX's Deploy job template) whose cluster does
not form is rolled back to the serving install on every node (and the run fails saying so). (vLLM's own upgrades and
their rollback, the same install code in either backend, are the engine scenario's, on the real engine.) Then
playbooks/teardown.yml: check mode lists what would go and changes
nothing; the run removes every unit, environment file, venv, key and listening port the collection installed (the
workers' model copies with teardown_models, the head's kept), leaves a service it did not install alone, and a second
run changes nothing. Teardown runs last: nothing in this scenario runs after it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(os.environ["RAY_LAB_PROJECT"]) / "tests" / "lab"))
from sparklab import broken_ray_wheel  # noqa: E402
from sparklab.scenario import Api, node, playbook, recap  # noqa: E402

HEAD = os.environ["RAY_LAB_HEAD"]
WORKER = os.environ["RAY_LAB_WORKERS"].split(",")[0]
MODEL_DIR = "/var/lib/sparkops/huggingface/hub/models--sparkops-lab--tiny-moe"
FOREIGN = "sparkops-dashboard"  # a unit named like ours that the collection did not install
INSTALLED = {
    HEAD: [
        "/etc/systemd/system/sparkops-ray-head.service",
        "/etc/systemd/system/sparkops-vllm.service",
        "/etc/sparkops/vllm-kernel-workarounds.json",
        "/opt/sparkops/ray/bin/python",
    ],
    WORKER: ["/etc/systemd/system/sparkops-ray-worker.service", "/opt/sparkops/ray/bin/python"],
}


def teardown(*args: str) -> subprocess.CompletedProcess[str]:
    return playbook("playbooks/teardown.yml", *args)


def site(*args: str) -> subprocess.CompletedProcess[str]:
    return playbook("site.yml", *args)


def ray_version(name: str) -> str:
    return str(node(name).check_output("/opt/sparkops/ray/bin/python -c \"import importlib.metadata as m; print(m.version('ray'))\""))


def test_a_ray_upgrade_whose_cluster_does_not_form_is_rolled_back(tmp_path: Path) -> None:
    """Ray 2.60.1 as a release that installs but does not start (tests/lab/sparklab/broken_ray_wheel.py) in the nodes'
    wheelhouse: ray_cluster keeps a copy of the venv, restarts Ray on the new one, the cluster does not form, the copy
    goes back on every node and forms the cluster again, and the run fails saying so; vLLM serves again."""
    before = ray_version(HEAD)
    wheel = broken_ray_wheel.build(tmp_path, "2.60.1")
    for name in (HEAD, WORKER):
        subprocess.run(["podman", "cp", str(wheel), f"{name}:/opt/sparkops/wheelhouse/{wheel.name}"], check=True)
    try:
        # The role's install tag alone: it installs, restarts Ray, waits, and puts the previous install back.
        failed = site("--tags", "ray_cluster_install", "-e", "ray_cluster_version=2.60.1", "-e", "ray_cluster_form_timeout_s=20")
        out = " ".join((failed.stdout + failed.stderr).split())
        assert failed.returncode != 0, out[-3000:]
        said = f"Ray 2.60.1 did not form a cluster, so the previous install (Ray {before}) was put back on {HEAD}, {WORKER}"
        assert f"{said} and the cluster formed again (2 nodes alive)" in out, out[-3000:]
        for name in (HEAD, WORKER):
            assert ray_version(name) == before, name
            assert not node(name).file("/opt/sparkops/ray.previous").exists, name
        assert Api.from_env().serves_within(600, timeout=30)
    finally:
        for name in (HEAD, WORKER):
            node(name).check_output(f"rm -f /opt/sparkops/wheelhouse/{wheel.name}")


LAB_MOUNT = "/opt/sparkops/engine-wheels"  # the lab's engine wheelhouse, mounted into each node (molecule.yml)


def ours(name: str) -> str:
    """Every file the collection's roles put under /etc/sparkops, /opt/sparkops (but the lab's mount) and systemd's
    folder, and the ports."""
    host = node(name)
    listing = host.run("ls -d /etc/systemd/system/sparkops-ray-* /etc/systemd/system/sparkops-vllm* /etc/sparkops/* /opt/sparkops/* 2>/dev/null").stdout
    files = "".join(line + "\n" for line in listing.splitlines() if line != LAB_MOUNT)
    ports = host.run("ss -Htln '( sport = :8000 or sport = :6379 )'").stdout
    return files + ports


def test_teardown_removes_what_the_collection_installed_and_nothing_else() -> None:
    for name in (HEAD, WORKER):
        node(name).check_output(
            f"printf '[Service]\\nExecStart=/bin/sleep infinity\\n[Install]\\nWantedBy=multi-user.target\\n' > /etc/systemd/system/{FOREIGN}.service"
            f" && systemctl daemon-reload && systemctl enable --now {FOREIGN}"
        )
        assert all(node(name).file(path).exists for path in INSTALLED[name]), name
    preview = teardown("--check", "--diff", "-e", "teardown_models=true")
    assert preview.returncode == 0, preview.stdout[-3000:] + preview.stderr[-2000:]
    assert "sparkops-vllm.service" in preview.stdout and "/opt/sparkops/ray" in preview.stdout, preview.stdout[-3000:]
    assert recap(preview)[HEAD]["changed"] > 0, recap(preview)  # what a run would remove...
    assert node(HEAD).service("sparkops-vllm").is_running and all(node(n).file(p).exists for n in INSTALLED for p in INSTALLED[n])  # ...still there

    run = teardown("-e", "teardown_models=true")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    for name in (HEAD, WORKER):
        assert ours(name).strip() == "", (name, ours(name))
        assert node(name).service(FOREIGN).is_running and node(name).service("ssh").is_running, name
        assert "sparkops-model-sync@" not in node(name).run("cat /root/.ssh/authorized_keys").stdout, name
    assert node(HEAD).file(f"{MODEL_DIR}/refs/main").exists  # the head's copy stays unless teardown_head_model
    assert not node(WORKER).file(MODEL_DIR).exists

    again = teardown("-e", "teardown_models=true")
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-2000:]
    assert {name: counts["changed"] for name, counts in recap(again).items()} == {HEAD: 0, WORKER: 0}, recap(again)
    for name in (HEAD, WORKER):
        node(name).check_output(f"systemctl disable --now {FOREIGN} && rm /etc/systemd/system/{FOREIGN}.service && systemctl daemon-reload")
