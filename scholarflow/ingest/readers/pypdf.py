"""The pure-Python reader: pypdf (BSD). No positions: lines in pypdf's order.

Kept for a platform without PDFium's wheels and for comparison; fontTools, when
installed, lets pypdf decode CFF fonts (pypdf asks for it).
"""

from __future__ import annotations

import io
import re
from typing import TYPE_CHECKING

from scholarflow.ingest.documents import DocumentError
from scholarflow.ingest.readers import MAX_PAGES, Line, PageText, PdfContent
from scholarflow.ingest.readers.common import too_many_pages, unreadable

if TYPE_CHECKING:
    from pypdf import PdfReader as PypdfDocument

__all__ = ["READER", "PypdfReader"]

# pypdf writes a glyph it cannot map by its name, "/C20": never text.
_GLYPH_NAME = re.compile(r"/C\d{2}\b")
# Lines end at newlines only: `splitlines` also splits at the control codes old TeX
# fonts give their ligatures (\x0b-\x0f, \x1c-\x1e).
_LINES = re.compile(r"\r?\n|\r(?=\r|$)")


class PypdfReader:
    name = "pypdf"

    def read(self, raw: bytes, shown: str) -> PdfContent:
        from pypdf import PdfReader as PypdfDocument
        from pypdf.errors import FileNotDecryptedError

        try:
            document = PypdfDocument(io.BytesIO(raw))
            if document.is_encrypted and not _decrypt_with_empty_password(document, shown):
                raise DocumentError(f"{shown} is encrypted; decrypt it first")
            count = len(document.pages)
            if count > MAX_PAGES:
                raise too_many_pages(shown, count)
            pages = tuple(
                PageText(number, tuple(Line(_GLYPH_NAME.sub("", text))
                                       for text in _LINES.split(page.extract_text() or "") if text),
                         positioned=False)
                for number, page in enumerate(document.pages, start=1))
            metadata = {key.lstrip("/").lower(): str(value)
                        for key, value in (document.metadata or {}).items() if value}
        except DocumentError:
            raise
        except FileNotDecryptedError:
            raise DocumentError(f"{shown} is encrypted; decrypt it first") from None
        except Exception as exc:  # pypdf raises many types on damaged files; all mean the same
            raise unreadable(shown, exc) from None
        return PdfContent(pages, metadata)


def _decrypt_with_empty_password(document: PypdfDocument, shown: str) -> bool:
    """Many PDFs are encrypted only to set permissions, with an empty user password."""
    from pypdf import PasswordType
    from pypdf.errors import DependencyError

    try:
        return document.decrypt("") != PasswordType.NOT_DECRYPTED
    except DependencyError:
        raise DocumentError(
            f"{shown} is AES-encrypted and opening it needs the 'cryptography' package: "
            "pip install 'pypdf[crypto]'"
        ) from None


READER = PypdfReader()
