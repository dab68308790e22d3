"""Ray cluster formation time on 2, 3 and 4 lab nodes, as ratios to the 2-node time (same command, same machine).

For each size: `make lab-up`-equivalent with N nodes, `site.yml` to install and form the cluster, then R rounds of:
stop every Ray unit, start them all at once (as after a reboot), and time until the head sees N alive nodes with
their GPUs. The baseline in the same command is the serial start: head, then one worker after the other, each
waited for. Parallel/serial well under 1 means nodes join in parallel; parallel N/2 near 1 would need one core
per node, which a shared 2-core machine does not have. Absolute seconds here are noise.

    .venv/bin/python bench/ray_formation.py [--sizes 2 3 4] [--rounds 3] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
from tool_env import tool_env  # noqa: E402

LAB = [sys.executable, str(REPO / "tests" / "lab" / "spark_lab.py")]
HEAD, HEAD_IP = "spark-head", "192.168.200.11"
ALIVE = (
    "import json, ray; ray.init(address='{ip}:6379', _node_ip_address='{ip}', logging_level='ERROR', log_to_driver=False);"
    "print(sum(1 for n in ray.nodes() if n['Alive'] and n['Resources'].get('GPU', 0) >= 1))"
)


def sh(argv: list[str], stdout: int | None = None, stderr: int | None = None, env: dict[str, str] | None = None) -> None:
    subprocess.run(argv, check=True, text=True, cwd=REPO, stdout=stdout, stderr=stderr, env=env)


def nodes(n: int) -> list[str]:
    return [HEAD] + [f"spark-worker{i}" for i in range(1, n)]


def alive() -> int:
    # The cluster's token (the ray_cluster role's Ray token authentication): the mode and the token file's path.
    auth = ["--env", "RAY_AUTH_MODE=token", "--env", "RAY_AUTH_TOKEN_PATH=/etc/sparkops/private/ray-auth-token"]
    argv = ["podman", "exec", *auth, HEAD, "/opt/sparkops/ray/bin/python", "-c", ALIVE.format(ip=HEAD_IP)]
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    return int(proc.stdout.strip().splitlines()[-1]) if proc.returncode == 0 and proc.stdout.strip() else 0


def unit(name: str) -> str:
    return "sparkops-ray-head" if name == HEAD else "sparkops-ray-worker"


def start(members: list[str]) -> None:
    with ThreadPoolExecutor(len(members)) as pool:
        list(pool.map(lambda m: sh(["podman", "exec", m, "systemctl", "start", "--no-block", unit(m)]), members))


def wait_alive(count: int, since: float, limit_s: float = 240.0) -> None:
    while time.monotonic() - since < limit_s:
        if alive() >= count:
            return
        time.sleep(0.2)
    raise RuntimeError(f"{count} nodes did not form within {limit_s:.0f}s")


def form_once(n: int, serial: bool) -> float:
    members = nodes(n)
    with ThreadPoolExecutor(len(members)) as pool:
        list(pool.map(lambda m: sh(["podman", "exec", m, "systemctl", "stop", unit(m)]), members))
    began = time.monotonic()
    if serial:
        for count, member in enumerate(members, start=1):
            start([member])
            wait_alive(count, began)
    else:
        start(members)
        wait_alive(n, began)
    return time.monotonic() - began


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[2, 3, 4])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    env = tool_env()
    parallel: dict[int, list[float]] = {}
    serial: dict[int, list[float]] = {}
    try:
        for n in args.sizes:
            sh([*LAB, "up", "--nodes", str(n)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
            sh(["ansible-playbook", "site.yml", "-i", "inventories/lab"], stdout=subprocess.DEVNULL, env=env)
            parallel[n], serial[n] = [], []
            for _round in range(args.rounds):  # interleaved, so drift hits both alike
                parallel[n].append(form_once(n, serial=False))
                serial[n].append(form_once(n, serial=True))
            print(f"{n} nodes: parallel {', '.join(f'{s:.1f}s' for s in parallel[n])}; serial {', '.join(f'{s:.1f}s' for s in serial[n])}", flush=True)
    finally:
        sh([*LAB, "down"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = statistics.median(parallel[args.sizes[0]])
    summary = {
        n: {
            "parallel_median_s": statistics.median(parallel[n]),
            "serial_median_s": statistics.median(serial[n]),
            "parallel_ratio_to_smallest": statistics.median(parallel[n]) / base,
            "parallel_over_serial": statistics.median(parallel[n]) / statistics.median(serial[n]),
            "parallel_runs_s": parallel[n],
            "serial_runs_s": serial[n],
        }
        for n in args.sizes
    }
    print(f"\nnodes  parallel_s  serial_s  parallel/{args.sizes[0]}-node  parallel/serial")
    for n, row in summary.items():
        print(
            f"{n:5d} {row['parallel_median_s']:11.1f} {row['serial_median_s']:9.1f} {row['parallel_ratio_to_smallest']:16.2f}"
            f" {row['parallel_over_serial']:16.2f}"
        )
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
