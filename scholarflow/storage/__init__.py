"""Where scholarflow keeps things: the data folder, SQLite files, PostgreSQL pools,
the checkpointers (sessions are LangGraph threads), the document-summary cache and
the networked services' URLs."""
