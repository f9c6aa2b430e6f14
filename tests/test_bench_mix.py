"""The partners' mix's measure of a document not seen before (bench/mix.py): what makes a text
new to the server, and the steps timed as the engine runs them."""

from __future__ import annotations

from graphql import parse, print_ast

from bench.mix import STEPS, made_new, steps_timed
from graph.engine import limits, plan
from graph.engine.prepared import significant, spelling

TWO = "query A($x: Int = 1) { a(x: $x) { b } }\n# a comment\nquery B { c }"


def test_a_made_new_text_is_another_document_to_the_server() -> None:
    """A comment or other spacing would not do (texts of the same tokens, or naming their
    operations otherwise, share one preparation); a field of its own in each operation does."""
    new = made_new(TWO, "seen1")
    assert print_ast(parse(new)) == print_ast(
        parse(
            "query A($x: Int = 1) { a(x: $x) { b } seen1: __typename }"
            " query B { c seen1: __typename }"
        )
    )
    assert significant(new) != significant(TWO)
    assert spelling(new).key != spelling(TWO).key
    assert made_new(TWO, "seen2") != new


def test_the_steps_are_timed_where_the_engine_looks_them_up_and_put_back() -> None:
    originals = [limits.parsed, limits.validation_errors, limits.requested_cost, plan.compile_plan]
    spent = dict.fromkeys(STEPS, 0.0)
    with steps_timed(spent):
        assert limits.parsed is not originals[0] and plan.compile_plan is not originals[3]
        document = limits.parsed("{ " + " ".join(f"f{i}" for i in range(2000)) + " }", 10_000)
    assert document.document.definitions
    assert spent["parse"] > 0 and spent["validation"] == spent["cost"] == spent["plan"] == 0
    assert [limits.parsed, limits.validation_errors, limits.requested_cost, plan.compile_plan] == (
        originals
    )
