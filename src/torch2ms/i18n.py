"""Chinese or English: the language torch2ms speaks, through the standard library's gettext.

The catalogs are ``locale/<lang>/LC_MESSAGES/torch2ms.po`` (managed with Babel: see README, "How to
translate") and their compiled ``.mo`` beside them, shipped as package data. English is the source
language: a message with no translation shows as written in the code.

The language is ``--lang zh|en`` (kept in ``TORCH2MS_LANG`` so worker processes speak it too), else
the locale variables in gettext's order (``LANGUAGE``, ``LC_ALL``, ``LC_MESSAGES``, ``LANG``):
``zh*`` means Chinese, anything else English.
"""

from __future__ import annotations

import functools
import gettext
import os
from pathlib import Path

DOMAIN = "torch2ms"
LOCALE_DIR = Path(__file__).resolve().parent / "locale"
LANGUAGES = ("en", "zh")
LANG_ENV = "TORCH2MS_LANG"
_LOCALE_VARS = ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG")
_CATALOG = {"zh": "zh_CN"}


def set_language(lang: str) -> None:
    """Speak ``lang`` (``zh`` or ``en``) from now on, in this process and the ones it starts."""
    if lang not in LANGUAGES:
        raise ValueError(f"language must be one of {LANGUAGES}, got {lang!r}")
    os.environ[LANG_ENV] = lang


def language() -> str:
    """``zh`` or ``en``: ``--lang`` if given, else the locale."""
    chosen = os.environ.get(LANG_ENV, "")
    if chosen in LANGUAGES:
        return chosen
    for var in _LOCALE_VARS:
        value = os.environ.get(var, "").split(":")[0].strip()
        if value:
            return "zh" if value.lower().startswith("zh") else "en"
    return "en"


@functools.cache
def _translations(lang: str) -> gettext.NullTranslations:
    if lang not in _CATALOG:
        return gettext.NullTranslations()
    return gettext.translation(DOMAIN, LOCALE_DIR, languages=[_CATALOG[lang]], fallback=True)


def _(message: str) -> str:
    """``message`` in the current language (itself in English, or when it has no translation)."""
    return _translations(language()).gettext(message)


def ngettext(singular: str, plural: str, n: int) -> str:
    """The singular or plural form for ``n``, in the current language."""
    return _translations(language()).ngettext(singular, plural, n)


def N_(message: str) -> str:
    """Marks a message for the catalog where it is defined (a constant); ``_()`` translates it where shown."""
    return message


def pick(english: str, chinese: str) -> str:
    """A text held as data in both languages (a KB note): the Chinese one when speaking Chinese and it exists."""
    return chinese if chinese and language() == "zh" else english


def html_lang() -> str:
    """The ``lang`` attribute of an HTML report in the current language."""
    return "zh-CN" if language() == "zh" else "en"


def every_language(message: str) -> list[str]:
    """``message`` as written (English) and as each catalog translates it: to recognise a text that an
    earlier run wrote in either language (a mark in converted code)."""
    translated = (_translations(lang).gettext(message) for lang in _CATALOG)
    return [message, *dict.fromkeys(t for t in translated if t != message)]
