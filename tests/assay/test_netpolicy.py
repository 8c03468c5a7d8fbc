"""Targets reach public addresses only, unless the operator allows private ones (assay.netpolicy): judged
on the URL when a target is saved or a run is configured, and on what a name resolves to per request."""

from __future__ import annotations

import ipaddress
import re

import pytest

from assay.golden.model import GoldenQuery
from assay.harness import search_all_sync
from assay.harness_config import HarnessConfig
from assay.netpolicy import (
    ALLOW_PRIVATE_ENV,
    host_problem,
    literal_address,
    normalise_host,
    private_targets_allowed,
    resolved_problem,
    url_hosts,
    url_problem,
)
from assay.targets import TargetSpec, spec_problems
from tests.support.stub_server import StubServer, hits_reply

REFUSED = [
    ("127.0.0.1", "loopback"),
    ("127.8.9.10", "loopback"),
    ("::1", "loopback"),
    ("169.254.169.254", "link-local"),
    ("fe80::1", "link-local"),
    ("10.0.0.5", "private"),
    ("172.16.3.4", "private"),
    ("192.168.10.4", "private"),
    ("fd00::5", "private"),
    ("0.0.0.0", "unspecified"),  # noqa: S104  (an address refused, not bound)
    ("::", "unspecified"),
    ("::ffff:127.0.0.1", "loopback"),
    ("::ffff:169.254.169.254", "link-local"),
    ("::ffff:10.0.0.5", "private"),
    ("64:ff9b::a9fe:a9fe", "link-local"),  # NAT64 of 169.254.169.254
    # Every other embedding of an IPv4 address in IPv6 is judged by the embedded address:
    ("2002:7f00:1::", "loopback"),  # 6to4 (2002::/16, bits 16-48) of 127.0.0.1
    ("2002:a9fe:a9fe::1", "link-local"),  # 6to4 of 169.254.169.254
    ("2002:a00:5::", "private"),  # 6to4 of 10.0.0.5
    ("64:ff9b:1::a9fe:a9fe", "link-local"),  # local-use NAT64 (64:ff9b:1::/48), a /96 prefix
    ("64:ff9b:1:7f00:0:100::", "loopback"),  # local-use NAT64 with a /48 prefix (RFC 6052 bits 48-88)
    ("::127.0.0.1", "loopback"),  # IPv4-compatible
    ("::a9fe:a9fe", "link-local"),
    ("::ffff:0:a00:5", "private"),  # IPv4-translated (::ffff:0:0:0/96)
    ("2001:0:4136:e378:8000:63bf:80ff:fffe", "loopback"),  # Teredo: the client 127.0.0.1, bits inverted
    ("2001:0:4136:e378:8000:63bf:5601:5601", "link-local"),  # Teredo client 169.254.169.254
    ("100.64.0.1", "reserved"),
    ("224.0.0.1", "reserved"),
]
# The same embeddings of a public address (93.184.216.34) are judged by it, and pass.
PUBLIC = [
    "93.184.216.34",
    "2606:4700:4700::1111",
    "search.example.com",
    "2002:5db8:d822::1",
    "64:ff9b:1::5db8:d822",
    "2001:0:4136:e378:8000:63bf:a247:27dd",
]


def url_of(host: str) -> str:
    return f"http://[{host}]:9200/search" if ":" in host else f"http://{host}:9200/search"


@pytest.fixture
def private_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ALLOW_PRIVATE_ENV, "false")


@pytest.mark.parametrize(("host", "kind"), REFUSED)
def test_each_kind_of_address_is_refused_with_its_name(host: str, kind: str) -> None:
    problem = host_problem(host)
    assert problem is not None and re.search(rf"is an? {kind}\b", problem)
    assert f"{ALLOW_PRIVATE_ENV}=true" in problem
    resolved = resolved_problem("search.example.com", host)
    assert resolved is not None
    assert re.search(rf"search\.example\.com resolves to {re.escape(host)}, which is an? {kind}\b", resolved)


@pytest.mark.parametrize("host", PUBLIC)
def test_public_addresses_and_names_pass(host: str) -> None:
    assert host_problem(host) is None
    if host[0].isdigit():
        assert resolved_problem("search.example.com", host) is None


@pytest.mark.parametrize(
    ("host", "kind"), [*REFUSED, ("localhost", "loopback"), ("api.localhost", "loopback")]
)
@pytest.mark.usefixtures("private_refused")
def test_a_target_on_a_refused_address_is_not_saved(host: str, kind: str) -> None:
    problems = spec_problems(TargetSpec(name="t", url=url_of(host)))
    assert len(problems) == 1 and problems[0].startswith("search URL: host ")
    assert re.search(rf"is an? {kind}\b", problems[0])


@pytest.mark.parametrize("host", ["127.0.0.1", "10.0.0.5", "169.254.169.254", "::1", "localhost"])
def test_the_operator_allows_private_addresses(monkeypatch: pytest.MonkeyPatch, host: str) -> None:
    monkeypatch.setenv(ALLOW_PRIVATE_ENV, "true")
    assert spec_problems(TargetSpec(name="t", url=url_of(host))) == []


def test_private_addresses_are_refused_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ALLOW_PRIVATE_ENV, raising=False)
    assert private_targets_allowed() is False
    assert HarnessConfig(url="http://93.184.216.34/s").allow_private is False
    with pytest.raises(
        ValueError, match=re.escape("search URL: host 169.254.169.254 is a link-local address")
    ):
        HarnessConfig(url="http://169.254.169.254/latest/meta-data/")


def test_a_malformed_flag_is_an_error_that_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ALLOW_PRIVATE_ENV, "maybe")
    with pytest.raises(ValueError, match=re.escape(f"{ALLOW_PRIVATE_ENV}='maybe': expected true or false")):
        private_targets_allowed()


def test_a_name_resolving_to_loopback_is_refused_at_request_time(stub_server: StubServer) -> None:
    stub_server.on("q", hits_reply(["d1"]))
    query = GoldenQuery("q-1", "q", ())
    allowed = HarnessConfig(url=f"http://localhost:{stub_server.port}/s", retries=2, allow_private=True)
    # `localhost` stands for any name that passed the URL check and whose DNS answer is (or becomes, by
    # rebinding) private: the URL check refuses it by name, so the flag is turned off past that check.
    refusing = HarnessConfig(url="http://93.184.216.34/s", retries=2, allow_private=False)
    object.__setattr__(refusing, "url", allowed.url)
    assert refusing.allow_private is False

    (result,) = search_all_sync([query], refusing)

    assert result.error is not None and not result.ok
    assert result.error.startswith("host localhost resolves to ")
    assert "which is a loopback address" in result.error and f"{ALLOW_PRIVATE_ENV}=true" in result.error
    assert result.attempts == 1  # refused, not retried: the answer would be the same
    assert stub_server.requests == []  # no connection was made
    (ok,) = search_all_sync([query], allowed)
    assert ok.ok and ok.ids == ("d1",)


# Each form a resolver or an HTTP stack turns into a refused address, with the address it becomes.
DISGUISED = [
    ("１２７.０.０.１", "127.0.0.1"),  # full-width digits (NFKC)
    ("127。0。0。1", "127.0.0.1"),  # ideographic full stops (IDNA label separators)
    ("127．0．0．1", "127.0.0.1"),
    ("127｡0｡0｡1", "127.0.0.1"),
    ("①⑥⑨.②⑤④.①⑥⑨.②⑤④", "169.254.169.254"),  # circled digits
    ("𝟏𝟎.𝟎.𝟎.𝟓", "10.0.0.5"),  # mathematical bold digits
    ("2130706433", "127.0.0.1"),  # decimal
    ("0x7f000001", "127.0.0.1"),  # hex
    ("0177.0.0.1", "127.0.0.1"),  # octal
    ("127.1", "127.0.0.1"),  # short form
    ("0", "0.0.0.0"),  # noqa: S104  (an address refused, not bound)
    ("127.0.0.1.", "127.0.0.1"),  # trailing dot
    ("127.0.0.1%2e", "127.0.0.1"),  # percent-encoded trailing dot (urllib3 decodes it)
    ("[fe80::1%25eth0]", "fe80::1"),  # zone id
    ("[64:ff9b::a9fe:a9fe]", "64:ff9b::a9fe:a9fe"),  # NAT64 of 169.254.169.254
    # Characters a resolver ignores (IDNA maps them to nothing): removed before the host is judged.
    ("127.0.0.\u00ad1", "127.0.0.1"),  # soft hyphen
    ("127.0.\u200b0.1", "127.0.0.1"),  # zero-width space
    ("1\u200c27.0.0.1\u200d", "127.0.0.1"),  # zero-width non-joiner and joiner
    ("10.0.0.\u20605", "10.0.0.5"),  # word joiner
    ("\ufeff169.254.169.254", "169.254.169.254"),  # byte order mark (zero-width no-break space)
    ("127.0.0.1\U000e0041", "127.0.0.1"),  # a tag character (category Cf)
    ("127.0.0.%C2%AD1", "127.0.0.1"),  # a percent-encoded soft hyphen
]


@pytest.mark.parametrize(("host", "becomes"), DISGUISED)
def test_a_disguised_address_is_read_as_the_address_it_becomes(host: str, becomes: str) -> None:
    assert literal_address(normalise_host(host)) == ipaddress.ip_address(becomes)
    problem = host_problem(host)
    assert problem is not None and "address; Assay may reach public addresses only" in problem


@pytest.mark.parametrize(
    "host",
    [
        "localhost.",
        "LOCALHOST",
        "ｌｏｃａｌｈｏｓｔ",
        "api.localhost.",
        "local\u00adhost",
        "local\u200bhost",
        "\u2060localhost",
        "localhost\ufeff",
        "loca\u034flhost",  # combining grapheme joiner: IDNA 2003 maps it to nothing too
        "local\ufe0fhost",  # a variation selector
    ],
)
def test_every_spelling_of_localhost_is_loopback(host: str) -> None:
    problem = host_problem(host)
    assert problem is not None and "is a loopback address" in problem


def test_an_invisible_character_is_shown_in_the_refusal() -> None:
    """The person who typed it cannot see it: the message spells it out."""
    assert host_problem("local\u00adhost") == (
        "host local\\u00adhost (read as localhost) is a loopback address; Assay may reach public "
        f"addresses only (the operator allows private ones with {ALLOW_PRIVATE_ENV}=true)"
    )


@pytest.mark.parametrize("host", ["example..com", ".example.com", "a" * 64 + ".example.com"])
def test_a_name_no_resolver_can_look_up_is_refused(host: str) -> None:
    assert host_problem(host) == f"host {host} is not a valid host name"


@pytest.mark.parametrize(
    "host", ["bücher.de", "xn--bcher-kva.de", "search.example.com", "1e100.net", "deadbeef"]
)
def test_names_including_international_ones_pass_to_be_judged_at_connect(host: str) -> None:
    assert host_problem(host) is None


def test_every_parser_reading_of_the_host_is_judged() -> None:
    """urlsplit reads `evil.example` here, urllib3 `127.0.0.1`: the URL is refused for the latter."""
    url = "http://127.0.0.1\\@evil.example/x"
    assert set(url_hosts(url, ["urllib3"])) == {"evil.example", "127.0.0.1"}
    problem = url_problem(url, clients=["urllib3"], allow_private=False)
    assert problem is not None and "host 127.0.0.1 is a loopback address" in problem
    assert url_problem(url, clients=["urllib3"], allow_private=True) is None


def test_the_cli_default_applies_only_when_the_switch_is_not_set() -> None:
    assert private_targets_allowed({}, default=True) is True
    assert private_targets_allowed({ALLOW_PRIVATE_ENV: "false"}, default=True) is False
    assert private_targets_allowed({ALLOW_PRIVATE_ENV: ""}, default=True) is False
