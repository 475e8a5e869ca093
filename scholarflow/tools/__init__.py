"""Tools the nodes call: recall over knowledge bases and web search."""
