"""The Elasticsearch index of one knowledge base: settings, analysis and mapping."""

from __future__ import annotations

from typing import Any

from scholarflow.retrieval.embeddings import Embedder

# Fields added after the first release: an index made before them gets them on opening
# (`put_mapping`; adding fields is allowed under "dynamic": "strict").
ADDED_PROPERTIES: dict[str, Any] = {
    # "references" for a reference-list chunk (`kind` already tells doc from chunk records)
    "chunk_kind": {"type": "keyword"},
    "authors": {"type": "keyword"},
    "year": {"type": "integer"},
    "doi": {"type": "keyword"},
    "pages": {"type": "integer"},
    "added": {"type": "date"},
}


def index_body(kb_name: str, embedder: Embedder, dims: int) -> dict[str, Any]:
    """Settings and mappings of a knowledge base index."""
    # Built-in analysis only (no smartcn/IK plugin needed), giving the embedded
    # tokenizer's terms: the standard tokenizer cuts Han text into characters;
    # cjk_bigram with unigrams adds overlapping bigrams (注意/意力 for 注意力:
    # most Chinese words are two characters, found without a dictionary);
    # cjk_width folds full-width Latin; a light stemmer folds English plurals.
    # (The built-in `cjk` analyzer drops unigrams and does not stem.)
    analysis = {
        "filter": {"sf_bigrams": {"type": "cjk_bigram", "output_unigrams": True},
                   "sf_english_stem": {"type": "stemmer", "language": "light_english"}},
        "analyzer": {"scholarflow_text": {
            "type": "custom", "tokenizer": "standard",
            "filter": ["cjk_width", "lowercase", "sf_bigrams", "sf_english_stem"]}},
    }
    keyword, integer = {"type": "keyword"}, {"type": "integer"}
    text = {"type": "text", "analyzer": "scholarflow_text"}
    properties: dict[str, Any] = {
        **dict.fromkeys(["kind", "doc_id", "chunk_id", "content_hash"], keyword),
        **dict.fromkeys(["n", "page", "tokens", "chunks"], integer),
        **dict.fromkeys(["text", "title", "heading"], text),
        "vector": {"type": "dense_vector", "dims": dims, "index": True, "similarity": "cosine"},
        "source": {"type": "keyword", "index": False},
        "content": {"type": "text", "index": False},  # the whole text, read back, never searched
        **ADDED_PROPERTIES,
    }
    return {
        # One shard: a person's papers are small, and BM25 statistics then
        # cover the whole knowledge base, as in the embedded index.
        "settings": {"number_of_shards": 1, "analysis": analysis},
        "mappings": {
            "dynamic": "strict",
            "_meta": {"scholarflow_kb": kb_name, "embedder": embedder.name, "dims": dims},
            "properties": properties,
        },
    }
