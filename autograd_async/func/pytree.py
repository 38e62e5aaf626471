"""Pytrees: nested tuples, lists, dicts and named tuples of leaves, flattened and rebuilt."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple


class TreeSpec(NamedTuple):
    """The structure of a pytree: a node's kind, its keys (dicts) and its children's specs."""

    kind: Any  # None for a leaf; tuple, list, dict or a namedtuple class
    keys: tuple
    children: tuple

    def __repr__(self) -> str:
        if self.kind is None:
            return "*"
        name = getattr(self.kind, "__name__", str(self.kind))
        return f"TreeSpec({name}, {list(self.keys) or None}, {list(self.children)})"

    @property
    def num_leaves(self) -> int:
        """How many leaves the tree has."""
        if self.kind is None:
            return 1
        return sum(c.num_leaves for c in self.children)


LEAF = TreeSpec(None, (), ())


def _node(tree: Any) -> tuple[Any, tuple, list] | None:
    """A container's kind, keys and children, or None for a leaf."""
    if isinstance(tree, tuple):
        kind = type(tree) if hasattr(tree, "_fields") else tuple
        return kind, (), list(tree)
    if isinstance(tree, list):
        return list, (), list(tree)
    if isinstance(tree, dict):
        keys = tuple(tree)
        return dict, keys, [tree[k] for k in keys]
    return None


def tree_flatten(tree: Any) -> tuple[list, TreeSpec]:
    """The leaves of `tree` in order and its structure (no recursion limit on depth)."""
    leaves: list = []

    def walk(node: Any) -> TreeSpec:
        parts = _node(node)
        if parts is None:
            leaves.append(node)
            return LEAF
        kind, keys, children = parts
        return TreeSpec(kind, keys, tuple(walk(c) for c in children))

    return leaves, walk(tree)


def tree_unflatten(leaves: Any, spec: TreeSpec) -> Any:
    """The tree of structure `spec` holding `leaves` in order."""
    it = iter(leaves)

    def build(s: TreeSpec) -> Any:
        if s.kind is None:
            return next(it)
        children = [build(c) for c in s.children]
        if s.kind is dict:
            return dict(zip(s.keys, children))
        if s.kind is list:
            return children
        if s.kind is tuple:
            return tuple(children)
        return s.kind(*children)

    return build(spec)


def tree_map(fn: Callable[[Any], Any], tree: Any) -> Any:
    """`tree` with `fn` applied to each leaf."""
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([fn(x) for x in leaves], spec)


def broadcast_prefix(prefix: Any, spec: TreeSpec) -> list | None:
    """The leaves of `prefix` repeated over the subtrees of `spec` it covers, or None when its
    structure is not a prefix of `spec` (an int or None covers a whole subtree)."""
    out: list = []

    def walk(p: Any, s: TreeSpec) -> bool:
        parts = _node(p)
        if parts is None:
            out.extend([p] * s.num_leaves)
            return True
        kind, keys, children = parts
        if s.kind is None or len(children) != len(s.children):
            return False
        if (kind is dict) != (s.kind is dict) or (kind is dict and set(keys) != set(s.keys)):
            return False
        if kind is dict:
            children = [p[k] for k in s.keys]
        return all(walk(c, cs) for c, cs in zip(children, s.children))

    return out if walk(prefix, spec) else None
