"""``text-recognizer-serve``: run the API under uvicorn (``python -m api.serve --help``).

A thin command-line layer so that an installed package can serve without knowing uvicorn's
import-string syntax; the model and limits still come from the ``TEXT_RECOGNIZER_*`` variables
(``api/settings.py``).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="text-recognizer-serve", description="Serve the handwritten line recognizer.",
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (0.0.0.0: every interface)")
    parser.add_argument("--port", type=int, default=8000, help="TCP port")
    parser.add_argument("--workers", type=int, default=1, help="server processes, each with its own copy of the model")
    args = parser.parse_args(argv)
    if args.workers < 1:
        parser.error(f"--workers must be at least 1, got {args.workers}")
    import uvicorn  # the serve extra; imported here so that --help works without it

    uvicorn.run("api.app:app", host=args.host, port=args.port, workers=args.workers, server_header=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
