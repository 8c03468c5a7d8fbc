"""Side-by-side (SxS) studies: two finished runs of one golden version shown to raters as two result lists
per query, blind, and the raters' preferences (docs/sxs.md).

Single-row behaviour only, as every model of the app (imported by the registry, `evaluation/models.py`,
so Django finds them in the evaluation app): the writes are `evaluation.studies.services`, the pure
analysis `assay.sxs`.

Names: run A is the *baseline* and run B the *candidate* (the reviewer's choice; any two runs will do).
What a rater sees is *left* and *right*, drawn per rater and query (`StudyTask.candidate_left`); answers
are stored as shown and undone (to baseline and candidate) only where reviewers read them.
"""

from __future__ import annotations

import re
from typing import Any

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q
from django.utils import timezone

__all__ = [
    "SHOWN_DEFAULT",
    "SHOWN_MAX",
    "PendingStudy",
    "StudyEvent",
    "StudyInstructions",
    "StudyQuery",
    "StudySetting",
    "StudyTask",
    "SxsStudy",
]

SHOWN_DEFAULT = 5  # results per side, as the issue asks; at most SHOWN_MAX
SHOWN_MAX = 10
TOKEN_LENGTH = 16  # hex digits of a task's token: 64 random bits
TOKEN_SHAPE = re.compile(rf"[0-9a-f]{{{TOKEN_LENGTH}}}")  # anything else names no task (and is not looked up)


class StudyInstructions(models.Model):
    """What "better" means for raters, with examples. Versioned like the rubric: a change is a new row
    with the next version, never an edit in place, so every study names the words its raters read."""

    name = models.SlugField(max_length=100, default="default")
    version = models.PositiveIntegerField(default=1)
    text = models.TextField(help_text='what "better" means')
    examples = models.TextField(blank=True, help_text="examples, one a line")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["name", "version"], name="study_instructions_name_version_unique"
            ),
        ]
        ordering = ["name", "-version"]

    def __str__(self) -> str:
        return f"{self.name}@{self.version}"

    @property
    def example_lines(self) -> list[str]:
        return [line.strip() for line in self.examples.splitlines() if line.strip()]


class SxsStudy(models.Model):
    """One study: run A (baseline) against run B (candidate) on one golden version, its queries, raters,
    instructions and verdict rule (`assay.sxs.SxsRule.to_dict()`), and its last analysis."""

    class Selection(models.TextChoices):
        ALL = "all", "every query"
        STRATUM = "stratum", "one stratum"
        MOVERS = "movers", "the top losers and gainers by nDCG"
        SAMPLE = "sample", "a random sample"

    class Verdict(models.TextChoices):
        """The study's outcome (docs/sxs.md, "Verdict"); "" before its first analysis."""

        NONE = "", "no answers yet"
        PASS = "pass", "pass"
        FAIL = "fail", "fail"
        INCONCLUSIVE = "inconclusive", "inconclusive"

    name = models.CharField(max_length=200)
    # What raters read (`assay.sxs.names`): the reviewer's choice, fixed at creation; never a position in a
    # list, a run, a system or an internal label.
    rater_name = models.CharField(max_length=200, blank=True)
    golden_set = models.ForeignKey("labeling.GoldenSet", on_delete=models.CASCADE, related_name="sxs_studies")
    golden_version = models.ForeignKey(
        "golden_io.GoldenVersion", on_delete=models.PROTECT, related_name="sxs_studies"
    )
    run_a = models.ForeignKey(
        "evaluation.EvaluationRun", on_delete=models.PROTECT, related_name="studies_as_a"
    )
    run_b = models.ForeignKey(
        "evaluation.EvaluationRun", on_delete=models.PROTECT, related_name="studies_as_b"
    )
    selection = models.CharField(max_length=10, choices=Selection.choices, default=Selection.ALL)
    stratum = models.CharField(max_length=100, blank=True)
    size = models.PositiveIntegerField(null=True, blank=True, help_text="queries chosen (empty: all chosen)")
    seed = models.BigIntegerField(default=0)
    shown = models.PositiveSmallIntegerField(
        default=SHOWN_DEFAULT, validators=[MinValueValidator(1), MaxValueValidator(SHOWN_MAX)]
    )
    answers_per_query = models.PositiveSmallIntegerField(default=2, validators=[MinValueValidator(1)])
    raters = models.ManyToManyField(settings.AUTH_USER_MODEL, related_name="sxs_studies")
    instructions = models.ForeignKey(StudyInstructions, on_delete=models.PROTECT, related_name="studies")
    rule = models.JSONField(default=dict, help_text="the verdict rule, assay.sxs.SxsRule.to_dict()")
    # The queries chosen but not asked because a run errored on them: [{"query_id", "why"}].
    left_out = models.JSONField(default=list, blank=True)
    # The last analysis (assay.sxs.SxsAnalysis.to_dict()) and the answers it was made from (their count
    # and newest change), so a page reuses it until an answer changes.
    analysis = models.JSONField(null=True, blank=True)
    analysed_key = models.CharField(max_length=100, blank=True)
    verdict = models.CharField(max_length=12, choices=Verdict.choices, default=Verdict.NONE, blank=True)
    # When the study closed (null: open). Closing reads the verdict from the answers as they stand and
    # freezes it, with this time: no answer or undo is taken after, and the analysis is not made again
    # until a reviewer reopens the study (docs/sxs.md, "Closing a study"; who and why: `events`).
    closed_at = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.CheckConstraint(condition=~Q(run_a=models.F("run_b")), name="sxs_study_two_runs"),
            models.CheckConstraint(
                condition=Q(shown__gte=1) & Q(shown__lte=SHOWN_MAX), name="sxs_study_shown_range"
            ),
        ]
        ordering = ["-created", "-id"]

    def __str__(self) -> str:
        return f"study {self.pk}: run {self.run_a_id} against run {self.run_b_id}"

    @property
    def selection_text(self) -> str:
        what: str = self.get_selection_display()
        if self.selection == self.Selection.STRATUM:
            what = f"stratum {self.stratum}"
        return what + (f", {self.size} chosen" if self.size else "")

    @property
    def closed(self) -> bool:
        return self.closed_at is not None


class StudyEvent(models.Model):
    """A study closed or reopened: who, when, why, and the verdict as it stood then (at a close, the
    verdict frozen). A close by a baseline's promotion names the baseline; its `by` is who promoted."""

    class Kind(models.TextChoices):
        CLOSED = "closed", "closed"
        REOPENED = "reopened", "reopened"

    study = models.ForeignKey(SxsStudy, on_delete=models.CASCADE, related_name="events")
    kind = models.CharField(max_length=10, choices=Kind.choices)
    by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    at = models.DateTimeField(default=timezone.now)
    why = models.TextField(blank=True)
    verdict = models.CharField(max_length=12, blank=True)
    baseline = models.ForeignKey(
        "evaluation.Baseline", on_delete=models.SET_NULL, null=True, blank=True, related_name="closed_studies"
    )

    class Meta:
        ordering = ["-at", "-id"]

    def __str__(self) -> str:
        return f"study {self.study_id} {self.kind} at {self.at:%Y-%m-%d %H:%M}"


class StudyQuery(models.Model):
    """One chosen query of a study, with what the raters see of it copied at creation (the query, and each
    run's top `shown` results as cards), so every rater sees the same thing and the page reads one row."""

    study = models.ForeignKey(SxsStudy, on_delete=models.CASCADE, related_name="queries")
    query_id = models.CharField(max_length=200, help_text="the golden query's external id")
    text = models.CharField(max_length=1000)
    locale = models.CharField(max_length=35, blank=True)
    filters = models.JSONField(default=dict, blank=True)
    stratum = models.CharField(max_length=100, blank=True)
    critical = models.BooleanField(default=False)
    ndcg_change = models.FloatField(null=True, blank=True, help_text="run B's nDCG minus run A's")
    # The two lists are the same in the shown top: not asked, counted apart.
    identical = models.BooleanField(default=False)
    # [{"id", "title", "snippet", "host"}] per run, in the run's order.
    cards_a = models.JSONField(default=list, blank=True)
    cards_b = models.JSONField(default=list, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["study", "query_id"], name="study_query_unique"),
        ]
        ordering = ["study", "id"]

    def __str__(self) -> str:
        return f"{self.study_id}/{self.query_id}"


class StudyTask(models.Model):
    """One rater's answer to one study query: which run was shown left (drawn at creation and recorded),
    and the answer as shown (`preference` from -3, left much better, to +3, right much better).

    The rater's page names a task by `token`, 64 random bits stored here: not the row's id (sequential,
    so it would tell the order tasks were made in, and that order follows the query selection), and not
    derived from anything a rater could compute. `revision` counts submits and undos: a page submits
    with the revision it was drawn at, so a second tab or a page left open after a submit is refused."""

    study = models.ForeignKey(SxsStudy, on_delete=models.CASCADE, related_name="tasks")
    item = models.ForeignKey(StudyQuery, on_delete=models.CASCADE, related_name="tasks")
    rater = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="sxs_tasks")
    token = models.CharField(max_length=TOKEN_LENGTH, unique=True)
    candidate_left = models.BooleanField(help_text="run B (the candidate) was shown on the left")
    revision = models.PositiveIntegerField(default=0)
    preference = models.SmallIntegerField(
        null=True, blank=True, validators=[MinValueValidator(-3), MaxValueValidator(3)]
    )
    reasons = models.JSONField(default=list, blank=True)
    junk_left = models.BooleanField(default=False)
    junk_right = models.BooleanField(default=False)
    note = models.TextField(blank=True)
    answered_at = models.DateTimeField(null=True, blank=True)
    time_spent_ms = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["item", "rater"], name="study_task_item_rater_unique"),
            models.CheckConstraint(
                condition=Q(preference__isnull=True) | (Q(preference__gte=-3) & Q(preference__lte=3)),
                name="study_task_preference_range",
            ),
        ]
        indexes = [models.Index(fields=["rater", "answered_at"], name="study_task_rater_open")]
        ordering = ["token"]

    def __str__(self) -> str:
        return f"task {self.token} of study {self.study_id}"

    @property
    def answered(self) -> bool:
        return self.answered_at is not None

    def undone(self) -> dict[str, Any]:
        """The answer with the sides undone: in the candidate's favour, junk per run (for reviewers)."""
        assert self.preference is not None
        return sides_undone(self.candidate_left, self.preference, self.junk_left, self.junk_right)


def sides_undone(candidate_left: bool, preference: int, junk_left: bool, junk_right: bool) -> dict[str, Any]:
    """An answer as shown (preference from -3, left much better, to +3; junk per side) with the sides
    undone: the preference in the candidate's favour, junk per run."""
    return {
        "preference": -preference if candidate_left else preference,
        "junk_baseline": junk_right if candidate_left else junk_left,
        "junk_candidate": junk_left if candidate_left else junk_right,
    }


class StudySetting(models.Model):
    """A golden set's side-by-side settings: whether a run needs a passed study (as run B) before it may
    become the baseline. Off by default: a set without this row requires nothing."""

    golden_set = models.OneToOneField(
        "labeling.GoldenSet", on_delete=models.CASCADE, related_name="study_setting"
    )
    require_passed_study = models.BooleanField(default=False)
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    updated = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"study setting of {self.golden_set_id}"


class PendingStudy(models.Model):
    """A study asked for on two targets rather than two finished runs: the two runs started for it, the
    study's options as asked (`evaluation.studies.services.pending`), and what became of it. It turns into
    an `SxsStudy` (made exactly as from two finished runs) once both runs have finished, or fails in words
    when either run failed or was cancelled, or the finished runs give nothing to ask. Raters get no task
    until then: the tasks are the study's."""

    class Status(models.TextChoices):
        WAITING = "waiting", "waiting for runs"
        CREATED = "created", "created"
        FAILED = "failed", "failed"

    name = models.CharField(max_length=200, blank=True)
    golden_set = models.ForeignKey(
        "labeling.GoldenSet", on_delete=models.CASCADE, related_name="pending_studies"
    )
    golden_version = models.ForeignKey("golden_io.GoldenVersion", on_delete=models.PROTECT, related_name="+")
    run_a = models.ForeignKey("evaluation.EvaluationRun", on_delete=models.PROTECT, related_name="+")
    run_b = models.ForeignKey("evaluation.EvaluationRun", on_delete=models.PROTECT, related_name="+")
    # The study's options as asked (the names of `StudySpec`), the raters by id.
    options = models.JSONField(default=dict)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.WAITING)
    reason = models.TextField(blank=True, help_text="why it failed, in words")
    study = models.OneToOneField(
        SxsStudy, on_delete=models.SET_NULL, null=True, blank=True, related_name="pending"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created = models.DateTimeField(auto_now_add=True)
    resolved = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.CheckConstraint(condition=~Q(run_a=models.F("run_b")), name="pending_study_two_runs"),
        ]
        ordering = ["-created", "-id"]

    def __str__(self) -> str:
        return f"pending study {self.pk}: run {self.run_a_id} against run {self.run_b_id}"
