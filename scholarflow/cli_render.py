"""How `scholarflow ask` shows a run in a terminal: answer on stdout, the rest on stderr."""

from __future__ import annotations

import json
import sys
from typing import Any, TextIO


class TerminalRenderer:
    """Prints stream events for a person: the answer as it streams, progress and thoughts dimmed."""

    def __init__(self, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> None:
        self.out = out
        self.err = err
        self.color = err.isatty()
        self.answered = False
        self.in_delta = False
        self.summaries_total = 0
        self.summaries_done = 0
        self.summaries_failed = 0
        self.progress_shown = False
        self.error: str | None = None
        self.final: dict[str, Any] | None = None

    def _dim(self, text: str) -> str:
        return f"\x1b[2m{text}\x1b[0m" if self.color else text

    def _note(self, text: str) -> None:
        self._end_progress()
        print(self._dim(text), file=self.err, flush=True)

    def _end_progress(self) -> None:
        if self.progress_shown and self.color:
            print(file=self.err)
        self.progress_shown = False

    def _progress(self) -> None:
        done, total = self.summaries_done + self.summaries_failed, self.summaries_total
        failed = f", {self.summaries_failed} failed" if self.summaries_failed else ""
        # A resumed run does not announce the total again: count what it does.
        line = f"summaries {done}/{total}{failed}" if total else f"summaries {done}{failed}"
        if self.color:
            print("\r" + self._dim(line), end="", file=self.err, flush=True)
            self.progress_shown = True
        elif done == total or done % 20 == 0:
            print(line, file=self.err, flush=True)

    def handle(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "thought_chunk":
            if event.get("delta"):
                print(self._dim(event["content"]), end="", file=self.err, flush=True)
                self.in_delta = True
            else:
                self._note(f"· {event['content']}")
        elif kind == "answer_chunk":
            self._end_progress()
            if self.in_delta:
                print(file=self.err)
                self.in_delta = False
            self.out.write(event["content"])
            self.out.flush()
            self.answered = True
        elif kind == "doc_summary_init":
            self.summaries_total = event["total"]
            self.summaries_done = 0
            self._note(f"· summarising {event['total']} documents "
                       f"({event['cached']} from cache)")
        elif kind == "doc_summary_complete":
            self.summaries_done += 1
            self._progress()
        elif kind == "doc_summary_error":
            self.summaries_failed += 1
            self._note(f"! {event.get('title') or event.get('doc_id')}: {event['error']}")
        elif kind == "final_answer":
            self.final = event
            if self.answered:
                self.out.write("\n")
                self.out.flush()
            self._note(f"session {event['session_id']} · {event.get('intent')} · "
                       f"{event.get('strategy') or 'chat'}")
        elif kind == "error":
            self.error = event["message"]
            if self.answered:
                self.out.write("\n")
            self._end_progress()
            print(f"error: {event['message']}", file=self.err, flush=True)


class JsonRenderer:
    """One JSON object per event per line; the last is final_answer (or error)."""

    def __init__(self, out: TextIO = sys.stdout) -> None:
        self.out = out
        self.error: str | None = None
        self.final: dict[str, Any] | None = None

    def handle(self, event: dict[str, Any]) -> None:
        if event.get("type") == "error":
            self.error = event["message"]
        elif event.get("type") == "final_answer":
            self.final = event
        self.out.write(json.dumps(event, ensure_ascii=False) + "\n")
        self.out.flush()
