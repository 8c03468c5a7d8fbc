from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from assay.jsonin import JsonInputError, json_loads
from assay.labels import querylog
from labeling.management.commands._common import finish, golden_set_get, read_file
from labeling.services import SamplingOptions, query_log_import


class Command(BaseCommand):
    help = (
        "Sample queries from a production log (CSV or JSONL: query, count, zero_hits, locale, vertical) "
        "into a golden set: PII removed, duplicates merged, sampled by traffic band with a reserve for "
        "known failures, up to a cap. The vertical becomes the stratum; the band has its own field."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("golden_set", help="the golden set's slug")
        parser.add_argument("path", help="the log, .csv or .jsonl")
        parser.add_argument("--cap", type=int, required=True, help="the most active queries the set may hold")
        parser.add_argument("--reserve-share", type=float, default=querylog.DEFAULT_RESERVE_SHARE)
        parser.add_argument("--zero-hit-min-share", type=float, default=querylog.DEFAULT_ZERO_HIT_MIN_SHARE)
        parser.add_argument(
            "--band-shares",
            "--stratum-shares",  # its former name, which meant the traffic band
            dest="band_shares",
            default=None,
            help='each traffic band\'s share, JSON, e.g. {"head": 0.3, "torso": 0.3, "tail": 0.4}',
        )
        parser.add_argument("--seed", type=int, default=0)

    def handle(self, *args: Any, golden_set: str, path: str, **options: Any) -> None:
        shares = None
        if options["band_shares"]:
            try:
                shares = json_loads(options["band_shares"])
            except JsonInputError as exc:
                raise CommandError(f"--band-shares is not usable JSON: {exc}") from None
            bad = not isinstance(shares, dict) or set(shares) - set(querylog.BANDS)
            if bad or not all(isinstance(v, int | float) and v >= 0 for v in shares.values()):
                raise CommandError(f"--band-shares: non-negative numbers for {', '.join(querylog.BANDS)}")
        sampling = SamplingOptions(
            cap=options["cap"],
            reserve_share=options["reserve_share"],
            zero_hit_min_share=options["zero_hit_min_share"],
            band_shares=shares,
            seed=options["seed"],
        )
        target = golden_set_get(golden_set)
        finish(self, query_log_import(golden_set=target, data=read_file(path), source=path, options=sampling))
