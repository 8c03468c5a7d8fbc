"""The admin's "Revoke the selected tokens" action (evaluation/admin.py): it revokes the tokens not yet
revoked and says how many, the noun in the number it takes ("1 token revoked.", "2 tokens revoked.")."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from evaluation.models import ApiToken
from evaluation.runs.tokens import api_token_create
from tests.support.evaluation import logged_in, page_text

pytestmark = pytest.mark.django_db


def test_revoking_tokens_in_the_admin_counts_those_it_revoked(rita: User) -> None:
    root = User.objects.create_superuser("root", "root@example.org", "pw")
    tokens = [api_token_create(user=rita, name=f"ci-{i}", scopes=["read"])[0] for i in range(3)]
    url = "/admin/evaluation/apitoken/"

    def revoke(chosen: list[ApiToken]) -> str:
        response = logged_in(root).post(
            url, {"action": "revoke", "_selected_action": [t.pk for t in chosen]}, follow=True
        )
        assert response.status_code == 200
        return page_text(response)

    assert "1 token revoked." in revoke(tokens[:1])
    assert "2 tokens revoked." in revoke(tokens)  # the first one already was
    assert ApiToken.objects.filter(revoked__isnull=True).count() == 0
