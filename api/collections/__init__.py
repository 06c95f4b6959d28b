"""Collections of pages read and corrected in the service: the store (SQLite and page images, ``store``) and
its exports (``exports``). The routes are ``api.routes.collections``."""
