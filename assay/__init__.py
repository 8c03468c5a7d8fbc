"""Assay's pure core: plain data in, plain data out, no Django, Celery or settings (docs/architecture.md).

- `assay.golden`: the golden file (model, format, JSON Schema), TREC files, diffs, durable keys;
- `assay.labels`: agreement statistics, dispute rules, calibration figures, query-log sampling;
- `assay.metrics`, `assay.report`, `assay.drift`: per-query metrics, the report, the budgeted gate;
- `assay.harness`, `assay.adapters`, `assay.targets`, `assay.results`: calling a search system;
- `assay.git_export`, `assay.secrets`, `assay.paths`, `assay.problems`, `assay.charts`: support;
- `assay.cli`, `assay.remote`: the `assay` command and its client for an Assay server.

`tests/assay/test_pure_core.py` imports every module in a fresh interpreter and finds no Django.
"""
