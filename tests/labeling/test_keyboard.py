"""The rater pages' one keyboard language (labeling/keyboard.py): docs/labeling.md's "Keyboard" table is
the table; no key means two things; each rater page's help, line of keys and script map come from it.
Pressing the keys in a browser: tests/browser/test_keyboard.py."""

from __future__ import annotations

import html
import json
import re
from collections import Counter

import pytest
from django.contrib.auth.models import User
from django.test import Client

from assay.sxs import REASONS
from evaluation.studies.models import StudyTask
from evaluation.studies.services import ALREADY, StudySpec, study_create
from labeling.keyboard import GRADING, KEYS, PAGES, REASON_KEYS, SXS, key_of, keys_markdown, page_keys
from labeling.models import Assignment, GoldenSet
from tests.conftest import REPO
from tests.support.studies import two_runs


def _section(doc: str, heading: str) -> str:
    text = (REPO / "docs" / doc).read_text(encoding="utf-8")
    return text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]


def test_the_docs_keyboard_table_is_the_table() -> None:
    assert keys_markdown() in _section("labeling.md", "Keyboard"), (
        "docs/labeling.md's Keyboard table is not labeling/keyboard.py's; it should read:\n" + keys_markdown()
    )


def test_no_key_means_two_things_and_every_page_has_help_and_close() -> None:
    pressed = Counter(k for key in KEYS for k in key.keys)
    assert [k for k, n in pressed.items() if n > 1] == []
    actions: dict[str, list[str | None]] = {}
    for key in KEYS:
        assert set(key.does) <= set(PAGES) and key.does, key
        # Rows share an action only as the reason tags do (one action, a tag each).
        actions.setdefault(key.action, []).append(key.arg)
    assert all(len(args) == len(set(args)) for args in actions.values())
    for page in PAGES:
        assert {"help", "close", "next_query", "answer", "note", "undo", "submit"} <= {
            key.action for key in KEYS if page in key.does
        }


def test_every_reason_tag_has_a_letter_no_other_key_has() -> None:
    assert set(REASON_KEYS) == set(REASONS)
    tags = {key.arg: key.keys for key in KEYS if key.action == "reason"}
    assert tags == {tag: (REASON_KEYS[tag],) for tag in REASONS}


def test_a_page_gets_its_own_rows_and_its_scale_as_digits() -> None:
    grading = page_keys(GRADING, [0, 1, 2, 3])
    assert grading.digits == ["0", "1", "2", "3"]
    assert grading.keymap["2"] == ("answer", 2) and grading.keymap["ArrowDown"] == ("next_item", None)
    assert "r" not in grading.keymap and "h" not in grading.keymap
    assert grading.rows[0].shown == ("0", "3") and grading.rows[0].span
    assert grading.key["next_item"] == "j" and grading.key["close"] == "Esc"
    sxs = page_keys(SXS, list(range(1, 8)))
    assert sxs.keymap["s"] == ("reason", "duplicates") and sxs.keymap["h"] == ("junk_left", None)
    assert "d" not in sxs.keymap and "j" not in sxs.keymap and "x" not in sxs.keymap
    # A scale past 9 keys only its single digits: no key types "10".
    assert page_keys(GRADING, list(range(0, 11))).digits == [str(d) for d in range(10)]
    assert [row.action for row in sxs.rows] == [key.action for key in KEYS if SXS in key.does]
    with pytest.raises(ValueError, match="no page 'queue' has keys"):
        page_keys("queue", [])


def test_words_that_name_a_key_name_the_table_s() -> None:
    assert (key_of("undo"), key_of("close"), key_of("next_item")) == ("u", "Esc", "j")
    assert f"undo ({key_of('undo')}) first" in ALREADY


def _keymap(body: str) -> dict[str, list[object]]:
    found = re.search(r'<script id="keymap" type="application/json">(.*?)</script>', body, re.S)
    assert found, "no #keymap on the page"
    return dict(json.loads(found.group(1)))


def _help_rows(body: str) -> list[tuple[str, str, str]]:
    dialog = body.split('<dialog class="keys-help" id="help"', 1)[1].split("</dialog>", 1)[0]
    rows = re.findall(
        r'<tr data-action="([^"]+)"><td class="keys-cell">.*?</td>'
        r"<td><strong>(.*?)</strong>: (.*?)</td></tr>",
        dialog,
    )
    return [(action, html.unescape(name), html.unescape(does)) for action, name, does in rows]


def _expected(page: str, digits: list[int]) -> tuple[dict[str, list[object]], list[tuple[str, str, str]]]:
    keys = page_keys(page, digits)
    return {k: list(v) for k, v in keys.keymap.items()}, [
        (row.action, row.name, row.does) for row in keys.rows
    ]


@pytest.mark.django_db
def test_the_grading_page_draws_its_help_line_and_map_from_the_table(
    assignment: Assignment, alice: User
) -> None:
    client = Client()
    client.force_login(alice)
    body = client.get(f"/assignments/{assignment.pk}/").content.decode()
    scale = list(assignment.query.golden_set.rubric.scale)
    keymap, rows = _expected(GRADING, scale)
    assert _keymap(body) == keymap
    assert _help_rows(body) == rows
    line = body.split('id="keys-line">', 1)[1].split("</p>", 1)[0]
    assert [html.unescape(n) for n in re.findall(r"</kbd> ([^<·]+?)(?: · |$)", line)] == [
        key.name for key in KEYS if GRADING in key.does
    ]
    assert "Next query (n)" in body and "Can't judge (x)" in body


@pytest.mark.django_db
def test_the_side_by_side_page_draws_its_help_line_and_map_from_the_table(
    golden_set: GoldenSet, rita: User, alice: User
) -> None:
    run_a, run_b = two_runs(golden_set, 2)
    study = study_create(
        spec=StudySpec(run_a=run_a, run_b=run_b, raters=[alice], seed=1, answers_per_query=1), by=rita
    )
    task = StudyTask.objects.filter(study=study).order_by("token").first()
    assert task is not None
    client = Client()
    client.force_login(alice)
    body = client.get(f"/sxs/{task.token}/").content.decode()
    keymap, rows = _expected(SXS, list(range(1, 8)))
    assert _keymap(body) == keymap
    assert _help_rows(body) == rows
    for tag in REASONS:  # each tag's box shows its key
        assert re.search(rf'value="{tag}"[^>]*> <kbd>{REASON_KEYS[tag]}</kbd>', body)
    assert "<kbd>h</kbd> in L's top three" in body and "<kbd>l</kbd> in R's top three" in body
