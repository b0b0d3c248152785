"""`{% module_script "frontend/js/annotate/main.js" %}`: a page's ES module and, as
`<link rel="modulepreload">`, every module it imports, directly or not.

Without the preloads the browser finds each import only after the module naming it has arrived:
one round trip per level of imports, on a phone's slow network. With them all are requested at
once. The URLs come from the static files storage, so in production they are the hashed names
that the modules' own imports are rewritten to (frontend.storage).
"""

import posixpath
import re
from functools import lru_cache

from django import template
from django.conf import settings
from django.contrib.staticfiles import finders
from django.templatetags.static import static
from django.utils.html import format_html, format_html_join

register = template.Library()

# Static imports with a relative path: `import {a} from "./x.js";`, `export * from "../y.js";`,
# `import "./z.js";` (the forms that frontend.storage rewrites to hashed names).
_IMPORT = re.compile(r"""(?:\bfrom|^\s*import)\s*["'](\.{1,2}/[^"']+)["']\s*;""", re.MULTILINE)


def module_imports(path: str) -> list[str]:
    """The static paths `path` (a static path such as "frontend/js/x.js") imports directly."""
    found = finders.find(path)
    if not found:
        raise template.TemplateSyntaxError(f"No static file {path!r}.")
    with open(found, encoding="utf-8") as file:
        source = file.read()
    base = posixpath.dirname(path)
    return [posixpath.normpath(posixpath.join(base, url)) for url in _IMPORT.findall(source)]


def module_graph(entry: str) -> list[str]:
    """Every module `entry` imports, directly or not, in the order first found, without it."""
    seen: dict[str, None] = {}
    stack = [entry]
    while stack:
        for imported in module_imports(stack.pop()):
            if imported != entry and imported not in seen:
                seen[imported] = None
                stack.append(imported)
    return list(seen)


_cached_graph = lru_cache(maxsize=32)(module_graph)


@register.simple_tag
def module_script(entry: str) -> str:
    graph = module_graph(entry) if settings.DEBUG else _cached_graph(entry)
    preloads = format_html_join(
        "", '<link rel="modulepreload" href="{}">\n', ((static(path),) for path in graph)
    )
    return format_html('{}<script type="module" src="{}"></script>', preloads, static(entry))
