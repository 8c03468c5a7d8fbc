"""Writes of side-by-side studies (docs/sxs.md): creating a study from two finished runs, a rater's
answer and its undo (refused once the study is closed), the analysis kept on the study (frozen while it
is closed), and the set's "a passed study before a baseline" setting. Closing, reopening and what a
promotion to baseline asks of a study: `evaluation.services.study_close`.

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
from django.db.models import Count, Q, QuerySet, Sum
from django.utils import timezone

from assay.storable import text_problem
from assay.sxs import (
    ANALYSIS_VERSION,
    PREFERENCE_SCALE,
    REASONS,
    SxsAnswer,
    SxsQuery,
    SxsRule,
    analyse,
    rater_name_default,
    rater_name_problem,
)
from assay.urls import UrlError, split_url
from evaluation.models import EvaluationRun, QueryRunResult
from evaluation.services.runs import RunError
from evaluation.study_models import (
    SHOWN_MAX,
    TOKEN_LENGTH,
    TOKEN_SHAPE,
    StudyInstructions,
    StudyQuery,
    StudySetting,
    StudyTask,
    SxsStudy,
    sides_undone,
)
from labeling.keyboard import key_of
from labeling.models import Document, GoldenSet
from labeling.roles import is_rater, rated_filter, reviews

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
NOTE_MAX = 2000
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
    targets starts its runs: `evaluation.services.study_targets`)."""
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


# ------------------------------------------------------------------------------------------ answers

SECOND_TAB = (
    "This query was answered or undone in another tab or window since this page was drawn: nothing was "
    "saved. Reload the page to see your answer as it stands."
)
ALREADY = (
    f"You have answered this query already: undo ({key_of('undo')}) first to change your answer. "
    "Nothing was saved."
)
CLOSED = (
    "This study is closed: its reviewers have read its verdict from the answers as they stood, so no "
    "answer is saved or undone any more. Nothing changed."
)


@dataclass(frozen=True, slots=True)
class Answer:
    """A rater's answer as shown: preference from -3 (left much better) to +3 (right much better)."""

    preference: int
    reasons: tuple[str, ...] = ()
    junk_left: bool = False
    junk_right: bool = False
    note: str = ""
    time_spent_ms: int = 0


def answer_problems(body: Any) -> tuple[Answer | None, int | None, str]:
    """Read a rater's answer from a JSON body: (answer, revision, "") or (None, None, the problem)."""
    if not isinstance(body, dict):
        return (
            None,
            None,
            "the body must be a JSON object: {preference, reasons, junk_left, junk_right, note, revision}",
        )
    revision = body.get("revision")
    if type(revision) is not int or revision < 0:
        return None, None, "revision: the whole number the page was drawn with (reload the page)"
    preference = body.get("preference")
    if type(preference) is not int or preference not in PREFERENCE_SCALE:
        return None, None, "preference: a whole number from -3 (left much better) to 3 (right much better)"
    reasons = body.get("reasons", [])
    if not isinstance(reasons, list) or any(r not in REASONS for r in reasons):
        return None, None, f"reasons: a list of {', '.join(REASONS)}"
    flags = [body.get(k, False) for k in ("junk_left", "junk_right")]
    if any(type(f) is not bool for f in flags):
        return None, None, "junk_left, junk_right: true or false"
    note = body.get("note", "")
    if not isinstance(note, str):
        return None, None, "note: text"
    unstorable = text_problem(note, NOTE_MAX, free_text=True)
    if unstorable:
        return None, None, f"note: {unstorable}"
    spent = body.get("time_spent_ms", 0)
    if type(spent) is not int or not 0 <= spent <= 86_400_000:
        spent = 0
    ordered = tuple(r for r in REASONS if r in reasons)
    return Answer(preference, ordered, flags[0], flags[1], note.strip(), spent), revision, ""


def rater_tasks(rater: Any) -> QuerySet[StudyTask]:
    """The rater's own study tasks of the sets they rate now (`labeling.roles.rated_sets`): taken off a
    set's raters list or out of the raters group, none of its studies' tasks opens (the answers stay)."""
    return StudyTask.objects.filter(rated_filter(rater, "study__golden_set"), rater_id=rater.pk)


def rater_open_tasks(rater: Any) -> QuerySet[StudyTask]:
    """The rater's tasks still to answer (`rater_tasks`, unanswered), of open studies only: a closed
    study's tasks are in no queue and no count."""
    return rater_tasks(rater).filter(answered_at__isnull=True, study__closed_at__isnull=True)


def _locked_task(token: str, rater: Any) -> StudyTask:
    shaped = TOKEN_SHAPE.fullmatch(token) is not None
    # The rule is read in the same statement that takes the lock: a removal committed before it refuses.
    task = rater_tasks(rater).select_for_update(of=("self",)).filter(token=token).first() if shaped else None
    if task is None:
        raise AnswerRefused(404, "not_found", "No such study task of yours.")
    # Read after the task's lock, in a statement of its own: a close holds every task of its study locked
    # until it commits (study_close), so an answer either commits before the close reads the verdict or
    # waits and then finds the study closed.
    if SxsStudy.objects.filter(pk=task.study_id, closed_at__isnull=False).exists():
        raise AnswerRefused(409, "closed", CLOSED)
    return task


@transaction.atomic
def study_answer(*, token: str, rater: Any, revision: int, answer: Answer) -> StudyTask:
    """Save the rater's answer to their task. Refused (AnswerRefused, nothing saved): not their task
    (404), the study closed (409 `closed`), the page's revision behind the task's (409 `stale`: another
    tab answered or undid), answered already (409 `answered`: undo first)."""
    task = _locked_task(token, rater)
    if revision != task.revision:
        raise AnswerRefused(409, "stale", SECOND_TAB)
    if task.answered_at is not None:
        raise AnswerRefused(409, "answered", ALREADY)
    task.preference = answer.preference
    task.reasons = list(answer.reasons)
    task.junk_left, task.junk_right = answer.junk_left, answer.junk_right
    task.note = answer.note
    task.time_spent_ms = min(task.time_spent_ms + answer.time_spent_ms, 2**31 - 1)
    task.answered_at = timezone.now()
    task.revision += 1
    task.save()
    return task


@transaction.atomic
def study_undo(*, token: str, rater: Any, revision: int) -> StudyTask:
    """Take the rater's answer back (it can then be answered again). Refused like an answer: 404, 409
    `closed`, 409 `stale`, and 409 `open` when there is no answer to undo."""
    task = _locked_task(token, rater)
    if revision != task.revision:
        raise AnswerRefused(409, "stale", SECOND_TAB)
    if task.answered_at is None:
        raise AnswerRefused(409, "open", "There is no answer to undo on this query. Nothing changed.")
    task.preference, task.reasons, task.note = None, [], ""
    task.junk_left = task.junk_right = False
    task.answered_at = None
    task.revision += 1
    task.save()
    return task


# ------------------------------------------------------------------------------------------ analysis


ANSWER_FIELDS = (
    "study_id",
    "token",
    "candidate_left",
    "preference",
    "reasons",
    "junk_left",
    "junk_right",
    "note",
    "answered_at",
    "item__query_id",
    "item__stratum",
    "item__critical",
    "item__ndcg_change",
    "rater__username",
)


def study_answers(study: SxsStudy) -> QuerySet[StudyTask]:
    """The study's answered tasks with their query and rater, in a stable order (query, rater)."""
    # Only what an answer row needs: a query's cards (its two lists, kilobytes) are not read once per answer.
    return (
        StudyTask.objects.filter(study=study, answered_at__isnull=False)
        .select_related("item", "rater")
        .only(*ANSWER_FIELDS)
        .order_by("item__query_id", "rater__username", "token")
    )


def sxs_inputs(study: SxsStudy) -> tuple[list[SxsQuery], list[SxsAnswer]]:
    """The analysis' input: every chosen query (identical ones flagged) with its nDCG change, and every
    answer with the sides undone (in the candidate's favour)."""
    queries = [
        SxsQuery(
            query_id=q.query_id,
            stratum=q.stratum,
            critical=q.critical,
            ndcg_change=q.ndcg_change,
            identical=q.identical,
        )
        for q in StudyQuery.objects.filter(study=study)
        .only("query_id", "stratum", "critical", "ndcg_change", "identical")
        .order_by("id")
    ]
    # Plain rows, not model instances: the analysis reads seven values of every answer.
    rows = (
        StudyTask.objects.filter(study=study, answered_at__isnull=False)
        .order_by("item__query_id", "rater__username", "token")
        .values_list(
            "item__query_id",
            "rater__username",
            "candidate_left",
            "preference",
            "reasons",
            "junk_left",
            "junk_right",
        )
    )
    answers = []
    for query_id, rater, left, preference, reasons, junk_left, junk_right in rows:
        assert (
            preference is not None
        )  # answered: study_answer sets it with answered_at, study_undo clears both
        undone = sides_undone(left, preference, junk_left, junk_right)
        answers.append(
            SxsAnswer(
                query_id=query_id,
                rater=rater,
                preference=undone["preference"],
                candidate_left=left,
                reasons=tuple(reasons),
                junk_baseline=undone["junk_baseline"],
                junk_candidate=undone["junk_candidate"],
            )
        )
    return queries, answers


def _answers_key(study: SxsStudy) -> str:
    """What the kept analysis was made from: every submit and undo adds one to its task's revision, so
    the revisions' sum moves whenever an answer changes; and by which version of the analysis, so one
    stored by an older rule is made again when read (docs/sxs.md, "Studies stored before the three
    outcomes")."""
    state = StudyTask.objects.filter(study=study).aggregate(n=Count("id"), revisions=Sum("revision"))
    return f"v{ANALYSIS_VERSION}:{state['n']}:{state['revisions'] or 0}"


def study_analysis(study: SxsStudy) -> dict[str, Any]:
    """The study's analysis (`assay.sxs.analyse`), kept on the study and made again only when an answer
    changed since (every submit and undo moves the revisions' sum); its verdict goes on the study, where
    the run pages read it. A closed study's is frozen: the one read when it closed, whatever reads it
    (a newer version of the analysis included) until a reviewer reopens it."""
    if study.closed_at is not None and study.analysis is not None:
        return study.analysis
    key = _answers_key(study)
    if study.analysis is not None and study.analysed_key == key:
        return study.analysis
    queries, answers = sxs_inputs(study)
    result = analyse(
        queries,
        answers,
        answers_per_query=study.answers_per_query,
        rule=SxsRule.from_dict(study.rule),
        seed=study.seed,
    ).to_dict()
    verdict = result["verdict"]["result"]
    SxsStudy.objects.filter(pk=study.pk).update(analysis=result, analysed_key=key, verdict=verdict)
    study.analysis, study.analysed_key, study.verdict = result, key, verdict
    return result


# ------------------------------------------------------------------------------------------ settings


def study_setting_set(*, golden_set: GoldenSet, require_passed_study: bool, by: Any) -> StudySetting:
    if not reviews(by, golden_set):
        raise StudyError([f"only a reviewer of {golden_set.slug} can change its study setting"])
    setting, _ = StudySetting.objects.update_or_create(
        golden_set=golden_set, defaults={"require_passed_study": require_passed_study, "updated_by": by}
    )
    return setting


def run_studies(run: EvaluationRun) -> list[dict[str, Any]]:
    """The studies `run` is in (as run A or B), newest first, each with its verdict brought up to date
    (`study_analysis`), the run's role and the other run (its label's columns only)."""
    rows: list[tuple[SxsStudy, str, int]] = []
    for study in SxsStudy.objects.filter(Q(run_a=run) | Q(run_b=run)).order_by("-created", "-id"):
        study_analysis(study)
        role = "run A (the baseline)" if study.run_a_id == run.pk else "run B (the candidate)"
        rows.append((study, role, study.run_b_id if study.run_a_id == run.pk else study.run_a_id))
    others = EvaluationRun.objects.filter(pk__in=[other for *_, other in rows]).select_related("target")
    named = {other.pk: other for other in others.only(*EvaluationRun.LABEL_FIELDS)}
    return [{"study": study, "role": role, "other": named[other]} for study, role, other in rows]
