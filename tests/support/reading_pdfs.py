"""PDFs the reading tests make: text in a font mapped to no real characters, text with
TeX's ligature codes, and scans (pages that are one image, with or without text on it).

Written with pypdf's objects; scans are rendered by PDFium from a text PDF, so
the image holds real glyphs an OCR engine can read. Chinese lines are drawn by
Pillow in a subset of WenQuanYi Micro Hei (Apache-2.0) that holds only their
glyphs (`CJK_FONT`). No file leaves the test.
"""

from __future__ import annotations

import io
import zlib
from collections.abc import Sequence
from pathlib import Path

from pypdf import PdfWriter
from pypdf.generic import (
    ArrayObject,
    DecodedStreamObject,
    DictionaryObject,
    FloatObject,
    NameObject,
    NumberObject,
    StreamObject,
)

__all__ = ["CJK_FONT", "draw_cjk_lines", "image_pdf", "make_scan_pdf", "make_text_pdf",
           "render_lines"]

CJK_FONT = Path(__file__).resolve().parents[1] / "data" / "fonts" / "wqy-microhei-ocr-subset.ttf"
# The characters CJK_FONT holds: Chinese lines drawn with it may use only these.
CJK_TEXT = "稀疏注意力降低了长文本的内存。模型关注局部窗口和少数全局词元。第一节方法"
_DPI = 200  # as scholarflow.ingest.ocr renders a page

# A CMap that maps every byte to the next character: "Sparse" reads "Tqbstf", as a font
# whose glyphs map to no real characters reads to every engine.
_SHIFTED_CMAP = b"""/CIDInit /ProcSet findresource begin
12 dict begin
begincmap
/CMapName /Shifted def
/CMapType 2 def
1 begincodespacerange <00> <FF> endcodespacerange
1 beginbfrange <20> <7E> <0021> endbfrange
endcmap
CMapName currentdict /CMap defineresource pop
end
end"""


def make_text_pdf(pages: Sequence[Sequence[str | bytes]], *, unmapped: Sequence[int] = (),
                  size: float = 10, title: str | None = None, top: int = 750,
                  headers: Sequence[str | None] = (), private: dict[int, int] | None = None
                  ) -> bytes:
    """A PDF of Helvetica text lines; the pages numbered in `unmapped` (1-based) use a
    font whose ToUnicode map names the wrong characters. A line given as bytes is
    written as those codes (TeX's ligature codes, control characters). The text starts
    `top` points above the page's bottom; `headers[i]`, when given, is a line 50 points
    above it on page i + 1 (a running header). `private` maps byte codes to the
    code points the plain font's ToUnicode map gives them (a ligature glyph at a
    private-use code point, as some journal fonts have it); other bytes read as ASCII."""
    writer = PdfWriter()
    plain_font = _font()
    if private:
        own = StreamObject()
        own._data = _private_cmap(private)
        plain_font[NameObject("/ToUnicode")] = writer._add_object(own)
    plain = writer._add_object(plain_font)
    shifted_font = _font()
    cmap = StreamObject()
    cmap._data = _SHIFTED_CMAP
    shifted_font[NameObject("/ToUnicode")] = writer._add_object(cmap)
    shifted = writer._add_object(shifted_font)
    for number, lines in enumerate(pages, start=1):
        page = writer.add_blank_page(612, 792)
        font = shifted if number in unmapped else plain
        ops = [b"BT", b"/F1 %d Tf" % size, b"%d TL" % (size * 1.3)]
        header = headers[number - 1] if number <= len(headers) else None
        if header:
            ops += [b"50 %d Td" % (top + 50), b"(" + header.encode("latin-1") + b") Tj",
                    b"0 -50 Td"]
        else:
            ops.append(b"50 %d Td" % top)
        for line in lines:
            raw = line if isinstance(line, bytes) else line.encode("latin-1")
            escaped = raw.replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)")
            ops.append(b"(" + escaped + b") Tj T*")
        ops.append(b"ET")
        stream = DecodedStreamObject()
        stream.set_data(b"\n".join(ops))
        page[NameObject("/Contents")] = writer._add_object(stream)
        page[NameObject("/Resources")] = DictionaryObject(
            {NameObject("/Font"): DictionaryObject({NameObject("/F1"): font})})
    if title:
        writer.add_metadata({"/Title": title})
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def _private_cmap(codes: dict[int, int]) -> bytes:
    chars = b"".join(b"<%02X> <%04X>\n" % (code, point) for code, point in codes.items())
    return (b"/CIDInit /ProcSet findresource begin\n12 dict begin\nbegincmap\n"
            b"/CMapName /Private def\n/CMapType 2 def\n"
            b"1 begincodespacerange <00> <FF> endcodespacerange\n"
            b"1 beginbfrange <20> <7E> <0020> endbfrange\n"
            + b"%d beginbfchar\n" % len(codes) + chars + b"endbfchar\n"
            b"endcmap\nCMapName currentdict /CMap defineresource pop\nend\nend")


def _font() -> DictionaryObject:
    return DictionaryObject({
        NameObject("/Type"): NameObject("/Font"), NameObject("/Subtype"): NameObject("/Type1"),
        NameObject("/BaseFont"): NameObject("/Helvetica"),
    })


def make_scan_pdf(pages: Sequence[Sequence[str]], *, scale: float = 2.0,
                  repeat: int = 1) -> bytes:
    """A PDF of pages that are each one grey image and no text: `pages`' lines rendered
    (so OCR can read them), the whole `repeat` times over (a long scan, cheaply)."""
    import pypdfium2

    rendered = []
    source = pypdfium2.PdfDocument(make_text_pdf(pages, size=14))
    try:
        for index in range(len(source)):
            bitmap = source[index].render(scale=scale, grayscale=True)
            pixels = bitmap.to_numpy()
            rendered.append((pixels.shape[1], pixels.shape[0],
                             zlib.compress(pixels[:, :, 0].tobytes()
                                           if pixels.ndim == 3 else pixels.tobytes())))
    finally:
        source.close()
    return _image_pages([(width, height, data, 612, 792) for width, height, data in rendered],
                        repeat)


def render_lines(lines: Sequence[str], *, size: float = 14) -> tuple[bytes, int, int]:
    """Helvetica `lines` as OCR is given a page (grey, 8 bits, at its 200 dpi), cut to the
    band that holds them, so an engine reads them in a fraction of a page's time."""
    import pypdfium2

    source = pypdfium2.PdfDocument(make_text_pdf([lines], size=size))
    try:
        pixels = source[0].render(scale=_DPI / 72, grayscale=True).to_numpy()
    finally:
        source.close()
    if pixels.ndim == 3:
        pixels = pixels[:, :, 0]
    bottom = int((792 - 750 + size * 1.3 * len(lines) + 2 * size) * _DPI / 72)
    band = pixels[:bottom].copy()
    return band.tobytes(), band.shape[1], band.shape[0]


def draw_cjk_lines(lines: Sequence[str], *, size: float = 14) -> tuple[bytes, int, int]:
    """Chinese `lines` (of `CJK_TEXT`'s characters) drawn as `render_lines` draws Latin."""
    from PIL import Image, ImageDraw, ImageFont

    assert set("".join(lines)) <= set(CJK_TEXT), "CJK_FONT has no glyph for some characters"
    pixels = round(size * _DPI / 72)
    font = ImageFont.truetype(str(CJK_FONT), pixels)
    width, top = int(612 * _DPI / 72), int(42 * _DPI / 72)
    image = Image.new("L", (width, top + 2 * pixels * (len(lines) + 1)), 255)
    draw = ImageDraw.Draw(image)
    for row, line in enumerate(lines):
        draw.text((int(50 * _DPI / 72), top + 2 * pixels * row), line, font=font, fill=0)
    return image.tobytes(), image.width, image.height


def image_pdf(images: Sequence[tuple[bytes, int, int]]) -> bytes:
    """A scan of one letter page per grey image (from `render_lines`, `draw_cjk_lines`),
    the image at the page's top at 200 dpi, white below it, and no text."""
    pages = []
    for data, width, height in images:
        full = int(792 * _DPI / 72)  # a scan is an image over the whole page
        pages.append((width, full, zlib.compress(data + b"\xff" * width * (full - height)),
                      612, 792))
    return _image_pages(pages, 1)


def _image_pages(images: Sequence[tuple[int, int, bytes, float, float]], repeat: int) -> bytes:
    """Letter pages, each one image (width, height, deflated grey pixels) drawn at the top
    of the page over the given width and height in points."""
    writer = PdfWriter()
    drawn = [(writer._add_object(_image(width, height, data)), shown_width, shown_height)
             for width, height, data, shown_width, shown_height in images]
    for _ in range(repeat):
        for image, shown_width, shown_height in drawn:
            page = writer.add_blank_page(612, 792)
            stream = DecodedStreamObject()
            stream.set_data(b"q %.2f 0 0 %.2f 0 %.2f cm /Im0 Do Q" % (
                shown_width, shown_height, 792 - shown_height))
            page[NameObject("/Contents")] = writer._add_object(stream)
            page[NameObject("/Resources")] = DictionaryObject(
                {NameObject("/XObject"): DictionaryObject({NameObject("/Im0"): image})})
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def _image(width: int, height: int, data: bytes) -> StreamObject:
    image = StreamObject()
    image._data = data
    image.update({
        NameObject("/Type"): NameObject("/XObject"), NameObject("/Subtype"): NameObject("/Image"),
        NameObject("/Width"): NumberObject(width), NameObject("/Height"): NumberObject(height),
        NameObject("/ColorSpace"): NameObject("/DeviceGray"),
        NameObject("/BitsPerComponent"): NumberObject(8),
        NameObject("/Filter"): NameObject("/FlateDecode"),
        NameObject("/Decode"): ArrayObject([FloatObject(0), FloatObject(1)]),
    })
    return image
