"""Single sign-on's pure rules (assay/sso.py): the group mapping read with every mistake placed, the groups
claim found where providers put it, the grants of a person's values, the username a first sign-in takes,
and the issuers taken."""

from __future__ import annotations

import pytest

from assay.sso import (
    ROLES,
    Grants,
    SignIn,
    claim_values,
    discovery_url,
    issuer_problem,
    origin,
    parse_group_map,
    username_base,
)

MAP = parse_group_map(
    '{"assay-raters": ["raters:help-center", "raters:billing"], "search-team": "reviewers:help-center",'
    ' "assay-admins": ["admins"], "everyone": ["raters"]}'
)


def test_the_role_names_are_labeling_s() -> None:
    from labeling import roles

    assert (roles.RATERS, roles.REVIEWERS, roles.ADMINS) == ROLES


def test_a_set_list_grants_its_role_and_grants_add_up_over_the_values() -> None:
    assert MAP.grants_for(["assay-raters"]) == Grants(
        roles=frozenset({"raters"}), rates=frozenset({"help-center", "billing"})
    )
    both = MAP.grants_for(["search-team", "assay-admins", "unmapped"])
    assert both == Grants(roles=frozenset({"reviewers", "admins"}), reviews=frozenset({"help-center"}))
    assert MAP.grants_for(["unmapped", "marketing"]).empty and MAP.grants_for([]).empty
    assert MAP.rated_slugs == {"help-center", "billing"} and MAP.reviewed_slugs == {"help-center"}


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("", "ASSAY_OIDC_GROUP_MAP is not JSON: invalid JSON at line 1 column 1"),
        ("{}", "ASSAY_OIDC_GROUP_MAP must be a JSON object from a groups claim value to a list of grants"),
        ('["raters"]', "must be a JSON object"),
        ('{"team": []}', "ASSAY_OIDC_GROUP_MAP['team']: a list of grants, each one of"),
        (
            '{"team": ["raters", "rater"]}',
            'ASSAY_OIDC_GROUP_MAP[\'team\'][1]: \'rater\' is not one of "raters", "reviewers", "admins", '
            '"raters:<set slug>", "reviewers:<set slug>"',
        ),
        ('{"team": ["admins:help-center"]}', "['team'][0]: 'admins:help-center' is not one of"),
        ('{"team": ["raters:"]}', "['team'][0]: 'raters:' is not one of"),
        ('{"team": ["raters:a b"]}', "['team'][0]: 'raters:a b' is not one of"),
        ('{"team": [3]}', "['team'][0]: 3 is not a string"),
    ],
)
def test_a_mistaken_mapping_is_refused_naming_its_place(text: str, words: str) -> None:
    with pytest.raises(ValueError, match=None) as refused:
        parse_group_map(text)
    assert words in str(refused.value)


@pytest.mark.parametrize(
    ("claims", "claim", "values"),
    [
        ({"groups": ["a", "b"]}, "groups", ["a", "b"]),
        ({"groups": "a"}, "groups", ["a"]),
        ({"groups": ["a", 3, None, {"x": 1}]}, "groups", ["a"]),  # only strings are group names
        ({"groups": {"a": True}}, "groups", []),
        ({}, "groups", []),
        # Keycloak's realm roles, under a dotted path.
        ({"realm_access": {"roles": ["assay-admins"]}}, "realm_access.roles", ["assay-admins"]),
        ({"realm_access": ["x"]}, "realm_access.roles", []),
        # A claim whose name holds dots (a namespaced claim) is read by its whole name first.
        ({"https://example.org/groups": ["a"]}, "https://example.org/groups", ["a"]),
    ],
)
def test_the_groups_claim_is_found_where_providers_put_it(
    claims: dict, claim: str, values: list[str]
) -> None:
    assert claim_values(claims, claim) == values


def test_a_sign_in_reads_its_values_and_grants() -> None:
    sign_in = SignIn.read(
        issuer="https://id.example.org",
        claims={"sub": 42, "groups": ["search-team", "x"]},
        claim="groups",
        group_map=MAP,
    )
    assert (sign_in.subject, sign_in.values) == ("42", ("search-team", "x"))
    assert sign_in.grants.roles == {"reviewers"}


@pytest.mark.parametrize(
    ("claims", "name"),
    [
        ({"sub": "s1", "preferred_username": "ann.lee", "email": "x@example.org"}, "ann.lee"),
        ({"sub": "s1", "email": "ann.lee@example.org"}, "ann.lee"),
        ({"sub": "s1", "preferred_username": "Ann Lee/ops"}, "Ann-Lee-ops"),
        ({"sub": "s1", "preferred_username": "bad\x00name", "email": "ok@example.org"}, "ok"),
        ({"sub": "00u1abc"}, "sso-00u1abc"),
        ({"sub": "s1", "preferred_username": "x" * 400}, "x" * 142),
    ],
)
def test_a_first_sign_in_takes_a_username_django_can_hold(claims: dict, name: str) -> None:
    assert username_base(claims) == name


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("https://id.example.org/realms/assay", None),
        ("https://dev-123.okta.com/oauth2/default", None),
        ("https://tenant.auth0.example/", None),
        ("http://127.0.0.1:8080", None),
        ("http://localhost:8080/realms/test", None),
        ("http://id.example.org", "must use https"),
        ("ftp://id.example.org", "must be the provider's https URL"),
        ("id.example.org", "must be the provider's https URL"),
        ("https://id.example.org:99999", "must be the provider's https URL"),
        ("https://id.example.org/?tenant=1", "must have no query or fragment"),
    ],
)
def test_the_issuer_is_an_https_url(url: str, words: str | None) -> None:
    problem = issuer_problem(url)
    assert (problem is None) if words is None else (problem is not None and words in problem)


def test_discovery_is_read_below_the_issuer_and_the_policy_names_its_origin() -> None:
    assert discovery_url("https://tenant.auth0.example/") == (
        "https://tenant.auth0.example/.well-known/openid-configuration"
    )
    assert discovery_url("https://id.example.org/realms/assay") == (
        "https://id.example.org/realms/assay/.well-known/openid-configuration"
    )
    assert origin("https://id.example.org:8443/realms/assay") == "https://id.example.org:8443"
