# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What systemd reads from a unit file: its directives, and each command line as the argv the program gets.

Two readers, for the tests to compare with what they meant:

- :func:`analyze` asks systemd itself: ``systemd-analyze verify`` (no privileges needed) with debug logging dumps the
  unit it loaded (systemd 252, ``src/analyze/analyze-verify-util.c`` ``verify_unit()`` calls ``unit_dump()`` when
  ``DEBUG_LOGGING``), each command line as ``Command Line: ...``, its words quoted by ``quote_command_line()``
  (``src/basic/escape.c`` ``shell_maybe_quote()``: a word with special characters in double quotes, ``"``, ``\\``,
  ``$`` and a backtick escaped with a backslash, control characters as C escapes). :data:`SYSTEMD_ANALYZE` is None on
  a machine without it (or with ``SPARKOPS_TEST_SYSTEMD_MODEL=1``).
- :func:`model` is a Python model of the same rules, for a machine without ``systemd-analyze`` and for many strings
  at once. It follows systemd.syntax(7) ("lines ending in a backslash are concatenated with the following one ...
  comment lines ... are ignored"), systemd.service(5) "Command lines" (C escapes and quotes; ``;`` separates
  commands, ``\\;`` is a ``;`` word; ``$$``, ``${FOO}``, ``$FOO``), systemd.unit(5) "Specifiers" and systemd 252's
  source: ``src/basic/fileio.c`` ``read_line_full()`` (a line ends at ``\\n``, ``\\r``, ``\\r\\n`` or NUL),
  ``src/shared/conf-parser.c`` ``config_parse()`` and ``parse_line()`` (comments, continuation, sections,
  ``key=value`` stripped), ``src/core/load-fragment.c`` ``config_parse_exec()`` (specifiers first, then words, the
  prefixes of the first word, ``;`` and ``\\;``), ``src/basic/extract-word.c`` ``extract_first_word()`` with
  ``EXTRACT_UNQUOTE|EXTRACT_CUNESCAPE`` (retried with ``EXTRACT_UNESCAPE_RELAX``, keeping an unknown escape as it is,
  by ``extract_first_word_and_warn()``), ``src/basic/escape.c`` ``cunescape_one()`` and ``src/basic/env-util.c``
  ``replace_env_argv()``/``replace_env()`` (at start: a ``$FOO`` word becomes the value split at whitespace,
  ``${FOO}`` the value, ``$$`` a ``$``). The tests check the model against ``systemd-analyze`` where it exists.

Both return a :class:`Unit`: ``values`` (a key to its values in order, specifiers expanded; ``Environment=`` as
its assignments) and ``commands`` (an Exec key to its command lines, each the argv after the environment ``env`` is
applied); ``warnings``: what systemd says about the file's lines (unknown escapes, ...).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import typing as t
from dataclasses import dataclass, field
from pathlib import Path

# SPARKOPS_TEST_SYSTEMD_MODEL=1 reads with the model only, as on a machine without systemd-analyze.
SYSTEMD_ANALYZE = None if os.environ.get("SPARKOPS_TEST_SYSTEMD_MODEL") == "1" else shutil.which("systemd-analyze")
EXEC_KEYS = ("ExecCondition", "ExecStartPre", "ExecStart", "ExecStartPost", "ExecReload", "ExecStop", "ExecStopPost")
WHITESPACE = " \t\n\r"
# What the system manager puts for the specifiers a test might hit (systemd.unit(5)); any other shows as <%x>.
SPECIFIERS = {"h": "/root", "u": "root", "U": "0", "n": "{unit}", "N": "{stem}", "p": "{stem}", "t": "/run", "S": "/var/lib"}


@dataclass
class Unit:
    """What systemd read: the values of each key and the argv of each command line of each Exec key."""

    values: dict[str, list[str]] = field(default_factory=dict)
    commands: dict[str, list[list[str]]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def value(self, key: str) -> str:
        """The one value of ``key`` (fails when there are several or none)."""
        (only,) = self.values[key]
        return only

    def ip_address_allow(self) -> list[str]:
        """``IPAddressAllow=`` as systemd lists it (the model's ``localhost`` made its two networks), sorted."""
        entries = [word for value in self.values.get("IPAddressAllow", []) for word in value.split()]
        return sorted(entry for word in entries for entry in (("127.0.0.0/8", "::1/128") if word == "localhost" else (word,)))


class ModelError(ValueError):
    """systemd would refuse the line (the model says why)."""


# ---------------------------------------------------------------------------------------------------------- the model
def _lines(text: str) -> list[str]:
    return re.split(r"\r\n|\n|\r|\x00", text)


def logical_lines(text: str) -> list[str]:
    """The lines ``config_parse()`` hands to ``parse_line()``: comments dropped (before continuation, also inside
    one), a line ending with an odd number of backslashes joined with the next, its last backslash made a space."""
    out: list[str] = []
    continuation: str | None = None
    for line in _lines(text):
        stripped = line.lstrip(WHITESPACE)
        if stripped and stripped[0] in "#;":
            continue
        joined = line if continuation is None else continuation + line
        escaped = False
        for char in joined:
            escaped = False if escaped else char == "\\"
        if escaped:
            continuation = joined[:-1] + " "
            continue
        continuation = None
        out.append(joined)
    if continuation is not None:
        out.append(continuation)
    return out


def expand_specifiers(value: str, unit_name: str = "test.service") -> str:
    """``unit_full_printf()``: ``%%`` is ``%``, ``%x`` a specifier."""
    stem = unit_name.rsplit(".", 1)[0]
    out: list[str] = []
    i = 0
    while i < len(value):
        char = value[i]
        if char == "%" and i + 1 < len(value):
            spec = value[i + 1]
            out.append("%" if spec == "%" else SPECIFIERS.get(spec, f"<%{spec}>").format(unit=unit_name, stem=stem))
            i += 2
            continue
        out.append(char)
        i += 1
    return "".join(out)


_SIMPLE_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "\\": "\\", '"': '"', "'": "'", "s": " "}


def cunescape_one(text: str, at: int) -> tuple[str, int] | None:
    """``cunescape_one()``: the character the escape at ``text[at]`` (after the backslash) stands for and its length,
    or None when it is not a valid escape (NUL included)."""
    char = text[at : at + 1]
    if char in _SIMPLE_ESCAPES:
        return _SIMPLE_ESCAPES[char], 1
    for lead, digits, base in (("x", 2, 16), ("u", 4, 16), ("U", 8, 16)):
        if char == lead:
            number = text[at + 1 : at + 1 + digits]
            if len(number) != digits or not all(c in "0123456789abcdefABCDEF" for c in number) or int(number, base) == 0:
                return None
            try:
                return chr(int(number, base)), digits + 1
            except (ValueError, OverflowError):
                return None
    if char and char in "01234567":
        number = text[at : at + 3]
        if len(number) != 3 or not all(c in "01234567" for c in number) or int(number, 8) in (0,) or int(number, 8) > 255:
            return None
        return chr(int(number, 8)), 3
    return None


def extract_first_word(text: str, at: int, relax: bool = False) -> tuple[str | None, int]:
    """``extract_first_word(EXTRACT_UNQUOTE|EXTRACT_CUNESCAPE[|EXTRACT_UNESCAPE_RELAX])``: the next word and where
    parsing stopped; None at the end. Raises :class:`ModelError` where systemd returns ``-EINVAL``."""
    n = len(text)
    while at < n and text[at] in WHITESPACE:
        at += 1
    if at >= n:
        return None, at
    word: list[str] = []
    quote = ""
    while True:
        if at >= n:
            if quote:
                raise ModelError(f"unbalanced quote in {text!r}")
            return "".join(word), at
        char = text[at]
        if char == "\\":
            at += 1
            if at >= n:
                if relax and not quote:
                    word.append("\\")
                    return "".join(word), at
                raise ModelError(f"a trailing backslash in {text!r}")
            escape = cunescape_one(text, at)
            if escape is not None:
                word.append(escape[0])
                at += escape[1]
            elif relax:
                word += ["\\", text[at]]
                at += 1
            else:
                raise ModelError(f"an unknown escape in {text!r}")
            continue
        if quote:
            if char == quote:
                quote = ""
            else:
                word.append(char)
            at += 1
            continue
        if char in "'\"":
            quote = char
            at += 1
            continue
        if char in WHITESPACE:
            while at < n and text[at] in WHITESPACE:
                at += 1
            return "".join(word), at
        word.append(char)
        at += 1


def _extract_and_warn(text: str, at: int, warnings: list[str]) -> tuple[str | None, int]:
    try:
        return extract_first_word(text, at)
    except ModelError:
        word, end = extract_first_word(text, at, relax=True)
        warnings.append(f"Ignoring unknown escape sequences: {word!r}")
        return word, end


def split_command_lines(value: str, warnings: list[str] | None = None) -> list[list[str]]:
    """``config_parse_exec()`` after the specifiers: the command lines of one Exec value, each its words (the first
    without its ``-``, ``:``, ``+``, ``!`` prefixes)."""
    warnings = [] if warnings is None else warnings
    commands: list[list[str]] = []
    at = 0
    while True:
        first, at = _extract_and_warn(value, at, warnings)
        if first is None:
            return commands
        program = first.lstrip("-:+!")
        if program.startswith("@"):
            raise ModelError("the @ prefix is not modelled")
        words = [program]
        while True:
            rest = value[at:]
            if rest[:1] == ";" and (len(rest) == 1 or rest[1] in WHITESPACE):
                at += 1
                while at < len(value) and value[at] in WHITESPACE:
                    at += 1
                break
            if rest[:2] == "\\;" and (len(rest) == 2 or rest[2] in WHITESPACE):
                words.append(";")
                at += 2
                while at < len(value) and value[at] in WHITESPACE:
                    at += 1
                continue
            word, at = _extract_and_warn(value, at, warnings)
            if word is None:
                break
            words.append(word)
        commands.append(words)
        if at >= len(value):
            return commands


def split_words(value: str, warnings: list[str] | None = None) -> list[str]:
    """The words of ``Environment=`` (``config_parse_environ()``: the same splitting, no ``;``, no expansion)."""
    warnings = [] if warnings is None else warnings
    words: list[str] = []
    at = 0
    while True:
        word, at = _extract_and_warn(value, at, warnings)
        if word is None:
            return words
        words.append(word)


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def replace_env(word: str, env: t.Mapping[str, str]) -> str:
    """``replace_env(word, env, 0)``: ``$$`` is ``$``, ``${NAME}`` the value (empty when unset), any other ``$`` stays."""
    out: list[str] = []
    i = 0
    while i < len(word):
        if word.startswith("$$", i):
            out.append("$")
            i += 2
        elif word.startswith("${", i) and "}" in word[i + 2 :]:
            end = word.index("}", i + 2)
            out.append(env.get(word[i + 2 : end], ""))
            i = end + 1
        else:
            out.append(word[i])
            i += 1
    return "".join(out)


def replace_env_argv(argv: t.Sequence[str], env: t.Mapping[str, str]) -> list[str]:
    """``replace_env_argv()``: a word ``$NAME`` becomes the value split at whitespace (nothing when unset), others
    go through :func:`replace_env`."""
    out: list[str] = []
    for word in argv:
        if word.startswith("$") and word[1:2] not in ("{", "$"):
            value = env.get(word[1:])
            if value is not None:
                out += value.split()
            continue
        out.append(replace_env(word, env))
    return out


def model(text: str, env: t.Mapping[str, str] | None = None, unit_name: str = "test.service") -> Unit:
    """The model's reading of a unit file (see the module's docstring)."""
    env = env or {}
    unit = Unit()
    for line in logical_lines(text):
        line = line.strip(WHITESPACE)
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            continue  # a section: the keys the tests read are in one section each
        if "=" not in line:
            raise ModelError(f"a line that is not key=value: {line!r}")
        key, value = (part.strip(WHITESPACE) for part in line.split("=", 1))
        value = expand_specifiers(value, unit_name)
        if key in EXEC_KEYS:
            if not value:
                unit.commands[key] = []
                continue
            for argv in split_command_lines(value, unit.warnings):
                unit.commands.setdefault(key, []).append(replace_env_argv(argv, env))
        elif key == "Environment":
            unit.values.setdefault(key, []).extend(split_words(value, unit.warnings))
        else:
            unit.values.setdefault(key, []).append(value)
    return unit


# ------------------------------------------------------------------------------------------------- systemd-analyze
def _dequote_dump(line: str) -> list[str]:
    """The words ``quote_command_line()`` wrote: bare, or in double quotes with backslash escapes."""
    words: list[str] = []
    i = 0
    while i < len(line):
        if line[i] == " ":
            i += 1
            continue
        if line[i] != '"':
            end = line.find(" ", i)
            end = len(line) if end < 0 else end
            words.append(line[i:end])
            i = end
            continue
        i += 1
        word: list[str] = []
        while line[i] != '"':
            if line[i] == "\\":
                escape = cunescape_one(line, i + 1)
                if escape is not None and line[i + 1] not in "$`":
                    word.append(escape[0])
                    i += 1 + escape[1]
                else:
                    word.append(line[i + 1])
                    i += 2
                continue
            word.append(line[i])
            i += 1
        words.append("".join(word))
        i += 1
    return words


DUMPED = ("Description", "EnvironmentFile", "Environment", "IPAddressAllow", "IPAddressDeny")


def analyze(text: str, env: t.Mapping[str, str] | None = None, unit_name: str = "test.service") -> Unit:
    """systemd's reading of a unit file (``systemd-analyze verify``'s dump; see the module's docstring): the
    command lines (the environment ``env`` applied as :func:`replace_env_argv` does when they start) and the values
    of :data:`DUMPED` (the IP addresses as systemd lists them); ``warnings``: what it logged about the file."""
    assert SYSTEMD_ANALYZE, "systemd-analyze is not installed"
    env = env or {}
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / unit_name
        path.write_bytes(text.encode("utf-8", "surrogateescape"))
        proc = subprocess.run(
            [SYSTEMD_ANALYZE, "verify", "--man=no", str(path)],
            capture_output=True,
            text=True,
            check=False,
            env={"SYSTEMD_LOG_LEVEL": "debug", "SYSTEMD_LOG_COLOR": "0", "PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"},
        )
    unit = Unit()
    header = f"-> Unit {unit_name}:"
    lines = proc.stdout.splitlines()
    if not any(line.strip() == header for line in lines):
        said = [line for line in proc.stderr.splitlines() if line.startswith((f"{path}:", f"{unit_name}:", f"Unit {unit_name}"))]
        raise ModelError(f"systemd did not load the unit: {said}")
    key = ""
    for line in lines[[line.strip() for line in lines].index(header) + 1 :]:
        if line.startswith("\t-> Unit "):
            break
        body = line.strip("\t")
        if line.startswith("\t\t-> ") and body.endswith(":"):
            key = body[3:-1]
            continue
        if line.startswith("\t\t\tCommand Line: ") and key in EXEC_KEYS:
            unit.commands.setdefault(key, []).append(replace_env_argv(_dequote_dump(body[len("Command Line: ") :]), env))
            continue
        if line.startswith("\t\t") and not line.startswith("\t\t\t") and ": " in body:
            name, value = body.split(": ", 1)
            if name in DUMPED:
                unit.values.setdefault(name, []).append(value)
            key = ""
    unit.warnings = [line for line in proc.stderr.splitlines() if line.startswith(f"{path}:")]
    return unit


def read(text: str, env: t.Mapping[str, str] | None = None, unit_name: str = "test.service") -> Unit:
    """:func:`analyze` where systemd-analyze exists, else :func:`model`."""
    return analyze(text, env, unit_name) if SYSTEMD_ANALYZE else model(text, env, unit_name)
