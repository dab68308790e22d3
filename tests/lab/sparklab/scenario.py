"""What the Molecule scenarios' tests share: a lab node, a project playbook run on the scenario's inventory and its
recap, a unit's property, a program's journal, waiting for a condition, and whether the head's API serves a chat
completion (what a user gets, not only an open port)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
import typing as t
from dataclasses import dataclass
from pathlib import Path

import yaml

PROJECT = Path(__file__).resolve().parents[3]


def node(name: str) -> t.Any:
    """A lab node (a podman container) as a testinfra host. Inside ``molecule verify``, where the scenario's inventory
    reaches it over ssh (a worker through the head): over that ssh, multiplexed through the control sockets of
    Molecule's ansible.cfg, about 0.01 s of CPU a command against 0.17 s for ``podman exec`` (measured on the lab).
    Otherwise (an inventory on podman's connection, which testinfra does not take over, or none): podman exec."""
    import testinfra  # type: ignore[import-untyped]  # pylint: disable=import-outside-toplevel
    from testinfra.utils.ansible_runner import AnsibleRunner  # type: ignore[import-untyped]  # pylint: disable=import-outside-toplevel

    inventory = os.environ.get("MOLECULE_INVENTORY_FILE")
    over_ssh = AnsibleRunner.get_runner(inventory).get_host(name) if inventory else None
    return over_ssh if over_ssh is not None else testinfra.get_host(f"podman://{name}")


def playbook(path: str, *args: str, command: str = "ansible-playbook", env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``command`` (ansible-playbook PROJECT/path, or ansible with path a host pattern) on $MOLECULE_INVENTORY_FILE
    with the project's collections (and ``env`` added to the environment), output captured."""
    target = str(PROJECT / path) if command == "ansible-playbook" else path
    return subprocess.run(
        [command, "-i", os.environ["MOLECULE_INVENTORY_FILE"], target, *args],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "ANSIBLE_COLLECTIONS_PATH": str(PROJECT / ".collections"), "ANSIBLE_FORCE_COLOR": "0", **(env or {})},
    )


def role_var(role: str, name: str) -> t.Any:
    """A role's variable as the role writes it (its vars/main.yml, else its defaults/main.yml): the tests read the
    paths the role installs from it instead of copying them."""
    for folder in ("vars", "defaults"):
        values = yaml.safe_load((PROJECT / "roles" / role / folder / "main.yml").read_text()) or {}
        if name in values:
            return values[name]
    raise KeyError(f"roles/{role}: no variable {name} in vars/main.yml or defaults/main.yml")


def recap(run: subprocess.CompletedProcess[str]) -> dict[str, dict[str, int]]:
    """The PLAY RECAP's counts by host: {"host": {"ok": 3, "changed": 0, ...}}."""
    found = re.findall(r"^(\S+)\s+:\s+(ok=.*)$", run.stdout, re.MULTILINE)
    return {host: {key: int(value) for key, value in re.findall(r"(\w+)=(\d+)", counts)} for host, counts in found}


def tail(run: subprocess.CompletedProcess[str], chars: int = 3000) -> str:
    """The end of a run's output, for an assertion's message."""
    return run.stdout[-chars:] + run.stderr[-chars // 2 :]


def unit_property(host: t.Any, unit: str, prop: str) -> str:
    """One property of a systemd unit on a node (``systemctl show --value``)."""
    return str(host.check_output(f"systemctl show --property {prop} --value {unit}"))


# The engine's venv on every node (vllm_serve_venv's default: the cluster plan's ray_venv, whatever the backend).
ENGINE_PYTHON = "/opt/sparkops/ray/bin/python"


def installed_vllm(name: str) -> str:
    """The vLLM a node's engine venv holds, as its metadata says (the lab's CPU builds carry "+cpu")."""
    return str(node(name).check_output(f"{ENGINE_PYTHON} -c 'import importlib.metadata as m; print(m.version(\"vllm\"))'"))


def host_time(host: t.Any) -> str:
    """The node's clock as journalctl's --since reads it."""
    return str(host.check_output("date '+%Y-%m-%d %H:%M:%S'"))


def journal(host: t.Any, identifier: str, since: str) -> str:
    """A program's own journal lines (its SyslogIdentifier, not systemd's lines about its unit) since ``since``."""
    return str(host.check_output(f"journalctl --identifier {identifier} --since '{since}' --no-pager --output cat"))


def wait_until(what: t.Callable[[], bool], seconds: float, step: float = 0.5) -> bool:
    """True as soon as ``what()`` is, asking every ``step`` seconds; its last answer after ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if what():
            return True
        time.sleep(step)
    return what()


@dataclass(frozen=True)
class Api:
    """The head's OpenAI-compatible API as a user reaches it."""

    address: str
    api_key: str
    model: str
    port: int = 8000

    @classmethod
    def from_env(cls, prefix: str = "SERVE_LAB") -> Api:
        """The scenario's API from its verifier environment: the head's management address (RAY_LAB_HEAD_MGMT_IP, or
        <prefix>_HEAD_MGMT_IP), <prefix>_API_KEY and <prefix>_MODEL."""
        address = os.environ.get(f"{prefix}_HEAD_MGMT_IP") or os.environ["RAY_LAB_HEAD_MGMT_IP"]
        return cls(address, os.environ[f"{prefix}_API_KEY"], os.environ[f"{prefix}_MODEL"])

    def serves(self, timeout: float = 5) -> bool:
        """A chat completion with at least one token came back (any error: False)."""
        import openai  # pylint: disable=import-outside-toplevel  # only the scenarios' tests have it

        try:
            client = openai.OpenAI(base_url=f"http://{self.address}:{self.port}/v1", api_key=self.api_key, timeout=timeout, max_retries=0)
            reply = client.chat.completions.create(model=self.model, messages=[{"role": "user", "content": "Say hello."}], max_tokens=4)
            return bool(reply.usage and reply.usage.completion_tokens > 0)
        except openai.OpenAIError:
            return False

    def serves_within(self, seconds: float, timeout: float = 10) -> bool:
        """:meth:`serves` (each try up to ``timeout`` seconds) true within ``seconds``, trying every 2 s: vLLM back after
        a reboot or a rollback, through its start gate once Ray is."""
        return wait_until(lambda: self.serves(timeout=timeout), seconds, step=2)


def module_result(host: str, module: str, args: dict[str, t.Any]) -> dict[str, t.Any]:
    """An ad-hoc ``ansible <host> -m <module>``'s result (its JSON after " => "), failed or not."""
    run = playbook(host, "-m", module, "-a", json.dumps(args), command="ansible")
    assert " => " in run.stdout, run.stdout + run.stderr
    return dict(json.loads(run.stdout.split(" => ", 1)[1]))
