"""The judge's prompt: the set's rubric, one query and one document, shown as a human rater sees them.

Blinding is by construction: the builders take only the rubric, the query's text, locale and filters and
the document's title and text. Nothing here can receive a system name, a rank, a frozen label or anyone's
grade, so no prompt can carry one (tests/labeling/test_judge_jobs.py checks the prompts a stub received).

A fact the prompt states is written once: the answer contract (`answer_contract`) is both said in the
system message and sent as the `response_format` schema where the endpoint supports it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

DEFAULT_INSTRUCTIONS = (
    "You are a search relevance rater. Grade how well the document answers the user's search query, "
    "using the rubric below exactly as written. Judge the document's content only; do not guess what "
    "other systems or raters said."
)
TRIMMED_MARK = "[... document text trimmed to {budget} characters ...]"


@dataclass(frozen=True, slots=True)
class Grade:
    """One grade of the rubric: what it means and examples of documents that do and do not earn it."""

    grade: int
    label: str
    meaning: str
    positive_examples: Sequence[str] = ()
    negative_examples: Sequence[str] = ()

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> Grade:
        """A grade as `Rubric.grades` stores it (docs/labeling.md, "Models")."""
        return cls(
            grade=int(raw["grade"]),
            label=str(raw.get("label", "")),
            meaning=str(raw.get("meaning", "")),
            positive_examples=tuple(str(e) for e in raw.get("positive_examples", ())),
            negative_examples=tuple(str(e) for e in raw.get("negative_examples", ())),
        )


@dataclass(frozen=True, slots=True)
class Rubric:
    scale_min: int
    scale_max: int
    grades: Sequence[Grade]

    @property
    def scale(self) -> range:
        return range(self.scale_min, self.scale_max + 1)


@dataclass(frozen=True, slots=True)
class PromptQuery:
    text: str
    locale: str = ""
    filters: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class PromptDocument:
    title: str
    text: str


@dataclass(frozen=True, slots=True)
class PromptSpec:
    """What a judge's prompt is made of besides the pair: its configuration's prompt-side fields."""

    instructions: str
    rubric: Rubric
    text_budget: int  # characters of the document's text the prompt carries at most


def canonical_hash(value: Any) -> str:
    """sha256 of a canonical JSON form: equal content, equal hash, in every process."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def query_hash(query: PromptQuery) -> str:
    """The query's content as the prompt shows it: the cache's query key."""
    return canonical_hash({"text": query.text, "locale": query.locale, "filters": dict(query.filters)})


def answer_contract(rubric: Rubric) -> dict[str, Any]:
    """The JSON Schema of the one answer accepted: an integer grade on the scale and a one-line reason."""
    return {
        "type": "object",
        "properties": {
            "grade": {"type": "integer", "minimum": rubric.scale_min, "maximum": rubric.scale_max},
            "reason": {"type": "string"},
        },
        "required": ["grade", "reason"],
        "additionalProperties": False,
    }


def response_format(rubric: Rubric) -> dict[str, Any]:
    """The `response_format` of OpenAI's structured outputs (vLLM, llama.cpp's server and Ollama read it
    too): the endpoint constrains its answer to `answer_contract`."""
    return {
        "type": "json_schema",
        "json_schema": {"name": "relevance_grade", "strict": True, "schema": answer_contract(rubric)},
    }


def _rubric_text(rubric: Rubric) -> str:
    lines = [f"Rubric (grades {rubric.scale_min} to {rubric.scale_max}, highest first):"]
    for grade in sorted(rubric.grades, key=lambda g: -g.grade):
        lines.append(f"- Grade {grade.grade} ({grade.label}): {grade.meaning}")
        lines += [f"    earns it: {example}" for example in grade.positive_examples]
        lines += [f"    does not: {example}" for example in grade.negative_examples]
    return "\n".join(lines)


def system_message(spec: PromptSpec) -> str:
    """The instructions, the rubric and the answer contract: the same for every pair of a judge."""
    scale = spec.rubric
    return "\n\n".join(
        [
            spec.instructions.strip(),
            _rubric_text(spec.rubric),
            "Answer with one JSON object and nothing else: "
            f'{{"grade": <an integer from {scale.scale_min} to {scale.scale_max}>, '
            '"reason": "<one line saying why>"}',
        ]
    )


def trim(text: str, budget: int) -> tuple[str, bool]:
    """The text cut to `budget` characters (at the last space inside it when there is one), and whether
    it was cut."""
    if len(text) <= budget:
        return text, False
    cut = text[:budget]
    space = cut.rfind(" ")
    return (cut[:space] if space > budget // 2 else cut).rstrip(), True


def user_message(spec: PromptSpec, query: PromptQuery, document: PromptDocument) -> str:
    """The query (text, locale, filters) and the document (title, text within the budget, saying so when
    it was trimmed)."""
    filters = json.dumps(dict(query.filters), sort_keys=True, ensure_ascii=False) if query.filters else "none"
    text, trimmed = trim(document.text, spec.text_budget)
    if trimmed:
        text += "\n" + TRIMMED_MARK.format(budget=spec.text_budget)
    return "\n".join(
        [
            f"Query: {query.text}",
            f"Locale: {query.locale or 'any'}",
            f"Filters: {filters}",
            "",
            f"Document title: {document.title}",
            "Document text:",
            text,
        ]
    )


def messages(spec: PromptSpec, query: PromptQuery, document: PromptDocument) -> list[dict[str, str]]:
    """The chat messages for one pair."""
    return [
        {"role": "system", "content": system_message(spec)},
        {"role": "user", "content": user_message(spec, query, document)},
    ]


def prompt_hash(spec: PromptSpec, *, temperature: float, structured: bool) -> str:
    """Everything of a request but the pair and the model: the system message, the text budget, the
    temperature and whether the schema is sent. Any of them can change an answer, so each is in the
    cache's key (with the model and the pair's content hashes)."""
    return canonical_hash(
        {
            "system": system_message(spec),
            "user_template": user_message(spec, PromptQuery("{query}"), PromptDocument("{title}", "{text}")),
            "text_budget": spec.text_budget,
            "temperature": temperature,
            "schema": response_format(spec.rubric) if structured else None,
        }
    )
