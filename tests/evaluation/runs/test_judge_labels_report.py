"""The run page and judge labels (docs/runs.md, "Judge labels in the report"): on a golden version holding
a judge's labels, the core metrics with and without them, against a hand computation."""

from __future__ import annotations

import math
import re
from dataclasses import replace
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.urls import reverse

from golden_io.models import GoldenVersion
from labeling.models import GoldenSet
from tests.support.evaluation import logged_in, section_text
from tests.support.golden_sets import version_store
from tests.support.runs import (
    golden_file,
)

pytestmark = pytest.mark.django_db


def judged_version(golden_set: GoldenSet) -> GoldenVersion:
    """golden_file()'s six queries (d1=3, d2=2, d4=1) with d2's label given by a judge, and the counts a
    freeze records for it."""
    golden = golden_file(version="2026-08-02")
    marked = replace(
        golden,
        queries=tuple(
            replace(
                q, judgments=tuple(replace(j, source="judge") if j.doc_id == "d2" else j for j in q.judgments)
            )
            for q in golden.queries
        ),
    )
    return version_store(
        golden_set,
        marked,
        counts={
            "queries": {"core": 6, "shadow": 0, "challenge": 0},
            "judge_labels": 6,
            "judges": [{"id": None, "name": "grader-7", "labels": 6}],
        },
    )


def _gain(grade: int, rank: int) -> float:
    return (2**grade - 1) / math.log2(rank + 1)


def test_the_run_page_shows_the_core_metrics_with_and_without_the_judge_labels(
    finished: Any, golden_set: GoldenSet, rita: User
) -> None:
    run = finished(golden_version=judged_version(golden_set))  # the stub answers d1, d2, d3 everywhere
    page = logged_in(rita).get(reverse("evaluation:run_detail", args=[run.pk]))
    section = section_text(page, "judge-effect")

    # Every query alike. With: d1 (3) at 1, d2 (2) at 2, d3 unjudged; ideal 3, 2, 1.
    with_ndcg = (_gain(3, 1) + _gain(2, 2)) / (_gain(3, 1) + _gain(2, 2) + _gain(1, 3))
    # Without: d2 unjudged too; ideal 3, 1.
    without_ndcg = _gain(3, 1) / (_gain(3, 1) + _gain(1, 2))
    assert run.report["ndcg"] == pytest.approx(with_ndcg)  # "with" is the run's own figure
    assert "6 of version 2026-08-02's labels came from a machine judge (grader-7: 6)" in section
    assert "over the 6 core queries" in section
    markup = page.content.decode()
    markup = markup[markup.index('id="judge-effect"') :]
    markup = markup[: markup.index("</section>")]
    rows = {
        key: re.findall(r'data-cell="(?:with|without|difference)">([^<]*)<', row)
        for key, row in re.findall(r'<tr data-metric="(\w+)">(.*?)</tr>', markup)
    }
    assert rows["ndcg"] == [f"{with_ndcg:.4f}", f"{without_ndcg:.4f}", f"{with_ndcg - without_ndcg:+.4f}"]
    assert rows["mrr"] == ["1.0000", "1.0000", "+0.0000"]  # d1 is relevant at rank 1 either way
    assert rows["precision_at_k"] == [f"{2 / 10:.4f}", f"{1 / 10:.4f}", f"{1 / 10:+.4f}"]
    assert rows["judged_at_k"] == [f"{2 / 3:.4f}", f"{1 / 3:.4f}", f"{1 / 3:+.4f}"]


def test_a_version_without_judge_labels_shows_no_comparison(finished: Any, rita: User) -> None:
    run = finished()
    page = logged_in(rita).get(reverse("evaluation:run_detail", args=[run.pk])).content.decode()
    assert 'id="judge-effect"' not in page
