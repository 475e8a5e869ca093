"""The chat model run that LangGraph's `messages` stream mode shows for an answer.

llm.stream(visible=True) runs the real model hidden (TAG_NOSTREAM) and feeds the
answer, as the reader gets it (citations filtered, footers added), to an
`AnswerRelay`. Its tokens are exactly that text, so the streamed message adds up
to the answer saved in the thread, whatever the filter changed.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from pydantic import PrivateAttr


class AnswerRelay(BaseChatModel):
    """A chat model whose reply is the text of an async iterator, once.

    LangChain streams it when a streaming handler listens (LangGraph's v1 and v2
    messages handlers alike) and otherwise collects it whole; either way the run's
    message has one id, which the caller records. It reports no token usage: the
    real call does, and a trace must not count the answer twice.
    """

    model_name: str = ""  # the real model's, for the run's metadata
    _source: AsyncIterator[str] | None = PrivateAttr(default=None)

    @classmethod
    def of(cls, model_name: str, source: AsyncIterator[str]) -> AnswerRelay:
        # cache=False: a global LLM cache would replay an earlier answer to the same prompt.
        relay = cls(model_name=model_name, cache=False)
        relay._source = source
        return relay

    @property
    def _llm_type(self) -> str:
        return "scholarflow-answer"

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: Any = None, **kwargs: Any) -> ChatResult:
        raise NotImplementedError("the answer relay is async only")

    async def _agenerate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                         run_manager: Any = None, **kwargs: Any) -> ChatResult:
        text = "".join([chunk.text async for chunk in self._astream(messages)])
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])

    async def _astream(self, messages: list[BaseMessage], stop: list[str] | None = None,
                       run_manager: Any = None,
                       **kwargs: Any) -> AsyncIterator[ChatGenerationChunk]:
        source, self._source = self._source, None
        if source is None:
            raise RuntimeError("an AnswerRelay relays one answer, once")
        async for piece in source:
            yield ChatGenerationChunk(message=AIMessageChunk(content=piece))
