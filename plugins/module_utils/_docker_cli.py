# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Find and remove docker containers through the docker CLI (not the Engine API or the Python Docker SDK).

Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.

The hosts may lack the Python Docker SDK, and the lab uses a docker CLI stand-in, so everything goes through the
``docker`` command, always as an argument list:

* ``docker ps -a --no-trunc --format '{{json .}}'`` lists the containers, one JSON object a line
  (:func:`parse_ps_output`);
* a requested name or id is matched exactly (:func:`resolve`): the full id, then the name; never an id
  prefix as the docker daemon would, so that a name no longer there cannot take another container whose id begins
  like it;
* ``docker container inspect`` names a running container's main process (:meth:`DockerCli.main_pids`), which
  confirms that a process whose cgroup is named like the container's is the container's;
* a running container gets ``docker stop -t N`` (graceful), then every container ``docker rm -f`` (never ``-v``:
  volumes and images stay); a last listing confirms they are gone (:func:`remove_containers`).
"""

from __future__ import annotations

import json
import re
import time
import typing as t
from dataclasses import dataclass, field

# States in which the container has a process that `docker stop` should end gracefully first.
RUNNING_STATES = frozenset({"running", "paused", "restarting"})
PS_ARGS = ("ps", "-a", "--no-trunc", "--format", "{{json .}}")
INSPECT_ARGS = ("container", "inspect")
FULL_ID = re.compile(r"^[0-9a-f]{64}$")
# How long the last listing may wait for a container that docker is still removing (e.g. a --rm container whose
# automatic removal raced our `docker rm -f`).
CONFIRM_TIMEOUT = 10.0
CONFIRM_INTERVAL = 0.5

Runner = t.Callable[[list[str]], tuple[int, str, str]]


class DockerError(Exception):
    """docker failed, its output cannot be read, or a reference is empty; the message names the container."""


@dataclass(frozen=True)
class Container:
    """One line of ``docker ps -a --no-trunc --format '{{json .}}'``."""

    id: str
    names: tuple[str, ...]
    image: str
    state: str
    status: str = ""
    labels: dict[str, str] = field(default_factory=dict, compare=False)

    @property
    def name(self) -> str:
        """The first name, or the short id when the container has none."""
        return self.names[0] if self.names else self.short_id

    @property
    def short_id(self) -> str:
        return self.id[:12]

    @property
    def running(self) -> bool:
        return self.state in RUNNING_STATES

    def describe(self) -> str:
        """``name (short id)``, for messages."""
        return f"{self.name} ({self.short_id})"

    def as_dict(self) -> dict[str, str]:
        return {"id": self.id, "name": self.name, "image": self.image, "state": self.state}

    def diff_line(self) -> str:
        return f"{self.name} {self.id} {self.image} {self.state}"


def _names(value: t.Any) -> tuple[str, ...]:
    """``Names`` is comma-separated text in docker's output (a list in podman's); names lose a leading ``/``."""
    raw = value.split(",") if isinstance(value, str) else list(value or [])
    return tuple(name for name in (str(n).strip().lstrip("/") for n in raw) if name)


def parse_labels(value: t.Any) -> dict[str, str]:
    """``Labels`` is ``k=v,k2=v2`` text in docker's output (a mapping in podman's).

    A part without ``=`` belongs to the previous value (label values may hold commas).
    """
    if isinstance(value, t.Mapping):
        return {str(k): str(v) for k, v in value.items()}
    labels: dict[str, str] = {}
    last: str | None = None
    for part in str(value or "").split(","):
        key, sep, val = part.partition("=")
        if sep and key.strip():
            last = key.strip()
            labels[last] = val
        elif last is not None:
            labels[last] += "," + part
    return labels


def _state_from_status(status: str) -> str:
    """The state for docker versions whose ``ps`` lacks ``State``, from ``Status`` (``Up 2 hours``, ``Exited (0) ...``)."""
    lowered = status.lower()
    if lowered.startswith("up"):
        return "paused" if "(paused)" in lowered else "running"
    for state in ("exited", "created", "restarting", "removal in progress", "dead"):
        if lowered.startswith(state):
            return "removing" if state == "removal in progress" else state
    return "unknown"


def parse_ps_line(line: str) -> Container:
    """One JSON object of ``docker ps --format '{{json .}}'`` as a :class:`Container`."""
    try:
        data = json.loads(line)
    except ValueError as exc:
        raise DockerError(f"cannot read docker ps output line {line!r}: {exc}") from exc
    if not isinstance(data, dict):
        raise DockerError(f"cannot read docker ps output line {line!r}: not a JSON object")
    container_id = str(data.get("ID") or data.get("Id") or "").strip()
    if not container_id:
        raise DockerError(f"docker ps output line has no ID: {line!r}")
    status = str(data.get("Status") or "")
    state = data.get("State")
    if isinstance(state, dict):  # `docker inspect`-like shape: {"Status": "running", ...}
        state = state.get("Status")
    return Container(
        id=container_id,
        names=_names(data.get("Names")),
        image=str(data.get("Image") or ""),
        state=str(state).strip().lower() if state else _state_from_status(status),
        status=status,
        labels=parse_labels(data.get("Labels")),
    )


def parse_ps_output(text: str) -> list[Container]:
    """All containers of ``docker ps -a --no-trunc --format '{{json .}}'`` output; blank lines are skipped."""
    return [parse_ps_line(line) for line in (raw.strip() for raw in text.splitlines()) if line]


def resolve(containers: t.Sequence[Container], reference: str) -> Container | None:
    """The container ``reference`` names exactly, or None when none matches.

    The full id (any case), then the name (a leading ``/`` allowed). Unlike the docker daemon, an id prefix
    matches nothing: a name that is no longer there (``cafe``, an old short id) must not take another container.
    """
    ref = reference.strip()
    if not ref or ref == "/":
        raise DockerError(f"empty container reference {reference!r}")
    for container in containers:
        if container.id == ref.lower():
            return container
    name = ref.lstrip("/")
    for container in containers:
        if name in container.names:
            return container
    return None


def match(containers: t.Sequence[Container], references: t.Iterable[str]) -> tuple[list[Container], list[str]]:
    """The containers the references name (each once, in request order) and the references that match none."""
    found: dict[str, Container] = {}
    absent: list[str] = []
    for reference in references:
        container = resolve(containers, reference)
        if container is None:
            if reference not in absent:
                absent.append(reference)
        else:
            found.setdefault(container.id, container)
    return list(found.values()), absent


def _stderr(err: str, out: str) -> str:
    return (err.strip() or out.strip() or "no output").replace("\n", " | ")


class DockerCli:
    """The docker commands this collection runs, through ``run`` (``AnsibleModule.run_command``)."""

    def __init__(self, docker: str, run: Runner) -> None:
        self.docker = docker
        self._run = run

    def ps(self) -> list[Container]:
        argv = [self.docker, *PS_ARGS]
        rc, out, err = self._run(argv)
        if rc != 0:
            raise DockerError(f"docker ps -a failed (rc {rc}): {_stderr(err, out)}")
        return parse_ps_output(out)

    def main_pids(self, ids: t.Sequence[str]) -> dict[str, int]:
        """``docker container inspect <ids>``: each listed container's main process (``State.Pid``; 0 when it is not
        running), by full id. A container docker no longer knows is left out (docker says so on stderr, rc 1)."""
        if not ids:
            return {}
        rc, out, err = self._run([self.docker, *INSPECT_ARGS, *ids])
        try:
            found = json.loads(out) if out.strip() else []
        except ValueError:
            found = None
        if not isinstance(found, list) or (rc != 0 and not found and "no such" not in (err or out).lower()):
            raise DockerError(f"docker container inspect failed (rc {rc}): {_stderr(err, out)}")
        pids: dict[str, int] = {}
        for item in found:
            if not isinstance(item, dict) or not isinstance(item.get("Id"), str) or not isinstance(item.get("State"), dict):
                continue
            state = item["State"]
            pid = state.get("Pid")
            if isinstance(pid, int) and not isinstance(pid, bool):
                pids[item["Id"]] = pid if state.get("Running", True) else 0
        return pids

    def stop(self, container: Container, timeout: int) -> str | None:
        """``docker stop -t timeout <id>``; docker's stderr when it fails, else None."""
        rc, out, err = self._run([self.docker, "stop", "-t", str(timeout), container.id])
        return None if rc == 0 else f"docker stop -t {timeout} {container.describe()} failed (rc {rc}): {_stderr(err, out)}"

    def remove(self, container: Container) -> str | None:
        """``docker rm -f <id>`` (no ``-v``: volumes stay); docker's stderr when it fails, else None."""
        rc, out, err = self._run([self.docker, "rm", "-f", container.id])
        return None if rc == 0 else f"docker rm -f {container.describe()} failed (rc {rc}): {_stderr(err, out)}"


@dataclass
class RemoveResult:
    """What :func:`remove_containers` removed (or would remove), what was absent, and what failed."""

    removed: list[Container] = field(default_factory=list)
    absent: list[str] = field(default_factory=list)
    remaining: list[Container] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.removed)

    @property
    def diff(self) -> dict[str, str]:
        """Before: the requested containers that existed; after: those still there. One container a line."""
        before = self.removed + self.remaining
        return {"before": _lines(before), "after": _lines(self.remaining)}

    def as_dict(self) -> dict[str, t.Any]:
        return {"removed": [c.as_dict() for c in self.removed], "absent": list(self.absent), "diff": self.diff}


def _lines(containers: t.Iterable[Container]) -> str:
    return "".join(c.diff_line() + "\n" for c in containers)


def remove_containers(
    cli: DockerCli,
    references: t.Sequence[str],
    stop_timeout: int,
    check_mode: bool = False,
    clock: t.Callable[[], float] = time.monotonic,
    sleep: t.Callable[[float], None] = time.sleep,
    confirm_timeout: float = CONFIRM_TIMEOUT,
) -> RemoveResult:
    """Remove the containers ``references`` name: ``docker stop -t stop_timeout`` when running, then ``docker rm -f``.

    In check mode only lists and matches. A failing ``docker stop`` is followed by ``docker rm -f`` all the same;
    a container still listed afterwards (waiting up to ``confirm_timeout`` for one docker is removing) is a failure
    naming it with docker's stderr. Raises :class:`DockerError` when docker cannot list or a reference is empty.
    """
    if stop_timeout < 0:
        raise DockerError(f"stop_timeout must be 0 or more, not {stop_timeout}")
    targets, absent = match(cli.ps(), references)
    result = RemoveResult(absent=absent)
    if check_mode or not targets:
        result.removed = targets
        return result

    errors: dict[str, list[str]] = {}
    for container in targets:
        errs = errors.setdefault(container.id, [])
        if container.running:
            stop_error = cli.stop(container, stop_timeout)
            if stop_error is not None:
                errs.append(stop_error)
        rm_error = cli.remove(container)
        if rm_error is not None:
            errs.append(rm_error)

    deadline = clock() + confirm_timeout
    while True:
        present = {c.id: c for c in cli.ps()}
        still = [c for c in targets if c.id in present]
        if not still or clock() >= deadline:
            break
        sleep(CONFIRM_INTERVAL)

    for container in targets:
        if container.id in present:
            current = present[container.id]
            result.remaining.append(current)
            why = "; ".join(errors[container.id]) or "docker rm -f reported success"
            result.failures.append(f"container {current.describe()} is still there ({current.state}): {why}")
        else:
            result.removed.append(container)
            result.warnings.extend(f"{error}; the container is gone all the same" for error in errors[container.id])
    return result
