"""The REST API's URLs (`urls`, `/api/v1/`): every capability's endpoints (`evaluation.runs.api`,
`evaluation.studies.api`, `evaluation.experiments.api`), one namespace. docs/api.md describes them.
"""
