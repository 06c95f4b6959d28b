"""``LineRecognizer``: the one inference wrapper used by the CLI, the evaluation, the API and tests.

Command line (files, folders, glob patterns; see ``main``)::

    python -m text_recognizer.recognizer --checkpoint PATH INPUT... [--format text|jsonl|json] [--batch-size N]
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

import torch
from PIL import Image

from text_recognizer.checkpoint import LOSS_OF_OUTPUT_KIND, CheckpointError, load_checkpoint
from text_recognizer.data.folder import open_image
from text_recognizer.decoding.bundle import LanguageModelError, choose_bundle, decoder_bundle_for
from text_recognizer.decoding.decoder import DECODERS, Geometry, LineDecoder
from text_recognizer.decoding.greedy import DecodedLine, ctc_decode
from text_recognizer.decoding.options import add_decoder_arguments, decoder_kwargs
from text_recognizer.decoding.readings import available_readings, bundle_for_readings
from text_recognizer.line_batches import LineReader, read_in_batches
from text_recognizer.stem import preprocess

#: Where the bundled default model lives (shipped inside the package once trained).
DEFAULT_CHECKPOINT = Path(__file__).parent / "artifacts" / "default.pt"


def default_checkpoint() -> Path:
    """The bundled model, or a ``CheckpointError`` saying how to make one."""
    if not DEFAULT_CHECKPOINT.is_file():
        raise CheckpointError(
            f"no bundled model at {DEFAULT_CHECKPOINT}; train one with "
            "`python training/run_experiment.py` and pass --checkpoint training/logs/<run>/best.pt"
        )
    return DEFAULT_CHECKPOINT


class LineRecognizer(LineReader):
    """Load a checkpoint once; ``predict`` images of single text lines.

    ``checkpoint`` holds the whole bundle (``text_recognizer.checkpoint.Checkpoint``: model config,
    codec, decoding, provenance, licence); ``config``, ``codec`` and ``metadata`` are short cuts into it.

    ``decoder``: ``"greedy"`` (best path) or ``"beam"`` (beam search with the checkpoint's language
    model when it has one: inside the checkpoint (``decoding.decoder``) or in ``<checkpoint>.decoder.pt``;
    see ``text_recognizer.decoding.bundle``). ``decoder_bundle`` overrides where that comes from (``False``: none, so
    confidences are uncalibrated as before), ``use_lm=False``
    searches without the LM, ``beam_options`` overrides the tuned ``BeamOptions`` (beam_width,
    lm_weight, word_bonus, token_beam, threshold, word_lm_weight, word_lm_bonus, oov_penalty,
    rescore_lm_weight, corrections, correction_distance, blank_penalty). ``readings=3`` reads every
    line three times (as it is, moved up, moved down) and decodes the mean of the three posteriors, with
    the bundle's settings for that (``text_recognizer.decoding.readings``): fewer errors for three times
    the model's work.
    """

    def __init__(self, checkpoint: str | Path | None = None, device: str | torch.device = "cpu", batch_size: int = 16,
                 decoder: str = "greedy", decoder_bundle: str | Path | bool | None = None, use_lm: bool = True,
                 beam_options: dict | None = None, readings: int = 1):
        if decoder not in DECODERS:
            raise ValueError(f"decoder must be one of {DECODERS}, got {decoder!r}")
        self.path = Path(checkpoint) if checkpoint is not None else default_checkpoint()
        self.checkpoint = load_checkpoint(self.path, map_location="cpu")
        self.config = self.checkpoint.model_config
        self.codec = self.checkpoint.codec
        self.decoding = self.checkpoint.decoding
        self.metadata = self.checkpoint.metadata
        self.device = torch.device(device)
        self.model = self.checkpoint.build_model().to(self.device).eval()
        self.batch_size = batch_size
        path = self.path
        try:
            bundle = choose_bundle(decoder_bundle, lambda: decoder_bundle_for(path, self.decoding.decoder, self.codec),
                                   self.codec, lambda: hashlib.sha256(path.read_bytes()).hexdigest(), str(path))
        except LanguageModelError as error:
            raise CheckpointError(str(error)) from error
        if decoder == "beam" and self.loss != "ctc":
            raise ValueError(f"decoder='beam' needs a CTC model; {path} was trained with loss {self.loss!r}")
        self.bundle, self._use_lm = bundle, use_lm
        # (bundle to decode with, shift of the copies; 0: one reading) per available readings count, made once
        self._views = {r: bundle_for_readings(bundle, r, str(path)) for r in available_readings(bundle)}
        decode_with, self.shift = self._view(readings)
        self.readings = readings
        self.decoder = LineDecoder(self.codec, decoder, decode_with, use_lm=use_lm, **(beam_options or {}))
        self._decoders = {(decoder, readings): self.decoder}
        self._decoders_lock = threading.Lock()

    def readings_available(self) -> tuple[int, ...]:
        """Readings per line this recognizer can decode with (3 needs a bundle with settings for it, or none)."""
        return tuple(self._views)

    def _view(self, readings: int) -> tuple[dict | None, int]:
        """The bundle and copy shift for ``readings``; a clear ``ValueError`` for an unavailable count."""
        if readings in self._views:
            return self._views[readings]
        return bundle_for_readings(self.bundle, readings, str(self.path))  # raises, saying why

    def decoder_for(self, name: str | None, readings: int | None = None) -> LineDecoder:
        """The decoder called ``name`` for ``readings`` readings per line (``None``: this recognizer's
        defaults), built once with the same LM and the bundle's settings for that many readings."""
        readings = self.readings if readings is None else readings
        if name is None and readings == self.readings:
            return self.decoder
        name = self.decoder.name if name is None else name
        if name not in DECODERS:
            raise ValueError(f"decoder must be one of {DECODERS}, got {name!r}")
        with self._decoders_lock:
            if (name, readings) not in self._decoders:
                decode_with, _ = self._view(readings)
                self._decoders[name, readings] = LineDecoder(self.codec, name, decode_with, use_lm=self._use_lm)
            return self._decoders[name, readings]

    @property
    def loss(self) -> str:
        """The training loss that matches this model's outputs (``ctc`` or ``nll``); see ``decoding.output_kind``."""
        return LOSS_OF_OUTPUT_KIND[self.decoding.output_kind]

    @property
    def height(self) -> int:
        return self.config.height

    def preprocess(self, image: Image.Image | str | Path) -> torch.Tensor:
        """The shared stem at this model's height: ``(1, H, W)``."""
        if isinstance(image, (str, Path)):
            image = open_image(Path(image))
        return preprocess(image, self.config.height, deslant=self.config.deslant)

    def geometry(self, stem_width: int, image_size: tuple[int, int] | None = None) -> Geometry:
        """Frame -> pixel mapping for a line; ``image_size`` (original width, height) scales it back."""
        return Geometry.for_line(self.config.height, self.config.window_width, self.config.window_stride,
                                 stem_width, image_size, centred=self.config.deslant)

    @torch.inference_mode()
    def predict_tensors(self, lines: Sequence[torch.Tensor], image_sizes: Sequence[tuple[int, int]] | None = None,
                        decoder: str | None = None, readings: int | None = None) -> list[DecodedLine]:
        """Decode preprocessed ``(1, H, W)`` lines, batched by similar width to limit padding.

        ``image_sizes`` (original ``(width, height)`` per line) puts word and character positions in
        the original images' pixels; without it they are in preprocessed pixels. ``decoder``
        overrides this recognizer's decoder for this call (``"greedy"`` or ``"beam"``), ``readings`` its
        readings per line (1 or 3).
        """
        readings = self.readings if readings is None else readings
        line_decoder = self.decoder_for(decoder, readings)
        if line_decoder.name == "beam" and self.loss != "ctc":
            raise ValueError(f"decoder='beam' needs a CTC model; {self.path} was trained with loss {self.loss!r}")
        is_ctc = self.loss == "ctc"

        def log_probs_of(batch: torch.Tensor, widths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            logits = self.model(batch.to(self.device), widths)  # (N, T, C)
            return logits.float().log_softmax(-1).cpu(), self.model.output_lengths(widths)  # (N, T, C), (N,)

        def decode(log_probs: torch.Tensor, stem_width: int, size: tuple[int, int] | None) -> DecodedLine:
            if not is_ctc:  # per-window (NLL) baseline: every frame is a character
                return ctc_decode(log_probs[None], self.codec, collapse_repeats=False)[0]
            return line_decoder.decode(log_probs, self.geometry(stem_width, size))

        shift = self._view(readings)[1] if is_ctc else 0
        return read_in_batches(lines, image_sizes, self.batch_size, log_probs_of, decode, shift)


#: More files than this get a progress bar on stderr (with --progress auto).
PROGRESS_THRESHOLD = 5


def build_parser() -> argparse.ArgumentParser:
    from text_recognizer.outputs import FORMATS  # CLI modules load here: the library import stays light

    parser = argparse.ArgumentParser(
        prog="python -m text_recognizer.recognizer",
        description="Read the text of handwritten line images: files, folders or glob patterns ('lines/*.png').",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("inputs", nargs="+", metavar="INPUT",
                        help="image files (one text line each), folders of them, or quoted glob patterns")
    parser.add_argument("--checkpoint", type=Path, default=None, help="model checkpoint (default: the bundled model)")
    parser.add_argument("--format", choices=FORMATS, default="text",
                        help="text: FILE<TAB>TEXT per line (only TEXT for a single file); jsonl: one JSON object "
                             "{image, text, confidence} per line; json: one JSON list at the end")
    parser.add_argument("--json", action="store_true", help="same as --format json")
    parser.add_argument("--recursive", action="store_true", help="also read images in subfolders of folder inputs")
    parser.add_argument("--batch-size", type=_positive_int, default=16, help="lines decoded together")
    parser.add_argument("--progress", choices=("auto", "always", "never"), default="auto",
                        help=f"progress bar on stderr: auto shows it for more than {PROGRESS_THRESHOLD} files")
    parser.add_argument("--page-xml", action="store_true",
                        help="the inputs are PAGE-XML files (or folders/patterns of them) with their page images: "
                             "every TextLine is cut out by its polygon, recognised, and its TextEquiv set; "
                             "the files are written to --output-dir")
    parser.add_argument("--output-dir", type=Path, default=None, help="where --page-xml writes the transcribed files")
    parser.add_argument("--onnx", type=Path, default=None,
                        help="read with ONNX Runtime from this exported model (training/export_model.py --format onnx; "
                             "needs requirements-onnx.txt) instead of PyTorch and --checkpoint")
    parser.add_argument("--device", default="cpu", help="torch device")
    add_decoder_arguments(parser)
    return parser


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    """Exit status: 0 when every input was read, 1 when some were not (the rest are still read), 2 on
    a usage or checkpoint error."""
    from text_recognizer.batch import recognize_files
    from text_recognizer.inputs import resolve_inputs
    from text_recognizer.outputs import ResultWriter

    parser = build_parser()
    args = parser.parse_args(argv)
    if args.page_xml and args.output_dir is None:
        parser.error("--page-xml needs --output-dir (the input files are never overwritten)")
    resolved = resolve_inputs(args.inputs, recursive=args.recursive,
                              suffixes=frozenset({".xml"}) if args.page_xml else None)
    failures = 0
    for item, reason in resolved.problems:
        print(f"error: {item}: {reason}", file=sys.stderr)
        failures += 1
    if args.onnx is not None and args.checkpoint is not None:
        parser.error("give --checkpoint (PyTorch) or --onnx (ONNX Runtime), not both")
    try:
        if args.onnx is not None:
            from text_recognizer.onnx_recognizer import OnnxLineRecognizer

            recognizer = OnnxLineRecognizer(args.onnx, batch_size=args.batch_size, **decoder_kwargs(args))
        else:
            recognizer = LineRecognizer(args.checkpoint, device=args.device, batch_size=args.batch_size,
                                        **decoder_kwargs(args))
    except (CheckpointError, ValueError, ImportError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    files = resolved.files
    if args.page_xml:
        return 1 if _transcribe_pages(recognizer, files, args.output_dir) + failures else 0
    single = len(args.inputs) == 1 and len(files) == 1 and Path(args.inputs[0]).is_file()
    writer = ResultWriter(sys.stdout, "json" if args.json else args.format, with_paths=not single)
    show = args.progress == "always" or (args.progress == "auto" and len(files) > PROGRESS_THRESHOLD)
    with _progress_bar(len(files), show) as bar:
        for result in recognize_files(recognizer, files, args.batch_size, on_result=lambda _: bar.update()):
            if not result.ok:
                failures += 1
                bar.write(f"error: {result.error}", file=sys.stderr)
            writer.write(result)
    writer.close()
    if failures:
        read = len(files) - (failures - len(resolved.problems))
        print(f"{failures} input(s) could not be read; {read} of {len(files)} file(s) were", file=sys.stderr)
        return 1
    return 0


class _NoBar:
    """Stands in for a tqdm bar when the bar is off or tqdm is not installed (the base install lacks it)."""

    def __enter__(self) -> _NoBar:
        return self

    def __exit__(self, *exc) -> None:
        return None

    def update(self, n: int = 1) -> None:
        return None

    @staticmethod
    def write(text: str, file=None) -> None:
        print(text, file=file or sys.stderr)


def _progress_bar(total: int, show: bool):
    if show:
        try:
            from tqdm import tqdm
        except ImportError:
            return _NoBar()
        return tqdm(total=total, unit="line", file=sys.stderr, dynamic_ncols=True)
    return _NoBar()


def _transcribe_pages(recognizer, files: list[Path], output_dir: Path) -> int:
    """``--page-xml``: transcribe each PAGE file into ``output_dir``; print ``input -> output`` per file and
    problems on stderr; return how many files or lines failed."""
    from text_recognizer.data.layout import LayoutError
    from text_recognizer.page_output import transcribe_page, write_page

    failures = 0
    targets = [output_dir / path.name for path in files]
    for path, target in zip(files, targets):
        if target.resolve() == path.resolve():
            print(f"error: {path}: --output-dir would overwrite the input; choose another folder", file=sys.stderr)
            failures += 1
            continue
        if targets.count(target) > 1:
            print(f"error: {path}: several inputs are named {path.name}; transcribe them one folder at a time",
                  file=sys.stderr)
            failures += 1
            continue
        try:
            result = transcribe_page(recognizer, path)
        except LayoutError as error:
            print(f"error: {error}", file=sys.stderr)
            failures += 1
            continue
        for line_id, reason in result.problems:
            print(f"error: {path}#{line_id}: {reason} (TextEquiv left unchanged)", file=sys.stderr)
        failures += len(result.problems)
        write_page(result.layout, target)
        print(f"{path} -> {target} ({len(result.texts)} of {len(result.layout.lines)} lines)")
    return failures


if __name__ == "__main__":
    raise SystemExit(main())
