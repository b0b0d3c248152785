"""Ready-made tag sets a project can start from (`tag_preset` at project creation)."""

UD_UPOS: list[dict] = [
    {"name": "ADJ", "guideline": "Adjective: describes a noun.", "examples": ["big", "old"]},
    {"name": "ADP", "guideline": "Preposition or postposition.", "examples": ["in", "of"]},
    {"name": "ADV", "guideline": "Adverb: modifies a verb or adjective.", "examples": ["very"]},
    {"name": "AUX", "guideline": "Auxiliary verb: is, has, will, can…", "examples": ["has"]},
    {"name": "CCONJ", "guideline": "Coordinating conjunction.", "examples": ["and", "or"]},
    {"name": "DET", "guideline": "Determiner: the, a, this, every…", "examples": ["the"]},
    {"name": "INTJ", "guideline": "Interjection.", "examples": ["oh", "yes"]},
    {"name": "NOUN", "guideline": "Noun: a thing, person, place or idea.", "examples": ["dog"]},
    {"name": "NUM", "guideline": "Number word or digits.", "examples": ["two", "2024"]},
    {"name": "PART", "guideline": "Particle: 's, not, to (before a verb).", "examples": ["not"]},
    {"name": "PRON", "guideline": "Pronoun: I, you, it, who…", "examples": ["she"]},
    {"name": "PROPN", "guideline": "Proper noun: a name.", "examples": ["Paris"]},
    {"name": "PUNCT", "guideline": "Punctuation mark.", "examples": [".", ","]},
    {"name": "SCONJ", "guideline": "Subordinating conjunction.", "examples": ["if", "because"]},
    {"name": "SYM", "guideline": "Symbol: $, %, :)", "examples": ["$"]},
    {"name": "VERB", "guideline": "Main verb: an action or state.", "examples": ["run"]},
    {"name": "X", "guideline": "Anything else (foreign word, typo).", "examples": []},
]

PRESETS: dict[str, list[dict]] = {"ud_upos": UD_UPOS}
