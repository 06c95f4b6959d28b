"""The page segmenter's training (``train``, on PAGE/ALTO pages from ``pages`` and synthetic pages from
``compose_pages``), its export with a filled-in card (``export``), and the page evaluation that scores a page
reader (``page_evaluation``: line detection, page CER). It imports ``training.loop`` and
``training.experiments`` (W&B) only.
"""
