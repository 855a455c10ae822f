"""How the run-time helpers that apply argument rules (:mod:`.compat`) reach the knowledge base.

Here, through torch2ms's own KB. A converted project's ``torch2ms_runtime/`` replaces this module with
``_kb/``: the entries that project uses, written out as data, and the rule engine's code they need
(``convert --runtime vendor``), so the same rules run there without torch2ms.
"""

from __future__ import annotations

from typing import Any

__all__ = ["kb_entry", "rewrite_call"]


def kb_entry(torch_name: str) -> Any:
    """The KB entry of ``torch_name`` (None when the KB has none)."""
    from ..kb import load_kb

    return load_kb().get(torch_name)


def rewrite_call(entry: Any, args: list[str], kwargs: list[tuple[str, str]]) -> Any:
    """``torch_api(*args, **kwargs)`` as MindSpore source, by the entry's rules (:func:`torch2ms.kb.rewrite.rewrite_call`)."""
    from ..kb.rewrite import rewrite_call as rewrite

    return rewrite(entry, args, kwargs)
