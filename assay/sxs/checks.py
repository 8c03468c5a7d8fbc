"""The analysis' input checked before anything is computed: every problem at once, each with its place
(`answers[3].preference: 4 is not on the scale -3..3`), so that a caller shows words, not a traceback.

Part of `assay.sxs`, which is the public API: import from there.
"""

from __future__ import annotations

from collections.abc import Sequence

from assay.labels.agreement_types import reading_thresholds_errors
from assay.sxs.types import PREFERENCE_SCALE, REASONS, SxsAnswer, SxsInputError, SxsQuery, SxsRule, _is_number


def _query_problems(i: int, q: object, seen: dict[str, int]) -> list[str]:
    where = f"queries[{i}]"
    if not isinstance(q, SxsQuery):
        return [f"{where}: {type(q).__name__} is not an SxsQuery"]
    problems = []
    if not isinstance(q.query_id, str) or not q.query_id:
        problems.append(f"{where}.query_id: {q.query_id!r} must be a non-empty string")
    elif q.query_id in seen:
        problems.append(f"{where}: query {q.query_id!r} is already queries[{seen[q.query_id]}]")
    else:
        seen[q.query_id] = i
    if not isinstance(q.stratum, str):
        problems.append(f"{where}.stratum: {q.stratum!r} must be a string")
    for name in ("critical", "identical"):
        if not isinstance(getattr(q, name), bool):
            problems.append(f"{where}.{name}: {getattr(q, name)!r} must be true or false")
    if q.ndcg_change is not None and not _is_number(q.ndcg_change):
        problems.append(f"{where}.ndcg_change: {q.ndcg_change!r} must be a finite number or None")
    return problems


def _answer_problems(
    i: int, a: object, queries: dict[str, SxsQuery], seen: dict[tuple[str, str], int]
) -> list[str]:
    where = f"answers[{i}]"
    if not isinstance(a, SxsAnswer):
        return [f"{where}: {type(a).__name__} is not an SxsAnswer"]
    problems = []
    query = queries.get(a.query_id) if isinstance(a.query_id, str) else None
    if query is None:
        problems.append(f"{where}.query_id: {a.query_id!r} is not a query of the study")
    elif query.identical:
        problems.append(f"{where}: query {a.query_id!r} is identical on both sides and is not asked")
    if not isinstance(a.rater, str) or not a.rater:
        problems.append(f"{where}.rater: {a.rater!r} must be a non-empty string")
    elif query is not None:
        key = (a.query_id, a.rater)
        if key in seen:
            problems.append(
                f"{where}: rater {a.rater!r} already answered {a.query_id!r} at answers[{seen[key]}]"
            )
        else:
            seen[key] = i
    if type(a.preference) is not int or a.preference not in PREFERENCE_SCALE:
        scale = f"{PREFERENCE_SCALE[0]}..{PREFERENCE_SCALE[-1]}"
        problems.append(f"{where}.preference: {a.preference!r} is not on the scale {scale}")
    for name in ("candidate_left", "junk_baseline", "junk_candidate"):
        if not isinstance(getattr(a, name), bool):
            problems.append(f"{where}.{name}: {getattr(a, name)!r} must be true or false")
    if not isinstance(a.reasons, tuple):
        problems.append(f"{where}.reasons: {a.reasons!r} must be a tuple of tags")
    else:
        unknown = [r for r in a.reasons if r not in REASONS]
        if unknown:
            problems.append(f"{where}.reasons: {unknown!r} not among {', '.join(REASONS)}")
        elif len(set(a.reasons)) != len(a.reasons):
            problems.append(f"{where}.reasons: {a.reasons!r} names a tag twice")
    return problems


def _option_problems(
    answers_per_query: object,
    rule: object,
    seed: object,
    resamples: object,
    margin: object,
    alpha_thresholds: object,
) -> list[str]:
    problems = []
    if type(answers_per_query) is not int or answers_per_query < 1:
        problems.append(f"answers_per_query: {answers_per_query!r} must be a whole number of at least 1")
    if not isinstance(rule, SxsRule):
        problems.append(f"rule: {type(rule).__name__} is not an SxsRule")
    if type(seed) is not int or seed < 0:
        problems.append(f"seed: {seed!r} must be a whole number of at least 0")
    if type(resamples) is not int or not 1 <= resamples <= 100_000:
        problems.append(f"resamples: {resamples!r} must be a whole number from 1 to 100,000")
    if not _is_number(margin) or margin < 0:  # type: ignore[operator]
        problems.append(f"margin: {margin!r} must be a number of at least 0")
    if not isinstance(alpha_thresholds, tuple) or len(alpha_thresholds) != 2:
        problems.append(f"alpha_thresholds: {alpha_thresholds!r} must be a pair (good, tentative)")
    else:
        good, tentative = alpha_thresholds
        errors = reading_thresholds_errors(good, tentative, 2)
        if errors:
            names = {"reliable_min": "good", "tentative_min": "tentative"}
            words = "; ".join(f"{names[k]} {m.replace('reliable_min', 'good')}" for k, m in errors.items())
            problems.append(f"alpha_thresholds (good, tentative): {words}")
    return problems


def check_input(
    queries: Sequence[SxsQuery],
    answers: Sequence[SxsAnswer],
    *,
    answers_per_query: int,
    rule: SxsRule,
    seed: int,
    resamples: int,
    margin: float,
    alpha_thresholds: tuple[float, float],
) -> None:
    """Raises SxsInputError listing every problem of the input; returns when there is none."""
    problems = _option_problems(answers_per_query, rule, seed, resamples, margin, alpha_thresholds)
    seen_queries: dict[str, int] = {}
    for i, q in enumerate(queries):
        problems += _query_problems(i, q, seen_queries)
    by_id = {q.query_id: q for q in queries if isinstance(q, SxsQuery) and isinstance(q.query_id, str)}
    seen_answers: dict[tuple[str, str], int] = {}
    for i, a in enumerate(answers):
        problems += _answer_problems(i, a, by_id, seen_answers)
    if problems:
        raise SxsInputError(problems)
