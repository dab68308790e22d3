"""tools/check_ee.py fails, naming the file and the entry, on a build context or requirements that disagree.

Each test writes a small checkout (ee/, collections/requirements.yml, galaxy.yml, requirements/dev.txt and a
.collections with MANIFEST.json files), runs the real `ansible-builder create` on it, breaks one thing and checks.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import check_ee
import pytest

DEFINITION = """\
---
version: 3
images:
  base_image:
    name: quay.io/centos/centos:stream9
dependencies:
  python_interpreter:
    package_system: python3.11
    python_path: /usr/bin/python3.11
  ansible_core:
    package_pip: ansible-core==2.19.14
  ansible_runner:
    package_pip: ansible-runner==2.4.3
  galaxy: requirements.yml
  python: requirements.txt
  system: bindep.txt
  exclude:
    all_from_collections:
      - acme.one
options:
  package_manager_path: /usr/bin/dnf
"""
EE_REQUIREMENTS = """\
---
collections:
  - name: acme.one
    version: "==1.2.3"
  - name: acme.two
    version: 2.0.0
  - name: acme.three
    version: "==1.0.0"
"""
PROJECT_REQUIREMENTS = """\
---
collections:
  - name: .
    type: dir
  - name: acme.one
    version: "==1.2.3"
  - name: acme.two
    version: "==2.0.0"
  - name: acme.three
    version: "==1.0.0"
"""
GALAXY = """\
---
namespace: sparkops
name: inference
version: 1.0.0
dependencies:
  acme.one: ">=1.0.0"
  acme.two: ">=2.0.0,<3.0.0"
"""
DEV = "ansible-core==2.19.14\nansible-runner==2.4.3\nnetaddr==1.3.0\npytest==9.2.0\n"
PYTHON = "# ipaddr filters\nnetaddr==1.3.0\nmatplotlib==3.11.2\n"
BINDEP = "openssh-clients [platform:rpm]\ntar [platform:rpm]\n"
INSTALLED = {"acme.one": ("1.2.3", {}), "acme.two": ("2.0.0", {"acme.three": ">=1.0.0"}), "acme.three": ("1.0.0", {})}


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new))


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    write(root / "ee" / "execution-environment.yml", DEFINITION)
    write(root / "ee" / "requirements.yml", EE_REQUIREMENTS)
    write(root / "ee" / "requirements.txt", PYTHON)
    write(root / "ee" / "bindep.txt", BINDEP)
    write(root / "collections" / "requirements.yml", PROJECT_REQUIREMENTS)
    write(root / "galaxy.yml", GALAXY)
    write(root / "requirements" / "dev.txt", DEV)
    for fqcn, (version, deps) in INSTALLED.items():
        namespace, name = fqcn.split(".")
        info = {"namespace": namespace, "name": name, "version": version, "dependencies": deps}
        write(root / ".collections" / "ansible_collections" / namespace / name / "MANIFEST.json", json.dumps({"collection_info": info}))
    # acme.one asks for a Python package; the definition leaves it out (exclude.all_from_collections).
    write(root / ".collections" / "ansible_collections" / "acme" / "one" / "requirements.txt", "leftpad\n")
    return root


class Builder:
    """`ansible-builder create` for a repo's ee/, into <repo>/../context: made once per distinct ee/, then copied."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.made: dict[str, Path] = {}

    def __call__(self, repo: Path) -> Path:
        key = hashlib.sha256(b"".join(p.name.encode() + p.read_bytes() for p in sorted((repo / "ee").iterdir()))).hexdigest()
        if key not in self.made:
            template = self.root / key[:16]
            argv = [sys.executable, "-m", "ansible_builder", "create", "-f", str(repo / "ee" / "execution-environment.yml"), "-c", str(template)]
            proc = subprocess.run(argv, capture_output=True, text=True, check=False)
            assert proc.returncode == 0, proc.stdout + proc.stderr
            self.made[key] = template
        context = repo.parent / "context"
        shutil.rmtree(context, ignore_errors=True)
        shutil.copytree(self.made[key], context)
        return context


@pytest.fixture(scope="module")
def create(tmp_path_factory: pytest.TempPathFactory) -> Builder:
    return Builder(tmp_path_factory.mktemp("contexts"))


def problems(repo: Path, context: Path) -> list[str]:
    report = check_ee.check(check_ee.Paths.for_repo(repo, context))
    return [str(p) for p in report.problems]


def assert_problem(found: list[str], *parts: str) -> None:
    assert any(all(part in line for part in parts) for line in found), "\n".join(found) or "no problem found"


def test_a_consistent_checkout_passes(repo: Path, create: Builder) -> None:
    report = check_ee.check(check_ee.Paths.for_repo(repo, create(repo)))
    assert report.problems == []
    installs = "\n".join(report.notes)
    assert "netaddr==1.3.0" in installs and "tar [platform:rpm]" in installs
    assert "leftpad" not in installs  # the excluded collection's requirement


def test_the_collections_own_requirements_reach_the_image_unless_excluded(repo: Path, create: Builder) -> None:
    edit(repo / "ee" / "execution-environment.yml", "  exclude:\n    all_from_collections:\n      - acme.one\n", "")
    report = check_ee.check(check_ee.Paths.for_repo(repo, create(repo)))
    assert report.problems == []
    assert "leftpad" in "\n".join(report.notes)


def test_collection_missing_from_ee_requirements(repo: Path, create: Builder) -> None:
    edit(repo / "ee" / "requirements.yml", "  - name: acme.two\n    version: 2.0.0\n", "")
    found = problems(repo, create(repo))
    assert_problem(found, "ee/requirements.yml: acme.two:", "galaxy.yml depends on it")
    assert_problem(found, "ee/requirements.yml: acme.two:", "collections/requirements.yml pins it")


def test_collection_missing_from_the_context(repo: Path, create: Builder) -> None:
    context = create(repo)
    edit(context / "_build" / "requirements.yml", '  - name: acme.three\n    version: "==1.0.0"\n', "")
    assert_problem(problems(repo, context), "<context>/_build/requirements.yml: acme.three: is missing")


def test_pin_differs_from_the_installed_collection(repo: Path, create: Builder) -> None:
    for path in (repo / "ee" / "requirements.yml", repo / "collections" / "requirements.yml"):
        edit(path, '"==1.2.3"', '"==1.2.4"')
    assert_problem(problems(repo, create(repo)), "ee/requirements.yml: acme.one:", "pinned to 1.2.4, but CI tests with 1.2.3")


def test_pin_differs_between_project_and_ee(repo: Path, create: Builder) -> None:
    edit(repo / "collections" / "requirements.yml", 'acme.three\n    version: "==1.0.0"', 'acme.three\n    version: "==1.0.1"')
    assert_problem(problems(repo, create(repo)), "collections/requirements.yml: acme.three:", "'==1.0.1'", "'==1.0.0'")


def test_a_range_is_not_a_pin(repo: Path, create: Builder) -> None:
    edit(repo / "ee" / "requirements.yml", '"==1.2.3"', '">=1.2.3"')
    assert_problem(problems(repo, create(repo)), "ee/requirements.yml: acme.one:", "not an exact pin")


def test_pin_outside_the_range_galaxy_yml_asks_for(repo: Path, create: Builder) -> None:
    edit(repo / "galaxy.yml", 'acme.one: ">=1.0.0"', 'acme.one: ">=2.0.0"')
    assert_problem(problems(repo, create(repo)), "ee/requirements.yml: acme.one:", "outside the range galaxy.yml asks for (>=2.0.0")


def test_a_dependency_of_a_pinned_collection_is_missing(repo: Path, create: Builder) -> None:
    for path in (repo / "ee" / "requirements.yml", repo / "collections" / "requirements.yml"):
        edit(path, '  - name: acme.three\n    version: "==1.0.0"\n', "")
    assert_problem(problems(repo, create(repo)), "ee/requirements.yml: acme.three:", "acme.two depends on it (>=1.0.0)")


def test_project_requirements_start_with_this_collection(repo: Path, create: Builder) -> None:
    edit(repo / "collections" / "requirements.yml", "  - name: .\n    type: dir\n", "")
    assert_problem(problems(repo, create(repo)), "collections/requirements.yml: collections[0]:", "`- name: .` with `type: dir`")


def test_the_ee_does_not_carry_this_collection(repo: Path, create: Builder) -> None:
    edit(repo / "ee" / "requirements.yml", "collections:\n", "collections:\n  - name: .\n    type: dir\n")
    assert_problem(problems(repo, create(repo)), "ee/requirements.yml: .:", "the AWX project brings it")


def test_python_requirement_missing_from_the_context(repo: Path, create: Builder) -> None:
    context = create(repo)
    edit(context / "_build" / "requirements.txt", "matplotlib==3.11.2\n", "")
    assert_problem(problems(repo, context), "<context>/_build/requirements.txt: matplotlib==3.11.2:", "missing")


def test_system_package_missing_from_the_context(repo: Path, create: Builder) -> None:
    context = create(repo)
    edit(context / "_build" / "bindep.txt", "tar [platform:rpm]\n", "")
    assert_problem(problems(repo, context), "<context>/_build/bindep.txt: tar [platform:rpm]:", "missing")


def test_containerfile_that_installs_no_collections(repo: Path, create: Builder) -> None:
    context = create(repo)
    text = (context / "Containerfile").read_text()
    (context / "Containerfile").write_text("\n".join(line for line in text.splitlines() if "ansible-galaxy collection install" not in line))
    assert_problem(problems(repo, context), "<context>/Containerfile: galaxy:", "installs no collections")


def test_containerfile_that_skips_bindep(repo: Path, create: Builder) -> None:
    context = create(repo)
    edit(context / "Containerfile", "COPY _build/bindep.txt bindep.txt\n", "")
    assert_problem(problems(repo, context), "<context>/Containerfile: system:", "does not copy _build/bindep.txt")


def test_final_image_without_the_installed_collections(repo: Path, create: Builder) -> None:
    context = create(repo)
    text = (context / "Containerfile").read_text()
    (context / "Containerfile").write_text(text.replace("COPY --from=galaxy /usr/share/ansible /usr/share/ansible\n", ""))
    assert_problem(problems(repo, context), "<context>/Containerfile: galaxy:", "does not take the installed collections")


def test_what_introspection_leaves_out_is_named(repo: Path, create: Builder) -> None:
    paths = check_ee.Paths.for_repo(repo, create(repo))
    report = check_ee.Report(paths)
    definition = check_ee.check_definition(paths, report)
    assert definition is not None and definition.python is not None
    user_pip = check_ee.read_pip(definition.python, report)
    check_ee.check_introspection(definition, user_pip, ["tar [platform:rpm]"], ["netaddr==1.3.0  # from collection user"], [], report)
    assert [str(p) for p in report.problems] == [
        "ee/requirements.txt: matplotlib==3.11.2: the image would not install it (introspect left it out)",
        "ee/bindep.txt: tar [platform:rpm]: the image would not install it (introspect left it out)",
    ]


def test_no_containerfile(repo: Path, create: Builder) -> None:
    context = create(repo)
    (context / "Containerfile").unlink()
    assert_problem(problems(repo, context), "<context>/Containerfile: Containerfile: does not exist")


def test_ansible_core_pin_differs_from_dev_requirements(repo: Path, create: Builder) -> None:
    edit(repo / "ee" / "execution-environment.yml", "ansible-core==2.19.14", "ansible-core==2.19.13")
    assert_problem(problems(repo, create(repo)), "ee/execution-environment.yml: dependencies.ansible_core.package_pip:", "pins ansible-core==2.19.14")


def test_python_requirement_pinned_otherwise_than_dev_requirements(repo: Path, create: Builder) -> None:
    edit(repo / "ee" / "requirements.txt", "netaddr==1.3.0", "netaddr==1.2.0")
    assert_problem(problems(repo, create(repo)), "ee/requirements.txt: netaddr:", "dev.txt (what CI tests with) pins 1.3.0")


def test_python_requirement_not_pinned(repo: Path, create: Builder) -> None:
    edit(repo / "ee" / "requirements.txt", "matplotlib==3.11.2", "matplotlib>=3")
    assert_problem(problems(repo, create(repo)), "ee/requirements.txt: matplotlib:", "not an exact pin")


def test_inline_dependencies_are_refused(repo: Path, create: Builder) -> None:
    edit(repo / "ee" / "execution-environment.yml", "  system: bindep.txt\n", "  system: |\n    tar [platform:rpm]\n")
    assert_problem(problems(repo, create(repo)), "ee/execution-environment.yml: dependencies.system:", "must name a file")


def test_main_names_the_file_and_fails(repo: Path, create: Builder, capsys: pytest.CaptureFixture[str]) -> None:
    edit(repo / "ee" / "requirements.yml", '"==1.2.3"', '"==9.9.9"')
    context = create(repo)
    assert check_ee.main(["--repo", str(repo), "--context", str(context)]) == 1
    err = capsys.readouterr().err
    assert "check-ee: ee/requirements.yml: acme.one: is pinned to 9.9.9" in err
    edit(repo / "ee" / "requirements.yml", '"==9.9.9"', '"==1.2.3"')
    assert check_ee.main(["--repo", str(repo), "--context", str(create(repo))]) == 0


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("==1.2.3", "1.2.3"), ("1.2.3", "1.2.3"), ("=1.2.3", "1.2.3"), (">=1.2.3", None), ("*", None), ("1.2", None), (None, None), ("==1.2.3,<2", None)],
)
def test_exact_version(raw: str | None, expected: str | None) -> None:
    assert check_ee.exact_version(raw) == expected
