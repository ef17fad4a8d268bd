"""One search, from options to answer: stages (the Stage names and Candidates, shared by every floor),
answer (the typed records and their JSON shape), search_run (what a search works with, the stages search and
related share), stream (following a search between stages), pipeline (options in, stages run and fused, a
SearchAnswer out).

The package is one floor of the layer map (autodoc_core.FLOORS), but for ``stages``, on the ground floor so
that retrieve/ and rank/ may use it. This file imports nothing, so importing ``search.stages`` from a lower
floor does not pull the pipeline in.
"""
