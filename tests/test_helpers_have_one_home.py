"""Each test helper and fixture has one home (issue 43, item 5): no two test modules define a
module-level function or class of the same name, so a helper is imported from tests/support/ or
taken from a conftest.py instead of written again beside the first copy.

A conftest.py may define a fixture another conftest.py defines: that is a package's own version
of it (each package's `project`). The names below are different things in different modules
that happen to share a name; a new entry wants a reason as good.
"""

import ast
from collections import defaultdict
from pathlib import Path

TESTS = Path(__file__).resolve().parent

DIFFERENT_THINGS = {
    "World": "the fuzzer's world of objects; schemathesis's world of personas",
    "world": "fixtures of those worlds",
    "_brute_force": "marginals of privacy releases; of verification answers",
    "_create": "a project made from a file through the API; an Observations array",
    "_tokenized": "an upload's bytes; a browser's file text",
    "conllu": "CoNLL-U lines joined; French multiword sentences written",
    "corpora": "EWT slices of two sizes, as their tests need",
    "corpus": "the annotation tests' imported corpus; a synthetic corpus of the policy tests",
    "crowd": "the learning tests' four annotators; the failing dashboard's two",
    "private": "a private project through the API; one of the phone pages",
    "project": "test_schema's project of its own, beside the packages' conftest ones",
    "random_counts": "the crowd's random answers; the hot path's malformed ones",
    "region": "a task's region with its tags; with its length too",
    "submit": "an answer through the service; a verification answer through the API",
    "trained": "support's helper; the learning tests' fixture that calls it",
}


def _definitions() -> dict[str, list[Path]]:
    where = defaultdict(list)
    for path in sorted(TESTS.rglob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            is_def = isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            if is_def and not node.name.startswith("test_"):
                where[node.name].append(path.relative_to(TESTS))
    return where


def test_no_two_test_modules_define_the_same_helper():
    twins = {
        name: [str(path) for path in paths]
        for name, paths in _definitions().items()
        if len(paths) > 1
        and name not in DIFFERENT_THINGS
        and not all(path.name == "conftest.py" for path in paths)
    }
    assert not twins, f"defined in more than one module (give each one home): {twins}"


def test_every_name_allowed_twice_is_still_defined_twice():
    where = _definitions()
    stale = [name for name in DIFFERENT_THINGS if len(where.get(name, [])) < 2]
    assert not stale, f"no longer defined twice: drop them from DIFFERENT_THINGS: {stale}"
