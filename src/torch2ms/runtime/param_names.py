"""Parameters of several models handed to one optimizer (issue 22: CycleGAN's
``Adam(itertools.chain(G_AB.parameters(), G_BA.parameters()))``).

A MindSpore Parameter is named by its path in the Cell that was built (``net.0.weight``), so two instances
of one class built apart hold Parameters of the same names, and an optimizer (a ParameterTuple) or a
compiled graph refuses them ("its name 'net.0.weight' already exists"); torch's parameters have no names.
Here each model whose names meet another's gets its own prefix, as MindSpore names a child Cell's
Parameters (``G_AB.net.0.weight``). Needs MindSpore only (converted projects carry this module as it is).
"""

from __future__ import annotations

from typing import Any

__all__ = ["distinct_cells", "distinct_names"]


def distinct_names(params: Any, *owners: tuple[str, Any]) -> list[Any]:
    """``params`` as a list; where the Parameters of the ``(prefix, cell)`` owners share names, each owner
    whose names meet another's is renamed ``prefix.<name>`` (once: a second optimizer over it finds it done)."""
    params = list(params)
    flat = [q for p in params for q in (p.get("params", []) if isinstance(p, dict) else [p])]  # param groups
    names = [p.name for p in flat if hasattr(p, "name")]
    if len(set(names)) == len(names):
        return params
    own = {prefix: {p.name for p in cell.get_parameters()} for prefix, cell in owners}
    for prefix, cell in owners:
        if any(other != prefix and own[prefix] & names_ for other, names_ in own.items()):
            done = all(n.startswith(prefix + ".") for n in own[prefix])
            if not done:
                cell.update_parameters_name(prefix + ".")
    return params


def distinct_cells(*owners: tuple[str, Any]) -> None:
    """Several models one training step reaches (a GAN's generator and discriminator, both holding
    ``net.0.weight``): GRAPH_MODE compiles the step as one graph, which refuses two Parameters of one name,
    so each model whose names meet another's is renamed ``prefix.<name>`` there. PyNative keeps the names
    (a checkpoint saved from the model keeps torch's keys)."""
    import mindspore as ms

    if ms.get_context("mode") != ms.GRAPH_MODE:
        return
    own = {
        prefix: {p.name for p in cell.get_parameters()} for prefix, cell in owners if hasattr(cell, "get_parameters")
    }
    for prefix, cell in owners:
        meets = any(other != prefix and own[prefix] & names for other, names in own.items())
        if prefix in own and meets and not all(n.startswith(prefix + ".") for n in own[prefix]):
            cell.update_parameters_name(prefix + ".")
