"""tools/python_files.py: the extensionless Python programs ruff.toml names, and the ones it would miss."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import python_files

RUFF = """\
line-length = 160
extend-include = ["roles/*/files/sparkops-*", "tests/lab/standins/docker"]
"""


def make_repo(root: Path, files: dict[str, str]) -> Path:
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "ruff.toml").write_text(RUFF)
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_this_checkout_names_every_extensionless_python_file() -> None:
    listed = python_files.listed()
    assert python_files.missing() == []
    assert "roles/nccl_env/files/sparkops-nccl-check" in listed  # no shebang: found by where it sits
    assert "tests/lab/standins/docker" in listed
    assert all("." not in Path(name).name for name in listed)


def test_missing_finds_python_by_shebang_anywhere_and_by_place_without_one(tmp_path: Path) -> None:
    repo = make_repo(
        tmp_path,
        {
            "roles/a/files/sparkops-gate": "#!/usr/bin/python3\nprint(1)\n",  # listed
            "tests/lab/standins/docker": "#!/usr/bin/env python3\nprint(1)\n",  # listed
            "tests/lab/standins/hf-hub": "#!/usr/bin/env python3\nprint(1)\n",  # python, not listed
            "roles/a/files/helper": '"""A helper run with the engine\'s Python."""\nimport sys\n',  # python, not listed
            "roles/a/files/setup": "#!/bin/bash\necho hi\n",  # another shebang: not python
            "tools/extra": "#!/usr/bin/env python3\n",  # python shebang anywhere
            "tests/unit/fixtures/carrier": "1\n",  # parses as Python, but not where programs sit
            "roles/a/files/notes": "Not: python at all\n",
            "roles/a/files/script.py": "print(1)\n",  # has a suffix: ruff's own include
        },
    )
    assert python_files.listed(repo) == ["roles/a/files/sparkops-gate", "tests/lab/standins/docker"]
    assert python_files.missing(repo) == ["roles/a/files/helper", "tests/lab/standins/hf-hub", "tools/extra"]


def test_main_check_fails_naming_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = make_repo(tmp_path, {"tests/lab/standins/hf-hub": "#!/usr/bin/env python3\nprint(1)\n"})
    assert python_files.main(["--check"], repo) == 1
    assert "tests/lab/standins/hf-hub: Python without the .py extension" in capsys.readouterr().err
    assert python_files.main(["--extensionless"], repo) == 0
    assert capsys.readouterr().out == "\n"
