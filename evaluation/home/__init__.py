"""The reviewer's home page: what waits and what finished since the last visit, across runs, studies and
experiments (docs/runs.md, "What waits for you"); it reads all three capabilities.
"""
