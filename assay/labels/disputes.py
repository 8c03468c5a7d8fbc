"""Dispute rules, third-rater choice and label consolidation (pure: no Django, no other labeling module
but `assay.labels.agreement`).

When a query's dual assignment completes, the Django side calls `query_dispute` with the query's
documents and the golden set's `Thresholds`; a disputed query moves to the shadow tier with the
decision's reasons, and its `disagreeing_docs` go to a third rater chosen by `choose_third_rater`.
`consolidate` turns one document's grades (and any adjudication) into its final label. Every function
here is a function of its arguments only, so calling it again on the same data gives the same answer:
that is what makes the check idempotent. The rules, with worked examples: docs/agreement.md.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from assay.display import grades_text
from assay.golden.model import DEFAULT_RELEVANT_MIN_GRADE, Scale
from assay.labels.agreement import (
    DEFAULT_HARD_DIFF,
    DEFAULT_SCALE,
    AgreementInputError,
    QueryAgreement,
    query_agreement,
)

if TYPE_CHECKING:
    from _typeshed import SupportsRichComparison

    R = TypeVar("R", bound=SupportsRichComparison)
else:
    R = TypeVar("R")

# A final grade needs a reviewer when three grades are two or more apart (highest - lowest): 0, 0, 3 is
# not a confident 0 (docs/agreement.md, "Final labels").
REVIEW_SPREAD = 2

Method = Literal["single", "agreed", "median", "adjudicated"]
Awaiting = Literal["first_rater", "second_rater", "third_rater", "reviewer"]


@dataclass(frozen=True, slots=True)
class Thresholds:
    """A golden set's dispute thresholds, with their defaults (docs/agreement.md, "Dispute rules").

    A query is disputed when a top document has a hard disagreement (two grades `hard_diff` or more
    apart) or a relevance flip; and, when it has at least `min_dual_docs` dual-labeled documents, when
    its exact agreement is below `min_exact` or its mean absolute difference is above `max_mad`
    (a value equal to a threshold is not disputed).
    """

    hard_diff: int = DEFAULT_HARD_DIFF
    min_dual_docs: int = 5
    min_exact: float = 0.55
    max_mad: float = 0.45

    def __post_init__(self) -> None:
        errors = []
        for name in ("hard_diff", "min_dual_docs"):
            value = getattr(self, name)
            if type(value) is not int or value < 1:
                errors.append(f"thresholds.{name}: {value!r} must be a positive integer")
        exact = self.min_exact
        if type(exact) not in (int, float) or not 0 <= exact <= 1:
            errors.append(f"thresholds.min_exact: {exact!r} must be a number from 0 to 1")
        mad = self.max_mad
        if type(mad) not in (int, float) or not 0 <= mad < float("inf"):
            errors.append(f"thresholds.max_mad: {mad!r} must be a finite number >= 0")
        if errors:
            raise ValueError("; ".join(errors))

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> Thresholds:
        """From stored settings (e.g. a JSON field); absent keys keep their defaults."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"thresholds: unknown keys {unknown}; known are {sorted(known)}")
        return cls(**data)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


DEFAULT_THRESHOLDS = Thresholds()


@dataclass(frozen=True, slots=True)
class DocGrades:
    """One document of a query with its grades so far.

    `in_top`: some system ranked the document within the golden set's k when the candidate pool was
    built. Only such documents can dispute a query through a hard disagreement or flip: a quarrel over
    a document nobody shows near the top does not make the query's gate numbers noisy. When the pool's
    ranks are unknown, leave it True (disputing too much is the safe side).
    """

    doc_id: str
    grades: tuple[int, ...]
    in_top: bool = True


@dataclass(frozen=True, slots=True)
class DisputeDecision:
    disputed: bool
    reasons: tuple[str, ...]  # human-readable, with the numbers; empty when not disputed
    # Documents whose grades differ (in the top or not): each goes to a third rater.
    disagreeing_docs: tuple[str, ...]
    agreement: QueryAgreement

    def to_dict(self) -> dict[str, Any]:
        return {
            "disputed": self.disputed,
            "reasons": list(self.reasons),
            "disagreeing_docs": list(self.disagreeing_docs),
            "agreement": self.agreement.to_dict(),
        }


@dataclass(frozen=True, slots=True)
class Final:
    """A document's final label: a grade and how it was reached, or why there is none yet."""

    grade: int | None
    method: Method | None
    unresolved_reason: str | None = None
    awaiting: Awaiting | None = None  # who has to act next when unresolved

    @property
    def resolved(self) -> bool:
        return self.grade is not None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class ItemGrades:
    """One (query, document) for `labels_consolidate`: its raters' grades, how many raters it was
    sampled for (1 single, 2 dual) and a reviewer's adjudication if any."""

    query_id: str
    doc_id: str
    grades: tuple[int, ...]
    expected: int
    adjudication: int | None = None


@dataclass(frozen=True, slots=True)
class Consolidation:
    finals: dict[tuple[str, str], Final]

    @property
    def labels(self) -> dict[tuple[str, str], int]:
        """The resolved final grades (what a golden version freezes, and `final=` for agreement)."""
        return {key: f.grade for key, f in self.finals.items() if f.grade is not None}

    @property
    def unresolved(self) -> list[tuple[str, str, Final]]:
        return [(q, d, f) for (q, d), f in self.finals.items() if f.grade is None]

    def to_dict(self) -> dict[str, Any]:
        return {
            "labels": [
                {"query_id": q, "doc_id": d, **f.to_dict()} for (q, d), f in self.finals.items() if f.resolved
            ],
            "unresolved": [{"query_id": q, "doc_id": d, **f.to_dict()} for q, d, f in self.unresolved],
        }


def _share(count: int, n: int, value: float) -> str:
    return f"{count}/{n} = {value:.4f}".rstrip("0").rstrip(".")


def query_dispute(
    docs: Sequence[DocGrades],
    *,
    relevant_min_grade: int = DEFAULT_RELEVANT_MIN_GRADE,
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
    scale: Scale = DEFAULT_SCALE,
    query_id: str = "",
) -> DisputeDecision:
    """Apply the dispute rules to one query.

    Meant for the moment a dual assignment completes, with the two raters' grades; a document with
    more grades contributes all its pairs (as in `query_agreement`). With fewer than
    `thresholds.min_dual_docs` dual-labeled documents only the document-level rules apply.
    """
    errors = []
    first: dict[str, int] = {}
    for i, doc in enumerate(docs):
        if not isinstance(doc, DocGrades):
            errors.append(f"docs[{i}]: {doc!r} is not a DocGrades")
        elif not isinstance(doc.doc_id, str) or not doc.doc_id:
            errors.append(f"docs[{i}].doc_id: {doc.doc_id!r} is not a non-empty string")
        elif doc.doc_id in first:
            errors.append(f"docs[{i}].doc_id: {doc.doc_id!r} already appears at docs[{first[doc.doc_id]}]")
        else:
            first[doc.doc_id] = i
            if type(doc.in_top) is not bool:
                errors.append(f"docs[{i}].in_top: {doc.in_top!r} must be True or False")
    try:
        # Validates the ids and grades, naming each by its document id.
        agreement = query_agreement(
            query_id,
            {docs[i].doc_id: docs[i].grades for i in first.values()},
            relevant_min_grade=relevant_min_grade,
            hard_diff=thresholds.hard_diff,
            scale=scale,
        )
    except AgreementInputError as e:
        errors.extend(e.errors)
    if errors:
        raise AgreementInputError(errors)
    top = {doc.doc_id for doc in docs if doc.in_top}
    hard = {d.doc_id for d in agreement.hard_disagreements}
    flips = {d.doc_id for d in agreement.relevance_flips}
    reasons = []
    cutoff = f" (relevant from grade {relevant_min_grade})"
    for d in agreement.disagreements:
        if d.doc_id not in top:
            continue
        grades = grades_text(d.grades)
        if d.doc_id in hard and d.doc_id in flips:
            reasons.append(f"hard disagreement and relevance flip on {d.doc_id}: {grades}{cutoff}")
        elif d.doc_id in hard:
            reasons.append(f"hard disagreement on {d.doc_id}: {grades}")
        elif d.doc_id in flips:
            reasons.append(f"relevance flip on {d.doc_id}: {grades}{cutoff}")
    if agreement.n_dual >= thresholds.min_dual_docs:
        exact, mad = agreement.exact, agreement.mad
        # Both are defined here: n_dual >= 1 means at least one pair.
        assert isinstance(exact, float) and isinstance(mad, float)
        n, dual = agreement.n_pairs, f"on {agreement.n_dual} dual-labeled documents"
        if exact < thresholds.min_exact:
            reasons.append(
                f"exact agreement {_share(agreement.n_exact, n, exact)} is below"
                f" {thresholds.min_exact:g} {dual}"
            )
        if mad > thresholds.max_mad:
            reasons.append(
                f"mean absolute difference {_share(agreement.abs_diff_sum, n, mad)} is above"
                f" {thresholds.max_mad:g} {dual}"
            )
    return DisputeDecision(
        disputed=bool(reasons),
        reasons=tuple(reasons),
        disagreeing_docs=tuple(d.doc_id for d in agreement.disagreements),
        agreement=agreement,
    )


def choose_third_rater(candidates: Iterable[R], exclude: Collection[R], load: Mapping[R, int]) -> R | None:
    """The least-loaded candidate not in `exclude` (pass the query's first two raters there); ties go
    to the smallest id, so the same data always give the same rater. None when nobody is left.

    `load` is each rater's open work (e.g. assignments not yet completed); a rater absent from it has 0.
    """
    for rater, value in load.items():
        if type(value) is not int or value < 0:
            raise ValueError(f"load[{rater!r}]: {value!r} must be an integer >= 0")
    eligible = [c for c in candidates if c not in exclude]
    if not eligible:
        return None
    return min(eligible, key=lambda c: (load.get(c, 0), c))


def consolidate(
    grades: Sequence[int], *, adjudication: int | None = None, expected: int, scale: Scale = DEFAULT_SCALE
) -> Final:
    """One document's final label.

    In order: an adjudication always wins; no grade, or fewer than `expected` (1 single, 2 dual), is
    unresolved awaiting a rater; a lone grade on a single-labeled document stands; equal grades are
    agreed; two that differ await a third rater; three or more whose highest and lowest are
    REVIEW_SPREAD or more apart go to a reviewer even when two of them agree (0, 0, 3 is not a
    confident 0); otherwise the median, which with grades one apart is also the majority. An even
    count whose two middle grades differ (only possible beyond three grades) is a tie for the reviewer.
    """
    errors = [
        f"grades[{i}]: {g!r} is not a grade on {scale}"
        for i, g in enumerate(grades)
        if type(g) is not int or g not in scale
    ]
    if adjudication is not None and (type(adjudication) is not int or adjudication not in scale):
        errors.append(f"adjudication: {adjudication!r} is not a grade on {scale}")
    if type(expected) is not int or expected not in (1, 2):
        errors.append(f"expected: {expected!r} must be 1 (single-labeled) or 2 (dual-labeled)")
    if errors:
        raise ValueError("; ".join(errors))

    if adjudication is not None:
        return Final(adjudication, "adjudicated")
    ordered = sorted(grades)
    n = len(ordered)
    if n == 0:
        return Final(None, None, "no grade yet: awaiting a rater", "first_rater")
    if n < expected:
        return Final(None, None, "dual-labeled with one grade so far: awaiting second rater", "second_rater")
    if n == 1:
        return Final(ordered[0], "single")
    if ordered[0] == ordered[-1]:
        return Final(ordered[0], "agreed")
    if n == 2:
        text = grades_text(grades)
        return Final(None, None, f"two grades disagree ({text}): awaiting third rater", "third_rater")
    text = grades_text(ordered)
    spread = ordered[-1] - ordered[0]
    if spread >= REVIEW_SPREAD:
        return Final(None, None, f"grades {text} are {spread} apart: a reviewer decides", "reviewer")
    low, high = ordered[(n - 1) // 2], ordered[n // 2]
    if low != high:
        return Final(
            None, None, f"grades {text} tie between {low} and {high}: a reviewer decides", "reviewer"
        )
    return Final(low, "median")


def labels_consolidate(items: Iterable[ItemGrades], *, scale: Scale = DEFAULT_SCALE) -> Consolidation:
    """`consolidate` for every item; every bad item is reported at once, naming its place."""
    finals: dict[tuple[str, str], Final] = {}
    first: dict[tuple[str, str], int] = {}
    errors = []
    for i, item in enumerate(items):
        key = (item.query_id, item.doc_id)
        if key in first:
            errors.append(
                f"items[{i}]: ({item.query_id!r}, {item.doc_id!r}) already appears at items[{first[key]}]"
            )
            continue
        first[key] = i
        try:
            finals[key] = consolidate(
                item.grades, adjudication=item.adjudication, expected=item.expected, scale=scale
            )
        except ValueError as e:
            errors.append(f"items[{i}] ({item.query_id!r}, {item.doc_id!r}): {e}")
    if errors:
        raise AgreementInputError(errors)
    return Consolidation(finals)
