"""The tokenizer comparison (devtools/tokenizer_eval.py) scores spans as docs/decisions/022 says."""

import gzip
import json

from devtools import tokenizer_eval

TREEBANK = """# newdoc id = d
# text = I can't go.
1\tI\t_\t_\t_\t_\t_\t_\t_\t_
2-3\tcan't\t_\t_\t_\t_\t_\t_\t_\t_
2\tca\t_\t_\t_\t_\t_\t_\t_\t_
3\tn't\t_\t_\t_\t_\t_\t_\t_\t_
4\tgo\t_\t_\t_\t_\t_\t_\t_\tSpaceAfter=No
5\t.\t_\t_\t_\t_\t_\t_\t_\t_

# text = Au revoir.
1-2\tAu\t_\t_\t_\t_\t_\t_\t_\t_
1\tà\t_\t_\t_\t_\t_\t_\t_\t_
2\tle\t_\t_\t_\t_\t_\t_\t_\t_
3\trevoir\t_\t_\t_\t_\t_\t_\t_\tSpaceAfter=No
4\t.\t_\t_\t_\t_\t_\t_\t_\t_

"""


def test_gold_tokens_are_words_where_they_spell_the_multiword_token(tmp_path):
    path = tmp_path / "en_toy-ud-test.conllu.gz"
    path.write_bytes(gzip.compress(TREEBANK.encode()))
    [paragraph] = tokenizer_eval.read_paragraphs(path)
    assert paragraph == [
        ("I can't go.", ["I", "ca", "n't", "go", "."]),
        ("Au revoir.", ["Au", "revoir", "."]),  # "à le" does not spell "Au"
    ]


def test_scores_of_white_space_and_of_the_chosen_tokenizer(tmp_path, capsys):
    path = tmp_path / "en_toy-ud-test.conllu.gz"
    path.write_bytes(gzip.compress(TREEBANK.encode()))
    tokenizer_eval.main([str(path), "--candidates", "whitespace,spacy+punkt"])
    rows = {row["candidate"]: row for row in map(json.loads, capsys.readouterr().out.splitlines())}
    # White space: 2 of 8 gold tokens ("I", "Au") among 5 tokens; one sentence, not two.
    assert rows["whitespace"]["token_f1"] == round(100 * 2 * 2 / (8 + 5), 2)
    assert rows["whitespace"]["sentence_f1"] == 0.0
    assert rows["spacy+punkt"]["token_f1"] == 100.0
    assert rows["spacy+punkt"]["sentence_f1"] == 100.0
