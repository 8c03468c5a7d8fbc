"""Why a freeze would refuse a set's working labels, read off the golden file they make (pure): the file
checked as `assay.golden.format` reads one, every problem naming its query. golden_io's freeze refuses a
set for these (`golden_io.selectors.working_golden_get`); its golden-file import and undo refuse a change
that would add one, checked on the file the set would make afterwards, built in memory before anything
is written (docs/labeling.md, "Integrity holds across imports")."""

from __future__ import annotations

import re

from assay.golden.fields import GoldenFormatError, natural_key
from assay.golden.format import from_dict, to_dict
from assay.golden.model import GoldenFile

_PLACE = re.compile(r"queries\[(\d+)\]")


def checked(raw: GoldenFile) -> tuple[GoldenFile | None, list[str]]:
    """`raw` (its queries in any order) validated and canonical, as a dump writes it; or None and every
    problem, each naming its query (a place `queries[i]` alone names none a reviewer can act on)."""
    try:
        return from_dict(to_dict(raw)), []
    except GoldenFormatError as exc:
        ordered = sorted(raw.queries, key=lambda q: natural_key(q.id))  # to_dict's order: the places' i
        problems = []
        for problem in exc.problems:
            place = _PLACE.match(problem.where)
            if place and problem.query_id is None and int(place.group(1)) < len(ordered):
                problems.append(f"query {ordered[int(place.group(1))].id}: {problem}")
            else:
                problems.append(str(problem))
        return None, problems


def freeze_problems(raw: GoldenFile) -> list[str]:
    """Why a freeze would refuse `raw`, with the places `queries[i]` dropped: they move when a query is
    added before them, so the same reason reads the same before and after a change."""
    return [re.sub(r"queries\[\d+\]\.?", "", problem) for problem in checked(raw)[1]]


def problems_added(before: GoldenFile, after: GoldenFile, *, empty_allowed: bool = False) -> list[str]:
    """The reasons a freeze would refuse `after` that it would not refuse `before` for: the ones a
    change from `before` to `after` brings (those the set had already are not the change's). With
    `empty_allowed`, a change that leaves no query at all brings none (an undo that takes a set back to
    before its first import)."""
    if empty_allowed and not after.queries:
        return []
    known = set(freeze_problems(before))
    return [problem for problem in freeze_problems(after) if problem not in known]
