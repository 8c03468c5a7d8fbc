"""The items a machine judge can be measured on, with the humans' side of each, and the judge's figures
on them (docs/judge-qualification.md, "The items"). No judge model is read: a judge's grades come in as
a mapping {(query pk, document pk): grade, or None for an error}.

The items are what humans have already labeled in a golden set's active queries:

- the **dual-labeled sample**: documents with two or more everyday grades (`ratings_list`: first,
  second and third raters, re-judgments as they count, gold checks);
- the documents graded in a **calibration round** (any round of the set, promoted or not);
- the **gold items**.

The human consensus of an item, first that applies: a gold item's known grade (`gold`); the
consolidated final label (`labels_consolidated`) when humans decided it together (`agreed`, `median`,
`adjudicated`); for a calibration item, the median of its round grades by the round's promotion rule
(`calibration median`, `assay.labels.calibration.unit_median`: an even count whose middle grades differ
is a tie). Otherwise it has no consensus yet (a disagreement waiting for a third rater or a reviewer, a
tie, or only one rater's label counts) and is listed apart with the reason, never measured.

The human-human pairs are on every labeled item, with a consensus or not (leaving out the items still
disputed would count only the ones humans agreed on, and overstate their agreement): within the
everyday grades of an item, and within each round's grades of it, every two raters once, the rater
whose name sorts first as `grade_a`.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from assay.golden.model import Scale
from assay.labels.calibration import unit_median
from assay.labels.judge_agreement import (
    HumanItem,
    HumanPair,
    JudgeAgreement,
    JudgeComparison,
    judge_agreement,
    judged_items,
    judges_compare,
)
from assay.memory import gc_paused
from labeling.models import GoldenSet, GoldItem, Judgment, Query
from labeling.selectors.labels import labels_consolidated
from labeling.selectors.review import _doc_ids, ratings_list

DUAL = "dual"
CALIBRATION = "calibration"
GOLD = "gold"
CALIBRATION_MEDIAN = "calibration median"
# Consolidation methods where humans decided the label together (not one rater, not carried over).
TOGETHER = ("agreed", "median", "adjudicated")

Key = tuple[str, str]  # (query external id, doc id)
PkKey = tuple[int, int]  # (query pk, document pk)


@dataclass(frozen=True, slots=True)
class NoConsensus:
    query_id: str
    doc_id: str
    reason: str


@dataclass(frozen=True, slots=True)
class JudgeItems:
    scale: Scale
    items: tuple[HumanItem, ...]  # by (query id, doc id)
    pairs: tuple[HumanPair, ...]  # on every labeled item, with a consensus or not
    sources: dict[Key, tuple[str, ...]]  # why each item is here: DUAL, CALIBRATION, GOLD
    methods: dict[
        Key, str
    ]  # how its consensus was reached: gold, agreed, median, adjudicated, calibration median
    pks: dict[Key, PkKey]  # the item's (query pk, document pk), as a judge's grades are keyed
    no_consensus: tuple[NoConsensus, ...]  # labeled items left out: no human consensus yet


@dataclass(frozen=True, slots=True)
class JudgeItemsFigures:
    items: JudgeItems
    figures: JudgeAgreement  # on the items the judge answered for
    n_not_graded: int  # items the judge has no answer for
    n_outside: int  # grades for (query, document)s that are not items: ignored


@gc_paused()
def judge_items_get(*, golden_set: GoldenSet) -> JudgeItems:
    """The set's items a judge can be measured on, each with its human consensus, the stratum and locale
    of its query, and the human-human pairs on them (the module's docstring has the rules)."""
    rubric = golden_set.rubric
    scale = Scale(rubric.scale_min, rubric.scale_max)
    queries = {
        pk: (external_id, stratum, locale)
        for pk, external_id, stratum, locale in Query.objects.filter(
            golden_set=golden_set, status=Query.Status.ACTIVE
        ).values_list("pk", "external_id", "stratum", "locale")
    }
    query_pk = {external_id: pk for pk, (external_id, _, _) in queries.items()}
    doc_ids = _doc_ids(golden_set)
    document_pk = {doc_id: pk for pk, doc_id in doc_ids.items()}

    everyday: dict[Key, dict[str, int]] = defaultdict(dict)
    for r in ratings_list(golden_set=golden_set):
        everyday[(r.query_id, r.doc_id)][r.rater] = r.grade
    rounds: dict[Key, dict[int, dict[str, int]]] = defaultdict(lambda: defaultdict(dict))
    for round_id, query_id, doc_id, rater, grade in (
        Judgment.objects.filter(
            assignment__calibration_round__golden_set=golden_set,
            assignment__query__status=Query.Status.ACTIVE,
        )
        .order_by()
        .values_list(
            "assignment__calibration_round_id",
            "assignment__query__external_id",
            "document__doc_id",
            "assignment__rater__username",
            "grade",
        )
    ):
        rounds[(query_id, doc_id)][round_id][rater] = grade
    gold: dict[Key, int] = {
        (q, d): g
        for q, d, g in GoldItem.objects.filter(
            query__golden_set=golden_set, query__status=Query.Status.ACTIVE
        ).values_list("query__external_id", "document__doc_id", "grade")
    }
    # The humans' consensus: a judge's own fill-ins must not measure it (judges=False).
    consolidated = labels_consolidated(golden_set=golden_set, judges=False)
    final = {
        (queries[label.query_id][0], doc_ids[label.document_id]): (label.grade, label.method)
        for label in consolidated.labels
    }
    unresolved = {(queries[u.query_id][0], doc_ids[u.document_id]): u.reason for u in consolidated.unresolved}

    sources: dict[Key, list[str]] = defaultdict(list)
    for key, graded in everyday.items():
        if len(graded) >= 2:
            sources[key].append(DUAL)
    for key in rounds:
        sources[key].append(CALIBRATION)
    for key in gold:
        sources[key].append(GOLD)

    items: list[HumanItem] = []
    pairs: list[HumanPair] = []
    methods: dict[Key, str] = {}
    no_consensus: list[NoConsensus] = []
    for key in sorted(sources):
        query_id, doc_id = key
        _, stratum, locale = queries[query_pk[query_id]]
        groups = [everyday.get(key, {}), *(rounds[key][r] for r in sorted(rounds.get(key, {})))]
        for group in groups:
            for a, b in itertools.combinations(sorted(group), 2):
                pairs.append(HumanPair(query_id, doc_id, stratum, locale, group[a], group[b]))
        consensus = _consensus(key, gold, final, rounds, unresolved)
        if isinstance(consensus, str):
            no_consensus.append(NoConsensus(query_id, doc_id, consensus))
            continue
        grade, methods[key] = consensus
        items.append(HumanItem(query_id, doc_id, stratum, locale, grade))
    return JudgeItems(
        scale=scale,
        items=tuple(items),
        pairs=tuple(pairs),
        sources={key: tuple(value) for key, value in sources.items() if key in methods},
        methods=methods,
        pks={(i.query_id, i.doc_id): (query_pk[i.query_id], document_pk[i.doc_id]) for i in items},
        no_consensus=tuple(no_consensus),
    )


def _consensus(
    key: Key,
    gold: Mapping[Key, int],
    final: Mapping[Key, tuple[int, str]],
    rounds: Mapping[Key, Mapping[int, Mapping[str, int]]],
    unresolved: Mapping[Key, str],
) -> tuple[int, str] | str:
    """The item's consensus grade and how it was reached, or why there is none."""
    if key in gold:
        return gold[key], GOLD
    label = final.get(key)
    if label is not None and label[1] in TOGETHER:
        return label
    if key in rounds:
        grades = sorted(g for by_rater in rounds[key].values() for g in by_rater.values())
        median = unit_median(grades)
        if median is not None:
            return median, CALIBRATION_MEDIAN
        return f"calibration grades {', '.join(map(str, grades))} tie: a reviewer decides"
    if key in unresolved:
        return unresolved[key]
    if label is not None:
        return f"the label is {label[1]}, not decided by raters together"
    return "no final label"


def _judged_keys(items: JudgeItems, grades: Mapping[PkKey, int | None]) -> tuple[dict[Key, int | None], int]:
    """The judge's grades keyed as the items are, and how many name no item."""
    by_pk = {pk: key for key, pk in items.pks.items()}
    keyed = {by_pk[pk]: grade for pk, grade in grades.items() if pk in by_pk}
    return keyed, len(grades) - len(keyed)


def judge_figures_get(
    *,
    golden_set: GoldenSet,
    grades: Mapping[PkKey, int | None],
    items: JudgeItems | None = None,
    **options: Any,
) -> JudgeItemsFigures:
    """A judge's figures on the set's items (`assay.labels.judge_agreement.judge_agreement`): `grades`
    maps (query pk, document pk) to the judge's grade, None where it answered with an error. Items the
    judge has no answer for are left out (`n_not_graded`), grades on anything else ignored
    (`n_outside`). `items` saves reading them again; `options` are `judge_agreement`'s."""
    items = items if items is not None else judge_items_get(golden_set=golden_set)
    keyed, outside = _judged_keys(items, grades)
    judged = judged_items(items.items, keyed)
    return JudgeItemsFigures(
        items=items,
        figures=judge_agreement(judged, items.pairs, scale=items.scale, **options),
        n_not_graded=len(items.items) - len(judged),
        n_outside=outside,
    )


def judges_compare_get(
    *,
    golden_set: GoldenSet,
    judges: Mapping[str, Mapping[PkKey, int | None]],
    items: JudgeItems | None = None,
    **options: Any,
) -> JudgeComparison:
    """Several judges side by side on the set's items every one of them graded
    (`assay.labels.judge_agreement.judges_compare`); grades keyed as for `judge_figures_get`."""
    items = items if items is not None else judge_items_get(golden_set=golden_set)
    keyed = {name: _judged_keys(items, grades)[0] for name, grades in judges.items()}
    return judges_compare(items.items, keyed, items.pairs, scale=items.scale, **options)
