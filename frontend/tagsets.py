"""Tag-set presets offered by the new-project form.

UD UPOS is the API's own preset (`tag_preset: "ud_upos"`); the form shows its tags so the manager
can read and edit the guidelines before creating. Penn Treebank has no API preset, so the form
sends it as an explicit `tags` list, which the manager can edit the same way.
"""

from annotation.tagsets import PRESETS

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

PRESET_CHOICES = [
    ("ud_upos", "Universal POS (17 tags)"),
    ("ptb", "Penn Treebank (XPOS, as in EWT)"),
    ("custom", "My own tags"),
]


def presets_for_form() -> dict[str, list[dict]]:
    """The presets' tags, for the form to show and edit (rendered with `json_script`)."""
    return {"ud_upos": PRESETS["ud_upos"], "ptb": PTB}
