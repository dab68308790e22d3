# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Generation without a model: deterministic words, one word a token, split into reasoning and content.

The same prompt gives the same words. A prompt is counted in "tokens" by a simple rule (words and punctuation of
the chat-formatted messages), not by the model's tokenizer.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

WORDS = (
    "spark", "node", "ray", "cluster", "tensor", "parallel", "model", "token", "cache", "memory", "unified", "fabric",
    "link", "head", "worker", "engine", "batch", "prompt", "answer", "lab", "test", "stand-in", "weights", "shard",
    "layer", "expert", "router", "kernel", "stream", "latency", "throughput", "context", "window", "attention", "query",
    "value", "key", "block", "page", "scheduler", "request", "reply", "quiet", "steady", "small", "bright", "simple",
    "clear", "fast", "calm", "ready", "green", "is", "the", "a", "and", "of", "to", "with", "on", "for", "from", "runs", "holds",
)  # fmt: skip
_TOKEN = re.compile(r"\w+|[^\w\s]")


def count_tokens(text: str) -> int:
    return len(_TOKEN.findall(text))


def message_text(content: Any) -> str:
    """The text of a message's content: a string, or a list of parts (``{"type": "text", "text": ...}``)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def chat_prompt(messages: list[dict[str, Any]]) -> str:
    """The messages as a ChatML template renders them, with the assistant's turn opened."""
    turns = [f"<|im_start|>{message.get('role', '')}\n{message_text(message.get('content'))}<|im_end|>\n" for message in messages]
    return "".join(turns) + "<|im_start|>assistant\n"


def words(seed: str) -> Iterator[str]:
    counter = 0
    while True:
        for byte in hashlib.sha256(f"{seed}:{counter}".encode()).digest():
            yield WORDS[byte % len(WORDS)]
        counter += 1


def take(source: Iterator[str], count: int, sentence: bool) -> list[str]:
    """``count`` tokens: the first without a leading space, the others with one; a sentence is capitalised."""
    tokens = list(itertools.islice(source, count))
    if sentence and tokens:
        tokens[0] = tokens[0].capitalize()
    return [token if n == 0 else " " + token for n, token in enumerate(tokens)]


@dataclass
class Output:
    reasoning: list[str] = field(default_factory=list)
    content: list[str] = field(default_factory=list)
    finish_reason: str = "stop"

    @property
    def tokens(self) -> int:
        return len(self.reasoning) + len(self.content)

    def pieces(self) -> list[tuple[str, str]]:
        """(field, text) of every token in order: ``reasoning`` tokens, then ``content`` tokens."""
        return [("reasoning", text) for text in self.reasoning] + [("content", text) for text in self.content]


def generate(prompt: str, max_tokens: int, think_tokens: int, answer_tokens: int) -> Output:
    """Think ``think_tokens`` tokens, then answer ``answer_tokens`` tokens, within ``max_tokens``."""
    natural = think_tokens + answer_tokens
    budget = min(max_tokens, natural)
    thought = min(budget, think_tokens)
    reasoning = take(words("think:" + prompt), thought, sentence=True)
    content = take(words("answer:" + prompt), budget - thought, sentence=True)
    if content and budget == natural:
        content[-1] += "."
    return Output(reasoning, content, "length" if max_tokens < natural else "stop")
