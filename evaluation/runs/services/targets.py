"""Search targets: create and change them (`TargetError` names every bad field)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from django.db import models, transaction

from assay.display import counted
from assay.secrets import secret_env_name_problem
from assay.storable import json_problem, text_problem
from assay.targets import SPEC_FIELDS, TargetError, spec_problems
from evaluation.runs.models import SearchTarget
from evaluation.runs.services.notifications import webhook_url_problem
from labeling.models import GoldenSet
from labeling.selectors.secrets import secret_problem

# Settings of a target that are not part of how it is called (the run's snapshot, assay.targets).
TARGET_EXTRA = ("description", "webhook_env")
# Every setting the target form and the services take.
TARGET_FIELDS = (*SPEC_FIELDS, *TARGET_EXTRA)


def _target_values(values: Mapping[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(values) - set(TARGET_FIELDS))
    if unknown:
        raise TargetError([f"{name}: not a target setting" for name in unknown])
    return dict(values)


def webhook_problems(webhook_env: str) -> list[str]:
    """Why a target's webhook URL is refused (empty: it is fine, or there is none, or it is not readable
    here). The variable's name and grant are `target_secret_problems`'. When the variable is set in this
    process, its URL is judged by the network policy now (and again at each delivery, where the workers'
    value is the one used); the message names the variable, never the URL, which is the credential."""
    name = webhook_env.strip()
    if not name or secret_env_name_problem(name):
        return []
    url = os.environ.get(name, "").strip()
    refused = webhook_url_problem(url, name) if url else None
    return [f"webhook_env: {refused}"] if refused else []


def target_secrets(*, headers: object, webhook_env: str = "") -> dict[str, str]:
    """The secret variables a target names, by the field naming each (`headers.Authorization`,
    `webhook_env`). Malformed header values are `spec_problems`' to report, not listed here."""
    named: dict[str, str] = {}
    if isinstance(headers, Mapping):
        for name, value in headers.items():
            if isinstance(value, Mapping) and isinstance(value.get("env"), str):
                named[f"headers.{name}"] = value["env"]
    if webhook_env.strip():
        named["webhook_env"] = webhook_env.strip()
    return named


def target_secret_problems(
    *,
    headers: object,
    webhook_env: str = "",
    golden_sets: Iterable[GoldenSet],
    besides: Sequence[str] = (),
    unnamed: Sequence[GoldenSet] = (),
) -> list[str]:
    """Why a target's secrets may not be used for `golden_sets`, each naming its field: every variable
    must be granted to every set (labeling.selectors.secrets). When a target is saved those are all the
    sets it lists, since the reviewers of any of them may change where it sends its headers; when it is
    called, the set the run or notification is for. A field `besides` has a problem for already (a header
    whose variable breaks the name rule: `spec_problems`) is not said twice; sets in `unnamed` (the editor
    does not review them) are counted, not named."""
    sets = list(golden_sets)
    said = {problem.split(": ", 1)[0] for problem in besides}
    return [
        f"{where}: {refused}"
        for where, variable in target_secrets(headers=headers, webhook_env=webhook_env).items()
        if where not in said and (refused := secret_problem(variable, golden_sets=sets, unnamed=unnamed))
    ]


def _storable_problems(target: SearchTarget) -> list[str]:
    """The settings no column holds: longer than a text column, a control character in a name or an
    address, a NUL anywhere (in a JSON field's names and strings too)."""
    problems = []
    for field in SearchTarget._meta.concrete_fields:
        value = getattr(target, field.attname)
        if isinstance(field, models.JSONField):
            problem = json_problem(value, field.name)
        elif isinstance(value, str) and isinstance(field, models.CharField | models.TextField):
            free = isinstance(field, models.TextField)
            found = text_problem(value, field.max_length, free_text=free)
            problem = f"{field.name}: {found}" if found else None
        else:
            problem = None
        if problem:
            problems.append(problem)
    return problems


def _target_save(
    target: SearchTarget, golden_sets: Iterable[GoldenSet] | None, hidden: Sequence[GoldenSet] = ()
) -> SearchTarget:
    storable = _storable_problems(target)
    if storable:  # before the spec's rules, which would quote the values back
        raise TargetError(storable)
    problems = spec_problems(target.spec())
    target.webhook_env = (target.webhook_env or "").strip()
    sets = list(golden_sets) if golden_sets is not None else list(target.golden_sets.all())
    problems += target_secret_problems(
        headers=target.headers,
        webhook_env=target.webhook_env,
        golden_sets=sets,
        besides=problems,
        unnamed=hidden,
    )
    if not any(problem.startswith("webhook_env:") for problem in problems):
        problems += webhook_problems(target.webhook_env)
    # The sets' rows locked first: two saves giving one set the same name take turns, not both pass.
    list(GoldenSet.objects.select_for_update(no_key=True).filter(pk__in=[s.pk for s in sets]).order_by("pk"))
    problems[:0] = target_name_problems(name=target.name, golden_sets=sets, exclude=target.pk)
    if problems:
        raise TargetError(problems)
    target.save()
    if golden_sets is not None:
        target.golden_sets.set(sets)
    return target


def target_name_problems(*, name: str, golden_sets: Iterable[GoldenSet], exclude: int | None) -> list[str]:
    """A target's name is unique among the targets of each golden set it lists, not site-wide.

    Why per set: a site-wide rule answers "a target named X exists" for a name some other team's set
    uses, which tells a reviewer that a target they cannot see exists; and two teams may well both want
    `staging-search`. Within a set the name is what CI and the API call the target by (a run is started
    with the set and the target's name), so there it must be unique; and the sets a person may list on a
    target are the ones they review, whose targets they can all see, so the refusal tells them nothing
    new. A target evaluated on sets its editor does not review keeps its name (`target_update`'s
    `hidden_sets`). The admin's target form asks the same.
    """
    sets = list(golden_sets)
    if not name or not sets:
        return []
    others = SearchTarget.objects.filter(name=name, golden_sets__in=sets)
    if exclude is not None:
        others = others.exclude(pk=exclude)
    clashes = others.values_list("golden_sets__slug", flat=True)
    taken = sorted(set(clashes) & {s.slug for s in sets})
    return [f"name: golden set {slug} has a target named {name!r} already" for slug in taken]


@transaction.atomic
def target_create(
    *,
    name: str,
    url: str,
    owner: Any = None,
    golden_sets: Iterable[GoldenSet] = (),
    **settings: Any,
) -> SearchTarget:
    """A new target; `settings` are SearchTarget fields (adapter, headers, params, stages, timeout, ...).
    Raises TargetError naming every bad field; a secret header must be given as {"env": "VAR"}."""
    values = _target_values(settings)
    target = SearchTarget(name=name.strip(), url=url.strip(), owner=owner, **values)
    return _target_save(target, golden_sets)


@transaction.atomic
def target_update(
    *,
    target: SearchTarget,
    golden_sets: Iterable[GoldenSet] | None = None,
    hidden_sets: Iterable[GoldenSet] = (),
    **changes: Any,
) -> SearchTarget:
    """Change settings of a target (runs already created keep the snapshot they were created with).
    `hidden_sets`: the sets it lists that the editor does not review; then its name stays (their CI calls
    it by name, and a clash there would tell of a target the editor cannot see)."""
    values = _target_values(changes)
    locked = SearchTarget.objects.select_for_update().get(pk=target.pk)
    hidden = list(hidden_sets)
    renamed = "name" in values and str(values["name"]).strip() != locked.name
    if hidden and renamed:
        raise TargetError(
            [
                f"name: {locked.name} is also evaluated on {counted(len(hidden), 'golden set')} "
                "you do not review, "
                "whose runs call it by its name: only an admin or those sets' reviewers can rename it"
            ]
        )
    for name, value in values.items():
        setattr(locked, name, value.strip() if name in ("name", "url") and isinstance(value, str) else value)
    saved = _target_save(locked, golden_sets, hidden)
    target.refresh_from_db()
    return saved
