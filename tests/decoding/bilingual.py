"""A tiny bilingual setting for the language tests: a Latin alphabet with French letters, English and French
sentences written here, character LMs and decoder bundles built from them, an untrained model saved as a
checkpoint (its readings are noise, but every file and rule around it is real), and log-probabilities that
spell a given text (so what a decoder reads is known without a trained model)."""

from __future__ import annotations

from pathlib import Path

import torch

from text_recognizer.checkpoint import Checkpoint, Decoding, save_checkpoint
from text_recognizer.codec import DEFAULT_CHARSET, Codec
from text_recognizer.decoding.bundle import bundle_path, make_bundle, save_bundle
from text_recognizer.decoding.decoder import Geometry
from text_recognizer.decoding.lm_builder import build_arpa
from text_recognizer.models.config import ModelConfig
from text_recognizer.models.crnn import build_model

FRENCH_LETTERS = "àâçéèêëîïôùûüœÀÂÇÉÈÊËÎÏÔÙÛÜŒ"
LATIN = Codec(DEFAULT_CHARSET + FRENCH_LETTERS)
IAM = Codec(DEFAULT_CHARSET)  # the 79 characters of an IAM-only model: no accented letters

ENGLISH = [
    "the quick brown fox jumps over the lazy dog", "she walked to the market with her brother",
    "we have been waiting for the train since this morning", "they thought that the weather would be better",
    "there is nothing on the table but a glass of water", "he wrote a long letter to his old friend",
    "which of these books would you like to read", "the children were playing in the garden",
    "it was the best of times and the worst of times", "what do you think about the new house",
]
FRENCH = [
    "le chat est sur la table de la cuisine", "nous avons été très heureux de vous voir hier",
    "elle a écrit une lettre à sa mère et à son frère", "il fait beau aujourd'hui mais il pleuvra demain",
    "les enfants jouent dans le jardin près de la rivière", "je voudrais un café et un croissant s'il vous plaît",
    "où est la gare la plus proche de votre maison", "c'était une très belle journée pour une promenade",
    "ils sont partis à la campagne pour les vacances", "qu'est-ce que vous pensez de cette nouvelle idée",
]


def bundle_for(language: str, codec: Codec = LATIN, order: int = 4) -> dict:
    """A decoder bundle for ``codec`` with a character LM of ``language``'s sentences (no word LM: quick)."""
    text = ENGLISH if language == "en" else FRENCH
    return make_bundle(build_arpa(text * 2, codec, order), codec, order, f"{language} test text", language=language)


def save_model(path: Path, codec: Codec = LATIN) -> Path:
    """An untrained small CTC model for ``codec``, saved as a checkpoint."""
    torch.manual_seed(0)
    config = ModelConfig(kind="line_cnn", height=16, cnn_channels=(4, 8), feature_dim=8, conv_blocks=1,
                         conv_kernel=3, num_classes=codec.num_classes)
    checkpoint = Checkpoint(model_config=config, codec=codec, model_state=build_model(config).state_dict(),
                            decoding=Decoding("ctc", "natural"))
    return save_checkpoint(checkpoint, path)


def bilingual_model(folder: Path, codec: Codec = LATIN, languages: tuple[str, ...] = ("en", "fr")) -> Path:
    """``folder/model.pt`` with ``model.decoder.pt`` (the first language's) and ``model.<xx>.decoder.pt`` beside it."""
    checkpoint = save_model(folder / "model.pt", codec)
    for number, language in enumerate(languages):
        save_bundle(bundle_for(language, codec), bundle_path(checkpoint, None if number == 0 else language))
    return checkpoint


def spelled(text: str, codec: Codec = LATIN) -> torch.Tensor:
    """``(T, C)`` log-probabilities that spell ``text`` sharply: each character's frame, then a blank frame."""
    ids = []
    for i in codec.encode(text):
        ids += [i, 0]
    logits = torch.full((len(ids) + 1, codec.num_classes), -8.0)  # (T, C)
    logits[torch.arange(len(ids)), torch.tensor(ids)] = 8.0
    logits[-1, 0] = 8.0
    return logits.log_softmax(-1)


def geometry(log_probs: torch.Tensor) -> Geometry:
    return Geometry.for_line(16, 16, 4, stem_width=4 * log_probs.shape[0] + 12)
