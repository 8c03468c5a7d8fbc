"""The form that creates a side-by-side study (docs/sxs.md, "Creating a study"), from two finished runs or
on two targets searched now. It checks shape; the services
(`evaluation.studies.services.studies.study_create`, `evaluation.studies.services.pending.study_on_targets`)
check meaning and word every refusal."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django import forms
from django.contrib.auth import get_user_model

from assay.inputs import whole_number
from assay.sxs import Expectation, SxsRule
from evaluation.runs import access
from evaluation.runs.models import EvaluationRun, SearchTarget
from evaluation.studies.models import SHOWN_DEFAULT, SHOWN_MAX, StudyInstructions, SxsStudy
from evaluation.studies.services import DEFAULT_EXAMPLES, DEFAULT_INSTRUCTIONS, MAX_SEED, StudySpec
from evaluation.studies.services.planning import study_expectation
from golden_io.models import GoldenVersion
from labeling.models import GoldenSet
from labeling.selectors.sets import golden_set_strata


class RunChoiceField(forms.ModelChoiceField):
    def label_from_instance(self, obj: Any) -> str:
        run: EvaluationRun = obj
        return f"{run.label}, golden {run.golden_version.name}"


class RaterChoiceField(forms.ModelMultipleChoiceField):
    def label_from_instance(self, obj: Any) -> str:
        return str(obj.get_username())


class StudyForm(forms.Form):
    name = forms.CharField(required=False, max_length=200, help_text="for reviewers; raters never see it")
    rater_name = forms.CharField(
        required=False,
        max_length=200,
        label="Name raters see",
        help_text='empty: the name above when it names no target, parameter or run, else "Study of <today>"',
    )
    run_a = RunChoiceField(
        queryset=EvaluationRun.objects.none(), required=False, label="Run A (the baseline)"
    )
    run_b = RunChoiceField(
        queryset=EvaluationRun.objects.none(), required=False, label="Run B (the candidate)"
    )
    target_a = forms.ModelChoiceField(
        queryset=SearchTarget.objects.none(),
        required=False,
        label="Or: target A searched now",
        help_text="instead of two runs: two targets, each run now; the study is made when both finish",
    )
    target_b = forms.ModelChoiceField(
        queryset=SearchTarget.objects.none(), required=False, label="Target B searched now"
    )
    golden_version = forms.ModelChoiceField(
        queryset=GoldenVersion.objects.none(),
        required=False,
        label="Golden version (with targets)",
        help_text="empty: the set's newest",
    )
    selection = forms.ChoiceField(choices=SxsStudy.Selection.choices, label="Queries", initial="all")
    # The set's strata (`__init__`); "every stratum" unless the queries are one stratum's.
    stratum = forms.ChoiceField(
        required=False, help_text="the stratum whose queries to ask, with Queries: one stratum"
    )
    size = forms.IntegerField(
        required=False,
        min_value=1,
        help_text="how many queries (needed for losers and gainers, and a sample)",
    )
    seed = forms.IntegerField(
        required=False, min_value=0, max_value=MAX_SEED, help_text="empty: drawn now and recorded"
    )
    shown = forms.IntegerField(
        initial=SHOWN_DEFAULT, min_value=1, max_value=SHOWN_MAX, label="Results shown per side"
    )
    raters = RaterChoiceField(
        queryset=get_user_model().objects.none(), widget=forms.CheckboxSelectMultiple, label="Raters"
    )
    answers_per_query = forms.IntegerField(initial=2, min_value=1, label="Answers per query")
    instructions_name = forms.SlugField(initial="default", label="Instructions name")
    instructions = forms.CharField(widget=forms.Textarea(attrs={"rows": 4}), label='What "better" means')
    examples = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 3}), help_text="one a line"
    )
    min_lower = forms.FloatField(
        initial=SxsRule().min_lower,
        label="Pass when the 95% interval's lower bound is at least",
        help_text="on the -3 .. 3 scale, in the candidate's favour",
    )
    min_queries = forms.IntegerField(
        initial=SxsRule().min_queries, min_value=1, label="Fully answered queries needed"
    )
    critical_junk_fails = forms.BooleanField(
        required=False,
        initial=SxsRule().critical_junk_fails,
        label="Junk in the candidate's top three on a critical query fails",
    )

    # The form's own errors are about which runs or targets: the summary's link goes to run A.
    error_anchors = {"__all__": "id_run_a"}
    # Where a service's problem goes (`problems_to_form`): beside the field it names, by these beginnings.
    PROBLEM_FIELDS = {
        "name raters see": "rater_name",
        "results shown": "shown",
        "answers per query": "answers_per_query",
        "queries": "selection",
        "stratum ": "stratum",
        "rule": "min_lower",
        "golden version": "golden_version",
        "target ": "target_b",
    }

    def __init__(self, *args: Any, golden_set: GoldenSet, user: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # The set's targets the reviewer sees (as the Start-a-run form offers them) and the set's versions.
        targets = access.targets_for(user).filter(golden_sets=golden_set)
        for field in ("target_a", "target_b"):
            target_field = self.fields[field]
            assert isinstance(target_field, forms.ModelChoiceField)
            target_field.queryset = targets
        version_field = self.fields["golden_version"]
        assert isinstance(version_field, forms.ModelChoiceField)
        version_field.queryset = (
            GoldenVersion.objects.filter(golden_set=golden_set)
            .defer("content", "documents")
            .order_by("-created")
        )
        runs = (
            EvaluationRun.objects.filter(
                golden_version__golden_set=golden_set, status=EvaluationRun.Status.SUCCEEDED
            )
            .select_related("target", "golden_version")
            .defer("report", "gate", "key_map", "keys", "golden_version__content")
            .order_by("-created", "-id")
        )
        for field in ("run_a", "run_b"):
            choice = self.fields[field]
            assert isinstance(choice, forms.ModelChoiceField)
            choice.queryset = runs
        stratum = self.fields["stratum"]
        assert isinstance(stratum, forms.ChoiceField)
        stratum.choices = [("", "every stratum"), *((s, s) for s in golden_set_strata(golden_set=golden_set))]
        raters = self.fields["raters"]
        assert isinstance(raters, forms.ModelMultipleChoiceField)
        raters.queryset = golden_set.raters.filter(groups__name="raters").order_by("username")
        # The set's raters are who a study asks, nearly always: every one ticked, untick who should not.
        self.initial.setdefault("raters", list(raters.queryset))
        newest = StudyInstructions.objects.filter(name="default").order_by("-version").first()
        self.initial.setdefault("instructions", newest.text if newest else DEFAULT_INSTRUCTIONS)
        self.initial.setdefault("examples", newest.examples if newest else DEFAULT_EXAMPLES)

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        runs = [data.get("run_a"), data.get("run_b")]
        targets = [data.get("target_a"), data.get("target_b")]
        if any(runs) and any(targets):
            raise forms.ValidationError("choose either two runs or two targets, not both")
        if not all(runs) and not all(targets):
            raise forms.ValidationError(
                "choose run A and run B (two finished runs), or target A and target B (two targets searched "
                "now)"
            )
        return data

    @property
    def on_targets(self) -> bool:
        return bool(self.cleaned_data.get("target_a"))

    def values(self) -> dict[str, Any]:
        """The checked options with the verdict rule gathered (StudySpec's names)."""
        data = self.cleaned_data
        rule = {name: data[name] for name in ("min_lower", "min_queries")}
        rule["critical_junk_fails"] = bool(data.get("critical_junk_fails"))
        return {**data, "rule": rule}

    def spec(self) -> StudySpec:
        data = self.cleaned_data
        return StudySpec.read(data["run_a"], data["run_b"], data["raters"], self.values())


def form_expectation(golden_set: GoldenSet, data: Mapping[str, Any]) -> tuple[Expectation, bool]:
    """The interval the form's size will likely give under its rule (docs/sxs.md, "How wide the interval
    will likely be"), read leniently from the values as typed so far: a size that is not a whole number of
    at least 1 is taken as none (the rule's minimum of queries), a rule that does not hold as the default.
    And whether a size was given."""
    try:
        rule = SxsRule.from_dict(
            {
                "min_lower": float(data.get("min_lower") or SxsRule().min_lower),
                "min_queries": whole_number(data.get("min_queries"), low=1) or SxsRule().min_queries,
            }
        )
    except ValueError:  # a number off the scale, or not a number at all: what the form refuses on submit
        rule = SxsRule()
    size = whole_number(str(data.get("size") or "").strip(), low=1)
    return study_expectation(golden_set=golden_set, queries=size or rule.min_queries, rule=rule), bool(size)
