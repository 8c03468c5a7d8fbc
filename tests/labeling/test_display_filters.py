"""The `display` template filters every page formats with are assay.display's functions
(tests/assay/test_display.py holds their rules)."""

from __future__ import annotations

from django.template import Context, Template


def test_the_template_filters_are_these_functions() -> None:
    template = Template(
        "{% load display %}{{ p|params }}|{{ g|grades }}|{{ f|finding }}|{{ n|number }}|{{ n|signed }}"
        "|{{ t|threshold }}|{{ o|overrides:p }}"
    )
    text = template.render(
        Context(
            {
                "p": {"rewrite": False},
                "g": [3, 1],
                "f": {"scope": "stratum billing", "message": "stratum billing MRR drop 0.2464"},
                "n": -0.19021,
                "t": 0.015,
                "o": {"rewrite": True},
            }
        )
    )
    assert text == "rewrite=false|1 vs 3|MRR drop 0.2464|-0.1902|-0.1902|0.015|rewrite (target: false)"
