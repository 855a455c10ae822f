"""Where the rewrite stage is in one file: the traversal state the rewriter (rewriter.py) keeps up to
date and the KB rules and construct hooks read (through ``RewriteContext``, context.py)."""

from __future__ import annotations

import libcst as cst

from .index import StatementInfo


class Traversal:
    def __init__(self) -> None:
        self.statements: list[StatementInfo | None] = []  # the statement being rewritten, innermost last
        self.class_stack: list[str] = []
        self.class_has_bases: list[bool] = []
        self.func_stack: list[str] = []
        self.narrowed: list[dict[str, list[str]]] = []  # isinstance(m, nn.BatchNorm2d) guards
        self.class_name_aliases: list[dict[str, str]] = []  # per function: classname = m.__class__.__name__
        self.scope_starts: list[int] = []  # len(changes) when each open class/def was entered
        self.call_funcs: set[cst.CSTNode] = set()  # callees of the calls being visited
        self.type_nodes: set[cst.CSTNode] = set()  # isinstance/issubclass class arguments
        self.dtype_nodes: set[cst.CSTNode] = set()  # the argument of x.type(...): a legacy type there is a dtype
        self.type_depth = 0  # > 0 inside base classes and annotations: names there are the classes themselves
        self.in_bases = False
        self.in_target = 0  # > 0 inside an assignment target: a torch name there is being rebound
        self.in_pattern = 0  # > 0 inside a match-statement class pattern
        self.assign_targets: set[cst.CSTNode] = set()  # nodes assigned to (``m.weight = ...``)
        # id of a method call's original receiver → the receiver as converted (``m.bias`` → ``m.beta``):
        # an in-place statement assigns its result back to it.
        self.converted_receivers: dict[int, cst.BaseExpression] = {}
        # the data argument of nn.Parameter(torch.zeros(3, requires_grad=True)): its requires_grad= says
        # nothing (a Parameter is trainable by its own requires_grad), so it is dropped without a mark.
        self.parameter_data: set[cst.CSTNode] = set()

    @property
    def statement(self) -> StatementInfo | None:
        return self.statements[-1] if self.statements else None

    def is_call_func(self, node: cst.CSTNode) -> bool:
        """Is ``node`` the callee of a call being visited (the call handles it whole)?"""
        return node in self.call_funcs

    def in_type_position(self, node: cst.CSTNode) -> bool:
        """A class named as itself: a base, an annotation, an isinstance argument."""
        return self.type_depth > 0 or node in self.type_nodes
