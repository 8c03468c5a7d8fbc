"""`make run`'s demo story (after `demo_load`, with a Celery worker and the demo search service up):

1. the demo golden set's budgets from demo/budgets.json (unless the set has budgets already);
2. its first golden version, frozen through `golden_io.services` if it has none;
3. the target `demo-search` (http_json, the demo search service, the rewriter as a stage toggle);
4. a baseline run with the rewriter off, promoted with the rationale "demo baseline";
5. a run with `rewrite=true`: the synonym pack erases refunds, the billing stratum trips its budgets,
   the verdict is fail and `q-0471` is among the top losers. Prints the report's URL;
6. a side-by-side study of the two runs on the billing stratum, answered by rater1 and rater2 from
   demo/sxs_answers.json (evaluation/management/demo_study.py), with its verdict and URL.

Idempotent: what exists is reused (the baseline, a finished rewrite run gated against it), so running
it on every start adds no runs after the first time.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.urls import reverse

from evaluation.management.demo_study import demo_study
from evaluation.runs import selectors, services
from evaluation.runs.models import EvaluationRun, SearchTarget
from evaluation.studies.models import SxsStudy
from golden_io.models import GoldenVersion
from labeling.models import GoldenSet

DEMO_DIR = Path(settings.BASE_DIR) / "demo"
SET_SLUG = "help-center"
TARGET_NAME = "demo-search"
REVIEWER = "reviewer"
BASELINE_RATIONALE = "demo baseline"
REWRITE = {"rewrite": True}
STORY_QUERY = "q-0471"


class Command(BaseCommand):
    help = "Run the demo story: a baseline with the rewriter off, then a run with it on (verdict fail)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument(
            "--search-url", default=settings.ASSAY_DEMO_SEARCH_URL, help="the demo search service's /search"
        )
        parser.add_argument(
            "--site-url", default=settings.SITE_URL, help="where the web app is, for the links"
        )
        parser.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for each run")

    def handle(self, *args: Any, search_url: str, site_url: str, timeout: float, **options: Any) -> None:
        self.site_url = site_url.rstrip("/")
        self.timeout = timeout
        golden_set = GoldenSet.objects.filter(slug=SET_SLUG).first()
        if golden_set is None:
            raise CommandError(f"no golden set {SET_SLUG!r}: run `manage.py demo_load` first")
        reviewer = get_user_model().objects.filter(username=REVIEWER).first()
        if reviewer is None:
            raise CommandError(f"no user {REVIEWER!r}: run `manage.py demo_load` first")
        self._budgets(golden_set, reviewer)
        version = self._version(golden_set, reviewer)
        target = self._target(golden_set, search_url)
        baseline = selectors.baseline_get(golden_set=golden_set, target=target)
        if baseline is None:
            run = self._run(version, target, reviewer, {}, "baseline (rewriter off)")
            if run.status != EvaluationRun.Status.SUCCEEDED or run.errors:
                raise CommandError(
                    f"the baseline run {run.pk} {run.status} with {run.errors} errored queries "
                    f"({run.error_message or 'see its page'}): is the demo search service up at {search_url}?"
                )
            baseline = services.baseline_promote(run=run, by=reviewer, rationale=BASELINE_RATIONALE)
            self.stdout.write(f"Promoted run {run.pk} to baseline ({BASELINE_RATIONALE!r}).")
        else:
            self.stdout.write(f"Baseline in force: run {baseline.run_id}.")
        current = self._current(version, target, reviewer, baseline.run_id)
        self._summary(current)
        if current.status == EvaluationRun.Status.SUCCEEDED:
            self._study(baseline.run, current, reviewer)

    # --- steps

    def _budgets(self, golden_set: GoldenSet, by: Any) -> None:
        if hasattr(golden_set, "budgets"):
            return
        data = json.loads((DEMO_DIR / "budgets.json").read_text())
        services.budgets_set(golden_set=golden_set, data=data, by=by)
        self.stdout.write("Budgets from demo/budgets.json (the default table, per stratum too).")

    def _version(self, golden_set: GoldenSet, by: Any) -> GoldenVersion:
        from golden_io import selectors as golden_selectors
        from golden_io.services import FreezeError, golden_version_freeze

        version = golden_selectors.version_latest(golden_set=golden_set)
        if version is not None:
            return version
        try:
            version = golden_version_freeze(
                golden_set=golden_set,
                by=by,
                name=golden_set.frozen_version or None,
                notes="The demo's first version (manage.py demo_runs).",
            )
        except FreezeError as exc:
            raise CommandError("cannot freeze the demo golden set:\n" + "\n".join(exc.problems)) from exc
        self.stdout.write(f"Froze {golden_set.slug}@{version.name}.")
        return version

    def _target(self, golden_set: GoldenSet, search_url: str) -> SearchTarget:
        # Names are unique per golden set: the demo set's own demo-search (another team's is left alone).
        target = SearchTarget.objects.filter(name=TARGET_NAME, golden_sets=golden_set).first()
        if target is None:
            target = services.target_create(
                name=TARGET_NAME,
                url=search_url,
                golden_sets=[golden_set],
                description="The demo search service (SQLite FTS5, BM25); its synonym rewriter is a stage.",
                stages={"rewrite": False},
                generation_header="X-Index-Generation",
                timeout=10.0,
                concurrency=8,
                retries=2,
            )
            self.stdout.write(f"Created target {TARGET_NAME} -> {search_url}.")
        elif target.url != search_url:
            target = services.target_update(target=target, url=search_url)
            self.stdout.write(f"Target {TARGET_NAME} now calls {search_url}.")
        return target

    def _current(
        self, version: GoldenVersion, target: SearchTarget, by: Any, baseline_run: int
    ) -> EvaluationRun:
        """The rewrite run gated against this baseline: an active or finished one if there is one."""
        existing = (
            EvaluationRun.objects.filter(golden_version=version, target=target, params=REWRITE)
            .exclude(status__in=(EvaluationRun.Status.FAILED, EvaluationRun.Status.CANCELLED))
            .order_by("-created", "-id")
            .first()
        )
        if existing is not None and (
            existing.is_active or (existing.gate or {}).get("baseline_run") == baseline_run
        ):
            self.stdout.write(f"Rewrite run {existing.pk} exists already.")
            return self._wait(existing, "rewriter on") if existing.is_active else existing
        return self._run(version, target, by, REWRITE, "rewriter on")

    def _run(
        self, version: GoldenVersion, target: SearchTarget, by: Any, params: dict[str, Any], what: str
    ) -> EvaluationRun:
        run = services.run_create(
            golden_version=version,
            target=target,
            triggered_by=by,
            params=params,
            trigger=EvaluationRun.Trigger.DEMO,
        )
        self.stdout.write(f"Run {run.pk} queued: {what}, {self._url(run)}")
        return self._wait(run, what)

    def _wait(self, run: EvaluationRun, what: str) -> EvaluationRun:
        started = time.monotonic()
        shown, hinted = "", False
        while True:
            run.refresh_from_db()
            # A line when the status changes (the run page has the live progress), the counts at the end.
            counts = f" {run.done}/{run.total}" if run.total and not run.is_active else ""
            line = f"  run {run.pk} ({what}): {run.status}{counts}"
            if line != shown:
                self.stdout.write(line)
                shown = line
            if not run.is_active:
                return run
            waited = time.monotonic() - started
            if run.status == EvaluationRun.Status.QUEUED and waited > 30 and not hinted:
                self.stdout.write("  still queued after 30 s: is the Celery worker running?")
                hinted = True
            if waited > self.timeout:
                raise CommandError(
                    f"run {run.pk} is still {run.status} after {self.timeout:g} s: {self._url(run)}"
                )
            time.sleep(0.5)

    def _study(self, baseline_run: EvaluationRun, current: EvaluationRun, by: Any) -> None:
        """6. The side-by-side study of the two runs on billing, answered by rater1 and rater2."""
        study, made = demo_study(baseline_run=baseline_run, current=current, by=by)
        analysis = study.analysis or {}
        verdict = SxsStudy.Verdict(study.verdict).label if study.verdict else "no answers yet"
        self.stdout.write(
            f"{'Side-by-side study' if made else 'Side-by-side study (exists already)'} {study.pk}, billing: "
            f"{analysis.get('answered', 0)} queries answered by rater1 and rater2, verdict {verdict}: "
            f"{self.site_url}{reverse('evaluation:study_detail', args=[study.pk])}"
        )

    def _url(self, run: EvaluationRun) -> str:
        return self.site_url + reverse("evaluation:run_detail", args=[run.pk])

    def _summary(self, run: EvaluationRun) -> None:
        if run.status != EvaluationRun.Status.SUCCEEDED:
            raise CommandError(
                f"the rewrite run {run.pk} {run.status}: {run.error_message or self._url(run)}"
            )
        gate = run.gate or {}
        style = self.style.ERROR if run.verdict == "fail" else self.style.SUCCESS
        self.stdout.write(style(f"\nRewriter on: verdict {run.verdict.upper()}"))
        for finding in gate.get("failures", []):
            self.stdout.write(f"  FAIL {finding['message']}")
        losers = [loser["id"] for loser in gate.get("top_losers", [])]
        if losers:
            marked = ", ".join(
                f"{q} (the refund query of demo/README.md)" if q == STORY_QUERY else q for q in losers
            )
            self.stdout.write(f"  top losers: {marked}")
        self.stdout.write(self.style.SUCCESS(f"The report: {self._url(run)}"))
        self.stdout.write(f"All runs: {self.site_url}{reverse('evaluation:run_list')}")
