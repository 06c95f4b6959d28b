"""``text-recognizer-data``: list, fetch and prepare the open handwriting collections of ``data/sources/``.

    text-recognizer-data list                              # the sources: licence, language, centuries, lines
    text-recognizer-data fetch --all                       # download each at its pinned commit (needs internet)
    text-recognizer-data fetch timeus --from ~/timeuscorpus.git     # or from a local copy (bare git, checkout, tarball)
    text-recognizer-data fetch --all --mirrors /work/.mirror        # local copies found as <owner>+<name>[/repo]
    text-recognizer-data prepare --all                     # cut lines, apply the guideline, split by document
    text-recognizer-data table                             # what was prepared, one row a source (Markdown)

Everything lands under ``--root`` (default: the repository's ``data/``, git-ignored but for the manifests):
``raw/<name>/`` as fetched, ``prepared/<name>/{train,val,pages}`` for training. The guideline that turns each
collection's transcriptions into our alphabet: ``docs/transcription.md``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from training.sources.fetch import FetchError, fetch_source
from training.sources.manifest import DEFAULT_MANIFEST_DIR, ManifestError, Source, load_sources
from training.sources.prepare import PREPARED, PrepareError, prepare_folder_report, prepare_source, prepared_folder

DEFAULT_ROOT = DEFAULT_MANIFEST_DIR.parent


def find_mirror(mirrors: Path, source: Source) -> Path | None:
    """A local copy of the source's repository under ``mirrors``: ``<owner>+<name>/repo``, ``<owner>+<name>``,
    ``<owner>/<name>`` or ``<name>``."""
    owner, name = source.repository.split("/")
    for candidate in (mirrors / f"{owner}+{name}" / "repo", mirrors / f"{owner}+{name}", mirrors / owner / name,
                      mirrors / name):
        if candidate.exists():
            return candidate
    return None


def _selected(args: argparse.Namespace) -> list[Source]:
    if not args.sources and not args.all:
        raise ManifestError("name one or more sources, or --all (text-recognizer-data list shows them)")
    return load_sources(args.manifests, None if args.all else args.sources)


def cmd_list(args: argparse.Namespace) -> None:
    print(f"{'source':24} {'licence':12} {'lang':4} {'centuries':10} {'pages':>5} {'lines':>6}  repository@commit")
    for s in load_sources(args.manifests):
        centuries = ",".join(str(c) for c in s.centuries)
        print(f"{s.name:24} {s.licence:12} {s.language:4} {centuries:10} {s.pages:5d} {s.lines:6d}  "
              f"{s.repository}@{s.commit[:8]}")


def cmd_fetch(args: argparse.Namespace) -> None:
    sources = _selected(args)
    if args.origin and len(sources) != 1:
        raise ManifestError("--from gives one source's copy: name exactly one source (or use --mirrors)")
    for source in sources:
        origin = args.origin
        if origin is None and args.mirrors:  # "" (a recipe's empty variable): from GitHub
            origin = find_mirror(args.mirrors, source)
            if origin is None:
                raise FetchError(f"{source.name}: no copy of {source.repository} under {args.mirrors}")
        started = time.monotonic()
        fetched = fetch_source(source, args.root, origin, force=args.force)
        state = "already fetched" if fetched.skipped else f"fetched in {time.monotonic() - started:.0f} s"
        print(f"{source.name}: {len(fetched.files)} files, {len(fetched.missing)} missing from the copy, "
              f"{state} -> {fetched.folder}")


def cmd_prepare(args: argparse.Namespace) -> None:
    for source in _selected(args):
        started = time.monotonic()
        report = prepare_source(source, args.root, height=args.height, workers=args.workers)
        lines, left = report["lines"], sum(report["left_out"].values())
        print(f"{source.name}: {lines['train']} train / {lines['val']} val lines, {left} left out "
              f"({', '.join(f'{k}: {v}' for k, v in report['left_out'].items()) or 'none'}), "
              f"{report['pages_without_image']} pages without image, {time.monotonic() - started:.0f} s "
              f"-> {prepared_folder(args.root, source)}")


def cmd_table(args: argparse.Namespace) -> None:
    print("| source | licence | language | centuries | documents (train/val) | pages with image | lines train / val "
          "| left out | pages without image |")
    print("|---|---|---|---|---|---|---|---|---|")
    for source in load_sources(args.manifests):
        path = prepared_folder(args.root, source) / PREPARED
        if not path.is_file():
            print(f"| {source.name} | {source.licence} | {source.language} | not prepared | | | | | |")
            continue
        print(prepare_folder_report(source, json.loads(path.read_text(encoding="utf-8"))))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="text-recognizer-data", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--manifests", type=Path, default=DEFAULT_MANIFEST_DIR, help="folder of source manifests")
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT, help="where raw/ and prepared/ go")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="the sources and what they hold").set_defaults(run=cmd_list)
    commands.add_parser("table", help="what was prepared, as a Markdown table").set_defaults(run=cmd_table)
    for name, run, text in (("fetch", cmd_fetch, "download sources at their pinned commit"),
                            ("prepare", cmd_prepare, "cut, normalise and split fetched sources")):
        sub = commands.add_parser(name, help=text)
        sub.add_argument("sources", nargs="*", help="source names (data/sources/<name>.toml)")
        sub.add_argument("--all", action="store_true", help="every source")
        sub.set_defaults(run=run)
        if name == "fetch":
            sub.add_argument("--from", dest="origin", type=Path, default=None,
                             help="a local copy of the one source named: bare git dir, checkout or .tar.gz")
            sub.add_argument("--mirrors", type=lambda text: Path(text) if text else None, default=None,
                             help="folder of local copies, found as <owner>+<name>[/repo], <owner>/<name> or <name> "
                                  "(empty: from GitHub)")
            sub.add_argument("--force", action="store_true", help="fetch again even when already fetched")
        else:
            sub.add_argument("--height", type=int, default=64, help="line image height in pixels (0: as cut)")
            sub.add_argument("--workers", type=int, default=1, help="processes cutting pages")
    return parser


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    try:
        args.run(args)
    except (ManifestError, FetchError, PrepareError) as error:
        print(f"text-recognizer-data: {error}", file=sys.stderr)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
