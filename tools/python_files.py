"""The collection's Python programs without the .py extension, as ruff.toml's `extend-include` names them.

    python tools/python_files.py --extensionless   # one path a line (tools/mypy.sh type-checks each)
    python tools/python_files.py --check           # exit 1 naming any extensionless Python file the list misses

ruff reads the list itself (ruff.toml); tools/mypy.sh runs --check, then mypy over each listed file. A file git
tracks (or would: untracked, not ignored) without a suffix counts as Python when its first line is a python shebang,
or when it sits with the roles' node scripts (roles/*/files) or the lab's stand-ins (tests/lab/standins), has no
other shebang and parses as Python.
"""

from __future__ import annotations

import argparse
import ast
import subprocess
import sys
import tomllib
from pathlib import Path, PurePosixPath

REPO = Path(__file__).resolve().parent.parent
SCRIPT_HOMES = ("roles/*/files/*", "tests/lab/standins/*")


def listed(repo: Path = REPO) -> list[str]:
    """The files ruff.toml's extend-include patterns match, relative to the repository, sorted."""
    patterns = tomllib.loads((repo / "ruff.toml").read_text(encoding="utf-8")).get("extend-include", [])
    return sorted({path.relative_to(repo).as_posix() for pattern in patterns for path in repo.glob(pattern) if path.is_file()})


def is_python(repo: Path, name: str) -> bool:
    path = repo / name
    if PurePosixPath(name).suffix or not path.is_file():
        return False
    try:
        text = path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return False
    first = text.split("\n", 1)[0]
    if first.startswith("#!"):
        return "python" in first
    if not any(PurePosixPath(name).match(home) for home in SCRIPT_HOMES):
        return False
    try:
        return bool(ast.parse(text).body)
    except SyntaxError:
        return False


def tracked(repo: Path = REPO) -> list[str]:
    """Tracked files and untracked ones git does not ignore."""
    out = subprocess.run(["git", "-C", str(repo), "ls-files", "-z", "--cached", "--others", "--exclude-standard"], capture_output=True, check=True).stdout
    return [name for name in out.decode().split("\0") if name]


def missing(repo: Path = REPO) -> list[str]:
    """Tracked extensionless Python files that ruff.toml's extend-include does not name."""
    covered = set(listed(repo))
    return [name for name in tracked(repo) if name not in covered and is_python(repo, name)]


def main(argv: list[str] | None = None, repo: Path = REPO) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--extensionless", action="store_true", help="print the extensionless Python files ruff.toml names")
    group.add_argument("--check", action="store_true", help="exit 1 if a tracked extensionless Python file is not named")
    args = parser.parse_args(argv)
    if args.extensionless:
        print("\n".join(listed(repo)))
        return 0
    left_out = missing(repo)
    for name in left_out:
        print(f"{name}: Python without the .py extension; add it to ruff.toml's extend-include", file=sys.stderr)
    return 1 if left_out else 0


if __name__ == "__main__":
    sys.exit(main())
