from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from assay.labels import querylog
from labeling.management.commands._common import finish, golden_set_get, read_file
from labeling.services import SamplingOptions, query_log_import


class Command(BaseCommand):
    help = (
        "Sample queries from a production log (CSV or JSONL: query, count, zero_hits, locale) into a golden "
        "set: PII removed, duplicates merged, stratified by traffic and failure mode, up to a cap."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("golden_set", help="the golden set's slug")
        parser.add_argument("path", help="the log, .csv or .jsonl")
        parser.add_argument("--cap", type=int, required=True, help="the most active queries the set may hold")
        parser.add_argument("--reserve-share", type=float, default=querylog.DEFAULT_RESERVE_SHARE)
        parser.add_argument("--zero-hit-min-share", type=float, default=querylog.DEFAULT_ZERO_HIT_MIN_SHARE)
        parser.add_argument(
            "--stratum-shares", default=None, help='JSON, e.g. {"head": 0.3, "torso": 0.3, "tail": 0.4}'
        )
        parser.add_argument("--seed", type=int, default=0)

    def handle(self, *args: Any, golden_set: str, path: str, **options: Any) -> None:
        shares = None
        if options["stratum_shares"]:
            try:
                shares = json.loads(options["stratum_shares"])
            except json.JSONDecodeError as exc:
                raise CommandError(f"--stratum-shares is not JSON: {exc}") from exc
            bad = not isinstance(shares, dict) or set(shares) - set(querylog.STRATA)
            if bad or not all(isinstance(v, int | float) and v >= 0 for v in shares.values()):
                raise CommandError(f"--stratum-shares: non-negative numbers for {', '.join(querylog.STRATA)}")
        sampling = SamplingOptions(
            cap=options["cap"],
            reserve_share=options["reserve_share"],
            zero_hit_min_share=options["zero_hit_min_share"],
            stratum_shares=shares,
            seed=options["seed"],
        )
        target = golden_set_get(golden_set)
        finish(self, query_log_import(golden_set=target, data=read_file(path), source=path, options=sampling))
