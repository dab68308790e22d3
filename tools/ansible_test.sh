#!/usr/bin/env bash
# Run `ansible-test <command> ...` offline on a copy of the checkout laid out as
# <tmp>/ansible_collections/sparkops/inference, as ansible-test requires (a symlink does not work).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

# ansible-test bootstraps pip into its venvs from a URL this machine cannot reach; it first looks for a
# cached copy of that script. Seed the cache with a shim that uses ensurepip and PyPI instead.
pip_version=$(python - <<'PY'
import re, ansible_test, pathlib
src = pathlib.Path(ansible_test.__file__).parent.joinpath("_internal/python_requirements.py").read_text()
print(re.search(r"pip='([0-9.]+)'", src).group(1))
PY
)
install -D -m 0644 tools/get_pip_shim.py "$HOME/.ansible/test/cache/get_pip_${pip_version//./_}.py"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
dest=$work/ansible_collections/sparkops/inference
mkdir -p "$dest"
# Tracked and untracked (not ignored) files that exist: a file deleted but not yet staged is skipped.
git -C "$repo" ls-files -z --cached --others --exclude-standard \
  | (cd "$repo" && while IFS= read -r -d '' f; do if [ -e "$f" ]; then printf '%s\0' "$f"; fi; done) \
  | (cd "$repo" && xargs -0 cp --parents -t "$dest")
cd "$dest"
ansible-test "$@" --python 3.11 --color no
