"""Ingestion: extract text from files, cut it into chunks, store it in a knowledge base."""

from __future__ import annotations

from scholarflow.ingest.chunking import ChunkedDocument, chunk_document, chunk_text
from scholarflow.ingest.extract import ExtractedDocument, extract_file, extract_pdf

__all__ = [
    "ChunkedDocument",
    "ExtractedDocument",
    "chunk_document",
    "chunk_text",
    "extract_file",
    "extract_pdf",
]
