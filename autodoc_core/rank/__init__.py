"""After retrieval: fusion of the retrievers' rankings (linear blend or RRF, boosts, leaders),
and hits (per-document cap, superseded demotion, snippets, the answer's hit records).
"""
