"""The model's way out: `python -m learning.core.tag MODEL.npz < in.conllu > out.conllu`, with
the learning core alone (no Django), for both kinds of model (issue 17)."""

import io
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from learning.core.context_tagger import ContextTagger
from learning.core.features import ContextConfig, FeatureConfig
from learning.core.modelfile import save_tagger
from learning.core.node_tagger import NodeTagger
from learning.core.tag import main
from learning.core.wordclasses import learn_word_classes
from tests.support.ewt import ewt_slice

ROOT = Path(__file__).resolve().parents[3]
SENTENCES = [["the", "dog", "runs"], ["the", "cat", "runs"], ["a", "dog", "sleeps"]]
LABELS = np.eye(3)[[2, 0, 1, 2, 0, 1, 2, 0, 1]]
TAGSET = ["NOUN", "VERB", "DET"]
WORD = FeatureConfig(n_features=2**10, suffix_lengths=(1, 2))
SOURCE = """# newdoc id = d1
# sent_id = s1
# text = the dogs' run
1\tthe\tthe\tX\tDT\t_\t2\tdet\t_\t_
2-3\tdogs'\t_\t_\t_\t_\t_\t_\t_\t_
2\tdogs\tdog\tX\tNNS\t_\t0\troot\t_\tSpaceAfter=No
3\t'\t'\tX\tPOS\t_\t2\tcase\t_\t_
4\trun\trun\tX\tVB\t_\t2\tacl\t_\t_

# sent_id = s2
1\ta\ta\tX\tDT\t_\t2\tdet\t_\t_
2\tcat\tcat\tX\tNN\t_\t0\troot\t_\t_

"""


def _model(kind: str, path: Path) -> Path:
    if kind == "node":
        tagger = NodeTagger(alpha=0.5, features=WORD).fit(SENTENCES, LABELS, TAGSET)
    else:
        classes = learn_word_classes(SENTENCES * 5, sizes=(2, 3), n_components=2, random_state=0)
        config = ContextConfig(word=WORD, offsets=(-1, 1))
        tagger = ContextTagger(alpha=0.5, features=config, word_classes=classes)
        tagger.fit(SENTENCES, LABELS, TAGSET)
    save_tagger(tagger, path, metadata={"version": 1})
    return path


@pytest.mark.parametrize("kind", ["node", "context"])
def test_every_line_kept_but_the_tag_column(tmp_path, kind):
    model = _model(kind, tmp_path / "model.npz")
    out = io.StringIO()
    assert main([str(model)], stdin=io.StringIO(SOURCE), stdout=out) == 0
    old, new = SOURCE.splitlines(), out.getvalue().splitlines()
    assert len(new) == len(old)
    for before, after in zip(old, new, strict=True):
        if before.partition("\t")[0].isdigit():
            b, a = before.split("\t"), after.split("\t")
            assert a[3] in TAGSET and b[:3] + b[4:] == a[:3] + a[4:]
        else:
            assert after == before
    tags = [line.split("\t")[3] for line in new if line.partition("\t")[0].isdigit()]
    assert tags[0] == "DET" and tags[-1] == "NOUN"


def test_xpos_column_and_probabilities(tmp_path):
    model = _model("node", tmp_path / "model.npz")
    source, output = tmp_path / "in.conllu", tmp_path / "out.conllu"
    source.write_text(SOURCE, encoding="utf-8")
    assert main([str(model), str(source), "-o", str(output), "--column", "xpos",
                 "--probabilities"]) == 0  # fmt: skip
    first = output.read_text(encoding="utf-8").splitlines()[3].split("\t")
    assert first[3] == "X" and first[4] == "DET" and first[9].startswith("Prob=0.")


def test_errors_say_which_file_and_line(tmp_path, capsys):
    model = _model("node", tmp_path / "model.npz")
    assert main([str(model)], stdin=io.StringIO("1\tthe\n"), stdout=io.StringIO()) == 1
    assert "line 1: expected 10 tab-separated columns" in capsys.readouterr().err
    assert main([str(tmp_path / "missing.npz")], stdin=io.StringIO(SOURCE)) == 2


@pytest.mark.parametrize("kind", ["node", "context"])
def test_runs_as_a_command_without_django(tmp_path, kind):
    """The command line of docs/using.md, in a fresh interpreter that never imports Django."""
    model = _model(kind, tmp_path / "model.npz")
    probe = (
        "import runpy, sys\n"
        "try:\n    runpy.run_module('learning.core.tag', run_name='__main__')\n"
        "except SystemExit as exit:\n    code = exit.code\n"
        "assert 'django' not in sys.modules, 'django imported'\n"
        "sys.exit(code)\n"
    )
    source = ewt_slice(50, split="dev")
    done = subprocess.run(
        [sys.executable, "-c", probe, str(model)],
        input=source.encode(), capture_output=True, cwd=ROOT, timeout=120,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()
    out = done.stdout.decode()
    assert len(out.splitlines()) == len(source.splitlines())
    comments = [line for line in source.splitlines() if not line.partition("\t")[0].isdigit()]
    assert [line for line in out.splitlines() if not line.partition("\t")[0].isdigit()] == comments


def test_running_text_is_cut_as_tally_cuts_it_then_tagged(tmp_path):
    model = _model("node", tmp_path / "model.npz")
    out = io.StringIO()
    text = io.StringIO("the dog runs.\nthe cat\nsleeps!\n\na dog runs\n")
    assert main([str(model), "--text", "en"], stdin=text, stdout=out) == 0
    blocks = out.getvalue().split("\n\n")[:-1]
    assert [block.splitlines()[:2] for block in blocks] == [
        ["# sent_id = 1", "# text = the dog runs."],
        ["# sent_id = 2", "# text = the cat sleeps!"],
        ["# sent_id = 3", "# text = a dog runs"],
    ]
    words = [line.split("\t") for line in blocks[1].splitlines()[2:]]
    assert [w[1] for w in words] == ["the", "cat", "sleeps", "!"]
    assert all(w[3] in TAGSET for w in words)
    assert main([str(model), "--text", "tlh"], stdin=io.StringIO("a")) == 2


@pytest.mark.parametrize("kind", ["node", "context"])
def test_the_docs_python_snippet_tags_as_the_command_does(tmp_path, kind, monkeypatch):
    """docs/using.md's "or in Python:" block, run as written on its file names."""
    page = (ROOT / "docs" / "using.md").read_text(encoding="utf-8")
    snippet = page.split("or in Python:\n\n```python\n", 1)[1].split("```", 1)[0]
    model = _model(kind, tmp_path / "project-3-model-v4.npz")
    (tmp_path / "new.conllu").write_text(SOURCE, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    names: dict = {}
    exec(compile(snippet, "docs/using.md", "exec"), names)  # noqa: S102
    out = io.StringIO()
    assert main([str(model)], stdin=io.StringIO(SOURCE), stdout=out) == 0
    lines = out.getvalue().splitlines()
    assert names["tags"] == [
        line.split("\t")[3] for line in lines if line.partition("\t")[0].isdigit()
    ]
    assert len(names["tags"]) == 6 and names["metadata"]["version"] == 1


def _upos(text: str) -> list[str]:
    return [line.split("\t")[3] for line in text.splitlines() if line.partition("\t")[0].isdigit()]


def test_tags_of_least_cost_in_the_model_files_matrix_or_the_one_given(tmp_path, capsys):
    """VERB costs nothing whatever the truth: every word is tagged VERB under that matrix."""
    tagger = NodeTagger(alpha=0.5, features=WORD).fit(SENTENCES, LABELS, TAGSET)
    verb_free = [[0.0, 0.0, 1.0], [1.0, 0.0, 1.0], [1.0, 0.0, 0.0]]  # rows true NOUN, VERB, DET
    order = ["DET", "NOUN", "VERB"]  # the file may list the tags in its own order
    reordered = [[verb_free[TAGSET.index(a)][TAGSET.index(b)] for b in order] for a in order]
    carried = {"cost_matrix": {"tags": order, "matrix": reordered, "preset": ""}}
    save_tagger(tagger, tmp_path / "m.npz", metadata=carried)
    out = io.StringIO()
    assert main([str(tmp_path / "m.npz")], stdin=io.StringIO(SOURCE), stdout=out) == 0
    assert set(_upos(out.getvalue())) == {"VERB"}
    out = io.StringIO()
    assert main([str(tmp_path / "m.npz"), "--cost-matrix", "zero-one"],
                stdin=io.StringIO(SOURCE), stdout=out) == 0  # fmt: skip
    plain = _upos(out.getvalue())
    assert plain[0] == "DET" and plain[-1] == "NOUN"
    csv_file = tmp_path / "mine.csv"
    csv_file.write_text("t,NOUN,VERB,DET\nNOUN,0,1,0\nVERB,1,0,0\nDET,1,1,0\n")  # DET is free
    out = io.StringIO()
    assert main([str(tmp_path / "m.npz"), "--cost-matrix", str(csv_file)],
                stdin=io.StringIO(SOURCE), stdout=out) == 0  # fmt: skip
    assert set(_upos(out.getvalue())) == {"DET"}
    assert main([str(tmp_path / "m.npz"), "--cost-matrix", "nope"], stdin=io.StringIO("")) == 2
    assert "neither a preset" in capsys.readouterr().err
