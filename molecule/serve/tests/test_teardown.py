"""playbooks/teardown.yml on the deployed lab: check mode lists what would go and changes nothing; the run removes
every unit, environment file, venv, key and listening port the collection installed (the workers' model copies with
teardown_models, the head's kept), leaves a service it did not install alone, and a second run changes nothing.
test_via_awx.py runs next: its Deploy job redeploys the torn-down lab with site.yml."""

from __future__ import annotations

import os
import re
import subprocess
import typing as t

import testinfra

HEAD = os.environ["RAY_LAB_HEAD"]
WORKER = os.environ["RAY_LAB_WORKERS"].split(",")[0]
PROJECT = os.environ["RAY_LAB_PROJECT"]
MODEL_DIR = "/var/lib/sparkops/huggingface/hub/models--sparkops-lab--tiny-moe"
FOREIGN = "sparkops-dashboard"  # a unit named like ours that the collection did not install
INSTALLED = {
    HEAD: ["/etc/systemd/system/sparkops-ray-head.service", "/etc/systemd/system/sparkops-vllm.service", "/opt/sparkops/ray/bin/python"],
    WORKER: ["/etc/systemd/system/sparkops-ray-worker.service", "/opt/sparkops/ray/bin/python"],
}


def node(name: str) -> t.Any:
    return testinfra.get_host(f"podman://{name}")


def teardown(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["ansible-playbook", "-i", os.environ["MOLECULE_INVENTORY_FILE"], f"{PROJECT}/playbooks/teardown.yml", *args],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "ANSIBLE_COLLECTIONS_PATH": f"{PROJECT}/.collections", "ANSIBLE_FORCE_COLOR": "0"},
    )


def recap(run: subprocess.CompletedProcess[str]) -> dict[str, dict[str, int]]:
    return {host: {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", counts)} for host, counts in re.findall(r"^(\S+)\s+:\s+(ok=.*)$", run.stdout, re.MULTILINE)}


def ours(name: str) -> str:
    """Every file the collection's roles put under /etc/sparkops, /opt/sparkops and systemd's folder, and the ports."""
    host = node(name)
    files = host.run("ls -d /etc/systemd/system/sparkops-ray-* /etc/systemd/system/sparkops-vllm* /etc/sparkops/* /opt/sparkops/* 2>/dev/null").stdout
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
