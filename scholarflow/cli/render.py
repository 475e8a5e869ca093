"""How `scholarflow ask` shows a run in a terminal: answer on stdout, the rest on stderr.

Titles, file names and messages quoting them are anyone's text: everything
printed goes through `printable`, so none of it can drive the terminal.
"""

from __future__ import annotations

import sys
from typing import Any, TextIO

from scholarflow.printable import safe_json, safe_lines, safe_text

# The error event's kind (scholarflow.nodes.errors.error_kind): a bad request or setting.
BAD_REQUEST_KINDS = frozenset({"input", "config"})


class _Errors:
    """The run's error and its kind, known from the node_error event that caused it."""

    def __init__(self) -> None:
        self.error: str | None = None
        self.error_kind: str | None = None
        self._kinds: dict[str, str] = {}

    def track(self, event: dict[str, Any]) -> None:
        if event.get("type") == "node_error" and event.get("kind"):
            self._kinds.setdefault(str(event.get("error")), str(event["kind"]))
        elif event.get("type") == "error":
            self.error = str(event.get("message"))
            self.error_kind = event.get("kind") or self._kinds.get(self.error)

    @property
    def bad_request(self) -> bool:
        return self.error_kind in BAD_REQUEST_KINDS


class TerminalRenderer(_Errors):
    """Prints stream events for a person: the answer as it streams, progress and thoughts dimmed."""

    def __init__(self, out: TextIO | None = None, err: TextIO | None = None) -> None:
        super().__init__()
        # Looked up now, not at import: a caller (a test) may have replaced them since.
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        self.color = self.err.isatty()
        self.out_tty = self.out.isatty()
        self.answered = False
        self.in_delta = False
        self.summaries_total = 0
        self.summaries_done = 0
        self.summaries_failed = 0
        self.progress_shown = False
        self.final: dict[str, Any] | None = None

    def _dim(self, text: str) -> str:
        return f"\x1b[2m{text}\x1b[0m" if self.color else text

    def _note(self, text: str) -> None:
        self._end_progress()
        if self.in_delta:  # a model's streamed thought was going on: end its line
            print(file=self.err)
            self.in_delta = False
        print(self._dim(safe_text(text)), file=self.err, flush=True)

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
        self.track(event)
        kind = event.get("type")
        if kind == "thought_chunk":
            if event.get("delta"):
                print(self._dim(safe_lines(event["content"])), end="", file=self.err, flush=True)
                self.in_delta = True
            else:
                self._note(f"· {event['content']}")
        elif kind == "answer_chunk":
            self._end_progress()
            if self.in_delta:
                print(file=self.err)
                self.in_delta = False
            # Escaped on a terminal only: piped, the answer is passed on as written.
            self.out.write(safe_lines(event["content"]) if self.out_tty else event["content"])
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
            if self.answered:
                self.out.write("\n")
            self._end_progress()
            print(f"error: {safe_text(event['message'])}", file=self.err, flush=True)


class JsonRenderer(_Errors):
    """One JSON object per event per line; the last is final_answer (or error)."""

    def __init__(self, out: TextIO | None = None) -> None:
        super().__init__()
        self.out = out or sys.stdout
        self.final: dict[str, Any] | None = None

    def handle(self, event: dict[str, Any]) -> None:
        self.track(event)
        if event.get("type") == "final_answer":
            self.final = event
        self.out.write(safe_json(event) + "\n")
        self.out.flush()


def plan_review_text(review: dict[str, Any]) -> str:
    """The plan a run paused on (`--review-plan`), for a person to approve, edit or comment:
    its sub-questions, numbered as an edit gives them, and the recall steps."""
    lines = [f"plan for review: {safe_text(review.get('question') or '')}", "sub-questions:"]
    lines += [f"  {n}. {safe_text(q)}"
              for n, q in enumerate(review.get("sub_questions") or [], start=1)]
    lines.append("steps:")
    for step in review.get("plan") or []:
        queries = " | ".join(safe_text(q) for q in step.get("queries") or [])
        where = f" (document {safe_text(step['doc_id'])})" if step.get("doc_id") else ""
        lines.append(f"  {step.get('step')}. search: {queries}{where}")
    return "\n".join(lines)
