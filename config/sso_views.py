"""The sign-in pages: the login page (a local account, and single sign-on when it is on), the start and
the callback of a single sign-on (mozilla-django-oidc's views, their failures in words), and the logout that
also ends the provider's session where it offers an end-session endpoint (docs/deployment.md, "Single
sign-on")."""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_not_required
from django.core.exceptions import SuspiciousOperation
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils.decorators import method_decorator
from django.views.generic import View
from mozilla_django_oidc.views import OIDCAuthenticationCallbackView, OIDCAuthenticationRequestView

from assay.sso import SsoRefused
from config import sso
from config.refusals import refusal

logger = logging.getLogger(__name__)

NOT_SIGNED_IN = "You are not signed in to Assay. Start again from the login page."


def refused_page(request: HttpRequest, refused: SsoRefused) -> HttpResponse:
    return refusal(request, refused.status, "Sign-in refused", refused.message, hint=NOT_SIGNED_IN)


class LoginView(auth_views.LoginView):
    """Django's login page, offering single sign-on beside the local accounts' form when it is on."""

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        context["sso_name"] = sso.provider_name() if sso.enabled() else ""
        return context


class LogoutView(auth_views.LogoutView):
    """Ends the Assay session, then, for a single sign-on whose provider has an end-session endpoint, sends
    the browser there to end the provider's session too; it comes back to the login page."""

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        leave = provider_logout_url(request)  # read before the session, and its ID token, are gone
        response = super().post(request, *args, **kwargs)
        return HttpResponseRedirect(leave) if leave else response


def provider_logout_url(request: HttpRequest) -> str | None:
    """The provider's end-session address for this session (OpenID Connect RP-Initiated Logout), or None:
    single sign-on off, a local account's session, or a provider without the endpoint. A provider that
    cannot be asked does not stop the logout: the Assay session ends all the same."""
    id_token = request.session.get("oidc_id_token")
    if not sso.enabled() or not id_token:
        return None
    try:
        endpoint = sso.discovery().get("end_session_endpoint")
    except SsoRefused as exc:
        logger.warning("logout: the provider's session is left as it is: %s", exc.message)
        return None
    if not isinstance(endpoint, str) or not endpoint:
        return None
    query = urlencode(
        {
            "id_token_hint": id_token,
            "client_id": settings.OIDC_RP_CLIENT_ID,
            "post_logout_redirect_uri": request.build_absolute_uri(reverse("login")),
        }
    )
    return f"{endpoint}{'&' if '?' in endpoint else '?'}{query}"


@method_decorator(login_not_required, name="dispatch")
class SsoStartView(OIDCAuthenticationRequestView):
    """Sends the browser to the provider's authorization endpoint with a fresh state, nonce and PKCE
    challenge kept in the session (mozilla-django-oidc)."""

    def __init__(self, **kwargs: Any) -> None:
        View.__init__(self, **kwargs)  # the library's reads the endpoint here: discovery waits for get()

    def get(self, request: HttpRequest) -> HttpResponse:
        if not sso.enabled():
            raise Http404("single sign-on is off")
        try:
            self.OIDC_OP_AUTH_ENDPOINT = sso.discovery()["authorization_endpoint"]
        except SsoRefused as refused:
            return refused_page(request, refused)
        self.OIDC_RP_CLIENT_ID = settings.OIDC_RP_CLIENT_ID
        return super().get(request)


@method_decorator(login_not_required, name="dispatch")
class SsoCallbackView(OIDCAuthenticationCallbackView):
    """Where the provider sends the browser back: the library checks the state against the session and
    signs the user in through `config.sso.SsoBackend`; every way it can fail is a page in words."""

    def get(self, request: HttpRequest) -> HttpResponse:
        if not sso.enabled():
            raise Http404("single sign-on is off")
        try:
            return super().get(request)
        except SsoRefused as refused:
            return refused_page(request, refused)
        except SuspiciousOperation:
            # The library's refusal of a state this session did not send (a forged or replayed callback).
            message = (
                "This sign-in answer does not belong to a sign-in started in this browser (its state is "
                "unknown or was used already), so it was refused."
            )
            return refused_page(request, SsoRefused(message, status=400))

    def login_success(self) -> HttpResponse:
        response = super().login_success()
        # The groups claim is read at sign-in only: the session lasts ASSAY_OIDC_SESSION_HOURS at most, so
        # a change at the provider reaches Assay within that time even for someone who never logs out.
        self.request.session.set_expiry(int(settings.ASSAY_OIDC_SESSION_HOURS * 3600))
        return response

    def login_failure(self) -> HttpResponse:
        error = self.request.GET.get("error")
        if error:
            detail = self.request.GET.get("error_description", "")
            message = f"{sso.provider_name()} did not sign you in: {error[:100]}"
            message += f" ({detail[:300]})." if detail else "."
            return refused_page(self.request, SsoRefused(message))
        message = (
            "This sign-in could not be completed: it was not started from this browser's login page, or it "
            "was completed already."
        )
        return refused_page(self.request, SsoRefused(message, status=400))
