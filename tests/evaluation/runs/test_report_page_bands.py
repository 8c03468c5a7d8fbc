"""The run page's slices by traffic band and by failure mode, beside the strata and locales (one table
code for all): a run on a set whose queries carry a vertical, a band and sometimes a failure mode."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
from django.contrib.auth.models import User

from evaluation.runs.services import baseline_promote, budgets_set
from labeling.models import GoldenSet
from tests.support.evaluation import (
    logged_in,
    section_text,
)
from tests.support.runs import RunFactory, golden_file, make_version
from tests.support.stub_server import StubServer, hits_reply

pytestmark = pytest.mark.django_db

BANDS = {"q-1": "head", "q-2": "tail", "q-3": "torso", "q-4": "tail"}  # q-5, q-6: no band
FAILURE_MODES = {"q-2": "typo", "q-4": "zero-results"}


def test_the_report_slices_by_band_and_failure_mode_and_marks_the_tripped_band(
    finished: RunFactory, stub: StubServer, golden_set: GoldenSet, rita: User
) -> None:
    plain = golden_file()
    version = make_version(
        golden_set,
        replace(
            plain,
            queries=tuple(
                replace(q, traffic_band=BANDS.get(q.id), failure_mode=FAILURE_MODES.get(q.id))
                for q in plain.queries
            ),
        ),
        name="2026-08-02",
    )
    budgets_set(golden_set=golden_set, data={"traffic_bands": {"tail": {"ndcg": {"fail": 0.01}}}}, by=rita)
    baseline_promote(run=finished(golden_version=version), by=rita, rationale="the first good run")
    for text in ("query 2", "query 4"):  # the tail queries lose their best documents
        stub.on(text, hits_reply(["d9", "d8", "d7"]))

    current = finished(golden_version=version)
    page = logged_in(rita).get(f"/runs/{current.pk}/")

    assert page.status_code == 200
    html = page.content.decode()
    tables = {
        kind: re.findall(r'<tr data-slice="([^"]+)"( class="tripped")?>', _table(html, kind))
        for kind in ("stratum", "traffic_band", "failure_mode", "locale")
    }
    assert tables["stratum"] == [("billing", ""), ("docs", "")]
    assert tables["traffic_band"] == [("head", ""), ("tail", ' class="tripped"'), ("torso", "")]
    assert tables["failure_mode"] == [("typo", ""), ("zero-results", "")]
    assert tables["locale"] == [("en-US", "")]
    slices = section_text(page, "slices")
    assert slices.index("Stratum") < slices.index("Traffic band") < slices.index("Failure mode")
    assert slices.index("Failure mode") < slices.index("Locale")


def test_a_run_whose_queries_have_no_band_says_so_in_the_band_table(finished: RunFactory, rita: User) -> None:
    run = finished()  # the default version: verticals, no bands

    slices = section_text(logged_in(rita).get(f"/runs/{run.pk}/"), "slices")

    assert "No core query has a traffic band." in slices
    assert "No core query has a failure mode." in slices
    assert "No core query has a stratum." not in slices


def _table(html: str, kind: str) -> str:
    start = html.index(f'id="slice-{kind}"')
    return html[start : html.index("</table>", start)]
