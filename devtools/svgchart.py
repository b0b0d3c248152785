"""A small line chart as standalone SVG, for docs/benchmarks.md's figures (no plotting library)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

WIDTH, HEIGHT = 640, 360
MARGIN_LEFT, MARGIN_RIGHT, MARGIN_TOP, MARGIN_BOTTOM = 56, 190, 36, 48
COLOURS = ("#1f6feb", "#d1242f", "#1a7f37", "#9a6700", "#8250df")


@dataclass(frozen=True)
class Series:
    label: str
    points: Sequence[tuple[float, float]]
    dashed: bool = False


def line_chart(
    series: Sequence[Series],
    *,
    title: str,
    x_label: str,
    y_label: str,
    x_ticks: Sequence[tuple[float, str]] | None = None,
) -> str:
    """SVG text of ``series`` drawn as lines with dots; ``x_ticks`` as (value, label) pairs
    (default: five evenly spaced values)."""
    xs = [x for s in series for x, _ in s.points] + [x for x, _ in x_ticks or ()]
    ys = [y for s in series for _, y in s.points]
    x_low, x_high = min(xs), max(xs)
    y_low, y_high = _nice_range(min(ys), max(ys))
    plot_w = WIDTH - MARGIN_LEFT - MARGIN_RIGHT
    plot_h = HEIGHT - MARGIN_TOP - MARGIN_BOTTOM

    def px(x: float) -> float:
        span = (x_high - x_low) or 1.0
        return MARGIN_LEFT + (x - x_low) / span * plot_w

    def py(y: float) -> float:
        return MARGIN_TOP + (y_high - y) / (y_high - y_low) * plot_h

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">',
        f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
        f'<text x="{MARGIN_LEFT}" y="20" font-size="14" font-weight="bold">{escape(title)}</text>',
    ]
    step = _nice_step(y_high - y_low)
    tick = y_low
    while tick <= y_high + 1e-9:
        y = py(tick)
        out.append(
            f'<line x1="{MARGIN_LEFT}" x2="{MARGIN_LEFT + plot_w}" y1="{y:.1f}" y2="{y:.1f}" '
            'stroke="#d0d7de"/>'
        )
        out.append(f'<text x="{MARGIN_LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{tick:g}</text>')
        tick += step
    if x_ticks is None:
        x_ticks = [(x_low + k * (x_high - x_low) / 4, f"{x_low + k * (x_high - x_low) / 4:g}")
                   for k in range(5)]  # fmt: skip
    for value, label in x_ticks:
        x = px(value)
        out.append(
            f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{MARGIN_TOP + plot_h}" '
            f'y2="{MARGIN_TOP + plot_h + 4}" stroke="#57606a"/>'
        )
        out.append(
            f'<text x="{x:.1f}" y="{MARGIN_TOP + plot_h + 18}" text-anchor="middle">'
            f"{escape(label)}</text>"
        )
    out.append(
        f'<rect x="{MARGIN_LEFT}" y="{MARGIN_TOP}" width="{plot_w}" height="{plot_h}" '
        'fill="none" stroke="#57606a"/>'
    )
    out.append(
        f'<text x="{MARGIN_LEFT + plot_w / 2}" y="{HEIGHT - 10}" text-anchor="middle">'
        f"{escape(x_label)}</text>"
    )
    out.append(
        f'<text transform="translate(14 {MARGIN_TOP + plot_h / 2}) rotate(-90)" '
        f'text-anchor="middle">{escape(y_label)}</text>'
    )
    for k, s in enumerate(series):
        colour = COLOURS[k % len(COLOURS)]
        points = sorted(s.points)
        path = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in points)
        dash = ' stroke-dasharray="6 4"' if s.dashed else ""
        out.append(
            f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"{dash}/>'
        )
        for x, y in points:
            out.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3.5" fill="{colour}"/>')
        legend_y = MARGIN_TOP + 10 + 20 * k
        legend_x = MARGIN_LEFT + plot_w + 12
        out.append(
            f'<line x1="{legend_x}" x2="{legend_x + 20}" y1="{legend_y}" y2="{legend_y}" '
            f'stroke="{colour}" stroke-width="2"{dash}/>'
        )
        out.append(f'<text x="{legend_x + 26}" y="{legend_y + 4}">{escape(s.label)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _nice_step(span: float) -> float:
    for step in (0.5, 1, 2, 5, 10, 20, 25, 50):
        if span / step <= 8:
            return step
    return span / 5


def _nice_range(low: float, high: float) -> tuple[float, float]:
    step = _nice_step(max(high - low, 1.0))
    start = step * int(low // step)
    end = step * -int(-high // step)
    return float(start), float(end if end > start else start + step)
