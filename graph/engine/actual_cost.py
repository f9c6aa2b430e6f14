"""The actual cost of an answer: the estimate's rule (graph/engine/cost.py) applied to the lists
the answer really holds."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from graphql import (
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    InlineFragmentNode,
    SelectionSetNode,
    get_operation_ast,
)

from graph.engine.prepared import Prepared


class ResultShape:
    """The fields of a selection that have selections of their own, by response key.

    The result holds only what applied, so fragments count whatever their type condition.
    Built as far as a result goes, once per document and operation.
    """

    __slots__ = ("_children", "fragments", "sets")

    def __init__(
        self,
        fragments: Mapping[str, FragmentDefinitionNode],
        sets: tuple[SelectionSetNode, ...],
    ) -> None:
        self.fragments, self.sets = fragments, sets
        self._children: dict[str, ResultShape] | None = None

    def children(self) -> dict[str, ResultShape]:
        if self._children is None:
            found: dict[str, list[SelectionSetNode]] = {}
            for selection_set in self.sets:
                self._collect(selection_set, found, set())
            self._children = {
                key: ResultShape(self.fragments, tuple(sets)) for key, sets in found.items() if sets
            }
        return self._children

    def _collect(
        self, node: SelectionSetNode, found: dict[str, list[SelectionSetNode]], spread: set[str]
    ) -> None:
        for selection in node.selections:
            if isinstance(selection, FieldNode):
                key = selection.alias.value if selection.alias else selection.name.value
                subs = found.setdefault(key, [])
                if selection.selection_set is not None:
                    subs.append(selection.selection_set)
            elif isinstance(selection, InlineFragmentNode):
                self._collect(selection.selection_set, found, spread)
            elif isinstance(selection, FragmentSpreadNode) and selection.name.value not in spread:
                spread.add(selection.name.value)
                fragment = self.fragments.get(selection.name.value)
                if fragment is not None:
                    self._collect(fragment.selection_set, found, spread)

    def count(self, value: Mapping[str, Any]) -> int:
        """Each field of the object 1, plus the cost of each object below it."""
        total = len(value)
        for key, child in self.children().items():
            if key in value:
                total += child.count_value(value[key])
        return total

    def count_value(self, value: Any) -> int:
        if isinstance(value, Mapping):
            return self.count(value)
        if isinstance(value, list):
            if not self.children():  # objects of leaves (a table's rows): each its field count
                return sum(
                    len(item) if isinstance(item, Mapping) else self.count_value(item)
                    for item in value
                )
            return sum(self.count_value(item) for item in value)
        return 0


def _shape(prepared: Prepared, operation_name: str | None) -> ResultShape | None:
    operation = get_operation_ast(prepared.document, operation_name)
    if operation is None:
        return None
    fragments = {
        d.name.value: d
        for d in prepared.document.definitions
        if isinstance(d, FragmentDefinitionNode)
    }
    return ResultShape(fragments, (operation.selection_set,))


def actual_cost(prepared: Prepared, operation_name: str | None, data: Any) -> int:
    """The cost of the result: each field 1, each object's fields once per object. A field
    without a selection counts 1 whatever its value, so only objects are walked."""
    if not isinstance(data, Mapping):
        return 0
    shape = prepared.memos.remember(
        ("result shape", operation_name), lambda: _shape(prepared, operation_name)
    )
    return 0 if shape is None else cast(ResultShape, shape).count(data)
