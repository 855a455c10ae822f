"""Rendering of torch2ms results for people (rich terminal tables, Markdown) and tools (JSON, CSV)."""
