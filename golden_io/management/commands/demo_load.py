"""`make run`'s demo: users, rubric, the help-center golden set with documents, frozen labels, candidate
pools and assignments, so the grading page has work on first start. Idempotent: run it every start.

golden_io's because it imports the demo golden file (`golden_io.services.golden_import`); the rest goes
through labeling's services, and the users and their logins are `labeling.management.demo_users`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.models import Group, User
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from assay.golden.model import GoldenFile
from assay.judge.prompt import DEFAULT_INSTRUCTIONS
from assay.problems import ImportReport
from golden_io.services import golden_import
from labeling import services
from labeling.management.demo_users import DEMO_USERS, demo_logins, render_logins
from labeling.models import Assignment, Candidate, FrozenLabel, GoldenSet, Judge, Judgment, Query
from labeling.services import judges

DEMO_DIR = Path(settings.BASE_DIR) / "demo"
SET_SLUG = "help-center"
# Two configurations of the demo search engine pool the candidates; raters never learn which is which.
DEMO_SYSTEMS = {"bm25": False, "bm25-rewrite": True}
# Strata whose dual-labeled queries the demo grades with a disagreement (not billing: the evaluation demo's
# story is about billing, and its frozen labels stay as the golden file has them).
DISAGREEMENT_STRATA = ("account", "developer")
# The stratum whose every dual-labeled query demo_load grades (the others keep one in the raters' queues).
DUAL_ALL_STRATUM = "billing"


class Command(BaseCommand):
    help = "Load the demo (idempotent) and print the demo logins."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--print-logins", action="store_true", help="only print the logins")
        parser.add_argument(
            "--no-logins", action="store_true", help="do not print the logins (`make run`: runstack does)"
        )
        parser.add_argument("--demo-dir", default=str(DEMO_DIR), help="where corpus.jsonl, golden.json are")

    def handle(self, *args: Any, print_logins: bool, no_logins: bool, demo_dir: str, **options: Any) -> None:
        logins = demo_logins()
        if not print_logins:
            summary = self._load(Path(demo_dir), logins)
            self.stdout.write(self.style.SUCCESS(summary))
        if print_logins or not no_logins:
            self.stdout.write(render_logins(logins))

    @transaction.atomic
    def _load(self, demo: Path, logins: dict[str, str]) -> str:
        users = {name: _user(name, group, logins[name]) for name, (group, _) in DEMO_USERS.items()}
        rubric, report = services.rubric_import(data=_read(demo / "rubric.json"), source="demo/rubric.json")
        _check(report)
        assert rubric is not None
        golden_path = demo / "golden.json"
        golden_bytes = _read(golden_path)
        golden = _golden_file(golden_path, golden_bytes)
        golden_set, _ = GoldenSet.objects.update_or_create(
            slug=SET_SLUG,
            defaults={
                "name": "Help center",
                "surface": "help-center",
                "rubric": rubric,
                # The locale scope of the demo set: every locale its golden file uses.
                "locales": sorted({q.locale for q in golden.queries if q.locale}),
                "dual_rate": 0.25,
            },
        )
        golden_set.raters.add(users["rater1"], users["rater2"])
        golden_set.reviewers.add(users["reviewer"])
        _check(
            services.documents_import(
                golden_set=golden_set, data=_read(demo / "corpus.jsonl"), source="corpus"
            )
        )
        if golden_set.frozen_version != golden.version:
            # Once per version of the file: importing it again would make its tiers authoritative once
            # more and put the queries the raters' disagreement moved to shadow back into core.
            _check(golden_import(golden_set=golden_set, data=golden_bytes, source="demo/golden.json"))
            golden_set.refresh_from_db()
        for system, rewrite in DEMO_SYSTEMS.items():
            _check(
                services.pool_import_rankings(
                    golden_set=golden_set,
                    rankings=_demo_rankings(demo, golden_set, rewrite=rewrite),
                    system=system,
                )
            )
        assigned = services.assignments_create(golden_set=golden_set)
        # The raters' work is graded on the first load only (the set has no judgment yet).
        disputed: list[str] = []
        dual_done: list[str] = []
        if not Judgment.objects.filter(assignment__query__golden_set=golden_set).exists():
            disputed = _demo_disagreements(golden_set)
            dual_done = _demo_dual_sample(golden_set, skip=disputed, reviewer=users["reviewer"])
            # What was just judged joins the pools as "judged" now, not on the next load (which must
            # change nothing).
            services.pool_add_judged(golden_set=golden_set)
        judge_note = _demo_judge(golden_set, users["reviewer"])
        n_docs, n_queries = golden_set.documents.count(), golden_set.queries.count()
        return (
            f"Demo loaded: golden set {SET_SLUG!r} with {n_docs} documents, {n_queries} queries, "
            f"frozen labels {golden_set.frozen_version}; "
            f"new assignments: {assigned.primary} primary, {assigned.second} second."
            + (f" Graded as a disagreement for the review queue: {', '.join(disputed)}." if disputed else "")
            + (f" Dual-labeled queries graded by both raters: {len(dual_done)}." if dual_done else "")
            + judge_note
        )


def _demo_judge(golden_set: GoldenSet, reviewer: User) -> str:
    """The demo's two stand-in judges (demo/judge_service.py, which runstack starts on loopback), each
    created once by its model: the term-overlap grader, which stays "not qualified", and the answer key,
    which reads the demo golden file's grades for billing so that the demo can walk a qualified judge.
    An install that has the first gains the second on its next load; a later load changes nothing.
    Loopback is a private address: without ASSAY_TARGET_ALLOW_PRIVATE=true (`make run` sets it) a judge
    is not created and the summary says why."""
    from demo.judge_service import ANSWER_KEY_MODEL, MODEL

    wanted = {
        MODEL: "demo stand-in (term overlap)",
        ANSWER_KEY_MODEL: "demo stand-in (answer key, billing)",
    }
    have = set(Judge.objects.filter(golden_set=golden_set, stand_in=True).values_list("model", flat=True))
    missing = [model for model in wanted if model not in have]
    if not missing:
        return ""
    for model in missing:
        judge_settings = judges.JudgeSettings(
            name=wanted[model],
            base_url=settings.ASSAY_DEMO_JUDGE_URL,  # runstack starts it there
            model=model,
            api_key_env="",
            temperature=0.0,
            concurrency=4,
            text_budget=2000,
            instructions=DEFAULT_INSTRUCTIONS,
            structured=True,
        )
        try:
            judges.judge_save(golden_set=golden_set, settings=judge_settings, by=reviewer, stand_in=True)
        except judges.JudgeError as exc:
            return f" Demo judge not created: {exc}."
    return (
        " Demo judges: the stand-ins (term overlap; answer key, billing only), on the set's Judges page."
        if len(missing) == len(wanted)
        else " Demo judge: the stand-in (answer key, billing only), on the set's Judges page."
    )


def _user(username: str, group: str, password: str) -> User:
    user, _ = User.objects.get_or_create(username=username, defaults={"email": f"{username}@demo.invalid"})
    if not user.check_password(password):
        user.set_password(password)
    if group == "admins":
        user.is_staff = user.is_superuser = True
    user.save()
    user.groups.add(Group.objects.get_or_create(name=group)[0])
    return user


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise CommandError(f"demo file missing: {path} ({exc.strerror})") from exc


def _check(report: ImportReport) -> None:
    if not report.ok:
        raise CommandError(report.render_text())


def _golden_file(path: Path, data: bytes) -> GoldenFile:
    from assay.golden.format import GoldenFormatError, parse

    try:
        return parse(data)
    except GoldenFormatError as exc:
        raise CommandError(f"{path}:\n{exc}") from exc


def _demo_rankings(demo: Path, golden_set: GoldenSet, *, rewrite: bool) -> dict[str, list[str]]:
    """Each active query's top 20 from the demo search engine, run in-process (no server needed)."""
    from demo import search_service

    docs = search_service.load_corpus(demo / "corpus.jsonl")
    index = search_service.build_index(docs)
    synonyms = search_service.load_synonyms(demo / "synonyms.json") if rewrite else None
    rankings: dict[str, list[str]] = {}
    for q in golden_set.queries.filter(status=Query.Status.ACTIVE).order_by("external_id"):
        result = search_service.search(
            index,
            q.text,
            filters=q.filters,
            size=services.POOL_DEPTH,
            locale=q.locale or None,
            rewrite=rewrite,
            synonyms=synonyms,
        )
        rankings[q.external_id] = [hit.id for hit in result.hits]
    return rankings


def _demo_disagreements(golden_set: GoldenSet) -> list[str]:
    """On the first load only (the caller checks): rater1 and rater2 grade two dual-labeled
    queries through the grading service, agreeing with the frozen labels (0 for the rest of the pool)
    except on one document each: a hard disagreement (two grades apart) on the first, a relevance flip
    (one grade apart, across the cutoff) on the second. Finishing the second assignment runs the dispute
    check, so both queries are in shadow and in the reviewers' queue on first start."""
    cutoff = golden_set.relevant_min_grade
    chosen: list[str] = []
    seconds = (
        Assignment.objects.filter(
            query__golden_set=golden_set,
            query__stratum__in=DISAGREEMENT_STRATA,
            query__tier=Query.Tier.CORE,
            kind=Assignment.Kind.SECOND,
        )
        .select_related("query")
        .order_by("query__external_id")
    )
    for second in seconds:
        query = second.query
        first = Assignment.objects.filter(query=query, kind=Assignment.Kind.PRIMARY).first()
        frozen = dict(FrozenLabel.objects.filter(query=query).values_list("document_id", "grade"))
        candidates = list(query.candidates.order_by("id"))
        if first is None or not frozen:
            continue
        hard = len(chosen) == 0
        target = _disagreement_target(frozen, cutoff, hard=hard)
        if target is None:
            continue
        doc_id, theirs = target
        grades = {
            c.pk: (
                frozen.get(c.document_id, 0),
                theirs if c.document_id == doc_id else frozen.get(c.document_id, 0),
            )
            for c in candidates
        }
        _both_raters_grade(
            first, second, candidates, grades, frozen, note="reads as only loosely related to the question"
        )
        chosen.append(query.external_id)
        if len(chosen) == 2:
            break
    return chosen


def _disagreement_target(frozen: dict[int, int], cutoff: int, *, hard: bool) -> tuple[int, int] | None:
    """(document, the second rater's grade): two grades away for a hard disagreement, else one grade away
    across the relevance cutoff; None when the query has no such document."""
    for document_id, grade in sorted(frozen.items(), key=lambda item: (-item[1], item[0])):
        if hard and grade >= 2:
            return document_id, grade - 2
        if not hard and grade in (cutoff, cutoff - 1):
            return document_id, cutoff - 1 if grade == cutoff else cutoff
    return None


def _both_raters_grade(
    first: Assignment,
    second: Assignment,
    candidates: list[Candidate],
    grades: dict[int, tuple[int, int]],
    frozen: dict[int, int],
    *,
    note: str,
) -> None:
    """The primary and the second rater grade every candidate through the grading service (`grades`: the
    candidate's pk to the first's and the second's grade; `note` on a grade other than the frozen label,
    0 where there is none), then mark the query done, which runs the dispute check."""
    for n, candidate in enumerate(candidates):
        for assignment, own in zip((first, second), grades[candidate.pk], strict=True):
            services.judgment_submit(
                assignment_id=assignment.pk,
                rater=assignment.rater,
                candidate_id=candidate.pk,
                grade=own,
                note=note if own != frozen.get(candidate.document_id, 0) else "",
                time_spent_ms=3000 + 700 * (n % 7),
            )
    for assignment in (first, second):
        services.assignment_done(assignment_id=assignment.pk, rater=assignment.rater)


def _demo_dual_sample(golden_set: GoldenSet, *, skip: list[str], reviewer: User) -> list[str]:
    """On the first load only (the caller checks): both raters grade most of the other dual-labeled
    queries, so that a machine judge has human items to be measured on (docs/judge-qualification.md):
    every billing one (a stratum needs ten queries for a verdict) and all but the last of each other
    stratum, which stay in the raters' queues. The grades are the frozen labels, 0 for the rest of the
    pool, except on the pool's tail (documents no system ranked within the set's k, which the golden file
    leaves unjudged): two of every three of those, in pool order, get a 1 from one rater (alternately the
    second and the first) and a 0 from the other. One grade apart below the relevance cutoff, outside the
    top: no dispute. The demo has no third rater, so the reviewer settles each as 0 (an adjudication; a
    core query's document without a final grade would block the freeze): no frozen label changes, nor
    the runs' figures (a 0 outside the top counts nowhere). Returns the queries graded, by id."""
    seconds = list(
        Assignment.objects.filter(query__golden_set=golden_set, kind=Assignment.Kind.SECOND)
        .exclude(query__external_id__in=skip)
        .exclude(status=Assignment.Status.DONE)
        .select_related("query")
        .order_by("query__stratum", "query__external_id")
    )
    last = {s.query.stratum: s.pk for s in seconds}
    cutoff, done = golden_set.relevant_min_grade, []
    tail, settle = 0, []
    for second in seconds:
        query = second.query
        if query.stratum != DUAL_ALL_STRATUM and last[query.stratum] == second.pk:
            continue
        first = Assignment.objects.filter(query=query, kind=Assignment.Kind.PRIMARY).first()
        if first is None:
            continue
        frozen = dict(FrozenLabel.objects.filter(query=query).values_list("document_id", "grade"))
        candidates = list(query.candidates.select_related("query", "document").order_by("id"))
        grades: dict[int, tuple[int, int]] = {}
        for candidate in candidates:
            grade = frozen.get(candidate.document_id, 0)
            grades[candidate.pk] = (grade, grade)
            outside = candidate.best_rank is not None and candidate.best_rank > golden_set.k
            if outside and candidate.document_id not in frozen and cutoff > 1:
                tail += 1
                if tail % 3:
                    grades[candidate.pk] = (0, 1) if tail % 2 else (1, 0)
                    settle.append(candidate)
        _both_raters_grade(
            first, second, candidates, grades, frozen, note="mentions the question only in passing"
        )
        done.append(query.external_id)
    for candidate in settle:
        services.adjudication_create(
            query=candidate.query,
            document=candidate.document,
            reviewer=reviewer,
            grade=0,
            rationale="off the question: it mentions the words only in passing",
        )
    return sorted(done)
