"""A job template of awx/job_templates.yml launched the way AWX launches it: through ansible-runner.

No AWX controller runs here, so this does what AWX 24.6.1 does between "Launch" and ansible-playbook, read in
ansible/awx at e21dd0a0933fd544d1fe2513c54fe41203775eb5 (file:line below), and nothing more:
- the launch: survey answers checked and merged with the template's extra vars and the survey's valid defaults
  (awx/main/models/mixins.py:154-345); a refused launch raises LaunchRefused naming the template and the fields,
  before anything runs;
- the project sync: the project's files at its revision (here: the checkout's tracked and unignored files) in
  ``project/``, and ``ansible-galaxy collection install -r collections/requirements.yml`` run in it
  (awx/playbooks/project_update.yml:234-280) into ``requirements_collections/``. Galaxy is not reachable here: only
  the requirements of ``type: dir`` (this collection) are installed; the pinned dependencies come from .collections,
  standing in for the execution environment's /usr/share/ansible/collections;
- the inventory sync: ``ansible-inventory --list --export -i <source>`` (awx/main/tasks/jobs.py:1536-1590), written
  for the job as an executable script printing that JSON (jobs.py:316-324) in ``inventory/hosts``;
- ``env/extravars`` (jobs.py:285-295, 1027-1043; strings the template did not set are marked !unsafe, as AWX's
  safe_dump marks them), the credential's extra_vars injector rendered into a 0400 file in ``env/`` given as
  ``-e @file`` (awx/main/models/credential.py:543-672), ``env/cmdline`` from the template and the launch prompts
  (jobs.py:952-1022: --check, -u, --become, --diff, -l, -v..., -t), ``env/settings`` (jobs.py:580-595), and the
  collections path (jobs.py:928-950); then ansible-runner (jobs.py:560-610).
Differences, on purpose: the runner's stdout file is kept (AWX suppresses it) so that it can be searched for
secrets; the job runs on this machine rather than in an execution environment container.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2.sandbox
import yaml
from ansible_runner.utils import args2cmdline

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "tools"))
from awx_survey_rules import job_extra_vars  # noqa: E402
from check_awx_templates import load_yaml  # noqa: E402


class LaunchRefused(Exception):
    """AWX would refuse this launch (HTTP 400): the message names the template and the fields."""


class _Unsafe(str):
    """A string AWX writes as !unsafe into env/extravars."""


class _AwxDumper(yaml.SafeDumper):
    pass


_AwxDumper.add_representer(_Unsafe, lambda dumper, value: dumper.represent_scalar("!unsafe", str(value)))


def _unsafe(value: Any, safe: dict[str, Any], key: str | None = None) -> Any:
    """AWX's safe_dump: every string not set by the template itself is marked !unsafe (awx/main/utils/safe_yaml.py)."""
    if key is not None and key in safe and safe[key] == value:
        return value
    if isinstance(value, str):
        return _Unsafe(value)
    if isinstance(value, dict):
        return {k: _unsafe(v, {}) for k, v in value.items()}
    if isinstance(value, list):
        return [_unsafe(v, {}) for v in value]
    return value


def definitions(project: Path = REPO) -> tuple[list[dict[str, Any]], dict[str, Any], dict[str, Any]]:
    """(job templates, surveys, credential type) of the project's awx/ folder."""
    templates = load_yaml(project / "awx" / "job_templates.yml")
    credential_type = load_yaml(project / "awx" / "credential_type.yml")
    return templates["sparkops_awx_job_templates"], templates["sparkops_awx_surveys"], credential_type["sparkops_awx_credential_type"]


@dataclass
class Launch:
    """What the operator chooses when launching a template (only what the template asks for is allowed)."""

    template: str
    answers: dict[str, Any] = field(default_factory=dict)
    job_tags: str | None = None
    limit: str | None = None
    verbosity: int | None = None


@dataclass
class Job:
    """A finished job: its runner, its private data directory and what ansible-runner recorded."""

    ident: str
    private_data_dir: Path
    status: str
    rc: int
    events: list[dict[str, Any]]
    stdout: str

    @property
    def artifacts(self) -> Path:
        return self.private_data_dir / "artifacts" / self.ident

    def changed(self) -> dict[str, int]:
        """Changed tasks per host that ran, from the playbook_on_stats event (which lists only non-zero counts)."""
        stats = [e["event_data"] for e in self.events if e.get("event") == "playbook_on_stats"]
        if not stats:
            return {}
        return {host: int(stats[-1].get("changed", {}).get(host, 0)) for host in stats[-1].get("processed", {})}

    def failures(self) -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("event") in ("runner_on_failed", "runner_on_unreachable") and not e["event_data"].get("ignore_errors")]


class Controller:
    """One project (synced once) and one inventory (synced once), from which templates are launched."""

    def __init__(
        self, workdir: Path, inventory_source: Path, credential_inputs: dict[str, str], project: Path = REPO, machine_ssh_key: str | None = None
    ) -> None:
        self.workdir = workdir
        self.machine_ssh_key = machine_ssh_key
        self.project_source = project
        self.credential_inputs = credential_inputs
        self.templates, self.surveys, self.credential_type = definitions(project)
        self.jobs = 0
        self.project = workdir / "project-sync" / "project"
        self.requirements_collections = workdir / "project-sync" / "requirements_collections"
        self.ee_collections = workdir / "ee-collections"
        self.project.mkdir(parents=True)
        self.inventory = self._sync_inventory(inventory_source)
        self._sync_project()

    # --- the project and inventory syncs ---------------------------------------------------------------------------
    def _sync_project(self) -> None:
        listed = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=self.project_source, capture_output=True, check=True
        ).stdout.decode()
        for name in filter(None, listed.split("\0")):
            source = self.project_source / name
            if source.is_file() and not source.is_symlink():
                target = self.project / name
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, target)
        requirements = yaml.safe_load((self.project / "collections" / "requirements.yml").read_text())
        local = [entry for entry in requirements["collections"] if isinstance(entry, dict) and entry.get("type") == "dir"]
        if not local:
            raise LaunchRefused("collections/requirements.yml installs no collection from the project itself (type: dir)")
        sync_file = self.workdir / "project-sync" / "requirements-local.yml"
        sync_file.write_text(yaml.safe_dump({"collections": local}))
        subprocess.run(
            ["ansible-galaxy", "collection", "install", "--force", "--no-deps", "-r", str(sync_file), "-p", str(self.requirements_collections)],
            cwd=self.project,
            check=True,
            capture_output=True,
            env={k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_COLLECTIONS_PATH")},
        )
        if not (self.requirements_collections / "ansible_collections" / "sparkops" / "inference" / "MANIFEST.json").is_file():
            raise LaunchRefused(f"the project sync did not install sparkops.inference into {self.requirements_collections}")
        # The execution environment's collections: the pinned dependencies (never this collection: the project brings it).
        source = self.project_source / ".collections" / "ansible_collections"
        for namespace in source.iterdir():
            for collection in namespace.iterdir():
                if namespace.name != "sparkops":
                    link = self.ee_collections / "ansible_collections" / namespace.name / collection.name
                    link.parent.mkdir(parents=True, exist_ok=True)
                    link.symlink_to(collection.resolve())

    def _sync_inventory(self, source: Path) -> dict[str, Any]:
        argv = ["ansible-inventory", "--list", "--export", "-i", str(source)]
        exported = subprocess.run(argv, cwd=self.workdir, capture_output=True, text=True, check=True)
        inventory: dict[str, Any] = json.loads(exported.stdout)
        return inventory

    # --- a launch -----------------------------------------------------------------------------------------------------
    def template(self, name: str) -> dict[str, Any]:
        for template in self.templates:
            if template["name"] == name:
                return template
        raise LaunchRefused(f"no job template {name!r} (known: {', '.join(t['name'] for t in self.templates)})")

    def check_launch(self, launch: Launch) -> tuple[dict[str, Any], dict[str, Any]]:
        """(template, the job's extra vars), or LaunchRefused naming the template and each refused field."""
        template = self.template(launch.template)
        survey = self.surveys.get(template["survey"]) if template.get("survey") else None
        problems = []
        for prompt, value in (("job_tags", launch.job_tags), ("limit", launch.limit), ("verbosity", launch.verbosity)):
            asked = template.get(f"ask_{prompt.removeprefix('job_')}_on_launch", False)
            if value is not None and not asked:
                problems.append(f"{prompt}: not prompted on launch")
        if launch.verbosity is not None and launch.verbosity not in range(6):
            problems.append(f"verbosity: {launch.verbosity!r} is not one of 0-5")
        extra_vars, errors = job_extra_vars(template.get("extra_vars") or {}, survey, launch.answers)
        problems += [f"survey: {error}" for error in errors]
        if not (self.project / template["playbook"]).is_file():
            problems.append(f"playbook: {template['playbook']} does not exist in the project")
        if problems:
            raise LaunchRefused(f"job template {template['name']!r} refused the launch: " + "; ".join(problems))
        return template, extra_vars

    def launch(self, launch: Launch, timeout: int = 900) -> Job:
        template, extra_vars = self.check_launch(launch)
        self.jobs += 1
        ident = str(self.jobs)
        pdd = Path(tempfile.mkdtemp(prefix=f"awx_{ident}_", dir=self.workdir))
        shutil.copytree(self.project, pdd / "project", symlinks=True)
        shutil.copytree(self.requirements_collections, pdd / "requirements_collections", symlinks=True)
        for sub in ("env", "inventory", "cp"):
            (pdd / sub).mkdir(mode=0o700)
        meta = {"awx_job_id": int(ident), "awx_job_template_name": template["name"], "awx_job_launch_type": "manual", "tower_job_id": int(ident)}
        safe = template.get("extra_vars") or {}
        extra = {key: _unsafe(value, safe, key) for key, value in {**extra_vars, **meta}.items()}
        self._write(pdd / "env" / "extravars", yaml.dump(extra, Dumper=_AwxDumper, default_flow_style=False), 0o600)
        inventory = pdd / "inventory" / "hosts"
        self._write(inventory, f"#! /usr/bin/env python3\n# -*- coding: utf-8 -*-\nprint({json.dumps(self.inventory)!r})\n", 0o700)
        args = self._args(template, launch)
        args += self._inject_credential(pdd)
        self._write(pdd / "env" / "cmdline", args2cmdline(*args), 0o600)
        settings = {"job_timeout": timeout, "suppress_ansible_output": True, "suppress_output_file": False}
        self._write(pdd / "env" / "settings", json.dumps(settings), 0o600)
        if self.machine_ssh_key:  # a machine credential's key: ansible-runner loads it into an ssh-agent for the job
            self._write(pdd / "env" / "ssh_key", self.machine_ssh_key, 0o600)
        # AWX's dispatcher calls ansible_runner.interface.run in a process of its own, whose environment is AWX's; here
        # ansible-runner's CLI in a clean environment (this test process's variables, a lab API key among them,
        # would otherwise be recorded in the artifacts' `command` file).
        argv = [sys.executable, "-m", "ansible_runner", "run", str(pdd), "--ident", ident, "-p", template["playbook"], "--inventory", str(inventory)]
        subprocess.run(argv, env=self._env(pdd), capture_output=True, check=False, timeout=timeout + 60)
        artifacts = pdd / "artifacts" / ident
        events = [json.loads(p.read_text()) for p in (artifacts / "job_events").glob("*.json")]
        events.sort(key=lambda event: int(event.get("counter", 0)))
        stdout_file = artifacts / "stdout"
        return Job(
            ident=ident,
            private_data_dir=pdd,
            status=(artifacts / "status").read_text().strip() if (artifacts / "status").is_file() else "error",
            rc=int((artifacts / "rc").read_text().strip()) if (artifacts / "rc").is_file() else -1,
            events=events,
            stdout=stdout_file.read_text(errors="replace") if stdout_file.is_file() else "",
        )

    @staticmethod
    def _write(path: Path, content: str, mode: int) -> None:
        path.write_text(content)
        path.chmod(mode)

    @staticmethod
    def _args(template: dict[str, Any], launch: Launch) -> list[str]:
        args = []
        if template.get("job_type") == "check":
            args.append("--check")
        args += ["-u", "root"]  # no machine credential: AWX's default user
        if template.get("become_enabled"):
            args.append("--become")
        if template.get("diff_mode"):
            args.append("--diff")
        limit = launch.limit if launch.limit is not None else template.get("limit")
        if limit:
            args += ["-l", limit]
        verbosity = launch.verbosity if launch.verbosity is not None else template.get("verbosity", 0)
        if verbosity:
            args.append("-" + "v" * min(5, verbosity))
        tags = launch.job_tags if launch.job_tags is not None else template.get("job_tags")
        if tags:
            args += ["-t", tags]
        return args

    def _inject_credential(self, pdd: Path) -> list[str]:
        injectors = (self.credential_type.get("injectors") or {}).get("extra_vars") or {}
        if not injectors:
            return []
        sandbox = jinja2.sandbox.ImmutableSandboxedEnvironment()
        rendered = {key: sandbox.from_string(str(value)).render(**self.credential_inputs) for key, value in injectors.items()}
        handle, path = tempfile.mkstemp(dir=pdd / "env")
        with os.fdopen(handle, "w") as out:
            out.write(yaml.dump({k: _Unsafe(v) for k, v in rendered.items()}, Dumper=_AwxDumper))
        os.chmod(path, stat.S_IRUSR)
        return ["-e", f"@{path}"]

    def _env(self, pdd: Path) -> dict[str, str]:
        collections = os.pathsep.join([str(pdd / "requirements_collections"), "./.collections", str(self.ee_collections)])
        kept = {key: os.environ[key] for key in ("HOME", "LANG", "LC_ALL", "TMPDIR", "USER") if key in os.environ}
        return {
            **kept,
            "ANSIBLE_COLLECTIONS_PATHS": collections,
            "ANSIBLE_COLLECTIONS_PATH": collections,
            "ANSIBLE_ROLES_PATH": os.pathsep.join([str(pdd / "requirements_roles"), "./roles"]),
            "ANSIBLE_SSH_CONTROL_PATH_DIR": str(pdd / "cp"),
            "AWX_PRIVATE_DATA_DIR": str(pdd),
            "ANSIBLE_FORCE_COLOR": "False",
            "ANSIBLE_HOST_KEY_CHECKING": "False",  # AWX's default (awx/settings/defaults.py)
            "PATH": os.pathsep.join([str(Path(sys.executable).parent), "/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"]),
        }


def secrets_found(job: Job, secrets: list[str]) -> list[str]:
    """Where any secret appears: the events, the stdout, or any file the job left in its artifacts."""
    found = []
    events = json.dumps(job.events)
    for secret in secrets:
        if secret in events:
            found.append("events")
        if secret in job.stdout:
            found.append("stdout")
        for path in job.artifacts.rglob("*"):
            if path.is_file() and secret in path.read_text(errors="replace"):
                found.append(str(path.relative_to(job.private_data_dir)))
    return found
