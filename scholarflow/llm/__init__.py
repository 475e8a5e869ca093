"""The chat model: the one way to call it (`calls`), its concurrency limit, its
errors, timeouts and context window. Light on purpose: importing a submodule must
not pull in LangChain."""
