#!/usr/bin/env bash
# The collection as Galaxy (and AWX's project sync) gets it:
#  - changelog fragments lint clean (antsibull-changelog);
#  - `ansible-galaxy collection build` makes an artifact without lab files, caches, venvs, ee/ or awx/;
#  - galaxy.yml's dependencies are exactly the collections the artifact's files use (tools/check_galaxy_deps.py);
#  - installed into an empty collections path, with only its dependencies beside it (copied from .collections, at
#    versions in galaxy.yml's ranges) and no trace of the checkout (temporary cwd and ansible.cfg), the artifact's
#    playbooks parse by FQCN, a play on localhost runs its filters and a dependency's, its action plugin runs, and
#    every module, filter, test, lookup and role argument spec renders with ansible-doc, with a description.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "check-build: $*" >&2; exit 1; }

antsibull-changelog lint || fail "changelogs/fragments: antsibull-changelog lint failed (above)"
echo "check-build: changelog fragments lint clean"

ansible-galaxy collection build --output-path "$work/dist" . >/dev/null
artifact=$(ls "$work"/dist/sparkops-inference-*.tar.gz)
tar -tzf "$artifact" | sed 's#^\./##' | sort > "$work/contents"
echo "check-build: $(wc -l < "$work/contents") entries in $(basename "$artifact")"

forbidden='^(\.lab|\.venv|\.collections|\.ansible|\.cache|\.git|\.ci|\.pytest_cache|\.mypy_cache|\.ruff_cache|tests|molecule|tools|requirements|dist|bench|ee|awx|collections)(/|$)|__pycache__|\.pyc$|^inventories/lab(/|$)|\.tar\.gz$'
if grep -E "$forbidden" "$work/contents"; then
  fail "the artifact carries the files above (lab, caches, venvs, test material, ee/ or awx/)"
fi
for required in MANIFEST.json FILES.json README.md meta/runtime.yml playbooks/site.yml plugins/modules/cluster_contract.py \
                plugins/action/cluster_contract.py plugins/plugin_utils/_cluster_contract.py inventories/sparks/hosts.yml; do
  grep -qx "$required" "$work/contents" || fail "$required is missing from the artifact"
done

# An empty collections path, and an Ansible that sees only it: no repo ansible.cfg (temporary cwd, own config), no
# ANSIBLE_COLLECTIONS_PATH from the caller, no collections on sys.path, no roles path.
cols=$work/collections
mkdir -p "$work/cwd" "$work/roles" "$cols"
printf '[defaults]\ncollections_path = %s\ncollections_scan_sys_path = False\nroles_path = %s\n' "$cols" "$work/roles" > "$work/ansible.cfg"
isolated() {
  (cd "$work/cwd" && env -u ANSIBLE_COLLECTIONS_PATHS -u ANSIBLE_INVENTORY ANSIBLE_CONFIG="$work/ansible.cfg" ANSIBLE_COLLECTIONS_PATH="$cols" \
     ANSIBLE_COLLECTIONS_SCAN_SYS_PATH=False ANSIBLE_ROLES_PATH="$work/roles" ANSIBLE_FORCE_COLOR=false ANSIBLE_NOCOLOR=true "$@")
}
isolated ansible-galaxy collection install --offline --no-deps -p "$cols" "$artifact" >/dev/null
installed=$cols/ansible_collections/sparkops/inference

# galaxy.yml's dependencies, then theirs, from .collections, each at a version in the range asked for.
python - "$repo/.collections" "$cols" "$installed/MANIFEST.json" <<'PY'
import json, shutil, sys
from pathlib import Path
from ansible.galaxy.dependency_resolution.versioning import meets_requirements
source, dest, manifest = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
todo = [("sparkops.inference", name, spec) for name, spec in json.loads(manifest.read_text())["collection_info"]["dependencies"].items()]
copied: dict[str, str] = {}
while todo:
    parent, name, spec = todo.pop(0)
    folder = source.joinpath("ansible_collections", *name.split("."))
    if not (folder / "MANIFEST.json").is_file():
        sys.exit(f"check-build: {parent} depends on {name} ({spec}), which .collections does not hold")
    info = json.loads((folder / "MANIFEST.json").read_text())["collection_info"]
    if not meets_requirements(info["version"], spec):
        sys.exit(f"check-build: {parent} depends on {name} {spec}; .collections holds {info['version']}")
    if name not in copied:
        shutil.copytree(folder, dest.joinpath("ansible_collections", *name.split(".")), symlinks=True)
        copied[name] = info["version"]
        todo += [(name, dep, dep_spec) for dep, dep_spec in (info.get("dependencies") or {}).items()]
print("check-build: dependencies beside the artifact: " + ", ".join(f"{k} {v}" for k, v in copied.items()))
PY

# Ansible sees the installed artifact, and nothing of the checkout.
isolated ansible-galaxy collection list --format json > "$work/list.json"
python - "$work/list.json" "$cols" <<'PY'
import json, sys
listing, cols = json.load(open(sys.argv[1])), sys.argv[2]
where = [(name, path) for path, found in listing.items() for name in found if not name.startswith("ansible._")]
stray = [f"{name} in {path}" for name, path in where if not path.startswith(cols)]
if stray or "sparkops.inference" not in dict(where):
    sys.exit(f"check-build: Ansible sees more than the artifact and its dependencies, or not the artifact: {stray or where}")
PY

python tools/check_galaxy_deps.py --root "$installed" --galaxy galaxy.yml --collections-path "$repo/.collections"

inventory=$installed/inventories/sparks
mapfile -t playbooks < <(grep -E '^playbooks/[^/]+\.ya?ml$' "$work/contents" | sed -E 's#^playbooks/##; s#\.ya?ml$##; s#^#sparkops.inference.#')
isolated ansible-playbook -i "$inventory" --syntax-check "${playbooks[@]}" "$installed/site.yml" >/dev/null
echo "check-build: playbooks parse by FQCN from the installed artifact: ${playbooks[*]} (and its site.yml)"

cat > "$work/cwd/localhost.yml" <<'YAML'
---
- name: The installed collection runs on the controller
  hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Its filters and its dependencies' (ansible.utils) work
      ansible.builtin.assert:
        that:
          - >-
            ({'NCCL_SOCKET_IFNAME': 'enp1s0f1np1', 'NCCL_IB_HCA': 'rocep1s0f1:1'} | sparkops.inference.env_file)
            == 'NCCL_SOCKET_IFNAME=enp1s0f1np1\nNCCL_IB_HCA=rocep1s0f1:1\n'
          - >-
            ({'a': {'ray_version': '2.60.0', 'python_version': '3.12.3'}, 'b': {'ray_version': '2.60.0', 'python_version': '3.12.4'}}
             | sparkops.inference.ray_version_mismatches) == ['Python 3.12.4 on b differs from 3.12.3 on a']
          - "'192.0.2.1' is ansible.utils.ipv4_address"
          - ('192.0.2.0/24' | ansible.utils.ipaddr('prefix')) == 24
YAML
isolated ansible-playbook -i localhost, localhost.yml >"$work/localhost.log" 2>&1 || { cat "$work/localhost.log" >&2; fail "the play on localhost failed"; }
isolated ansible spark-head -i "$inventory" -m sparkops.inference.cluster_contract -o >"$work/contract.log" 2>&1 \
  || { cat "$work/contract.log" >&2; fail "sparkops.inference.cluster_contract (action plugin, on the controller) failed on the artifact's inventory"; }
echo "check-build: a play on localhost ran the installed filters and ansible.utils'; cluster_contract ran on the artifact's inventory"

# Every module, filter, test, lookup and role argument spec renders, with a description, from the installed copy.
isolated python - "$work/contents" "$installed" <<'PY'
import json, re, subprocess, sys
contents, installed = open(sys.argv[1]).read().split(), sys.argv[2]
problems: list[str] = []

def doc(kind: str, names: list[str], *options: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ansible-doc", "-t", kind, *options, *names], capture_output=True, text=True, check=False)

def listed(kind: str) -> list[str]:
    out = doc(kind, ["sparkops.inference"], "--list", "--json")
    if out.returncode != 0 or re.search(r"\[(WARNING|ERROR)\]", out.stderr):
        problems.append(f"ansible-doc -t {kind} --list: rc={out.returncode} {out.stderr.strip()[-600:]}")
    found = json.loads(out.stdout or "{}")
    problems.extend(f"{kind} {name}: listed as {text!r}" for name, text in found.items() if not text or text == "UNDOCUMENTED")
    return sorted(found)

def text(value: object) -> str:
    return " ".join(value) if isinstance(value, list) else str(value or "")

def render(kind: str, names: list[str]) -> None:
    if not names:
        return
    out = doc(kind, names, "--json")
    if out.returncode != 0:  # find which: ansible-doc gives nothing for a batch with one unreadable plugin
        for name in names:
            one = doc(kind, [name], "--json")
            if one.returncode != 0:
                problems.append(f"{kind} {name} does not render: {one.stderr.strip()[-600:]}")
        return
    data = json.loads(out.stdout)
    for name in names:
        entry = data.get(name)
        if not entry:
            problems.append(f"{kind} {name}: ansible-doc has no documentation for it")
            continue
        if kind == "role":
            if not entry.get("path", "").startswith(installed):
                problems.append(f"role {name}: documented from {entry.get('path')}, not the installed artifact")
            if not entry.get("entry_points"):
                problems.append(f"role {name}: no argument spec (meta/argument_specs.yml)")
            for point, spec in (entry.get("entry_points") or {}).items():
                if not text(spec.get("short_description")).strip() or not text(spec.get("description")).strip():
                    problems.append(f"role {name}, entry point {point}: no short_description or description")
            continue
        documented = entry.get("doc") or {}
        if not documented.get("filename", "").startswith(installed):
            problems.append(f"{kind} {name}: documented from {documented.get('filename')}, not the installed artifact")
        if not text(documented.get("short_description")).strip() or not text(documented.get("description")).strip():
            problems.append(f"{kind} {name}: no short_description or description")
    rendered = doc(kind, names)
    if rendered.returncode != 0 or "[ERROR]" in rendered.stderr:
        problems.append(f"ansible-doc -t {kind} (text) failed: {rendered.stderr.strip()[-600:]}")

modules = sorted(f"sparkops.inference.{m}" for m in re.findall(r"^plugins/modules/([a-z_][a-z0-9_]*)\.py$", "\n".join(contents), re.M))
unlisted = sorted(set(modules) - set(listed("module")))
problems.extend(f"module {name}: not listed by ansible-doc --list (its docs cannot be read)" for name in unlisted)
summary = {"module": modules}
for kind in ("filter", "test", "lookup"):
    summary[kind] = listed(kind)
    files = set(re.findall(rf"^plugins/{kind}/([a-z_][a-z0-9_]*)\.py$", "\n".join(contents), re.M))
    if files and not summary[kind]:
        problems.append(f"plugins/{kind}/ has {', '.join(sorted(files))} but ansible-doc lists no {kind}")
summary["role"] = sorted(f"sparkops.inference.{r}" for r in {p.split("/")[1] for p in contents if re.match(r"^roles/[^/]+/", p)})
for role in summary["role"]:
    short = role.rsplit(".", 1)[1]
    if f"roles/{short}/meta/argument_specs.yml" not in contents and f"roles/{short}/meta/argument_specs.yaml" not in contents:
        problems.append(f"role {role}: no meta/argument_specs.yml")
for kind, names in summary.items():
    render(kind, names)
for problem in problems:
    print(f"check-build: {problem}", file=sys.stderr)
if problems:
    sys.exit(1)
print("check-build: ansible-doc renders " + ", ".join(f"{len(n)} {k}{'s' if len(n) != 1 else ''}" for k, n in summary.items()) + ", each with a description")
PY
