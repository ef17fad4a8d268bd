"""AutoDoc engine: index Markdown knowledge bases into SQLite and search them.

The modules follow the pipeline: ``store`` (SQLite file), ``frontmatter`` and ``markdown``
(parse), ``chunk`` (heading-scoped chunks), ``walk`` and ``indexer`` (incremental indexing),
``query`` and ``lexical`` (stage 1), ``fuse`` and ``shape`` (fusion and result shaping),
``search`` (the pipeline), ``engine`` (methods) and ``rpc``/``cli`` (the surface).
"""

import os

# One BLAS thread per calling thread. Query-time matrix products are small, and two BLAS threads
# collapse when another process holds a core; bulk embedding gets its parallelism from its own
# worker threads instead (minilm.BertEncoder.embed(workers=...)), which also parallelises the
# element-wise work BLAS never sees. Must run before numpy is first imported.
for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

__version__ = "0.1.0"
