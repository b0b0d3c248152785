"""Which usernames an account may be created with: one spelling per name, and no name that
passes for someone else's.

- NFKC: the name is stored in Unicode's compatibility form, the form every sign-in door uses
  (Django's `normalize_username`), so a name typed in fullwidth letters (`ｖｉｃｔｏｒ`) is the
  name `victor`: taken if `victor` is, and it can sign in, which the fullwidth spelling could not.
- One alphabet: a name may not mix Latin, Cyrillic, Greek or Armenian letters, whose look-alikes
  (Cyrillic `і`, `о`, `с`, Greek `ο`) make `vіctor` pass for `victor` on every page that shows it.
- No look-alike: a name whose *skeleton* is an existing name's is refused. The skeleton is the
  idea of Unicode TR 39 (section 4, "Confusable Detection"): map every character to the one it
  is drawn like and compare the results. Here, widened for names people read on a dashboard:
  accents and other combining marks dropped (`mañager` is `manager`), digits and letters drawn
  alike made one (`0`/`o`, `1`/`l`/`I`), `rn` read as `m` and `vv` as `w`, Cyrillic, Greek and
  Armenian letters drawn like Latin ones made Latin (`ѕсоре` is `scope`), case ignored, and
  punctuation at either end dropped (`manager.`, `_manager`). It errs on refusing: a name that
  only resembles another can always be chosen differently, a name that passes for another
  cannot be undone once it has answered tasks.
"""

from __future__ import annotations

import functools
import re
import unicodedata

from django.contrib.auth import get_user_model

from common.exceptions import InvalidInput

_ALLOWED = re.compile(r"[\w.@+-]{1,150}")
_CONFUSABLE_SCRIPTS = ("LATIN", "CYRILLIC", "GREEK", "ARMENIAN")
# Letters of other alphabets drawn like a Latin letter (Unicode's confusables for the scripts
# above, lower and upper case).
_LOOK_ALIKES = str.maketrans(
    "аеорсуххѕіјԁһӏԛԝүвкмнтАВЕКМНОРСТХУІЈЅοραντυιχκΑΒΕΖΗΙΚΜΝΟΡΤΥΧօսոհԁ",
    "aeopcyxxsijdhlqwyBKMHTABEKMHOPCTXYIJSopavtuixkABEZHIKMNOPTYXounhd",
)
# Latin letters and digits drawn alike (TR 39's confusables.txt: 0 → O, 1 and I → l), and the
# Latin letters with a stroke or without a dot, which no decomposition takes apart.
_DRAWN_ALIKE = str.maketrans("01Iıłŀøđħŧƀ", "ollillodhtb")
# Pairs of letters read as one (TR 39: rn → m, vv → w), after the letters above.
_PAIRS = (("rn", "m"), ("vv", "w"))
_ENDS = "._+@-"


def _letter_skeleton(text: str) -> str:
    """Each character of `text` as the one it is drawn like (see the module docstring)."""
    bare = "".join(c for c in unicodedata.normalize("NFD", text) if not unicodedata.combining(c))
    return bare.translate(_LOOK_ALIKES).translate(_DRAWN_ALIKE).casefold()


def _skeleton(text: str) -> str:
    skeleton = _letter_skeleton(text)
    for pair, single in _PAIRS:
        skeleton = skeleton.replace(pair, single)
    return skeleton.strip(_ENDS)


def username_skeletons(name: str) -> frozenset[str]:
    """What `name` looks like, as written and in lower case (names are one account whatever
    their case, and `I` is drawn like `l` where `i` is not): two names pass for each other
    when they share a skeleton."""
    return frozenset({_skeleton(name), _skeleton(name.casefold())}) - {""}


# The characters a stored name may hold that a look-alike could use: Latin (with its
# extensions), Greek, Cyrillic and Armenian, and the digits.
_REPERTOIRE = ((0x30, 0x7F), (0xC0, 0x250), (0x370, 0x590), (0x1E00, 0x1F00))


@functools.cache
def _drawn_as() -> dict[str, frozenset[str]]:
    """For each skeleton of one character, the characters that have it."""
    found: dict[str, set[str]] = {}
    for start, stop in _REPERTOIRE:
        for point in range(start, stop):
            char = chr(point)
            if re.fullmatch(r"[\w.@+-]", char) and unicodedata.normalize("NFKC", char) == char:
                for skeleton in {_letter_skeleton(char), _letter_skeleton(char.casefold())}:
                    found.setdefault(skeleton, set()).add(char)
    return {skeleton: frozenset(chars) for skeleton, chars in found.items()}


def _one_of(chars) -> str:
    return "[" + "".join(c if c.isalnum() else "\\" + c for c in sorted(chars)) + "]"


def _skeleton_pattern(skeleton: str) -> str:
    """A regular expression (PostgreSQL's and Python's alike) that every stored name with this
    skeleton matches, and a few more (the caller compares skeletons after it)."""
    drawn_as = _drawn_as()
    parts = []
    for char in skeleton:
        options = [_one_of(drawn_as.get(char, frozenset()) | {char})]
        for pair, single in _PAIRS:
            if char == single:
                options.append("".join(_one_of(drawn_as.get(c, frozenset()) | {c}) for c in pair))
        parts.append(options[0] if len(options) == 1 else "(?:" + "|".join(options) + ")")
    ends = _one_of(_ENDS) + "*"
    return "^" + ends + "".join(parts) + ends + "$"


def look_alike_of(name: str):
    """An existing user whose name passes for `name` (a skeleton in common), or None."""
    skeletons = username_skeletons(name)
    for skeleton in sorted(skeletons):
        candidates = get_user_model().objects.filter(username__regex=_skeleton_pattern(skeleton))
        for user in candidates.order_by("pk")[:50]:
            if username_skeletons(user.get_username()) & skeletons:
                return user
    return None


def _scripts(name: str) -> set[str]:
    found = set()
    for char in name:
        if unicodedata.category(char).startswith("L"):
            script = unicodedata.name(char, "").split(" ")[0]
            if script in _CONFUSABLE_SCRIPTS:
                found.add(script)
    return found


def username_for_new_account(username: str) -> str:
    """The name a new account gets for `username` (its NFKC form), or `InvalidInput` saying
    why not, in words for the person signing up."""
    name = unicodedata.normalize("NFKC", username)
    if not _ALLOWED.fullmatch(name):
        raise _invalid("Letters, digits and @ . + - _ only, up to 150 characters.")
    scripts = _scripts(name)
    if len(scripts) > 1:
        mixed = " and ".join(sorted(script.title() for script in scripts))
        raise _invalid(
            f"A username uses the letters of one alphabet: this one mixes {mixed}, "
            "whose look-alike letters would let it pass for another name."
        )
    User = get_user_model()
    if User.objects.filter(username__iexact=name).exists():
        raise _invalid("That username is taken.", short="Already taken.")
    existing = look_alike_of(name)
    if existing is not None:
        raise _invalid(
            f"That username looks the same as the existing user “{existing.get_username()}”: "
            "choose one that cannot be mistaken for it."
        )
    return name


def _invalid(message: str, short: str | None = None) -> InvalidInput:
    return InvalidInput(message, fields={"username": [short or message]})
