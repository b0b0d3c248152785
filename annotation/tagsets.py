"""Ready-made tag sets a project can start from (`tag_preset` at project creation), with their
guidelines in the project's language where there is a translation (`preset_tags`)."""

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

PTB: list[dict] = [
    {"name": "CC", "guideline": "Coordinating conjunction.", "examples": ["and", "or"]},
    {"name": "CD", "guideline": "Cardinal number.", "examples": ["two", "42"]},
    {"name": "DT", "guideline": "Determiner.", "examples": ["the", "a", "every"]},
    {"name": "EX", "guideline": "Existential there.", "examples": ["there"]},
    {"name": "FW", "guideline": "Foreign word.", "examples": ["déjà"]},
    {"name": "IN", "guideline": "Preposition or subordinating conjunction.", "examples": ["in"]},
    {"name": "JJ", "guideline": "Adjective.", "examples": ["big"]},
    {"name": "JJR", "guideline": "Adjective, comparative.", "examples": ["bigger"]},
    {"name": "JJS", "guideline": "Adjective, superlative.", "examples": ["biggest"]},
    {"name": "LS", "guideline": "List item marker.", "examples": ["1)"]},
    {"name": "MD", "guideline": "Modal verb.", "examples": ["can", "will"]},
    {"name": "NN", "guideline": "Noun, singular or mass.", "examples": ["dog", "water"]},
    {"name": "NNS", "guideline": "Noun, plural.", "examples": ["dogs"]},
    {"name": "NNP", "guideline": "Proper noun, singular.", "examples": ["Paris"]},
    {"name": "NNPS", "guideline": "Proper noun, plural.", "examples": ["Alps"]},
    {"name": "PDT", "guideline": "Predeterminer.", "examples": ["all", "both"]},
    {"name": "POS", "guideline": "Possessive ending.", "examples": ["'s"]},
    {"name": "PRP", "guideline": "Personal pronoun.", "examples": ["she", "it"]},
    {"name": "PRP$", "guideline": "Possessive pronoun.", "examples": ["her", "its"]},
    {"name": "RB", "guideline": "Adverb.", "examples": ["very", "quickly"]},
    {"name": "RBR", "guideline": "Adverb, comparative.", "examples": ["faster"]},
    {"name": "RBS", "guideline": "Adverb, superlative.", "examples": ["fastest"]},
    {"name": "RP", "guideline": "Particle.", "examples": ["up (give up)"]},
    {"name": "SYM", "guideline": "Symbol.", "examples": ["$", "%"]},
    {"name": "TO", "guideline": "The word to.", "examples": ["to"]},
    {"name": "UH", "guideline": "Interjection.", "examples": ["oh"]},
    {"name": "VB", "guideline": "Verb, base form.", "examples": ["run"]},
    {"name": "VBD", "guideline": "Verb, past tense.", "examples": ["ran"]},
    {"name": "VBG", "guideline": "Verb, -ing form.", "examples": ["running"]},
    {"name": "VBN", "guideline": "Verb, past participle.", "examples": ["run (has run)"]},
    {"name": "VBP", "guideline": "Verb, present, not 3rd person singular.", "examples": ["run"]},
    {"name": "VBZ", "guideline": "Verb, present, 3rd person singular.", "examples": ["runs"]},
    {"name": "WDT", "guideline": "Wh-determiner.", "examples": ["which"]},
    {"name": "WP", "guideline": "Wh-pronoun.", "examples": ["who", "what"]},
    {"name": "WP$", "guideline": "Possessive wh-pronoun.", "examples": ["whose"]},
    {"name": "WRB", "guideline": "Wh-adverb.", "examples": ["where", "when"]},
    {"name": ".", "guideline": "Sentence-final punctuation.", "examples": [".", "?"]},
    {"name": ",", "guideline": "Comma.", "examples": [","]},
    {"name": ":", "guideline": "Colon, semicolon, dash.", "examples": [":", ";"]},
    {"name": "``", "guideline": "Opening quotation mark.", "examples": ["“"]},
    {"name": "''", "guideline": "Closing quotation mark.", "examples": ["”"]},
    {"name": "-LRB-", "guideline": "Opening bracket.", "examples": ["("]},
    {"name": "-RRB-", "guideline": "Closing bracket.", "examples": [")"]},
    {"name": "#", "guideline": "Pound sign.", "examples": ["#"]},
    {"name": "$", "guideline": "Dollar sign.", "examples": ["$"]},
    {"name": "NFP", "guideline": "Superfluous punctuation.", "examples": ["***"]},
    {"name": "ADD", "guideline": "Email or web address.", "examples": ["a@b.org"]},
    {"name": "AFX", "guideline": "Affix.", "examples": ["pre-"]},
    {"name": "GW", "guideline": "Goes-with (split word).", "examples": ["any (any more)"]},
    {"name": "HYPH", "guideline": "Hyphen.", "examples": ["-"]},
    {"name": "XX", "guideline": "Unknown.", "examples": []},
]

PRESETS: dict[str, list[dict]] = {"ud_upos": UD_UPOS, "ptb": PTB}

# Guidelines and examples in other languages than English, by language, preset and tag name. A
# preset without a translation keeps its English guidelines; a new language is one more entry.
TRANSLATED: dict[str, dict[str, dict[str, tuple[str, list[str]]]]] = {
    "fr": {
        "ud_upos": {
            "ADJ": ("Adjectif : décrit un nom.", ["grand", "vieux"]),
            "ADP": ("Préposition (aussi le « à » de « au », le « de » de « du »).", ["dans", "de"]),
            "ADV": ("Adverbe : modifie un verbe ou un adjectif.", ["très"]),
            "AUX": ("Verbe auxiliaire : être, avoir (avant un participe)…", ["a (a mangé)"]),
            "CCONJ": ("Conjonction de coordination.", ["et", "ou"]),
            "DET": ("Déterminant : le, un, ce, chaque (aussi le « le » de « au »)…", ["le"]),
            "INTJ": ("Interjection : une exclamation.", ["oh", "oui"]),
            "NOUN": ("Nom : une chose, une personne, un lieu, une idée.", ["chien"]),
            "NUM": ("Nombre en lettres ou en chiffres.", ["deux", "2024"]),
            "PART": ("Particule : le « -ci » de « celui-ci »…", ["-ci"]),
            "PRON": ("Pronom : je, tu, il, qui…", ["elle"]),
            "PROPN": ("Nom propre : un nom.", ["Paris"]),
            "PUNCT": ("Signe de ponctuation.", [".", ","]),
            "SCONJ": ("Conjonction de subordination.", ["si", "parce que"]),
            "SYM": ("Symbole : $, %, :)", ["€"]),
            "VERB": ("Verbe principal : une action ou un état.", ["courir"]),
            "X": ("Autre chose (mot étranger, faute de frappe).", []),
        },
    },
}


def preset_tags(preset: str, language: str) -> list[dict]:
    """The tags of `preset` with their guidelines and examples in `language` where translated."""
    translated = TRANSLATED.get(language, {}).get(preset, {})
    return [
        {**tag, "guideline": translated[tag["name"]][0], "examples": translated[tag["name"]][1]}
        if tag["name"] in translated
        else dict(tag)
        for tag in PRESETS[preset]
    ]
