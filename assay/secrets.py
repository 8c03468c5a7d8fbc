"""What stored settings may reach on the machine that acts on them (pure, no Django).

A search target's secret header, its notification webhook's URL and a git export's credentials are
stored as environment variable NAMES, read by the worker when it calls out (`secret_env_read`). Without
a limit a user who may edit those settings could name any variable of the worker (`DJANGO_SECRET_KEY`,
`DATABASE_URL`) and have it sent to a server of their choosing. So only variables whose names start
with `ASSAY_SECRET_ENV_PREFIX` (default `ASSAY_SECRET_`) may be named. Likewise a git export (its
repository and a local remote) may only write below the directories listed in `ASSAY_GIT_EXPORT_ROOTS`
(separated by the OS path separator; default `<ASSAY_VAR_DIR>/git`), never into the app's own checkout
or anywhere else the server can write. Both are read from the environment when checked, so an
operator's change needs no code. Which variables a golden set may use at all is an administrator's grant,
checked in `labeling.selectors.secrets`. `mask_secrets` is the one masking of the values sent with a
request wherever its reply becomes text (docs/deployment.md, "Secrets").
"""

from __future__ import annotations

import itertools
import json
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

from assay.paths import var_dir

# The variable names a stored setting may hold: a pasted secret (a URL, a token with '-') is not one.
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,99}$")
PREFIX_VARIABLE = "ASSAY_SECRET_ENV_PREFIX"
DEFAULT_PREFIX = "ASSAY_SECRET_"
ROOTS_VARIABLE = "ASSAY_GIT_EXPORT_ROOTS"


def secret_env_prefix() -> str:
    return os.environ.get(PREFIX_VARIABLE, DEFAULT_PREFIX)


def secret_env_problem(name: str) -> str | None:
    """Why a stored setting may not name this variable as a secret's source (None when it may)."""
    prefix = secret_env_prefix()
    if name.startswith(prefix):
        return None
    return (
        f"{name} does not start with {prefix}: stored settings may only read secrets from environment "
        f"variables named {prefix}... (so they cannot send the server's own secrets anywhere); set the "
        f"secret on the workers as {prefix}{name} and name that"
    )


def secret_env_name_problem(name: str) -> str | None:
    """`secret_env_problem`, and first whether `name` is a variable name at all. The value is not echoed:
    when it is not a name it may be the secret itself, pasted in the wrong place."""
    if not ENV_NAME.match(name):
        return (
            "not an environment variable name (letters, digits and '_'): write the NAME of the variable "
            "holding the secret here, never the secret itself"
        )
    return secret_env_problem(name)


class SecretEnvError(ValueError):
    """A secret variable that may not be read, or that is not set in this process."""


def secret_env_read(name: str, environ: Mapping[str, str] | None = None) -> str:
    """The value of the secret variable `name` from `environ` (default: this process's environment),
    checked again when read (a row may have been stored before the prefix rule). SecretEnvError says why
    not; it never contains a value."""
    if refused := secret_env_name_problem(name):
        raise SecretEnvError(refused)
    values = os.environ if environ is None else environ
    if name not in values:
        raise SecretEnvError(f"environment variable {name} is not set on this worker")
    return values[name]


# ------------------------------------------------------------------------------ credentials by name

# The words of a header, parameter or query-string name that mark a credential (`X-Auth-Token`,
# `access_token`, `apiKey`, `X-Amz-Signature`, `sig`), matched as whole words so `max_tokens`,
# `X-Api-Version` or `sort_key` are not taken for one; pairs of words (`api key`, `client secret`); and
# names that are a credential only whole (`key`, as Google's APIs take it; `pass`, `pw`).
_CREDENTIAL_WORDS = frozenset(
    {
        "authorization",
        "auth",
        "cookie",
        "token",
        "secret",
        "password",
        "passwd",
        "pwd",
        "apikey",
        "credential",
        "credentials",
        "signature",
        "sig",
        "jwt",
        "hmac",
    }
)
_CREDENTIAL_PAIRS = frozenset(
    {
        ("api", "key"),
        ("access", "key"),
        ("private", "key"),
        ("secret", "key"),
        ("subscription", "key"),
        ("master", "key"),
        ("account", "key"),
        ("signing", "key"),
        ("client", "secret"),
    }
)
_CREDENTIAL_NAMES = frozenset({"key", "pass", "pw"})


def credential_name(name: str) -> bool:
    """A header, parameter or query-string name that carries a credential; `api_key` counts like
    `Api-Key`, `apiKey` and `api-key` (docs/deployment.md, "Secrets", lists the words)."""
    words = re.findall(r"[a-z0-9]+", re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name).lower())
    return (
        bool(_CREDENTIAL_WORDS.intersection(words))
        or any(pair in _CREDENTIAL_PAIRS for pair in itertools.pairwise(words))
        or "".join(words) in _CREDENTIAL_NAMES
    )


# ------------------------------------------------------------------------------------------ masking

MASK = "***"
# A value shorter than this is not masked: replacing every "42" in a reply would garble ids and titles, and
# so short a value is no secret (docs/deployment.md, "Secrets").
MASK_MIN_LENGTH = 6


def _forms(secrets: Iterable[str]) -> list[str]:
    """Each secret as a reply may quote it: as is, and escaped inside a JSON string (ASCII-only, and with
    '/' escaped, as some servers write it); longest first, so a secret holding another is masked whole."""
    forms: set[str] = set()
    for secret in secrets:
        if len(secret) < MASK_MIN_LENGTH:
            continue
        forms.add(secret)
        for escaped in (json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1]):
            forms.update((escaped, escaped.replace("/", "\\/")))
    return sorted(forms, key=len, reverse=True)


def mask_secrets(text: str, secrets: Iterable[str], mask: str = MASK) -> str:
    """`text` with every occurrence of each secret replaced by `mask`: the one masking applied wherever a
    remote reply becomes text Assay stores or shows (a judge's answer, a search result and its error, a
    webhook's or a git push's error), with the secrets sent in that request. Masked before any text is
    cut short, so no prefix of a secret survives a trim either."""
    for form in _forms(secrets):
        text = text.replace(form, mask)
    return text


def mask_secrets_bytes(data: bytes, secrets: Iterable[str], mask: str = MASK) -> bytes:
    """`mask_secrets` on a reply's raw bytes (UTF-8), before they are parsed into anything."""
    for form in _forms(secrets):
        data = data.replace(form.encode(), mask.encode())
    return data


def git_export_roots() -> list[Path]:
    raw = os.environ.get(ROOTS_VARIABLE)
    if raw is None:
        return [(var_dir() / "git").resolve()]
    return [Path(part).resolve() for part in raw.split(os.pathsep) if part.strip()]


def git_export_path_problem(path: str) -> str | None:
    """Why a git export may not write at this absolute path (None when it lies below an allowed root)."""
    roots = git_export_roots()
    resolved = Path(path).resolve()
    if any(resolved == root or root in resolved.parents for root in roots):
        return None
    allowed = ", ".join(str(root) for root in roots) or "(none)"
    return f"{path} is outside the directories git exports may write to ({allowed}; set {ROOTS_VARIABLE})"
