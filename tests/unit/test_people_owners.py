"""A server's people and tokens (storage/people.py) and whose a knowledge base is
(retrieval/owners.py, retrieval/access.py), in process, on the SQLite server database."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from langchain_core.runnables.config import var_child_runnable_config

from scholarflow.ingest.documents import document_from_text
from scholarflow.ingest.pipeline import add_document
from scholarflow.retrieval.access import open_kb, run_person
from scholarflow.retrieval.kb import KnowledgeBaseNotFoundError
from scholarflow.retrieval.kb_registry import open_knowledge_base
from scholarflow.retrieval.owners import (
    LOCAL,
    Person,
    ReadOnlyKnowledgeBaseError,
    readable,
    share,
    shared_with,
    shown_name,
    stored_name,
    visible,
    writable,
)
from scholarflow.storage import people
from scholarflow.storage.server_db import close_server_databases
from tests.support.embeddings import HashingEmbedder

ADA, BOB, CYD = Person("ada"), Person("bob"), Person("cyd")


@pytest.fixture
async def server_home(home: Path) -> AsyncIterator[Path]:
    await people.add_person("ada", ["lab"])
    await people.add_person("bob", ["lab"])
    await people.add_person("cyd")
    yield home
    await close_server_databases()


@contextmanager
def run_as(name: str | None) -> Iterator[None]:
    """Inside a run whose server user is `name` (None: no auth layer)."""
    user = None if name is None else {"identity": name}
    token = var_child_runnable_config.set({"configurable": {"langgraph_auth_user": user}})
    try:
        yield
    finally:
        var_child_runnable_config.reset(token)


# --- people and tokens -------------------------------------------------------------------------


async def test_a_token_is_shown_once_and_only_its_hash_is_kept(home: Path) -> None:
    token = await people.add_person("ada", ["lab"])
    try:
        assert people.looks_like_token(token) and len(token) == 46
        assert await people.person_by_token(token) == ("ada", ("lab",))
        stored = b"".join(p.read_bytes() for p in home.rglob("server.db*"))  # noqa: ASYNC240
        assert token.encode() not in stored
        assert people.token_hash(token).encode() in stored
        # A forged token, a truncated one, a hash offered as a token: nobody.
        for forged in [people.new_token(), token[:-1], token + "x", people.token_hash(token),
                       "", "Bearer " + token]:
            assert await people.person_by_token(forged) is None, forged
    finally:
        await close_server_databases()


async def test_revoking_ends_a_token_and_adding_again_gives_a_new_one(home: Path) -> None:
    first = await people.add_person("ada")
    try:
        with pytest.raises(people.PersonError, match="already a person of this server"):
            await people.add_person("ada")
        await people.revoke_person("ada")
        assert await people.person_by_token(first) is None
        with pytest.raises(people.PersonError, match="no active person 'ada'"):
            await people.revoke_person("ada")
        second = await people.add_person("ada", ["lab"])
        assert second != first
        assert await people.person_by_token(first) is None
        assert await people.person_by_token(second) == ("ada", ("lab",))
        listed = await people.list_people()
        assert [(p.name, p.groups, p.active) for p in listed] == [("ada", ("lab",), True)]
    finally:
        await close_server_databases()


@pytest.mark.parametrize("name", ["local", "Ada", "../ada", "a" * 33, "", "ada.lab", "ada/lab",
                                  "1ada", "ad a"])
async def test_names_that_cannot_be_a_person_are_refused(home: Path, name: str) -> None:
    with pytest.raises(people.PersonError, match=r"name"):
        await people.add_person(name)
    assert not (home / "server.db").exists() or not await people.list_people()
    await close_server_databases()


# --- whose a knowledge base is -----------------------------------------------------------------


async def test_a_persons_names_are_their_own() -> None:
    assert stored_name("ada", "lab") == "ada.lab"
    assert stored_name("local", "lab") == "lab"
    assert shown_name(ADA, "ada.lab") == "lab"
    assert shown_name(BOB, "ada.lab") == "ada/lab"
    assert shown_name(BOB, "lab") == "local/lab"
    assert visible(BOB, ["lab", "ada.lab", "bob.lab", "bob._direct", "cyd.x"], ["ada.lab"]) == [
        "ada.lab", "bob.lab"]
    assert visible(LOCAL, ["lab", "ada.lab", "_direct"], []) == ["lab", "ada.lab"]


async def test_only_the_owner_and_those_it_is_shared_with_read_it(server_home: Path) -> None:
    assert await readable(ADA, "lab") == "ada.lab"
    assert await readable(BOB, "lab") == "bob.lab"  # bob's own "lab": another knowledge base
    for person in (BOB, CYD):
        with pytest.raises(KnowledgeBaseNotFoundError, match=r"^no knowledge base 'ada/lab' "):
            await readable(person, "ada/lab")
        with pytest.raises(KnowledgeBaseNotFoundError, match=r"^no knowledge base 'ada/lab' "):
            await writable(person, "ada/lab")
    assert await readable(LOCAL, "ada/lab") == "ada.lab"  # the data folder's own user

    assert await share("ada.lab", groups=["lab"]) == ["group:lab"]
    assert await readable(BOB, "ada/lab") == "ada.lab"
    assert await shared_with(BOB) == ["ada.lab"]
    with pytest.raises(ReadOnlyKnowledgeBaseError, match="only ada changes it"):
        await writable(BOB, "ada/lab")
    with pytest.raises(KnowledgeBaseNotFoundError):  # cyd is in no group
        await readable(CYD, "ada/lab")

    assert await share("ada.lab", people=["cyd"]) == ["group:lab", "person:cyd"]
    assert await readable(CYD, "ada/lab") == "ada.lab"
    await people.set_groups("bob", [])  # the operator takes bob out of the lab
    with pytest.raises(KnowledgeBaseNotFoundError):
        await readable(BOB, "ada/lab")
    assert await share("ada.lab", people=["cyd"], groups=["lab"], revoke=True) == []
    with pytest.raises(KnowledgeBaseNotFoundError):
        await readable(CYD, "ada/lab")


async def test_a_revoked_person_loses_what_their_groups_gave_them(server_home: Path) -> None:
    await share("ada.lab", groups=["lab"])
    assert await readable(BOB, "ada/lab") == "ada.lab"
    await people.revoke_person("bob")
    with pytest.raises(KnowledgeBaseNotFoundError):
        await readable(BOB, "ada/lab")


async def test_a_run_opens_only_what_its_person_may_read(server_home: Path) -> None:
    """Whatever names a knowledge base in a run's state (a crafted update_state included),
    opening it checks the run's person; a scratch index is the person's own."""
    kb = await open_knowledge_base("ada.lab", create=True, embedder=HashingEmbedder())
    await add_document(kb, document_from_text("Sparse attention on long papers.", doc_id="a1"))
    with run_as("bob"):
        assert run_person() == BOB
        with pytest.raises(KnowledgeBaseNotFoundError, match=r"^no knowledge base 'ada/lab' "):
            await open_kb("ada.lab")
        scratch = await open_kb("_direct", create=True)
        assert scratch.name == "bob._direct"
        assert (await open_kb("ada._direct", create=True)).name == "bob._direct"
    with run_as("ada"):
        assert [d.doc_id for d in await (await open_kb("ada.lab")).documents()] == ["a1"]
    with run_as(None):  # no auth layer: the local person, who may read everything
        assert run_person() == LOCAL
        assert (await open_kb("ada.lab")).name == "ada.lab"
    with run_as("Not A Name"), pytest.raises(Exception, match="not one of its people"):
        run_person()
    await share("ada.lab", people=["bob"])
    with run_as("bob"):
        assert (await open_kb("ada.lab")).name == "ada.lab"


async def test_a_cached_summary_is_served_only_for_the_very_same_text(home: Path) -> None:
    """Two people give a document the same id: the summary of one's text is not the other's."""
    from scholarflow.context import Context
    from scholarflow.nodes.summary import cached_summaries
    from scholarflow.state import DocumentInfo
    from scholarflow.storage.cache_registry import close_all as close_caches
    from scholarflow.storage.cache_registry import summary_cache
    from scholarflow.storage.summary_cache import summary_cache_key

    adas = document_from_text("Ada's unpublished result on sparse attention.", doc_id="paper")
    bobs = document_from_text("Bob's notes on something else entirely.", doc_id="paper")

    def info(doc: Any) -> DocumentInfo:
        return DocumentInfo(doc_id=doc.doc_id, title=doc.title, tokens=9,
                            content_hash=doc.content_hash)

    try:
        await summary_cache().set(summary_cache_key("paper", adas.content_hash), "Ada's summary")
        assert await cached_summaries(Context(), [info(bobs)]) == {}
        same = await cached_summaries(Context(), [info(adas)])
        assert same["paper"]["summary"] == "Ada's summary"
    finally:
        await close_caches()
