"""Text helpers of the proposers: content words, camelCase words, whole-word keyword matching
against the ordered keyword tables of data/taxonomy.toml, and whitespace/quote normalising."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any


def wordset(text: str) -> frozenset[str]:
    """The whitespace-separated words of ``text`` as a set (for word lists written as prose)."""
    return frozenset(text.split())


_STOP = wordset(
    "the and for with from that this your you are was will have has can not all any into then "
    "than them they their there about please also just only some more most such what when which "
    "while who whom why how our out over under again further once here very its too get let now "
    "new one two use using used make made mine email com www http https"
)
"""Words too common to count as overlap between an action and an instruction."""


def _stem(w: str) -> str:
    return w[:6] if len(w) > 6 else w


def words(text: str) -> set[str]:
    """Content words of ``text``: camelCase and snake_case split, lower-cased, short and common
    words dropped, crudely stemmed (first six letters) so plural and singular meet."""
    text = re.sub(r"([a-z])([A-Z])", r"\1 \2", text)
    return {
        _stem(w)
        for w in re.findall(r"[a-z0-9]+", text.lower())
        if len(w) >= 3 and w not in _STOP and not w.isdigit()
    }


def camel_words(name: str) -> list[str]:
    """Lower-cased words of a camelCase / snake_case identifier (``GmailSendEmail`` -> gmail,
    send, email)."""
    return [w.lower() for w in re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+", name)]


def identifiers(text: str) -> set[str]:
    """Identifier-like tokens of four or more characters (the tool names a description names)."""
    return set(re.findall(r"[A-Za-z_][A-Za-z0-9_]{3,}", text))


def norm(s: str) -> str:
    """``s`` without quotes and backslashes, whitespace collapsed, lower-cased (for containment
    tests between quoted and original text)."""
    return re.sub(r"\s+", " ", re.sub(r"[\\'\"`]", "", s)).strip().lower()


def keyword_hit(text: str, phrase: str) -> bool:
    """True when ``phrase`` occurs in ``text`` as whole words (a plural or -ed/-ing ending
    allowed): "lock" matches "unlock the lock", not "Unblock" or "AugustSmartLock"."""
    pat = r"(?<![a-z0-9])" + re.escape(phrase.lower()) + r"(?:s|es|ed|d|ing)?(?![a-z0-9])"
    return re.search(pat, text.lower()) is not None


def first_table_hit(text: str, table: Mapping[str, Any]) -> str | None:
    """The first key of an ordered keyword table with a phrase in ``text`` (whole words)."""
    for key, phrases in table.items():
        if any(keyword_hit(text, ph) for ph in phrases):
            return str(key)
    return None
