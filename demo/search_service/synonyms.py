"""The query rewriter's synonym pack: replace and expand rules, read from JSON.

Part of `demo.search_service` (its docstring has the contract and the query semantics).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

from demo.search_service.base import STOPWORDS, WORD, SynonymsError

# ------------------------------------------------------------------------------------------- synonyms


@dataclass(frozen=True, slots=True)
class SynonymRule:
    """`terms` -> either `expand` (words added after the original) or `replace` (words instead of it)."""

    terms: tuple[str, ...]
    expand: tuple[str, ...] = ()
    replace: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class SynonymPack:
    """A versioned list of one-way rules, applied word by word before the engine sees the query."""

    name: str
    version: str
    rules: tuple[SynonymRule, ...]

    @property
    def label(self) -> str:
        return f"{self.name}@{self.version}"

    def rewrite(self, word: str) -> tuple[str, ...]:
        """The words that stand for `word` after rewriting: itself (unless replaced) and its expansions."""
        replacements: list[str] = []
        expansions: list[str] = []
        for rule in self.rules:
            if word in rule.terms:
                replacements.extend(rule.replace)
                expansions.extend(rule.expand)
        out: list[str] = []
        for w in (*(replacements or [word]), *expansions):
            if w not in out:
                out.append(w)
        return tuple(out)


def _word_list(value: object, where: str, problems: list[str]) -> tuple[str, ...]:
    if not isinstance(value, list) or not value:
        problems.append(f"{where}: expected a non-empty list of words")
        return ()
    words: list[str] = []
    for i, item in enumerate(value):
        if not isinstance(item, str) or WORD.fullmatch(item.lower()) is None:
            problems.append(f"{where}[{i}]: expected one word (letters and digits), got {item!r}")
            continue
        if item.lower() in STOPWORDS:
            problems.append(f"{where}[{i}]: {item!r} is a stopword and would never match")
            continue
        words.append(item.lower())
    return tuple(words)


def parse_synonyms(obj: object, *, source: str = "synonyms") -> SynonymPack:
    problems: list[str] = []
    if not isinstance(obj, dict):
        raise SynonymsError([f"{source}: expected a JSON object"])
    for name in ("name", "version"):
        if not isinstance(obj.get(name), str) or not obj[name].strip():
            problems.append(f"{source}: {name}: expected a non-empty string")
    raw_rules = obj.get("rules")
    rules: list[SynonymRule] = []
    if not isinstance(raw_rules, list):
        problems.append(f"{source}: rules: expected a list")
        raw_rules = []
    for i, raw in enumerate(raw_rules):
        where = f"{source}: rules[{i}]"
        if not isinstance(raw, dict):
            problems.append(f"{where}: expected an object")
            continue
        unknown = sorted(set(raw) - {"terms", "expand", "replace", "note"})
        if unknown:
            problems.append(f"{where}: unknown keys {unknown}")
        terms = _word_list(raw.get("terms"), f"{where}.terms", problems)
        if ("expand" in raw) == ("replace" in raw):
            problems.append(f"{where}: needs exactly one of expand or replace")
            continue
        if "expand" in raw:
            rules.append(
                SynonymRule(terms=terms, expand=_word_list(raw["expand"], f"{where}.expand", problems))
            )
        else:
            words = _word_list(raw["replace"], f"{where}.replace", problems)
            rules.append(SynonymRule(terms=terms, replace=words))
    if problems:
        raise SynonymsError(problems)
    return SynonymPack(name=obj["name"], version=obj["version"], rules=tuple(rules))


def load_synonyms(path: str | os.PathLike[str]) -> SynonymPack:
    with open(path, encoding="utf-8") as handle:
        try:
            obj = json.load(handle)
        except json.JSONDecodeError as exc:
            raise SynonymsError([f"{path}: not JSON ({exc.msg} at line {exc.lineno})"]) from exc
    return parse_synonyms(obj, source=str(path))
