"""Experiments: a sweep of a target's parameters over a grid on the Celery workers, chosen on tuning
queries and confirmed on held-out ones, Use this configuration and its revert, the gaps and the re-score
(docs/experiments.md). Built on `evaluation.runs` (targets, runs, the chunk lease, the API's base),
listening to what runs announce (`receivers`); studies are not imported here (docs/architecture.md,
"Inside evaluation").
"""
