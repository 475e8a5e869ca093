"""How fast each model endpoint was measured to read prompts and write replies.

A time estimate (nodes/cost_check.py) needs the model's speed, and only a
measurement gives it. Every successful call through llm/calls.py adds one sample
to its endpoint's record (`endpoint_key`: base URL and model): its prompt tokens
and the seconds to its first token (reading: the server's queue and prefill), and
its reply tokens and the seconds from the first token to the last (writing).
Tokens are counted as scholarflow counts them (tokens.py), the unit its estimates
use. A call granted while others of ours were in flight may have waited for them,
so once any call was alone in flight, only such calls count. The latest `WINDOW`
samples are kept.

The figures outlive the process where that is sensible: the command line saves
them when a command ends (`save_rates`, to `<SCHOLARFLOW_HOME>/llm_rates.json`),
and a later process that has measured nothing itself reads them (`saved_rate`).
The file names an endpoint by a hash of its key (a base URL may carry a
password) and the model. Reading or writing it never fails a run: a missing or
unreadable file is no measurement.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

WINDOW = 32
RATES_FILENAME = "llm_rates.json"
# A reply this short is mostly its first token: no measure of writing speed.
MIN_WRITING_TOKENS = 8


@dataclass(frozen=True, slots=True)
class Sample:
    """One call: tokens read and written, and how long each took."""

    prompt_tokens: int
    reading_seconds: float
    reply_tokens: int
    writing_seconds: float
    alone: bool  # no other call of ours was in flight when it was granted


@dataclass(frozen=True, slots=True)
class Rate:
    """An endpoint's measured speed, in tokens per second."""

    reading: float
    writing: float
    calls: int  # the samples it comes from
    source: str  # where it was measured, for the person reading the estimate

    def seconds(self, prompt_tokens: int, reply_tokens: int) -> float:
        """How long one call of this size takes, alone, at this speed."""
        return prompt_tokens / self.reading + reply_tokens / self.writing

    def words(self) -> str:
        return (f"it read ~{self.reading:,.0f} and wrote ~{self.writing:,.1f} tokens a second "
                f"over {self.calls} call{'' if self.calls == 1 else 's'} {self.source}")


_samples: dict[str, deque[Sample]] = {}


def record(endpoint: str, sample: Sample) -> None:
    """Add one call's sample to `endpoint`'s record."""
    if sample.prompt_tokens <= 0 or sample.reading_seconds <= 0:
        return
    _samples.setdefault(endpoint, deque(maxlen=WINDOW)).append(sample)


def forget() -> None:
    """Drop every measurement of this process (tests)."""
    _samples.clear()


def measured_rate(endpoint: str) -> Rate | None:
    """`endpoint`'s speed measured in this process; None before a call that measures it."""
    samples = list(_samples.get(endpoint) or ())
    alone = [s for s in samples if s.alone]
    return _rate(alone or samples, "in this process")


def _rate(samples: list[Sample], source: str) -> Rate | None:
    reading_seconds = sum(s.reading_seconds for s in samples)
    written = [s for s in samples if s.reply_tokens >= MIN_WRITING_TOKENS
               and s.writing_seconds > 0]
    writing_seconds = sum(s.writing_seconds for s in written)
    if reading_seconds <= 0 or writing_seconds <= 0:
        return None
    # The first token came with the reading: the writing time covers the rest.
    return Rate(reading=sum(s.prompt_tokens for s in samples) / reading_seconds,
                writing=sum(s.reply_tokens - 1 for s in written) / writing_seconds,
                calls=len(samples), source=source)


def _file_key(endpoint: str) -> str:
    return hashlib.sha256(endpoint.encode("utf-8")).hexdigest()[:24]


def saved_rate(endpoint: str, home: Path) -> Rate | None:
    """`endpoint`'s speed as an earlier process saved it in `home`; None when none did."""
    entry = _read(home / RATES_FILENAME).get(_file_key(endpoint))
    if not isinstance(entry, dict):
        return None
    try:
        reading, writing = float(entry["reading"]), float(entry["writing"])
        calls, saved = int(entry["calls"]), str(entry["saved"])
    except (KeyError, TypeError, ValueError):
        return None
    if not (reading > 0 and writing > 0 and calls > 0):
        return None
    return Rate(reading=reading, writing=writing, calls=calls, source=f"saved on {saved}")


def save_rates(home: Path) -> None:
    """Write this process's measurements into `home`'s file, keeping other endpoints'."""
    rates = {e: r for e in _samples if (r := measured_rate(e)) is not None}
    if not rates:
        return
    path = home / RATES_FILENAME
    try:
        saved = _read(path)
        stamp = time.strftime("%Y-%m-%d")
        for endpoint, rate in rates.items():
            saved[_file_key(endpoint)] = {
                "model": endpoint.rpartition("|")[2], "reading": round(rate.reading, 3),
                "writing": round(rate.writing, 3), "calls": rate.calls, "saved": stamp}
        home.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.{os.getpid()}")
        partial.write_text(json.dumps(saved, indent=1, sort_keys=True), encoding="utf-8")
        os.replace(partial, path)  # whole or not at all, for a reader in another process
    except OSError as exc:
        logger.debug("could not save the model's measured speed to %s: %r", path, exc)


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        logger.debug("ignoring the model speeds in %s: %r", path, exc)
        return {}
    return data if isinstance(data, dict) else {}
