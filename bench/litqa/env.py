"""Where a LitQA2 part runs: its SCHOLARFLOW_HOME, and the scripted server when it stands in.

Everything is configured through the environment variables a user sets
(SCHOLARFLOW_HOME, OPENAI_BASE_URL, SCHOLARFLOW_EMBEDDING_*), before scholarflow
reads them: the parts import scholarflow inside their functions, after `Env`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.litqa.questions import REPO, Question

DEFAULT_HOME = os.environ.get("LITQA_HOME") or str(REPO / "bench" / ".cache" / "litqa-home")
SCRIPTED_MARK = ".scripted-embeddings"  # in the home: its KB was built with hashing vectors


class Env:
    """SCHOLARFLOW_HOME, and the scripted server (tests/support) for embeddings or the model.

    A home whose knowledge base was built with `--scripted-embeddings` keeps a mark, and
    every later part on it embeds its questions the same way.
    """

    def __init__(self, home: str, *, scripted_embeddings: bool = False,
                 scripted_llm: bool = False) -> None:
        self.home = Path(home)
        self.home.mkdir(parents=True, exist_ok=True)
        os.environ["SCHOLARFLOW_HOME"] = str(self.home)
        mark = self.home / SCRIPTED_MARK
        if scripted_embeddings:
            mark.touch()
        self.scripted_embeddings = mark.exists()
        self.scripted_llm = scripted_llm
        self.server: Any = None
        if self.scripted_embeddings or scripted_llm:
            from tests.support import FakeOpenAIServer

            self.server = FakeOpenAIServer().start()
        if self.scripted_embeddings:
            os.environ["SCHOLARFLOW_EMBEDDING_MODEL"] = "fake-embedding"
            os.environ["SCHOLARFLOW_EMBEDDING_BASE_URL"] = self.server.base_url
        if scripted_llm:
            os.environ["OPENAI_BASE_URL"] = self.server.base_url
            os.environ["OPENAI_API_KEY"] = "sk-scripted"
            os.environ.pop("SCHOLARFLOW_MODEL", None)

    @property
    def label(self) -> str:
        """What the table's title says of the run: embeddings and model."""
        embeddings = "scripted hashing vectors" if self.scripted_embeddings else "local e5"
        model = ("the scripted server" if self.scripted_llm
                 else os.environ.get("SCHOLARFLOW_MODEL") or "the configured model")
        return f"embeddings: {embeddings}; model: {model}"

    def requests(self) -> list[dict[str, Any]]:
        """The chat requests the scripted server received since the last `reset`."""
        return list(self.server.stats().requests) if self.scripted_llm else []

    def reset(self, **config: Any) -> None:
        """Clear the scripted server's log and rules, then script it with `config`."""
        if self.scripted_llm:
            self.server.reset()
            if config:
                self.server.configure(**config)

    def close(self) -> None:
        if self.server is not None:
            self.server.stop()


@dataclass
class Library:
    """The knowledge base's documents, by the corpus's PDF file names."""

    ids: dict[str, str]  # PDF file name -> doc_id
    titles: dict[str, str]  # doc_id -> title

    def sources(self, q: Question) -> set[str]:
        """The doc_ids of the question's source papers."""
        return {self.ids[f] for f in q.files if f in self.ids}


async def library(kb_name: str) -> Library:
    from scholarflow.retrieval.kb_registry import open_knowledge_base

    kb = await open_knowledge_base(kb_name)
    documents = await kb.documents()
    if not documents:
        raise SystemExit(f"knowledge base {kb_name!r} is empty: run the ingest part first "
                         "(with the same --home)")
    return Library({Path(d.source or "").name: d.doc_id for d in documents},
                   {d.doc_id: d.title for d in documents})


async def model_part(args: Any, part: str) -> tuple[Env, list[Question], Library, Any, Any]:
    """What a part asking the model needs: its environment, the questions it selects, the
    library, and the graph with its Context (bench/litqa/graph.py `build`)."""
    from bench.litqa.graph import build
    from bench.litqa.questions import asked

    env = Env(args.home, scripted_llm=args.scripted)
    if not os.environ.get("OPENAI_BASE_URL"):
        raise SystemExit(f"{part} needs a model: set OPENAI_BASE_URL (and OPENAI_API_KEY, "
                         "SCHOLARFLOW_MODEL), or pass --scripted for a dry run")
    questions = asked(args)
    lib = await library(args.kb)
    graph, context = build(args.window, args.llm_timeout)
    return env, questions, lib, graph, context
