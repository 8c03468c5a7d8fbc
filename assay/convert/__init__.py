"""Judgments in the formats other tools use, converted to and from Assay's golden file (pure: no Django,
pyarrow or scikit-learn). `assay convert` (assay/cli/) is the command, `assay.convert.formats` the one
table of formats, one module per format family; docs/cli.md documents each format and what it cannot
carry. Every conversion goes through a validated `GoldenFile`: a format is read into one, which is
written out as another format. This package's `__init__` imports nothing, so the command line can read
the table of formats without loading the golden file's parser.
"""
