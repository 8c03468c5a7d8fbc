"""The demo: a help-center corpus, its golden file and rubric, a query log, and a small search service.

Nothing here imports Django: `demo.search_service` runs as a plain process (`python -m
demo.search_service`), and the data files are read by the `demo_load` management command.
"""
