"""Where the checkout and its state directory are (pure, no Django): settings and the pure modules that
need a default under `var/` (assay.secrets) read them from here."""

from __future__ import annotations

import os
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent


def var_dir() -> Path:
    """`ASSAY_VAR_DIR`, else `var/` in the checkout: the SQLite database, broker, secret key, git exports."""
    return Path(os.environ.get("ASSAY_VAR_DIR", str(BASE_DIR / "var")))
