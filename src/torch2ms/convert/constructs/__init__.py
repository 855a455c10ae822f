"""Constructs beyond one call: each module converts one kind (no_grad blocks, in-place statements,
autograd.Function, data pipelines, checkpoints, distributed, training loops).

Two ways to plug in. Most register hooks on the rewrite stage (hooks.py): they run inside the one
libcst pass, on the nodes they care about; hooks registered on the same kind of node never compete
(each acts on its own construct). Those that restructure whole statements before the KB pass
(distributed, checkpoints, training) are stages of their own (pipeline.py).

Importing this package registers the hooks.
"""

from . import (  # noqa: F401 - registers hooks
    autograd_function,
    data_pipeline,
    grad_context,
    graph_mode,
    index_fixes,
    legacy_tensor,
    loop_locals,
    module_attributes,
    optimizer_params,
    param_name_tests,
    python_side,
    statement_fixes,
)
