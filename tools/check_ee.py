"""The execution environment (ee/) builds what the collection needs, at the versions CI tests with.

tools/check_ee.sh runs `ansible-builder create -f ee/execution-environment.yml -c <context>` (no image is built: CI
reaches no registry) and then this script, which checks:

* the definition: schema version 3, a base image, galaxy/python/system given as files that exist, ansible-core and
  ansible-runner pinned as in requirements/dev.txt, the Python interpreter named;
* the context: a Containerfile from the definition's base image that installs ansible-core and ansible-runner at those
  pins, installs the galaxy requirements (`ansible-galaxy collection install -r requirements.yml`), and feeds the
  Python requirements and bindep to the introspect and assemble steps; every collection of ee/requirements.yml, every
  requirement of ee/requirements.txt and every package of ee/bindep.txt is in the context's `_build/` files; every
  script the Containerfile runs is there;
* the collections: ee/requirements.yml pins each collection exactly (`==X.Y.Z` or `X.Y.Z`) to the version
  .collections holds; collections/requirements.yml starts with this collection (`name: .`, `type: dir`) and pins the
  same collections at the same versions; every dependency in galaxy.yml, and every dependency of a pinned collection
  (its MANIFEST.json), is pinned at a version in the range asked for;
* the Python requirements: each pinned exactly, at requirements/dev.txt's version where dev.txt has the package;
* what the image will install: the builder's own introspect script, run here on the pinned collections from
  .collections, yields every Python requirement and system package of ee/ (what the collections add is listed).

Each problem names the file and the entry. Exit status 1 on any problem.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import typing as t
from dataclasses import dataclass
from pathlib import Path

import yaml
from ansible.galaxy.dependency_resolution.versioning import meets_requirements
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parent.parent
SELF_ENTRY = "."
EXACT_RE = re.compile(r"^(?:==?)?\s*(\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.+-]+)?)$")


@dataclass(frozen=True)
class Problem:
    path: str
    entry: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.entry}: {self.message}"


@dataclass(frozen=True)
class Pin:
    """One entry of a collection requirements file."""

    name: str
    version: str | None  # the exact version, None when the entry is not an exact pin
    raw: str  # the version as written ('' when none)
    type: str | None


@dataclass(frozen=True)
class Installed:
    version: str
    dependencies: dict[str, str]
    path: Path


@dataclass(frozen=True)
class Paths:
    repo: Path
    definition: Path
    context: Path
    project_requirements: Path
    galaxy: Path
    dev_requirements: Path
    collections: tuple[Path, ...]

    @classmethod
    def for_repo(cls, repo: Path, context: Path, collections: t.Sequence[Path] = ()) -> Paths:
        return cls(
            repo=repo,
            definition=repo / "ee" / "execution-environment.yml",
            context=context,
            project_requirements=repo / "collections" / "requirements.yml",
            galaxy=repo / "galaxy.yml",
            dev_requirements=repo / "requirements" / "dev.txt",
            collections=tuple(collections) or (repo / ".collections",),
        )

    def rel(self, path: Path) -> str:
        for base, prefix in ((self.context, "<context>/"), (self.repo, "")):
            try:
                return prefix + path.resolve().relative_to(base.resolve()).as_posix()
            except ValueError:
                continue
        return str(path)


class Report:
    def __init__(self, paths: Paths) -> None:
        self.paths = paths
        self.problems: list[Problem] = []
        self.notes: list[str] = []

    def add(self, path: Path, entry: str, message: str) -> None:
        self.problems.append(Problem(self.paths.rel(path), entry, message))


def load_yaml(path: Path) -> t.Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def exact_version(raw: object) -> str | None:
    """The version an exact pin names (`==1.2.3`, `=1.2.3` or `1.2.3`), else None."""
    if not isinstance(raw, str):
        return None
    match = EXACT_RE.match(raw.strip())
    return match.group(1) if match else None


def read_pins(path: Path, report: Report) -> list[Pin]:
    try:
        data = load_yaml(path)
    except (OSError, yaml.YAMLError) as exc:
        report.add(path, "collections", f"cannot be read: {exc}")
        return []
    entries = data.get("collections") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        report.add(path, "collections", "no `collections:` list")
        return []
    pins: list[Pin] = []
    for entry in entries:
        if isinstance(entry, str):
            pins.append(Pin(entry, None, "", None))
        elif isinstance(entry, dict) and isinstance(entry.get("name"), str):
            raw = entry.get("version")
            raw_text = "" if raw is None else str(raw)
            pins.append(Pin(entry["name"], exact_version(raw), raw_text, entry.get("type")))
        else:
            report.add(path, str(entry), "an entry needs a `name`")
    return pins


def installed_collections(paths: t.Iterable[Path]) -> dict[str, Installed]:
    """Collections found on the collections path, from MANIFEST.json (or galaxy.yml for a checkout)."""
    found: dict[str, Installed] = {}
    for root in paths:
        base = root / "ansible_collections"
        if not base.is_dir():
            continue
        for folder in sorted(base.glob("*/*")):
            fqcn = f"{folder.parent.name}.{folder.name}"
            if fqcn in found:
                continue
            manifest = folder / "MANIFEST.json"
            galaxy = folder / "galaxy.yml"
            if manifest.is_file():
                info = json.loads(manifest.read_text(encoding="utf-8"))["collection_info"]
                found[fqcn] = Installed(str(info["version"]), dict(info.get("dependencies") or {}), folder)
            elif galaxy.is_file():
                info = load_yaml(galaxy)
                found[fqcn] = Installed(str(info["version"]), dict(info.get("dependencies") or {}), folder)
    return found


def read_pip(path: Path, report: Report) -> list[Requirement]:
    requirements: list[Requirement] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        if text.startswith("-"):
            report.add(path, text, f"line {number}: pip options are not used here; name each requirement")
            continue
        try:
            requirements.append(Requirement(text))
        except InvalidRequirement as exc:
            report.add(path, text, f"line {number}: not a requirement ({exc})")
    return requirements


def read_bindep(path: Path) -> list[str]:
    """The bindep lines (package and its selectors), comments and blank lines left out."""
    lines = (line.split("#", 1)[0].strip() for line in path.read_text(encoding="utf-8").splitlines())
    return [" ".join(line.split()) for line in lines if line]


def pinned_version(requirement: Requirement) -> str | None:
    specs = list(requirement.specifier)
    if len(specs) == 1 and specs[0].operator == "==" and "*" not in specs[0].version:
        return specs[0].version
    return None


def dev_pins(path: Path) -> dict[str, str]:
    pins: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        text = line.split("#", 1)[0].strip()
        if not text or text.startswith("-"):
            continue
        try:
            requirement = Requirement(text)
        except InvalidRequirement:
            continue
        version = pinned_version(requirement)
        if version:
            pins[canonicalize_name(requirement.name)] = version
    return pins


@dataclass(frozen=True)
class Definition:
    base_image: str
    galaxy: Path | None
    python: Path | None
    system: Path | None
    ansible_core: str
    ansible_runner: str
    python_path: str
    excluded_collections: tuple[str, ...]


def _dependency_file(definition: dict[str, t.Any], key: str, path: Path, report: Report) -> Path | None:
    value = (definition.get("dependencies") or {}).get(key)
    if not isinstance(value, str) or "\n" in value:
        report.add(path, f"dependencies.{key}", "must name a file (ee/...), so that the checks and the build read the same list")
        return None
    file = (path.parent / value).resolve()
    if not file.is_file():
        report.add(path, f"dependencies.{key}", f"{value} does not exist")
        return None
    return file


def check_definition(paths: Paths, report: Report) -> Definition | None:
    path = paths.definition
    try:
        data = load_yaml(path)
    except (OSError, yaml.YAMLError) as exc:
        report.add(path, "definition", f"cannot be read: {exc}")
        return None
    if not isinstance(data, dict):
        report.add(path, "definition", "is not a mapping")
        return None
    if data.get("version") != 3:
        report.add(path, "version", f"is {data.get('version')!r}; the checks read ansible-builder's version 3 schema")
    base_image = str(((data.get("images") or {}).get("base_image") or {}).get("name") or "")
    if not base_image:
        report.add(path, "images.base_image.name", "is not set")
    dependencies = data.get("dependencies") or {}
    pins = dev_pins(paths.dev_requirements)
    refs: dict[str, str] = {}
    for key, package in (("ansible_core", "ansible-core"), ("ansible_runner", "ansible-runner")):
        ref = str((dependencies.get(key) or {}).get("package_pip") or "")
        refs[key] = ref
        want = f"{package}=={pins[package]}" if package in pins else None
        if want is None:
            report.add(paths.dev_requirements, package, "is not pinned (name==version)")
        elif ref.replace(" ", "") != want:
            report.add(path, f"dependencies.{key}.package_pip", f"is {ref!r}; requirements/dev.txt pins {want}")
    python_path = str((dependencies.get("python_interpreter") or {}).get("python_path") or "")
    excluded = (dependencies.get("exclude") or {}).get("all_from_collections") or []
    return Definition(
        base_image=base_image,
        galaxy=_dependency_file(data, "galaxy", path, report),
        python=_dependency_file(data, "python", path, report),
        system=_dependency_file(data, "system", path, report),
        ansible_core=refs["ansible_core"],
        ansible_runner=refs["ansible_runner"],
        python_path=python_path,
        excluded_collections=tuple(str(c) for c in excluded),
    )


def _containerfile_arg(text: str, name: str) -> str | None:
    match = re.search(rf'^ARG {name}="([^"]*)"', text, re.MULTILINE)
    return match.group(1) if match else None


def check_context(paths: Paths, definition: Definition, ee_pins: list[Pin], user_pip: list[Requirement], user_bindep: list[str], report: Report) -> None:
    context = paths.context
    containerfile = context / "Containerfile"
    if not containerfile.is_file():
        report.add(containerfile, "Containerfile", "does not exist: `ansible-builder create` wrote no Containerfile")
        return
    text = containerfile.read_text(encoding="utf-8")
    lines = text.splitlines()

    def needs(entry: str, pattern: str, message: str) -> None:
        if not re.search(pattern, text, re.MULTILINE):
            report.add(containerfile, entry, message)

    if _containerfile_arg(text, "EE_BASE_IMAGE") != definition.base_image:
        report.add(containerfile, "EE_BASE_IMAGE", f"is {_containerfile_arg(text, 'EE_BASE_IMAGE')!r}, not the definition's {definition.base_image!r}")
    needs("FROM", r"^FROM \$EE_BASE_IMAGE\b", "no stage is built FROM $EE_BASE_IMAGE")
    refs = (_containerfile_arg(text, "ANSIBLE_INSTALL_REFS") or "").split()
    for ref in (definition.ansible_core, definition.ansible_runner):
        if ref and ref.replace(" ", "") not in refs:
            report.add(containerfile, "ANSIBLE_INSTALL_REFS", f"does not install {ref} (it has {' '.join(refs) or 'nothing'})")
    needs("ANSIBLE_INSTALL_REFS", r"pip install .*\$ANSIBLE_INSTALL_REFS", "ansible-core and ansible-runner are never pip-installed")
    if definition.python_path and _containerfile_arg(text, "PYCMD") != definition.python_path:
        report.add(containerfile, "PYCMD", f"is {_containerfile_arg(text, 'PYCMD')!r}, not {definition.python_path}")

    build = context / "_build"
    # Galaxy: the context's requirements.yml is copied in and installed.
    if definition.galaxy is not None:
        needs("galaxy", r"^COPY _build /build$", "the galaxy stage does not copy _build/ (requirements.yml) in")
        needs("galaxy", r"^RUN .*ansible-galaxy collection install .*-r requirements\.yml", "installs no collections from requirements.yml")
        needs("galaxy", r"^COPY --from=galaxy /usr/share/ansible /usr/share/ansible$", "the final image does not take the installed collections")
        copied = build / "requirements.yml"
        if not copied.is_file():
            report.add(copied, "requirements.yml", "is missing from the context")
        else:
            in_context = {pin.name: pin for pin in read_pins(copied, report)}
            for pin in ee_pins:
                there = in_context.get(pin.name)
                if there is None:
                    report.add(copied, pin.name, f"is missing (ee/requirements.yml pins {pin.raw or 'it'})")
                elif there.raw != pin.raw:
                    report.add(copied, pin.name, f"is {there.raw!r}, ee/requirements.yml has {pin.raw!r}")
    # Python: _build/requirements.txt is the introspect step's --user-pip, and assemble builds it.
    if definition.python is not None:
        needs("python", r"^COPY _build/requirements\.txt requirements\.txt$", "does not copy _build/requirements.txt")
        needs("python", r"introspect .*--user-pip=requirements\.txt", "the introspect step does not read requirements.txt (--user-pip)")
        copied = build / "requirements.txt"
        if not copied.is_file():
            report.add(copied, "requirements.txt", "is missing from the context")
        else:
            have = {(canonicalize_name(r.name), str(r.specifier)) for r in read_pip(copied, report)}
            for requirement in user_pip:
                if (canonicalize_name(requirement.name), str(requirement.specifier)) not in have:
                    report.add(copied, str(requirement), "is missing from the context's Python requirements")
    # System: _build/bindep.txt is the introspect step's --user-bindep; assemble and install-from-bindep install it.
    if definition.system is not None:
        needs("system", r"^COPY _build/bindep\.txt bindep\.txt$", "does not copy _build/bindep.txt")
        needs("system", r"introspect .*--user-bindep=bindep\.txt", "the introspect step does not read bindep.txt (--user-bindep)")
        copied = build / "bindep.txt"
        if not copied.is_file():
            report.add(copied, "bindep.txt", "is missing from the context")
        else:
            have_bindep = set(read_bindep(copied))
            for package in user_bindep:
                if package not in have_bindep:
                    report.add(copied, package, "is missing from the context's system packages")
    if definition.python is not None or definition.system is not None:
        needs("assemble", r"^RUN /output/scripts/assemble$", "never runs the assemble step (wheels and bindep list)")
        needs("install-from-bindep", r"^RUN /output/scripts/install-from-bindep\b", "never installs the assembled packages")
    if definition.excluded_collections:
        needs("exclude", r"--exclude-collection-reqs=exclude-collections\.txt", "the introspect step does not leave out the excluded collections' requirements")
        listed = build / "exclude-collections.txt"
        if not listed.is_file() or set(listed.read_text(encoding="utf-8").split()) != set(definition.excluded_collections):
            report.add(listed, "exclude-collections.txt", f"does not list exactly {', '.join(definition.excluded_collections)}")
    for script in sorted(set(re.findall(r"/output/scripts/([\w.-]+)", text))):
        if not (build / "scripts" / script).is_file():
            report.add(build / "scripts" / script, script, "the Containerfile runs it but the context has no such script")
    if not any(line.startswith("ENTRYPOINT") for line in lines):
        report.add(containerfile, "ENTRYPOINT", "is not set (AWX and ansible-runner start the image through it)")


def check_collections(paths: Paths, definition: Definition, ee_pins: list[Pin], installed: dict[str, Installed], report: Report) -> None:
    ee_file = definition.galaxy or paths.repo / "ee" / "requirements.yml"
    ee_by_name: dict[str, Pin] = {}
    for pin in ee_pins:
        if pin.name == SELF_ENTRY or pin.type == "dir":
            report.add(ee_file, pin.name, "the EE does not carry this collection (the AWX project brings it); no `type: dir` entry here")
            continue
        if pin.name in ee_by_name:
            report.add(ee_file, pin.name, "is listed twice")
        ee_by_name[pin.name] = pin
        if pin.version is None:
            report.add(ee_file, pin.name, f"version {pin.raw!r} is not an exact pin (==X.Y.Z)")
            continue
        have = installed.get(pin.name)
        if have is None:
            report.add(ee_file, pin.name, f"is pinned to {pin.version} but is not in {', '.join(paths.rel(p) for p in paths.collections)}")
        elif have.version != pin.version:
            report.add(ee_file, pin.name, f"is pinned to {pin.version}, but CI tests with {have.version} ({paths.rel(have.path)})")

    # collections/requirements.yml: this collection from the checkout first, then the same pins.
    project_pins = read_pins(paths.project_requirements, report)
    if not project_pins or project_pins[0].name != SELF_ENTRY or project_pins[0].type != "dir":
        report.add(paths.project_requirements, "collections[0]", "must be this collection from the checkout: `- name: .` with `type: dir`")
    project_by_name = {pin.name: pin for pin in project_pins if pin.name != SELF_ENTRY}
    for name, pin in sorted(project_by_name.items()):
        if pin.version is None:
            report.add(paths.project_requirements, name, f"version {pin.raw!r} is not an exact pin (==X.Y.Z)")
        if name not in ee_by_name:
            report.add(ee_file, name, f"is missing; {paths.rel(paths.project_requirements)} pins it to {pin.raw!r}")
        elif pin.version != ee_by_name[name].version:
            report.add(paths.project_requirements, name, f"is {pin.raw!r}, {paths.rel(ee_file)} has {ee_by_name[name].raw!r}")
    for name, pin in sorted(ee_by_name.items()):
        if name not in project_by_name:
            report.add(paths.project_requirements, name, f"is missing; {paths.rel(ee_file)} pins it to {pin.raw!r}")

    # galaxy.yml's dependencies, then each pinned collection's own dependencies, are pinned in range.
    galaxy = load_yaml(paths.galaxy) or {}
    wanted: list[tuple[Path, str, str, str]] = [(paths.galaxy, "galaxy.yml", name, str(spec)) for name, spec in (galaxy.get("dependencies") or {}).items()]
    for name in ee_by_name:
        have = installed.get(name)
        if have is not None:
            wanted += [(have.path / "MANIFEST.json", name, dep, str(spec)) for dep, spec in have.dependencies.items()]
    for source, owner, name, spec in wanted:
        dependency = ee_by_name.get(name)
        if dependency is None:
            report.add(ee_file, name, f"is missing: {owner} depends on it ({spec})")
        elif dependency.version is not None and not meets_requirements(dependency.version, spec):
            report.add(ee_file, name, f"is pinned to {dependency.version}, outside the range {owner} asks for ({spec}, {paths.rel(source)})")

    for name in definition.excluded_collections:
        if name not in ee_by_name:
            report.add(paths.definition, f"dependencies.exclude.all_from_collections: {name}", f"is not a collection of {paths.rel(ee_file)}")


def check_python(paths: Paths, python_file: Path, user_pip: list[Requirement], report: Report) -> None:
    pins = dev_pins(paths.dev_requirements)
    for requirement in user_pip:
        version = pinned_version(requirement)
        name = canonicalize_name(requirement.name)
        if version is None:
            report.add(python_file, requirement.name, f"{str(requirement)!r} is not an exact pin (name==version)")
        elif name in pins and pins[name] != version:
            report.add(python_file, requirement.name, f"is pinned to {version}; requirements/dev.txt (what CI tests with) pins {pins[name]}")


def introspect(paths: Paths, definition: Definition, ee_pins: list[Pin], installed: dict[str, Installed], report: Report) -> tuple[list[str], list[str]]:
    """Run the builder's introspect script as the image build does, on the pinned collections from .collections."""
    script = paths.context / "_build" / "scripts" / "introspect.py"
    if not script.is_file():
        report.add(script, "introspect.py", "is missing from the context")
        return [], []
    build = paths.context / "_build"
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "collections"
        for pin in ee_pins:
            have = installed.get(pin.name)
            if have is not None:
                namespace, name = pin.name.split(".", 1)
                (root / "ansible_collections" / namespace).mkdir(parents=True, exist_ok=True)
                (root / "ansible_collections" / namespace / name).symlink_to(have.path.resolve(), target_is_directory=True)
        argv = [sys.executable, str(script), "introspect", str(root), f"--write-pip={tmp}/pip.txt", f"--write-bindep={tmp}/bindep.txt"]
        if definition.python is not None:
            argv.append(f"--user-pip={build / 'requirements.txt'}")
        if definition.system is not None:
            argv.append(f"--user-bindep={build / 'bindep.txt'}")
        if definition.excluded_collections:
            argv.append(f"--exclude-collection-reqs={build / 'exclude-collections.txt'}")
        result = subprocess.run(argv, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            report.add(script, "introspect", f"failed (rc={result.returncode}): {(result.stderr or result.stdout).strip()[-400:]}")
            return [], []
        outputs = []
        for name in ("pip.txt", "bindep.txt"):
            file = Path(tmp) / name
            outputs.append([line.strip() for line in file.read_text().splitlines() if line.strip()] if file.is_file() else [])
        return outputs[0], outputs[1]


def _requirement_key(line: str) -> tuple[str, str] | None:
    try:
        requirement = Requirement(line.split("#", 1)[0].strip())
    except InvalidRequirement:
        return None
    return canonicalize_name(requirement.name), str(requirement.specifier)


def check_introspection(definition: Definition, user_pip: list[Requirement], user_bindep: list[str], pip: list[str], bindep: list[str], report: Report) -> None:
    """What the image installs holds every requirement of ee/ (introspect merges them with the collections')."""
    got_pip = {_requirement_key(line) for line in pip}
    got_bindep = {" ".join(line.split("#", 1)[0].split()) for line in bindep}
    for requirement in user_pip:
        if (canonicalize_name(requirement.name), str(requirement.specifier)) not in got_pip:
            report.add(definition.python or report.paths.definition, str(requirement), "the image would not install it (introspect left it out)")
    for package in user_bindep:
        if package not in got_bindep:
            report.add(definition.system or report.paths.definition, package, "the image would not install it (introspect left it out)")


def check(paths: Paths) -> Report:
    report = Report(paths)
    definition = check_definition(paths, report)
    if definition is None:
        return report
    ee_pins = read_pins(definition.galaxy, report) if definition.galaxy else []
    user_pip = read_pip(definition.python, report) if definition.python else []
    user_bindep = read_bindep(definition.system) if definition.system else []
    installed = installed_collections(paths.collections)
    check_context(paths, definition, ee_pins, user_pip, user_bindep, report)
    check_collections(paths, definition, ee_pins, installed, report)
    if definition.python is not None:
        check_python(paths, definition.python, user_pip, report)
    if report.problems:
        return report  # what the image would install is moot until the files agree
    pip, bindep = introspect(paths, definition, ee_pins, installed, report)
    if not report.problems:
        check_introspection(definition, user_pip, user_bindep, pip, bindep, report)
    report.notes += [
        f"base image {definition.base_image}; {definition.ansible_core}, {definition.ansible_runner}",
        "collections: " + ", ".join(f"{p.name} {p.version}" for p in ee_pins),
        "Python (the image installs): " + (", ".join(line.split("#", 1)[0].strip() for line in pip) or "nothing"),
        "system (the image installs): " + (", ".join(line.split("#", 1)[0].strip() for line in bindep) or "nothing"),
    ]
    return report


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--context", type=Path, required=True, help="the folder `ansible-builder create -c` wrote")
    parser.add_argument("--repo", type=Path, default=REPO, help="the checkout (default: this one)")
    parser.add_argument("--collections-path", type=Path, action="append", default=[], help="installed collections (default: <repo>/.collections)")
    args = parser.parse_args(argv)
    report = check(Paths.for_repo(args.repo.resolve(), args.context.resolve(), args.collections_path))
    for problem in report.problems:
        print(f"check-ee: {problem}", file=sys.stderr)
    if report.problems:
        print(f"check-ee: {len(report.problems)} problem(s)", file=sys.stderr)
        return 1
    for note in report.notes:
        print(f"check-ee: {note}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
