"""UD English EWT as shipped in data/ (CC BY-SA 4.0, see data/README.md), sliced for tests."""

from pathlib import Path

from learning.core.conllu import conllu_head

EWT_DIR = Path(__file__).resolve().parents[2] / "data" / "ud-english-ewt"


def ewt_slice(n_sentences: int, split: str = "train") -> str:
    """The first `n_sentences` of an EWT split as CoNLL-U text."""
    return conllu_head(EWT_DIR / f"en_ewt-ud-{split}.conllu.gz", n_sentences)
