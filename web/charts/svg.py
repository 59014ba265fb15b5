"""The SVG that every chart is drawn with: one drawing per layout width, text sized for it.

Why two widths: a chart is an ``<svg viewBox>`` that scales with its box, and its text scales
too. One 640-unit drawing shown at 343 px (a 375 px phone) would write 12-unit labels at 6.4 px.
So each chart is drawn twice, 640 units wide for desktop and 340 for phones, and site.css shows
the one whose width matches the screen (``.chart-wide`` / ``.chart-narrow``); either is shown at
a scale of about 1 or more, so 12-unit text is never under 11 CSS px. No JavaScript, no inline
style: classes are styled from site.css, geometry uses presentation attributes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from django.utils.safestring import SafeString, mark_safe

from kernelindex.markup import escape as _escape

WIDE, NARROW = 640, 340
FONT = 12  # user units; shown at ≥ 11 CSS px in both layouts (see site.css, svg.chart)
CHAR = 6.9  # average advance of a 12-unit system-ui character, for fitting labels


def fit(text: str, room: float) -> str:
    """``text`` cut with an ellipsis so it fits ``room`` user units at FONT size."""
    most = max(4, int(room / CHAR))
    return text if len(text) <= most else text[: most - 1] + "…"


def escape(value: object) -> str:
    """Text for SVG markup, escaped as Django escapes (``django.utils.html.escape``, without its
    lazy-text wrapper: a chart writes a few hundred labels and titles)."""
    return _escape(str(value))


def attr(value: float) -> str:
    """A coordinate to one decimal, without a trailing ".0" (12.0 → "12", 12.25 → "12.2")."""
    text = f"{value:.1f}"
    # One decimal always follows the point, so a last "0" is ".0" (a chart writes hundreds).
    return text[:-2] if text[-1] == "0" else text


def line_element(cls: str, x1: str, y1: str, x2: str, y2: str) -> str:
    """A ``<line>`` from coordinates ``attr`` wrote: a layout's grid repeats most of them."""
    return f'<line class="{cls}" x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}"/>'


def text_element(cls: str, x: str, y: str, anchor: str, content: str) -> str:
    """A ``<text>`` from coordinates ``attr`` wrote and ``content`` escaped already."""
    return f'<text class="{cls}" x="{x}" y="{y}" text-anchor="{anchor}">{content}</text>'


@dataclass
class Drawing:
    """SVG elements of one layout, appended in paint order."""

    width: int
    parts: list[str] = field(default_factory=list)

    def text(self, x: float, y: float, content: str, cls: str = "tick", anchor: str = "start") -> None:
        self.parts.append(text_element(cls, attr(x), attr(y), anchor, escape(content)))

    def line(self, x1: float, y1: float, x2: float, y2: float, cls: str) -> None:
        self.parts.append(line_element(cls, attr(x1), attr(y1), attr(x2), attr(y2)))

    def path(self, points: Sequence[tuple[float, float]], cls: str) -> None:
        if len(points) < 2:
            return
        d = "M" + " L".join([f"{attr(x)} {attr(y)}" for x, y in points])
        self.parts.append(f'<path class="{cls}" d="{d}"/>')

    def rect(self, x: float, y: float, w: float, h: float, cls: str, tip: str = "", *, escaped: bool = False) -> None:
        inner = f"<title>{tip if escaped else escape(tip)}</title>" if tip else ""
        self.parts.append(
            f'<rect class="{cls}" x="{attr(x)}" y="{attr(y)}" width="{attr(max(w, 0.0))}" height="{attr(h)}">'
            f"{inner}</rect>"
        )

    def mark(self, x: float, y: float, shape: str, cls: str, tip: str = "", *, escaped: bool = False) -> None:
        """A marker whose shape, not only its colour, tells the series apart; ``escaped`` when
        ``tip`` is markup already (a chart drawn at two widths escapes each tooltip once)."""
        inner = f"<title>{tip if escaped else escape(tip)}</title>" if tip else ""
        if shape == "circle":  # most marks: first
            self.parts.append(f'<circle class="{cls}" cx="{attr(x)}" cy="{attr(y)}" r="4.5">{inner}</circle>')
        elif shape == "square":
            at = f'x="{attr(x - 4)}" y="{attr(y - 4)}"'
            self.parts.append(f'<rect class="{cls}" {at} width="8" height="8">{inner}</rect>')
        elif shape == "diamond":
            # Corners top, right, bottom, left: six coordinates, each written once.
            cx, cy = attr(x), attr(y)
            pts = f"{cx},{attr(y - 5.5)} {attr(x + 5.5)},{cy} {cx},{attr(y + 5.5)} {attr(x - 5.5)},{cy}"
            self.parts.append(f'<polygon class="{cls}" points="{pts}">{inner}</polygon>')
        elif shape == "tick":
            self.parts.append(
                f'<rect class="{cls}" x="{attr(x - 1.5)}" y="{attr(y - 7)}" width="3" height="14">{inner}</rect>'
            )
        else:
            self.parts.append(f'<circle class="{cls}" cx="{attr(x)}" cy="{attr(y)}" r="4.5">{inner}</circle>')


def svg(drawing: Drawing, height: float, *, key: str, title: str, desc: str, layout: str) -> str:
    ident = f"chart-{key}-{layout}"
    return (
        f'<svg class="chart chart-{layout}" viewBox="0 0 {drawing.width} {attr(height)}" '
        f'width="{drawing.width}" height="{attr(height)}" role="img" '
        f'aria-labelledby="{ident}-t {ident}-d" preserveAspectRatio="xMinYMin meet" font-size="{FONT}">'
        f'<title id="{ident}-t">{escape(title)}</title><desc id="{ident}-d">{escape(desc)}</desc>'
        + "".join(drawing.parts)
        + "</svg>"
    )


def responsive(render: Callable[[int], tuple[Drawing, float]], *, key: str, title: str, desc: str) -> SafeString:
    """Both layouts of one chart, in one ``div.chart-box``; site.css shows one of them."""
    wide, wide_h = render(WIDE)
    narrow, narrow_h = render(NARROW)
    return mark_safe(
        '<div class="chart-box">'
        + svg(wide, wide_h, key=key, title=title, desc=desc, layout="wide")
        + svg(narrow, narrow_h, key=key, title=title, desc=desc, layout="narrow")
        + "</div>"
    )


def data_table(caption: str, header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A visually hidden table with the chart's numbers: its text alternative for screen readers."""
    head = "".join(f'<th scope="col">{escape(h)}</th>' for h in header)
    body = "".join(
        "<tr>" + f'<th scope="row">{escape(row[0])}</th>' + "".join(f"<td>{escape(c)}</td>" for c in row[1:]) + "</tr>"
        for row in rows
    )
    # The wrapper hides it: a table box ignores width and overflow, so it could widen the page.
    return (
        f'<div class="visually-hidden"><table><caption>{escape(caption)}</caption>'
        f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"
    )
