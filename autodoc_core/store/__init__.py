"""The SQLite file and all of the SQL that reads or writes it: the database (one writer, snapshot readers,
WAL), its migrations, the writer lease shared by every process on the file, and one module per family of
tables, each owning its statements and the deletion of a removed workspace's rows: workspace (settings),
documents (+ problems), links (doc_keys, links), chunks (+ each workspace's FTS5 table), facets, symbols,
embeddings (+ model checks), changes, flags (the whole database's: embedding paused). ``filters`` holds the
clauses a search adds to every retriever's query.
"""
