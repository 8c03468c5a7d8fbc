"""Every form that takes an outbound URL (a judge's base URL and its try button, a git export's remote, a
search target's URL) answers a malformed one in words, never a 500 (assay.urls.split_url); no page says
the URL back outside the field it was typed in; and a judge saved with credentials in its base URL before
they were refused does not show them."""

from __future__ import annotations

import tempfile

import pytest
from django.contrib.auth.models import User

from evaluation.models import SearchTarget
from golden_io.models import GitExportConfig
from labeling.models import Assignment, GoldenSet, Judge
from labeling.services import judges
from tests.support.evaluation import logged_in, page_text
from tests.support.judge_stub import judge_settings, try_form

pytestmark = pytest.mark.django_db

MARK = "s3cr3tMARK"
MALFORMED = [
    f"http://[::1/{MARK}?x={MARK}",
    f"http://[zz::1]/{MARK}?x={MARK}",
    f"http://api.example:65536/{MARK}?x={MARK}",
    f"http://api.example:80:80/{MARK}?x={MARK}",
]


def _said_back(text: str, typed: str) -> int:
    """How many times the page says the marker beyond the field holding what was typed."""
    return text.count(MARK) - typed.count(MARK)


@pytest.mark.parametrize("url", MALFORMED)
def test_the_judge_form_refuses_a_malformed_base_url_in_words(
    url: str, golden_set: GoldenSet, assignment: Assignment, rita: User
) -> None:
    client = logged_in(rita)
    form = try_form(url.removesuffix(f"/{MARK}?x={MARK}"), assignment.query.pk) | {"base_url": url}

    tried = client.post(f"/sets/{golden_set.slug}/judges/new/", form)
    saved = client.post(f"/sets/{golden_set.slug}/judges/new/", form | {"action": "save"})

    assert tried.status_code == saved.status_code == 400
    for response in (tried, saved):
        assert "base URL: the URL cannot be read: " in page_text(response)
        assert _said_back(response.content.decode(), url) == 0
    assert not Judge.objects.exists()


@pytest.mark.parametrize("url", MALFORMED)
def test_the_git_export_form_refuses_a_malformed_remote_in_words(
    url: str, golden_set: GoldenSet, rita: User
) -> None:
    form = {
        "repository_path": f"{tempfile.gettempdir()}/golden-pages",
        "branch": "main",
        "file_path": "golden.json",
        "remote_url": url,
        "username_env": "",
        "password_env": "",
    }
    response = logged_in(rita).post(f"/sets/{golden_set.slug}/versions/git/", form)
    assert response.status_code == 422
    assert "remote URL: the URL cannot be read: " in page_text(response)
    assert _said_back(response.content.decode(), url) == 0
    assert not GitExportConfig.objects.exists()


@pytest.mark.parametrize("url", MALFORMED)
def test_the_target_form_refuses_a_malformed_url_in_words(
    url: str, golden_set: GoldenSet, rita: User
) -> None:
    form = {
        "name": "prod-search",
        "adapter": "http_json",
        "url": url,
        "timeout": "5",
        "concurrency": "4",
        "retries": "1",
        "solr_method": "GET",
        "golden_sets": [golden_set.pk],
    }
    response = logged_in(rita).post("/targets/new/", form)
    assert response.status_code == 422
    assert "search URL: the URL cannot be read: " in page_text(response)
    assert _said_back(response.content.decode(), url) == 0
    assert not SearchTarget.objects.exists()


def test_a_judge_saved_with_credentials_before_the_rule_does_not_show_them(
    golden_set: GoldenSet, rita: User
) -> None:
    judge, _ = judges.judge_save(
        golden_set=golden_set, settings=judge_settings("https://api.example"), by=rita
    )
    Judge.objects.filter(pk=judge.pk).update(base_url="https://bot:hunter2@api.example/v1?api-key=hunter3")
    client = logged_in(rita)
    for url in (f"/sets/{golden_set.slug}/judges/", f"/sets/{golden_set.slug}/judges/{judge.pk}/"):
        page = client.get(url).content.decode()
        assert "https://api.example/v1?api-key=%2A%2A%2A" in page, url
        assert "hunter2" not in page and "hunter3" not in page and "bot" not in page, url
