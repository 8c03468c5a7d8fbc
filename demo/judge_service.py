"""The demo's machine judge: a small deterministic stand-in for a language model, speaking the
OpenAI-compatible chat completions contract on loopback (aiohttp), so `make run` shows judges and their
jobs without a model or a key (docs/judge.md).

It is no model: it reads the query and the document out of the prompt Assay sends (the lines
`assay.judge.prompt.user_message` writes) and grades by term overlap, on the rubric's 0-3 scale:

- 3: every query word is in the title;
- 2: half or more of the query words are in the title, or every one is in the title or text;
- 1: some query word is in the title or text;
- 0: none is.

Words are lower-cased runs of letters and digits of 3 or more characters, less a short stopword list.

It serves a second model, `assay-demo-answer-key` (ANSWER_KEY_MODEL), which exists only so the demo can
show a judge that qualifies: for a query of the billing stratum it answers the demo golden file's grade
for the document (demo/golden.json, 0 for a document the file does not judge for that query; about one
in five of its 3s, chosen by a hash of the pair, is answered 2, so it is not a plain copy), so its
agreement with the humans on billing is by construction, not earned; for every other query it answers as
the overlap grader does. Any other model name gets the overlap grader. Queries are found by their text
among the golden file's, documents by their title in demo/corpus.jsonl (both read once, titles unique).

The same prompt always gets the same answer. The pages label a judge backed by it "stand-in".

Run it:  python -m demo.judge_service [--host 127.0.0.1] [--port 8766]
It prints `listening on http://HOST:PORT` once it accepts connections (`--port 0` picks a free port).
Contract: `POST /v1/chat/completions` answers `{"choices": [{"message": {"content":
"{\"grade\": 2, \"reason\": ...}"}}], "usage": {...}}`; `GET /health` answers `{"status": "ok"}`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import re
import zlib
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

from aiohttp import web

from demo.serving import LISTEN_BACKLOG

DEFAULT_PORT = 8766
MODEL = "assay-demo-overlap"
# Demo only: reads the demo golden file's grades for billing, so it qualifies there by construction.
ANSWER_KEY_MODEL = "assay-demo-answer-key"
ANSWER_KEY_STRATUM = "billing"
DEMO = Path(__file__).resolve().parent
GOLDEN = DEMO / "golden.json"
CORPUS = DEMO / "corpus.jsonl"
SLIP_EVERY = 5  # one in about five of its 3s (by a hash of the pair) is answered 2
STOPWORDS = frozenset(
    [
        "the",
        "and",
        "for",
        "with",
        "how",
        "can",
        "you",
        "your",
        "are",
        "not",
        "what",
        "does",
        "from",
        "this",
        "that",
        "when",
        "where",
        "why",
        "who",
        "which",
        "into",
        "about",
    ]
)
_WORD = re.compile(r"[^\W_]{3,}")
_QUERY = re.compile(r"^Query: (.*)$", re.MULTILINE)
_TITLE = re.compile(r"^Document title: (.*)$", re.MULTILINE)
_TEXT = re.compile(r"^Document text:\n(.*)\Z", re.MULTILINE | re.DOTALL)


def words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in STOPWORDS}


def grade(query: str, title: str, text: str) -> tuple[int, str]:
    """The grade and its one-line reason, from the query words found in the title and the text."""
    wanted = words(query)
    if not wanted:
        return 0, "the query has no words to look for"
    in_title, in_either = wanted & words(title), wanted & (words(title) | words(text))
    share = f"{len(in_title)} of {len(wanted)} query words in the title, {len(in_either)} in title or text"
    if in_title == wanted:
        return 3, share
    if 2 * len(in_title) >= len(wanted) or in_either == wanted:
        return 2, share
    if in_either:
        return 1, share
    return 0, share


@cache
def answer_key() -> dict[str, dict[str, int]]:
    """For each billing query of the demo golden file, by its text: the grade of each document it
    judges, by the document's title (from the demo corpus, whose titles are unique)."""
    titles: dict[str, str] = {}
    with CORPUS.open(encoding="utf-8") as lines:
        for line in lines:
            if line.strip():
                document = json.loads(line)
                titles[document["id"]] = document["title"]
    if len(set(titles.values())) != len(titles):
        raise ValueError(f"{CORPUS.name}: document titles are not unique, the answer key cannot use them")
    key: dict[str, dict[str, int]] = {}
    for query in json.loads(GOLDEN.read_text(encoding="utf-8"))["queries"]:
        if query.get("stratum") == ANSWER_KEY_STRATUM:
            key[query["text"]] = {titles[j["doc_id"]]: int(j["grade"]) for j in query.get("judgments", [])}
    return key


def grade_by_key(query: str, title: str, text: str) -> tuple[int, str]:
    """The answer-key model's grade: the golden file's for a billing query, else the overlap grader's."""
    grades = answer_key().get(query)
    if grades is None:
        value, reason = grade(query, title, text)
        return value, f"word overlap: {reason}"
    if title in grades:
        value = grades[title]
        if value == 3 and zlib.crc32(f"{query}\n{title}".encode()) % SLIP_EVERY == 0:
            return 2, "demo answer key: the golden file's 3, answered 2 (a planted slip)"
        return value, "demo answer key: the golden file's grade"
    return 0, "demo answer key: the golden file does not judge this document for this query"


def answer(body: Any) -> tuple[str, int]:
    """The reply's content for a chat completion request, and a rough prompt size in words."""
    prompt = "\n".join(str(m.get("content", "")) for m in body.get("messages", []) if isinstance(m, dict))
    user = next(
        (
            str(m.get("content", ""))
            for m in body.get("messages", [])
            if isinstance(m, dict) and m.get("role") == "user"
        ),
        "",
    )
    found = [pattern.search(user) for pattern in (_QUERY, _TITLE, _TEXT)]
    query, title, text = (m.group(1) if m else "" for m in found)
    grader = grade_by_key if body.get("model") == ANSWER_KEY_MODEL else grade
    value, reason = grader(query, title, text)
    return json.dumps({"grade": value, "reason": reason}), len(prompt.split())


async def completions(request: web.Request) -> web.Response:
    try:
        body = await request.json()
    except ValueError:
        return web.json_response({"error": {"message": "the body is not JSON"}}, status=400)
    if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
        return web.json_response({"error": {"message": "messages: expected a list"}}, status=400)
    content, prompt_tokens = answer(body)
    return web.json_response(
        chat_completion(content, model=str(body.get("model") or MODEL), prompt_tokens=prompt_tokens)
    )


def chat_completion(
    content: str, *, model: str = MODEL, prompt_tokens: int = 0, completion_tokens: int | None = None
) -> dict[str, Any]:
    """A chat completion whose one choice says `content`, with its usage (completion tokens counted as
    the content's words unless given)."""
    completion = len(content.split()) if completion_tokens is None else completion_tokens
    return {
        "id": "chatcmpl-demo",
        "object": "chat.completion",
        "model": model,
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion,
            "total_tokens": prompt_tokens + completion,
        },
    }


async def health(request: web.Request) -> web.Response:
    return web.json_response({"status": "ok", "model": MODEL, "models": [MODEL, ANSWER_KEY_MODEL]})


def make_app() -> web.Application:
    app = web.Application()
    app.router.add_post("/v1/chat/completions", completions)
    app.router.add_get("/health", health)
    return app


async def serve(host: str, port: int) -> None:
    answer_key()  # read the demo's files once, before the first request
    runner = web.AppRunner(make_app(), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port, backlog=LISTEN_BACKLOG)  # demo/serving.py
    await site.start()
    bound = runner.addresses[0][1]
    print(f"listening on http://{host}:{bound}", flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m demo.judge_service", description=__doc__.split("\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="0 picks a free port")
    args = parser.parse_args(argv)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(args.host, args.port))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
