"""Whole archives transcribed: ``text-recognizer-batch`` reads folders of page images and PDFs on Ray Data (this
machine, or a Ray cluster), writes one result per page and a manifest, and resumes where a crash left it.

Why a package: a collection of a hundred thousand pages needs what one CLI loop lacks: a page that fails is recorded
and the run goes on; a second run does only what is missing or failed; many processes (or machines) each hold one
model. Its parts: :mod:`~text_recognizer.archive.tasks` (inputs -> one task per page, and where each output goes),
:mod:`~text_recognizer.archive.ledger` (what is done: the per-page results on disk are the truth, the manifest the
record), :mod:`~text_recognizer.archive.worker` (one model reading pages, a Ray actor or in this process),
:mod:`~text_recognizer.archive.run` (Ray Data or the local loop, progress, per-file outputs) and
:mod:`~text_recognizer.archive.cli`.

May import everything in ``text_recognizer`` (it is the top of the library, like the CLI); Ray only inside
functions, so the package imports without the ``batch`` extra.
"""
