"""Tag-set presets offered by the new-project form.

They are the API's presets (`tag_preset`); the form shows their tags so the manager can read
them, and copies them into "My own tags" to edit the guidelines before creating.
"""

from annotation.tagsets import PRESETS, TRANSLATED, preset_tags

PRESET_CHOICES = [
    ("ud_upos", "Universal POS (17 tags)"),
    ("ptb", "Penn Treebank (XPOS, as in EWT)"),
    ("custom", "My own tags"),
]


def presets_for_form() -> dict[str, dict[str, list[dict]]]:
    """The presets' tags by language (English and each translated one), for the form to show
    and edit in the language chosen, as the project will get them (rendered with `json_script`)."""
    languages = ["en", *TRANSLATED]
    return {
        name: {language: preset_tags(name, language) for language in languages}
        for name, _ in PRESET_CHOICES
        if name in PRESETS
    }
