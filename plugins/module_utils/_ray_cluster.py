# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Ask a Ray installation for its versions and its cluster's nodes, and judge whether the cluster is complete.

The module ``ray_cluster_info`` runs :data:`SCRIPT` with the Ray interpreter on the managed host (or inside the
Ray container) and hands the output to the pure functions here, so that everything but the process call is
unit-testable.

Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
"""

from __future__ import annotations

import json
import time
import typing as t
from collections import Counter
from dataclasses import dataclass

DEFAULT_PYTHON = "/opt/sparkops/ray/bin/python"
CONTAINER_PYTHON = "python3"
HEAD_RESOURCE = "node:__internal_head__"
STDERR_TAIL_LINES = 15

# Runs under the Ray interpreter (any Python 3 with ray installed), so stdlib only.
# It prints exactly one JSON object on stdout: Ray and the C++ core worker may write to fd 1 while connecting,
# so fd 1 is pointed at stderr until the result is written to a saved copy of the original stdout.
# ray.init() against an unreachable GCS makes RAY_NUM_REDIS_GET_RETRIES (20) attempts of about 40 s each (C++
# connect, pubsub and cluster-ID timeouts) before it raises; RAY_gcs_server_port_wait_time_s=1 makes it one
# attempt, so that one look at a cluster that is not up yet fails in under a minute and the module's own wait
# loop (timeout, poll_interval) decides how long to keep trying.
SCRIPT = r"""
import json, logging, os, platform, sys

args = json.loads(sys.argv[1])
os.environ.setdefault("RAY_gcs_server_port_wait_time_s", "1")
out = {"python_version": platform.python_version(), "python_executable": sys.executable}
real_stdout = os.dup(1)
os.dup2(2, 1)


def emit(rc):
    sys.stdout.flush()
    os.write(real_stdout, (json.dumps(out, default=str, sort_keys=True) + "\n").encode("utf-8"))
    sys.exit(rc)


try:
    import ray
except Exception as exc:
    out["import_error"] = "%s: %s" % (type(exc).__name__, exc)
    emit(0)
out["ray_version"] = getattr(ray, "__version__", None)
address = args.get("address")
if address:
    kwargs = {"address": address, "logging_level": logging.ERROR, "log_to_driver": False, "configure_logging": False}
    if args.get("node_ip_address"):
        kwargs["_node_ip_address"] = args["node_ip_address"]
    try:
        ray.init(**kwargs)
        out["nodes"] = ray.nodes()
    except BaseException as exc:
        out["connect_error"] = "%s: %s" % (type(exc).__name__, exc)
    finally:
        try:
            ray.shutdown()
        except BaseException:
            pass
emit(0)
"""


class RayClusterError(ValueError):
    """The Ray interpreter could not be run, Ray is not importable, or its answer makes no sense."""


@dataclass(frozen=True)
class Probe:
    """One run of :data:`SCRIPT`: the versions, and the raw ``ray.nodes()`` list or why it could not be had."""

    ray_version: str
    python_version: str
    nodes: list[dict[str, t.Any]] | None = None
    connect_error: str | None = None
    stderr: str = ""

    @property
    def reached(self) -> bool:
        return self.nodes is not None


@dataclass(frozen=True)
class Evaluation:
    """The cluster measured against the expected nodes."""

    nodes: list[dict[str, t.Any]]
    ready: bool
    missing: list[str]
    problems: list[str]
    unexpected_nodes: list[dict[str, t.Any]]
    alive_nodes: int
    total_gpus: float


@dataclass(frozen=True)
class WaitOutcome:
    """What :func:`wait_for_cluster` saw last; ``failure`` is the message to fail with, None when ready."""

    probe: Probe
    evaluation: Evaluation | None
    failure: str | None
    attempts: int


def resolve_python(python: str | None, container: str | None) -> str:
    """The interpreter to run: ``python`` when given, else ``python3`` in a container or the Ray venv on the host."""
    if python:
        return python
    return CONTAINER_PYTHON if container else DEFAULT_PYTHON


def script_args(address: str | None = None, node_ip_address: str | None = None) -> str:
    """The single JSON argument :data:`SCRIPT` reads from ``sys.argv[1]``."""
    return json.dumps({"address": address or None, "node_ip_address": node_ip_address or None}, sort_keys=True)


def auth_environment(token_file: str | None) -> dict[str, str]:
    """The environment that makes a Ray client use the cluster's token (Ray 2.52+ token mode): the mode and the path
    of the file that holds it, never the token itself (the file is read by Ray's C++ token loader)."""
    if not token_file:
        return {}
    return {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": token_file}


def build_argv(
    python: str,
    address: str | None = None,
    node_ip_address: str | None = None,
    container: str | None = None,
    docker: str | None = None,
    environment: t.Mapping[str, str] | None = None,
) -> list[str]:
    """The argv that runs :data:`SCRIPT`, prefixed with ``docker exec <container>`` when ``container`` is set (with
    ``environment`` as ``--env`` options there; on the host the caller passes it to the process)."""
    argv = [python, "-c", SCRIPT, script_args(address, node_ip_address)]
    if container:
        if not docker:
            raise RayClusterError(f"container {container!r} is set but no docker binary was given")
        options = [word for name, value in sorted((environment or {}).items()) for word in ("--env", f"{name}={value}")]
        argv = [docker, "exec", *options, container, *argv]
    return argv


def stderr_tail(stderr: str, lines: int = STDERR_TAIL_LINES) -> str:
    """The last ``lines`` non-empty lines of ``stderr``, joined by newlines."""
    kept = [line.rstrip() for line in (stderr or "").splitlines() if line.strip()]
    return "\n".join(kept[-lines:])


def _last_json_object(stdout: str) -> t.Any:
    text = (stdout or "").strip()
    if not text:
        raise ValueError("empty output")
    try:
        return json.loads(text)
    except ValueError:
        # Tolerate noise before the result: the result is always the last line.
        return json.loads(text.splitlines()[-1])


def script_result(rc: int, stdout: str, stderr: str, runner: str) -> dict[str, t.Any]:
    """The JSON object a Ray script run by ``runner`` printed last, or :class:`RayClusterError` saying why there is
    none (Ray not importable, or no JSON: the stderr tail)."""
    tail = stderr_tail(stderr)
    try:
        data = _last_json_object(stdout)
    except ValueError:
        data = None
    if not isinstance(data, dict):
        if "ModuleNotFoundError" in tail or "ImportError" in tail:
            last = tail.splitlines()[-1] if tail else ""
            raise RayClusterError(f"ray is not importable by {runner}: {last}")
        detail = f"stderr: {tail}" if tail else f"stdout: {(stdout or '').strip()[-500:]!r}"
        raise RayClusterError(f"running {runner} did not print the expected JSON object (rc={rc}); {detail}")
    if data.get("import_error"):
        raise RayClusterError(f"ray is not importable by {runner}: {data['import_error']}")
    return data


def parse_output(rc: int, stdout: str, stderr: str, python: str, where: str = "") -> Probe:
    """Turn one run of :data:`SCRIPT` into a :class:`Probe`, or raise :class:`RayClusterError` saying why not.

    ``python`` names the interpreter and ``where`` (for example ``" in container ray"``) where it ran, for messages.
    An unreachable cluster is not an error here: the probe carries ``connect_error`` so the caller can wait.
    """
    runner = f"{python}{where}"
    data = script_result(rc, stdout, stderr, runner)
    ray_version = data.get("ray_version")
    python_version = data.get("python_version")
    if not isinstance(ray_version, str) or not isinstance(python_version, str):
        raise RayClusterError(f"{runner} reported no ray_version or python_version: {data!r}")
    raw_nodes = data.get("nodes")
    if raw_nodes is not None and not (isinstance(raw_nodes, list) and all(isinstance(n, dict) for n in raw_nodes)):
        raise RayClusterError(f"{runner} reported nodes that are not a list of objects: {raw_nodes!r}")
    connect_error = data.get("connect_error")
    return Probe(
        ray_version=ray_version,
        python_version=python_version,
        nodes=raw_nodes,
        connect_error=str(connect_error) if connect_error else None,
        stderr=stderr or "",
    )


def _number(value: t.Any) -> float:
    if isinstance(value, bool):
        return 0.0
    try:
        return float(value)
    except (TypeError, ValueError):
        return 0.0


def normalise_node(raw: t.Mapping[str, t.Any]) -> dict[str, t.Any]:
    """One ``ray.nodes()`` entry in the module's shape."""
    resources_raw = raw.get("Resources") or {}
    resources = {str(k): v for k, v in resources_raw.items()} if isinstance(resources_raw, t.Mapping) else {}
    state = raw.get("state")
    alive = bool(raw.get("Alive", raw.get("alive", state == "ALIVE")))
    if state not in ("ALIVE", "DEAD"):
        state = "ALIVE" if alive else "DEAD"
    return {
        "node_id": str(raw.get("NodeID") or ""),
        "ip": str(raw.get("NodeManagerAddress") or ""),
        "alive": alive,
        "state": state,
        "is_head": HEAD_RESOURCE in resources,
        "hostname": str(raw.get("NodeManagerHostname") or ""),
        "resources": resources,
        "gpus": _number(resources.get("GPU", 0)),
    }


def normalise_nodes(raw_nodes: t.Iterable[t.Mapping[str, t.Any]]) -> list[dict[str, t.Any]]:
    """All nodes, normalised: alive before dead, the head first, then by IP."""
    nodes = [normalise_node(raw) for raw in raw_nodes]
    return sorted(nodes, key=lambda n: (not n["alive"], not n["is_head"], n["ip"], n["node_id"]))


def format_gpus(value: float) -> str:
    """``1.0`` as ``1``, ``0.5`` as ``0.5``."""
    return str(int(value)) if float(value).is_integer() else str(value)


def describe_alive(nodes: t.Sequence[t.Mapping[str, t.Any]]) -> str:
    """E.g. ``2 alive nodes: 192.168.200.11 (head, 1 GPU), 192.168.200.12 (0 GPU)``."""
    alive = [n for n in nodes if n["alive"]]
    if not alive:
        return "no alive nodes"
    parts = [f"{n['ip']} ({'head, ' if n['is_head'] else ''}{format_gpus(n['gpus'])} GPU)" for n in alive]
    noun = "node" if len(alive) == 1 else "nodes"
    return f"{len(alive)} alive {noun}: {', '.join(parts)}"


def evaluate(
    nodes: t.Sequence[t.Mapping[str, t.Any]],
    expected_nodes: t.Mapping[str, str] | None = None,
    expected_gpus_per_node: float = 0.0,
) -> Evaluation:
    """Measure normalised ``nodes`` against ``expected_nodes`` (inventory host -> node IP).

    Ready when every expected IP has an ALIVE node with at least ``expected_gpus_per_node`` GPUs. ``problems``
    says, per missing host in ``expected_nodes`` order, why it is missing. Alive nodes whose IP is not expected
    are listed in ``unexpected_nodes`` without making the cluster unready.
    """
    node_list = [dict(n) for n in nodes]
    alive = [n for n in node_list if n["alive"]]
    expected = {str(host): str(ip) for host, ip in (expected_nodes or {}).items()}
    missing: list[str] = []
    problems: list[str] = []
    for host, ip in expected.items():
        here = [n for n in node_list if n["ip"] == ip]
        alive_here = [n for n in here if n["alive"]]
        if not here:
            problems.append(f"{host} ({ip}) has not joined")
        elif not alive_here:
            problems.append(f"{host} ({ip}) is DEAD")
        else:
            best = max(n["gpus"] for n in alive_here)
            if best >= expected_gpus_per_node:
                continue
            problems.append(f"{host} ({ip}) is alive with {format_gpus(best)} GPU, expected {format_gpus(expected_gpus_per_node)}")
        missing.append(host)
    expected_ips = set(expected.values())
    unexpected = [n for n in alive if n["ip"] not in expected_ips] if expected else []
    return Evaluation(
        nodes=node_list,
        ready=not missing,
        missing=missing,
        problems=problems,
        unexpected_nodes=unexpected,
        alive_nodes=len(alive),
        total_gpus=float(sum(n["gpus"] for n in alive)),
    )


def format_seconds(value: float) -> str:
    return format_gpus(round(float(value), 1))


def not_ready_message(address: str, evaluation: Evaluation, timeout: float) -> str:
    """E.g. ``Ray cluster at A: after 120s, spark-worker2 (...) has not joined. Last state seen: 1 alive node: ...``."""
    after = f"after {format_seconds(timeout)}s, " if timeout > 0 else ""
    return f"Ray cluster at {address}: {after}{'; '.join(evaluation.problems)}. Last state seen: {describe_alive(evaluation.nodes)}"


def unreachable_message(address: str, probe: Probe, timeout: float, runner: str) -> str:
    """The cluster could not be reached at all: say so, with the connection error and the script's stderr tail."""
    after = f" after {format_seconds(timeout)}s" if timeout > 0 else ""
    message = f"Ray cluster at {address}: cannot connect{after} (ray.init by {runner}): {probe.connect_error}"
    tail = stderr_tail(probe.stderr)
    if tail:
        message += f"; stderr tail:\n{tail}"
    return message


def wait_for_cluster(
    probe: t.Callable[[], Probe],
    address: str,
    expected_nodes: t.Mapping[str, str] | None = None,
    expected_gpus_per_node: float = 0.0,
    timeout: float = 0.0,
    poll_interval: float = 2.0,
    runner: str = DEFAULT_PYTHON,
    clock: t.Callable[[], float] | None = None,
    sleep: t.Callable[[float], t.Any] | None = None,
) -> WaitOutcome:
    """Call ``probe`` until the cluster is reachable and meets the expectations, or ``timeout`` seconds passed.

    ``timeout`` 0 looks once. :class:`RayClusterError` from ``probe`` (Ray missing, garbage output) is not retried.
    ``clock`` and ``sleep`` (default: ``time.monotonic`` and ``time.sleep``) are injectable so the loop can be
    tested without waiting.
    """
    clock = clock or time.monotonic
    sleep = sleep or time.sleep
    start = clock()
    deadline = start + max(0.0, float(timeout))
    attempts = 0
    while True:
        attempts += 1
        result = probe()
        evaluation = None
        if result.nodes is not None:
            evaluation = evaluate(normalise_nodes(result.nodes), expected_nodes, expected_gpus_per_node)
            if evaluation.ready:
                return WaitOutcome(result, evaluation, None, attempts)
        now = clock()
        if now >= deadline:
            break
        sleep(max(0.0, min(float(poll_interval), deadline - now)))
    if evaluation is None:
        return WaitOutcome(result, None, unreachable_message(address, result, timeout, runner), attempts)
    return WaitOutcome(result, evaluation, not_ready_message(address, evaluation, timeout), attempts)


def version_mismatches(per_host: t.Mapping[str, t.Mapping[str, t.Any]]) -> list[str]:
    """Name every host whose Ray or Python version differs from the majority (ties: the first host's).

    ``per_host`` maps host names to ``{"ray_version": ..., "python_version": ...}``. Versions compare as exact
    strings: Ray refuses to join a node whose Python differs even in the patch release (3.11.2 vs 3.11.7).
    Returns an empty list when all agree.
    """
    messages: list[str] = []
    for key, label in (("ray_version", "Ray"), ("python_version", "Python")):
        values: dict[str, str] = {}
        for host, facts in per_host.items():
            value = facts.get(key) if isinstance(facts, t.Mapping) else None
            if value is None or str(value).strip() == "":
                messages.append(f"{label} version of {host} is unknown")
            else:
                values[str(host)] = str(value).strip()
        if not values:
            continue
        counts = Counter(values.values())
        # max() keeps the first of equal counts and Counter keeps first-seen order, so ties go to the first host.
        reference = max(counts, key=lambda v: counts[v])
        reference_host = next(host for host, value in values.items() if value == reference)
        messages.extend(f"{label} {value} on {host} differs from {reference} on {reference_host}" for host, value in values.items() if value != reference)
    return messages


# --- Tasks pinned to nodes -------------------------------------------------------------------------------------------

# Runs under the Ray interpreter on a node of the cluster (the head), stdlib and ray only, and prints one JSON object
# as SCRIPT does. It connects to the cluster, reads the module utils named in its arguments from `module_dir` (the
# collection's copy where it runs), and runs `entry` ("package.module:function") of them once on each chosen node: one
# Ray task per node, pinned to it (NodeAffinitySchedulingStrategy, soft=False: never elsewhere), with num_cpus=0 and no
# GPU, so that it never competes with an engine's placement group, and no retries. The module sources travel with the
# task and are imported there from memory, so the nodes need nothing installed but Ray. The chosen nodes: the alive
# ones with a GPU or with an address in `include_ips`, less the head when `skip_head`. The tasks get `timeout` seconds;
# a watchdog thread prints what was gathered and ends the process after `deadline` seconds whatever Ray does.
NODE_TASK_SCRIPT = r"""
import json, logging, os, platform, sys, threading, time

args = json.loads(sys.argv[1])
os.environ.setdefault("RAY_gcs_server_port_wait_time_s", "1")
out = {"python_version": platform.python_version(), "python_executable": sys.executable, "alive": [], "results": []}
real_stdout = os.dup(1)
os.dup2(2, 1)
emitting = threading.Lock()


def emit(rc):
    emitting.acquire()
    for _ in range(3):
        try:
            text = json.dumps(out, default=str, sort_keys=True)
            break
        except RuntimeError:  # the main thread changed `out` while the watchdog read it
            time.sleep(0.05)
    else:
        text = json.dumps({k: out.get(k) for k in ("python_version", "python_executable", "ray_version", "deadline_error")}, default=str)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:
        pass
    os.write(real_stdout, (text + "\n").encode("utf-8"))
    os._exit(rc)


def watchdog():
    time.sleep(float(args["deadline"]))
    out["deadline_error"] = "no answer within %gs" % float(args["deadline"])
    emit(0)


threading.Thread(target=watchdog, daemon=True).start()


def run_on_node(sources, entry, spec):
    # Runs in a Ray worker on the chosen node: import the shipped module utils from memory, call the entry point.
    import importlib, importlib.abc, importlib.util, socket, sys

    class Shipped(importlib.abc.MetaPathFinder, importlib.abc.Loader):
        def __init__(self, sources):
            self.sources = sources
            self.packages = set()
            for name in sources:
                parts = name.split(".")
                self.packages.update(".".join(parts[:i]) for i in range(1, len(parts)))

        def find_spec(self, name, path=None, target=None):
            if name in self.sources or name in self.packages:
                return importlib.util.spec_from_loader(name, self, origin="<shipped %s>" % name, is_package=name in self.packages)
            return None

        def create_module(self, spec):
            return None

        def exec_module(self, module):
            source = self.sources.get(module.__name__)
            if source is not None:
                exec(compile(source, module.__spec__.origin, "exec"), module.__dict__)

    finder = Shipped(sources)
    names = set(finder.sources) | finder.packages
    saved = {name: sys.modules.pop(name) for name in list(sys.modules) if name in names}
    sys.meta_path.insert(0, finder)
    try:
        module_name, _, function = entry.partition(":")
        value = getattr(importlib.import_module(module_name), function)(spec)
    finally:
        sys.meta_path.remove(finder)
        for name in list(sys.modules):
            if name in names:
                del sys.modules[name]
        sys.modules.update(saved)
    return {"value": value, "hostname": socket.gethostname()}


def last_line(exc):
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return "%s: %s" % (type(exc).__name__, lines[-1] if lines else exc)


try:
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
except Exception as exc:
    out["import_error"] = "%s: %s" % (type(exc).__name__, exc)
    emit(0)
out["ray_version"] = getattr(ray, "__version__", None)
try:
    sources = {}
    for name in args["modules"]:
        with open(os.path.join(args["module_dir"], name + ".py"), encoding="utf-8") as f:
            sources[args["package"] + "." + name] = f.read()
except OSError as exc:
    out["setup_error"] = "cannot read the module utils to send: %s" % exc
    emit(0)
kwargs = {"address": args["address"], "logging_level": logging.ERROR, "log_to_driver": False, "configure_logging": False}
try:
    ray.init(**kwargs)
except BaseException as exc:
    out["connect_error"] = "%s: %s" % (type(exc).__name__, exc)
    emit(0)
try:
    include = set(args.get("include_ips") or [])
    targets = []
    for node in ray.nodes():
        resources = node.get("Resources") or {}
        record = {
            "node_id": str(node.get("NodeID") or ""),
            "ip": str(node.get("NodeManagerAddress") or ""),
            "hostname": str(node.get("NodeManagerHostname") or ""),
            "is_head": "node:__internal_head__" in resources,
            "gpus": float(resources.get("GPU") or 0),
        }
        if not node.get("Alive", node.get("alive")):
            continue
        out["alive"].append(record)
        if record["is_head"] and args.get("skip_head"):
            continue
        if record["gpus"] > 0 or record["ip"] in include:
            targets.append(record)
    refs = {}
    if targets:
        task = ray.remote(run_on_node)
        shipped = ray.put(sources)
        entry = "%s.%s" % (args["package"], args["entry"])
        for record in targets:
            strategy = NodeAffinitySchedulingStrategy(node_id=record["node_id"], soft=False)
            options = {"num_cpus": 0, "num_gpus": 0, "max_retries": 0, "scheduling_strategy": strategy, "name": "sparkops-node-check"}
            refs[record["node_id"]] = task.options(**options).remote(shipped, entry, args["spec"])
        ready, _pending = ray.wait(list(refs.values()), num_returns=len(refs), timeout=float(args["timeout"]))
        ready = set(ready)
    for record in targets:
        ref = refs[record["node_id"]]
        result = dict(record)
        if ref not in ready:
            result["state"] = "timeout"
            try:
                ray.cancel(ref, force=True)
            except BaseException:
                pass
        else:
            try:
                answer = ray.get(ref)
                result.update(state="done", value=answer["value"], task_hostname=answer["hostname"])
            except BaseException as exc:
                result.update(state="failed", error=last_line(exc))
        out["results"].append(result)
except BaseException as exc:
    out["error"] = last_line(exc)
finally:
    try:
        ray.shutdown()
    except BaseException:
        pass
emit(0)
"""


@dataclass(frozen=True)
class NodeTaskResult:
    """What the task pinned to one node gave: ``state`` is ``done`` (``value`` is what it returned), ``failed``
    (``error``: it raised, or Ray could not run it there) or ``timeout`` (no answer in time)."""

    node_id: str
    ip: str
    hostname: str
    state: str
    value: t.Any = None
    error: str = ""


@dataclass(frozen=True)
class NodeTaskRun:
    """One run of :data:`NODE_TASK_SCRIPT`: the alive nodes it saw (``node_id``, ``ip``, ``hostname``, ``is_head``,
    ``gpus``), a result per chosen node, and ``failure`` when the run could not complete (no connection, an error, its
    deadline)."""

    ray_version: str
    python_version: str
    alive: list[dict[str, t.Any]]
    results: list[NodeTaskResult]
    failure: str | None = None
    stderr: str = ""

    @property
    def head_ips(self) -> list[str]:
        return [str(node.get("ip") or "") for node in self.alive if node.get("is_head")]


def node_task_args(
    address: str | None,
    module_dir: str,
    package: str,
    modules: t.Sequence[str],
    entry: str,
    spec: t.Any,
    timeout: float,
    deadline: float,
    include_ips: t.Iterable[str] = (),
    skip_head: bool = True,
) -> str:
    """The single JSON argument :data:`NODE_TASK_SCRIPT` reads: ``entry`` is ``module:function`` within ``package``,
    ``modules`` the names (no ``.py``) of the files in ``module_dir`` to send, ``spec`` the function's one argument."""
    return json.dumps(
        {
            "address": address or "auto",
            "module_dir": module_dir,
            "package": package,
            "modules": list(modules),
            "entry": entry,
            "spec": spec,
            "timeout": float(timeout),
            "deadline": float(deadline),
            "include_ips": sorted(set(include_ips)),
            "skip_head": bool(skip_head),
        },
        sort_keys=True,
    )


def build_node_task_argv(python: str, arguments: str) -> list[str]:
    """The argv that runs :data:`NODE_TASK_SCRIPT` with ``arguments`` (from :func:`node_task_args`)."""
    return [python, "-c", NODE_TASK_SCRIPT, arguments]


def parse_node_task_output(rc: int, stdout: str, stderr: str, python: str) -> NodeTaskRun:
    """Turn one run of :data:`NODE_TASK_SCRIPT` into a :class:`NodeTaskRun`, or raise :class:`RayClusterError` when
    it printed no result or Ray is not importable."""
    data = script_result(rc, stdout, stderr, python)
    failure = None
    for key in ("setup_error", "connect_error", "error", "deadline_error"):
        if data.get(key):
            failure = str(data[key])
            break
    alive = [dict(node) for node in data.get("alive") or [] if isinstance(node, dict)]
    results: list[NodeTaskResult] = []
    for raw in data.get("results") or []:
        if not isinstance(raw, dict):
            raise RayClusterError(f"{python} reported a node result that is not an object: {raw!r}")
        results.append(
            NodeTaskResult(
                node_id=str(raw.get("node_id") or ""),
                ip=str(raw.get("ip") or ""),
                hostname=str(raw.get("hostname") or ""),
                state=str(raw.get("state") or "failed"),
                value=raw.get("value"),
                error=str(raw.get("error") or ""),
            )
        )
    return NodeTaskRun(
        ray_version=str(data.get("ray_version") or ""),
        python_version=str(data.get("python_version") or ""),
        alive=alive,
        results=results,
        failure=failure,
        stderr=stderr or "",
    )
