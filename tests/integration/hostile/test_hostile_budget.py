"""Hostile budgets, sizes and empty answers: nothing loops, nothing oversized is sent,
nothing is answered from no material, and every failure is one line that names the fix.

Small windows are tested in-process (the CLI has no flag for them); each case counts the
scripted server's calls and measures every prompt it was sent.
"""

from __future__ import annotations

import contextlib
import re
import time
import uuid
from typing import Any

import pytest
from langchain_core.messages import BaseMessage
from langgraph.checkpoint.memory import InMemorySaver

from scholarflow import Context, build_graph
from scholarflow.bounded import LoopLimitError, bounded_rounds, require_progress
from scholarflow.errors import ConfigurationError, ScholarflowError
from scholarflow.llm import calls as llm
from scholarflow.llm.calls import ERROR_RETRY
from scholarflow.llm.prompt_guard import PromptTooLargeError, check_prompt
from scholarflow.sessions.conversation import answer_message, as_session_messages, question_message
from scholarflow.sessions.models import MessageType
from scholarflow.tokens import count_message_tokens, count_tokens
from tests.conftest import SUMMARY_RULE, paper, run_graph
from tests.integration.hostile.harness import (
    EXIT_BAD_REQUEST,
    EXIT_FAILED,
    PAPER,
    Seeded,
    assert_clean_error,
    assert_intact,
    assert_no_secret,
    llm_env,
    run,
)
from tests.support import FakeOpenAIServer

QA_RULE = "You answer a precise question"  # LITERATURE_QA_PROMPT
REPORT_RULE = "You are writing part"  # the partial report of a group of summaries
MERGE_RULE = "intermediate reports"  # the final merge
QUESTION = "What learning rate did they use?"


def prompt_tokens(request: dict[str, Any]) -> int:
    return count_message_tokens(str(m["content"]) for m in request["messages"])


def assert_prompts_fit(fake: FakeOpenAIServer, ctx: Context) -> None:
    """At least one prompt was sent, and none over the window less the reserved answer."""
    budget = ctx.max_context_tokens - ctx.reserved_answer_tokens
    sizes = [prompt_tokens(r) for r in fake.stats().requests]
    assert sizes, "no prompt was sent: nothing to measure"
    assert all(size <= budget for size in sizes), (sizes, budget)


def two_papers() -> dict[str, str]:
    return {"a": paper("en_sparse_attention.md"), "b": paper("zh_multidoc_summary.md")}


def words(n: int, stem: str = "finding") -> str:
    return " ".join(f"{stem}{i}" for i in range(n))


def one_error_line(out: dict[str, Any]) -> str:
    error = out.get("error") or ""
    assert error and "\n" not in error and "Traceback" not in error, error
    return error


class Session:
    """One session over several runs: a thread of a graph with an in-memory checkpointer
    (run_graph starts a new thread each time)."""

    def __init__(self) -> None:
        self.graph = build_graph(checkpointer=InMemorySaver())
        self.config: Any = {"configurable": {"thread_id": uuid.uuid4().hex}}

    async def ask(self, payload: dict[str, Any], ctx: Context | None = None
                  ) -> dict[str, Any]:
        """The thread's state after the run; a failed run's error is in its `error`."""
        with contextlib.suppress(ScholarflowError):  # a failed run raises its error
            await self.graph.ainvoke(payload, self.config, context=ctx)
        return dict((await self.graph.aget_state(self.config)).values)

    async def add(self, *messages: BaseMessage) -> None:
        """Earlier turns, as if runs had saved them."""
        await self.graph.aupdate_state(self.config, {"messages": list(messages)},
                                       as_node="session_save")

    async def messages(self) -> list[Any]:
        values = (await self.graph.aget_state(self.config)).values
        return as_session_messages(values.get("messages") or [])

    async def questions(self) -> list[str]:
        return [m.content for m in await self.messages() if m.type == MessageType.USER]


# --- tiny contexts ---------------------------------------------------------------------

class TestTinyContexts:
    @pytest.mark.parametrize("window", [1000, 1500])  # from 4k up they answer: test_small_windows
    async def test_two_document_summary_is_refused_before_any_call(
        self, fake_llm: FakeOpenAIServer, window: int
    ) -> None:
        # Before: Context(max_context_tokens=4096) looped for 212,790 calls in 10 minutes.
        out, _ = await run_graph({"query": "Summarize these papers",
                                  "document_contents": two_papers()},
                                 Context(max_context_tokens=window))
        error = one_error_line(out)
        assert "max_context_tokens" in error and "reserved_answer_tokens" in error, error
        assert "raise max_context_tokens" in error, error
        assert fake_llm.stats().chat_calls == 0

    @pytest.mark.parametrize("window", [1000, 1500])
    async def test_question_over_a_paper_is_refused_with_default_reserves(
        self, fake_llm: FakeOpenAIServer, window: int
    ) -> None:
        out, _ = await run_graph({"query": QUESTION, "content": paper("en_sparse_attention.md")},
                                 Context(max_context_tokens=window))
        assert "max_context_tokens" in one_error_line(out)
        assert fake_llm.stats().chat_calls == 0
        assert not out.get("answer")

    async def test_chat_with_an_impossible_budget_is_refused(
        self, fake_llm: FakeOpenAIServer
    ) -> None:
        out, _ = await run_graph({"query": "hello"},
                                 Context(max_context_tokens=2000, reserved_answer_tokens=4000))
        assert "reserved_answer_tokens=4000" in one_error_line(out)
        assert fake_llm.stats().chat_calls == 0

    async def test_a_refused_budget_keeps_the_question_and_the_session(
        self, fake_llm: FakeOpenAIServer
    ) -> None:
        session = Session()
        await session.ask({"query": "hello"})
        calls = fake_llm.stats().chat_calls
        out = await session.ask({"query": "Summarize these papers",
                                 "document_contents": two_papers()},
                                Context(max_context_tokens=1500))
        assert "max_context_tokens" in one_error_line(out)
        assert fake_llm.stats().chat_calls == calls
        assert await session.questions() == ["hello", "Summarize these papers"]

    async def test_two_summaries_over_a_small_window_are_shortened_not_looped(
        self, fake_llm: FakeOpenAIServer
    ) -> None:
        fake_llm.configure(rules=[
            {"match": SUMMARY_RULE, "reply": words(600)},  # two do not fit one prompt
            {"match": ".*", "reply": "THE ANSWER"},
        ])
        ctx = Context(max_context_tokens=2000, reserved_answer_tokens=500,
                      system_tokens_estimate=300)
        out, _ = await run_graph({"query": "Summarize these papers",
                                  "document_contents": two_papers()}, ctx)
        assert out["answer"] == "THE ANSWER", out["error"]
        stats = fake_llm.stats()
        assert stats.chat_calls == 3  # 2 summaries, 1 answer from both, each cut to half
        assert_prompts_fit(fake_llm, ctx)
        final = str(stats.requests[-1]["messages"])
        assert final.count("finding1 ") == 2  # the material of both documents

    async def test_a_window_that_fits_a_little_reports_and_merges_in_bounded_calls(
        self, fake_llm: FakeOpenAIServer
    ) -> None:
        fake_llm.configure(rules=[
            {"match": SUMMARY_RULE, "reply": words(600)},  # no two fit one prompt
            {"match": REPORT_RULE, "reply": "Partial report: " + words(50, "point")},
            {"match": MERGE_RULE, "reply": "MERGED"},
        ])
        ctx = Context(max_context_tokens=2000, reserved_answer_tokens=500,
                      system_tokens_estimate=300)
        docs = {**two_papers(), "c": paper("en_retrieval_qa.md")}
        out, _ = await run_graph({"query": "Summarize these papers", "document_contents": docs},
                                 ctx)
        assert out["answer"] == "MERGED", out["error"]
        stats = fake_llm.stats()
        assert stats.chat_calls == 6  # 3 summaries, 2 reports, 1 merge
        assert_prompts_fit(fake_llm, ctx)
        reports = [r for r in stats.requests if REPORT_RULE in str(r["messages"])]
        assert len(reports) == 2
        assert all("finding1 " in str(r["messages"]) for r in reports)  # with material

    async def test_reports_longer_than_the_window_still_converge(
        self, fake_llm: FakeOpenAIServer
    ) -> None:
        # Each partial report is longer than a whole prompt: the merge must still end.
        fake_llm.configure(rules=[
            {"match": SUMMARY_RULE, "reply": words(600)},
            {"match": REPORT_RULE, "reply": words(3000, "verbose")},
            {"match": MERGE_RULE, "reply": "MERGED"},
        ])
        ctx = Context(max_context_tokens=2000, reserved_answer_tokens=500,
                      system_tokens_estimate=300)
        docs = {**two_papers(), "c": paper("en_retrieval_qa.md"),
                "d": paper("zh_hybrid_retrieval.md")}
        out, _ = await run_graph({"query": "Summarize these papers", "document_contents": docs},
                                 ctx)
        assert out["answer"] == "MERGED", out["error"]
        # 4 summaries, 2 reports (pairs of halves), then the two reports, halved, merged
        assert fake_llm.stats().chat_calls == 4 + 2 + 1
        assert_prompts_fit(fake_llm, ctx)

    async def test_fifty_documents_in_a_small_window_terminate_in_bounded_calls(
        self, fake_llm: FakeOpenAIServer
    ) -> None:
        fake_llm.configure(rules=[
            {"match": SUMMARY_RULE, "reply": words(300)},
            {"match": REPORT_RULE, "reply": words(400, "report")},
            {"match": MERGE_RULE, "reply": "MERGED"},
        ])
        ctx = Context(max_context_tokens=3000, reserved_answer_tokens=500,
                      system_tokens_estimate=300, approval_documents=None)
        docs = {f"d{i}": f"# Paper {i}\n\n" + f"Paper {i} studies topic {i}. " * 40
                for i in range(50)}
        out, _ = await run_graph({"query": "Summarize these papers",
                                  "document_contents": docs}, ctx)
        assert out["answer"] == "MERGED", out["error"]
        # 50 summaries, then each round at least halves the texts: under 50 more calls.
        assert fake_llm.stats().chat_calls <= 50 + 50
        assert_prompts_fit(fake_llm, ctx)

    # A question over one paper (~1,900 tokens) with reserved_answer_tokens=300 and
    # system_tokens_estimate=200, window by window: refused before any call where no
    # passage fits, answered from passages where some do, from the whole paper where it fits.
    @staticmethod
    def _window(window: int) -> Context:
        return Context(max_context_tokens=window, reserved_answer_tokens=300,
                       system_tokens_estimate=200)

    async def test_a_window_no_passage_fits_is_refused_before_any_call(
        self, fake_llm: FakeOpenAIServer
    ) -> None:
        fake_llm.configure(rules=[{"match": QA_RULE, "reply": "It is 3e-4 [1]."}])
        out, _ = await run_graph({"query": QUESTION, "content": paper("en_sparse_attention.md")},
                                 self._window(700))
        error = one_error_line(out)
        assert error.startswith("max_context_tokens=700 leaves only 200 tokens for documents "
                                "after reserved_answer_tokens=300 and system_tokens_estimate=200"
                                ), error
        assert "to at least 756" in error, error
        assert fake_llm.stats().chat_calls == 0 and not out.get("answer")

    async def test_a_small_window_answers_from_passages_of_the_paper(
        self, fake_llm: FakeOpenAIServer
    ) -> None:
        fake_llm.configure(rules=[{"match": QA_RULE, "reply": "It is 3e-4 [1]."}])
        ctx = self._window(1000)
        out, _ = await run_graph({"query": QUESTION, "content": paper("en_sparse_attention.md")},
                                 ctx)
        assert (out["error"], out["strategy"]) == (None, "chunk_recall"), out["error"]
        answers = [r for r in fake_llm.stats().requests if QA_RULE in str(r["messages"])]
        (request,) = answers
        system = " ".join(str(request["messages"][0]["content"]).split())
        assert '<chunk n="1"' in system and "<document" not in system, system
        # the passage that answers, not only the wrapper
        assert "a learning rate of 3e-4 with 2,000 warmup steps" in system, system
        assert_prompts_fit(fake_llm, ctx)

    @pytest.mark.parametrize("window", [4000, 8192])
    async def test_a_window_the_paper_fits_answers_from_the_whole_paper(
        self, fake_llm: FakeOpenAIServer, window: int
    ) -> None:
        fake_llm.configure(rules=[{"match": QA_RULE, "reply": "It is 3e-4 [1]."}])
        ctx = self._window(window)
        text = paper("en_sparse_attention.md")
        out, _ = await run_graph({"query": QUESTION, "content": text}, ctx)
        assert (out["error"], out["strategy"]) == (None, "full_content"), out["error"]
        (request,) = [r for r in fake_llm.stats().requests if QA_RULE in str(r["messages"])]
        system = str(request["messages"][0]["content"])
        assert "<document" in system and "<chunk" not in system
        assert text.strip() in system  # all of it
        assert_prompts_fit(fake_llm, ctx)

    async def test_the_best_passage_is_cut_to_fit_rather_than_dropped(
        self, fake_llm: FakeOpenAIServer
    ) -> None:
        # Before: a window smaller than the first passage sent the question with no passage.
        fake_llm.configure(rules=[{"match": QA_RULE, "reply": "It is 3e-4 [1]."}])
        ctx = Context(max_context_tokens=736, reserved_answer_tokens=300,
                      system_tokens_estimate=100)
        text = "# Training\n\n" + "The learning rate was 3e-4 in every run we made. " * 300
        out, _ = await run_graph({"query": QUESTION, "content": text}, ctx)
        assert out["error"] is None and out["strategy"] == "chunk_recall", out["error"]
        (request,) = [r for r in fake_llm.stats().requests if QA_RULE in str(r["messages"])]
        system = str(request["messages"][0]["content"])
        assert system.count("<chunk n=") == 1 and "learning rate was 3e-4" in system, system
        assert_prompts_fit(fake_llm, ctx)

    async def test_chat_with_a_long_history_stays_within_a_small_window(
        self, fake_llm: FakeOpenAIServer
    ) -> None:
        ctx = Context(max_context_tokens=3000, reserved_answer_tokens=500,
                      system_tokens_estimate=300)
        session = Session()
        await session.ask({"query": "hello"}, ctx)
        for i in range(6):  # earlier turns, each alone nearly the window
            await session.add(question_message(words(1500, f"q{i}x")),
                              answer_message(words(1500, f"a{i}x"), message_id=None,
                                             metadata={}))
        fake_llm.reset()
        fake_llm.configure(rules=[{"match": "Summarise the conversation", "reply": "EARLIER"}])
        question = "And what about that? " + words(600, "detail")  # fits, barely
        out = await session.ask({"query": question}, ctx)
        assert out["error"] is None, out["error"]
        assert fake_llm.stats().chat_calls >= 1
        assert_prompts_fit(fake_llm, ctx)

    async def test_compression_of_an_oversized_session_fits_the_window(
        self, fake_llm: FakeOpenAIServer
    ) -> None:
        fake_llm.configure(rules=[{"match": "Summarise the conversation", "reply": "EARLIER"}])
        ctx = Context(max_context_tokens=4000, reserved_answer_tokens=500,
                      system_tokens_estimate=300)
        session = Session()
        await session.ask({"query": "hello"}, ctx)
        await session.add(*(question_message(words(2000, f"m{i}x")) for i in range(10)))
        fake_llm.reset()
        fake_llm.configure(rules=[{"match": "Summarise the conversation", "reply": "EARLIER"}])
        out = await session.ask({"query": "next"}, ctx)
        assert out["error"] is None, out["error"]
        compressions = [r for r in fake_llm.stats().requests
                        if "Summarise the conversation" in str(r["messages"])]
        assert len(compressions) == 1
        assert_prompts_fit(fake_llm, ctx)
        active = [m for m in await session.messages() if not m.compressed]
        assert active[0].type == MessageType.COMPRESSION

    def test_bounded_rounds_stop_a_loop_that_never_finishes(self) -> None:
        rounds = 0
        with pytest.raises(LoopLimitError, match="merging did not finish within 3 rounds: "
                                                 "raise max_context_tokens"):
            for _ in bounded_rounds(3, "merging", fix="raise max_context_tokens"):
                rounds += 1
        assert rounds == 3

    def test_a_round_without_progress_fails_at_once(self) -> None:
        with pytest.raises(LoopLimitError, match=r"no progress \(4 -> 4 items\)"):
            require_progress(4, 4, "merging", fix="raise max_context_tokens")
        require_progress(4, 2, "merging", fix="raise max_context_tokens")


# --- sizes ----------------------------------------------------------------------------

class TestSizes:
    @pytest.mark.parametrize("size", ["1 MB", "200k tokens"])
    async def test_a_question_too_long_for_the_window_is_one_error_and_no_call(
        self, fake_llm: FakeOpenAIServer, size: str
    ) -> None:
        question = ("Explain this. " + "lorem ipsum dolor sit amet " * 40_000)[:1_000_000] \
            if size == "1 MB" else "Explain " + words(100_000, "w")
        assert count_tokens(question) > 128_000
        session = Session()
        await session.ask({"query": "hello"})
        calls = fake_llm.stats().chat_calls
        out = await session.ask({"query": question})
        error = one_error_line(out)
        assert "question is too long" in error and "shorten the question" in error, error
        assert "max_context_tokens=128000" in error
        assert fake_llm.stats().chat_calls == calls  # not one more call
        assert (await session.questions())[-1] == question.strip()

    async def test_a_long_question_that_fits_is_answered_within_the_window(
        self, fake_llm: FakeOpenAIServer
    ) -> None:
        ctx = Context(max_context_tokens=8000, reserved_answer_tokens=1000,
                      system_tokens_estimate=500)
        out, _ = await run_graph({"query": "Please comment: " + words(2000, "x")}, ctx)
        assert out["error"] is None, out["error"]
        assert_prompts_fit(fake_llm, ctx)

    async def test_the_last_line_guard_never_sends_an_oversized_prompt(
        self, fake_llm: FakeOpenAIServer
    ) -> None:
        ctx = Context(max_context_tokens=1000)
        with pytest.raises(PromptTooLargeError, match="max_context_tokens=1000 and was not sent"):
            await llm.complete(ctx, [("user", words(2000))], node="test")
        with pytest.raises(PromptTooLargeError):
            await llm.stream(ctx, [("user", words(2000))], node="test", on_text=print)
        assert fake_llm.stats().chat_calls == 0

    def test_the_guard_counts_the_answer_tokens_too(self) -> None:
        ctx = Context(max_context_tokens=1000, openai_api_key="x")
        prompt = [("user", words(400))]
        check_prompt(ctx, prompt)
        with pytest.raises(PromptTooLargeError, match="plus max_tokens=900"):
            check_prompt(ctx, prompt, max_tokens=900)

    async def test_huge_document_titles_do_not_overflow_the_planner(
        self, fake_llm: FakeOpenAIServer
    ) -> None:
        ctx = Context(max_context_tokens=6000, reserved_answer_tokens=1000,
                      system_tokens_estimate=500)
        title = "# " + words(3000, "Title") + "\n\n"
        docs = {f"d{i}": title + paper("en_sparse_attention.md") for i in range(3)}
        out, _ = await run_graph({"query": "Which learning rate does each paper use?",
                                  "document_contents": docs}, ctx)
        assert (out["error"], out["strategy"]) == (None, "chunk_recall"), out["error"]
        requests = fake_llm.stats().requests
        (planner,) = [str(r["messages"][0]["content"]) for r in requests
                      if "sub_questions" in str(r["messages"][0]["content"])]
        # Each of the three documents listed, its 3,000-word title cut short (a document's
        # title is clipped when it is read, and the planner caps each listed title again).
        listed = re.findall(r"^- id (d\d): (.*)$", planner, re.M)
        assert [d for d, _ in listed] == ["d0", "d1", "d2"]
        assert all(t.endswith("…") and count_tokens(t) < 100 for _, t in listed), listed
        assert "Title2999" not in planner
        answer = " ".join(str(requests[-1]["messages"][0]["content"]).split())
        assert QA_RULE in answer and "a learning rate of 3e-4" in answer
        assert_prompts_fit(fake_llm, ctx)


# --- faults: empty answers and timeouts ------------------------------------------------

class TestFaults:
    @pytest.mark.parametrize("reply", ["", "   ", "\n\n\t "])
    async def test_an_empty_answer_is_an_error_after_one_retry(
        self, fake_llm: FakeOpenAIServer, reply: str
    ) -> None:
        fake_llm.configure(rules=[{"match": QA_RULE, "reply": reply}])
        out, _ = await run_graph({"query": QUESTION, "content": paper("en_sparse_attention.md")})
        error = one_error_line(out)
        assert "returned an empty answer" in error and "SCHOLARFLOW_MODEL" in error, error
        answers = [r for r in fake_llm.stats().requests if QA_RULE in str(r["messages"])]
        assert len(answers) == 2  # one retry, then the error

    async def test_an_empty_chat_answer_is_an_error(self, fake_llm: FakeOpenAIServer) -> None:
        fake_llm.configure(rules=[{"match": ".*", "reply": ""}])
        out, _ = await run_graph({"query": "hello"})
        assert "returned an empty answer" in one_error_line(out)
        assert fake_llm.stats().chat_calls == 2

    async def test_an_empty_partial_report_is_not_merged(
        self, fake_llm: FakeOpenAIServer
    ) -> None:
        fake_llm.configure(rules=[
            {"match": SUMMARY_RULE, "reply": words(600)},
            {"match": REPORT_RULE, "reply": " "},
            {"match": MERGE_RULE, "reply": "MERGED"},
        ])
        ctx = Context(max_context_tokens=2000, reserved_answer_tokens=500,
                      system_tokens_estimate=300)
        docs = {**two_papers(), "c": paper("en_retrieval_qa.md")}  # no two fit: reports
        out, _ = await run_graph({"query": "Summarize these papers", "document_contents": docs},
                                 ctx)
        assert "empty partial report" in one_error_line(out)
        assert not any(MERGE_RULE in str(r["messages"]) for r in fake_llm.stats().requests)

    @pytest.mark.parametrize("args", [["hello there"], [QUESTION, "--file", str(PAPER)]])
    def test_empty_answer_on_the_command_line_exits_1(
        self, seeded: Seeded, llm_server: FakeOpenAIServer, args: list[str]
    ) -> None:
        llm_server.configure(rules=[{"match": ".*", "reply": " \n"}])
        result = run(["ask", *args, "--session", seeded.session_id],
                     llm_env(llm_server.base_url, seeded.home))
        line = assert_clean_error(result, exit_code=EXIT_FAILED,
                                  names=["empty answer", "SCHOLARFLOW_MODEL"])
        assert "Traceback" not in line
        assert not result.stdout.strip()
        assert_no_secret(seeded.home, result.stdout, result.stderr)
        assert_intact(seeded)

    @pytest.mark.parametrize("value", ["abc", "0", "-1", "nan"])
    def test_a_bad_llm_timeout_is_one_line_naming_the_variable(
        self, seeded: Seeded, llm_server: FakeOpenAIServer, value: str
    ) -> None:
        result = run(["ask", "hello there"],
                     llm_env(llm_server.base_url, seeded.home, SCHOLARFLOW_LLM_TIMEOUT=value))
        assert_clean_error(result, exit_code=EXIT_BAD_REQUEST,
                           names=["SCHOLARFLOW_LLM_TIMEOUT", repr(value)])
        assert llm_server.stats().chat_calls == 0
        assert_no_secret(seeded.home, result.stdout, result.stderr)
        assert_intact(seeded)

    def test_a_short_llm_timeout_from_the_environment_applies(
        self, seeded: Seeded, llm_server: FakeOpenAIServer
    ) -> None:
        # The server would answer after 30 s: each attempt gives up at 0.5 s, and after
        # the node's 4 attempts (ERROR_RETRY, with backoff under 4 s in all) the run ends.
        # Had the timeout not applied, the first attempt alone would have taken 30 s.
        llm_server.configure(latency=30.0)
        started = time.monotonic()
        result = run(["ask", "hello there", "--session", seeded.session_id],
                     llm_env(llm_server.base_url, seeded.home, SCHOLARFLOW_LLM_TIMEOUT="0.5"),
                     timeout=60)
        elapsed = time.monotonic() - started
        # The timeout's wording (and its fix) belongs to llm.translate_api_error.
        line = assert_clean_error(result, exit_code=EXIT_FAILED,
                                  names=["SCHOLARFLOW_LLM_TIMEOUT"])
        assert f"did not answer within 0.5 s after {ERROR_RETRY.max_attempts} attempts" in line
        assert llm_server.stats().chat_calls == ERROR_RETRY.max_attempts
        assert elapsed < 25, elapsed
        assert_no_secret(seeded.home, result.stdout, result.stderr)
        assert_intact(seeded)

    def test_the_llm_timeout_variable_sets_the_default_only(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("SCHOLARFLOW_LLM_TIMEOUT", "2.5")
        assert Context().llm_timeout_seconds == 2.5
        assert Context(llm_timeout_seconds=7).llm_timeout_seconds == 7  # a value given wins
        monkeypatch.setenv("SCHOLARFLOW_LLM_TIMEOUT", "soon")
        with pytest.raises(ConfigurationError, match="SCHOLARFLOW_LLM_TIMEOUT must be"):
            Context()
