"""The engine's bounds and defaults, its stopwords and word splitter, and its refusals (each naming
every problem at once).

Part of `demo.search_service` (its docstring has the contract and the query semantics).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

DEFAULT_SIZE = 10
MAX_SIZE = 100
DEFAULT_MIN_SHOULD_MATCH = 3
TITLE_WEIGHT = 3.0
# The per-request tuning parameters (`title_weight`, `min_should_match`) and their bounds: a sweep tries
# values within them, and a value outside gets a 400 naming the bound rather than a silent clamp.
TITLE_WEIGHT_BOUNDS = (0.0, 20.0)
MIN_SHOULD_MATCH_BOUNDS = (1, 10)
BODY_WEIGHT = 1.0
MAX_REQUEST_BYTES = 1 << 20
# Like Lucene's max clause count: one index lookup per clause, so an unbounded query is a denial of service.
MAX_CLAUSES = 256
DEFAULT_SYNONYMS_PATH = Path(__file__).parent.with_name("synonyms.json")

# Small on purpose: a word that carries meaning in a help center ("plan", "return", "account") must never
# be here, because a dropped word cannot match. German and French lists cover the localized articles;
# s, t, ll, ... are what the word splitter leaves of English contractions ("can't" -> "can", "t").
_STOPWORD_TEXT = """
    a an and are as at be been but by can could did do does for from had has have how i if in into is it
    no not s t d ll re ve m
    its me my of on or our so than that the their them then there these they this to was we were what
    when where which who why will with would you your yours
    am auf aus bei das dem den der des die ein eine einem einen einer es für hat ich ihr im ist kann mein
    meine mit nicht oder sie sind und von was wie wo zu zum zur
    au aux avec ce ces dans de des du elle en est et il je la le les leur ma mes mon ne ou par pas pour
    que qui sa se son sur un une vos votre
"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())

WORD = re.compile(r"[^\W_]+")
JsonScalar = str | int | float | bool | None


class ProblemsError(ValueError):
    """Every problem found at once, each naming its place (`line 4: id: ...`)."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        super().__init__("; ".join(self.problems))


class CorpusError(ProblemsError):
    pass


class SynonymsError(ProblemsError):
    pass


class RequestError(ProblemsError):
    pass
