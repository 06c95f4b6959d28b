"""Decoder bundles: building their language models (``build_lm``, French text in ``french_text``) and the one
decoder tuner (``python -m training.decoder``): cache a model's log-probabilities over labelled lines, choose
beam settings, fit the confidence calibration, add the three-readings settings. The recipe, fine-tuning and
anyone tuning a bundle for their own model use it. It imports ``text_recognizer`` only.
"""
