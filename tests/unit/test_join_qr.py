"""The join link's QR code: an SVG the page can size, whose drawn modules are the code.

No QR decoder is installed, so the SVG is read back into a grid of modules here (its
path drawn cell by cell) and that grid is checked against the standard directly (finder
patterns, the format information's error-correction level and checksum, the size of a
version) and against qrcode's own module matrix for the same link.
"""

from __future__ import annotations

import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
import qrcode

from components.classroom.qr import MAX_URL_CHARS, join_qr_svg

SVG = "{http://www.w3.org/2000/svg}"
URL = "https://seqlens.example.org/?class=ACD349"
ROOT = Path(__file__).resolve().parents[2]
# ISO/IEC 18004: the format information is XOR-ed with this mask, and its 10 low bits are
# the BCH(15, 5) remainder of its 5 high bits by this generator.
FORMAT_MASK = 0b101010000010010
FORMAT_GENERATOR = 0b10100110111
# The two error-correction bits of the format information, by level.
LEVEL_BITS = {"L": 0b01, "M": 0b00, "Q": 0b11, "H": 0b10}
QUIET = 4


def parsed(svg: str) -> ET.Element:
    return ET.fromstring(svg)  # noqa: S314 - the SVG join_qr_svg wrote, not a visitor's


def view_box(root: ET.Element) -> list[float]:
    return [float(v) for v in root.get("viewBox").split()]


def rectangles(d: str) -> list[tuple[float, float, float, float]]:
    """Each closed subpath of absolute M/H/V commands as its box (x0, y0, x1, y1)."""
    boxes = []
    for subpath in re.findall(r"M[^Mz]*z", d):
        x = y = 0.0
        xs, ys = [], []
        for command, args in re.findall(r"([MHV])([-\d.,]+)", subpath):
            numbers = [float(a) for a in args.split(",")]
            if command == "M":
                x, y = numbers
            elif command == "H":
                x = numbers[0]
            else:
                y = numbers[0]
            xs.append(x)
            ys.append(y)
        boxes.append((min(xs), min(ys), max(xs), max(ys)))
    return boxes


def module_grid(svg: str) -> np.ndarray:
    """The SVG drawn on a grid of one cell a viewBox unit: True where a cell's centre is
    covered by a dark shape."""
    root = parsed(svg)
    x0, y0, width, height = view_box(root)
    assert (x0, y0) == (0, 0) and width == height and width == int(width)
    n = int(width)
    grid = np.zeros((n, n), dtype=bool)
    [path] = root.iter(f"{SVG}path")
    assert path.get("fill") in ("#000000", "black")
    centres = np.arange(n) + 0.5
    for left, top, right, bottom in rectangles(path.get("d")):
        rows = (centres > top) & (centres < bottom)
        cols = (centres > left) & (centres < right)
        grid[np.ix_(rows, cols)] = True
    return grid


def without_quiet_zone(grid: np.ndarray) -> np.ndarray:
    return grid[QUIET:-QUIET, QUIET:-QUIET]


def version_of(symbol: np.ndarray) -> int:
    """A version-v symbol is 17 + 4v modules a side."""
    side = symbol.shape[0]
    assert (side - 17) % 4 == 0
    return (side - 17) // 4


def finder_pattern() -> np.ndarray:
    ring = np.ones((7, 7), dtype=bool)
    ring[1:6, 1:6] = False
    ring[2:5, 2:5] = True
    return ring


def format_bits(symbol: np.ndarray) -> int:
    """The 15 format bits next to the top-left finder, most significant first: along row 8
    (columns 0-5, 7, 8), then up column 8 (rows 7, 5-0), skipping the timing pattern."""
    cells = [(8, c) for c in (0, 1, 2, 3, 4, 5, 7, 8)] + [(r, 8) for r in (7, 5, 4, 3, 2, 1, 0)]
    value = 0
    for row, col in cells:
        value = (value << 1) | int(symbol[row, col])
    return value ^ FORMAT_MASK


def bch_remainder(data: int) -> int:
    value = data << 10
    for shift in range(4, -1, -1):
        if value & (1 << (shift + 10)):
            value ^= FORMAT_GENERATOR << shift
    return value


def test_the_svg_is_xml_with_a_square_view_box_and_no_fixed_size():
    root = parsed(join_qr_svg(URL))
    assert root.tag == f"{SVG}svg"
    x0, y0, width, height = view_box(root)
    assert (x0, y0) == (0, 0) and width == height > 0
    for size in ("width", "height"):
        assert root.get(size) in (None, "100%")


def test_the_modules_are_dark_on_a_white_background_that_covers_the_view_box():
    root = parsed(join_qr_svg(URL))
    [background] = root.iter(f"{SVG}rect")
    assert background.get("fill") in ("white", "#ffffff", "#FFFFFF")
    assert (background.get("width"), background.get("height")) == ("100%", "100%")


def test_the_drawn_modules_are_qrcode_s_matrix_for_the_link_with_its_quiet_zone():
    reference = qrcode.QRCode(error_correction=qrcode.constants.ERROR_CORRECT_M, border=QUIET)
    reference.add_data(URL)
    reference.make(fit=True)
    expected = np.array(reference.get_matrix(), dtype=bool)
    assert np.array_equal(module_grid(join_qr_svg(URL)), expected)


def test_the_quiet_zone_is_four_white_modules_on_every_side():
    grid = module_grid(join_qr_svg(URL))
    ring = np.ones_like(grid)
    ring[QUIET:-QUIET, QUIET:-QUIET] = False
    assert not grid[ring].any()
    assert without_quiet_zone(grid).any()


def test_the_symbol_has_the_three_finder_patterns_of_a_qr_code():
    symbol = without_quiet_zone(module_grid(join_qr_svg(URL)))
    finder = finder_pattern()
    assert np.array_equal(symbol[:7, :7], finder)
    assert np.array_equal(symbol[:7, -7:], finder)
    assert np.array_equal(symbol[-7:, :7], finder)
    # Each finder is separated from the data by a white row and column.
    assert not symbol[7, :8].any() and not symbol[:8, 7].any()


def test_the_format_information_says_error_correction_m_and_its_checksum_holds():
    symbol = without_quiet_zone(module_grid(join_qr_svg(URL)))
    bits = format_bits(symbol)
    data = bits >> 10
    assert bch_remainder(data) == bits & 0b1111111111
    assert data >> 3 == LEVEL_BITS["M"]


def test_the_version_grows_with_the_link_s_length():
    base = "https://seqlens.example.org/?class=ACD349&p="
    lengths = [len(base) + 1, 100, 250, MAX_URL_CHARS]
    versions = [
        version_of(without_quiet_zone(module_grid(join_qr_svg((base + "x" * n)[:n]))))
        for n in lengths
    ]
    assert versions == sorted(versions) and len(set(versions)) == len(versions)
    # At M a version-3 code holds 42 bytes at most (ISO/IEC 18004, table 7): 44 need a 4.
    assert version_of(without_quiet_zone(module_grid(join_qr_svg("a" * 42)))) == 3
    assert version_of(without_quiet_zone(module_grid(join_qr_svg("a" * 44)))) == 4


def test_a_link_of_600_characters_is_drawn_and_one_of_601_refused():
    assert parsed(join_qr_svg("h" * MAX_URL_CHARS)) is not None
    with pytest.raises(ValueError):
        join_qr_svg("h" * (MAX_URL_CHARS + 1))


def test_an_empty_link_and_one_too_many_bytes_for_any_qr_code_are_refused():
    with pytest.raises(ValueError):
        join_qr_svg("")
    # 600 four-byte characters: 2400 bytes, more than version 40 holds at M (2331).
    with pytest.raises(ValueError):
        join_qr_svg("😀" * MAX_URL_CHARS)


def test_the_svg_is_drawn_where_pillow_cannot_be_imported():
    # sys.modules[name] = None makes `import PIL` raise ImportError in that process.
    script = (
        "import sys\n"
        "sys.modules['PIL'] = None\n"
        "from components.classroom.qr import join_qr_svg\n"
        f"svg = join_qr_svg({URL!r})\n"
        "assert svg.startswith('<svg') and 'path' in svg\n"
        "assert not any(m == 'PIL' or m.startswith('PIL.') for m, v in sys.modules.items()"
        " if v is not None)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
