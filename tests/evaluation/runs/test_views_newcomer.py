"""What a newcomer reads on the run pages holds: an empty top-losers list says why (a refused comparison
measured nothing), the runs list marks the baseline, the nightly form does not start enabled, and the
docs the pages cite exist."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User

from evaluation.runs.services import baseline_promote
from tests.support.evaluation import (
    Scene,
    logged_in,
    page_text,
    section_text,
)
from tests.support.processes import REPO
from tests.support.runs import (
    RunFactory,
    golden_file,
    make_version,
)

pytestmark = pytest.mark.django_db


def test_a_refused_comparison_does_not_say_no_query_lost(
    scene: Scene, finished: RunFactory, rita: User
) -> None:
    other = make_version(scene.golden_set, golden_file(version="2026-09-01"), name="2026-09-01")
    refused = finished(golden_version=other)
    assert refused.gate is not None and refused.gate["failures"][0]["kind"] == "refusal"
    text = section_text(logged_in(rita).get(f"/runs/{refused.pk}/"), "top-losers")
    assert "No query" not in text
    assert f"the gate refused to compare this run with the baseline (run {scene.baseline.pk}" in text


def test_an_empty_list_after_a_comparison_says_nothing_fell(finished: RunFactory, rita: User) -> None:
    baseline_promote(run=finished(), by=rita, rationale="the first good run")
    again = finished()  # the baseline's configuration, the same answers
    assert again.gate is not None and again.gate["top_losers"] == [] and again.gate["failures"] == []
    text = section_text(logged_in(rita).get(f"/runs/{again.pk}/"), "top-losers")
    assert "No query's nDCG fell against the baseline" in text


def test_the_runs_list_marks_the_baseline(scene: Scene, rita: User) -> None:
    markup = logged_in(rita).get("/runs/").content.decode()
    baseline_row = re.search(rf'<tr id="run-{scene.baseline.pk}".*?</tr>', markup, re.S)
    current_row = re.search(rf'<tr id="run-{scene.current.pk}".*?</tr>', markup, re.S)
    assert baseline_row is not None and current_row is not None
    assert 'class="badge baseline"' in baseline_row.group(0) and "baseline" not in current_row.group(0)


def test_the_nightly_form_starts_off_for_a_new_schedule(scene: Scene, rita: User) -> None:
    markup = logged_in(rita).get(f"/targets/{scene.target.pk}/").content.decode()
    enabled = re.search(r'<input type="checkbox" name="enabled"[^>]*>', markup)
    assert enabled is not None and "checked" not in enabled.group(0)


def test_the_target_page_names_the_http_json_adapter_for_what_it_is(scene: Scene, rita: User) -> None:
    page = page_text(logged_in(rita).get(f"/targets/{scene.target.pk}/"))
    assert "Adapter http_json: the default HTTP JSON contract (docs/cli.md)" in page


@pytest.mark.parametrize("folder", ["templates", "evaluation", "labeling", "golden_io", "config"])
def test_the_docs_the_pages_cite_exist_and_are_named_for_what_they_are(folder: str) -> None:
    for path in (REPO / folder).rglob("*"):
        if path.suffix not in (".html", ".py") or "migrations" in path.parts:
            continue
        text = path.read_text()
        for cited in re.findall(r"docs/[\w.-]+\.md", text):
            assert (REPO / cited).is_file(), (path, cited)
        assert "METRICS.md" not in text and "the seed" not in text.lower(), path
        assert "seed's" not in text.lower(), path
