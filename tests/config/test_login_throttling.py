"""Login throttling (django-axes, docs/deployment.md "Login throttling"): five wrong passwords for one
account from one address lock that pair out, even for the right password; other pairs and API tokens
are unaffected; `axes_reset_*` unlocks."""

from __future__ import annotations

from axes.models import AccessAttempt
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client

from tests.conftest import PASSWORD
from tests.support.evaluation import TokenFor, bearer

HERE = "10.0.0.1"


def _login(client: Client, username: str, password: str, address: str = HERE):
    return client.post("/accounts/login/", {"username": username, "password": password}, REMOTE_ADDR=address)


def _signed_in(client: Client) -> bool:
    return client.get("/", REMOTE_ADDR=HERE).status_code == 200


def _fail_five_times(username: str, address: str = HERE) -> None:
    client = Client()
    answers = [_login(client, username, "wrong", address).status_code for _ in range(5)]
    assert answers == [200, 200, 200, 200, 429]  # the login page with its error four times, then locked


def test_five_wrong_passwords_lock_out_even_the_right_one(alice: User) -> None:
    _fail_five_times("alice")
    client = Client()
    response = _login(client, "alice", PASSWORD)
    assert response.status_code == 429
    page = response.content.decode()
    assert "Too many failed logins for <strong>alice</strong> from this address" in page
    assert "after 5 wrong passwords in a row" in page and "Even the right password is refused" in page
    assert not _signed_in(client)


def test_four_wrong_passwords_then_the_right_one_signs_in(alice: User) -> None:
    client = Client()
    for _ in range(4):
        assert _login(client, "alice", "wrong").status_code == 200
    assert _login(client, "alice", PASSWORD).status_code == 302
    assert _signed_in(client)


def test_a_lockout_holds_only_for_its_account_and_address(alice: User, bob: User) -> None:
    _fail_five_times("alice")
    elsewhere = Client()
    assert _login(elsewhere, "alice", PASSWORD, address="10.0.0.2").status_code == 302
    other_account = Client()
    assert _login(other_account, "bob", PASSWORD).status_code == 302
    assert _signed_in(other_account)


def test_the_reset_command_unlocks(alice: User) -> None:
    _fail_five_times("alice")
    call_command("axes_reset_ip_username", HERE, "alice", verbosity=0)
    client = Client()
    assert _login(client, "alice", PASSWORD).status_code == 302
    assert _signed_in(client)


def test_api_tokens_work_for_a_locked_out_account_and_bad_ones_count_no_login_failure(
    rita: User, token_for: TokenFor
) -> None:
    _fail_five_times("rita")
    good = Client().get("/api/v1/golden-sets/", REMOTE_ADDR=HERE, **bearer(token_for(rita)))
    assert good.status_code == 200
    for _ in range(10):
        bad = Client().get("/api/v1/golden-sets/", REMOTE_ADDR=HERE, **bearer("assay_not-a-token"))
        assert bad.status_code == 401
    assert not AccessAttempt.objects.exclude(username="rita").exists()


def test_behind_a_proxy_the_address_it_appends_is_the_one_that_counts(alice: User, settings) -> None:
    settings.ASSAY_CLIENT_IP_HEADER = "X-Forwarded-For"
    proxy = Client(REMOTE_ADDR=HERE)  # every connection comes from the proxy
    for _ in range(5):
        proxy.post(
            "/accounts/login/",
            {"username": "alice", "password": "wrong"},
            HTTP_X_FORWARDED_FOR="198.51.100.1",
        )
    right = {"username": "alice", "password": PASSWORD}
    # A client cannot escape by prepending an address of its own: the proxy's (last) entry counts.
    spoofed = proxy.post("/accounts/login/", right, HTTP_X_FORWARDED_FOR="192.0.2.9, 198.51.100.1")
    assert spoofed.status_code == 429
    assert Client().post("/accounts/login/", right, HTTP_X_FORWARDED_FOR="198.51.100.2").status_code == 302
