"""Offline synthetic handwriting lines: the built-in default training data.

Nothing is downloaded. Text comes from a frequency-ranked English word list shipped in
``text_recognizer.data.words`` (sampled Zipf-like, with sentence capitals, names, numbers, times and
IAM-style punctuation). Images are drawn from the Hershey stroke fonts of the ``hershey-fonts``
package, treated as pen trajectories: every line gets its own font, slant, width, letter spacing,
baseline drift, per-glyph jitter (position, scale, rotation), a smooth elastic warp of the
trajectories, pen width, ink and paper tone, uneven paper, blur and noise. Strokes are drawn with
round joins and caps at 2x resolution and box-downsampled for anti-aliasing.

Every text is encodable with ``text_recognizer.codec.DEFAULT_CHARSET`` (IAM's 79 characters).

Determinism: ``SyntheticLines(seed=s)[i]`` derives its own ``numpy.random.Generator`` from
``(s, i)``, so the same (seed, index) gives a bitwise identical image and text regardless of worker
processes or call order.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from PIL import Image, ImageDraw, ImageFilter

from text_recognizer.codec import DEFAULT_CHARSET
from text_recognizer.data.words import sampling_cdf, words
from text_recognizer.metadata import LINE_HEIGHT

__all__ = ["SyntheticLines", "render_line", "sample_text", "FONT_WEIGHTS"]

# ----------------------------------------------------------------------------------------------
# Fonts
# ----------------------------------------------------------------------------------------------

#: Hershey fonts used, with their sampling weights. The script faces look most like handwriting;
#: the upright single-stroke faces add print-like hands.
FONT_WEIGHTS: dict[str, float] = {
    "scripts": 0.26,  # simplex script
    "cursive": 0.22,  # script variant with joined letters
    "scriptc": 0.14,  # complex (double-stroke) script
    "futural": 0.14,  # simplex sans
    "rowmans": 0.10,  # simplex roman
    "futuram": 0.05,  # duplex sans
    "timesi": 0.09,  # italic
}

_MAX_SEGMENT = 0.4  # longest trajectory segment after subdivision, in x-heights


@dataclass(frozen=True)
class _Glyph:
    points: np.ndarray  # (n, 2) float64, x from the glyph's left side, y down, baseline at 0, x-height 1
    stroke_lengths: tuple[int, ...]  # points per stroke, in order
    advance: float  # horizontal advance in x-heights


@dataclass(frozen=True)
class _Font:
    name: str
    glyphs: dict[str, _Glyph]
    ascent: float  # cap line above the baseline, in x-heights (positive)
    descent: float  # bottom line below the baseline, in x-heights (positive)
    upright: bool


def _subdivide(stroke: np.ndarray) -> np.ndarray:
    """Insert points so that no segment is longer than ``_MAX_SEGMENT`` (lets the warp bend it)."""
    if len(stroke) < 2:
        return stroke
    out = [stroke[:1]]
    for a, b in zip(stroke[:-1], stroke[1:]):
        n = max(1, int(math.ceil(float(np.hypot(*(b - a))) / _MAX_SEGMENT)))
        t = np.arange(1, n + 1, dtype=np.float64)[:, None] / n
        out.append(a + (b - a) * t)
    return np.concatenate(out)


def _load_font(name: str) -> _Font:
    from HersheyFonts import HersheyFonts  # imported lazily: only the renderer needs it

    font = HersheyFonts()
    font.load_default_font(name)
    opts = font.render_options
    base = float(opts["base_line"])
    raw = font.all_glyphs
    (_, x_top), _ = raw["x"].draw_box
    x_height = base - float(x_top)
    glyphs: dict[str, _Glyph] = {}
    for ch in DEFAULT_CHARSET:
        g = raw.get(ch)
        if g is None:
            continue
        left = float(g.left_offset)
        strokes = []
        for s in g.strokes:
            arr = (np.asarray(s, dtype=np.float64) - (left, base)) / x_height
            if len(arr) == 1:  # a dot: make it a tiny segment so that it is drawn
                arr = np.concatenate([arr, arr + (0.02, 0.0)])
            strokes.append(_subdivide(arr))
        pts = np.concatenate(strokes) if strokes else np.zeros((0, 2))
        glyphs[ch] = _Glyph(pts, tuple(len(s) for s in strokes), float(g.char_width) / x_height)
    return _Font(
        name=name,
        glyphs=glyphs,
        ascent=(base - float(opts["cap_line"])) / x_height,
        descent=(float(opts["bottom_line"]) - base) / x_height,
        upright=name in {"futural", "futuram", "rowmans"},
    )


_FONTS: dict[str, _Font] = {}


def _font(name: str) -> _Font:
    f = _FONTS.get(name)
    if f is None:
        f = _FONTS[name] = _load_font(name)
    return f


_FONT_NAMES = tuple(FONT_WEIGHTS)
_FONT_P = np.asarray([FONT_WEIGHTS[n] for n in _FONT_NAMES], dtype=np.float64)
_FONT_P = _FONT_P / _FONT_P.sum()

# ----------------------------------------------------------------------------------------------
# Rendering
# ----------------------------------------------------------------------------------------------

_SS = 2  # supersampling factor


def _smooth_curve(rng: np.random.Generator, x: np.ndarray, step: float, sigma: float) -> np.ndarray:
    """A smooth random walk evaluated at ``x`` (knots every ``step``, linear interpolation)."""
    lo, hi = float(x.min()), float(x.max())
    n = int((hi - lo) / step) + 3
    knots = np.cumsum(rng.normal(0.0, sigma, n))
    knots -= knots.mean()
    return np.interp(x, lo + step * np.arange(n), knots)


def _warp(rng: np.random.Generator, pts: np.ndarray, amp: float) -> np.ndarray:
    """Smooth random displacement field (sum of a few random plane waves) applied to points."""
    k = 3
    freq = rng.uniform(0.8, 3.0, (2, k)) * np.where(rng.random((2, k)) < 0.5, -1.0, 1.0)
    ang = rng.uniform(0, 2 * np.pi, (2, k))
    phase = rng.uniform(0, 2 * np.pi, (2, k))
    amps = rng.uniform(0.3, 1.0, (2, k)) * (amp / k)
    kx, ky = freq * np.cos(ang), freq * np.sin(ang)
    arg = pts[:, :1, None] * kx[None] + pts[:, 1:, None] * ky[None] + phase[None]  # (n, 2, k)
    disp = (np.sin(arg) * amps[None]).sum(-1)
    return pts + disp


@dataclass(frozen=True)
class _LineStyle:
    """The per-line hand: drawn once per line so that all glyphs of a line share it."""

    hscale: float  # horizontal scale of every glyph
    tracking: float  # extra space between letters, x-heights
    space_mul: float  # word-space width relative to the font's space
    slant: float  # shear; > 0 leans ascenders right
    g_scale_sd: float  # per-glyph jitter spreads: scale, rotation, x shift, y shift
    g_rot_sd: float
    g_dx_sd: float
    g_dy_sd: float


def _line_style(rng: np.random.Generator, font: _Font) -> _LineStyle:
    """Draw the line's style (upright fonts get more slant, so that they look less like print)."""
    hscale = rng.uniform(0.78, 1.12)
    tracking = rng.uniform(-0.08, 0.12)
    space_mul = rng.uniform(0.55, 1.15)
    slant = rng.normal(0.02, 0.10) if not font.upright else rng.normal(0.16, 0.12)
    slant = float(np.clip(slant, -0.25, 0.5))
    g_scale_sd = rng.uniform(0.02, 0.08)
    g_rot_sd = rng.uniform(0.0, 0.06)
    g_dx_sd = rng.uniform(0.0, 0.06)
    g_dy_sd = rng.uniform(0.0, 0.08)
    return _LineStyle(hscale, tracking, space_mul, slant, g_scale_sd, g_rot_sd, g_dx_sd, g_dy_sd)


@dataclass(frozen=True)
class _Layout:
    """Glyph trajectories placed along the baseline, before any per-glyph or line distortion."""

    parts: list[np.ndarray]  # each drawn glyph's points, shifted to its place
    lengths: list[int]  # points per stroke, all strokes of the line in order
    owner: list[int]  # points per drawn glyph
    origins: list[float]  # each drawn glyph's centre on the baseline (its jitter pivot)
    advance: float  # pen position after the last character, in x-heights


def _lay_out(text: str, font: _Font, style: _LineStyle, jit: np.ndarray) -> _Layout:
    """Place the glyphs of ``text`` left to right; spaces and characters the font lacks advance only."""
    parts: list[np.ndarray] = []
    lengths: list[int] = []
    owner: list[int] = []
    origins: list[float] = []
    x = 0.0
    space_adv = font.glyphs[" "].advance * style.space_mul
    for i, ch in enumerate(text):
        g = font.glyphs.get(ch)
        if ch == " " or g is None or len(g.points) == 0:
            x += space_adv * (1.0 + 0.15 * jit[i, 0])
            continue
        parts.append(g.points * (style.hscale, 1.0) + (x, 0.0))
        lengths.extend(g.stroke_lengths)
        owner.append(len(g.points))
        origins.append(x + 0.5 * g.advance * style.hscale)
        x += g.advance * style.hscale + style.tracking + 0.04 * jit[i, 1]
    return _Layout(parts, lengths, owner, origins, x)


def _jitter_glyphs(rng: np.random.Generator, layout: _Layout, style: _LineStyle, jit: np.ndarray) -> np.ndarray:
    """Scale and rotate each glyph about its centre on the baseline, and shift it: no two letters alike."""
    gi = len(layout.owner)
    pts = np.concatenate(layout.parts)
    gidx = np.repeat(np.arange(gi), layout.owner)
    gj = jit[: max(gi, 1)]
    s = 1.0 + style.g_scale_sd * np.clip(gj[:, 2], -2.5, 2.5)
    th = style.g_rot_sd * np.clip(gj[:, 3], -2.5, 2.5)
    dx = style.g_dx_sd * rng.normal(0.0, 1.0, gi)
    dy = style.g_dy_sd * np.clip(gj[:, 4], -2.5, 2.5)
    cx = np.asarray(layout.origins)[gidx]
    cy = -0.5
    px, py = pts[:, 0] - cx, pts[:, 1] - cy
    c, sn, sc = np.cos(th)[gidx], np.sin(th)[gidx], s[gidx]
    return np.stack([sc * (c * px - sn * py) + cx + dx[gidx], sc * (sn * px + c * py) + cy + dy[gidx]], axis=1)


def _distort_line(rng: np.random.Generator, pts: np.ndarray, slant: float) -> np.ndarray:
    """Whole-line distortions of the trajectories: elastic warp, slant, then a wandering baseline."""
    pts = _warp(rng, pts, rng.uniform(0.02, 0.10))
    # slant (shear about the baseline): y is down, so ascenders lean right for slant > 0
    pts[:, 0] -= slant * pts[:, 1]
    # baseline drift: slope + low-frequency sine + smooth random walk, along x
    xs = pts[:, 0]
    drift = rng.normal(0.0, 0.012) * xs
    drift += rng.uniform(0.0, 0.18) * np.sin(xs / rng.uniform(6.0, 25.0) + rng.uniform(0, 2 * np.pi))
    drift += _smooth_curve(rng, xs, rng.uniform(2.0, 6.0), rng.uniform(0.0, 0.08))
    pts[:, 1] += drift
    return pts


def _to_canvas(
    rng: np.random.Generator, pts: np.ndarray, font: _Font, n_text: int, advance: float, height: int
) -> tuple[np.ndarray, int, int]:
    """Map x-height units to supersampled canvas pixels: (points, width, height).

    Random top/bottom and side margins; the horizontal scale is clamped so that the mean
    character advance stays in a handwriting-like range at the output height.
    """
    H = height * _SS
    nominal = font.ascent + font.descent
    if len(pts):
        y0, y1 = float(pts[:, 1].min()), float(pts[:, 1].max())
        x0, x1 = float(pts[:, 0].min()), float(pts[:, 0].max())
    else:
        y0, y1, x0, x1 = -font.ascent, font.descent, 0.0, max(advance, 1.0)
    span = max(y1 - y0, 0.8 * nominal)
    pad = span - (y1 - y0)
    m_top, m_bot = rng.uniform(0.02, 0.12, 2)
    scale = H / (span * (1.0 + m_top + m_bot))  # canvas px per x-height
    top = y0 - pad * rng.uniform(0.3, 0.7) - span * m_top
    # keep the mean character advance in a handwriting-like range (output px at this height)
    n_chars = max(n_text, 1)
    per_char = (x1 - x0) * scale / _SS / n_chars
    lo, hi = 0.19 * height, 0.40 * height
    xfac = 1.0
    if per_char < lo:
        xfac = lo / per_char
    elif per_char > hi:
        xfac = hi / per_char
    margin_l, margin_r = rng.uniform(2.0, 10.0, 2) * _SS
    W = int(math.ceil((x1 - x0) * scale * xfac + margin_l + margin_r))
    W = max(W + (-W) % _SS, 4 * _SS)
    cvs = np.empty_like(pts)
    if len(pts):
        cvs[:, 0] = (pts[:, 0] - x0) * scale * xfac + margin_l
        cvs[:, 1] = (pts[:, 1] - top) * scale
    return cvs, W, H


def _draw_strokes(draw: ImageDraw.ImageDraw, cvs: np.ndarray, lengths: list[int], widths: np.ndarray) -> None:
    """Draw each stroke with a round pen of its own width.

    Avoids PIL's slow Python-level "curve" joints: plain polylines, plus a disc on every stroke end
    and every vertex where the direction turns sharply.
    """
    flat = [tuple(p) for p in cvs.tolist()]
    d = np.diff(cvs, axis=0)
    d /= np.maximum(np.hypot(d[:, 0], d[:, 1]), 1e-9)[:, None]
    turn = np.ones(len(cvs), dtype=bool)  # True where a disc is needed
    turn[1:-1] = (d[:-1] * d[1:]).sum(1) < 0.93
    ends = np.cumsum(lengths)
    turn[ends - 1] = True
    turn[ends - np.asarray(lengths)] = True
    start = 0
    for L, w in zip(lengths, widths):
        wi = max(1, int(round(w)))
        draw.line(flat[start : start + L], fill=255, width=wi)
        if wi >= 3:
            r = wi / 2.0 - 0.25
            for k in np.flatnonzero(turn[start : start + L]):
                px_, py_ = flat[start + k]
                draw.ellipse((px_ - r, py_ - r, px_ + r, py_ + r), fill=255)
        start += L


def _ink_mask(rng: np.random.Generator, cvs: np.ndarray, lengths: list[int], W: int, H: int) -> Image.Image:
    """The pen coverage at output resolution: strokes drawn at 2x, box-downsampled, sometimes blurred."""
    pen = max(1.0, rng.uniform(0.032, 0.072) * H)  # canvas px
    mask = Image.new("L", (W, H), 0)
    if len(cvs):
        widths = pen * (1.0 + 0.12 * rng.normal(0.0, 1.0, len(lengths)))
        _draw_strokes(ImageDraw.Draw(mask), cvs, lengths, widths)
    mask = mask.reduce(_SS)
    if rng.random() < 0.5:
        mask = mask.filter(ImageFilter.GaussianBlur(rng.uniform(0.3, 0.9)))
    return mask


def _ink_on_paper(rng: np.random.Generator, mask: Image.Image) -> Image.Image:
    """Composite the ink mask over uneven paper (tone, gradients, a wave) and add sensor noise."""
    m = np.asarray(mask, dtype=np.float32) * (rng.uniform(0.75, 1.0) / 255.0)
    h, w = m.shape
    paper = rng.uniform(195.0, 250.0)
    gx = np.linspace(-1.0, 1.0, w, dtype=np.float32)[None, :] * rng.uniform(-12, 12)
    gy = np.linspace(-1.0, 1.0, h, dtype=np.float32)[:, None] * rng.uniform(-8, 8)
    wave = rng.uniform(0, 8) * np.sin(
        np.linspace(0, rng.uniform(1, 6), w, dtype=np.float32) + rng.uniform(0, 2 * np.pi)
    )[None, :]
    bg = paper + gx + gy + wave
    ink = rng.uniform(0.0, 90.0)
    img = bg * (1.0 - m) + ink * m
    noise_sd = rng.uniform(0.0, 7.0)
    if noise_sd > 0.5:
        img = img + rng.normal(0.0, noise_sd, img.shape).astype(np.float32)
    return Image.fromarray(np.clip(img + 0.5, 0, 255).astype(np.uint8), mode="L")


def render_line(text: str, rng: np.random.Generator, height: int = LINE_HEIGHT) -> Image.Image:
    """Render one handwriting-like line of ``text``: mode "L", dark ink on light paper, ``height`` px.

    The random draws happen in a fixed order (font, style, jitter, distortions, canvas, pen, paper):
    the same generator state gives a bitwise identical image.
    """
    font = _font(_FONT_NAMES[int(rng.choice(len(_FONT_NAMES), p=_FONT_P))])
    style = _line_style(rng, font)
    jit = rng.normal(0.0, 1.0, (max(len(text), 1), 5))
    layout = _lay_out(text, font, style, jit)
    if not layout.parts:  # blank line: just paper
        pts = np.zeros((0, 2))
    else:
        pts = _distort_line(rng, _jitter_glyphs(rng, layout, style, jit), style.slant)
    cvs, W, H = _to_canvas(rng, pts, font, len(text), layout.advance, height)
    return _ink_on_paper(rng, _ink_mask(rng, cvs, layout.lengths, W, H))


# ----------------------------------------------------------------------------------------------
# Text
# ----------------------------------------------------------------------------------------------

_SURNAMES = (
    "Brown Smith Jones Taylor Wilson Clark Hughes Walker Baker Gray Morgan Evans Turner Hall Wood "
    "Green Cooper Harris Ward Bell Hill Shaw Price Reed Kent Lloyd Fisher Grant Hunt Marsh"
).split()
_TITLES = ("Mr.", "Mr.", "Mr.", "Mrs.", "Dr.", "Miss", "Sir", "St.")
_WORDS = words()


def _word(rng: np.random.Generator) -> str:
    cdf = sampling_cdf()
    return _WORDS[min(int(np.searchsorted(cdf, rng.random(), side="right")), len(_WORDS) - 1)]


def _number(rng: np.random.Generator) -> str:
    r = rng.random()
    if r < 0.35:
        return str(int(min(rng.zipf(1.6), 99)))
    if r < 0.55:
        return str(int(rng.integers(1850, 2030)))
    if r < 0.68:
        return f"{int(rng.integers(1, 13))}.{int(rng.integers(0, 12)) * 5:02d}"
    if r < 0.78:
        return f"{int(rng.integers(0, 100))}.{int(rng.integers(0, 10))}"
    if r < 0.88:
        return f"{int(rng.integers(1, 100))},{int(rng.integers(0, 1000)):03d}"
    n = int(rng.integers(1, 32))
    suf = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suf}"


def _cap(w: str) -> str:
    return w[:1].upper() + w[1:]


def _target_length(rng: np.random.Generator, max_chars: int) -> int:
    """The line's length goal: mostly full lines (~41 chars), sometimes a short tail of a paragraph."""
    if rng.random() < 0.06:
        target = int(rng.integers(3, 20))
    else:
        target = int(round(rng.normal(41.0, 12.0)))
    return int(np.clip(target, 3, max_chars))


def _token(rng: np.random.Generator, length: int) -> str:
    """One bare token: a number, a title and surname, or a word (sometimes capitalised or compounded)."""
    r = rng.random()
    if r < 0.055:
        tok = _number(rng)
        if rng.random() < 0.04:
            tok = "#" + tok
    elif r < 0.068:
        tok = f"{_TITLES[int(rng.integers(len(_TITLES)))]} {_SURNAMES[int(rng.integers(len(_SURNAMES)))]}"
    else:
        tok = _word(rng)
        q = rng.random()
        if q < 0.02:
            tok = _cap(tok)  # a proper noun or title-case word
        elif q < 0.025:
            tok = tok.upper()
        elif q < 0.045 and length > 0:
            tok = f"{tok}-{_word(rng)}"
        elif tok == "and" and q < 0.09:
            tok = "&"
        elif q < 0.05:
            tok = f"{tok}/{_word(rng)}"
    return tok


@dataclass
class _Open:
    """A quotation or parenthesis left open in the line: words left before it closes, and its quote mark."""

    quote: int = 0
    paren: int = 0
    quote_char: str = '"'


def _maybe_open(rng: np.random.Generator, tok: str, open_: _Open) -> str:
    """Sometimes open a quotation or parenthesis before ``tok`` (never nested: one at a time)."""
    if not open_.quote and not open_.paren:
        o = rng.random()
        if o < 0.015:
            open_.quote_char = '"' if rng.random() < 0.8 else "'"
            tok = open_.quote_char + tok
            open_.quote = int(rng.integers(1, 5))
        elif o < 0.025:
            tok = "(" + tok
            open_.paren = int(rng.integers(1, 5))
    return tok


def _end_mark(rng: np.random.Generator) -> str:
    """The punctuation after a word, mostly none; sentence ends are mostly full stops."""
    p = rng.random()
    end = ""
    if p < 0.055:
        end = rng.choice([".", ".", ".", ".", ".", ".", ".", "?", "!"])
    elif p < 0.12:
        end = ","
    elif p < 0.126:
        end = ";"
    elif p < 0.132:
        end = ":"
    elif p < 0.135:
        end = "*"
    return end


def _close(tok: str, end: str, open_: _Open) -> str:
    """Append ``end`` to ``tok``, closing an open quotation or parenthesis when it is due or a sentence ends."""
    if open_.quote:
        open_.quote -= 1
        if open_.quote == 0 or end in ".?!":
            tok = tok + (end + open_.quote_char if end in ".?!," else open_.quote_char + end)
            end = ""
            open_.quote = 0
    elif open_.paren:
        open_.paren -= 1
        if open_.paren == 0 or end in ".?!":
            tok = tok + ")" + end
            end = ""
            open_.paren = 0
    return tok + end


def _fit(text: str, max_chars: int) -> str:
    """Cut ``text`` to ``max_chars`` at a word boundary where there is one; never return an empty line."""
    if len(text) > max_chars:
        cut = text.rfind(" ", 0, max_chars + 1)
        text = text[:cut] if cut > 0 else text[:max_chars]
    return text.strip() or _WORDS[0][:max_chars]


def sample_text(rng: np.random.Generator, max_chars: int = 80) -> str:
    """A line of English-like text (IAM character set), typically 20-70 characters (mean ~43).

    Words are drawn with Zipf-like frequencies from the built-in list; lines often start and end
    mid-sentence like lines of a handwritten page.
    """
    max_chars = max(1, int(max_chars))
    target = _target_length(rng, max_chars)

    tokens: list[str] = []
    length = 0
    sentence_start = rng.random() < 0.35
    open_ = _Open()
    while length < target:
        tok = _token(rng, length)
        if sentence_start:
            tok = _cap(tok)
            sentence_start = False
        tok = _maybe_open(rng, tok, open_)
        tok = _close(tok, _end_mark(rng), open_)
        if tok[-1] in ".?!" or tok.endswith('."') or tok.endswith('?"') or tok.endswith('!"'):
            sentence_start = True
        tokens.append(tok)
        length += len(tok) + (1 if len(tokens) > 1 else 0)
        extra = rng.random()
        if extra < 0.008:
            tokens.append("-")
            length += 2
        elif extra < 0.011:
            tokens.append("+")
            length += 2

    return _fit(" ".join(tokens), max_chars)


# ----------------------------------------------------------------------------------------------
# Dataset
# ----------------------------------------------------------------------------------------------


class SyntheticLines(torch.utils.data.Dataset):
    """``num_lines`` synthetic (image, text) pairs; item ``i`` depends only on ``(seed, i)``."""

    def __init__(self, num_lines: int, seed: int = 0, height: int = LINE_HEIGHT, max_chars: int = 80):
        if num_lines < 0:
            raise ValueError(f"num_lines must be >= 0, got {num_lines}")
        if height < 8:
            raise ValueError(f"height must be >= 8, got {height}")
        self.num_lines = int(num_lines)
        self.seed = int(seed)
        self.height = int(height)
        self.max_chars = int(max_chars)

    def __len__(self) -> int:
        return self.num_lines

    def rng(self, index: int) -> np.random.Generator:
        return np.random.default_rng([self.seed & 0xFFFFFFFFFFFFFFFF, index])

    def __getitem__(self, index: int) -> tuple[Image.Image, str]:
        index = int(index)
        if index < 0:
            index += self.num_lines
        if not 0 <= index < self.num_lines:
            raise IndexError(f"index {index} out of range for {self.num_lines} lines")
        rng = self.rng(index)
        text = sample_text(rng, self.max_chars)
        return render_line(text, rng, self.height), text
