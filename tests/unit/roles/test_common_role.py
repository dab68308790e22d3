# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The internal common role's entry points as the roles use them (``import_role`` ``tasks_from``), run by
``ansible-playbook`` on this machine (local connection): what each does, its second run, its failures' messages, and
that it cannot be called as a role of its own.

remove_unit runs in check mode here (this machine has no systemd to stop units with); the lab's scenarios run it for
real (a firewall turned off, the memory guard and liveness probe removed, a node that changes role).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import typing as t
import zipfile
from pathlib import Path

import pytest
import yaml
from ansible_run import ANSIBLE_PLAYBOOK

REPO = Path(__file__).resolve().parents[3]
SECRET = "s3cret-index-token-0123456789"


def run(tmp_path: Path, entry: str, given: dict[str, t.Any], *extra: str, after: list[dict[str, t.Any]] | None = None) -> subprocess.CompletedProcess[str]:
    """Import the common role's ``entry`` with ``given`` as its vars, then ``after``'s tasks; the run's result."""
    inventory = {"all": {"hosts": {"spark-head": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}}}}
    play = [
        {
            "name": f"The common role's {entry}",
            "hosts": "spark-head",
            "gather_facts": False,
            "handlers": [{"name": "Say the handler ran", "listen": "test topic", "ansible.builtin.debug": {"msg": "HANDLER RAN"}}],
            "tasks": [
                {"name": "Use it", "ansible.builtin.import_role": {"name": "sparkops.inference.common", "tasks_from": entry}, "vars": given},
                *(after or []),
            ],
        }
    ]
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump(inventory))
    (tmp_path / "play.yml").write_text(yaml.safe_dump(play, sort_keys=False))
    (tmp_path / "tmp").mkdir(exist_ok=True)
    env = {
        **os.environ,
        "ANSIBLE_COLLECTIONS_PATH": str(REPO / ".collections"),
        "ANSIBLE_FORCE_COLOR": "0",
        "ANSIBLE_NOCOLOR": "1",
        "TMPDIR": str(tmp_path / "tmp"),
        "ANSIBLE_LOCAL_TEMP": str(tmp_path / "tmp"),  # where the copy_packed action makes its private folder
    }
    argv = [ANSIBLE_PLAYBOOK, "-i", str(tmp_path / "hosts.yml"), str(tmp_path / "play.yml"), *extra]
    return subprocess.run(argv, capture_output=True, text=True, check=False, env=env, cwd=tmp_path, timeout=300)


def changed(proc: subprocess.CompletedProcess[str]) -> int:
    recap = [line for line in proc.stdout.splitlines() if line.startswith("spark-head") and "changed=" in line]
    assert len(recap) == 1, proc.stdout[-3000:]
    return int(recap[0].split("changed=")[1].split()[0])


def show(proc: subprocess.CompletedProcess[str]) -> str:
    return proc.stdout[-4000:] + proc.stderr[-2000:]


def test_the_role_cannot_be_called_on_its_own(tmp_path: Path) -> None:
    (tmp_path / "hosts.yml").write_text("all:\n  hosts:\n    spark-head:\n      ansible_connection: local\n")
    (tmp_path / "play.yml").write_text("- name: Call it\n  hosts: all\n  gather_facts: false\n  roles:\n    - sparkops.inference.common\n")
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": str(REPO / ".collections"), "ANSIBLE_NOCOLOR": "1"}
    proc = subprocess.run([ANSIBLE_PLAYBOOK, "-i", "hosts.yml", "play.yml"], capture_output=True, text=True, check=False, env=env, cwd=tmp_path)
    assert proc.returncode != 0 and "main" in proc.stdout + proc.stderr, show(proc)


# require_file


def test_require_file_names_the_host_the_file_the_role_and_the_tags(tmp_path: Path) -> None:
    missing = tmp_path / "fabric.env"
    given = {"common_require_path": str(missing), "common_require_role": "nccl_env", "common_require_tags": "nccl,ray,serve"}
    proc = run(tmp_path, "require_file", given)
    assert proc.returncode != 0
    assert f"host spark-head: {missing} is missing; run the nccl_env role first (--tags nccl,ray,serve)" in proc.stdout, show(proc)


def test_require_file_passes_in_check_mode_where_the_role_before_would_write_it(tmp_path: Path) -> None:
    given = {"common_require_path": str(tmp_path / "fabric.env"), "common_require_role": "nccl_env", "common_require_tags": "nccl"}
    proc = run(tmp_path, "require_file", given, "--check")
    assert proc.returncode == 0 and changed(proc) == 0, show(proc)


def test_require_file_keeps_the_stat_and_the_checksum_when_asked(tmp_path: Path) -> None:
    there = tmp_path / "fabric.env"
    there.write_text("NCCL_IB_DISABLE=0\n")
    out = tmp_path / "stat.json"
    given = {"common_require_path": str(there), "common_require_role": "nccl_env", "common_require_tags": "nccl", "common_require_checksum": True}
    keep = {"name": "Keep it", "ansible.builtin.copy": {"content": "{{ common_required.stat | to_json }}", "dest": str(out), "mode": "0644"}}
    proc = run(tmp_path, "require_file", given, after=[keep])
    assert proc.returncode == 0, show(proc)
    stat = json.loads(out.read_text())
    assert stat["exists"] and stat["checksum"] == hashlib.sha1(b"NCCL_IB_DISABLE=0\n").hexdigest()  # noqa: S324 (Ansible's checksum)


def test_require_file_refuses_a_call_without_the_role_to_name(tmp_path: Path) -> None:
    proc = run(tmp_path, "require_file", {"common_require_path": str(tmp_path / "x")})
    assert proc.returncode != 0 and "common_require_role" in proc.stdout and "common_require_tags" in proc.stdout, show(proc)


# copy_packed


def source(tmp_path: Path) -> tuple[Path, list[str]]:
    src = tmp_path / "src"
    src.mkdir()
    for name, text in (("_a.py", "A = 1\n"), ("_b.py", "B = 2\n"), ("_not_sent.py", "C = 3\n")):
        (src / name).write_text(text)
        (src / name).chmod(0o600)
    return src, ["_b.py", "_a.py"]


def test_copy_packed_copies_the_files_named_root_owned_0644_and_a_second_run_changes_nothing(tmp_path: Path) -> None:
    src, files = source(tmp_path)
    dest = tmp_path / "node" / "lib"
    given = {"common_pack_src": str(src), "common_pack_files": files, "common_pack_dest": str(dest), "common_pack_prefix": "sparkops-test-"}
    first = run(tmp_path, "copy_packed", given)
    assert first.returncode == 0 and changed(first) == 1, show(first)  # one task: the folder and the unpack
    assert sorted(path.name for path in dest.iterdir()) == ["_a.py", "_b.py"]
    for path in dest.iterdir():
        assert (path.stat().st_mode & 0o777, path.stat().st_uid, path.stat().st_gid) == (0o644, 0, 0), path
    assert (dest / "_a.py").read_text() == "A = 1\n"
    assert list((tmp_path / "tmp").rglob("sparkops-test-*")) == []  # the controller's private folder is gone
    second = run(tmp_path, "copy_packed", given)
    assert second.returncode == 0 and changed(second) == 0, show(second)
    (src / "_a.py").write_text("A = 2\n")
    third = run(tmp_path, "copy_packed", given)
    assert third.returncode == 0 and changed(third) == 1 and (dest / "_a.py").read_text() == "A = 2\n", show(third)


def test_copy_packed_leaves_a_host_that_needs_nothing_alone(tmp_path: Path) -> None:
    src, files = source(tmp_path)
    dest = tmp_path / "node" / "lib"
    given = {"common_pack_src": str(src), "common_pack_files": files, "common_pack_dest": str(dest), "common_pack_here": False}
    proc = run(tmp_path, "copy_packed", given)
    assert proc.returncode == 0 and changed(proc) == 0 and not dest.exists(), show(proc)


def test_copy_packed_in_check_mode_writes_nothing(tmp_path: Path) -> None:
    src, files = source(tmp_path)
    dest = tmp_path / "node" / "lib"
    given = {"common_pack_src": str(src), "common_pack_files": files, "common_pack_dest": str(dest)}
    proc = run(tmp_path, "copy_packed", given, "--check")
    assert proc.returncode == 0 and changed(proc) == 1 and not dest.exists(), show(proc)


# pip_install


def wheel(folder: Path) -> None:
    """A minimal pure-Python wheel, sparkops_probe 1.0, in ``folder``."""
    folder.mkdir()
    info = "sparkops_probe-1.0.dist-info"
    files = {
        "sparkops_probe/__init__.py": "VERSION = '1.0'\n",
        f"{info}/METADATA": "Metadata-Version: 2.1\nName: sparkops-probe\nVersion: 1.0\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "".join(f"{name},,\n" for name in files) + f"{info}/RECORD,,\n"
    with zipfile.ZipFile(folder / "sparkops_probe-1.0-py3-none-any.whl", "w") as archive:
        for name, text in {**files, f"{info}/RECORD": record}.items():
            archive.writestr(name, text)


def test_pip_install_makes_the_venv_installs_the_pin_and_notifies(tmp_path: Path) -> None:
    wheel(tmp_path / "wheels")
    venv = tmp_path / "venv"
    given = {
        "common_pip_requirements": ["sparkops-probe==1.0"],
        "common_pip_venv": str(venv),
        "common_pip_virtualenv_command": f"{sys.executable} -m venv",
        "common_pip_extra_args": f"--no-index --find-links {tmp_path / 'wheels'}",
        "common_pip_notify": ["test topic"],
    }
    proc = run(tmp_path, "pip_install", given)
    assert proc.returncode == 0 and "HANDLER RAN" in proc.stdout, show(proc)
    assert list(venv.glob("lib/python*/site-packages/sparkops_probe/__init__.py")), show(proc)
    assert list((tmp_path / "tmp").glob("sparkops-pip-*")) == []
    again = run(tmp_path, "pip_install", given)
    assert again.returncode == 0 and changed(again) == 0 and "HANDLER RAN" not in again.stdout, show(again)


@pytest.mark.parametrize("verbosity", ["-v", "-vvv"])
def test_pip_install_keeps_the_index_url_out_of_every_output(tmp_path: Path, verbosity: str) -> None:
    given = {
        "common_pip_requirements": ["sparkops-no-such-package==1.0"],
        "common_pip_venv": str(tmp_path / "venv"),
        "common_pip_virtualenv_command": f"{sys.executable} -m venv",
        "common_pip_index_url": f"http://{SECRET}:{SECRET}@127.0.0.1:9/{SECRET}/simple",
        "common_pip_extra_args": "--retries 0 --timeout 1",
    }
    proc = run(tmp_path, "pip_install", given, verbosity)
    assert proc.returncode != 0, show(proc)  # nothing answers at the index: the install fails ...
    assert "censored" in proc.stdout, show(proc)  # ... its output hidden (no_log) ...
    assert "host spark-head: pip could not install sparkops-no-such-package==1.0 into" in proc.stdout, show(proc)  # ... and said
    assert SECRET not in proc.stdout + proc.stderr
    assert list((tmp_path / "tmp").glob("sparkops-pip-*")) == []  # the root-only config file is gone after the failure too
    assert not (tmp_path / "venv" / "pip.conf").exists()


# The roles' imports


def imports() -> list[tuple[str, dict[str, t.Any]]]:
    """Every import of the common role in the roles' task files (blocks opened), with the file it is in."""
    found = []

    def walk(items: t.Any, where: str) -> None:
        for item in items or []:
            if isinstance(item, dict):
                if (item.get("ansible.builtin.import_role") or {}).get("name") == "sparkops.inference.common":
                    found.append((where, item))
                for key in ("block", "rescue", "always"):
                    walk(item.get(key), where)

    for path in sorted((REPO / "roles").glob("*/tasks/*.yml")):
        walk(yaml.safe_load(path.read_text()), str(path.relative_to(REPO)))
    return found


def test_the_roles_import_the_common_role_with_its_options_and_no_check_task() -> None:
    """Each import gives its entry point's required options and no other variable. Inside the roles the imports do not
    add Ansible's argument check task: it is tagged `always`, so a tag-scoped rerun (--tags vllm_serve_run) would run
    it where the tasks that register what its options read were not selected; this test and the ones above check the
    options instead."""
    specs = yaml.safe_load((REPO / "roles" / "common" / "meta" / "argument_specs.yml").read_text())["argument_specs"]
    found = imports()
    assert {task["ansible.builtin.import_role"]["tasks_from"] for _where, task in found} == set(specs) - {"main"}
    for where, task in found:
        module = task["ansible.builtin.import_role"]
        options = specs[module["tasks_from"]]["options"]
        given = set(task.get("vars", {}))
        assert given <= set(options), (where, task["name"], given - set(options))
        assert {name for name, spec in options.items() if spec.get("required")} <= given, (where, task["name"])
        assert module.get("rolespec_validate") is False, (where, task["name"])


def test_pip_install_with_an_index_url_in_check_mode_passes(tmp_path: Path) -> None:
    """In check mode the pip module succeeds without a `state` in its result (only `changed`): with an index URL the
    hidden result must not be read as a failure (it was, until the failure was told by pip's `msg`)."""
    given = {
        "common_pip_requirements": ["sparkops-no-such-package==1.0"],
        "common_pip_venv": str(tmp_path / "venv"),
        "common_pip_virtualenv_command": f"{sys.executable} -m venv",
        "common_pip_index_url": f"http://user:{SECRET}@127.0.0.1:9/simple",
    }
    proc = run(tmp_path, "pip_install", given, "--check", "-vvv")
    assert proc.returncode == 0, show(proc)
    assert "pip could not install" not in proc.stdout and SECRET not in proc.stdout + proc.stderr
    assert list((tmp_path / "tmp").glob("sparkops-pip-*")) == []
