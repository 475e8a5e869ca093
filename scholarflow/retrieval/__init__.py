"""Retrieval: knowledge bases (the embedded index, Elasticsearch), the recall API,
embeddings and reranking."""
