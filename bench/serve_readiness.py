"""Serving: how fast readiness is detected, and how long a reboot takes to serving, as ratios (same command).

1. Readiness detection latency (local, no lab): the lab's vLLM stand-in (tests/lab/standins/vllm) starts with a
   load time (connection refused, then 503, then ready). A baseline poller asks ``/v1/models`` every 10 ms and
   records when the model is first listed: the moment the endpoint became ready. ``openai_endpoint``'s wait (the
   module's own code, with the role's interval of 1 s) returns some time after: that difference is the detection
   latency (goal: under 1 s). Also as a ratio to the interval.
2. Reboot to serving (``--reboot``, on a converged lab: `make demo` first): both lab nodes are restarted at once
   (podman restart, systemd as PID 1 comes back); timed from the restart to (a) the head's sshd answering (the
   baseline: the machine is back), (b) the Ray cluster having every node, (c) the endpoint listing the model and
   answering a completion, with no Ansible run.

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
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / ".collections"))
sys.path.insert(0, str(REPO / "tests" / "lab"))

from ansible_collections.sparkops.inference.plugins.module_utils._openai_endpoint import (  # noqa: E402
    EndpointConfig,
    ansible_opener,
    wait_ready,
)
from sparklab import hf_model  # noqa: E402

sys.path.insert(0, str(REPO / "bench"))
from benchmarks_doc import publish  # noqa: E402

SECTION = "## Serving readiness and reboot to serving (issue 6)"
REPO_ID = "sparkops-lab/tiny-moe"
MODEL = "tiny-moe"
ROLE_INTERVAL = 1.0  # what roles/vllm_serve passes


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def listed(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/v1/models", timeout=0.5) as response:
            return MODEL in [m["id"] for m in json.load(response)["data"]]
    except (OSError, ValueError, KeyError):
        return False


def one_start(cache: Path, load_s: float) -> tuple[float, float]:
    """Start the stand-in; return (module latency after the baseline saw it ready, the module's elapsed)."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO / "tests" / "lab" / "standins" / "vllm"),
        "HF_HUB_CACHE": str(cache),
        "HF_HUB_OFFLINE": "1",
        "SPARKOPS_LAB_VLLM_CONFIG": "/nonexistent",
        "SPARKOPS_LAB_VLLM_LOAD_S": str(load_s),
        "SPARKOPS_LAB_VLLM_UNHEALTHY_S": "0.5",
    }
    argv = [sys.executable, "-m", "sparkops_lab_vllm", "serve", REPO_ID, "--port", str(port), "--host", "127.0.0.1", "--served-model-name", MODEL]
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # noqa: S603 - a fixed argv
    seen: list[float] = []

    def baseline() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not seen:
            if listed(url):
                seen.append(time.monotonic())
                return
            time.sleep(0.01)

    poller = threading.Thread(target=baseline, daemon=True)
    try:
        poller.start()
        config = EndpointConfig(url=url, model=MODEL, api_key=None, smoke_test=True, prompt="Say hello.", max_tokens=8, request_timeout=10.0)
        started = time.monotonic()
        outcome = wait_ready(config, timeout=60, interval=ROLE_INTERVAL, opener=ansible_opener())
        returned = time.monotonic()
        poller.join(timeout=5)
        if not outcome.ready or not seen:
            raise SystemExit(f"the stand-in did not become ready: {outcome.message()}")
        return returned - seen[0], returned - started
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def readiness(runs: int, load_s: float) -> list[str]:
    with tempfile.TemporaryDirectory(prefix="serve-bench-") as tmp:
        info = hf_model.build_hub_cache(Path(tmp) / "hub", REPO_ID, total_bytes=2_000_000, shards=2)
        latencies = [one_start(info.cache_dir, load_s) for _run in range(runs)]
    lat = [latency for latency, _elapsed in latencies]
    return [
        f"Readiness detection: {runs} starts of the vLLM stand-in ({load_s:g} s refused, then 0.5 s of 503), each watched",
        "by a baseline poller (`/v1/models` every 10 ms) and by `openai_endpoint`'s wait with the role's interval (1 s).",
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
def sh(argv: list[str], check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(argv, check=False, text=True, capture_output=True, cwd=REPO)
    if check and proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return proc


def lab_nodes() -> list[str]:
    names = sh(["podman", "ps", "--format", "{{.Names}}", "--filter", "label=sparkops.lab=spark-lab"]).stdout.split()
    if "spark-head" not in names:
        raise SystemExit("no lab: run `make demo` first (a lab with site.yml applied)")
    return sorted(names)


def reboot(runs: int) -> list[str]:
    nodes = lab_nodes()
    head_mgmt = sh(["podman", "inspect", "spark-head", "--format", "{{json .NetworkSettings.Networks}}"]).stdout
    mgmt_ip = re.search(r'"spark-mgmt":\{[^}]*?"IPAddress":"([\d.]+)"', head_mgmt)
    if mgmt_ip is None:
        raise SystemExit(f"cannot find the head's management address in {head_mgmt[:300]}")
    url = f"http://{mgmt_ip.group(1)}:8000"
    rows = []
    for _run in range(runs):
        start = time.monotonic()
        sh(["podman", "restart", "--time", "5", *nodes])
        times: dict[str, float] = {}
        deadline = start + 600
        while time.monotonic() < deadline and len(times) < 3:
            now = time.monotonic()
            if "ssh" not in times:
                try:
                    with socket.create_connection((mgmt_ip.group(1), 22), timeout=1) as conn:
                        if conn.recv(4).startswith(b"SSH"):
                            times["ssh"] = now - start
                except OSError:
                    pass
            if "ray" not in times:
                check = "import json,ray;ray.init(address='auto',logging_level='ERROR');print(sum(1 for n in ray.nodes() if n['Alive']))"
                auth = ["--env", "RAY_AUTH_MODE=token", "--env", "RAY_AUTH_TOKEN_PATH=/etc/sparkops/private/ray-auth-token"]
                auth += ["--env", "RAY_TMPDIR=/var/lib/sparkops/tmp"]  # ray_cluster_temp_dir: where address='auto' looks
                alive = sh(["podman", "exec", *auth, "spark-head", "/opt/sparkops/ray/bin/python", "-c", check], check=False).stdout.strip()
                if alive.splitlines() and alive.splitlines()[-1] == str(len(nodes)):
                    times["ray"] = time.monotonic() - start
            if "serving" not in times and listed(url):
                times["serving"] = time.monotonic() - start
            time.sleep(0.5)
        if len(times) < 3:
            raise SystemExit(f"not back after 600 s: {times}")
        rows.append(times)
    med = {key: statistics.median(r[key] for r in rows) for key in ("ssh", "ray", "serving")}
    return [
        f"Reboot to serving: {runs} restarts of every lab node at once ({len(nodes)} nodes, `podman restart`), no Ansible run.",
        "",
        "| back | median (s) | / sshd answering |",
        "|---|---|---|",
        f"| sshd on the head answers (baseline) | {med['ssh']:.1f} | 1.00 |",
        f"| the Ray cluster has every node | {med['ray']:.1f} | {med['ray'] / med['ssh']:.2f} |",
        f"| the endpoint lists the model | {med['serving']:.1f} | {med['serving'] / med['ssh']:.2f} |",
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--load-s", type=float, default=2.0, help="the stand-in's load time (default %(default)s)")
    parser.add_argument("--reboot", action="store_true", help="also time reboot to serving on the running lab (make demo)")
    parser.add_argument("--write", action="store_true", help=f"replace the section '{SECTION}' of docs/benchmarks.md")
    args = parser.parse_args()
    lines = [SECTION, "", f"`.venv/bin/python bench/serve_readiness.py --runs {args.runs}{' --reboot' if args.reboot else ''}` on "]
    lines[-1] += f"{datetime.date.today().isoformat()}, {os.cpu_count()} CPUs."
    lines += ["", *readiness(args.runs, args.load_s)]
    if args.reboot:
        lines += ["", *reboot(max(1, args.runs // 2))]
    publish(SECTION, "\n".join(lines), args.write)
    return 0


if __name__ == "__main__":
    sys.exit(main())
