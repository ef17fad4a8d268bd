"""From a Markdown file to a parsed document: the folder walk (ignore rules, symlinks), YAML
frontmatter and facet schemas, Markdown structure, and heading-scoped chunks with exact spans.
"""
