"""Web search for chat: Tavily or Bocha."""
