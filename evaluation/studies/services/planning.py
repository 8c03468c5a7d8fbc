"""How wide a study's interval will likely be, from the set's earlier studies (docs/sxs.md, "How wide the
interval will likely be"): the spread of their query means pooled, else the stated default, and the
warning when the size cannot separate the rule's bound from 0. The arithmetic is `assay.sxs.expect`."""

from __future__ import annotations

from assay.sxs import Expectation, SxsRule, expect, pooled_spread
from evaluation.studies.models import SxsStudy
from labeling.models import GoldenSet


def study_expectation(
    *, golden_set: GoldenSet, queries: int, rule: SxsRule, exclude: int | None = None
) -> Expectation:
    """What a study of `queries` queries of `golden_set` will likely show under `rule`, the spread pooled
    over the set's studies with a stored analysis (but `exclude`, the study being made)."""
    earlier = SxsStudy.objects.filter(golden_set=golden_set, analysis__isnull=False)
    if exclude is not None:
        earlier = earlier.exclude(pk=exclude)
    spread, studies = pooled_spread(
        earlier.values_list("analysis__overall__queries", "analysis__overall__spread")
    )
    return expect(queries, rule, spread, studies)


def study_created_expectation(study: SxsStudy) -> Expectation:
    """The expectation of a study just made, for the queries it asks (the identical ones are not)."""
    asked = study.queries.filter(identical=False).count()
    return study_expectation(
        golden_set=study.golden_set, queries=asked, rule=SxsRule.from_dict(study.rule), exclude=study.pk
    )
