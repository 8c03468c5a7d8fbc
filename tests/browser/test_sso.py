"""Single sign-on in Chromium against the real provider (tests/support/oidc.py): the login page's button,
the provider's own sign-in and consent pages, back to the page asked for, then "Log out" through the
provider's end-session confirmation back to Assay's login page. The logout form's redirect to the provider
is allowed by the Content-Security-Policy's form-action (config/settings.py), which Chromium enforces; the
login page with both ways of signing in, and a refusal, have no accessibility violation."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import Page

from tests import factories
from tests.browser.test_accessibility import axe_violations, described
from tests.support.oidc import PROVIDER_NAME, SET, SsoStack

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def sign_in_at_the_provider(page: Page, login: str) -> None:
    page.fill("input[name=login]", login)
    page.fill("input[name=password]", "any")
    page.click("button[type=submit]")
    page.click("button:has-text('Continue')")  # the consent page


def test_a_person_signs_in_at_the_provider_and_logs_out_of_both(sso_stack: SsoStack, page: Page) -> None:
    factories.GoldenSetFactory.create(slug=SET)
    blocked: list[str] = []
    page.on(
        "console",
        lambda message: blocked.append(message.text) if "Content Security" in message.text else None,
    )

    page.goto(f"{sso_stack.assay}/queue/")
    page.wait_for_url(f"{sso_stack.assay}/accounts/login/?next=/queue/")
    assert not axe_violations(page), described(axe_violations(page))
    page.click(f"text=Log in with {PROVIDER_NAME}")
    page.wait_for_url(f"{sso_stack.issuer}/interaction/**")
    sign_in_at_the_provider(page, "rhea")
    page.wait_for_url(f"{sso_stack.assay}/queue/")
    assert User.objects.get(username="rhea").groups.filter(name="raters").exists()

    page.click("button:has-text('Log out')")
    page.wait_for_url(f"{sso_stack.issuer}/session/end**")
    page.click("button[value=yes]")
    page.wait_for_url(f"{sso_stack.assay}/accounts/login/")
    assert blocked == []


def test_a_refusal_is_a_page_in_words(sso_stack: SsoStack, page: Page) -> None:
    page.goto(f"{sso_stack.assay}/accounts/login/")
    page.click(f"text=Log in with {PROVIDER_NAME}")
    sign_in_at_the_provider(page, "nell")
    page.wait_for_url(f"{sso_stack.assay}/oidc/callback/**")
    assert "none of your groups there gives you a role in Assay" in page.inner_text("#error-message")
    assert not axe_violations(page), described(axe_violations(page))
