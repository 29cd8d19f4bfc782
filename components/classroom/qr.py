"""A class's join link as a QR code the room scans off the projector: an SVG string.

Drawn by qrcode's SVG factory, which needs no image library: `import qrcode` imports Pillow
when it is installed (qrcode keeps its Pillow drawers importable from an old location) but
the SVG path never uses it, and works where Pillow is missing
(tests/unit/test_join_qr.py runs it with Pillow blocked).

The SVG has a viewBox of one unit a module and no size of its own: the page sizes it.
"""

from __future__ import annotations

import qrcode
from qrcode.compat.etree import ET
from qrcode.exceptions import DataOverflowError
from qrcode.image.svg import SvgPathFillImage

# A join link is the app's address and a room code; a longer one is not ours.
MAX_URL_CHARS = 600
# The standard's quiet zone: a scanner finds the code by the white around it.
BORDER = 4
# M restores 15 % of the modules: a smudged screen, a projector's glare, a hand in the
# beam, at a smaller code than Q or H.
ERROR_CORRECTION = qrcode.constants.ERROR_CORRECT_M
# qrcode's SVG unit: a box of 10 is one unit, so the viewBox counts modules.
_BOX_SIZE = 10


def join_qr_svg(url: str) -> str:
    """`url` as a QR code: black modules on white, the quiet zone included, as an SVG
    document that fills the box the page gives it (width and height 100 %, square).

    ValueError for an empty link, one over MAX_URL_CHARS characters, or one whose bytes
    no QR code holds."""
    if not isinstance(url, str):
        raise TypeError("the join link is a string")
    if not url or len(url) > MAX_URL_CHARS:
        raise ValueError(f"a join link has 1 to {MAX_URL_CHARS} characters")
    code = qrcode.QRCode(
        error_correction=ERROR_CORRECTION,
        border=BORDER,
        box_size=_BOX_SIZE,
        image_factory=SvgPathFillImage,
    )
    code.add_data(url)
    try:
        code.make(fit=True)
    except DataOverflowError as error:  # 600 four-byte characters exceed version 40
        raise ValueError("the join link is too long for a QR code") from error
    svg = code.make_image().get_image()
    # Sized by the page, not in millimetres; crisp edges keep neighbouring modules from
    # showing hairline seams when the projector scales them.
    svg.set("width", "100%")
    svg.set("height", "100%")
    svg.set("shape-rendering", "crispEdges")
    return ET.tostring(svg, encoding="unicode")
