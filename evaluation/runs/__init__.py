"""Runs: search targets, runs of a target against a golden version on the Celery workers, their reports,
baselines, budgets and the gate, notifications, nightly schedules; and what every capability of
evaluation builds on: who sees what (`access`), API tokens (`tokens`), the API's base (`api/base.py`),
the chunk lease (`services/leases.py`) and the hooks through which runs announce what studies and
experiments listen to (`hooks`). Runs import neither (docs/architecture.md, "Inside evaluation");
docs/runs.md.
"""
