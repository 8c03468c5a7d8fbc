"""Assay's pure core: plain data in, plain data out, no Django, Celery or settings (docs/architecture.md).

- `assay.golden`: the golden file (model, format, JSON Schema), TREC files, diffs, durable keys;
- `assay.labels`: agreement statistics, dispute rules, calibration figures, query-log sampling;
- `assay.metric_table`: every metric's key, label, direction, budgets and display, read everywhere;
- `assay.metrics`, `assay.report`: per-query metrics and the report;
- `assay.budgets`, `assay.gate`, `assay.gate_render` (re-exported by `assay.drift`): the budgeted gate;
- `assay.rescore`: a baseline's stored result lists re-scored on a new golden version;
- `assay.experiment`: parameter sweeps ranked on tuning queries and confirmed on held-out ones;
- `assay.noise`: the noise floor of a budget (how far a metric moves between runs of one configuration)
  and budgets suggested above it;
- `assay.harness`, `assay.adapters`, `assay.targets`, `assay.netpolicy`, `assay.outbound`, `assay.results`:
  calling a search system, and the one network policy of every outbound address (with its hook in each
  HTTP client);
- `assay.git_export`, `assay.secrets`, `assay.paths`, `assay.problems`, `assay.charts`: support;
- `assay.jsonin`, `assay.inputs`: what a person types or uploads, read one way (JSON bounded in depth and
  number length, whole numbers in ASCII digits within bounds, header names and values);
- `assay.display`: how params, a dispute's grades, gate findings and numbers read on every page;
- `assay.cli`, `assay.remote`, `assay.options`, `assay.artifacts`, `assay.preload`: the `assay` command,
  its client for an Assay server, their shared option parsing, atomic artifact writing, and imports on a
  helper thread (so `assay run` loads its transport and its scoring beside other work).

`tests/assay/test_pure_core.py` imports every module in a fresh interpreter and finds no Django.
"""
