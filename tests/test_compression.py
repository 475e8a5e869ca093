"""Context compression (seed 004 §6.1): thresholds, the 70/30 split, folding, failures."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest

from scholarflow.sessions import (
    Message,
    MessageType,
    SessionNotFoundError,
    SqliteSessionStore,
    compression_split,
    maybe_compress,
)

U, A, C = MessageType.USER, MessageType.ASSISTANT, MessageType.COMPRESSION


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqliteSessionStore]:
    s = SqliteSessionStore(tmp_path / "scholarflow.db")
    yield s
    await s.close()


class Summarizer:
    """Records what it was asked to summarise."""

    def __init__(self, text: str = "SUMMARY") -> None:
        self.text = text
        self.calls: list[list[Message]] = []

    async def __call__(self, messages: Sequence[Message]) -> str:
        self.calls.append(list(messages))
        return f"{self.text} of {len(messages)} messages"


async def fill(store: SqliteSessionStore, sid: str, rounds: int, start: int = 0) -> list[Message]:
    out = []
    for i in range(start, start + rounds):
        out.append(await store.add_message(sid, U, f"question {i}: " + "words " * 20))
        out.append(await store.add_message(sid, A, f"answer {i}: " + "more words " * 40))
    return out


async def tokens(store: SqliteSessionStore, sid: str) -> int:
    info = await store.get(sid)
    assert info is not None
    return info.total_token_count


async def test_below_threshold_does_nothing(store: SqliteSessionStore) -> None:
    sid = (await store.create()).session_id
    await fill(store, sid, 10)
    total = await tokens(store, sid)
    before = await store.messages(sid)
    summarize = Summarizer()
    # 0.8 * max is above the total.
    assert await maybe_compress(
        store, sid, max_context_tokens=total * 2, summarize=summarize
    ) is None
    # Exactly at the threshold is not above it.
    assert await maybe_compress(
        store, sid, max_context_tokens=total, ratio=1.0, summarize=summarize
    ) is None
    assert summarize.calls == []
    assert await store.messages(sid) == before


async def test_above_threshold_compresses_the_oldest_70_percent(store: SqliteSessionStore) -> None:
    sid = (await store.create()).session_id
    stored = await fill(store, sid, 10)  # 20 messages: 14 compressed, 6 kept
    total = await tokens(store, sid)
    summarize = Summarizer()

    summary = await maybe_compress(
        store, sid, max_context_tokens=total, summarize=summarize  # threshold 0.8 * total
    )

    assert summary is not None and summary.type is C
    assert summarize.calls == [stored[:14]]
    assert summary.content == "SUMMARY of 14 messages"
    active = await store.messages(sid, active_only=True)
    assert active[0].id == summary.id
    assert [m.id for m in active[1:]] == [m.id for m in stored[14:]]
    assert [m.compressed for m in await store.messages(sid)] == [True] * 14 + [False] * 7
    info = await store.get(sid)
    assert info is not None
    assert info.total_token_count < total
    assert info.total_token_count == sum(m.token_count for m in active)
    assert info.message_count == 21


async def test_second_compression_folds_the_first_summary(store: SqliteSessionStore) -> None:
    sid = (await store.create()).session_id
    await fill(store, sid, 10)
    first = await maybe_compress(
        store, sid, max_context_tokens=await tokens(store, sid), summarize=Summarizer("FIRST")
    )
    assert first is not None
    await fill(store, sid, 6, start=10)
    active_before = await store.messages(sid, active_only=True)  # summary + 6 + 12 = 19
    summarize = Summarizer("SECOND")

    second = await maybe_compress(
        store, sid, max_context_tokens=await tokens(store, sid), summarize=summarize
    )

    assert second is not None
    folded = summarize.calls[0]
    assert folded[0].id == first.id  # the old summary is summarised again
    assert folded == active_before[: len(folded)]
    active = await store.messages(sid, active_only=True)
    assert [m.type for m in active].count(C) == 1
    assert active[0].id == second.id
    assert active[1].type is U  # the cut fell on a round boundary
    everything = {m.id: m for m in await store.messages(sid)}
    assert everything[first.id].compressed


async def test_failing_summarize_changes_nothing(store: SqliteSessionStore) -> None:
    sid = (await store.create()).session_id
    await fill(store, sid, 5)
    before = (await store.messages(sid), await store.get(sid))

    async def broken(messages: Sequence[Message]) -> str:
        raise RuntimeError("the model is down")

    with pytest.raises(RuntimeError, match="the model is down"):
        await maybe_compress(store, sid, max_context_tokens=10, summarize=broken)
    assert (await store.messages(sid), await store.get(sid)) == before


async def test_blank_summary_changes_nothing(store: SqliteSessionStore) -> None:
    sid = (await store.create()).session_id
    await fill(store, sid, 5)
    before = await store.messages(sid)

    async def blank(messages: Sequence[Message]) -> str:
        return "  "

    with pytest.raises(ValueError):
        await maybe_compress(store, sid, max_context_tokens=10, summarize=blank)
    assert await store.messages(sid) == before


async def test_a_concurrent_compression_wins_quietly(store: SqliteSessionStore) -> None:
    sid = (await store.create()).session_id
    await fill(store, sid, 10)

    async def racing(messages: Sequence[Message]) -> str:
        # Another run compresses the same messages while this one summarises.
        await store.compress(sid, [m.id for m in messages], "the other run's summary")
        return "too late"

    assert await maybe_compress(store, sid, max_context_tokens=10, summarize=racing) is None
    active = await store.messages(sid, active_only=True)
    assert [m.content for m in active if m.type is C] == ["the other run's summary"]


async def test_single_round_is_split_rather_than_left_alone(store: SqliteSessionStore) -> None:
    sid = (await store.create()).session_id
    question = await store.add_message(sid, U, "a very long question " * 50)
    answer = await store.add_message(sid, A, "a very long answer " * 50)
    summarize = Summarizer()
    summary = await maybe_compress(store, sid, max_context_tokens=10, summarize=summarize)
    assert summary is not None
    assert summarize.calls == [[question]]
    assert [m.id for m in await store.messages(sid, active_only=True)] == [summary.id, answer.id]


async def test_one_message_cannot_be_compressed(store: SqliteSessionStore) -> None:
    sid = (await store.create()).session_id
    await store.add_message(sid, U, "huge " * 500)
    assert await maybe_compress(store, sid, max_context_tokens=10, summarize=Summarizer()) is None


async def test_unknown_session(store: SqliteSessionStore) -> None:
    with pytest.raises(SessionNotFoundError):
        await maybe_compress(store, "missing", max_context_tokens=10, summarize=Summarizer())


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_context_tokens": 0},
        {"max_context_tokens": 100, "ratio": 0},
        {"max_context_tokens": 100, "ratio": 1.5},
        {"max_context_tokens": 100, "keep_fraction": 0},
        {"max_context_tokens": 100, "keep_fraction": 1},
    ],
)
async def test_bad_parameters(store: SqliteSessionStore, kwargs: dict[str, float]) -> None:
    sid = (await store.create()).session_id
    with pytest.raises(ValueError):
        await maybe_compress(store, sid, summarize=Summarizer(), **kwargs)  # type: ignore[arg-type]


def _msgs(types: str) -> list[Message]:
    kinds = {"U": U, "A": A, "C": C}
    return [Message(i, "s", kinds[t], t, 1, float(i), False) for i, t in enumerate(types)]


@pytest.mark.parametrize(
    ("types", "expected"),
    [
        ("UA" * 10, 14),  # exactly 70%, on a round boundary
        ("UA" * 5, 6),  # 7 would cut round 4 in half: keep it whole (4 kept)
        ("C" + "UA" * 5, 7),  # 8 cuts a round: back to 7, the summary folds in
        ("UAUAUAU", 4),  # a trailing unanswered question is a round
        ("UAA" * 3, 6),  # a round with two replies
        ("UA", 1),  # a single round is split: the only way to compress
        ("AUA", 1),  # a reply whose question is gone is a round of its own
        ("CU", 0),  # re-summarising the summary alone gains nothing
        ("U", 0),
        ("", 0),
    ],
)
def test_compression_split(types: str, expected: int) -> None:
    assert compression_split(_msgs(types)) == expected


def test_compression_split_keeps_at_least_one() -> None:
    assert compression_split(_msgs("UUU"), keep_fraction=0.01) == 2
