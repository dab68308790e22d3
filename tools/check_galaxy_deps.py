"""galaxy.yml's `dependencies` name exactly the collections that the collection's own files use.

Scans the files that go into the artifact (roles/, playbooks/, plugins/, meta/, site.yml) of a checkout (galaxy.yml)
or of an installed collection (MANIFEST.json) for the collections they use:

* YAML (tasks, handlers, playbooks, meta, argument specs, doc sidecars): a task's action key (`ns.coll.module:`),
  `action:`/`local_action:`, roles (`roles:`, `role:`, `include_role`/`import_role` `name:`, meta `dependencies:`),
  `import_playbook:`, the `collections:` keyword, `module_defaults` groups, `extends_documentation_fragment`,
  meta/runtime.yml redirects, and inside Jinja (a `{{ }}`/`{% %}` region, or a whole `when:`-like value) filters
  (`| ns.coll.f`), tests (`is ns.coll.t`) and lookups (`lookup('ns.coll.l')`, `query(...)`, `q(...)`);
* Jinja templates (`*.j2`): the same Jinja uses;
* Python: imports of `ansible_collections.<ns>.<coll>`, DOCUMENTATION's `extends_documentation_fragment`, and string
  constants that are a plugin name of a collection found on the collections path (an action plugin running a module).

Jinja uses and role, playbook and import references count whatever the collection (that is where a collection name
is the only reading). A dotted key of a mapping counts as a task's action only inside a list, and only when its
collection is installed or declared or the mapping has task keywords: `net.ipv4.ip_forward: 1` in a list of sysctl
settings is not a module. Dotted variables (`ansible_facts.default_ipv4.address`, `hostvars[h].a.b`) and text outside
Jinja (a shell pipe, a description) never count. `seealso` in module docs is a link, not a use.

ansible.builtin, ansible.legacy and the collection itself are left out. Every other collection used must be in
galaxy.yml's dependencies, and every dependency must be used; each mismatch is reported with file and line.
Exit status 1 on any mismatch.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

DEFAULT_ROOTS = ("roles", "playbooks", "plugins", "meta", "site.yml")
ALWAYS_THERE = frozenset({"ansible.builtin", "ansible.legacy"})
SKIP_DIRS = frozenset({"__pycache__", ".git", "tests", "molecule"})

_NAME = r"[a-z_][a-z0-9_]*"
FQCN = rf"{_NAME}\.{_NAME}(?:\.{_NAME})+"
FQCN_RE = re.compile(rf"^{FQCN}$")
COLLECTION_RE = re.compile(rf"^{_NAME}\.{_NAME}$")
JINJA_REGION_RE = re.compile(r"\{\{(.*?)\}\}|\{%(.*?)%\}", re.DOTALL)
JINJA_USES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("filter", re.compile(rf"\|\s*({FQCN})\b")),
    ("test", re.compile(rf"\bis\s+(?:not\s+)?({FQCN})\b")),
    ("lookup", re.compile(rf"\b(?:lookup|query|q)\(\s*['\"]({FQCN})['\"]")),
    ("filter", re.compile(rf"^\s*-?\s*filter\s+({FQCN})\b")),  # {% filter ns.coll.f %}
)
# Values that Ansible reads as bare Jinja expressions.
EXPRESSION_KEYS = frozenset({"when", "that", "changed_when", "failed_when", "until"})
TASK_KEYWORDS = frozenset(
    (
        "name", "when", "register", "loop", "loop_control", "with_items", "with_dict", "become", "become_user", "tags",
        "delegate_to", "run_once", "notify", "listen", "vars", "args", "changed_when", "failed_when", "ignore_errors",
        "until", "retries", "delay", "check_mode", "diff", "no_log", "environment", "async", "poll", "throttle",
    )
)
ROLE_ACTIONS = frozenset(
    {"include_role", "import_role", "ansible.builtin.include_role", "ansible.builtin.import_role", "ansible.legacy.include_role"}
)
ROLE_LIST_KEYS = frozenset({"roles", "dependencies"})
# Documentation that names other collections without using them: links and examples.
NOT_USES = frozenset({"seealso", "EXAMPLES", "RETURN"})


@dataclass(frozen=True)
class Use:
    """One place where a file names a plugin, role or playbook of a collection."""

    collection: str
    name: str
    kind: str
    path: str
    line: int

    def where(self) -> str:
        return f"{self.path}:{self.line}"


@dataclass(frozen=True)
class Problem:
    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}" if self.line else f"{self.path}: {self.message}"


def collection_of(fqcn: str) -> str:
    return ".".join(fqcn.split(".")[:2])


def jinja_uses(text: str, expression: bool = False) -> Iterator[tuple[str, str, int]]:
    """(kind, fqcn, offset) of each filter, test or lookup that names a collection in Jinja text.

    Only Jinja counts: `{{ }}` and `{% %}` regions, or the whole text when it is an expression (`when:`).
    """
    regions: list[tuple[int, str]] = []
    if expression:
        regions.append((0, text))
    else:
        for match in JINJA_REGION_RE.finditer(text):
            group = 1 if match.group(1) is not None else 2
            regions.append((match.start(group), match.group(group)))
    for start, region in regions:
        for kind, pattern in JINJA_USES:
            for found in pattern.finditer(region):
                yield kind, found.group(1), start + found.start(1)


def _line_at(text: str, offset: int) -> int:
    return text.count("\n", 0, offset)


class YamlScanner:
    """Walks a composed YAML document (nodes keep their line numbers) and records the uses it finds."""

    def __init__(self, path: str, known: set[str], uses: list[Use]) -> None:
        self.path = path
        self.known = known
        self.uses = uses

    def add(self, fqcn: str, kind: str, line: int) -> None:
        self.uses.append(Use(collection_of(fqcn), fqcn, kind, self.path, line + 1))

    def scalar_text(self, node: ScalarNode, expression: bool = False) -> None:
        text = str(node.value)
        # A block scalar's text starts on the line after its indicator; a folded one (>) may shift a use by a line or
        # two, which is close enough to find it.
        first = node.start_mark.line + (1 if node.style in ("|", ">") else 0)
        for kind, fqcn, offset in jinja_uses(text, expression):
            self.add(fqcn, kind, first + _line_at(text, offset))

    def reference(self, node: Node, kind: str) -> None:
        """A scalar naming a role, playbook, fragment or redirect target: it counts when it is a FQCN."""
        if not isinstance(node, ScalarNode):
            self.walk(node)
            return
        value = str(node.value).strip()
        if FQCN_RE.match(value):
            self.add(value, kind, node.start_mark.line)
        else:
            self.scalar_text(node)

    def role_entry(self, node: Node) -> None:
        """An item of `roles:` or meta `dependencies:`, or the arguments of include_role/import_role."""
        if not isinstance(node, MappingNode):
            self.reference(node, "role")
            return
        for key, value in node.value:
            if isinstance(key, ScalarNode) and key.value in ("role", "name"):
                self.reference(value, "role")
            else:
                self.walk(value, expression=isinstance(key, ScalarNode) and key.value in EXPRESSION_KEYS)

    def walk(self, node: Node, in_sequence: bool = False, expression: bool = False) -> None:
        if isinstance(node, ScalarNode):
            self.scalar_text(node, expression)
        elif isinstance(node, SequenceNode):
            for item in node.value:
                self.walk(item, in_sequence=True, expression=expression)
        elif isinstance(node, MappingNode):
            self.mapping(node, in_sequence)

    def mapping(self, node: MappingNode, in_sequence: bool) -> None:
        keys = {str(k.value) for k, _value in node.value if isinstance(k, ScalarNode)}
        task_like = in_sequence and bool(keys & TASK_KEYWORDS)
        for key_node, value in node.value:
            if not isinstance(key_node, ScalarNode):
                self.walk(value)
                continue
            key = str(key_node.value)
            if key in NOT_USES:
                continue
            if in_sequence and FQCN_RE.match(key) and (task_like or collection_of(key) in self.known):
                self.add(key, "module", key_node.start_mark.line)
            if key in ROLE_ACTIONS and isinstance(value, MappingNode):
                self.role_entry(value)
            elif key in ROLE_LIST_KEYS and isinstance(value, SequenceNode):
                for item in value.value:
                    self.role_entry(item)
            elif key == "role":
                self.reference(value, "role")
            elif key in ("import_playbook", "ansible.builtin.import_playbook"):
                self.reference(value, "playbook")
            elif key == "redirect":
                self.reference(value, "redirect")
            elif key == "extends_documentation_fragment":
                for item in value.value if isinstance(value, SequenceNode) else [value]:
                    self.reference(item, "doc fragment")
            elif key == "collections" and isinstance(value, SequenceNode):
                self.collections_keyword(value)
            elif key in ("action", "local_action"):
                self.action(value)
            elif key == "module_defaults" and isinstance(value, MappingNode):
                self.module_defaults(value)
            else:
                self.walk(value, expression=key in EXPRESSION_KEYS)

    def collections_keyword(self, node: SequenceNode) -> None:
        for item in node.value:
            if isinstance(item, ScalarNode) and COLLECTION_RE.match(str(item.value)):
                self.uses.append(Use(str(item.value), str(item.value), "collections keyword", self.path, item.start_mark.line + 1))

    def action(self, node: Node) -> None:
        """`action: ns.coll.module args` or `action: {module: ns.coll.module, ...}`."""
        if isinstance(node, ScalarNode):
            words = str(node.value).split(maxsplit=1)
            if words and FQCN_RE.match(words[0]):
                self.add(words[0], "module", node.start_mark.line)
            else:
                self.scalar_text(node)
        elif isinstance(node, MappingNode):
            for key, value in node.value:
                if isinstance(key, ScalarNode) and key.value == "module":
                    self.reference(value, "module")
                else:
                    self.walk(value)

    def module_defaults(self, node: MappingNode) -> None:
        for key, value in node.value:
            name = str(key.value).removeprefix("group/") if isinstance(key, ScalarNode) else ""
            if FQCN_RE.match(name):
                self.add(name, "module defaults", key.start_mark.line)
            self.walk(value)


def scan_yaml(path: Path, rel: str, known: set[str], uses: list[Use], problems: list[Problem]) -> None:
    try:
        documents = list(yaml.compose_all(path.read_text(encoding="utf-8"), Loader=yaml.SafeLoader))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problems.append(Problem(rel, mark.line + 1 if mark else 0, f"cannot be read as YAML: {exc}"))
        return
    scanner = YamlScanner(rel, known, uses)
    for document in documents:
        if document is not None:
            scanner.walk(document)


def scan_template(path: Path, rel: str, uses: list[Use]) -> None:
    text = path.read_text(encoding="utf-8", errors="replace")
    for kind, fqcn, offset in jinja_uses(text):
        uses.append(Use(collection_of(fqcn), fqcn, kind, rel, _line_at(text, offset) + 1))


def _doc_fragments(doc: str) -> list[str]:
    try:
        data = yaml.safe_load(doc)
    except yaml.YAMLError:
        return []  # ansible-doc and validate-modules report unreadable docs
    fragments = data.get("extends_documentation_fragment") if isinstance(data, dict) else None
    if isinstance(fragments, str):
        return [fragments]
    return [str(f) for f in fragments] if isinstance(fragments, list) else []


def scan_python(path: Path, rel: str, known: set[str], uses: list[Use], problems: list[Problem]) -> None:
    source = path.read_text(encoding="utf-8")
    try:
        tree = ast.parse(source, filename=rel)
    except SyntaxError as exc:
        problems.append(Problem(rel, exc.lineno or 0, f"cannot be parsed as Python: {exc.msg}"))
        return
    docs: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                _python_import(alias.name, node.lineno, rel, uses)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "ansible_collections" or re.fullmatch(rf"ansible_collections\.{_NAME}", node.module):
                for alias in node.names:
                    _python_import(f"{node.module}.{alias.name}", node.lineno, rel, uses)
            else:
                _python_import(node.module, node.lineno, rel, uses)
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            names = {target.id for target in node.targets if isinstance(target, ast.Name)}
            if names & {"DOCUMENTATION", "EXAMPLES", "RETURN"}:
                docs.add(id(node.value))  # the docs' text is no use; DOCUMENTATION's fragments are
            if "DOCUMENTATION" in names:
                doc = node.value.value
                for fragment in _doc_fragments(doc):
                    if FQCN_RE.match(fragment):
                        line = node.value.lineno + _line_at(doc, max(doc.find(fragment), 0))
                        uses.append(Use(collection_of(fragment), fragment, "doc fragment", rel, line))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            value = node.value.strip()
            if FQCN_RE.match(value) and collection_of(value) in known:
                uses.append(Use(collection_of(value), value, "plugin name", rel, node.lineno))


def _python_import(module: str, line: int, rel: str, uses: list[Use]) -> None:
    parts = module.split(".")
    if parts[0] == "ansible_collections" and len(parts) >= 3:
        uses.append(Use(f"{parts[1]}.{parts[2]}", module, "python import", rel, line))


def artifact_files(root: Path, roots: Iterable[str] = DEFAULT_ROOTS) -> Iterator[Path]:
    for name in roots:
        start = root / name
        if start.is_file():
            yield start
        elif start.is_dir():
            for path in sorted(start.rglob("*")):
                if path.is_file() and not SKIP_DIRS.intersection(path.relative_to(root).parts):
                    yield path


def scan(root: Path, known: set[str], roots: Iterable[str] = DEFAULT_ROOTS) -> tuple[list[Use], list[Problem]]:
    uses: list[Use] = []
    problems: list[Problem] = []
    for path in artifact_files(root, roots):
        rel = path.relative_to(root).as_posix()
        if path.suffix in (".yml", ".yaml"):
            scan_yaml(path, rel, known, uses, problems)
        elif path.suffix == ".j2":
            scan_template(path, rel, uses)
        elif path.suffix == ".py":
            scan_python(path, rel, known, uses, problems)
    return uses, problems


@dataclass(frozen=True)
class Declared:
    """The collection's name and its dependencies, with the line of each in galaxy.yml (0 for MANIFEST.json)."""

    source: str
    fqcn: str
    dependencies: dict[str, tuple[str, int]]


def read_declared(root: Path, galaxy: Path | None = None) -> Declared:
    """The dependencies from `galaxy` (default: the root's galaxy.yml), else from the root's MANIFEST.json."""
    galaxy = galaxy or root / "galaxy.yml"
    if galaxy.is_file():
        node = yaml.compose(galaxy.read_text(encoding="utf-8"), Loader=yaml.SafeLoader)
        data = yaml.safe_load(galaxy.read_text(encoding="utf-8"))
        deps: dict[str, tuple[str, int]] = {}
        if isinstance(node, MappingNode):
            for key, value in node.value:
                if key.value == "dependencies" and isinstance(value, MappingNode):
                    for dep_key, dep_value in value.value:
                        deps[str(dep_key.value)] = (str(dep_value.value), dep_key.start_mark.line + 1)
        return Declared("galaxy.yml", f"{data['namespace']}.{data['name']}", deps)
    manifest = root / "MANIFEST.json"
    if manifest.is_file():
        info = json.loads(manifest.read_text(encoding="utf-8"))["collection_info"]
        return Declared("MANIFEST.json", f"{info['namespace']}.{info['name']}", {k: (str(v), 0) for k, v in (info.get("dependencies") or {}).items()})
    raise FileNotFoundError(f"{root} has neither galaxy.yml nor MANIFEST.json")


def installed_collections(paths: Iterable[Path]) -> set[str]:
    found: set[str] = set()
    for path in paths:
        base = path / "ansible_collections"
        if base.is_dir():
            found.update(f"{ns.name}.{coll.name}" for ns in base.iterdir() if ns.is_dir() for coll in ns.iterdir() if coll.is_dir())
    return found


def compare(declared: Declared, uses: Iterable[Use]) -> list[Problem]:
    ignored = ALWAYS_THERE | {declared.fqcn}
    by_collection: dict[str, list[Use]] = {}
    for use in uses:
        if use.collection not in ignored:
            by_collection.setdefault(use.collection, []).append(use)
    problems: list[Problem] = []
    for collection, places in sorted(by_collection.items()):
        if collection not in declared.dependencies:
            for use in places:
                problems.append(
                    Problem(use.path, use.line, f"{use.name} ({use.kind}) is from {collection}, which {declared.source}'s dependencies do not list")
                )
    for collection, (version, line) in sorted(declared.dependencies.items()):
        if collection not in by_collection:
            problems.append(
                Problem(declared.source, line, f"dependency {collection} ({version}) is used by no file of the artifact ({', '.join(DEFAULT_ROOTS)})")
            )
    return problems


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent, help="a checkout (galaxy.yml) or an installed collection")
    parser.add_argument(
        "--collections-path", type=Path, action="append", default=[], help="where installed collections are (repeatable; default: the repo's .collections)"
    )
    parser.add_argument("--galaxy", type=Path, help="the galaxy.yml to read the dependencies from (default: the root's, else its MANIFEST.json)")
    parser.add_argument("-v", "--verbose", action="store_true", help="list every use")
    args = parser.parse_args(argv)
    paths = args.collections_path or [Path(__file__).resolve().parent.parent / ".collections"]
    declared = read_declared(args.root, args.galaxy)
    known = installed_collections(paths) | set(declared.dependencies)
    uses, problems = scan(args.root, known)
    problems += compare(declared, uses)
    if args.verbose:
        for use in uses:
            print(f"  {use.where()}: {use.name} ({use.kind})")
    foreign = sorted({u.collection for u in uses} - ALWAYS_THERE - {declared.fqcn})
    for problem in problems:
        print(f"check-galaxy-deps: {problem}", file=sys.stderr)
    if problems:
        print(f"check-galaxy-deps: {len(problems)} problem(s) in {args.root}", file=sys.stderr)
        return 1
    counts = ", ".join(f"{c} ({sum(1 for u in uses if u.collection == c)})" for c in foreign)
    print(f"check-galaxy-deps: {declared.source}'s dependencies match what {declared.fqcn} uses: {counts or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
