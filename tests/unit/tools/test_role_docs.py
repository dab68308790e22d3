"""tools/role_docs.py renders each role's variables table from its argument_specs into its README, and --check fails on
a stale table, naming the README and what differs."""

from __future__ import annotations

from pathlib import Path

import pytest
import role_docs
import yaml

SPECS = """\
---
argument_specs:
  main:
    short_description: A role
    options:
      r_units:
        type: list
        elements: str
        description:
          - Units to stop, names or patterns (C(vllm-*)); see O(r_mask) and
            O(sparkops.inference.snapshot_distribute#module:cut_through).
          - V(false) or I(nothing) keeps M(sparkops.inference.gpu_info) and B(all) E(HF_TOKEN) as they are.
        default: ["ray::*", raylet]
      r_mask:
        type: bool
        description: Mask them too.
        default: false
      r_port:
        type: int
        description: The port. Defaults to C(sparkops_serve_port).
        default: "{{ sparkops_serve_port }}"
      r_mode:
        type: str
        description: How.
        choices: [auto, "off"]
        default: auto
      r_path:
        type: str
        description: A path; empty looks it up.
        default: ""
      r_index:
        type: int
        description: Unset, detected.
  teardown:
    options:
      r_only_in_teardown:
        type: bool
        description: Not in main's table.
        default: false
"""

README = f"""\
# r

Text before.

## Variables

{role_docs.BEGIN}
{role_docs.END}

Prose after the table stays.
"""


def make_role(roles: Path, name: str = "r", readme: str = README, specs: str = SPECS) -> Path:
    role = roles / name
    (role / "meta").mkdir(parents=True)
    (role / "meta" / "argument_specs.yml").write_text(specs)
    (role / "README.md").write_text(readme)
    return role


@pytest.fixture()
def roles(tmp_path: Path) -> Path:
    return tmp_path / "roles"


def rows() -> dict[str, list[str]]:
    lines = role_docs.table(yaml.safe_load(SPECS))
    assert lines[:2] == list(role_docs.HEADER)
    return {line.split(" | ")[0].removeprefix("| ").strip("`"): line.split(" | ")[1:] for line in lines[2:]}


def test_markup_becomes_markdown_code() -> None:
    assert role_docs.markup("C(a) O(b) V(c) M(d.e.f) E(G) RV(h) P(ns.col.x#filter)") == "`a` `b` `c` `d.e.f` `G` `h` `ns.col.x`"
    assert role_docs.markup("O(ns.col.mod#module:opt) and O(r_mode=off)") == "`opt` and `r_mode=off`"
    assert role_docs.markup("I(some) B(bold) U(https://x.org) L(the docs, https://x.org/d)") == "*some* **bold** <https://x.org> [the docs](https://x.org/d)"
    assert role_docs.markup("C(a|b) and x | y, 2 * 3 <tag>") == r"`a\|b` and x \| y, 2 \* 3 \<tag>"


def test_multi_line_descriptions_are_one_cell() -> None:
    cells = rows()["r_units"]
    assert cells[:2] == ["list of str", "`['ray::*', raylet]`"]
    assert cells[2] == (
        "Units to stop, names or patterns (`vllm-*`); see `r_mask` and `cut_through`. "
        "`false` or *nothing* keeps `sparkops.inference.gpu_info` and **all** `HF_TOKEN` as they are. |"
    )


def test_defaults_strings_lists_and_jinja_as_written() -> None:
    table = rows()
    assert table["r_mask"][1] == "`false`"
    assert table["r_port"][:2] == ["int", "`{{ sparkops_serve_port }}`"]
    assert table["r_mode"][1:] == ["`auto`", 'How. Choices: `auto`, `"off"`. |']
    assert table["r_path"][1] == '`""`'
    assert table["r_index"][1] == "unset"
    assert "r_only_in_teardown" not in table
    assert role_docs.default_text("0") == '"0"'
    assert role_docs.default_text("/etc/sparkops") == "/etc/sparkops"
    assert role_docs.default_text({"A": 1}) == "{A: 1}"


def test_write_fills_the_markers_and_keeps_the_rest(roles: Path) -> None:
    role = make_role(roles)
    assert role_docs.run(roles, check=False) == 0
    text = (role / "README.md").read_text()
    before, table, after = text.split(role_docs.BEGIN)[0], text.split(role_docs.BEGIN)[1].split(role_docs.END)[0], text.split(role_docs.END)[1]
    assert before == "# r\n\nText before.\n\n## Variables\n\n"
    assert after == "\n\nProse after the table stays.\n"
    assert table.strip().splitlines()[0] == role_docs.HEADER[0]
    assert len(table.strip().splitlines()) == 2 + 6
    assert role_docs.run(roles, check=True) == 0  # fresh: the check passes
    assert role_docs.run(roles, check=False) == 0
    assert (role / "README.md").read_text() == text  # a second write changes nothing


def test_check_fails_on_a_stale_table_naming_the_readme_and_what_differs(roles: Path, capsys: pytest.CaptureFixture[str]) -> None:
    role = make_role(roles)
    make_role(roles, "fresh")
    role_docs.run(roles, check=False)
    readme = role / "README.md"
    stale = readme.read_text().replace("Mask them too.", "Mask them.")
    stale = "\n".join(line for line in stale.splitlines() if not line.startswith("| `r_path`"))
    stale = stale.replace(role_docs.END, f"| `r_gone` | str | `x` | removed from the spec |\n{role_docs.END}") + "\n"
    readme.write_text(stale)
    capsys.readouterr()
    assert role_docs.run(roles, check=True) == 1
    err = capsys.readouterr().err
    assert err.splitlines() == [
        "roles/r/README.md: the variables table is out of date (missing: r_path; not in the spec: r_gone; changed: r_mask); run `make docs`",
    ]
    assert readme.read_text() == stale  # --check changes nothing


def test_check_fails_without_markers(roles: Path, capsys: pytest.CaptureFixture[str]) -> None:
    make_role(roles, readme="# r\n\n| variable | default |\n")
    assert role_docs.run(roles, check=True) == 1
    assert role_docs.run(roles, check=False) == 1
    assert "roles/r/README.md: needs one line '<!-- BEGIN variables" in capsys.readouterr().err
