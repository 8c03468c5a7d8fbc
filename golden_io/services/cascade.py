"""Deleting rows with everything Django's delete takes with them, in a few statements that whatever their
number of rows (docs/labeling.md, "Imports"): the undo of an import deletes the queries it created and
the pool candidates it added, tens of thousands of them, inside its transaction.

`QuerySet.delete()` follows each model's `on_delete` in Python: it loads every row to delete (and every
candidate of every query), then deletes them a hundred at a time. `cascade_delete` follows the same
relations, read from the models' metadata (`Model._meta`, as Django's `Collector` reads them: every
model of every app, whichever app defines it), as statements over subqueries: the rows that cascade
(`CASCADE`) deleted before the rows they refer to, a nullable reference (`SET_NULL`) set to null. What
Django does in ways only its collector does right is left to it: a model with delete signals, a
relation whose rows would refuse the delete (`PROTECT`, `RESTRICT`) when such rows exist, `SET(...)`
or `SET_DEFAULT`, a generic relation, a parent model, a cycle of cascades. Part of
`golden_io.services`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from django.db import connection
from django.db.models import CASCADE, DO_NOTHING, PROTECT, RESTRICT, SET_NULL, Model, QuerySet, signals
from django.db.models.deletion import get_candidate_relations_to_delete

from golden_io.services.bulk import id_list

# A step of a cascade: a statement, run in order, returning the rows it deleted (0 for an update).
Step = Callable[[], int]


def cascade_delete(model: type[Model], pks: Sequence[int]) -> dict[str, int]:
    """Delete the rows of `model` with these pks and every row their deletion takes with it, as
    `Model.objects.filter(pk__in=pks).delete()` would: the rows deleted per model (its label), those with
    none left out."""
    if not pks:
        return {}
    rows = model._base_manager.filter(pk__in=id_list(pks))
    refusals: list[QuerySet[Model]] = []
    steps = _steps(rows, (model,), refusals)
    if steps is None or any(refused.exists() for refused in refusals):
        _, deleted = model._base_manager.filter(pk__in=id_list(pks)).delete()
        return {label: n for label, n in deleted.items() if n}
    counts: dict[str, int] = {}
    for label, step in steps:
        n = step()
        if n:
            counts[label] = counts.get(label, 0) + n
    return counts


def _listened(model: type[Model]) -> bool:
    return signals.pre_delete.has_listeners(model) or signals.post_delete.has_listeners(model)


def _steps(
    rows: QuerySet[Model], path: tuple[type[Model], ...], refusals: list[QuerySet[Model]]
) -> list[tuple[str, Step]] | None:
    """The statements deleting `rows` and what cascades from them, the referring rows' first; rows that
    would refuse the delete added to `refusals`. None: only Django's collector does it right."""
    model = rows.model
    opts = model._meta
    if (
        _listened(model)
        or any(opts.parents.values())
        or any(hasattr(f, "bulk_related_objects") for f in opts.private_fields)
    ):
        return None
    steps: list[tuple[str, Step]] = []
    relation: Any
    for relation in get_candidate_relations_to_delete(opts):
        field = relation.field
        on_delete = field.remote_field.on_delete
        if on_delete is DO_NOTHING:
            continue
        related_model: type[Model] = relation.related_model
        referring = related_model._base_manager.filter(**{f"{field.name}__in": rows})
        if on_delete is CASCADE:
            if related_model in path:  # a cycle of cascades
                return None
            inner = _steps(referring, (*path, related_model), refusals)
            if inner is None:
                return None
            steps += inner
        elif on_delete is SET_NULL:
            steps.append((related_model._meta.label, _nulled(referring, field.name)))
        elif on_delete in (PROTECT, RESTRICT):
            refusals.append(referring)
        else:  # SET(...), SET_DEFAULT, a function of one's own
            return None
    steps.append((opts.label, _deleted(rows)))
    return steps


def _nulled(rows: QuerySet[Model], name: str) -> Step:
    def run() -> int:
        rows.update(**{name: None})
        return 0

    return run


def _deleted(rows: QuerySet[Model]) -> Step:
    def run() -> int:
        return int(rows._raw_delete(connection.alias))

    return run
