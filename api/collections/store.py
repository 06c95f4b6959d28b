"""Collections of pages a user reads and corrects, kept in an embedded database (SQLite) and a folder of images.

Why SQLite and files: one light local service, no database server to run. ``<data dir>/collections.sqlite3``
holds collections, pages and lines (WAL journal, ``synchronous=FULL``: a transaction that returned is on disk,
so a ``kill -9`` right after a save loses nothing acknowledged); page images live under ``<data dir>/images``,
named by their sha256, each written to a temporary file, flushed to disk and renamed into place *before* the
row that names it commits. A crash between the two leaves at worst an image no row names, never a row without
its image.

Every call takes the ``owner`` (the hash of the request's API key, ``""`` when keys are off): an owner sees and
changes only their own collections; another owner's id is "not found", as an unknown one is.
"""

from __future__ import annotations

import hashlib
import json
import mimetypes
import os
import sqlite3
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

SCHEMA = """
CREATE TABLE IF NOT EXISTS collections (
    id TEXT PRIMARY KEY, owner TEXT NOT NULL, name TEXT NOT NULL, created REAL NOT NULL);
CREATE INDEX IF NOT EXISTS collections_owner ON collections (owner);
CREATE TABLE IF NOT EXISTS pages (
    id TEXT PRIMARY KEY, collection_id TEXT NOT NULL REFERENCES collections (id) ON DELETE CASCADE,
    position INTEGER NOT NULL, filename TEXT NOT NULL, image TEXT NOT NULL, media_type TEXT NOT NULL,
    width INTEGER NOT NULL, height INTEGER NOT NULL, done INTEGER NOT NULL DEFAULT 0, created REAL NOT NULL);
CREATE INDEX IF NOT EXISTS pages_collection ON pages (collection_id, position);
CREATE TABLE IF NOT EXISTS lines (
    id TEXT PRIMARY KEY, page_id TEXT NOT NULL REFERENCES pages (id) ON DELETE CASCADE,
    position INTEGER NOT NULL, polygon TEXT NOT NULL, baseline TEXT, read_text TEXT NOT NULL,
    confidence REAL, corrected_text TEXT, deleted INTEGER NOT NULL DEFAULT 0, updated REAL NOT NULL);
CREATE INDEX IF NOT EXISTS lines_page ON lines (page_id, position);
"""

#: The longest corrected line accepted, in characters (a page line is far shorter; this only stops abuse).
MAX_LINE_CHARS = 2000


class NotFound(LookupError):
    """No such collection, page or line for this owner."""


class StoreLimit(ValueError):
    """A limit of the store was reached (pages per collection, collections per owner)."""


@dataclass(frozen=True)
class ReadLine:
    """A line as the page reader found it: its polygon and baseline in page pixels, text and confidence."""

    polygon: list[list[float]]
    baseline: list[list[float]] | None
    text: str
    confidence: float | None


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class CollectionStore:
    """The store in ``root`` (created if missing). Thread-safe: each call opens its own connection."""

    def __init__(self, root: Path, max_pages: int = 500, max_collections: int = 100):
        self.root = Path(root)
        self.images = self.root / "images"
        self.images.mkdir(parents=True, exist_ok=True)
        self.path = self.root / "collections.sqlite3"
        self.max_pages, self.max_collections = max_pages, max_collections
        db = sqlite3.connect(self.path, timeout=30)
        try:
            db.execute("PRAGMA journal_mode=WAL")  # kept in the file: every later connection writes ahead
            db.executescript(SCHEMA)  # commits on its own
        finally:
            db.close()

    @contextmanager
    def transaction(self, write: bool = True) -> Iterator[sqlite3.Connection]:
        """A connection in one transaction: committed when the block ends, rolled back on an error. A writing one
        takes the write lock at once (``BEGIN IMMEDIATE``: no upgrade deadlock); a reading one never blocks
        writers (WAL)."""
        db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        try:
            db.row_factory = sqlite3.Row
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=FULL")
            db.execute("PRAGMA foreign_keys=ON")
            db.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            try:
                yield db
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
        finally:
            db.close()

    # ------------------------------------------------------------------------------------------- collections
    def create_collection(self, owner: str, name: str) -> dict:
        name = " ".join(name.split())
        if not name or len(name) > 200:
            raise ValueError("a collection's name must be 1-200 characters")
        with self.transaction() as db:
            count = db.execute("SELECT COUNT(*) FROM collections WHERE owner = ?", (owner,)).fetchone()[0]
            if count >= self.max_collections:
                raise StoreLimit(f"at most {self.max_collections} collections per owner")
            row = (uuid.uuid4().hex, owner, name, time.time())
            db.execute("INSERT INTO collections (id, owner, name, created) VALUES (?, ?, ?, ?)", row)
        return self.collection(owner, row[0])

    def collections(self, owner: str) -> list[dict]:
        with self.transaction(write=False) as db:
            rows = db.execute("SELECT id FROM collections WHERE owner = ? ORDER BY created", (owner,)).fetchall()
        return [self.collection(owner, row["id"]) for row in rows]

    def collection(self, owner: str, collection_id: str) -> dict:
        """The collection with its pages (id, filename, size, done, counts of lines and corrected lines)."""
        with self.transaction(write=False) as db:
            found = db.execute("SELECT * FROM collections WHERE id = ? AND owner = ?",
                               (collection_id, owner)).fetchone()
            if found is None:
                raise NotFound(f"no collection {collection_id!r}")
            pages = db.execute(
                "SELECT p.*, COUNT(l.id) AS lines, COUNT(l.corrected_text) AS corrected FROM pages p "
                "LEFT JOIN lines l ON l.page_id = p.id AND l.deleted = 0 WHERE p.collection_id = ? "
                "GROUP BY p.id ORDER BY p.position", (collection_id,)).fetchall()
        return {"id": found["id"], "name": found["name"], "created": found["created"],
                "pages": [{"id": p["id"], "filename": p["filename"], "width": p["width"], "height": p["height"],
                           "done": bool(p["done"]), "lines": p["lines"], "corrected_lines": p["corrected"]}
                          for p in pages]}

    def delete_collection(self, owner: str, collection_id: str) -> None:
        with self.transaction() as db:
            if db.execute("DELETE FROM collections WHERE id = ? AND owner = ?", (collection_id, owner)).rowcount == 0:
                raise NotFound(f"no collection {collection_id!r}")

    # ------------------------------------------------------------------------------------------------- pages
    def _write_image(self, data: bytes, suffix: str) -> str:
        """The image's file name under ``images/``, on disk (flushed) before this returns."""
        name = f"{hashlib.sha256(data).hexdigest()}{suffix}"
        target = self.images / name
        if not target.exists():
            temporary = self.images / f".{uuid.uuid4().hex}.tmp"
            with temporary.open("wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(temporary, target)
            _fsync_dir(self.images)
        return name

    def add_page(self, owner: str, collection_id: str, data: bytes, filename: str, media_type: str,
                 size: tuple[int, int], lines: list[ReadLine]) -> dict:
        """Store a page image and the lines the reader found on it; the page as ``page`` returns it."""
        suffix = mimetypes.guess_extension(media_type) or ".bin"
        image = self._write_image(data, suffix)  # before the row that names it commits
        page_id, now = uuid.uuid4().hex, time.time()
        with self.transaction() as db:
            if db.execute("SELECT 1 FROM collections WHERE id = ? AND owner = ?",
                          (collection_id, owner)).fetchone() is None:
                raise NotFound(f"no collection {collection_id!r}")
            count = db.execute("SELECT COUNT(*) FROM pages WHERE collection_id = ?", (collection_id,)).fetchone()[0]
            if count >= self.max_pages:
                raise StoreLimit(f"a collection holds at most {self.max_pages} pages")
            db.execute("INSERT INTO pages (id, collection_id, position, filename, image, media_type, width, height, "
                       "created) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                       (page_id, collection_id, count, filename, image, media_type, size[0], size[1], now))
            db.executemany(
                "INSERT INTO lines (id, page_id, position, polygon, baseline, read_text, confidence, updated) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [(uuid.uuid4().hex, page_id, i, json.dumps(line.polygon),
                  None if line.baseline is None else json.dumps(line.baseline), line.text, line.confidence, now)
                 for i, line in enumerate(lines)])
        return self.page(owner, collection_id, page_id)

    def _page_row(self, db: sqlite3.Connection, owner: str, collection_id: str, page_id: str) -> sqlite3.Row:
        row = db.execute("SELECT p.* FROM pages p JOIN collections c ON c.id = p.collection_id "
                         "WHERE p.id = ? AND p.collection_id = ? AND c.owner = ?",
                         (page_id, collection_id, owner)).fetchone()
        if row is None:
            raise NotFound(f"no page {page_id!r} in collection {collection_id!r}")
        return row

    def page(self, owner: str, collection_id: str, page_id: str) -> dict:
        """A page and its lines (deleted ones left out): each with the text read and the correction, if any."""
        with self.transaction(write=False) as db:
            row = self._page_row(db, owner, collection_id, page_id)
            lines = db.execute("SELECT * FROM lines WHERE page_id = ? AND deleted = 0 ORDER BY position",
                               (page_id,)).fetchall()
        return {"id": row["id"], "collection_id": collection_id, "filename": row["filename"],
                "width": row["width"], "height": row["height"], "done": bool(row["done"]),
                "lines": [_line(line) for line in lines]}

    def page_image(self, owner: str, collection_id: str, page_id: str) -> tuple[Path, str]:
        """The page image's file and media type."""
        with self.transaction(write=False) as db:
            row = self._page_row(db, owner, collection_id, page_id)
        return self.images / row["image"], row["media_type"]

    def mark_done(self, owner: str, collection_id: str, page_id: str, done: bool) -> dict:
        with self.transaction() as db:
            self._page_row(db, owner, collection_id, page_id)
            db.execute("UPDATE pages SET done = ? WHERE id = ?", (int(done), page_id))
        return self.page(owner, collection_id, page_id)

    # ------------------------------------------------------------------------------------------------- lines
    def _line_row(self, db: sqlite3.Connection, owner: str, collection_id: str, line_id: str) -> sqlite3.Row:
        row = db.execute("SELECT l.* FROM lines l JOIN pages p ON p.id = l.page_id JOIN collections c "
                         "ON c.id = p.collection_id WHERE l.id = ? AND p.collection_id = ? AND c.owner = ? "
                         "AND l.deleted = 0", (line_id, collection_id, owner)).fetchone()
        if row is None:
            raise NotFound(f"no line {line_id!r} in collection {collection_id!r}")
        return row

    def correct_line(self, owner: str, collection_id: str, line_id: str, text: str) -> dict:
        """Save the line's corrected text (saved and on disk when this returns)."""
        text = " ".join(text.split())
        if len(text) > MAX_LINE_CHARS:
            raise ValueError(f"a line's text is at most {MAX_LINE_CHARS} characters, got {len(text)}")
        with self.transaction() as db:
            self._line_row(db, owner, collection_id, line_id)
            db.execute("UPDATE lines SET corrected_text = ?, updated = ? WHERE id = ?", (text, time.time(), line_id))
            return _line(self._line_row(db, owner, collection_id, line_id))

    def delete_line(self, owner: str, collection_id: str, line_id: str) -> None:
        """Mark a line false (a seal, a letterhead): it leaves the page and the exports."""
        with self.transaction() as db:
            self._line_row(db, owner, collection_id, line_id)
            db.execute("UPDATE lines SET deleted = 1, updated = ? WHERE id = ?", (time.time(), line_id))

    def update_readings(self, owner: str, collection_id: str, page_id: str,
                        readings: list[tuple[str, str, float | None]]) -> dict:
        """What another model read on the page's lines, ``(line id, text, confidence)``: it replaces what was read
        before; corrections stay as they are."""
        with self.transaction() as db:
            self._page_row(db, owner, collection_id, page_id)
            now = time.time()
            db.executemany("UPDATE lines SET read_text = ?, confidence = ?, updated = ? WHERE id = ? AND page_id = ?",
                           [(text, confidence, now, line_id, page_id) for line_id, text, confidence in readings])
        return self.page(owner, collection_id, page_id)

    def corrected_lines(self, owner: str, collection_id: str) -> list[tuple[Path, dict]]:
        """Every corrected, undeleted line of the collection with its page image: ``(image, line)``."""
        with self.transaction(write=False) as db:
            if db.execute("SELECT 1 FROM collections WHERE id = ? AND owner = ?",
                          (collection_id, owner)).fetchone() is None:
                raise NotFound(f"no collection {collection_id!r}")
            rows = db.execute("SELECT l.*, p.image FROM lines l JOIN pages p ON p.id = l.page_id "
                              "WHERE p.collection_id = ? AND l.deleted = 0 AND l.corrected_text IS NOT NULL "
                              "ORDER BY p.position, l.position", (collection_id,)).fetchall()
        return [(self.images / row["image"], _line(row)) for row in rows]


def _line(row: sqlite3.Row) -> dict:
    corrected = row["corrected_text"]
    return {"id": row["id"], "polygon": json.loads(row["polygon"]),
            "baseline": None if row["baseline"] is None else json.loads(row["baseline"]),
            "read_text": row["read_text"], "confidence": row["confidence"], "corrected_text": corrected,
            "text": corrected if corrected is not None else row["read_text"]}
