"""A judge's qualification status and the set's suspension banner, for the judge pages whose views do not
pass them (docs/judge-qualification.md, "Qualifying a judge" and "The drift watch")."""

from __future__ import annotations

from typing import Any

from django import template

from labeling.models import GoldenSet, Judge
from labeling.services.judge_qualification import qualification_status, suspended_recently

register = template.Library()


@register.simple_tag
def judge_status(judge: Judge) -> str:
    """ "not qualified", "qualified for billing, de-DE since ...", "suspended: ..."."""
    return qualification_status(judge)


@register.inclusion_tag("labeling/_judge_qualification_banner.html")
def judge_suspended_banner(golden_set: GoldenSet) -> dict[str, Any]:
    return {"suspended": suspended_recently(golden_set=golden_set)}
