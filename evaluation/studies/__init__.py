"""Side-by-side studies: two finished runs shown blind to raters, their preferences and the verdict, on
the study's page and the runs' (docs/sxs.md). Built on `evaluation.runs`, listening to what runs announce
(`receivers`); experiments are not imported here (docs/architecture.md, "Inside evaluation").
"""
