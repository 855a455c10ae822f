"""Checkpoint statements (R18), rewritten on the source text before the libcst pass.

``torch.save(m.state_dict(), p)`` → ``mindspore.save_checkpoint(m, p)``;
``m.load_state_dict(sd)`` → ``mindspore.load_param_into_net(m, sd)`` that raises when anything is left
unloaded (torch's strict load raises too). The arguments stay torch code: the main pass converts them
(``torch.load(p)`` → ``mindspore.load_checkpoint(p)``).

Why text and not libcst: checkpoint calls sit in most model-zoo files (torchvision's builders call
``load_state_dict``); splicing lines found by ``ast`` costs nothing next to a second libcst
parse + codegen of the whole file. A statement that does not own its lines (``a; b``) is left alone.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from ..analysis.astwalk import bound_names, forget, fresh_name, is_method_call, nodes, walk
from ..analysis.imports import ImportMap

MARK = "# torch2ms:"
CALLS = frozenset({"save", "load_state_dict"})


@dataclass
class CheckpointRewrite:
    source: str
    notes: list[tuple[str, str, str, int]] = field(default_factory=list)  # (api, action, note, line)
    # line of the rewritten source → line of the original: a generated statement's lines all map
    # to the first line of the statement it replaced
    lines: dict[int, int] = field(default_factory=dict)
    tree: ast.Module | None = None  # the tree of ``source`` when it changed (the input tree, spliced)

    def to_original(self, line: int) -> int:
        return self.lines.get(line, line)


def rewrite_checkpoints(source: str, tree: ast.Module, imap: ImportMap) -> CheckpointRewrite:
    lines = source.splitlines(keepends=True)
    schedulers = _scheduler_names(tree, imap)
    used = bound_names(tree)
    edits: list[tuple[int, int, list[str]]] = []  # (first line, last line, replacement lines), 1-based
    notes: list[tuple[str, str, str, int]] = []
    for node in nodes(tree):
        if not isinstance(node, ast.Expr) or _call_name(node) not in CALLS:
            continue
        bounds = _own_lines(node, lines)
        if bounds is None:
            continue
        indent, comment = bounds
        call: ast.Call = node.value  # type: ignore[assignment]
        seg = lambda n: _segment(lines, n)  # noqa: E731
        new: list[str] | None = None
        if _resolve(imap, call.func) == "torch.save" and len(call.args) == 2 and not call.keywords:
            obj = call.args[0]
            if is_method_call(obj, "state_dict") and not obj.args:  # type: ignore[attr-defined]
                # The same name rule as torch.load's rewrite (runtime.ckpt_path), so save and load meet.
                new = [
                    f"mindspore.save_checkpoint({seg(obj.func.value)}, torch2ms.runtime.ckpt_path({seg(call.args[1])}))"
                ]  # type: ignore[attr-defined]
                notes.append(
                    ("torch.save", "converted", "state_dict() saved with mindspore.save_checkpoint", node.lineno)
                )
        elif is_method_call(call, "load_state_dict") and call.args:
            owner = seg(call.func.value)  # type: ignore[attr-defined]
            if owner in schedulers:
                continue
            strict = next((ast.unparse(k.value) for k in call.keywords if k.arg == "strict"), "True")
            missing, unexpected = fresh_name(used, "param_not_load"), fresh_name(used, "ckpt_not_load")
            state = seg(call.args[0])
            if not (isinstance(call.args[0], ast.Call) and _resolve(imap, call.args[0].func) == "torch.load"):
                # load_param_into_net takes Parameters only; torch also takes plain tensors.
                state = f"torch2ms.runtime.as_parameters({state})"
            new = [f"{missing}, {unexpected} = mindspore.load_param_into_net({owner}, {state})"]
            if strict != "False":
                new += [
                    f"if {missing} or {unexpected}:  {MARK} torch's strict load_state_dict raises too",
                    f'    raise RuntimeError(f"checkpoint does not match {owner}: not loaded {{{missing}}}, "',
                    f'                       f"unexpected {{{unexpected}}}")',
                ]
            notes.append(
                (
                    "torch.nn.Module.load_state_dict",
                    "converted",
                    "mindspore.load_param_into_net, raising when anything is not loaded",
                    node.lineno,
                )
            )
        if new is not None:
            if comment:
                new[0] += "  " + comment
            edits.append(
                (node.lineno, node.end_lineno or node.lineno, [indent + ln + "\n" for ln in new], node, indent)
            )
    if not edits:
        return CheckpointRewrite(source, notes)
    edits.sort(key=lambda e: e[0])
    mapping: dict[int, int] = {}
    shift = 0
    for first, last, repl, _, _ in edits:
        for k in range(len(repl)):
            mapping[first + shift + k] = first
        shift += len(repl) - (last - first + 1)
        mapping[last + 1 + shift] = last + 1  # lines after the block: the running shift
    _splice(tree, edits)
    for first, last, repl, _, _ in reversed(edits):
        if not lines[last - 1].endswith("\n"):
            repl[-1] = repl[-1][:-1]
        lines[first - 1 : last] = repl
    return CheckpointRewrite("".join(lines), sorted(notes, key=lambda n: n[3]), _fill(mapping, len(lines)), tree)


def _splice(tree: ast.Module, edits: list) -> None:
    """Make ``tree`` the tree of the rewritten text, in place: each replaced statement's new lines are
    parsed alone and put in its place, and every position after it moves by the lines it gained.
    Re-parsing the whole file instead cost more than the rest of this pass (most model files have
    a ``load_state_dict``). The result equals ``ast.parse`` of the new text, positions included."""
    slots: dict[int, tuple[list, ast.stmt]] = {}  # id(statement) → the body list that holds it
    targets = {id(e[3]) for e in edits}
    for n in nodes(tree):
        for name in ("body", "orelse", "finalbody"):
            block = getattr(n, name, None)
            if block.__class__ is list:
                for stmt in block:
                    if id(stmt) in targets:
                        slots[id(stmt)] = (block, stmt)
    everything = nodes(tree)
    shift = 0  # lines gained by the edits above: the positions of ``everything`` have moved by it
    for first, last, repl, old, indent in edits:
        first, last = first + shift, last + shift
        new = ast.parse("".join(line[len(indent) :] for line in repl)).body
        width = len(indent.encode())
        for n in (m for stmt in new for m in walk(stmt)):
            if hasattr(n, "lineno"):
                n.lineno += first - 1
                n.end_lineno += first - 1
                n.col_offset += width
                n.end_col_offset += width
        delta = len(repl) - (last - first + 1)
        for n in everything:
            line = getattr(n, "lineno", None)
            if line is None:
                continue
            if line > last:
                n.lineno += delta
                n.end_lineno += delta
            elif line < first and n.end_lineno >= last:  # a statement that encloses the edit
                if n.end_lineno == last:
                    n.end_col_offset = new[-1].end_col_offset
                n.end_lineno += delta
        shift += delta
        block, stmt = slots[id(old)]
        at = next(i for i, s in enumerate(block) if s is stmt)
        block[at : at + 1] = new
    forget(tree)  # astwalk.nodes' cache: the next walk sees the new statements


def _fill(mapping: dict[int, int], n: int) -> dict[int, int]:
    """Unchanged lines between the blocks continue from the last known line."""
    out, prev_new, prev_old = {}, 0, 0
    for new in range(1, n + 1):
        if new in mapping:
            prev_new, prev_old = new, mapping[new]
            out[new] = prev_old
        else:
            out[new] = prev_old + (new - prev_new)
    return out


def _own_lines(node: ast.stmt, lines: list[str]) -> tuple[str, str] | None:
    """(indentation, trailing comment) when the statement alone fills its lines, else None."""
    end = node.end_lineno or node.lineno
    if node.end_col_offset is None or end > len(lines):
        return None
    first, last = lines[node.lineno - 1], lines[end - 1]
    indent = first.encode()[: node.col_offset].decode()
    if indent.strip():
        return None
    rest = last.encode()[node.end_col_offset :].decode().strip()
    if rest and not rest.startswith("#"):
        return None
    return indent, rest


def _segment(lines: list[str], node: ast.AST) -> str:
    """Source text of ``node`` (ast.get_source_segment re-splits the whole file on every call).
    Offsets are UTF-8 byte offsets."""
    first, last = node.lineno - 1, node.end_lineno - 1  # type: ignore[attr-defined]
    if first == last:
        return lines[first].encode()[node.col_offset : node.end_col_offset].decode()  # type: ignore[attr-defined]
    head = lines[first].encode()[node.col_offset :].decode()  # type: ignore[attr-defined]
    tail = lines[last].encode()[: node.end_col_offset].decode()  # type: ignore[attr-defined]
    return "".join([head, *lines[first + 1 : last], tail])


def _call_name(stmt: ast.AST) -> str:
    value = getattr(stmt, "value", None)
    if not isinstance(value, ast.Call):
        return ""
    func = value.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _resolve(imap: ImportMap, node: ast.AST) -> str | None:
    full = imap.resolve(node)
    return full if full and imap.is_framework(full) else None


def _scheduler_names(tree: ast.Module, imap: ImportMap) -> set[str]:
    out = set()
    for n in nodes(tree):
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call):
            if (_resolve(imap, n.value.func) or "").startswith("torch.optim.lr_scheduler."):
                out |= {ast.unparse(t) for t in n.targets}
    return out
