"""Assay's pure core: plain data in, plain data out, no Django, Celery or settings (docs/architecture.md).

Every module and package of the core, by part (tests/assay/test_core_listed.py holds this list and
docs/architecture.md's table to the tree):

- `assay.golden`: the golden file (model, format, checks, fast path, columns, JSON Schema), TREC files,
  diffs, durable keys, what a freeze would refuse in the working labels;
- `assay.convert`: judgments in other tools' formats (docs/cli.md, "assay convert"), converted to and
  from the golden file;
- `assay.labels`: agreement statistics, dispute rules, calibration figures, a judge's figures and
  verdicts, raters' pace, query-log sampling;
- `assay.judge`: a machine judge's prompt, answer contract and client;
- `assay.metric_table`: every metric's key, label, direction, budgets and display, read everywhere;
- `assay.metrics`, `assay.ranked`, `assay.report`, `assay.changes`: per-query metrics, a run's lists
  matched to the judgments, the report, the change of a metric between two reports;
- `assay.resampling`: the bootstrap and randomization test behind every interval and p-value (exact sums,
  reproducible draws);
- `assay.budgets`, `assay.gate_check`, `assay.gate`, `assay.gate_findings`, `assay.gate_queries`,
  `assay.gate_losers`, `assay.gate_render` (re-exported by `assay.drift`): the budgeted gate (the
  comparison, its findings and their evidence, the rules on single queries, the top losers);
- `assay.rescore`: a baseline's stored result lists re-scored on a new golden version;
- `assay.overlap`: how much two result lists overlap (Jaccard@k, rank-biased overlap), per query and as a
  mean with its interval;
- `assay.experiment`: parameter sweeps ranked on tuning queries and confirmed on held-out ones;
- `assay.sxs`: side-by-side studies' analysis and verdict (docs/sxs.md);
- `assay.sweep_charts`: an experiment's line chart and heat map;
- `assay.noise` (the one import of `assay.noise_format`, `assay.noise_measure`, `assay.noise_budgets`): the
  noise floor of a budget (how far a metric moves between runs of one configuration: what it holds and its
  file, its measure) and budgets suggested above it;
- `assay.harness`, `assay.harness_config`, `assay.harness_http`, `assay.transport`, `assay.run_meta`,
  `assay.adapters`, `assay.targets`, `assay.netpolicy`, `assay.outbound`, `assay.urls`, `assay.results`,
  `assay.replies`: calling a search system (the pool of workers, its settings, one query's call with its
  retries, its connection route and the run's recorded settings), the one network policy of every
  outbound address (with its hook in each HTTP client), every outbound URL parsed in one place
  (credentials refused, error texts without a URL), and a remote reply read within bounds;
- `assay.git_export`, `assay.git_remote`, `assay.git_repo`, `assay.secrets`, `assay.paths`, `assay.problems`,
  `assay.storable`, `assay.charts`, `assay.docs`, `assay.memory`, `assay.memo`: git writing (its remote and
  push, a repository read), the secret-name and path rules, import reports, what a column can store, chart
  geometry, the docs pages, memory habits of large work, work done once per immutable object (a parsed
  golden version's derived tables);
- `assay.loop_thread`: a coroutine on its own event loop in its own thread, its results handed to the
  caller's thread (which owns the database connection) as they come, stopped at once on request (a run's
  and an experiment's chunk search this way, a judge job's chunk calls its judge);
- `assay.documents`: the documents import format, read one way for the app and `assay convert`;
- `assay.jsonin`, `assay.inputs`: what a person types or uploads, read one way (JSON bounded in depth and
  number length, whole numbers in ASCII digits within bounds, header names and values);
- `assay.display`: how params, a dispute's grades, gate findings and numbers read on every page;
- `assay.sso`: single sign-on's rules (the groups claim mapped to roles and set lists, a first sign-in's
  username, the issuers taken);
- `assay.cli`, `assay.remote`, `assay.options`, `assay.artifacts`, `assay.preload`: the `assay` command
  (one module per command group), its client for an Assay server, their shared option parsing, atomic
  artifact writing, and imports on a helper thread (so `assay run` loads its transport and its scoring
  beside other work).

`tests/assay/test_pure_core.py` imports every module in a fresh interpreter and finds no Django.
"""
