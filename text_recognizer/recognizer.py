"""``LineRecognizer``: the one inference wrapper used by the CLI, the evaluation, the API and tests.

Command line (files, folders, glob patterns; see ``main``)::

    python -m text_recognizer.recognizer --checkpoint PATH INPUT... [--format text|jsonl|json] [--batch-size N]
    python -m text_recognizer.recognizer --page PAGE_IMAGE_OR_PDF... [--format json|jsonl|text|page|alto|pdf|hocr]
        [--output-dir DIR] [--dpi N]
    python -m text_recognizer.recognizer --decoder beam --language fr|en|auto INPUT...   # a language's LMs
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from collections.abc import Sequence
from pathlib import Path

import torch
from PIL import Image

from text_recognizer.checkpoint import LOSS_OF_OUTPUT_KIND, CheckpointError, load_checkpoint
from text_recognizer.cli_types import positive_float, positive_int
from text_recognizer.data.folder import open_image
from text_recognizer.decoding.bundle import LanguageModelError
from text_recognizer.decoding.bundle_set import BundleSet
from text_recognizer.decoding.decoder import Geometry, LineDecoder
from text_recognizer.decoding.line_decoders import LanguageDecoders
from text_recognizer.decoding.names import DECODERS
from text_recognizer.decoding.options import add_decoder_arguments, decoder_kwargs
from text_recognizer.line_batches import LineReader
from text_recognizer.progress import PROGRESS_THRESHOLD
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
    models when it has them: inside the checkpoint (``decoding.decoder``) or in ``<checkpoint>.decoder.pt``,
    and one bundle per further language in ``<checkpoint>.<xx>.decoder.pt``; see
    ``text_recognizer.decoding.bundle_set``). ``decoder_bundle`` overrides where that comes from (a path: that
    bundle alone; ``False``: none, so confidences are uncalibrated as before), ``use_lm=False``
    searches without the LM, ``beam_options`` overrides the tuned ``BeamOptions`` (beam_width,
    lm_weight, word_bonus, token_beam, threshold, word_lm_weight, word_lm_bonus, oov_penalty,
    rescore_lm_weight, corrections, correction_distance, blank_penalty). ``readings=3`` reads every
    line three times (as it is, moved up, moved down) and decodes the mean of the three posteriors, with
    the bundle's settings for that (``text_recognizer.decoding.readings``): fewer errors for three times
    the model's work. ``language`` (an ISO 639-1 code such as ``"fr"``, or ``"auto"``; default: the model's
    own, that of ``<stem>.decoder.pt``) picks the language models of beam search
    (``text_recognizer.decoding.line_decoders``); ``languages`` lists those the model has.
    """

    def __init__(self, checkpoint: str | Path | None = None, device: str | torch.device = "cpu", batch_size: int = 16,
                 decoder: str = "greedy", decoder_bundle: str | Path | bool | None = None, use_lm: bool = True,
                 beam_options: dict | None = None, readings: int = 1, language: str | None = None):
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
        self.is_ctc = self.loss == "ctc"
        path = self.path
        try:
            bundles = BundleSet.for_model(decoder_bundle, path, self.decoding.decoder, self.codec,
                                          lambda: hashlib.sha256(path.read_bytes()).hexdigest())
        except LanguageModelError as error:
            raise CheckpointError(str(error)) from error
        if decoder == "beam" and not self.is_ctc:
            raise ValueError(f"decoder='beam' needs a CTC model; {path} was trained with loss {self.loss!r}")
        self.decoders = LanguageDecoders(self.codec, bundles, decoder, readings, language, use_lm, beam_options)
        self.bundle = bundles.primary  # the model's own bundle (greedy calibration; what an export carries)
        self.readings = readings
        self.decoder = self.decoders.default
        self.shift = self.decoders.view(readings, self.decoders.language)[1]

    def decoder_for(self, name: str | None, readings: int | None = None, language: str | None = None) -> LineDecoder:
        """The decoder called ``name`` for ``readings`` readings per line in ``language`` (a code of the bundles;
        ``None``: the primary bundle's), built once with the same LMs and the bundle's settings for that many
        readings; ``None`` for ``name`` and ``readings``: this recognizer's defaults."""
        name = self.decoders.name if name is None else name
        if name not in DECODERS:
            raise ValueError(f"decoder must be one of {DECODERS}, got {name!r}")
        readings = self.readings if readings is None else readings
        if language is None and (name, readings) == (self.decoders.name, self.readings):
            return self.decoder
        return self.decoders.get(name, readings, language)

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
    def log_probs_of(self, batch: torch.Tensor, widths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The network on a padded ``(N, 1, H, W)`` batch: its ``(N, T, C)`` log-probabilities on the CPU and
        each line's valid frames ``(N,)``."""
        logits = self.model(batch.to(self.device), widths)  # (N, T, C)
        return logits.float().log_softmax(-1).cpu(), self.model.output_lengths(widths)  # (N, T, C), (N,)

    def read_page(self, image: Image.Image | str | Path, segmenter=None, decoder: str | None = None,
                  readings: int | None = None, language: str | None = None):
        """Read a whole page (a PIL image or a path): its lines found, cut out and read, words placed on the
        page. A short cut to ``text_recognizer.page_reader.PageReader(self, segmenter).read(...)``, which
        says what comes back (a ``PageResult``) and what is refused."""
        from text_recognizer.page_reader import PageReader  # the segmenter needs scipy: loaded when used

        return PageReader(self, segmenter).read(image, decoder=decoder, readings=readings, language=language)


def build_parser() -> argparse.ArgumentParser:
    from text_recognizer.outputs import FORMATS  # CLI modules load here: the library import stays light
    from text_recognizer.page_files import WRITTEN_FORMATS
    from text_recognizer.page_options import MAX_PAGE_PIXELS, add_page_reader_arguments
    from text_recognizer.pdf.pages import MAX_PDF_PAGES

    parser = argparse.ArgumentParser(
        prog="python -m text_recognizer.recognizer",
        description="Read the text of handwritten line images (or, with --page, of whole pages): files, folders "
                    "or glob patterns ('lines/*.png').",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("inputs", nargs="+", metavar="INPUT",
                        help="image files (one text line each; with --page one page each, or PDFs of pages), "
                             "folders of them, or quoted glob patterns")
    parser.add_argument("--checkpoint", type=Path, default=None, help="model checkpoint (default: the bundled model)")
    parser.add_argument("--format", choices=(*FORMATS, *WRITTEN_FORMATS), default="text",
                        help="text: FILE<TAB>TEXT per line (only TEXT for a single file); jsonl: one JSON object "
                             "{image, text, confidence} per line; json: one JSON list at the end. With --page: "
                             "json: one JSON list with an object per page {image, width, height, lines, text}; "
                             "jsonl: that object on one line per page; text: the page's text (under a '==> FILE <==' "
                             "header when there are several); page / alto: a PAGE-XML 2019 / ALTO 4.4 file per "
                             "page, <stem>.xml in --output-dir (<stem>_page0001.xml ... for a PDF's pages); pdf: a "
                             "searchable PDF per input (the page as it was, an invisible text layer), <stem>.pdf; "
                             "hocr: an hOCR file per input, <stem>.hocr")
    parser.add_argument("--page", action="store_true",
                        help="the inputs are images of whole pages: find the text lines (--segmenter), "
                             "read them in order, and give the lines with polygons, baselines, words and text")
    add_page_reader_arguments(parser, "with --page: ")
    parser.add_argument("--max-page-pixels", type=positive_int, default=MAX_PAGE_PIXELS,
                        help="with --page: larger images are refused (memory stays bounded); scale them down")
    parser.add_argument("--dpi", type=positive_float, default=None,
                        help="with --page: the resolution PDF pages are rendered at (default: each page's scan "
                             "resolution, or 300 for a page without a scan)")
    parser.add_argument("--max-pdf-pages", type=positive_int, default=MAX_PDF_PAGES,
                        help="with --page: PDFs with more pages are refused")
    parser.add_argument("--json", action="store_true", help="same as --format json")
    parser.add_argument("--recursive", action="store_true", help="also read images in subfolders of folder inputs")
    parser.add_argument("--batch-size", type=positive_int, default=16, help="lines decoded together")
    parser.add_argument("--progress", choices=("auto", "always", "never"), default="auto",
                        help=f"progress bar on stderr: auto shows it for more than {PROGRESS_THRESHOLD} files")
    parser.add_argument("--page-xml", action="store_true",
                        help="the inputs are PAGE-XML files (or folders/patterns of them) with their page images: "
                             "every TextLine is cut out by its polygon, recognised, and its TextEquiv set; "
                             "the files are written to --output-dir")
    parser.add_argument("--output-dir", type=Path, default=None,
                        help="where --page-xml writes the transcribed files, and --page --format page|alto|pdf|hocr "
                             "its files")
    parser.add_argument("--onnx", type=Path, default=None,
                        help="read with ONNX Runtime from this exported model (python -m training.release.export_model "
                             "--format onnx; "
                             "needs requirements-onnx.txt) instead of PyTorch and --checkpoint")
    parser.add_argument("--device", default="cpu", help="torch device")
    add_decoder_arguments(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Exit status: 0 when every input was read, 1 when some were not (the rest are still read), 2 on
    a usage or checkpoint error."""
    from text_recognizer.batch import recognize_files
    from text_recognizer.inputs import resolve_inputs
    from text_recognizer.outputs import ResultWriter
    from text_recognizer.page_cli import read_pages
    from text_recognizer.page_files import WRITTEN_FORMATS, page_file_suffixes
    from text_recognizer.progress import progress_bar

    parser = build_parser()
    args = parser.parse_args(argv)
    if args.page_xml and args.output_dir is None:
        parser.error("--page-xml needs --output-dir (the input files are never overwritten)")
    if args.page and args.page_xml:
        parser.error("--page reads page images; --page-xml transcribes PAGE-XML files: give one of them")
    if args.format in WRITTEN_FORMATS and not args.page:
        parser.error(f"--format {args.format} writes whole pages: it needs --page")
    if args.page and args.format in WRITTEN_FORMATS and args.output_dir is None:
        parser.error(f"--format {args.format} writes files: it needs --output-dir")
    suffixes = frozenset({".xml"}) if args.page_xml else (page_file_suffixes() if args.page else None)
    resolved = resolve_inputs(args.inputs, recursive=args.recursive, suffixes=suffixes)
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
    if args.page:
        status = read_pages(recognizer, files, args)
        return 2 if status == 2 else (1 if status or failures else 0)
    single = len(args.inputs) == 1 and len(files) == 1 and Path(args.inputs[0]).is_file()
    writer = ResultWriter(sys.stdout, "json" if args.json else args.format, with_paths=not single)
    show = args.progress == "always" or (args.progress == "auto" and len(files) > PROGRESS_THRESHOLD)
    with progress_bar(len(files), show) as bar:
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
