"""An OpenAI-compatible chat completions stub for the judge's tests: `tests.support.stub_server`'s
scriptable loopback server keyed by the query text of the prompt's user message.

    with judge_stub() as stub:
        stub.on("refund policy", Reply(status=429, headers={"Retry-After": "1"}), graded(3))

Unscripted queries get a good answer (grade 2). Every request is recorded (headers and body), so tests
assert what the judge sent: the prompts, the model, the Authorization header.
"""

from __future__ import annotations

import json
import re
from typing import Any

from demo.judge_service import chat_completion
from labeling.services.judges import JudgeSettings
from tests.support.stub_server import Recorded, Reply, StubServer

_QUERY = re.compile(r"^Query: (.*)$", re.MULTILINE)


def chat_reply(
    content: str, *, prompt_tokens: int = 100, completion_tokens: int = 10, **kwargs: Any
) -> Reply:
    """A chat completion whose first choice says `content`, with its usage (the demo stand-in's shape)."""
    body = chat_completion(
        content, model="stub", prompt_tokens=prompt_tokens, completion_tokens=completion_tokens
    )
    return Reply(json=body, **kwargs)


def graded(grade: int, reason: str = "fits the rubric", **kwargs: Any) -> Reply:
    return chat_reply(json.dumps({"grade": grade, "reason": reason}), **kwargs)


def user_message(request: Recorded) -> str:
    body = request.json
    return next(m["content"] for m in body["messages"] if m["role"] == "user")


def judge_key(request: Recorded) -> str | None:
    """The query text of the prompt, or None for a request that is not a chat completion."""
    try:
        found = _QUERY.search(user_message(request))
    except (ValueError, KeyError, TypeError, StopIteration):
        return None
    return found.group(1) if found else None


def judge_stub(default: Reply | None = None) -> StubServer:
    return StubServer(key=judge_key, default=default or graded(2))


def judge_settings(url: str, **changes: Any) -> JudgeSettings:
    """A judge of the stub at `url`, without a key, as the tests' forms would fill it in."""
    values: dict[str, Any] = {
        "name": "stub judge",
        "base_url": f"{url}/v1",
        "model": "stub-model",
        "api_key_env": "",
        "temperature": 0.0,
        "concurrency": 2,
        "text_budget": 1000,
        "instructions": "Grade the document.",
        "structured": True,
    }
    return JudgeSettings(**(values | changes))


def try_form(url: str, query_pk: int) -> dict[str, str]:
    """The judge form as a reviewer posts it with the try button, for the stub at `url`."""
    return {
        "name": "tried",
        "base_url": f"{url}/v1",
        "model": "stub-model",
        "api_key_env": "",
        "temperature": "0",
        "concurrency": "2",
        "text_budget": "1000",
        "instructions": "Grade the document.",
        "structured": "on",
        "try_query": str(query_pk),
        "action": "try",
    }
