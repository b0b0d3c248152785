"""UD English EWT as shipped in data/ (CC BY-SA 4.0, see data/README.md), sliced for tests."""

import gzip
from pathlib import Path

from learning.core.conllu import conllu_head

EWT_DIR = Path(__file__).resolve().parents[2] / "data" / "ud-english-ewt"


def ewt_slice(n_sentences: int, split: str = "train") -> str:
    """The first `n_sentences` of an EWT split as CoNLL-U text."""
    return conllu_head(EWT_DIR / f"en_ewt-ud-{split}.conllu.gz", n_sentences)


def ewt_file(path: Path, n_sentences: int, split: str = "train") -> Path:
    """``path`` holding the first `n_sentences` of an EWT split as a CoNLL-U file (an upload)."""
    path.write_text(ewt_slice(n_sentences, split), encoding="utf-8")
    return path


def ewt_folder(folder: Path, *, train: int, dev: int, test: int) -> Path:
    """``folder`` holding the first sentences of each split as en_ewt-ud-{split}.conllu.gz, as
    the benchmarks' `--data` reads them."""
    for split, n in (("train", train), ("dev", dev), ("test", test)):
        (folder / f"en_ewt-ud-{split}.conllu.gz").write_bytes(
            gzip.compress(ewt_slice(n, split).encode("utf-8"))
        )
    return folder
