"""Single sign-on against a real OpenID provider (npm's oidc-provider on loopback, tests/support/oidc.py) and
an Assay server whose settings turn it on (docs/deployment.md, "Single sign-on"): the first sign-in makes
the user with the roles and set lists the groups claim maps to, each sign-in reads the claim again, a
person without a mapped group is refused in words, an ID token wrong in any way is refused, the state is
checked, and logging out ends both sessions. Local accounts sign in beside it."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
from typing import Any
from urllib.parse import parse_qs, urljoin, urlsplit

import pytest
from django.contrib.auth.models import User
from django.contrib.sessions.models import Session
from django.utils import timezone

from labeling import roles
from labeling.models import GoldenSet
from tests import factories
from tests.conftest import PASSWORD
from tests.support.oidc import PROVIDER_NAME, SET, TAMPER_MODES, Browser, SsoStack, account, forms
from tests.support.processes import REPO, free_port

pytestmark = pytest.mark.integration


@pytest.fixture
def help_center(transactional_db: None) -> GoldenSet:
    return factories.GoldenSetFactory.create(slug=SET)


def signed_in_as(browser: Browser) -> str | None:
    """Who the home page greets, or None when it sends the browser to the login page."""
    home = browser.assay_page("/")
    if home.status_code == 302:
        assert "/accounts/login/" in home.headers["Location"]
        return None
    assert home.status_code == 200
    session = Session.objects.get(session_key=browser.http.cookies.get("sessionid"))
    return User.objects.get(pk=session.get_decoded()["_auth_user_id"]).username


def test_the_first_sign_in_makes_the_user_with_the_roles_and_lists_the_claim_maps(
    sso_stack: SsoStack, help_center: GoldenSet
) -> None:
    browser = sso_stack.browser()
    visit = browser.sign_in("rhea", next_page="/queue/")
    assert visit.response.url == f"{sso_stack.assay}/queue/" and visit.response.status_code == 200
    assert any(
        url.startswith(f"{sso_stack.issuer}/interaction/") for url in visit.urls
    )  # the provider's pages

    rhea = User.objects.get(sso_identity__subject="rhea")
    assert signed_in_as(browser) == rhea.username == "rhea"
    assert (rhea.email, rhea.first_name, rhea.last_name) == ("rhea@example.org", "Rhea", "Rater")
    assert not rhea.has_usable_password() and not rhea.is_staff
    assert rhea.sso_identity.issuer == sso_stack.issuer
    assert sorted(rhea.sso_identity.groups) == ["assay-raters", "everyone"]
    assert roles.group_names(rhea) == {"raters"} and roles.rates(rhea, help_center)
    assert not roles.reviews(rhea, help_center)
    # The session lasts ASSAY_OIDC_SESSION_HOURS (2) at most, so the claim is read again within that.
    session = Session.objects.get(session_key=browser.http.cookies.get("sessionid"))
    assert session.expire_date <= timezone.now() + dt.timedelta(hours=2)

    # A second sign-in finds the same user: none is made twice.
    sso_stack.browser().sign_in("rhea")
    assert User.objects.filter(sso_identity__isnull=False).count() == 1


def test_an_admin_gets_the_admin_role_and_the_django_admin(
    sso_stack: SsoStack, help_center: GoldenSet
) -> None:
    browser = sso_stack.browser()
    browser.sign_in("ada")
    ada = User.objects.get(username="ada")
    assert ada.is_staff and not ada.is_superuser and roles.is_admin(ada) and roles.reviews(ada, help_center)
    assert browser.assay_page("/admin/").status_code == 200


def test_a_group_change_at_the_provider_takes_effect_at_the_next_sign_in(
    sso_stack: SsoStack, help_center: GoldenSet
) -> None:
    browser = sso_stack.browser()
    browser.sign_in("reva")
    reva = User.objects.get(username="reva")
    assert roles.reviews(reva, help_center) and browser.assay_page(f"/sets/{SET}/").status_code == 200

    # Moved from the search team to the raters at the provider: nothing changes until reva signs in again.
    sso_stack.set_account("reva", account("reva", "assay-raters"))
    assert roles.reviews(User.objects.get(pk=reva.pk), help_center)
    sso_stack.browser().sign_in("reva")
    reva = User.objects.get(pk=reva.pk)
    assert roles.group_names(reva) == {"raters"}
    assert not roles.reviews(reva, help_center) and roles.rates(reva, help_center)
    assert list(help_center.reviewers.all()) == [] and list(help_center.raters.all()) == [reva]
    # The first browser's session reads the groups afresh at every request: the set's page is gone.
    assert browser.assay_page(f"/sets/{SET}/").status_code == 404

    # Out of every mapped group: refused, and everything the mapping gave is taken away.
    sso_stack.set_account("reva", account("reva", "everyone"))
    refused = sso_stack.browser().sign_in("reva")
    assert refused.response.status_code == 403
    reva = User.objects.get(pk=reva.pk)
    assert roles.group_names(reva) == set() and list(help_center.raters.all()) == []


def test_lists_the_mapping_does_not_name_are_left_as_an_admin_set_them(
    sso_stack: SsoStack, help_center: GoldenSet
) -> None:
    sso_stack.browser().sign_in("rhea")
    rhea = User.objects.get(username="rhea")
    other = factories.GoldenSetFactory.create(slug="billing", raters=[rhea])
    sso_stack.browser().sign_in("rhea")
    assert list(other.raters.all()) == [rhea] and roles.rates(rhea, other)


def test_someone_in_no_mapped_group_is_refused_in_words_and_no_user_is_made(
    sso_stack: SsoStack, help_center: GoldenSet
) -> None:
    browser = sso_stack.browser()
    visit = browser.sign_in("nell")
    assert visit.response.url.startswith(f"{sso_stack.assay}/oidc/callback/")
    assert visit.response.status_code == 403
    assert "Sign-in refused (403)" in visit.text
    assert (
        f"You signed in at {PROVIDER_NAME} as nell, but none of your groups there gives you a role in Assay "
        "(your groups claim: everyone, marketing)"
    ) in visit.text
    assert not User.objects.filter(username="nell").exists() and signed_in_as(browser) is None


def test_a_deactivated_user_is_signed_out_and_refused_in_words(
    sso_stack: SsoStack, help_center: GoldenSet
) -> None:
    signed_in = sso_stack.browser()
    signed_in.sign_in("rhea")
    User.objects.filter(username="rhea").update(is_active=False)
    assert signed_in_as(signed_in) is None  # the open session ends at its next request
    browser = sso_stack.browser()
    visit = browser.sign_in("rhea")
    assert visit.response.status_code == 403
    assert "Your Assay account rhea is deactivated: ask an Assay admin to reactivate it." in visit.text
    assert signed_in_as(browser) is None


@pytest.mark.parametrize(
    ("mode", "why"),
    [
        ("signature", "its signature does not match the provider&#x27;s keys"),
        ("expired", "it has expired"),
        ("nonce", "its nonce is not the one this sign-in sent"),
        ("audience", "it was issued to another client, not &#x27;assay&#x27;"),
        ("issuer", "another issuer signed it"),
    ],
)
def test_an_id_token_wrong_in_any_way_is_refused(
    sso_stack: SsoStack, help_center: GoldenSet, mode: str, why: str
) -> None:
    assert mode in TAMPER_MODES
    browser = sso_stack.browser()
    visit = browser.sign_in(f"tamper-{mode}")
    assert visit.response.status_code == 400
    assert f"The ID token {PROVIDER_NAME} sent was refused: {why}" in visit.text
    assert not User.objects.filter(username=f"tamper-{mode}").exists() and signed_in_as(browser) is None


def test_the_state_is_checked_a_callback_is_taken_once_and_only_in_its_browser(
    sso_stack: SsoStack, help_center: GoldenSet
) -> None:
    browser = sso_stack.browser()
    visit = browser.sign_in("rhea")
    callback = next(url for url in visit.urls if "/oidc/callback/" in url)
    assert visit.response.status_code == 200

    # The same answer again, in the browser it belonged to (replayed): its state was used up.
    replay = browser.walk(callback)
    assert replay.response.status_code == 400
    assert "does not belong to a sign-in started in this browser" in replay.text
    # In another browser (a link sent to someone else): that browser started no sign-in.
    stranger = sso_stack.browser()
    elsewhere = stranger.walk(callback)
    assert elsewhere.response.status_code == 400 and "could not be completed" in elsewhere.text
    assert signed_in_as(stranger) is None
    # A state this browser never sent, beside a sign-in it did start.
    stranger.walk(f"{sso_stack.assay}/oidc/authenticate/")
    forged = stranger.walk(f"{sso_stack.assay}/oidc/callback/?code=abc&state=forged")
    assert forged.response.status_code == 400 and signed_in_as(stranger) is None
    # The provider's refusal (the person pressed cancel) is said in its words.
    cancelled = stranger.walk(
        f"{sso_stack.assay}/oidc/callback/?error=access_denied&error_description=aborted"
    )
    assert cancelled.response.status_code == 403
    assert f"{PROVIDER_NAME} did not sign you in: access_denied (aborted)." in cancelled.text


def test_logging_out_ends_the_assay_session_and_the_providers(
    sso_stack: SsoStack, help_center: GoldenSet
) -> None:
    browser = sso_stack.browser()
    browser.sign_in("rhea")
    # While the provider's session lasts, a new sign-in passes its login form without showing it.
    again = browser.sign_in("rhea")
    assert not any("/interaction/" in url for url in again.urls) and again.response.status_code == 200

    leave = browser.log_out()
    assert leave.status_code == 302
    end_session = urlsplit(leave.headers["Location"])
    assert (
        f"{end_session.scheme}://{end_session.netloc}{end_session.path}" == f"{sso_stack.issuer}/session/end"
    )
    query = parse_qs(end_session.query)
    assert query["post_logout_redirect_uri"] == [f"{sso_stack.assay}/accounts/login/"]
    assert query["client_id"] == ["assay"] and query["id_token_hint"][0].count(".") == 2
    assert signed_in_as(browser) is None  # the Assay session ended before the provider was asked

    # The provider asks for a confirmation, then sends the browser back to Assay's login page.
    confirm = browser.walk(leave.headers["Location"])
    form = next(f for f in forms(confirm.text) if f["id"] == "op.logoutForm")
    back = browser.walk(urljoin(confirm.response.url, form["action"]), {**form["fields"], "logout": "yes"})
    assert back.response.url == f"{sso_stack.assay}/accounts/login/" and back.response.status_code == 200
    # The provider's session is gone: the next sign-in shows its login form again.
    after = browser.sign_in("rhea")
    assert any("/interaction/" in url for url in after.urls) and after.response.status_code == 200


def test_local_accounts_sign_in_beside_single_sign_on_and_are_never_taken_over(
    sso_stack: SsoStack, help_center: GoldenSet, settings: Any
) -> None:
    # The server checks passwords with the project's hasher, not the fast one the tests' own users get.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.PBKDF2PasswordHasher"]
    local = factories.UserFactory.create(username="rhea", groups=["reviewers"])
    local.set_password(PASSWORD)
    local.save()
    password = local.password
    browser = sso_stack.browser()
    login_page = browser.http.get(f"{sso_stack.assay}/accounts/login/?next=/queue/")
    assert f'href="/oidc/authenticate/?next=/queue/">Log in with {PROVIDER_NAME}</a>' in login_page.text
    assert 'name="password"' in login_page.text
    posted = browser.http.post(
        f"{sso_stack.assay}/accounts/login/",
        data={
            "username": "rhea",
            "password": PASSWORD,
            "csrfmiddlewaretoken": browser.http.cookies["csrftoken"],
        },
        headers={"Referer": f"{sso_stack.assay}/accounts/login/"},
        allow_redirects=False,
    )
    assert posted.status_code == 302 and signed_in_as(browser) == "rhea"
    # Logging out of a local account goes nowhere near the provider.
    assert browser.log_out().headers["Location"] == "/accounts/login/"

    # The provider's rhea is another person: she gets a name of her own, the local rhea keeps hers.
    sso_stack.browser().sign_in("rhea")
    provider_rhea = User.objects.get(sso_identity__subject="rhea")
    assert provider_rhea.username == "rhea-2" and provider_rhea.pk != local.pk
    local.refresh_from_db()
    assert roles.group_names(local) == {"reviewers"} and local.password == password


def _check(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=REPO,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("env", "words"),
    [
        (
            {"ASSAY_OIDC_ISSUER": "https://id.example.org", "ASSAY_OIDC_CLIENT_ID": "assay"},
            "ASSAY_OIDC_ISSUER is set: set ASSAY_OIDC_CLIENT_ID and ASSAY_OIDC_CLIENT_SECRET too",
        ),
        (
            {
                "ASSAY_OIDC_ISSUER": "https://id.example.org",
                "ASSAY_OIDC_CLIENT_ID": "assay",
                "ASSAY_OIDC_CLIENT_SECRET": "from-the-environment",
                "ASSAY_OIDC_GROUP_MAP": '{"team": ["raters", "reviewer:help-center"]}',
            },
            "ASSAY_OIDC_GROUP_MAP['team'][1]: 'reviewer:help-center' is not one of",
        ),
        ({"ASSAY_OIDC_ISSUER": "http://id.example.org"}, "ASSAY_OIDC_ISSUER must use https"),
    ],
)
def test_a_mistaken_setting_stops_the_server_from_starting_in_words(env: dict[str, str], words: str) -> None:
    result = _check(env)
    assert result.returncode != 0 and words in result.stderr


def test_single_sign_on_is_off_by_default(client: Any) -> None:
    assert client.get("/oidc/authenticate/").status_code == 404
    assert client.get("/oidc/callback/?code=a&state=b").status_code == 404
    page = client.get("/accounts/login/")
    assert page.status_code == 200 and "Log in with" not in page.content.decode()


def test_a_provider_that_does_not_answer_is_a_page_in_words_and_local_logins_go_on(
    client: Any, settings: Any, rita: User
) -> None:
    settings.ASSAY_OIDC_ISSUER = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    settings.OIDC_RP_CLIENT_ID, settings.OIDC_RP_CLIENT_SECRET = "assay", "from-the-environment"
    settings.AUTHENTICATION_BACKENDS = [*settings.AUTHENTICATION_BACKENDS, "config.sso.SsoBackend"]
    page = client.get("/oidc/authenticate/")
    assert page.status_code == 502
    assert "single sign-on did not answer as expected (reading http://127.0.0.1:" in page.content.decode()
    assert "a local account still signs in" in page.content.decode()
    # A password login never asks the provider anything.
    posted = client.post("/accounts/login/", {"username": "rita", "password": PASSWORD})
    assert posted.status_code == 302 and posted["Location"] == "/"
