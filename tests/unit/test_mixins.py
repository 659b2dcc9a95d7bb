"""The mixins' contracts: what each says the class must provide, Tensor provides."""
from __future__ import annotations

import ast
import inspect
import textwrap
from typing import Any

import pytest

from tinyfw.mixin.activations import ActivationOps
from tinyfw.mixin.arithmetic import ArithmeticOps
from tinyfw.mixin.core import TensorCore
from tinyfw.mixin.derived import DerivedOps
from tinyfw.mixin.dtype_ops import DtypeOps
from tinyfw.mixin.hashing import HashingOps
from tinyfw.mixin.indexing import IndexingOps
from tinyfw.mixin.inplace import InplaceOps
from tinyfw.mixin.linalg import LinalgOps
from tinyfw.mixin.logic import LogicOps
from tinyfw.mixin.math_ops import MathOps
from tinyfw.mixin.movement import MovementOps
from tinyfw.mixin.nn_ops import NNOps
from tinyfw.mixin.protocol import ProtocolOps
from tinyfw.mixin.reduce import ReduceOps
from tinyfw.mixin.scan import ScanOps
from tinyfw.tensor import Tensor

MIXINS = [TensorCore, ArithmeticOps, LogicOps, InplaceOps, MathOps, ReduceOps, ActivationOps,
          DtypeOps, ProtocolOps, MovementOps, DerivedOps, NNOps, ScanOps, IndexingOps, LinalgOps,
          HashingOps]


def _only_raises(fn: Any) -> bool:
    """Whether a function's body is a docstring at most and `raise NotImplementedError`."""
    try:
        source = textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError):
        return False
    definition = ast.parse(source).body[0]
    assert isinstance(definition, (ast.FunctionDef, ast.AsyncFunctionDef))
    body = [node for node in definition.body
            if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant))]
    return (len(body) == 1 and isinstance(body[0], ast.Raise)
            and "NotImplementedError" in ast.unparse(body[0]))


def _stubs(mixin: type) -> list[str]:
    """The names a mixin's contract block declares: members whose body only raises
    NotImplementedError, and attributes annotated without a value."""
    names = list(getattr(mixin, "__annotations__", {}))
    for name, member in vars(mixin).items():
        fn: Any = member.fget if isinstance(member, property) else getattr(member, "__func__",
                                                                           member)
        if callable(fn) and _only_raises(fn):
            names.append(name)
    return names


@pytest.mark.parametrize("mixin", MIXINS, ids=[m.__name__ for m in MIXINS])
def test_every_name_of_a_contract_is_provided_by_tensor_itself(mixin: type) -> None:
    """A stub must never be what Tensor's attribute resolves to (it would raise, or shadow a
    later mixin's method)."""
    stubs = _stubs(mixin)
    assert stubs, f"{mixin.__name__} states no contract"
    for name in stubs:
        owner = next((c for c in Tensor.__mro__ if name in vars(c) and c is not mixin), None)
        if name in getattr(mixin, "__annotations__", {}):
            assert name in Tensor.__slots__ or hasattr(Tensor, name), name
        else:
            assert owner is Tensor, f"{mixin.__name__}.{name} resolves to {owner}"


def _tensor_imports(tree: ast.AST, type_checking: bool = False) -> list[bool]:
    """For each import from tinyfw.tensor under tree: whether it sits under `if TYPE_CHECKING`."""
    found = []
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "tinyfw.tensor":
            found.append(type_checking)
        guarded = (type_checking or isinstance(node, ast.If)
                   and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING")
        found += _tensor_imports(node, guarded)
    return found


def test_the_mixins_build_tensors_of_the_class_they_are_mixed_into() -> None:
    """No mixin imports Tensor at call time: a new tensor comes from type(self)."""
    for mixin in MIXINS:
        source = inspect.getsource(inspect.getmodule(mixin))  # type: ignore[arg-type]
        imports = _tensor_imports(ast.parse(source))
        assert all(imports), f"{mixin.__name__} imports Tensor outside TYPE_CHECKING"
