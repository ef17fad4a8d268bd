"""The SQLite file and what lives in it besides the index: the database (one writer, snapshot
readers, WAL), its migrations, the writer lease shared by every process on the file, and
workspaces with their settings.
"""
