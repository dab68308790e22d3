"""Serving: how fast readiness is detected, and how long a reboot takes to serving, as ratios (same command).

Both parts run on a converged lab (`make demo` first: the podman containers spark-head, spark-worker1, ... with
site.yml applied); without one the script stops with "no lab: run `make demo` first". The endpoint is the real
engine's, vLLM's API at the head's management address, port 8000, asked with the API key the head keeps
(/etc/sparkops/private/vllm-api-key) for the model the lab's inventory serves (sparkops_served_model_name,
inventories/lab/group_vars/all).

1. Readiness detection latency: the head's vLLM unit is restarted (``systemctl restart sparkops-vllm``; in vLLM's
   mp mode the other nodes' units follow the head's). A baseline poller asks ``/v1/models`` every 10 ms and
   records when the model is first listed: the moment the endpoint became ready. ``openai_endpoint``'s wait (the
   module's own code, with the role's interval of 1 s and the module's default smoke test) returns some time
   after: that difference is the detection latency (goal: under 1 s). Also as a ratio to the interval.
2. Reboot to serving (``--reboot``): every lab node is restarted at once (podman restart, systemd as PID 1 comes
   back); timed from the restart to (a) the head's sshd answering (the baseline: the machine is back), (b) where
   the backend runs a Ray cluster (the head has a ``sparkops-ray-head.service`` unit), the cluster having every
   node, (c) the endpoint listing the model, with no Ansible run.

    .venv/bin/python bench/serve_readiness.py [--runs 5] [--reboot] [--write]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / ".collections"))

from ansible_collections.sparkops.inference.plugins.module_utils._openai_endpoint import (  # noqa: E402
    EndpointConfig,
    ansible_opener,
    wait_ready,
)

sys.path.insert(0, str(REPO / "bench"))
from benchmarks_doc import publish  # noqa: E402

SECTION = "## Serving readiness and reboot to serving (issue 6)"
HEAD = "spark-head"
LAB_LABEL = "label=sparkops.lab=spark-lab"
NO_LAB = "no lab: run `make demo` first (a lab with site.yml applied)"
LAB_VARS = REPO / "inventories" / "lab" / "group_vars" / "all"
VLLM_UNIT = "sparkops-vllm"
RAY_HEAD_UNIT = "sparkops-ray-head.service"
API_KEY_FILE = "/etc/sparkops/private/vllm-api-key"  # vllm_serve_api_key_file
SERVE_PORT = 8000  # sparkops_serve_port
ROLE_INTERVAL = 1.0  # what roles/vllm_serve passes
READY_TIMEOUT = 600.0  # the lab's vllm_serve_ready_timeout_s
BASELINE_POLL = 0.01
# The baseline's requests go to the lab directly, never through a proxy the environment names (it would get the key).
DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


@dataclass(frozen=True)
class Endpoint:
    """The lab's API: the head's management address, its API key and the served model's name."""

    host: str
    api_key: str
    model: str

    @property
    def url(self) -> str:
        return f"http://{self.host}:{SERVE_PORT}"

    def listed(self) -> bool:
        """Whether ``/v1/models`` (with the API key) lists the model."""
        request = urllib.request.Request(f"{self.url}/v1/models", headers={"Authorization": f"Bearer {self.api_key}"})  # noqa: S310 - http to the lab
        try:
            with DIRECT.open(request, timeout=0.5) as response:
                return self.model in [m["id"] for m in json.load(response)["data"]]
        except (OSError, ValueError, KeyError, TypeError):
            return False


def sh(argv: list[str], check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(argv, check=False, text=True, capture_output=True, cwd=REPO)  # noqa: S603 - fixed argv
    if check and proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return proc


def lab_nodes() -> list[str]:
    """The running lab's containers; stops the script without a lab."""
    try:
        names = sh(["podman", "ps", "--format", "{{.Names}}", "--filter", LAB_LABEL]).stdout.split()
    except FileNotFoundError:
        raise SystemExit(f"{NO_LAB}; podman is not installed") from None
    if HEAD not in names:
        raise SystemExit(NO_LAB)
    return sorted(names)


def served_model() -> str:
    """sparkops_served_model_name from the lab's inventory (inventories/lab/group_vars/all)."""
    for path in sorted(LAB_VARS.glob("*.yml")):
        values = yaml.safe_load(path.read_text())
        if isinstance(values, dict) and values.get("sparkops_served_model_name"):
            return str(values["sparkops_served_model_name"])
    raise SystemExit(f"no sparkops_served_model_name in {LAB_VARS.relative_to(REPO)}")


def lab_endpoint() -> Endpoint:
    """The head's API as the lab serves it; stops the script unless site.yml has deployed vLLM on the head."""
    head_mgmt = sh(["podman", "inspect", HEAD, "--format", "{{json .NetworkSettings.Networks}}"]).stdout
    mgmt_ip = re.search(r'"spark-mgmt":\{[^}]*?"IPAddress":"([\d.]+)"', head_mgmt)
    if mgmt_ip is None:
        raise SystemExit(f"cannot find the head's management address in {head_mgmt[:300]}")
    key = sh(["podman", "exec", HEAD, "cat", API_KEY_FILE], check=False)
    if key.returncode != 0 or not key.stdout.strip():
        raise SystemExit(f"{NO_LAB}: the head has no API key ({API_KEY_FILE}); {key.stderr.strip()[-300:]}")
    return Endpoint(host=mgmt_ip.group(1), api_key=key.stdout.strip(), model=served_model())


def unit_loaded(unit: str) -> bool:
    """Whether the head has ``unit`` (a unit file systemd loaded)."""
    state = sh(["podman", "exec", HEAD, "systemctl", "show", "--property", "LoadState", "--value", unit], check=False)
    return state.returncode == 0 and state.stdout.strip() == "loaded"


# --------------------------------------------------------------------------------------------- readiness
def one_start(endpoint: Endpoint) -> tuple[float, float]:
    """Restart the head's vLLM; return (module latency after the baseline saw it ready, the module's elapsed)."""
    sh(["podman", "exec", HEAD, "systemctl", "restart", VLLM_UNIT])
    seen: list[float] = []
    polls: list[bool] = []

    def baseline() -> None:
        deadline = time.monotonic() + READY_TIMEOUT
        while time.monotonic() < deadline and not seen:
            ready = endpoint.listed()
            polls.append(ready)
            if ready:
                seen.append(time.monotonic())
                return
            time.sleep(BASELINE_POLL)

    poller = threading.Thread(target=baseline, daemon=True)
    poller.start()
    config = EndpointConfig(url=endpoint.url, model=endpoint.model, api_key=endpoint.api_key)
    started = time.monotonic()
    outcome = wait_ready(config, timeout=READY_TIMEOUT, interval=ROLE_INTERVAL, opener=ansible_opener())
    returned = time.monotonic()
    poller.join(timeout=5)
    if not outcome.ready or not seen:
        raise SystemExit(f"the head's vLLM did not become ready within {READY_TIMEOUT:g} s of its restart: {outcome.message()}")
    if polls[0]:
        raise SystemExit(f"the endpoint listed {endpoint.model} right after `systemctl restart {VLLM_UNIT}`: not a fresh start")
    return returned - seen[0], returned - started


def readiness(runs: int, nodes: list[str], endpoint: Endpoint) -> list[str]:
    if not unit_loaded(f"{VLLM_UNIT}.service"):
        raise SystemExit(f"{NO_LAB}: the head has no {VLLM_UNIT}.service")
    latencies = [one_start(endpoint) for _run in range(runs)]
    lat = [latency for latency, _elapsed in latencies]
    elapsed = [seconds for _latency, seconds in latencies]
    return [
        f"Readiness detection: {runs} restarts of the real engine on the demo lab ({len(nodes)} nodes, vLLM's mp mode,",
        f"`systemctl restart {VLLM_UNIT}` on the head; {endpoint.model} ready after a median {statistics.median(elapsed):.1f} s),",
        "each watched by a baseline poller (`/v1/models` every 10 ms) and by `openai_endpoint`'s wait with the role's",
        f"interval ({ROLE_INTERVAL:g} s).",
        "",
        "| measurement | median | max |",
        "|---|---|---|",
        f"| module returns after the baseline saw the model listed (s) | {statistics.median(lat):.3f} | {max(lat):.3f} |",
        f"| the same / the module's interval | {statistics.median(lat) / ROLE_INTERVAL:.2f} | {max(lat) / ROLE_INTERVAL:.2f} |",
        "",
        "Goal (issue 6): readiness detected within 1 s of the endpoint becoming ready. The latency is at most one",
        "interval (the wait sleeps between attempts) plus one attempt (`/health`, `/v1/models` and a completion).",
    ]


# ------------------------------------------------------------------------------------------------ reboot
def ray_alive(nodes: list[str]) -> bool:
    """Whether the head's Ray cluster has every lab node alive."""
    check = "import json,ray;ray.init(address='auto',logging_level='ERROR');print(sum(1 for n in ray.nodes() if n['Alive']))"
    auth = ["--env", "RAY_AUTH_MODE=token", "--env", "RAY_AUTH_TOKEN_PATH=/etc/sparkops/private/ray-auth-token"]
    auth += ["--env", "RAY_TMPDIR=/var/lib/sparkops/tmp"]  # ray_cluster_temp_dir: where address='auto' looks
    alive = sh(["podman", "exec", *auth, HEAD, "/opt/sparkops/ray/bin/python", "-c", check], check=False).stdout.strip()
    return bool(alive.splitlines()) and alive.splitlines()[-1] == str(len(nodes))


def reboot(runs: int, nodes: list[str], endpoint: Endpoint) -> list[str]:
    ray = unit_loaded(RAY_HEAD_UNIT)
    keys = ("ssh", "ray", "serving") if ray else ("ssh", "serving")
    rows = []
    for _run in range(runs):
        start = time.monotonic()
        sh(["podman", "restart", "--time", "5", *nodes])
        times: dict[str, float] = {}
        deadline = start + 600
        while time.monotonic() < deadline and len(times) < len(keys):
            now = time.monotonic()
            if "ssh" not in times:
                try:
                    with socket.create_connection((endpoint.host, 22), timeout=1) as conn:
                        if conn.recv(4).startswith(b"SSH"):
                            times["ssh"] = now - start
                except OSError:
                    pass
            if ray and "ray" not in times and ray_alive(nodes):
                times["ray"] = time.monotonic() - start
            if "serving" not in times and endpoint.listed():
                times["serving"] = time.monotonic() - start
            time.sleep(0.5)
        if len(times) < len(keys):
            raise SystemExit(f"not back after 600 s: {times}")
        rows.append(times)
    med = {key: statistics.median(r[key] for r in rows) for key in keys}
    ray_row = (
        f"| the Ray cluster has every node | {med['ray']:.1f} | {med['ray'] / med['ssh']:.2f} |"
        if ray
        else f"| the Ray cluster has every node: none, the backend runs no Ray cluster (no {RAY_HEAD_UNIT} on the head) | - | - |"
    )
    return [
        f"Reboot to serving: {runs} restarts of every lab node at once ({len(nodes)} nodes, `podman restart`), no Ansible run.",
        "",
        "| back | median (s) | / sshd answering |",
        "|---|---|---|",
        f"| sshd on the head answers (baseline) | {med['ssh']:.1f} | 1.00 |",
        ray_row,
        f"| the endpoint lists the model | {med['serving']:.1f} | {med['serving'] / med['ssh']:.2f} |",
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--reboot", action="store_true", help="also time reboot to serving (every lab node restarted)")
    parser.add_argument("--write", action="store_true", help=f"replace the section '{SECTION}' of docs/benchmarks.md")
    args = parser.parse_args()
    nodes = lab_nodes()
    endpoint = lab_endpoint()
    lines = [SECTION, "", f"`.venv/bin/python bench/serve_readiness.py --runs {args.runs}{' --reboot' if args.reboot else ''}` on "]
    lines[-1] += f"{datetime.date.today().isoformat()}, {os.cpu_count()} CPUs, the demo lab (`make demo`)."
    lines += ["", *readiness(args.runs, nodes, endpoint)]
    if args.reboot:
        lines += ["", *reboot(max(1, args.runs // 2), nodes, endpoint)]
    publish(SECTION, "\n".join(lines), args.write)
    return 0


if __name__ == "__main__":
    sys.exit(main())
