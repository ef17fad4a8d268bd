-- Generated from autodoc_core/surface/mcp_tools.py (agent_tool.lua_agent_tools): do not edit. Regenerate with
-- python -c 'from autodoc_core.surface.agent_tool import lua_agent_tools; print(lua_agent_tools(), end="")' > lua/autodoc/agent_tools.lua
return {
  {
    name = "autodoc_search",
    tool = "search",
    title = "Search the knowledge base",
    description = "Search a Markdown knowledge base; each hit is the section that matched, with its own text, path, breadcrumb and line span (cite it as path:line_start-line_end), so one call usually answers.\nQuery syntax: plain words (stemmed; all must match, else any); \"an exact phrase\"; a trailing prefix* (migrat*); facets filter by front matter: field:value keeps, -field:value excludes, tag:name; identifiers (Foo.bar, --flag, -32069) also hit a symbol index.\nStages: lexical = words (BM25), semantic = meaning (embeddings; finds paraphrases), rerank = a cross-encoder re-sorts the top hits. Leave stages out to run every stage available; the answer says which ran, which were skipped and why, and `semantic` (partial/switching/off means words-only or partly words-only results).\nWithout workspace it searches every workspace of the database at once (one list, each hit naming its workspace: pass that to read); workspace narrows it to one name or a list of names.\nSection texts share max_tokens (cut at line ends); a hit with text_complete false can be read in full with the read tool.",
    parameters = {
      type = "object",
      properties = {
        query = {
          type = "string",
          description = "words, \"phrases\", prefix*, field:value facets",
        },
        workspace = {
          anyOf = {
            {
              type = "string",
            },
            {
              type = "array",
              items = {
                type = "string",
              },
              minItems = 1,
            },
          },
          description = "Leave it out to search every workspace; a workspace name, or a list of names, narrows the search to those (see the workspaces tool).",
        },
        limit = {
          type = "integer",
          minimum = 1,
          maximum = 50,
          description = "hits to return",
          default = 5,
        },
        stages = {
          type = "array",
          items = {
            type = "string",
            enum = { "lexical", "semantic", "rerank" },
          },
          description = "which stages to run (default: all available); include lexical or semantic",
        },
        facets = {
          type = "object",
          description = "front-matter filters {\"field\": value or [values]}; the fields are those the workspaces tool lists",
        },
        paths = {
          type = "array",
          items = {
            type = "string",
          },
          description = "folder prefixes to search in, e.g. [\"adr\", \"design/api\"]",
        },
        max_tokens = {
          type = "integer",
          minimum = 0,
          maximum = 200000,
          description = "token budget for all hit texts together",
          default = 2000,
        },
      },
      required = { "query" },
      additionalProperties = false,
    },
  },
  {
    name = "autodoc_related",
    tool = "related",
    title = "Related sections",
    description = "What else the knowledge base says about one of its files, or about the section holding a line of it: sections of other documents, found by meaning (the section's stored vector), by its most distinctive words, and by links either way (via: semantic, lexical, link), with their text as search gives it. Use it when you work on or next to a Markdown file of the workspace (editing a design note, or code that an ADR governs) to pull in the decisions, references and notes around it without guessing a query; use search when you know what to look for. path is relative to the workspace root (or absolute inside it); line (1-based) picks the section, none means the document as a whole. Without workspace the related sections come from every workspace (each hit names its own) and the file's workspace is the one holding path; a name (or a list, the file's first) narrows it.",
    parameters = {
      type = "object",
      properties = {
        path = {
          type = "string",
          description = "relative to the workspace root, e.g. adr/0002-store.md",
        },
        workspace = {
          anyOf = {
            {
              type = "string",
            },
            {
              type = "array",
              items = {
                type = "string",
              },
              minItems = 1,
            },
          },
          description = "Leave it out to search every workspace; a workspace name, or a list of names, narrows the search to those (see the workspaces tool).",
        },
        line = {
          type = "integer",
          minimum = 1,
          description = "a line of the section to relate (default: the document as a whole)",
        },
        limit = {
          type = "integer",
          minimum = 1,
          maximum = 50,
          description = "hits to return",
          default = 5,
        },
        max_tokens = {
          type = "integer",
          minimum = 0,
          maximum = 200000,
          description = "token budget for all hit texts together",
          default = 2000,
        },
      },
      required = { "path" },
      additionalProperties = false,
    },
  },
  {
    name = "autodoc_read",
    tool = "read",
    title = "Read a document",
    description = "Read a Markdown file of a workspace, or a line range of it (1-based, inclusive), e.g. a search hit's line_start..line_end or the lines around it, with the hit's workspace. Paths are relative to the workspace root, as search and documents return them; nothing outside the root can be read. Long texts are cut at a line end at max_tokens; the answer's next_line says where to continue (past a single line too long for max_tokens, whose start is given with line_cut true).",
    parameters = {
      type = "object",
      properties = {
        path = {
          type = "string",
          description = "relative to the workspace root, e.g. adr/0002-store.md",
        },
        workspace = {
          type = "string",
          description = "Workspace name (a search hit's workspace, or see the workspaces tool); optional when there is only one.",
        },
        line_start = {
          type = "integer",
          minimum = 1,
          description = "first line (default 1)",
        },
        line_end = {
          type = "integer",
          minimum = 1,
          description = "last line (default: the end)",
        },
        max_tokens = {
          type = "integer",
          minimum = 1,
          maximum = 200000,
          description = "token budget for the text",
          default = 8000,
        },
      },
      required = { "path" },
      additionalProperties = false,
    },
  },
  {
    name = "autodoc_documents",
    tool = "documents",
    title = "Find documents",
    description = "Find documents by title, alias or path (case-insensitive substring; exact title or alias first). An empty query lists the workspace's documents in path order.",
    parameters = {
      type = "object",
      properties = {
        query = {
          type = "string",
          description = "part of a title, alias or path; empty lists all",
        },
        workspace = {
          type = "string",
          description = "Workspace name (a search hit's workspace, or see the workspaces tool); optional when there is only one.",
        },
        limit = {
          type = "integer",
          minimum = 1,
          maximum = 200,
          description = "documents to return",
          default = 20,
        },
        offset = {
          type = "integer",
          minimum = 0,
          maximum = 1000000000,
          description = "documents to pass over first (the last answer's next_offset)",
          default = 0,
        },
      },
      additionalProperties = false,
    },
  },
  {
    name = "autodoc_workspaces",
    tool = "workspaces",
    title = "List workspaces",
    description = "List the knowledge bases this server searches: name, root folder, document and section counts, when last indexed, the semantic state with embedding progress (embedded of total sections), and the fields a query can filter on (field:value) with their types.",
    parameters = {
      type = "object",
      properties = vim.empty_dict(),
      additionalProperties = false,
    },
  },
}
