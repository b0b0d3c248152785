"""Tag-set presets offered by the new-project form.

They are the API's presets (`tag_preset`); the form shows their tags so the manager can read
them, and copies them into "My own tags" to edit the guidelines before creating.
"""

from annotation.tagsets import PRESETS

PRESET_CHOICES = [
    ("ud_upos", "Universal POS (17 tags)"),
    ("ptb", "Penn Treebank (XPOS, as in EWT)"),
    ("custom", "My own tags"),
]


def presets_for_form() -> dict[str, list[dict]]:
    """The presets' tags, for the form to show and edit (rendered with `json_script`)."""
    return {name: PRESETS[name] for name, _ in PRESET_CHOICES if name in PRESETS}
