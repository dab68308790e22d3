"""Model distribution over a shaped fabric: chain fan-out vs a plain rsync and vs a star, as ratios (same command).

The lab's fabric links are shaped with `tc` on the host (tbf on each node's veth, both directions through an ifb) to a
fixed rate, so the network and not the 2 CPUs is the limit, as on real Sparks where one rsync stream gets ~640 MB/s of
a 200 Gb/s link. One command:

1. lab up with a head and 3 workers, the head seeded with a ~1 GB real model (tests/lab/sparklab/hf_model.py);
2. `site.yml --tags model` once (keys, a first distribution), then for each case the workers' copies are deleted
   and the transfer alone is timed:
   - baseline: one plain `rsync -a` of the snapshot folder from the head to worker1 (the original method);
   - chain to 1 worker (what model_sync does), throughput / shaped rate (goal >= 0.9);
   - chain to 3 workers (cut-through, the default), time / chain-1 time (goal <= 1.3);
   - the same with `cut_through: false` (rsync link by link, store and forward), the design it replaced;
   - star to 3 workers (the head sends to each), time / chain-1 time (about 3 expected).

    .venv/bin/python bench/model_distribution.py [--size 300MB] [--rate-mbit 40] [--write]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchmarks_doc import publish  # noqa: E402
from tool_env import tool_env  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
LAB = [sys.executable, str(REPO / "tests" / "lab" / "spark_lab.py")]
HEAD = "spark-head"
WORKERS = ["spark-worker1", "spark-worker2", "spark-worker3"]
FABRIC_IP = {HEAD: "192.168.200.11", "spark-worker1": "192.168.200.12", "spark-worker2": "192.168.200.13", "spark-worker3": "192.168.200.14"}
REPO_ID = "sparkops-lab/tiny-moe"
REPO_DIR = "/var/lib/sparkops/huggingface/hub/models--sparkops-lab--tiny-moe"
KEY_DIR = "/etc/sparkops/model-sync"
SSH = f"ssh -i {KEY_DIR}/id_ed25519 -o UserKnownHostsFile={KEY_DIR}/known_hosts -o StrictHostKeyChecking=accept-new -o BatchMode=yes"
FABRIC_IFNAME = "enp1s0f1np1"
SECTION = "## Model distribution over a shaped fabric (issue 5)"
ENV = tool_env(ANSIBLE_FORCE_COLOR="0")


def sh(argv: list[str], check: bool = True) -> str:
    proc = subprocess.run(argv, check=False, text=True, cwd=REPO, capture_output=True, env=ENV)
    if check and proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc.stdout


def node_sh(node: str, command: str) -> str:
    return sh(["podman", "exec", node, "bash", "-c", command])


# ------------------------------------------------------------------------------------------------ shaping
def host_veth(node: str) -> str:
    """The host end of a node's fabric veth: the host interface whose ifindex is the node's iflink."""
    peer = node_sh(node, f"cat /sys/class/net/{FABRIC_IFNAME}/iflink").strip()
    for line in sh(["ip", "-o", "link"]).splitlines():
        index, name = line.split(":")[:2]
        if index.strip() == peer:
            return name.strip().split("@")[0]
    raise SystemExit(f"no host interface with ifindex {peer} for {node}")


def shape(nodes: list[str], rate_mbit: int) -> list[str]:
    """Limit each node's fabric link to rate_mbit both ways; returns the ifb devices made."""
    made = []
    for index, node in enumerate(nodes):
        veth, ifb = host_veth(node), f"ifbspark{index}"
        tbf = ["tbf", "rate", f"{rate_mbit}mbit", "burst", "256kb", "latency", "50ms"]
        sh(["tc", "qdisc", "replace", "dev", veth, "root", *tbf])  # host -> node: the node's ingress
        sh(["ip", "link", "add", ifb, "type", "ifb"], check=False)
        sh(["ip", "link", "set", ifb, "up"])
        made.append(ifb)
        sh(["tc", "qdisc", "del", "dev", veth, "ingress"], check=False)
        sh(["tc", "qdisc", "add", "dev", veth, "handle", "ffff:", "ingress"])
        u32 = ["protocol", "all", "u32", "match", "u32", "0", "0", "action", "mirred", "egress", "redirect", "dev", ifb]
        sh(["tc", "filter", "add", "dev", veth, "parent", "ffff:", *u32])  # node -> host: the node's egress
        sh(["tc", "qdisc", "replace", "dev", ifb, "root", *tbf])
    return made


def unshape(nodes: list[str], ifbs: list[str]) -> None:
    for node in nodes:
        veth = host_veth(node)
        sh(["tc", "qdisc", "del", "dev", veth, "root"], check=False)
        sh(["tc", "qdisc", "del", "dev", veth, "ingress"], check=False)
    for ifb in ifbs:
        sh(["ip", "link", "del", ifb], check=False)


# ------------------------------------------------------------------------------------------------ cases
def wipe(workers: list[str]) -> None:
    for worker in workers:
        node_sh(worker, f"rm -rf {REPO_DIR} && sync")


def snapshot_bytes() -> int:
    return int(node_sh(HEAD, f"du -sb --apparent-size {REPO_DIR}/blobs | cut -f1").strip())


def plain_rsync(worker: str) -> float:
    """The original method: one `rsync -a` of the snapshot folder, one stream."""
    wipe([worker])
    node_sh(worker, f"mkdir -p {Path(REPO_DIR).parent}")
    start = time.monotonic()
    node_sh(HEAD, f"rsync -a -e '{SSH}' {REPO_DIR} root@{FABRIC_IP[worker]}:{Path(REPO_DIR).parent}/")
    return time.monotonic() - start


PLAYBOOK = """
- name: Bench | distribute the snapshot from the head
  hosts: spark-head
  gather_facts: false
  become: true
  tasks:
    - name: Bench | snapshot_distribute
      sparkops.inference.snapshot_distribute:
        repo_dir: "{{ bench_repo_dir }}"
        targets: "{{ bench_targets }}"
        topology: "{{ bench_topology }}"
        streams: "{{ bench_streams }}"
        cut_through: "{{ bench_cut_through }}"
        ssh_key: "{{ bench_key_dir }}/id_ed25519"
        ssh_known_hosts: "{{ bench_key_dir }}/known_hosts"
"""


def distribute(workers: list[str], topology: str, streams: int, cut_through: bool = True) -> dict[str, Any]:
    """snapshot_distribute from the head (what model_sync runs), timed by the module itself: its result."""
    wipe(workers)
    extra = {
        "bench_repo_dir": REPO_DIR,
        "bench_targets": [FABRIC_IP[w] for w in workers],
        "bench_topology": topology,
        "bench_streams": streams,
        "bench_cut_through": cut_through,
        "bench_key_dir": KEY_DIR,
    }
    with tempfile.NamedTemporaryFile("w", suffix=".yml", dir=REPO / ".lab") as playbook:
        playbook.write(PLAYBOOK)
        playbook.flush()
        proc = subprocess.run(
            ["ansible-playbook", "-i", "inventories/lab", playbook.name, "-e", json.dumps(extra)],
            check=False,
            text=True,
            cwd=REPO,
            capture_output=True,
            env={**ENV, "ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json"},
        )
    report = json.loads(proc.stdout)
    result = report["plays"][0]["tasks"][0]["hosts"][HEAD]
    if proc.returncode != 0 or result.get("failed"):
        raise SystemExit(f"snapshot_distribute failed: {result.get('msg')}")
    return dict(result)


def link_rates(result: dict[str, Any]) -> list[tuple[str, float]]:
    """Per link (in chain order), its bytes over the span from its first rsync's start to its last one's end, MB/s."""
    spans: dict[str, list[float]] = {}
    for sent in result["transferred"]:
        label = f"{sent['source']} -> {sent['target']}"
        start, end, size = sent["started"], sent["started"] + sent["seconds"], sent["bytes"]
        span = spans.setdefault(label, [start, end, 0.0])
        span[0], span[1], span[2] = min(span[0], start), max(span[1], end), span[2] + size
    return [(label, size / 1e6 / (end - start)) for label, (start, end, size) in spans.items()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="300MB", help="model size (default %(default)s)")
    parser.add_argument("--shards", type=int, default=39, help="shard count (default %(default)s, as Qwen3.5-122B-A10B-FP8)")
    # 2 CPUs move about 50 MB/s of ssh+rsync in all (measured: every case, star included, topped out there at 400
    # Mbit/s). At 80 Mbit/s a relaying worker (receiving and sending at once) already fell short of its links (8.3 of
    # 10 MB/s while the head's link ran at 9.3); at 40 Mbit/s every link runs at its rate, so the network is the limit.
    parser.add_argument("--rate-mbit", type=int, default=40, help="shaped fabric rate per direction (default %(default)s)")
    parser.add_argument("--streams", type=int, default=4)
    parser.add_argument("--write", action="store_true", help=f"replace the section '{SECTION}' of docs/benchmarks.md")
    parser.add_argument("--keep-lab", action="store_true")
    args = parser.parse_args()

    nodes = [HEAD, *WORKERS]
    sh([*LAB, "up", "--nodes", str(len(nodes))])
    sh([*LAB, "seed-model", "--node", HEAD, "--repo", REPO_ID, "--size", args.size, "--shards", str(args.shards)])
    sh(["ansible-playbook", "site.yml", "-i", "inventories/lab", "--tags", "model"])  # keys, known hosts, a first copy
    ifbs = shape(nodes, args.rate_mbit)
    try:
        size = snapshot_bytes()
        link_mb_s = args.rate_mbit / 8
        plain = plain_rsync(WORKERS[0])
        chain1_result = distribute(WORKERS[:1], "chain", args.streams)
        chain3_result = distribute(WORKERS, "chain", args.streams)
        stored3 = float(distribute(WORKERS, "chain", args.streams, cut_through=False)["seconds"])
        star3 = float(distribute(WORKERS, "star", args.streams)["seconds"])
    finally:
        unshape(nodes, ifbs)
        if not args.keep_lab:
            sh([*LAB, "down"], check=False)
    mb = size / 1e6
    chain1, chain3 = float(chain1_result["seconds"]), float(chain3_result["seconds"])
    names = {FABRIC_IP[node]: node.replace("spark-", "") for node in nodes}
    rates = ", ".join(f"{' -> '.join(names.get(end, end) for end in label.split(' -> '))} {rate:.1f}" for label, rate in link_rates(chain3_result))
    rows = [
        ("plain `rsync -a`, 1 worker (baseline)", plain, mb / plain / link_mb_s, plain / chain1),
        (f"model_sync chain, 1 worker, {args.streams} streams", chain1, mb / chain1 / link_mb_s, 1.0),
        (f"model_sync chain, 3 workers, {args.streams} streams", chain3, mb / chain3 / link_mb_s, chain3 / chain1),
        (
            f"store-and-forward chain (rsync link by link, `cut_through: false`), 3 workers, {args.streams} streams",
            stored3,
            mb / stored3 / link_mb_s,
            stored3 / chain1,
        ),
        (f"star from the head, 3 workers, {args.streams} streams", star3, mb / star3 / link_mb_s, star3 / chain1),
    ]
    today = datetime.date.today().isoformat()
    lines = [
        SECTION,
        "",
        f"`.venv/bin/python bench/model_distribution.py --size {args.size} --rate-mbit {args.rate_mbit} --write` on {today},",
        f"{os.cpu_count()} CPUs: a {mb:.0f} MB snapshot ({args.shards} shards), every fabric link shaped to {args.rate_mbit} Mbit/s",
        f"({link_mb_s:.0f} MB/s) each way with tc on the host, so that the network is the limit.",
        "",
        "| case | seconds | throughput / link rate | time / chain-1 time |",
        "|---|---|---|---|",
        *(f"| {name} | {secs:.1f} | {ratio:.2f} | {rel:.2f} |" for name, secs, ratio, rel in rows),
        "",
        f"Each link of the 3-worker chain, MB/s while it sent (its bytes / its first start to last end; the link: {link_mb_s:.1f}): {rates}.",
        "",
        "Goals (issue 5): chain to 1 worker >= 0.9 of the link rate; 3 workers <= 1.3 x the 1-worker time (a star gives about 3).",
    ]
    publish(SECTION, "\n".join(lines), args.write)
    return 0


if __name__ == "__main__":
    sys.exit(main())
