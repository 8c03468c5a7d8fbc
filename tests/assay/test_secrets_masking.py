"""assay.secrets.mask_secrets: every form a reply may quote a secret in is masked, and nothing else."""

from __future__ import annotations

import json

from assay.secrets import MASK_MIN_LENGTH, mask_secrets, mask_secrets_bytes


def test_a_secret_is_masked_as_is_and_as_a_json_string_writes_it() -> None:
    secret = 'sk/é"x-7f3a'
    reply = json.dumps({"a": secret, "b": f"Bearer {secret}"}) + json.dumps({"c": secret}, ensure_ascii=False)
    slashed = json.dumps(secret).replace("/", "\\/")
    masked = mask_secrets(reply + slashed + secret, [secret])
    assert "7f3a" not in masked and masked.count("***") == 5
    assert json.loads(mask_secrets(json.dumps({"a": secret}), [secret])) == {"a": "***"}
    assert mask_secrets_bytes(reply.encode(), [secret]).count(b"***") == 3


def test_a_secret_holding_another_is_masked_whole_and_short_values_are_left_alone() -> None:
    assert mask_secrets("token abcdef-123456 end", ["abcdef", "abcdef-123456"]) == "token *** end"
    short = "x" * (MASK_MIN_LENGTH - 1)
    assert mask_secrets(f"id {short}", [short, ""]) == f"id {short}"
    assert mask_secrets(
        "see https://hooks.example/T0/s3cr3t", ["https://hooks.example/T0/s3cr3t"], "$HOOK"
    ) == ("see $HOOK")
