"""Serve a lab model from a node as the Hugging Face Hub does (the stand-in tests/lab/standins/hf-hub), so that the
download path (`hf download` on the head) runs in the lab, gated by a token when asked.

The model is built on the host (sparklab.hf_model), copied into the node as plain files, imported into the
stand-in's root there (under the same commit and blob names as the builder's) and served by a transient systemd
unit of the node on 127.0.0.1: the head reaches "the Hub", the workers (fabric only) do not.
"""

from __future__ import annotations

import shlex
import time
from pathlib import Path

from .hf_model import SnapshotInfo, ensure_model, pipe, repo_folder
from .run import LabError, log, run

HUB_SCRIPT = "/usr/local/bin/hf-hub"  # mounted read-only by the platforms that serve a hub
HUB_ROOT = "/srv/sparkops-lab/hub"
HUB_UNIT = "lab-hf-hub"
TOKEN_FILE = "/etc/sparkops-lab/hub-token"
LOG_FILE = "/var/log/lab-hf-hub.log"


def _node(node: str, script: str, *, input_text: str | None = None) -> str:
    return run(["podman", "exec", "-i", node, "sh", "-c", script], capture=True, input_text=input_text).stdout


def serve_hub(
    node: str,
    repo_id: str,
    *,
    total_bytes: int,
    shards: int,
    store: Path,
    port: int = 8081,
    token: str | None = None,
    seed: int = 1,
) -> tuple[str, SnapshotInfo]:
    """Serve ``repo_id`` (a model :func:`ensure_model` builds, gated when ``token`` is given) from ``node``'s hub
    stand-in on 127.0.0.1:``port``; return the endpoint (for HF_ENDPOINT) and the model as built on the host.

    The stand-in logs each request (never the token) to LOG_FILE in the node.
    """
    info = ensure_model(store, repo_id, total_bytes=total_bytes, shards=shards, seed=seed)
    if run(["podman", "exec", node, "test", "-x", HUB_SCRIPT], check=False, capture=True).returncode != 0:
        raise LabError(f"node {node} has no {HUB_SCRIPT}: mount tests/lab/standins/hf-hub there")
    source = f"/tmp/lab-hub-src/{repo_folder(repo_id)}"
    _node(node, f"rm -rf {shlex.quote(source)} && mkdir -p {shlex.quote(source)}")
    # The snapshot's files themselves (-h follows the symlinks into blobs/), as a Hub repo holds them.
    pipe(["tar", "-C", str(info.snapshot_path), "-chf", "-", "."], ["podman", "exec", "-i", node, "tar", "-C", source, "-xf", "-"])
    commit = _node(node, f"python3 {HUB_SCRIPT} --root {HUB_ROOT} --import {shlex.quote(repo_id)} {shlex.quote(source)}").strip().splitlines()[-1]
    _node(node, f"rm -rf {shlex.quote(source)}")
    if commit != info.commit:
        raise LabError(f"node {node}: the hub stand-in serves {repo_id} at {commit!r}, the builder made {info.commit}")
    argv = ["python3", HUB_SCRIPT, "--root", HUB_ROOT, "--host", "127.0.0.1", "--port", str(port)]
    if token is not None:
        _node(node, f"mkdir -p {Path(TOKEN_FILE).parent} && umask 077 && cat > {TOKEN_FILE}", input_text=token)
        argv += ["--token-file", TOKEN_FILE, "--gated", repo_id]
    _node(node, f"systemctl stop {HUB_UNIT} 2>/dev/null; systemctl reset-failed {HUB_UNIT} 2>/dev/null; true")
    run(["podman", "exec", node, "systemd-run", f"--unit={HUB_UNIT}", f"--property=StandardOutput=append:{LOG_FILE}", *argv], capture=True)
    endpoint = f"http://127.0.0.1:{port}"
    probe = f"import urllib.request; urllib.request.urlopen('{endpoint}/api/models/{repo_id}', timeout=2)"
    for _attempt in range(50):
        if run(["podman", "exec", node, "python3", "-c", probe], check=False, capture=True).returncode == 0:
            log(f"{node}: the hub stand-in serves {repo_id} at {commit} on {endpoint}{' (gated)' if token is not None else ''}")
            return endpoint, info
        time.sleep(0.2)
    raise LabError(f"node {node}: the hub stand-in did not answer on {endpoint}; see {LOG_FILE} and journalctl -u {HUB_UNIT}")
