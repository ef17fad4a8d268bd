"""Keeping the database in step with the files: the incremental indexer (change detection,
renames, parallel parsing, batched writes, links) and the vector fill that embeds every chunk text
a workspace's model lacks. ``checkpoints`` are the crash tests' kill points.
"""
