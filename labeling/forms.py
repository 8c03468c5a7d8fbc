"""Upload forms for the reviewers' import page, the reassignment form, the reviewer actions, calibration
rounds and machine judges; and how a service's problems go back to the fields they name
(`problems_to_form`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from django import forms
from django.conf import settings
from django.db import models
from django.forms.fields import InvalidJSONInput

from assay.jsonin import JsonInputError, json_loads
from assay.labels import querylog
from assay.labels.agreement import reading_thresholds_errors
from assay.problems import size_text
from labeling.services import POOL_DEPTH
from labeling.widget_html import PythonWidgets


class UploadForm(forms.Form):
    """One file. The import page's golden-file form is this one as it stands; it posts to golden_io
    (`golden_io.views.golden_import`), which owns golden-file import. Every upload is this form or one
    of its subclasses, so every upload has the one limit, ASSAY_MAX_UPLOAD_MB."""

    file = forms.FileField()
    # The import page shows four upload forms at once: each its own ids (`id_golden_file`), one name.
    ID_PREFIX = ""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("auto_id", f"id_{self.ID_PREFIX}%s")
        super().__init__(*args, **kwargs)

    def clean_file(self) -> Any:
        return _within_upload_limit(self.cleaned_data["file"], "file")


def _within_upload_limit(upload: Any, what: str) -> Any:
    limit = settings.ASSAY_MAX_UPLOAD_BYTES
    if upload.size > limit:
        raise forms.ValidationError(
            f"the {what} is {upload.size:,} bytes; a file may be at most {size_text(limit)} "
            "(ASSAY_MAX_UPLOAD_MB): nothing was imported"
        )
    return upload


class GoldenUploadForm(UploadForm):
    """The golden file's form: a golden file, or judgments in another tool's format (assay.convert's
    table: the formats read from one file) with how to read their ratings (docs/cli.md, "`assay
    convert`"). The page posts it to golden_io, which converts and imports."""

    ID_PREFIX = "golden_"
    # Merge unless replacing is chosen (docs/labeling.md, "Imports"); a post without it merges.
    mode = forms.ChoiceField(
        required=False,
        initial="merge",
        widget=forms.RadioSelect,
        choices=[
            ("merge", "Merge: change only the labels the file names; keep every other label and field"),
            ("replace", "Replace: the set's labels become exactly the file's (the preview counts removals)"),
        ],
    )
    # Optional: a post without it (a script, a form of before) is a golden file, as it always was.
    format = forms.ChoiceField(
        required=False, initial="golden", help_text="the file's format (docs/cli.md, assay convert)"
    )
    scale = forms.CharField(
        required=False, max_length=100, help_text="MIN..MAX: the ratings' range, read onto the rubric's scale"
    )
    map = forms.CharField(
        required=False,
        max_length=1000,
        help_text="FROM=TO pairs, space-separated: read rating FROM as grade TO",
    )
    # trec-qrels: the queries' texts (without it a query's text is its qid).
    # Help texts are rendered as HTML: the tab's name is escaped, or the browser eats it as a tag.
    topics = forms.FileField(
        required=False, help_text="trec-qrels: the topics file, qid&lt;TAB&gt;text a line"
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        from assay.convert.formats import upload_formats

        super().__init__(*args, **kwargs)
        field = self.fields["format"]
        assert isinstance(field, forms.ChoiceField)
        field.choices = [(f.name, f"{f.name}: {f.summary}".replace("`", "")) for f in upload_formats()]

    def clean_format(self) -> str:
        return str(self.cleaned_data["format"] or "golden")

    def clean_mode(self) -> str:
        return str(self.cleaned_data["mode"] or "merge")

    def clean_topics(self) -> Any:
        """The topics file, under the one upload limit as the file is."""
        topics = self.cleaned_data["topics"]
        if topics is not None:
            _within_upload_limit(topics, "topics file")
        return topics

    def clean_scale(self) -> tuple[float, float] | None:
        from assay.convert.core import parse_scale_option

        text = self.cleaned_data["scale"].strip()
        if not text:
            return None
        try:
            return parse_scale_option(text)
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from None

    def clean_map(self) -> dict[float, int]:
        """Grades are checked against the set's rubric on import; here only the shape of each pair."""
        from assay.convert.core import parse_map_options
        from assay.golden.model import Scale

        try:
            return parse_map_options(self.cleaned_data["map"].split(), Scale(-(2**31), 2**31 - 1))
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from None

    def clean(self) -> dict[str, Any] | None:
        cleaned = super().clean()
        from assay.convert.formats import GOLDEN_FORMATS

        if (
            cleaned
            and cleaned.get("format") in GOLDEN_FORMATS
            and (cleaned.get("scale") or cleaned.get("map"))
        ):
            self.add_error(
                "scale", "a golden file's grades are already grades: scale and map read other formats"
            )
        if cleaned and cleaned.get("topics") is not None and cleaned.get("format") != "trec-qrels":
            self.add_error("topics", "a topics file goes with TREC qrels only (format trec-qrels)")
        return cleaned


class DocumentsUploadForm(UploadForm):
    ID_PREFIX = "documents_"


class QueryLogUploadForm(UploadForm):
    ID_PREFIX = "query_log_"
    cap = forms.IntegerField(min_value=1, initial=500, help_text="the most active queries the set may hold")
    reserve_share = forms.FloatField(
        min_value=0,
        max_value=1,
        initial=querylog.DEFAULT_RESERVE_SHARE,
        help_text="share kept for known failures",
    )
    zero_hit_min_share = forms.FloatField(
        min_value=0,
        max_value=1,
        initial=querylog.DEFAULT_ZERO_HIT_MIN_SHARE,
        help_text="a known failure returned nothing in at least this share of its searches",
    )
    seed = forms.IntegerField(initial=0, help_text="the same seed draws the same sample")


class RunUploadForm(UploadForm):
    ID_PREFIX = "run_"
    system = forms.SlugField(
        max_length=100, help_text="the system this TREC run comes from (never shown to raters)"
    )
    depth = forms.IntegerField(min_value=1, max_value=100, initial=POOL_DEPTH)


# --- a page's small forms (labeling/inline_forms.py) ---------------------------------------------------

# The code of a service's problem that names none of a small form's fields, put beside its main field:
# the summary of errors says it as it is worded, without that field's label before it.
UNPLACED = "unplaced"


class InlineForm(forms.Form):
    """One of a page's small forms (labeling/inline_forms.py): `KIND` names it on the page; `key` tells it
    from the page's other forms of its kind (the document or assignment it acts on; "" for the page's one
    form of its kind) and starts its ids (`gold-12-grade`), so each error and each link to it is that
    form's; keyword arguments are what it shows at first. A service's problem that names none of its
    fields goes beside `PROBLEMS_FIELD`."""

    KIND: ClassVar[str] = ""
    PROBLEMS_FIELD: ClassVar[str] = ""
    default_renderer = PythonWidgets  # a page draws many: their widgets without Django's templates

    def __init__(self, data: Any = None, *, key: object = "", **initial: Any) -> None:
        self.key = str(key)
        start = f"{self.KIND}-{self.key}-" if self.key else f"{self.KIND}-"
        super().__init__(data, auto_id=start + "%s", initial=initial)

    def refuse(self, problems: Sequence[str], aliases: Mapping[str, str] | None = None) -> None:
        """A service's problems, each beside the field it names, the rest beside `PROBLEMS_FIELD`."""
        problems_to_form(self, problems, aliases or {}, rest=self.PROBLEMS_FIELD)


class ReassignForm(InlineForm):
    """Another rater for an assignment: one of `raters` (the set's, read once for the page's every form)
    but the one who holds it now (`held_by`); the cleaned `rater` is the user."""

    KIND = "reassign"
    PROBLEMS_FIELD = "rater"
    rater = forms.TypedChoiceField(
        label="Reassign to",
        coerce=int,
        error_messages={"invalid_choice": "choose one of the golden set's other raters"},
    )

    def __init__(
        self, data: Any = None, *, raters: Sequence[Any], held_by: int | None = None, **kwargs: Any
    ) -> None:
        super().__init__(data, **kwargs)
        self.raters = {rater.pk: rater for rater in raters if rater.pk != held_by}
        self.fields["rater"].choices = [(pk, rater.username) for pk, rater in self.raters.items()]  # type: ignore[attr-defined]

    def clean_rater(self) -> Any:
        return self.raters[self.cleaned_data["rater"]]


# --- reviewer actions (docs/agreement.md): the services check the rules and name what is wrong --------

_RATIONALE = {"rows": 2, "placeholder": "why (kept with the decision)"}


class AdjudicationForm(InlineForm):
    """A document's final grade, one of the rubric's (`scale`), with the reviewer's rationale."""

    KIND = "adjudication"
    PROBLEMS_FIELD = "rationale"
    grade = forms.IntegerField(label="Final grade", widget=forms.RadioSelect)
    rationale = forms.CharField(max_length=2000, widget=forms.Textarea(attrs=_RATIONALE))

    def __init__(self, data: Any = None, *, scale: Sequence[int], **kwargs: Any) -> None:
        super().__init__(data, **kwargs)
        widget = self.fields["grade"].widget
        assert isinstance(widget, forms.RadioSelect)
        widget.choices = [(g, str(g)) for g in scale]


class ProposalDecisionForm(InlineForm):
    """Accept or reject a proposal (`key` the proposal) with a rationale; the buttons post the decision."""

    KIND = "proposal"
    PROBLEMS_FIELD = "rationale"
    decision = forms.CharField(required=False)  # posted by the button pressed, drawn by none
    rationale = forms.CharField(max_length=2000, widget=forms.Textarea(attrs={"rows": 1}))

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("decision") not in ("accept", "reject"):
            self.add_error("rationale", forms.ValidationError("press Accept or Reject", code=UNPLACED))
        return data


class QueryProposalsForm(ProposalDecisionForm):
    """Accept or reject every pending proposal of a query (`key` the query) with one rationale."""

    KIND = "proposals"


class TierMoveForm(InlineForm):
    KIND = "tier"
    PROBLEMS_FIELD = "reason"
    tier = forms.ChoiceField(
        label="Move to", choices=[("core", "core"), ("shadow", "shadow"), ("challenge", "challenge")]
    )
    reason = forms.CharField(label="Why", max_length=2000, widget=forms.Textarea(attrs={"rows": 2}))


class RetireForm(InlineForm):
    KIND = "retire"
    PROBLEMS_FIELD = "reason"
    reason = forms.CharField(label="Why", max_length=2000, widget=forms.Textarea(attrs={"rows": 2}))


class GoldForm(InlineForm):
    """A document's known grade as a gold item (`key` the document), or `unmark` to stop."""

    KIND = "gold"
    PROBLEMS_FIELD = "grade"
    grade = forms.IntegerField(label="Known grade", required=False)
    unmark = forms.BooleanField(required=False)

    def __init__(self, data: Any = None, *, scale: Sequence[int], **kwargs: Any) -> None:
        super().__init__(data, **kwargs)
        self.fields["grade"].widget = forms.Select(choices=[(g, str(g)) for g in scale])

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if not data.get("unmark") and data.get("grade") is None and "grade" not in self.errors:
            self.add_error("grade", "give the known grade, or unmark the item")
        return data


class ThresholdsForm(forms.Form):
    hard_diff = forms.IntegerField(
        min_value=1, label="Hard at", help_text="two grades this far apart are a hard disagreement"
    )
    min_dual_docs = forms.IntegerField(
        min_value=1, label="Query rules from", help_text="dual-labeled documents before exact and MAD apply"
    )
    min_exact = forms.FloatField(
        min_value=0, max_value=1, label="Exact at least", help_text="disputed below this exact agreement"
    )
    max_mad = forms.FloatField(
        min_value=0, label="MAD at most", help_text="disputed above this mean absolute difference"
    )
    # The readings of alpha and the kappas (docs/agreement.md, "Readings"); `clean` holds their rule.
    reliable_min = forms.FloatField(
        label="Reliable from", help_text="the interval's lower bound at least this reads reliable"
    )
    tentative_min = forms.FloatField(
        label="Tentative from",
        help_text="lower bound at least this reads tentative; an upper bound below it, unreliable",
    )
    min_pairable_units = forms.IntegerField(
        label="Readings from", help_text="queries with two or more grades on a document before any reading"
    )

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        names = ("reliable_min", "tentative_min", "min_pairable_units")
        if all(name in data for name in names):  # else a field's own error already says what is wrong
            for name, message in reading_thresholds_errors(*(data[n] for n in names)).items():
                self.add_error(name, message)
        return data


def form_errors(form: forms.Form) -> str:
    """Every error of a bound form in one line, each with its field."""
    return "; ".join(
        f"{name}: {' '.join(str(e) for e in errors)}"
        if name != "__all__"
        else " ".join(str(e) for e in errors)
        for name, errors in form.errors.items()
    )


def problems_to_form(
    form: forms.Form, problems: Sequence[str], aliases: Mapping[str, str], rest: str = ""
) -> None:
    """Service problems start with the field they are about (`headers.X: ...`, `hour: ...`); `aliases`
    maps other beginnings to a field (`search URL ...` -> url). The rest go above the form, or beside
    the field `rest` names (a small form's main field, `InlineForm`)."""
    for problem in problems:
        head = problem.split(":", 1)[0].split(".", 1)[0].strip()
        head = next((name for start, name in aliases.items() if head.startswith(start)), head)
        if head in form.fields:
            form.add_error(head, problem)
        elif rest:
            form.add_error(rest, forms.ValidationError(problem, code=UNPLACED))
        else:
            form.add_error(None, problem)


def secret_choices(
    secrets: Sequence[str], form: forms.BaseForm, name: str, none: str
) -> list[tuple[str, str]]:
    """A secret-name field's choices: none, then the variables granted to the set, and the one the form
    holds (given or stored) when it is not among them, so it shows as it is and the service words its
    refusal."""
    held = str((form.data.get(form.add_prefix(name)) if form.is_bound else form.initial.get(name)) or "")
    names = sorted({*secrets, *([held] if held else [])})
    return [("", none), *((n, n if n in secrets else f"{n} (not granted to this set)") for n in names)]


# --- calibration rounds -------------------------------------------------------------------------------


class _AnyChoice(forms.MultipleChoiceField):
    """Offers the set's choices, but passes any posted value on: the service names what is wrong with
    it (a query retired since the page was loaded, a rater taken off the set) in its own words."""

    def valid_value(self, value: Any) -> bool:
        return True


class CalibrationRoundForm(forms.Form):
    # Nothing is required here: the service refuses an empty name or too few raters in its own words.
    name = forms.CharField(
        required=False,
        widget=forms.TextInput(attrs={"maxlength": 200}),
        help_text="e.g. rubric help-center@1, before the spring push",
    )
    queries = _AnyChoice(
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="the set's active queries by stratum; every rater grades every candidate",
    )
    raters = _AnyChoice(
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="two or more of the set's raters; they grade blind",
    )

    # The queries are drawn by the page's picker (templates/labeling/calibration_list.html), not the field.
    error_anchors = {"queries": "query-picker"}

    def __init__(self, *args: Any, choices: dict[str, Any], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["queries"].choices = choices["queries"]  # type: ignore[attr-defined]
        self.fields["raters"].choices = choices["raters"]  # type: ignore[attr-defined]


# --- machine judges (docs/judge.md) ------------------------------------------------------------------


class JudgeForm(forms.Form):
    """A judge's settings; the service checks the address and the key's variable name in its own words."""

    name = forms.CharField(max_length=200, help_text="how the pages name it, e.g. gpt-4o-mini strict")
    base_url = forms.CharField(
        label="Base URL", max_length=1000, help_text="OpenAI-compatible, e.g. https://api.openai.com/v1"
    )
    model = forms.CharField(max_length=200)
    # A choice of the variables granted to the set (`__init__`); any name posted goes on to the service,
    # which says in its own words why one not granted is refused.
    api_key_env = forms.CharField(
        label="API key variable",
        required=False,
        max_length=100,
        widget=forms.Select,
        help_text="the workers' environment variable holding the key, among those an administrator granted "
        "this set (ASSAY_SECRET_...)",
    )
    temperature = forms.FloatField(min_value=0.0, max_value=2.0, initial=0.0)
    concurrency = forms.IntegerField(
        min_value=1, max_value=64, initial=4, help_text="requests in flight at most"
    )
    text_budget = forms.IntegerField(
        min_value=200,
        max_value=100_000,
        initial=4000,
        help_text="characters of a document's text in a prompt",
    )
    instructions = forms.CharField(widget=forms.Textarea(attrs={"rows": 4}))
    structured = forms.BooleanField(
        required=False, initial=True, label="Structured output", help_text="send response_format json_schema"
    )
    try_query = forms.ChoiceField(
        required=False, label="Try on", help_text="the first three candidates of this query"
    )

    # Where a service's problem goes (`problems_to_form`), by how it begins.
    PROBLEM_FIELDS = {"base URL": "base_url", "API key variable": "api_key_env"}

    def __init__(
        self, *args: Any, queries: list[tuple[str, str]], secrets: Sequence[str] = (), **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.fields["try_query"].choices = [("", "choose a query"), *queries]  # type: ignore[attr-defined]
        key = self.fields["api_key_env"].widget
        assert isinstance(key, forms.Select)
        key.choices = secret_choices(secrets, self, "api_key_env", "none: a server without a key")


class JudgeJobForm(InlineForm):
    """The queries a judge job judges: those chosen, or every one offered (`queries`: the set's active
    queries with a pool, as (pk, label)). `query_ids` in the cleaned data: the chosen ones offered; a
    value that is none of them (not an id, another set's query, one retired since) is left out, and
    nothing offered left is refused."""

    KIND = "job"
    PROBLEMS_FIELD = "queries"
    queries = _AnyChoice(
        required=False,
        widget=forms.SelectMultiple(attrs={"size": 10}),
        help_text="every candidate of each chosen query is judged (hold Ctrl or ⌘ to choose several)",
    )
    all_queries = forms.BooleanField(required=False, label="every active query of the set")

    def __init__(self, data: Any = None, *, queries: list[tuple[str, str]], **kwargs: Any) -> None:
        super().__init__(data, **kwargs)
        self.fields["queries"].choices = queries  # type: ignore[attr-defined]
        self.offered = [int(pk) for pk, _ in queries]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        chosen = set(data.get("queries") or ())
        ids = [pk for pk in self.offered if data.get("all_queries") or str(pk) in chosen]
        if not ids:
            self.add_error(
                "queries",
                "the set has no active query with candidates: nothing to judge"
                if not self.offered
                else "choose one or more of these queries, or every active query of the set",
            )
        data["query_ids"] = ids
        return data


# --- judge qualification ---------------------------------------------------------------------------


class QualifyForm(InlineForm):
    """Qualify a judge for a scope (docs/judge-qualification.md): the choices are the set's strata and
    locales, (value, label). A refusal of the scope goes beside the strata."""

    KIND = "qualify"
    PROBLEMS_FIELD = "strata"

    strata = forms.MultipleChoiceField(
        required=False, help_text="none chosen: every stratum", widget=forms.SelectMultiple(attrs={"size": 4})
    )
    locales = forms.MultipleChoiceField(
        required=False, help_text="none chosen: every locale", widget=forms.SelectMultiple(attrs={"size": 4})
    )
    rationale = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}), help_text="why this judge's grades may count there"
    )

    def __init__(
        self,
        data: Any = None,
        *,
        strata: list[tuple[str, str]],
        locales: list[tuple[str, str]],
        **kwargs: Any,
    ) -> None:
        super().__init__(data, **kwargs)
        self.fields["strata"].choices = strata  # type: ignore[attr-defined]
        self.fields["locales"].choices = locales  # type: ignore[attr-defined]


class WithdrawForm(InlineForm):
    """End a qualification (`key` the qualification) with a reason."""

    KIND = "withdraw"
    PROBLEMS_FIELD = "reason"
    reason = forms.CharField(max_length=1000, help_text="why its grades must stop counting")


class CompareForm(forms.Form):
    judges = forms.MultipleChoiceField(
        required=False,
        help_text="none chosen: every judge of the set",
        widget=forms.SelectMultiple(attrs={"size": 6}),
    )

    def __init__(self, *args: Any, judges: list[tuple[str, str]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["judges"].choices = judges  # type: ignore[attr-defined]


class BoundedJSONField(forms.JSONField):
    """Django's JSON form field (the admin's, for every JSONField it edits), reading the text through
    `assay.jsonin`: text nested deeper than 64 levels or with a number longer than Python reads is the
    field's worded error. Django's own catches only a syntax error, so either was a 500 (a RecursionError,
    a ValueError), when cleaning and again when the form is shown back with its errors."""

    def to_python(self, value: Any) -> Any:
        if not self.disabled and isinstance(value, str) and value not in self.empty_values:
            try:
                json_loads(value)
            except JsonInputError as exc:
                raise forms.ValidationError(str(exc), code="invalid") from None
        return super().to_python(value)

    def bound_data(self, data: Any, initial: Any) -> Any:
        if self.disabled or not isinstance(data, str):
            return super().bound_data(data, initial)
        try:
            json_loads(data)
        except JsonInputError:
            return InvalidJSONInput(data)  # shown back as typed
        return super().bound_data(data, initial)


# An admin's `formfield_overrides`: every JSONField it edits through BoundedJSONField.
JSON_FIELD_OVERRIDES: dict[Any, dict[str, Any]] = {models.JSONField: {"form_class": BoundedJSONField}}
