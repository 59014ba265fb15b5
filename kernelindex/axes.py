"""Workload-axis expressions ("num_kv_heads * head_dim"), evaluated safely: numbers, axis names
and arithmetic only. Django-free; the importers and the rerun harness share it."""

from __future__ import annotations

import ast
import math
import operator
from typing import Any

_BINARY = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos}


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def evaluate(expression: str, names: dict[str, Any]) -> int | float:
    """The value of ``expression`` over ``names``. KeyError names an axis it does not know;
    ValueError (SyntaxError included) anything that is not plain arithmetic."""

    def value_of(node: ast.AST) -> Any:
        if isinstance(node, ast.Expression):
            return value_of(node.body)
        if isinstance(node, ast.Constant) and _is_number(node.value):
            return node.value
        if isinstance(node, ast.Name):
            if not _is_number(names.get(node.id)):
                raise KeyError(node.id)
            return names[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            return _BINARY[type(node.op)](value_of(node.left), value_of(node.right))
        if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
            return _UNARY[type(node.op)](value_of(node.operand))
        raise ValueError(f"unsupported axis expression: {expression!r}")

    return value_of(ast.parse(str(expression), mode="eval"))
