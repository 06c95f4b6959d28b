"""HTTP serving for the line recognizer: ``python -m api.serve`` or ``uvicorn api.app:app`` (see ``docs/api.md``)."""
