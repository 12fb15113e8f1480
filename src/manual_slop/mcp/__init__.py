"""The Model Context Protocol, both ways, on the official ``mcp`` SDK (no protocol code by hand).

- :mod:`~manual_slop.mcp.server`: our tool registry, context and agent profiles served to any MCP
  client (``sloppy mcp serve``, or from the running app so external clients share its clutch);
- :mod:`~manual_slop.mcp.client`: external MCP servers' tools as registry tools
  (``[mcp.servers.<name>]``), namespaced ``<server>__<tool>``.

Nothing here is imported unless MCP is used: the SDK brings starlette, uvicorn and pydantic.
"""
