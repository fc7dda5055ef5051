"""Inline SVG plots for the pages (no plotting library, no script): a line chart of a job's metric
series and a histogram of rewards. Pure presentation: numbers in, escaped SVG markup out.

Sizes are in CSS pixels; every label goes through :func:`markupsafe.escape`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from markupsafe import Markup, escape

W, H, PAD = 560, 220, 36
COLOURS = ("#1f6feb", "#d1242f", "#1a7f37", "#9a6700", "#8250df", "#57606a")


def _fmt(x: float) -> str:
    return f"{x:.3g}"


def line_chart(series: Mapping[str, Sequence[tuple[float, float]]], title: str = "") -> Markup:
    """One SVG line chart with a line per series (``{name: [(x, y), ...]}``), shared axes, a legend.
    Empty markup when there is no point."""
    pts = [p for s in series.values() for p in s]
    if not pts:
        return Markup("")
    x0, x1 = min(p[0] for p in pts), max(p[0] for p in pts)
    y0, y1 = min(p[1] for p in pts), max(p[1] for p in pts)
    if x1 == x0:
        x1 = x0 + 1
    if y1 == y0:
        y1 = y0 + 1

    def sx(x: float) -> float:
        return PAD + (x - x0) / (x1 - x0) * (W - 2 * PAD)

    def sy(y: float) -> float:
        return H - PAD - (y - y0) / (y1 - y0) * (H - 2 * PAD)

    parts = [_frame(title), _axes(_fmt(x0), _fmt(x1), _fmt(y0), _fmt(y1), "step")]
    for i, (name, s) in enumerate(series.items()):
        c = COLOURS[i % len(COLOURS)]
        path = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in s)
        parts.append(f'<polyline fill="none" stroke="{c}" stroke-width="1.5" points="{path}"/>')
        parts.append(f'<text x="{W - PAD - 150}" y="{PAD + 14 * i}" fill="{c}" font-size="11">{escape(name)}</text>')
    parts.append("</svg>")
    return Markup("".join(parts))


def histogram(values: Sequence[float], bins: int = 10, lo: float = 0.0, hi: float = 1.0, title: str = "") -> Markup:
    """An SVG histogram of ``values`` in ``bins`` equal bins over ``[lo, hi]`` (values outside are
    clamped into the end bins); each bar is labelled with its count."""
    counts = [0] * bins
    for v in values:
        i = int((v - lo) / (hi - lo) * bins) if hi > lo else 0
        counts[min(max(i, 0), bins - 1)] += 1
    top = max(counts) or 1
    bw = (W - 2 * PAD) / bins
    parts = [_frame(title), _axes(_fmt(lo), _fmt(hi), "0", str(top), "reward")]
    for i, n in enumerate(counts):
        h = n / top * (H - 2 * PAD)
        x = PAD + i * bw
        parts.append(
            f'<rect x="{x + 1:.1f}" y="{H - PAD - h:.1f}" width="{bw - 2:.1f}" height="{h:.1f}" fill="#1f6feb">'
            f"<title>{_fmt(lo + i * (hi - lo) / bins)}-{_fmt(lo + (i + 1) * (hi - lo) / bins)}: {n}</title></rect>"
        )
        if n:
            parts.append(
                f'<text x="{x + bw / 2:.1f}" y="{H - PAD - h - 3:.1f}" font-size="10" text-anchor="middle">{n}</text>'
            )
    parts.append("</svg>")
    return Markup("".join(parts))


def _frame(title: str) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" role="img" '
        f'aria-label="{escape(title)}"><rect width="{W}" height="{H}" fill="#ffffff"/>'
        f'<text x="{PAD}" y="16" font-size="12" font-weight="bold">{escape(title)}</text>'
    )


def _axes(x0: str, x1: str, y0: str, y1: str, xlabel: str) -> str:
    b, r = H - PAD, W - PAD
    return (
        f'<line x1="{PAD}" y1="{b}" x2="{r}" y2="{b}" stroke="#57606a"/>'
        f'<line x1="{PAD}" y1="{PAD}" x2="{PAD}" y2="{b}" stroke="#57606a"/>'
        f'<text x="{PAD}" y="{b + 14}" font-size="10">{x0}</text>'
        f'<text x="{r}" y="{b + 14}" font-size="10" text-anchor="end">{x1}</text>'
        f'<text x="{W / 2}" y="{b + 26}" font-size="10" text-anchor="middle">{escape(xlabel)}</text>'
        f'<text x="{PAD - 4}" y="{b}" font-size="10" text-anchor="end">{y0}</text>'
        f'<text x="{PAD - 4}" y="{PAD + 4}" font-size="10" text-anchor="end">{y1}</text>'
    )
