"""The spark lab: podman containers with systemd as PID 1 standing in for DGX Sparks.

  spark_lab.py image          build (or reuse) the node image and print its reference
  spark_lab.py up [--nodes N] image, wheelhouse, networks, N nodes, SSH, inventories/lab/hosts.yml
  spark_lab.py down           remove the lab's containers and the networks it created
  spark_lab.py prepare        the node image, the wheelhouse and the networks, no nodes (Molecule's dependency step)
  spark_lab.py prepare --engine   the same and the real vLLM engine's wheelhouse (the engine scenario's step)
  spark_lab.py release        remove the networks unless a container still uses them (Molecule's cleanup)
  spark_lab.py status         what runs, where
  spark_lab.py seed-model [--node spark-head] [--repo sparkops-lab/tiny-moe] [--size 40MB] [--shards 4]
                              put a small real model (Qwen3-MoE, random weights) into a node's Hugging Face hub
                              cache, as if downloaded there; print its commit and bytes. Built on the host, kept
                              under .lab/models/ for reuse. The head is the node to seed: workers have no
                              egress and get the model from it, as on real Sparks.

  spark_lab.py serve-hub [--node spark-head] [--repo R] [--size 8MB] [--shards 2] [--port 8081] [--token-file F]
                              serve a model (built like seed-model's, seed 1) from the node's Hugging Face Hub
                              stand-in on 127.0.0.1 (gated by the token in F when given), for `hf download` on
                              the head; print the endpoint (HF_ENDPOINT) and the commit.

  spark_lab.py endpoint       print a curl command for the lab's endpoint at the head's management address (what
                              this machine reaches), run it as printed and show the completion (`make demo`'s end)
  spark_lab.py authorize NODE...  put the lab's public key into the nodes' root authorized_keys (Molecule scenarios
                              reach their nodes over ssh with it)

Tests and the demo only: nothing outside tests/ and the lab imports this.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import shlex
import subprocess
import sys
import typing as t
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml
from sparklab import engine_wheelhouse, hf_model, hub_server, inventory, node_image, nodes, wheelhouse
from sparklab.run import LabError, log, out, run
from sparklab.topology import LAB_LABEL, Topology, build_topology

REPO = Path(__file__).resolve().parents[2]
STATE = Path(os.environ.get("SPARK_LAB_STATE", REPO / ".lab"))
INVENTORY_FILE = REPO / "inventories" / "lab" / "hosts.yml"
# The model the lab's head holds, as inventories/lab/group_vars/all/cluster.yml names it: small but real.
LAB_MODEL_REPO = "sparkops-lab/tiny-moe"
LAB_MODEL_BYTES = 40_000_000
LAB_MODEL_SHARDS = 4


def topology(node_count: int, image: str = "") -> Topology:
    return build_topology(node_count, image)


def ensure_ssh_key() -> Path:
    key = STATE / "ssh" / "id_ed25519"
    if not key.is_file():
        key.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "spark-lab", "-f", str(key)])
    return key


def authorize(names: list[str]) -> None:
    """Let the controller in over ssh as root with the lab's key (Molecule scenarios reach their nodes so, as AWX would)."""
    if not names:
        raise LabError("authorize: name the nodes (spark_lab.py authorize NODE...)")
    key = ensure_ssh_key()
    for name in names:
        nodes.wait_running(name)
        nodes.authorize_key(name, key.with_suffix(".pub"))
    log(f"authorized {key}.pub on {' '.join(names)}")


def endpoint(node_count: int) -> None:
    """The endpoint as this machine reaches it (the head's management address): print a curl command, run it exactly
    as printed and show the completion (`make demo` ends with it)."""
    cluster = yaml.safe_load((REPO / "inventories" / "lab" / "group_vars" / "all" / "cluster.yml").read_text())
    head = topology(node_count).head
    url = f"http://{head.mgmt_ip}:{cluster['sparkops_serve_port']}/v1"
    # The API key the vllm_serve role generated (the lab inventory sets none): its copy on this controller
    # (vllm_serve_api_key_controller_file's default). The command reads it from the file: the key is never printed,
    # nor in curl's arguments (the header comes from a bash builtin through a pipe).
    key_file = Path.home() / ".sparkops" / head.name / "vllm-api-key"
    if not key_file.is_file():
        raise LabError(f"no API key in {key_file}: the vllm_serve role keeps a copy there on the controller (site.yml did not serve?)")
    body = json.dumps({"model": cluster["sparkops_served_model_name"], "messages": [{"role": "user", "content": "Say hello in five words."}], "max_tokens": 48})
    header = f"-H @<(printf 'Authorization: Bearer %s' \"$(cat {shlex.quote(str(key_file))})\")"
    command = f"curl -sS --fail-with-body --max-time 120 {url}/chat/completions {header} -H 'Content-Type: application/json' -d '{body}'"
    print(f"\nThe endpoint, from this machine (the head's management address): {url}\nThe API key: {key_file} (0600)\nTry it:\n\n  {command}\n")
    proc = subprocess.run(["bash", "-c", command], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise LabError(f"the endpoint did not answer: curl exited {proc.returncode}: {(proc.stdout + proc.stderr).strip()[-800:]}")
    choice = json.loads(proc.stdout)["choices"][0]
    message = choice["message"]
    text = message.get("content") or ""
    reasoning = message.get("reasoning") or message.get("reasoning_content") or ""
    print(f"It answered ({choice.get('finish_reason')}):")
    if reasoning:
        print(f"  reasoning: {reasoning.strip()[:300]!r}")
    print(f"  content:   {text.strip()[:300]!r}" if text else "  content:   null (a reasoning model still thinking at max_tokens: healthy)")


def up(node_count: int) -> None:
    image = node_image.ensure_image()
    topo = topology(node_count, image)
    wheels = wheelhouse.ensure_wheelhouse(STATE / "wheelhouse")
    engine_wheels = engine_wheelhouse.ensure_engine_wheelhouse(STATE / "engine-wheelhouse")
    key = ensure_ssh_key()
    existing = nodes.container_names(topo.name)
    if existing:
        log(f"replacing running lab nodes: {' '.join(existing)}")
    nodes.remove_lab(topo.name, ())
    networks_up()
    for node in topo.nodes:
        nodes.start_node(topo, node, wheels, engine_wheels)
    with ThreadPoolExecutor(max_workers=len(topo.nodes)) as pool:
        list(pool.map(lambda n: nodes.wait_running(n.name), topo.nodes))
    for node in topo.nodes:
        nodes.authorize_key(node.name, key.with_suffix(".pub"))
    known_hosts = STATE / "ssh" / "known_hosts"
    known_hosts.unlink(missing_ok=True)  # new containers, new host keys
    ssh_config = STATE / "ssh" / "config"
    ssh_config.write_text(inventory.ssh_config(topo, key, known_hosts))
    INVENTORY_FILE.write_text(inventory.hosts_yaml(topo, ssh_config, wheels))
    for node in topo.nodes:  # prove the controller's path (head direct, workers via ProxyJump) works
        run(["ssh", "-F", str(ssh_config), "-o", "BatchMode=yes", node.name, "true"])
    head = next(node.name for node in topo.nodes if node.role == "head")
    model = hf_model.seed_node(head, LAB_MODEL_REPO, total_bytes=LAB_MODEL_BYTES, shards=LAB_MODEL_SHARDS, store=STATE / "models")
    log(f"seeded {head}'s HF cache with {LAB_MODEL_REPO}@{model.commit[:12]} ({model.total_bytes} bytes); workers have none")
    log(f"lab up: {len(topo.nodes)} nodes from {image}; inventory {INVENTORY_FILE.relative_to(REPO)}")
    status(topo.name)


def down(node_count: int) -> None:
    topo = topology(node_count)
    nodes.remove_lab(topo.name, (topo.fabric, topo.mgmt))
    INVENTORY_FILE.unlink(missing_ok=True)
    (STATE / "ssh" / "known_hosts").unlink(missing_ok=True)


@contextlib.contextmanager
def prepare_lock() -> t.Iterator[None]:
    """Hold .lab/prepare.lock: one prepare at a time (another one waits, then finds the image and wheelhouses built)."""
    STATE.mkdir(parents=True, exist_ok=True)
    with open(STATE / "prepare.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def networks_up() -> None:
    topo = topology(2)
    for net in (topo.mgmt, topo.fabric):
        nodes.ensure_network(net, topo.name)


def networks_down() -> None:
    topo = topology(2)
    nodes.remove_networks(topo.name, (topo.fabric, topo.mgmt))


def status(lab: str) -> None:
    print(out(["podman", "ps", "-a", "--filter", f"label={LAB_LABEL}={lab}", "--format", "table {{.Names}}\t{{.Status}}\t{{.Networks}}"]))


def seed_model(args: argparse.Namespace) -> None:
    """The seed-model command: build (or reuse) the model and copy it into the node's cache."""
    info = hf_model.seed_node(
        args.node,
        args.repo,
        total_bytes=hf_model.parse_size(args.size),
        shards=args.shards,
        cache_dir=args.cache_dir,
        store=None if args.no_store else STATE / "models",
        revision=args.revision,
        seed=args.seed,
        dtype=args.dtype,
    )
    print(f"{info.commit} {info.total_bytes}")


def serve_hub(args: argparse.Namespace) -> None:
    """The serve-hub command: the node's hub stand-in serves the model."""
    token = Path(args.token_file).read_text().strip() if args.token_file else None
    endpoint, info = hub_server.serve_hub(
        args.node, args.repo, total_bytes=hf_model.parse_size(args.size), shards=args.shards, store=STATE / "models", port=args.port, token=token
    )
    print(f"{endpoint} {info.commit}")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=("image", "up", "down", "prepare", "release", "status", "seed-model", "serve-hub", "authorize", "endpoint"))
    parser.add_argument("names", nargs="*", help="authorize: the nodes that get the lab's public key")
    parser.add_argument("--nodes", type=int, default=int(os.environ.get("SPARK_LAB_NODES", "2")), help="head + workers (default 2)")
    parser.add_argument("--engine", action="store_true", help="prepare: also the real vLLM engine's wheelhouse (.lab/engine-wheelhouse)")
    model = parser.add_argument_group("seed-model")
    model.add_argument("--node", default=topology(2).head.name, help="the node whose cache gets the model (default %(default)s)")
    model.add_argument("--repo", default="sparkops-lab/tiny-moe", help="the repo id it is cached as (default %(default)s)")
    model.add_argument("--size", default="40MB", help="about how many bytes its files total: 40MB, 1GB, 1GiB (default %(default)s)")
    model.add_argument("--shards", type=int, default=4, help="safetensors shards (default %(default)s)")
    model.add_argument("--cache-dir", default=hf_model.NODE_HUB_CACHE, help="the hub cache in the node (default %(default)s)")
    model.add_argument("--revision", default="main", help="the branch or tag naming the snapshot (default %(default)s)")
    model.add_argument("--seed", type=int, default=0, help="seed of the random weights (default %(default)s)")
    model.add_argument("--dtype", choices=hf_model.DTYPES, default="BF16", help="weight dtype (default %(default)s)")
    model.add_argument("--no-store", action="store_true", help="build in a temporary folder instead of reusing .lab/models/")
    hub = parser.add_argument_group("serve-hub (with --node, --repo, --size, --shards)")
    hub.add_argument("--port", type=int, default=8081, help="the stand-in's port on the node's 127.0.0.1 (default %(default)s)")
    hub.add_argument("--token-file", help="a file on this machine holding the token that gates the repo (default: not gated)")
    args = parser.parse_args(argv)
    try:
        if args.command == "image":
            print(node_image.ensure_image())
        elif args.command == "up":
            up(args.nodes)
        elif args.command == "down":
            down(args.nodes)
        elif args.command == "prepare":
            with prepare_lock():  # scenarios side by side (make test's lanes) build the image and wheelhouses once
                node_image.ensure_image()
                wheelhouse.ensure_wheelhouse(STATE / "wheelhouse")
                if args.engine:
                    engine_wheelhouse.ensure_engine_wheelhouse(STATE / "engine-wheelhouse")
                networks_up()
        elif args.command == "release":
            if os.environ.get("SPARKOPS_LAB_KEEP_NETWORKS"):
                log("kept the lab networks (SPARKOPS_LAB_KEEP_NETWORKS: make test releases them after its last stage)")
            else:
                networks_down()
        elif args.command == "endpoint":
            endpoint(args.nodes)
        elif args.command == "authorize":
            authorize(args.names)
        elif args.command == "seed-model":
            seed_model(args)
        elif args.command == "serve-hub":
            serve_hub(args)
        else:
            status(topology(2).name)
    except (LabError, ValueError) as exc:
        print(f"spark-lab: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
