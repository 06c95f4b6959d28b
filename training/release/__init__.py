"""Turning training checkpoints into what ships: averaging checkpoints of one model (``average_checkpoints``) and
exporting one for serving with its model card (``export_model``). It imports ``text_recognizer`` only.
"""
