"""The API tokens page: create (the secret shown once) and revoke.

Part of `evaluation.runs.views` (docs/architecture.md).
"""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from evaluation.runs.forms import TokenForm
from evaluation.runs.models import ApiToken
from evaluation.runs.tokens import TokenError, api_token_create, api_token_list, api_token_revoke
from labeling.roles import is_reviewer

# ------------------------------------------------------------------------------------- API tokens


def _tokens_page(request: HttpRequest, form: TokenForm, created: str = "", status: int = 200) -> HttpResponse:
    return render(
        request,
        "evaluation/runs/tokens.html",
        {"form": form, "tokens": api_token_list(user=request.user), "created": created},
        status=status,
    )


@require_http_methods(["GET", "POST"])
def tokens(request: HttpRequest) -> HttpResponse:
    """Your API tokens; a new token is shown once, on the page that created it."""
    if not is_reviewer(request.user):
        raise Http404("nothing here")
    form = TokenForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            _, raw = api_token_create(
                user=request.user, name=form.cleaned_data["name"], scopes=form.cleaned_data["scopes"]
            )
        except TokenError as exc:
            for problem in exc.problems:
                form.add_error(None, problem)
        else:
            return _tokens_page(request, TokenForm(), created=raw)
    return _tokens_page(request, form, status=422 if request.method == "POST" else 200)


@require_POST
def token_revoke(request: HttpRequest, pk: int) -> HttpResponse:
    # As the tokens page: reviewers' (a token without the role opens nothing; an admin revokes it).
    if not is_reviewer(request.user):
        raise Http404("no such token")
    token = ApiToken.objects.filter(pk=pk, user_id=request.user.pk or 0).first()
    if token is None:
        raise Http404("no such token")
    if api_token_revoke(token=token):
        messages.success(request, f"Token {token.name} revoked.")
    return redirect("evaluation:tokens")
