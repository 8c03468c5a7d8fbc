"""Upload forms for the reviewers' import page, and the reassignment form."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth import get_user_model

from labeling import querylog
from labeling.services import POOL_DEPTH

MAX_UPLOAD_BYTES = 50 * 1024 * 1024


class _UploadForm(forms.Form):
    file = forms.FileField()

    def clean_file(self) -> Any:
        upload = self.cleaned_data["file"]
        if upload.size > MAX_UPLOAD_BYTES:
            raise forms.ValidationError(f"the file is larger than {MAX_UPLOAD_BYTES // (1024 * 1024)} MB")
        return upload


class GoldenUploadForm(_UploadForm):
    pass


class DocumentsUploadForm(_UploadForm):
    pass


class QueryLogUploadForm(_UploadForm):
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


class RunUploadForm(_UploadForm):
    system = forms.SlugField(
        max_length=100, help_text="the system this TREC run comes from (never shown to raters)"
    )
    depth = forms.IntegerField(min_value=1, max_value=100, initial=POOL_DEPTH)


class ReassignForm(forms.Form):
    rater = forms.ModelChoiceField(queryset=get_user_model().objects.none())

    def __init__(self, *args: Any, raters: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["rater"].queryset = raters  # type: ignore[attr-defined]
