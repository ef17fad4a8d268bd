"""How callers reach the engine: JSON-RPC (``rpc``: the method table and stdio server), the
``autodoc`` command line (``cli``), and the Model Context Protocol server (``mcp``).
"""
