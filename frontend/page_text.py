"""What the annotator page's template says, in the project's language where Tally speaks it
(English otherwise). The page's modules have their own catalogue with the same languages
(static/frontend/js/annotate/text.js); a new language is one more entry in each."""

ANNOTATE_TEXT: dict[str, dict[str, str]] = {
    "en": {
        "back": "Back to my projects",
        "today": "today",
        "private": "Private project",
        "private_title": "Private project: your counts are randomized on this phone before they "
        "are sent",
        "loading": "Loading your next task…",
        "saved_first": "Answers are saved on this device first, then sent.",
        "keys": "Keys: 0–9 set · ← → change · ↑ ↓ tag · Enter submit · y / n yes or no",
        "submit": "Submit",
    },
    "fr": {
        "back": "Retour à mes projets",
        "today": "aujourd’hui",
        "private": "Projet privé",
        "private_title": "Projet privé : vos comptes sont tirés au hasard sur ce téléphone avant "
        "d’être envoyés",
        "loading": "Chargement de la tâche suivante…",
        "saved_first": "Les réponses sont d’abord gardées sur cet appareil, puis envoyées.",
        "keys": "Touches : 0–9 nombre · ← → changer · ↑ ↓ étiquette · Entrée envoyer · "
        "y / n oui ou non",
        "submit": "Envoyer",
    },
}


def page_language(project_language: str) -> str:
    """The language the annotator page speaks for a project in `project_language`."""
    return project_language if project_language in ANNOTATE_TEXT else "en"
