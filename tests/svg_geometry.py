"""Geometry of a drawn tree, read back from the SVG as a browser would: the segments of every element of
class `edges` (a path of M/L/H/V commands, or <line> elements), and which pairs of them cross.

Coordinates are read as exact fractions, so a crossing is found exactly as drawn (after rounding).
"""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from fractions import Fraction
from typing import Iterable

SVG = "{http://www.w3.org/2000/svg}"
Point = tuple[Fraction, Fraction]
Segment = tuple[Point, Point]

_PATH_TOKEN = re.compile(r"[MLHVZmlhvz]|-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def path_segments(d: str) -> list[Segment]:
    """The straight segments of an SVG path made of absolute M, L, H and V commands."""
    tokens = _PATH_TOKEN.findall(d)
    segments: list[Segment] = []
    command, here, k = None, None, 0
    while k < len(tokens):
        if tokens[k].isalpha():
            command = tokens[k]
            k += 1
            continue
        if command not in ("M", "L", "H", "V"):
            raise ValueError(f"path command {command!r} is not a straight absolute segment")
        if command in ("M", "L"):
            point = (Fraction(tokens[k]), Fraction(tokens[k + 1]))
            k += 2
        else:
            value = Fraction(tokens[k])
            k += 1
            point = (value, here[1]) if command == "H" else (here[0], value)
        if command != "M" and point != here:
            segments.append((here, point))
        here = point
        if command == "M":
            command = "L"  # further pairs after M are line-tos
    return segments


def edge_segments(svg: str) -> list[Segment]:
    """Every drawn segment of the elements of class `edges` (and of their children)."""
    root = ET.fromstring(svg)
    segments: list[Segment] = []
    for holder in root.iter():
        if "edges" not in (holder.get("class") or "").split():
            continue
        for element in holder.iter():
            if element.tag == SVG + "path":
                segments.extend(path_segments(element.get("d", "")))
            elif element.tag == SVG + "line":
                a = (Fraction(element.get("x1")), Fraction(element.get("y1")))
                b = (Fraction(element.get("x2")), Fraction(element.get("y2")))
                if a != b:
                    segments.append((a, b))
    return segments


def _orientation(a: Point, b: Point, c: Point) -> int:
    value = (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])
    return (value > 0) - (value < 0)


def _on_segment(p: Point, s: Segment) -> bool:
    (a, b) = s
    return (_orientation(a, b, p) == 0 and min(a[0], b[0]) <= p[0] <= max(a[0], b[0])
            and min(a[1], b[1]) <= p[1] <= max(a[1], b[1]))


def _collinear_overlap(s: Segment, t: Segment) -> bool:
    """Two collinear segments that share more than a point (an edge drawn over another)."""
    if _orientation(*s, t[0]) or _orientation(*s, t[1]):
        return False
    axis = 0 if s[0][0] != s[1][0] else 1
    low = max(min(s[0][axis], s[1][axis]), min(t[0][axis], t[1][axis]))
    high = min(max(s[0][axis], s[1][axis]), max(t[0][axis], t[1][axis]))
    return low < high


def segments_cross(s: Segment, t: Segment) -> bool:
    """Whether two segments meet anywhere but at an endpoint they share (or overlap along a stretch)."""
    if _collinear_overlap(s, t):
        return True
    if set(s) & set(t):
        return False
    o1, o2 = _orientation(*s, t[0]), _orientation(*s, t[1])
    o3, o4 = _orientation(*t, s[0]), _orientation(*t, s[1])
    if o1 != o2 and o3 != o4 and 0 not in (o1, o2, o3, o4):
        return True
    # a touch: an endpoint of one lies on the other (a T-junction) also counts
    return any(_on_segment(p, other) for p, other in ((t[0], s), (t[1], s), (s[0], t), (s[1], t)))


def crossings(segments: Iterable[Segment]) -> list[tuple[Segment, Segment]]:
    """The pairs of segments that cross; a sweep over x keeps it quick for long sentences."""
    ordered = sorted(segments, key=lambda s: min(s[0][0], s[1][0]))
    found, active = [], []
    for s in ordered:
        left = min(s[0][0], s[1][0])
        active = [t for t in active if max(t[0][0], t[1][0]) >= left]
        low, high = sorted((s[0][1], s[1][1]))
        for t in active:
            if max(t[0][1], t[1][1]) >= low and min(t[0][1], t[1][1]) <= high and segments_cross(s, t):
                found.append((s, t))
        active.append(s)
    return found


def svg_crossings(svg: str) -> list[tuple[Segment, Segment]]:
    return crossings(edge_segments(svg))


# --- node marks ------------------------------------------------------------------------------------

Circle = tuple[float, float, float]  # centre x, centre y, radius


def node_circles(svg: str) -> list[Circle]:
    """The circles of the elements of class `nodes` (a tree's node marks)."""
    root = ET.fromstring(svg)
    return [(float(c.get("cx")), float(c.get("cy")), float(c.get("r")))
            for holder in root.iter() if "nodes" in (holder.get("class") or "").split()
            for c in holder.iter(SVG + "circle")]


def _distance_to_segment(x: float, y: float, s: Segment) -> float:
    (ax, ay), (bx, by) = ((float(p[0]), float(p[1])) for p in s)
    dx, dy = bx - ax, by - ay
    t = 0.0 if dx == dy == 0 else max(0.0, min(1.0, ((x - ax) * dx + (y - ay) * dy) / (dx * dx + dy * dy)))
    return ((ax + t * dx - x) ** 2 + (ay + t * dy - y) ** 2) ** 0.5


def marks_in_the_way(svg: str, gap: float = 0.0) -> list[tuple]:
    """Node circles that touch another (closer than their radii and `gap`), and circles an edge runs under
    without ending at their centre: the mark would hide that edge, or seem to be on it."""
    circles, segments = sorted(node_circles(svg)), edge_segments(svg)
    found = []
    for k, (x, y, r) in enumerate(circles):
        for (x2, y2, r2) in circles[k + 1:]:
            if x2 - x >= r + r2 + gap:
                break
            if ((x2 - x) ** 2 + (y2 - y) ** 2) ** 0.5 < r + r2 + gap:
                found.append(((x, y, r), (x2, y2, r2)))
    for s in segments:
        low, high = sorted(float(p[0]) for p in s)
        for (x, y, r) in circles:
            ends_here = any(float(p[0]) == round(x, 1) and float(p[1]) == round(y, 1) for p in s)
            if low - r <= x <= high + r and not ends_here and _distance_to_segment(x, y, s) < r:
                found.append(((x, y, r), s))
    return found
