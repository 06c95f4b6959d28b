"""HTTP serving for the line recognizer: ``uvicorn api.app:app`` (see ``docs/api.md``)."""
