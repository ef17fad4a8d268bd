"""AutoDoc engine: index Markdown knowledge bases into SQLite and search them.

The modules follow the pipeline: ``store`` (SQLite file), ``frontmatter`` and ``markdown``
(parse), ``chunk`` (heading-scoped chunks), ``walk`` and ``indexer`` (incremental indexing),
``query`` and ``lexical`` (stage 1), ``fuse`` and ``shape`` (fusion and result shaping),
``search`` (the pipeline), ``engine`` (methods) and ``rpc``/``cli`` (the surface).
"""

__version__ = "0.1.0"
