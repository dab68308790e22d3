# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the private plugin util _systemd_unit: values written into systemd unit files.

What systemd reads back is asked of systemd itself (``systemd-analyze verify``) where it is installed, else of the
Python model of its parser in tests/unit/systemd_syntax.py (whose docstring cites the man pages and the source); the
model is checked against systemd where both exist."""

from __future__ import annotations

import random
import re
import shlex
import typing as t

import pytest
import systemd_syntax
from ansible_collections.sparkops.inference.plugins.plugin_utils._systemd_unit import (
    SystemdUnitError,
    exec_args,
    exec_word,
    ip_address_allow,
    one_line,
    unit_value,
)

# What the service's environment holds when the commands start: a word that expanded a variable would differ.
ENV = {"HOME": "/root", "X": "expanded x", "T": "0.7"}
# Values written as an attack, or that a shell quote gets wrong for systemd.
HOSTILE = [
    "%h",
    "%%",
    "100%",
    "%n%i",
    r"\n",
    "\\",
    "\\\\",
    r"back\slash",
    r"C:\path\to",
    "$HOME",
    "${X}",
    "$$",
    "a$",
    "$",
    "'",
    '"',
    "it's",
    'say "hi"',
    """both ' and " quotes""",
    "two words",
    " leading and trailing ",
    "",
    ";",
    "\\;",
    "a ; b",
    "#not a comment",
    "-dash",
    "@at",
    '{"temperature": $T}',
    "/etc/vllm/100% qwen.jinja",
    "`id`",
    "$(id)",
    "*?[]~!&|<>()",
    "ümlaut 模型 🙂",
    "end\\",
    "x\\'y",
    "\\x41\\u00e9\\101",
]
ATTACKS = [
    "qwen\nExecStartPre=/bin/sh -c id",
    "qwen\r\nExecStartPre=/bin/sh -c id",
    "qwen\rExecStartPre=/bin/sh -c id",
    "qwen\x00ExecStartPre=/bin/sh -c id",
    "tab\there",
    "escape\x1b[31m",
    "del\x7f",
    "next line\x85ExecStartPre=/bin/sh -c id",
    "separator\u2028x",
    "paragraph\u2029x",
]


def random_strings(count: int, seed: int = 15) -> list[str]:
    """``count`` strings drawn (with a fixed seed) from the characters systemd, a shell or Ansible treat specially,
    letters, and a few non-ASCII ones; no control characters (those are refused)."""
    rng = random.Random(seed)
    alphabet = list("abcXYZ019 _-./=:,+@%$\\'\"{}()[];#&|<>*?!~`^") + ["é", "模", "🙂", "\\n", "\\x41", "%h", "$$", "${X}"]
    return ["".join(rng.choice(alphabet) for _char in range(rng.randint(0, 12))) for _string in range(count)]


def unit_with(exec_start: str, environment: str = "/bin/true") -> str:
    return f"[Unit]\nDescription=test\n\n[Service]\nType=oneshot\nEnvironment={environment}\nExecStart={exec_start}\n"


def read_argv(words: list[str], reader: t.Callable[..., systemd_syntax.Unit]) -> list[str]:
    unit = reader(unit_with(exec_args(["/bin/true", *words], "test", command=True)), ENV)
    ((argv,),) = [unit.commands["ExecStart"]]
    return argv


# ------------------------------------------------------------------------------------------------------ exec_word
@pytest.mark.parametrize(
    ("value", "written"),
    [
        ("serve", "serve"),
        ("Qwen/Qwen3.5-122B-A10B-FP8", "Qwen/Qwen3.5-122B-A10B-FP8"),
        ("--max-model-len=262144", "--max-model-len=262144"),
        (0.8, "0.8"),
        (8000, "8000"),
        ("100%", "100%%"),
        ("", "''"),
        ("two words", "'two words'"),
        ("/etc/vllm/100% qwen.jinja", "'/etc/vllm/100%% qwen.jinja'"),
        ('{"temperature": $T}', """'{"temperature": $$T}'"""),
        ("it's", r"'it\'s'"),
        (r"a\nb", r"'a\\nb'"),
        ("\\", r"'\\'"),
        (";", "';'"),
    ],
)
def test_exec_word_writes_ordinary_values_as_ansibles_quote_did(value: t.Any, written: str) -> None:
    """Bare where shlex.quote left a value bare (so that ordinary units render byte for byte as before), single-quoted
    otherwise, with the escapes systemd needs."""
    assert exec_word(value, "v") == written


def test_exec_word_leaves_dollars_alone_for_environment() -> None:
    assert exec_word("A=$HOME x", "v", expand_variables=False) == "'A=$HOME x'"


@pytest.mark.parametrize("value", HOSTILE)
def test_each_hostile_word_reaches_the_program_as_it_is(value: str) -> None:
    """The attack on the old quoting (``map('quote') | replace('%', '%%') | replace('$', '$$')``): systemd reads C
    escapes inside single quotes too, so ``'\\n'`` became a newline and ``'\\\\'`` one backslash."""
    assert read_argv([value], systemd_syntax.read) == ["/bin/true", value]


def test_hostile_words_round_trip_through_systemd_and_the_model() -> None:
    """parse(render(argv)) == argv, word for word, for the fixed list and 400 seeded random strings; by
    systemd-analyze where it exists (one unit for them all), and by the model."""
    words = HOSTILE + random_strings(400)
    assert read_argv(words, systemd_syntax.model) == ["/bin/true", *words]
    assert read_argv(words, systemd_syntax.read) == ["/bin/true", *words]


def test_environment_assignments_round_trip() -> None:
    """``Environment=`` splits and unquotes its words as an Exec line does, but expands no variable."""
    values = [f"V{i}={value}" for i, value in enumerate(HOSTILE + random_strings(100, seed=7))]
    written = " ".join(exec_word(value, "v", expand_variables=False) for value in values)
    unit = systemd_syntax.read(unit_with("/bin/true", written), ENV)
    assert sorted(unit.values["Environment"]) == sorted(values)
    assert systemd_syntax.model(unit_with("/bin/true", written), ENV).values["Environment"] == values


@pytest.mark.skipif(systemd_syntax.SYSTEMD_ANALYZE is None, reason="checks the model against systemd-analyze, not installed here")
def test_the_model_reads_as_systemd_does() -> None:
    """The model of tests/unit/systemd_syntax.py against systemd itself, on lines written by hand (unknown escapes,
    a bare and an escaped ``;``, continuation lines, variables, specifiers, quotes inside a word) and on the rendered
    words."""
    lines = [
        r"""/bin/true a\;b \; c 'x y'z"q r" \x41\u00e9\101 'a\qb' $HOME ${X}y $$X $X %h %%h '%n' "it's" \s""",
        "/bin/true 'line\\\n  continued' after\\\\",
        "/bin/a one ; /bin/b two",
        r"""/bin/x '\\' "\\\"" '\'' end\\ "$${A}" '$$' $$ '' "" \x7f""",
        exec_args(["/bin/true", *HOSTILE, *random_strings(200, seed=3)], "test"),
    ]
    for line in lines:
        text = unit_with(line, r"""'A=b c' D=e\x41 "F=$G" """)
        systemd, modelled = systemd_syntax.analyze(text, ENV), systemd_syntax.model(text, ENV)
        assert modelled.commands == systemd.commands, line
        assert modelled.values["Environment"] == systemd.values["Environment"], line
        assert len(modelled.warnings) == len(systemd.warnings), (modelled.warnings, systemd.warnings)


@pytest.mark.parametrize("value", ATTACKS)
def test_a_line_break_or_control_character_is_refused_naming_the_variable(value: str) -> None:
    with pytest.raises(SystemdUnitError, match="^vllm_serve_served_model_name must be one line") as caught:
        exec_word(value, "vllm_serve_served_model_name")
    assert repr(value) in str(caught.value)
    with pytest.raises(SystemdUnitError, match="^ray_cluster_node_ip must be one line"):
        unit_value(value, "ray_cluster_node_ip")
    with pytest.raises(SystemdUnitError, match="^x must be one line"):
        one_line(value, "x")


def test_the_old_quoting_let_a_newline_add_a_directive() -> None:
    """What the attack did to a unit with the old quoting (``quote``, then ``%`` and ``$`` doubled): a line break
    inside shlex's single quotes left the line's quote open (the unit would not load), but ``\\'\\'`` first closes
    it, as systemd reads ``\\'`` as an escaped quote inside single quotes; the next line is then a directive of its own,
    a command root runs before the service, and the rest of the old line a comment."""
    value = "\\'\\'\nExecStartPre=/bin/sh -c id\n#"
    old = shlex.quote(value).replace("%", "%%").replace("$", "$$")
    unit = systemd_syntax.read(f"[Unit]\nDescription=t\n\n[Service]\nType=oneshot\nExecStart=/bin/true --served-model-name {old} --port 8000\n")
    assert unit.commands["ExecStartPre"] == [["/bin/sh", "-c", "id"]]
    with pytest.raises(SystemdUnitError):
        exec_word(value, "vllm_serve_served_model_name")


@pytest.mark.parametrize(("kind", "label"), [("NUL", "\x00"), ("line break", "\n"), ("control character (U+001B)", "\x1b")])
def test_the_refusal_says_what_the_value_holds(kind: str, label: str) -> None:
    with pytest.raises(SystemdUnitError, match=re.escape(kind)):
        one_line(f"a{label}b", "v")


@pytest.mark.parametrize("value", [None, {"a": 1}, ["a"], b"bytes"])
def test_a_value_that_is_not_text_is_refused(value: t.Any) -> None:
    with pytest.raises(SystemdUnitError, match="^v must be a string or a number"):
        exec_word(value, "v")


# ------------------------------------------------------------------------------------------------------ exec_args
def test_exec_args_names_the_variable_that_put_the_value_there() -> None:
    sources = {"vllm_serve_model": "Qwen/Qwen3-8B", "vllm_serve_extra_args": ["--x", "y\nExecStartPre=/bin/sh -c id"]}
    with pytest.raises(SystemdUnitError, match="^vllm_serve_extra_args must be one line"):
        exec_args(["/bin/vllm", "serve", "Qwen/Qwen3-8B", "--x", "y\nExecStartPre=/bin/sh -c id"], "the vLLM command line", sources=sources)
    # Part of a word (--node-ip-address=...), and a value no source holds: the name given.
    with pytest.raises(SystemdUnitError, match="^ray_cluster_node_ip must be one line"):
        exec_args(["/bin/ray", "--node-ip-address=1.2.3.4\n"], "ray start", sources={"ray_cluster_node_ip": "1.2.3.4\n"})
    with pytest.raises(SystemdUnitError, match="^ray start must be one line"):
        exec_args(["/bin/ray", "x\n"], "ray start", sources={"ray_cluster_node_ip": "1.2.3.4"})


@pytest.mark.parametrize("argv", [["ray", "start"], ["-/bin/ray"], ["@/bin/ray"], [], ["!/bin/x"]])
def test_a_command_must_start_with_an_absolute_path(argv: list[str]) -> None:
    with pytest.raises(SystemdUnitError, match="must start with the absolute path of a program"):
        exec_args(argv, "ray start", command=True)


def test_exec_args_takes_a_string_as_one_word_and_refuses_nested_lists() -> None:
    assert exec_args("two words", "v") == "'two words'"
    assert exec_args(6379, "v") == "6379"
    with pytest.raises(SystemdUnitError, match="every argument of v must be a string or a number"):
        exec_args(["a", ["b"]], "v")
    with pytest.raises(SystemdUnitError, match="v must be a list of arguments"):
        exec_args({"a": "b"}, "v")


# ------------------------------------------------------------------------------------------------------ unit_value
@pytest.mark.parametrize(
    ("value", "written"),
    [("qwen3.5-122b", "qwen3.5-122b"), ("%h", "%%h"), ("100% sure", "100%% sure"), (1020, "1020"), ("a\\b", "a\\b"), ('it\'s "x"', 'it\'s "x"')],
)
def test_unit_value_doubles_percent_signs(value: t.Any, written: str) -> None:
    assert unit_value(value, "v") == written
    unit = systemd_syntax.read(f"[Unit]\nDescription=sparkops {unit_value(value, 'v')}\n\n[Service]\nType=oneshot\nExecStart=/bin/true\n")
    assert unit.value("Description") == f"sparkops {value}"


def test_unit_value_without_specifiers_only_checks() -> None:
    assert unit_value("100%", "v", specifiers=False) == "100%"
    with pytest.raises(SystemdUnitError):
        unit_value("a\nb", "v", specifiers=False)


def test_a_value_ending_with_a_backslash_is_refused() -> None:
    """The line would go on with the next one: ``Description=x\\`` swallows the directive below it."""
    with pytest.raises(SystemdUnitError, match="^v must not end with a backslash"):
        unit_value("x\\", "v")
    unit = systemd_syntax.read("[Unit]\nDescription=x\\\nRequires=a.service\n\n[Service]\nType=oneshot\nExecStart=/bin/true\n")
    assert "Requires" not in unit.values and unit.value("Description").startswith("x ")


# ------------------------------------------------------------------------------------------------- ip_address_allow
def test_node_addresses_become_host_entries_each_once_in_order() -> None:
    nodes = {"spark-head": "192.168.100.10", "spark-worker1": "192.168.100.11", "spark-worker2": "fd00::12", "again": "192.168.100.10"}
    assert ip_address_allow(nodes, "ray_cluster_node_ip") == ["192.168.100.10/32", "192.168.100.11/32", "fd00::12/128"]
    assert ip_address_allow([" 10.0.0.1 "], "x") == ["10.0.0.1/32"]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("any", "must be an IP address, got 'any'"),
        ("localhost", "must be an IP address"),
        ("192.168.100.0/24", "must be an IP address"),
        ("spark-head", "must be an IP address"),
        ("10.0.0.1 0.0.0.0/0", "must be an IP address"),
        ("10.0.0.1\nExecStartPre=/bin/sh -c id", "must be one line"),
        ("0.0.0.0", "must not be the unspecified address"),
        ("::", "must not be the unspecified address"),
    ],
)
def test_a_node_address_that_is_not_one_address_is_refused_naming_the_host(value: str, message: str) -> None:
    with pytest.raises(SystemdUnitError, match="^ray_cluster_node_ip of spark-worker1 ") as caught:
        ip_address_allow({"spark-head": "192.168.100.10", "spark-worker1": value}, "ray_cluster_node_ip")
    assert message in str(caught.value)


def test_networks_are_taken_when_asked_for_and_not_too_wide() -> None:
    assert ip_address_allow(["10.9.0.0/24", "10.9.1.7", "10.9.2.8/32", "fd00::/48"], "a", networks=True) == [
        "10.9.0.0/24", "10.9.1.7/32", "10.9.2.8/32", "fd00::/48",
    ]  # fmt: skip
    for value, message in [
        ("0.0.0.0/0", "unspecified"),
        ("10.0.0.0/7", "wider than /8"),
        ("fd00::/16", "wider than /32"),
        ("10.9.0.5/24", "must be an IP address or network"),
        ("any", "must be an IP address or network"),
    ]:
        with pytest.raises(SystemdUnitError, match=f"^ray_cluster_allowed_addresses .*{message}"):
            ip_address_allow([value], "ray_cluster_allowed_addresses", networks=True)


def test_addresses_must_be_a_list_or_a_dict() -> None:
    with pytest.raises(SystemdUnitError, match="must be a list of IP addresses"):
        ip_address_allow("10.0.0.1", "ray_cluster_allowed_addresses")
