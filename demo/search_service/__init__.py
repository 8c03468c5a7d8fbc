"""A small search engine speaking the http_json contract (docs/cli.md): stdlib sqlite3 FTS5 and http.server.

A package of standard-library modules, one per part (`base`: bounds, stopwords, refusals; `corpus`;
`synonyms`; `query`; `index`; `engine`: the search; `server`: HTTP and the command line): it runs as
`python -m demo.search_service` with the standard library only, and the folder stands on its own as a
small engine to read or copy. Every public name is re-exported here.

Run it:  python -m demo.search_service --corpus FILE.jsonl [--host 127.0.0.1] [--port 8765]
         [--synonyms FILE] [--generation ID] [--delay-ms N] [--min-should-match N]
         [--jitter RATE] [--jitter-seed N]
It prints one line `listening on http://HOST:PORT` once it accepts connections (`--port 0` picks a free
port and the line names it).

Contract:
- `POST /search` with `{"q", "filters", "size", "locale", "rewrite"}` answers `{"hits": [{"id", "title",
  "score"}], "meta": {"index_generation", "rewriter", "rewritten_query", "took_ms"}}` and the header
  `X-Index-Generation`. Unknown body keys are ignored (harnesses send stage toggles of other engines).
- `GET /health` answers `{"status": "ok", "documents", "index_generation", "synonyms"}`.
- Two optional body fields tune the ranking of one request (`assay sweep` tries a grid of them):
  `title_weight`, a number from 0 to 20 (default 3: the title's BM25 weight against the body's 1), and
  `min_should_match`, an integer from 1 to 10 (default the server's `--min-should-match`, 3).
- A bad request (not JSON, `q` missing or not a string, `size` not an integer in 1..100, malformed
  `filters`/`locale`/`rewrite`, `title_weight` or `min_should_match` outside its bounds) gets 400 and
  `{"error", "problems": [...]}` naming each bad field (and the bound).

Query semantics, deliberately like a stock Elasticsearch `match` query on a help center:
- The query is lowercased and split into words; a short English/German/French stopword list is dropped.
  Each remaining word is one clause (`"q"`-string in, clauses out: the engine knows nothing of synonyms).
- A document matches when at least `min(clauses, min_should_match)` clauses (default 3) occur in its title
  or body: one- to three-word queries need every word, longer questions need any three.
- Matches are ranked by FTS5's BM25 over title (weight 3, or `title_weight`) and snippet + body (weight 1),
  summed over clauses;
  ties by document id ascending, so the order is deterministic.
- Filters keep documents whose `fields[name]` equals the value (a list value means any of; a list-valued
  field matches when any element does); a missing field never matches. `locale` keeps documents whose
  `fields.locale` equals it (case-insensitive); documents without a locale are kept.
- `"rewrite": true` runs the synonym rewriter *before* the engine: a word with a `replace` rule is swapped
  for its replacement (spelling variants: one word for one word), a word with an `expand` rule is
  followed by its expansions, and the rewritten string is searched as if the user had typed it. Every
  added word is therefore an ordinary clause: it adds its own BM25 term to the score and counts towards
  the minimum-should-match. demo/README.md explains why that erases refunds.

Jitter (off by default): `--jitter RATE` makes the service an engine that moves between runs with nothing
changed, to see a noise floor above 0 (docs/metrics.md, "Noise floor"). The n-th time the server is asked
one request (the same `q`, `filters`, `locale`, `rewrite`, `size`, `title_weight` and `min_should_match`),
its two top hits are swapped when a hash of (`--jitter-seed`, the request, n) falls below RATE: a run of
the golden file sees some queries swapped, the next run others, reproducibly for a fresh server and a
seed, whatever order the requests come in (a sweep's configurations each keep their own count).
`meta.jittered` says whether this reply was swapped. The search itself stays deterministic.
"""

from __future__ import annotations

from demo.search_service.base import (
    BODY_WEIGHT,
    DEFAULT_MIN_SHOULD_MATCH,
    DEFAULT_SIZE,
    DEFAULT_SYNONYMS_PATH,
    MAX_CLAUSES,
    MAX_REQUEST_BYTES,
    MAX_SIZE,
    MIN_SHOULD_MATCH_BOUNDS,
    STOPWORDS,
    TITLE_WEIGHT,
    TITLE_WEIGHT_BOUNDS,
    WORD,
    CorpusError,
    JsonScalar,
    ProblemsError,
    RequestError,
    SynonymsError,
)
from demo.search_service.corpus import Document, check_field_value, load_corpus, parse_corpus, parse_document
from demo.search_service.engine import Hit, SearchResult, filters_match, locale_matches, search
from demo.search_service.index import SearchIndex, build_index, corpus_generation
from demo.search_service.query import SearchRequest, parse_search_request, query_words, rewrite_words
from demo.search_service.server import SearchHandler, SearchServer, main, make_server
from demo.search_service.synonyms import SynonymPack, SynonymRule, load_synonyms, parse_synonyms

__all__ = [
    "BODY_WEIGHT",
    "DEFAULT_MIN_SHOULD_MATCH",
    "DEFAULT_SIZE",
    "DEFAULT_SYNONYMS_PATH",
    "MAX_CLAUSES",
    "MAX_REQUEST_BYTES",
    "MAX_SIZE",
    "MIN_SHOULD_MATCH_BOUNDS",
    "STOPWORDS",
    "TITLE_WEIGHT",
    "TITLE_WEIGHT_BOUNDS",
    "WORD",
    "CorpusError",
    "Document",
    "Hit",
    "JsonScalar",
    "ProblemsError",
    "RequestError",
    "SearchHandler",
    "SearchIndex",
    "SearchRequest",
    "SearchResult",
    "SearchServer",
    "SynonymPack",
    "SynonymRule",
    "SynonymsError",
    "build_index",
    "check_field_value",
    "corpus_generation",
    "filters_match",
    "load_corpus",
    "load_synonyms",
    "locale_matches",
    "main",
    "make_server",
    "parse_corpus",
    "parse_document",
    "parse_search_request",
    "parse_synonyms",
    "query_words",
    "rewrite_words",
    "search",
]
