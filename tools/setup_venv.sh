#!/usr/bin/env bash
# The controller toolchain: .venv (Python 3.11, pinned) and .collections (this collection plus the
# collections taken out of PyPI's `ansible` package). Idempotent: does nothing when nothing changed.
set -euo pipefail
cd "$(dirname "$0")/.."

python=${PYTHON:-python3.11}
venv=.venv
stamp=$venv/.sparkops-requirements.sha256
want=$(cat requirements/dev.txt requirements/collections.txt requirements/ansible-package.txt tools/setup_venv.sh | sha256sum | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -L .collections/ansible_collections/sparkops/inference ]; then
  exit 0
fi

command -v "$python" >/dev/null || { echo "setup-venv: $python not found (the toolchain is pinned to Python 3.11)" >&2; exit 1; }
[ -x $venv/bin/python ] || "$python" -m venv $venv
$venv/bin/python -m pip install --quiet --disable-pip-version-check -r requirements/dev.txt

# Collections: extract only the listed ones from the community package's wheel.
rm -rf .collections
mkdir -p .collections/ansible_collections/sparkops
download=$(mktemp -d)
trap 'rm -rf "$download"' EXIT
$venv/bin/python -m pip download --quiet --disable-pip-version-check --no-deps -d "$download" -r requirements/ansible-package.txt
$venv/bin/python - "$download"/ansible-*.whl .collections requirements/collections.txt <<'PY'
import sys, zipfile
wheel, dest, listing = sys.argv[1:4]
wanted = [l.strip() for l in open(listing) if l.strip() and not l.startswith("#")]
with zipfile.ZipFile(wheel) as zf:
    for fqcn in wanted:
        prefix = "ansible_collections/" + fqcn.replace(".", "/") + "/"
        members = [m for m in zf.namelist() if m.startswith(prefix)]
        if not members:
            sys.exit(f"setup-venv: collection {fqcn} is not in {wheel}")
        zf.extractall(dest, members)
        print(f"setup-venv: collection {fqcn} from {wheel.rsplit('/', 1)[-1]}")
PY
# This collection itself: a link to the checkout, so edits take effect with no install step.
ln -sfn ../../.. .collections/ansible_collections/sparkops/inference
echo "$want" > "$stamp"
