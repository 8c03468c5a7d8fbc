"""Creating a side-by-side study from two finished runs (docs/sxs.md, "Creating a study"), and what every
study service refuses with (`StudyError`, `AnswerRefused`). A rater's answer and its undo:
`evaluation.studies.services.answers`; the analysis kept on the study and the set's "a passed study before
a baseline" setting: `evaluation.studies.services.analysis`; closing, reopening and what a promotion to
baseline asks of a study: `evaluation.studies.services.close`.

Blindness is decided here, at creation: which run a rater sees on the left is drawn per (rater, query)
and stored; the task's token is random (never derived from an id or an order); what the raters see of a
query is copied from the runs as they returned it, so the rater's page reads one row per side and never
a run, a label or a metric.
"""

from __future__ import annotations

import random
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.utils import timezone

from assay.storable import text_problem
from assay.sxs import (
    SxsRule,
    rater_name_default,
    rater_name_problem,
)
from assay.urls import UrlError, split_url
from evaluation.runs.models import EvaluationRun, QueryRunResult
from evaluation.runs.services.runs import RunError
from evaluation.studies.models import (
    SHOWN_MAX,
    TOKEN_LENGTH,
    StudyInstructions,
    StudyQuery,
    StudyTask,
    SxsStudy,
)
from labeling.models import Document, GoldenSet
from labeling.roles import is_rater, reviews

Status = EvaluationRun.Status
Selection = SxsStudy.Selection

DEFAULT_INSTRUCTIONS = (
    "Imagine you typed this query. Which list would you rather get? Judge the lists as a whole, the top "
    "results most: a list is better when its first results answer the query, its titles and snippets say "
    "what each page holds, it repeats nothing, it stays on the right product and kind of page, it leaves "
    "out no obvious result and it is not out of date. Choose 'about the same' when neither is better."
)
DEFAULT_EXAMPLES = (
    "'refund policy for annual plan': the list with the refund policy first is better than one with "
    "hardware-return articles first, even if both have it somewhere.\n"
    "Two lists with the same pages in a slightly different order below the top three: about the same."
)
MAX_SEED = 2**53  # a seed people can type and JSON carries exactly


class StudyError(RunError):
    """A study that cannot be created or changed; `problems` names each reason."""


class AnswerRefused(Exception):
    """A rater's answer or undo refused, in words, with its HTTP status and a short code."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


# ------------------------------------------------------------------------------------------ creation


@dataclass(frozen=True, slots=True)
class StudySpec:
    """What a reviewer asks for (the form and the API read into this)."""

    run_a: EvaluationRun
    run_b: EvaluationRun
    raters: Sequence[Any]
    name: str = ""
    rater_name: str = ""
    selection: str = Selection.ALL
    stratum: str = ""
    size: int | None = None
    seed: int | None = None
    shown: int = 5
    answers_per_query: int = 2
    instructions_name: str = "default"
    instructions: str = DEFAULT_INSTRUCTIONS
    examples: str = DEFAULT_EXAMPLES
    rule: Mapping[str, Any] | None = None

    @classmethod
    def read(
        cls, run_a: EvaluationRun, run_b: EvaluationRun, raters: Sequence[Any], values: Mapping[str, Any]
    ) -> StudySpec:
        """A spec from a form's or an API body's checked values (the same names as the fields here); a
        missing optional value takes the default."""
        optional = ("name", "rater_name", "stratum", "examples")
        return cls(
            run_a=run_a,
            run_b=run_b,
            raters=list(raters),
            **{name: values.get(name) or "" for name in optional},
            selection=values.get("selection") or Selection.ALL,
            size=values.get("size"),
            seed=values.get("seed"),
            shown=values.get("shown") or 5,
            answers_per_query=values.get("answers_per_query") or 2,
            instructions_name=values.get("instructions_name") or "default",
            instructions=values.get("instructions") or DEFAULT_INSTRUCTIONS,
            rule=dict(values.get("rule") or {}) or None,
        )


def instructions_get_or_create(*, name: str, text: str, examples: str, by: Any) -> StudyInstructions:
    """The newest version of the named instructions when its words are these, else a new version: a
    change is a new row, so a study always names the words its raters read."""
    newest = StudyInstructions.objects.filter(name=name).order_by("-version").first()
    if newest is not None and newest.text == text.strip() and newest.examples == examples.strip():
        return newest
    version = newest.version + 1 if newest is not None else 1
    return StudyInstructions.objects.create(
        name=name, version=version, text=text.strip(), examples=examples.strip(), created_by=by
    )


def _run_problems(label: str, run: EvaluationRun) -> list[str]:
    if run.status != Status.SUCCEEDED or run.report is None:
        return [
            f"run {label}, {run.label}, is {run.status}: only a finished run with a report can be compared"
        ]
    return []


def _spec_problems(spec: StudySpec, by: Any) -> list[str]:
    problems: list[str] = []
    a, b = spec.run_a, spec.run_b
    set_a, set_b = a.golden_version.golden_set, b.golden_version.golden_set
    if not reviews(by, set_a) or not reviews(by, set_b):
        problems.append("only a reviewer of the runs' golden set can create a study of them")
    if a.pk == b.pk:
        problems.append(f"{a.label} against itself: a study compares two different runs")
    elif set_a.pk != set_b.pk:
        problems.append(
            f"{a.label} is of golden set {set_a.slug} and {b.label} of {set_b.slug}: a study compares two "
            "runs of one set"
        )
    elif a.golden_version_id != b.golden_version_id:
        problems.append(
            f"{a.label} is on golden version {a.golden_version.name} and {b.label} on "
            f"{b.golden_version.name}: a study compares two runs of the same golden version"
        )
    problems += _run_problems("A", a) + _run_problems("B", b)
    problems += rater_name_problems(spec.rater_name, systems=compared_systems(a, b))
    return problems + option_problems(spec, set_a)


def compared_systems(*runs: Any) -> list[str]:
    """What names the systems a study compares, which raters may not read in its name: each run's target
    and the names of the parameters and stage toggles it sends (a run, or a target about to be run)."""
    words: set[str] = set()
    for run in runs:
        target = getattr(run, "target", run)
        words.add(target.name)
        for params in (
            target.params,
            target.stages,
            getattr(run, "params", {}),
            getattr(run, "effective_params", {}),
        ):
            words.update(str(key) for key in (params or {}))
    return sorted(words)


def rater_name_problems(rater_name: str, *, systems: Sequence[str]) -> list[str]:
    """The refusals of the name a reviewer typed for raters (none when they left it empty: a default is
    chosen at creation, `assay.sxs.rater_name_default`)."""
    if not rater_name.strip():
        return []
    problem = text_problem(rater_name, 200) or rater_name_problem(rater_name, systems=systems)
    return [f"name raters see: {problem}"] if problem else []


def option_problems(spec: StudySpec, golden_set: GoldenSet) -> list[str]:
    """The problems of the study's options apart from its two runs (also checked before a study on two
    targets starts its runs: `evaluation.studies.services.pending`)."""
    problems: list[str] = []
    name_problem = text_problem(spec.name, 200)
    if name_problem:
        problems.append(f"name: {name_problem}")
    if not 1 <= spec.shown <= SHOWN_MAX:
        problems.append(f"results shown: {spec.shown} per side; choose from 1 to {SHOWN_MAX}")
    if spec.selection not in Selection.values:
        problems.append(f"queries: {spec.selection!r} is not one of {', '.join(Selection.values)}")
    if spec.selection == Selection.STRATUM and not spec.stratum.strip():
        problems.append("stratum: name the stratum whose queries to ask")
    if spec.selection in (Selection.MOVERS, Selection.SAMPLE) and not spec.size:
        problems.append(f"size: say how many queries {Selection(spec.selection).label} should hold")
    if spec.size is not None and spec.size < 1:
        problems.append("size: at least 1 query")
    if spec.seed is not None and not 0 <= spec.seed <= MAX_SEED:
        problems.append(f"seed: a whole number from 0 to {MAX_SEED}")
    problems += _rater_problems(spec, golden_set)
    for field, value in (("instructions", spec.instructions), ("examples", spec.examples)):
        unstorable = text_problem(value, 20000, free_text=True)
        if unstorable:
            problems.append(f"{field}: {unstorable}")
    if not spec.instructions.strip():
        problems.append('instructions: say what "better" means for the raters')
    try:
        SxsRule.from_dict(dict(spec.rule or {}))
    except (ValueError, TypeError) as exc:
        problems.append(f"rule: {exc}")
    return problems


def _rater_problems(spec: StudySpec, golden_set: GoldenSet) -> list[str]:
    raters = list(spec.raters)
    problems = []
    if not raters:
        problems.append("raters: choose at least one rater")
    listed = set(golden_set.raters.values_list("pk", flat=True))
    strangers = sorted(r.get_username() for r in raters if r.pk not in listed or not is_rater(r))
    if strangers:
        problems.append(
            f"raters: {', '.join(strangers)} not a rater of {golden_set.slug} (the set's raters list and the "
            "raters group)"
        )
    if spec.answers_per_query < 1:
        problems.append("answers per query: at least 1")
    elif raters and spec.answers_per_query > len(raters):
        problems.append(
            f"answers per query: {spec.answers_per_query} answers need as many raters; {len(raters)} chosen"
        )
    return problems


def _per_query_ndcg(run: EvaluationRun) -> dict[str, float | None]:
    return {row["id"]: row.get("ndcg") for row in (run.report or {}).get("per_query", [])}


def _chosen(
    spec: StudySpec, seed: int, rows: list[dict[str, Any]], change: Mapping[str, float | None]
) -> list[str]:
    """The query ids the selection picks, in a stable order, or a StudyError in words."""
    ids = [row["id"] for row in rows]
    if spec.selection == Selection.STRATUM:
        ids = [row["id"] for row in rows if (row.get("stratum") or "") == spec.stratum.strip()]
        if not ids:
            strata = sorted({row.get("stratum") or "" for row in rows} - {""})
            raise StudyError(
                [
                    f"stratum {spec.stratum.strip()!r} has no query in these runs (strata: "
                    f"{', '.join(strata) or 'none'})"
                ]
            )
    elif spec.selection == Selection.MOVERS:
        ids = [i for i in ids if change.get(i) is not None]
    size = spec.size
    if size is not None and size > len(ids):
        what = "with an nDCG in both runs" if spec.selection == Selection.MOVERS else "to choose from"
        raise StudyError([f"size: {size} queries asked for, but only {len(ids)} are available {what}"])
    if spec.selection == Selection.MOVERS:
        assert size is not None
        # Ties go to the query that comes first in the golden file, on both ends.
        order = {qid: n for n, qid in enumerate(ids)}
        losers = sorted(ids, key=lambda i: (change[i], order[i]))[: (size + 1) // 2]
        rest = [i for i in ids if i not in losers]
        gainers = sorted(rest, key=lambda i: (-(change[i] or 0.0), order[i]))[: size // 2]
        return losers + gainers
    if size is not None and size < len(ids):
        return sorted(random.Random(seed).sample(ids, size))
    return ids


def _host(url: str) -> str:
    try:
        return split_url(url).host
    except UrlError:
        return ""


def _cards(result: QueryRunResult, shown: int, documents: Mapping[str, Document]) -> list[dict[str, str]]:
    """The run's top `shown` as the raters see them: its own titles, and the snippet and URL host of the
    set's document when the id is known."""
    titles = list(result.titles or [])
    cards = []
    for i, doc_id in enumerate(list(result.ids or [])[:shown]):
        doc_id = str(doc_id)
        document = documents.get(doc_id)
        title = str(titles[i]) if i < len(titles) and titles[i] else (document.title if document else "")
        cards.append(
            {
                "id": doc_id,
                "title": title,
                "snippet": document.snippet if document else "",
                "host": _host(document.url) if document else "",
            }
        )
    return cards


def _rater_plan(item_count: int, raters: list[Any], per_query: int, rng: random.Random) -> list[list[Any]]:
    """Which raters answer each item: `per_query` of them, spread evenly (round robin over a seeded
    order of the raters, so everyone's load differs by at most one item)."""
    order = raters[:]
    rng.shuffle(order)
    return [[order[(i * per_query + j) % len(order)] for j in range(per_query)] for i in range(item_count)]


def _sides(items_by_rater: Mapping[int, list[int]], seed: int) -> dict[tuple[int, int], bool]:
    """Which run each rater sees on the left, per item: for each rater a seeded shuffle of their items,
    the candidate left on the first half (so every rater's sides balance to within one), drawn anew per
    rater so no item is always on one side."""
    drawn: dict[tuple[int, int], bool] = {}
    for rater_id, items in items_by_rater.items():
        order = sorted(items)
        rng = random.Random(f"{seed}:{rater_id}")
        rng.shuffle(order)
        left = len(order) // 2 + (rng.random() < 0.5 if len(order) % 2 else 0)
        for n, item in enumerate(order):
            drawn[(rater_id, item)] = n < left
    return drawn


@transaction.atomic
def study_create(*, spec: StudySpec, by: Any) -> SxsStudy:
    """A study of `spec.run_a` (the baseline) against `spec.run_b` (the candidate): the chosen queries
    with both runs' shown tops copied, those whose tops are identical counted apart (not asked), those a
    run errored on left out and named, and a task per (query asked, rater) with its side drawn. Raises
    StudyError naming every reason it cannot (nothing is written then)."""
    spec_problems = _spec_problems(spec, by)
    if spec_problems:
        raise StudyError(spec_problems)
    seed = spec.seed if spec.seed is not None else secrets.randbelow(MAX_SEED)
    a, b = spec.run_a, spec.run_b
    golden = a.golden_version.golden()
    queries = {q.id: q for q in golden.queries}
    results_a = {r.query_id: r for r in QueryRunResult.objects.filter(run=a)}
    results_b = {r.query_id: r for r in QueryRunResult.objects.filter(run=b)}
    ndcg_a, ndcg_b = _per_query_ndcg(a), _per_query_ndcg(b)
    change: dict[str, float | None] = {}
    for q, before in ndcg_a.items():
        after = ndcg_b.get(q)
        change[q] = after - before if before is not None and after is not None else None
    rows = [row for row in (a.report or {}).get("per_query", []) if row["id"] in queries]
    left_out: list[dict[str, str]] = []
    usable = []
    for row in rows:
        qid = row["id"]
        why = [
            f"run {label}, {run.label}, {_failure(results.get(qid))}"
            for label, run, results in (("A", a, results_a), ("B", b, results_b))
            if _failure(results.get(qid))
        ]
        if why:
            left_out.append({"query_id": qid, "why": "; ".join(why)})
        else:
            usable.append(row)
    chosen = _chosen(spec, seed, usable, change)
    if not chosen:
        raise StudyError(["no query to ask: the selection chose none"])
    kept = set(chosen)
    left_out = [entry for entry in left_out if _selected(entry["query_id"], spec, queries)]
    doc_ids = {
        str(d)
        for r in (*results_a.values(), *results_b.values())
        if r.query_id in kept
        for d in r.ids[: spec.shown]
    }
    documents = {
        d.doc_id: d
        for d in Document.objects.filter(golden_set=a.golden_version.golden_set, doc_id__in=doc_ids).only(
            "doc_id", "title", "url", "snippet"
        )
    }
    items = []
    for qid in chosen:
        query = queries[qid]
        cards_a = _cards(results_a[qid], spec.shown, documents)
        cards_b = _cards(results_b[qid], spec.shown, documents)
        items.append(
            StudyQuery(
                query_id=qid,
                text=query.text,
                locale=query.locale or "",
                filters=dict(query.filters or {}),
                stratum=query.stratum or "",
                critical=bool(query.critical),
                ndcg_change=change.get(qid),
                identical=[c["id"] for c in cards_a] == [c["id"] for c in cards_b],
                cards_a=cards_a,
                cards_b=cards_b,
            )
        )
    asked = [item for item in items if not item.identical]
    if not asked:
        raise StudyError(
            [f"all {len(items)} chosen queries show the same top {spec.shown} in both runs: nothing to ask"]
        )
    instructions = instructions_get_or_create(
        name=spec.instructions_name or "default", text=spec.instructions, examples=spec.examples, by=by
    )
    study = SxsStudy.objects.create(
        name=spec.name.strip() or f"run {a.pk} against run {b.pk}",
        rater_name=spec.rater_name.strip() or _rater_name_default(spec.name, a, b),
        golden_set=a.golden_version.golden_set,
        golden_version=a.golden_version,
        run_a=a,
        run_b=b,
        selection=spec.selection,
        stratum=spec.stratum.strip() if spec.selection == Selection.STRATUM else "",
        size=spec.size,
        seed=seed,
        shown=spec.shown,
        answers_per_query=spec.answers_per_query,
        instructions=instructions,
        rule=SxsRule.from_dict(dict(spec.rule or {})).to_dict(),
        left_out=left_out,
        created_by=by,
    )
    raters = sorted(spec.raters, key=lambda r: r.pk)
    study.raters.set(raters)
    for item in items:
        item.study = study
    StudyQuery.objects.bulk_create(items)
    plan = _rater_plan(len(asked), raters, spec.answers_per_query, random.Random(seed))
    by_rater: dict[int, list[int]] = {}
    for item, chosen_raters in zip(asked, plan, strict=True):
        for rater in chosen_raters:
            by_rater.setdefault(rater.pk, []).append(item.pk)
    sides = _sides(by_rater, seed)
    StudyTask.objects.bulk_create(
        StudyTask(
            study=study,
            item_id=item_id,
            rater_id=rater_id,
            token=secrets.token_hex(TOKEN_LENGTH // 2),
            candidate_left=sides[(rater_id, item_id)],
        )
        for rater_id, item_ids in by_rater.items()
        for item_id in item_ids
    )
    return study


def _rater_name_default(title: str, a: EvaluationRun, b: EvaluationRun) -> str:
    made = timezone.localtime()
    taken = SxsStudy.objects.filter(golden_set_id=a.golden_version.golden_set_id).values_list(
        "rater_name", flat=True
    )
    return rater_name_default(
        title, systems=compared_systems(a, b), made=made.date(), at=f"{made:%H:%M}", taken=set(taken)
    )


def _failure(result: QueryRunResult | None) -> str:
    if result is None:
        return "has no result for it"
    if result.error is not None:
        return f"errored: {result.error[:200]}"
    return ""


def _selected(query_id: str, spec: StudySpec, queries: Mapping[str, Any]) -> bool:
    """Whether a query left out for an error is one the selection would have looked at (a stratum
    study names only its stratum's)."""
    if spec.selection != Selection.STRATUM:
        return True
    query = queries.get(query_id)
    return query is not None and (query.stratum or "") == spec.stratum.strip()
