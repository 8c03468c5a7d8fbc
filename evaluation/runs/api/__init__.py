"""The REST API (DRF) of runs: golden sets, versions and their files, search targets, evaluation runs;
and what every endpoint of evaluation is built on (`base`), with the token authentication, scopes,
pagination, parsers, error shape and schema class the settings name.

Settings once, in `config/settings.py` (REST_FRAMEWORK): deny by default (IsAuthenticated plus the token's
scopes), one pagination class that refuses unordered querysets, drf-spectacular for the schema. A token
acts as its user: every object is looked up through the same visibility rules as the pages, and what a
user may not see is a 404. docs/api.md describes every endpoint.
"""
