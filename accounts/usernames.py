"""Which usernames an account may be created with: one spelling per name, and no name that
passes for someone else's.

- NFKC: the name is stored in Unicode's compatibility form, the form every sign-in door uses
  (Django's `normalize_username`), so a name typed in fullwidth letters (`ｖｉｃｔｏｒ`) is the
  name `victor`: taken if `victor` is, and it can sign in, which the fullwidth spelling could not.
- One alphabet: a name may not mix Latin, Cyrillic, Greek or Armenian letters, whose look-alikes
  (Cyrillic `і`, `о`, `с`, Greek `ο`) make `vіctor` pass for `victor` on every page that shows it.
- No disguise: a name written in Cyrillic or Greek letters that all look like Latin ones
  (`ѕсоре`) may not pass for an existing Latin name (`scope`).
"""

from __future__ import annotations

import re
import unicodedata

from django.contrib.auth import get_user_model

from common.exceptions import InvalidInput

_ALLOWED = re.compile(r"[\w.@+-]{1,150}")
_CONFUSABLE_SCRIPTS = ("LATIN", "CYRILLIC", "GREEK", "ARMENIAN")
# Letters of other alphabets drawn like a Latin letter (Unicode's confusables for the scripts
# above, lower and upper case; the comparison ignores case).
_LOOK_ALIKES = str.maketrans(
    "аеорсуххѕіјԁһӏԛԝүвкмнтАВЕКМНОРСТХУІЈЅοραντυιχκΑΒΕΖΗΙΚΜΝΟΡΤΥΧօսոհԁ",
    "aeopcyxxsijdhlqwyBKMHTABEKMHOPCTXYIJSopavtuixkABEZHIKMNOPTYXounhd",
)


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
    disguise = name.translate(_LOOK_ALIKES)
    if disguise != name and disguise.isascii():
        existing = User.objects.filter(username__iexact=disguise).first()
        if existing is not None:
            raise _invalid(
                f"That username looks the same as the existing user “{existing.get_username()}”: "
                "choose one that cannot be mistaken for it."
            )
    return name


def _invalid(message: str, short: str | None = None) -> InvalidInput:
    return InvalidInput(message, fields={"username": [short or message]})
