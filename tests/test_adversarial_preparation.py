"""New documents (issue 22): work no cache answers is shared where it can be and bounded where
it cannot.

Texts with the same significant tokens (comments, spaces, commas and line breaks aside) are one
document: prepared once, answered alike, their errors placed in the text each client sent;
different documents never share. A valid document is shared too by texts that differ from it in
their operations' names only (each text's `operationName` read by the names it gives). An
introspection query's answer is computed once per document. New-document work is bounded per
client and in all: past a bound the request is refused at once with PREPARATION_BUSY (503,
Retry-After), and nothing is left counted.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import httpx
import pytest
from graphql import (
    GraphQLSyntaxError,
    Lexer,
    OperationDefinitionNode,
    Source,
    TokenKind,
    execute_sync,
    get_introspection_query,
    parse,
    print_ast,
)
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from graph.engine import completion, limits
from graph.engine.prepared import (
    INLINE_CHARS,
    PREPARING,
    Documents,
    significant,
    spelling,
    translate,
)
from graph.internals import core_schema
from graph.settings import Settings
from tests.conftest import app_client
from tests.reports import UNCOSTED

pytestmark = pytest.mark.anyio

# --- one document, whatever its spacing and comments -----------------------------------------

TOKENS = st.sampled_from(
    [
        "{",
        "}",
        "(",
        ")",
        ":",
        "$",
        "!",
        "@",
        "...",
        "=",
        "[",
        "]",
        "|",
        "&",
        "gpus",
        "name",
        "query",
        "Q",
        "_x1",
        "0",
        "-12.5e3",
        '"a # not a comment"',
        '"\\"quoted\\""',
        '"a  ,  b"',
        '"""block " with # and\n lines"""',
        '"""escaped \\""" quotes"""',
        '""',
    ]
)
PUNCTUATORS = set("{}()[]:$!@=|&")
IGNORED = st.lists(
    st.sampled_from([" ", "\t", "\n", "\r\n", ",", "\ufeff", '# a "comment" # \n', "#\r"]),
    min_size=1,
    max_size=3,
).map("".join)


@pytest.fixture(autouse=True)
def one_per_client(monkeypatch: pytest.MonkeyPatch) -> None:
    """The per-client bound at 1 (the default is PER_CLIENT): its refusals are easy to reach."""
    monkeypatch.setattr(PREPARING, "per_client", 1)


def lexed(text: str) -> list[tuple[TokenKind, str | None]] | None:
    """graphql-core's tokens of `text` (kind and value), None when it does not lex."""
    lexer, found = Lexer(Source(text)), []
    try:
        while (token := lexer.advance()).kind is not TokenKind.EOF:
            found.append((token.kind, token.value))
    except GraphQLSyntaxError:
        return None
    return found


def starts(text: str) -> list[int]:
    """Where each of `text`'s tokens starts (a text that lexes)."""
    lexer = Lexer(Source(text))
    found = []
    while (token := lexer.advance()).kind is not TokenKind.EOF:
        found.append(token.start)
    return found


@st.composite
def spellings(draw: st.DrawFn) -> tuple[str, str]:
    """Two texts of the same tokens, each with ignored characters of its own between them."""
    tokens = draw(st.lists(TOKENS, min_size=1, max_size=30))

    def spelled() -> str:
        text = draw(st.one_of(st.just(""), IGNORED))
        for token, after in zip(tokens, [*tokens[1:], "{"], strict=True):
            # (none needed next to a punctuator)
            bare = token in PUNCTUATORS or after in PUNCTUATORS
            text += token + draw(st.one_of(st.just(""), IGNORED) if bare else IGNORED)
        return text

    return spelled(), spelled()


@given(spellings())
@settings(max_examples=300)
def test_texts_of_the_same_tokens_have_one_key(texts: tuple[str, str]) -> None:
    first, second = texts
    assert lexed(first) == lexed(second)
    assert significant(first) == significant(second)


PIECES = st.one_of(TOKENS, IGNORED, st.sampled_from(['"', '"""', "\\", "#", "\n", "a", '"\n"']))


@given(st.lists(PIECES, max_size=40).map("".join), st.lists(PIECES, max_size=40).map("".join))
@settings(max_examples=500)
def test_texts_of_one_key_are_one_document(first: str, second: str) -> None:
    """Whatever the texts (stray quotes, unterminated strings, comments in strings): one key
    means the same tokens (or two texts that are not documents)."""
    if significant(first) == significant(second):
        assert lexed(first) == lexed(second)


@given(spellings(), st.integers(min_value=0, max_value=10_000))
@settings(max_examples=200)
def test_a_place_in_one_spelling_is_found_in_the_other(texts: tuple[str, str], at: int) -> None:
    """Each token's start in one text is the same token's start in the other."""
    first, second = texts
    if lexed(first) is None:
        return
    here, there = starts(first), starts(second)
    i = at % len(here)
    assert translate(here[i], first, second) == there[i]


def test_a_document_is_kept_once_for_all_its_spellings() -> None:
    documents = Documents(10**8)
    one = documents.prepare("{ gpus { name } }", 5000)
    assert documents.prepare("# hello\n{gpus{name}}", 5000) is one
    assert documents.prepare("{ gpus, { name, }, }  # again", 5000) is one
    assert documents.prepare('{ gpus { name } __type(name: "a # b") { name } }', 5000) is not one
    assert len(documents) == 2


# --- one document, whatever its operations are called ----------------------------------------

NAMES = st.sampled_from(["A", "B", "query", "fragment", "on", "_x1", "Names"])
OPENING = {"{": "}", "(": ")", "[": "]"}


@st.composite
def definitions(draw: st.DrawFn) -> list[list[str | None]]:
    """The tokens of a few definitions (operations, shorthand queries, fragments), None where
    an operation's name goes; now and then a stray token, so that some are not documents."""
    found = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["query", "mutation", "subscription", "{", "fragment"]))
        body = draw(st.sampled_from([["{", "a", "}"], ["{", "a", "b", "{", "c", "}", "}"]]))
        if kind == "{":
            tokens: list[str | None] = list(body)
        elif kind == "fragment":
            tokens = ["fragment", draw(NAMES), "on", "T", *body]
        else:
            tokens = [kind]
            if draw(st.booleans()):
                tokens.append(None)
            if draw(st.booleans()):
                tokens += ["(", "$", "v", ":", "I", "=", "{", "a", ":", '"q {"', "}", ")"]
            if draw(st.booleans()):
                tokens += ["@", "d", "(", "x", ":", "[", "1", "]", ")"]
            tokens += body
        found.append(tokens)
    tokens = [t for d in found for t in d]
    if draw(st.integers(0, 4)) == 0:
        tokens.insert(draw(st.integers(0, len(tokens))), draw(TOKENS))
    return [tokens]


def spelled_with(draw: st.DrawFn, tokens: list[str | None], names: list[str]) -> str:
    """`tokens` with `names` in the operations' name places, ignored characters between."""
    named = iter(names)
    text = ""
    for token in tokens:
        text += (next(named) if token is None else token) + draw(IGNORED)
    return text


@st.composite
def renamings(draw: st.DrawFn) -> tuple[str, list[str], str, list[str]]:
    """One document spelled twice, its operations named differently each time."""
    (tokens,) = draw(definitions())
    places = tokens.count(None)
    first = draw(st.lists(NAMES, min_size=places, max_size=places))
    second = draw(st.lists(NAMES, min_size=places, max_size=places))
    return (
        spelled_with(draw, tokens, first),
        first,
        spelled_with(draw, tokens, second),
        second,
    )


def unnamed_ast(text: str) -> str | None:
    """graphql-core's reading of `text` with its operations' names taken out, printed; None
    when it is not a document."""
    try:
        document = parse(text)
    except GraphQLSyntaxError:
        return None
    definitions = [
        replace(d, name=None) if isinstance(d, OperationDefinitionNode) else d
        for d in document.definitions
    ]
    return print_ast(replace(document, definitions=tuple(definitions)))


@given(renamings())
@settings(max_examples=300)
@example(
    (
        "query query { a } query { a } query A { a } ",
        ["A"],
        "query query { a } query { a } query B { a }",
        ["B"],
    )
)
def test_texts_that_differ_in_operation_names_have_one_form(
    texts: tuple[str, list[str], str, list[str]],
) -> None:
    """A document read whole (its brackets balanced, each definition an operation or a
    fragment) has one form however its operations are named, each differently; the names are
    read in their order. Names that repeat (not a document) give no form."""
    first, _, second, _ = texts
    if unnamed_ast(first) is None:
        return
    # The names as graphql-core reads them: a stray token may be one (`query query { a }`).
    first_names, second_names = (operation_names(text) for text in (first, second))
    if not first_names:
        return
    one, two = spelling(first), spelling(second)
    if len(set(first_names)) < len(first_names):
        assert one.form is None
    elif len(set(second_names)) == len(second_names):
        assert (one.names, two.names) == (first_names, second_names)
        assert one.form == two.form is not None


def operation_names(text: str) -> tuple[str, ...]:
    """The names of the operations of a document, in order."""
    return tuple(
        d.name.value
        for d in parse(text).definitions
        if isinstance(d, OperationDefinitionNode) and d.name is not None
    )


@given(definitions(), definitions(), st.data())
@settings(max_examples=500)
def test_texts_of_one_form_are_one_document_but_for_names(
    first: list[list[str | None]], second: list[list[str | None]], data: st.DataObject
) -> None:
    """Whatever two texts (stray tokens included): one form means one document as graphql-core
    reads it, its operations' names aside, or two texts that are not documents."""
    texts = []
    for (tokens,) in (first, second):
        places = tokens.count(None)
        names = data.draw(st.lists(NAMES, min_size=places, max_size=places))
        texts.append(spelled_with(data.draw, tokens, names))
    one, two = (spelling(t) for t in texts)
    if one.form is not None and one.form == two.form:
        assert unnamed_ast(texts[0]) == unnamed_ast(texts[1])


@given(renamings(), st.integers(min_value=0, max_value=10_000))
@settings(max_examples=200)
def test_a_place_in_one_naming_is_found_in_the_other(
    texts: tuple[str, list[str], str, list[str]], at: int
) -> None:
    """Each token's start in one text is the same token's start in the other, the operations'
    names included."""
    first, _, second, _ = texts
    if unnamed_ast(first) is None:  # (only documents are shared)
        return
    here, there = starts(first), starts(second)
    i = at % len(here)
    assert translate(here[i], first, second) == there[i]


QUERY = """query Names {
  gpus { name }
}"""


@st.composite
def commented(draw: st.DrawFn, document: str) -> str:
    """`document` with comments, spaces and commas added between random tokens."""
    words = document.split(" ")
    return " ".join(w + draw(st.sampled_from(["", ",", "\n", "  # note\n", "\t"])) for w in words)


@given(st.lists(commented(QUERY), min_size=3, max_size=6))
@settings(
    max_examples=8, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None
)
async def test_spellings_share_one_preparation_and_one_answer(
    synthetic_db, settings: Settings, texts: list[str]
) -> None:
    """Over HTTP: every spelling gets the answer of the first, and the process prepares one
    document for them all."""
    async with app_client(settings, cache="off") as (app, client):
        documents = app.state.schema.engine.documents
        first = await client.post("/graphql", json={"query": QUERY})
        before = len(documents)
        for text in texts:
            response = await client.post("/graphql", json={"query": text})
            assert response.json() == first.json(), text
        assert len(documents) == before
    assert first.json()["data"]["gpus"]


async def test_errors_are_placed_in_the_text_the_client_sent(synthetic_db, settings) -> None:
    """A validation error found in the first spelling is reported at its line and column in
    each later one, as graphql-core places it there."""
    first = "{ gpus { name nope } }"
    later = "# a comment\n\n{\n  gpus {\n    name,\n       nope\n  }\n}"
    async with app_client(settings, cache="off") as (_, client):
        one = (await client.post("/graphql", json={"query": first})).json()
        two = (await client.post("/graphql", json={"query": later})).json()
    message = "Cannot query field 'nope' on type 'Gpu'. Did you mean 'name'?"
    assert [(e["message"], e["locations"]) for e in one["errors"]] == [
        (message, [{"line": 1, "column": 15}])
    ]
    assert [(e["message"], e["locations"]) for e in two["errors"]] == [
        (message, [{"line": 6, "column": 8}])
    ]


NAMED = """query Names($slug: String!) {
  model(slug: $slug) { configurations(task: "chat") { id } }
  gpus { name }
}"""


async def test_namings_share_one_preparation_and_answer_by_their_own_names(
    synthetic_db, settings
) -> None:
    """A valid document sent again with its operation named otherwise (and spaced otherwise)
    is not prepared again; its `operationName` is read by the name its text gives, a name it
    does not give is unknown (the first text's too), and its errors are placed in its text."""
    variables = {"slug": "tiny-1b"}
    renamed = NAMED.replace("query Names", "# renamed\nquery   Other123 ").replace(" {", "{")
    async with app_client(settings, cache="off") as (app, client):
        documents = app.state.schema.engine.documents

        async def ask(query: str, name: str | None) -> Any:
            body = {"query": query, "variables": variables, "operationName": name}
            return (await client.post("/graphql", json=body)).json()

        first = await ask(NAMED, "Names")
        kept = len(documents)
        other = await ask(renamed, "Other123")
        unnamed = await ask(renamed, None)
        theirs = await ask(renamed, "Names")
        assert len(documents) == kept
    assert first["errors"][0]["locations"] == [{"line": 2, "column": 24}]
    # (`configurations` one line down, one column left: "model(slug: $slug){ ")
    assert other["errors"][0]["locations"] == [{"line": 3, "column": 23}]
    for answer in (other, unnamed):
        assert answer["data"] == first["data"]
        assert [e["message"] for e in answer["errors"]] == [e["message"] for e in first["errors"]]
    assert theirs["errors"] == [
        {"message": 'Unknown operation named "Names".', "extensions": {"code": "BAD_REQUEST"}}
    ]


async def test_an_invalid_document_is_not_shared_across_namings(synthetic_db, settings) -> None:
    """A document whose validation fails names its own operation in its errors: each naming
    of it is prepared on its own."""
    async with app_client(settings, cache="off") as (app, client):
        documents = app.state.schema.engine.documents
        answers = []
        for name in ("First", "Second"):
            query = f"query {name}($unused: Int) {{ gpus {{ name }} }}"
            answers.append((await client.post("/graphql", json={"query": query})).json())
        assert len(documents) == 2
    assert [[e["message"] for e in a["errors"]] for a in answers] == [
        ["Variable '$unused' is never used in operation 'First'."],
        ["Variable '$unused' is never used in operation 'Second'."],
    ]


async def test_an_introspection_answer_is_computed_once(
    synthetic_db, settings, monkeypatch
) -> None:
    """The introspection query with a different comment each time: one run of its plan, the
    same answer each time, the schema's own."""
    runs = []
    execute = completion.execute

    async def counted(selection: Any, run: Any) -> Any:
        runs.append(run)
        return await execute(selection, run)

    monkeypatch.setattr(completion, "execute", counted)
    query = get_introspection_query(descriptions=True)
    async with app_client(settings, cache="off") as (app, client):
        answers = [
            (await client.post("/graphql", json={"query": f"# {n}\n{query}"})).json()
            for n in range(5)
        ]
        expected = execute_sync(core_schema(app.state.schema), parse(query))
    assert len(runs) == 1
    assert all(answer == answers[0] for answer in answers)
    assert answers[0]["data"] == expected.data


# --- the bounds on new-document work ---------------------------------------------------------


@contextlib.asynccontextmanager
async def held_parsing(monkeypatch) -> AsyncIterator[tuple[threading.Event, list[str]]]:
    """Large documents' parsing, in the worker thread, held until the event is set; the texts
    that reached it."""
    release, reached = threading.Event(), []
    parsed = limits.parsed

    def holding(text: str, max_tokens: int) -> Any:
        if len(text) > INLINE_CHARS:  # (a small one is parsed on the loop)
            reached.append(text)
            release.wait(30)
        return parsed(text, max_tokens)

    monkeypatch.setattr(limits, "parsed", holding)
    try:
        yield release, reached
    finally:
        release.set()


def large(n: int) -> str:
    text = f"{{ a0: __typename b{n}: __typename }} # {'padding ' * 80}"
    assert len(text) > INLINE_CHARS
    return text


def peer(app: Any, address: str) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=app, client=(address, 40000))
    return httpx.AsyncClient(transport=transport, base_url="http://test")


async def until(condition: Any) -> None:
    while not condition():
        await asyncio.sleep(0)


async def test_new_document_work_is_bounded_per_client_and_in_all(
    synthetic_db, settings, monkeypatch
) -> None:
    """While one client's new document is prepared, its next new one is refused at once; two
    large ones in preparation refuse a third client's; a small new document of another client
    and a document already prepared are answered meanwhile; once done nothing stays counted."""
    async with (
        app_client(settings, cache="off") as (app, _),
        peer(app, "10.0.0.1") as one,
        peer(app, "10.0.0.2") as two,
        peer(app, "10.0.0.3") as three,
    ):
        assert (await one.post("/graphql", json={"query": "{ gpus { name } }"})).status_code == 200
        async with held_parsing(monkeypatch) as (release, reached):
            first = asyncio.create_task(one.post("/graphql", json={"query": large(1)}))
            await until(lambda: len(reached) == 1)
            again = await one.post("/graphql", json={"query": large(2)})
            second = asyncio.create_task(two.post("/graphql", json={"query": large(3)}))
            await until(lambda: PREPARING.large == 2)
            third = await three.post("/graphql", json={"query": large(4)})
            small = await three.post("/graphql", json={"query": "{ __typename }"})
            known = await two.post("/graphql", json={"query": "{ gpus { name } }"})
            release.set()
            answered = [await first, await second]
    busy = {
        "data": None,
        "errors": [
            {
                "message": "The server is busy preparing new documents (this client's, or as "
                "many as it prepares at once); send it again shortly, or send a document it "
                "has run.",
                "extensions": {"code": "PREPARATION_BUSY", "retryAfter": 1},
            }
        ],
        "extensions": UNCOSTED,
    }
    for refused in (again, third):
        assert (refused.status_code, refused.headers["retry-after"]) == (503, "1")
        assert refused.json() == busy
    assert small.json()["data"] == {"__typename": "Query"}
    assert known.status_code == 200 and "errors" not in known.json()
    assert [r.json()["data"]["a0"] for r in answered] == ["Query", "Query"]
    assert (PREPARING.clients, PREPARING.large) == ({}, 0)


async def test_a_refused_or_failing_new_document_leaves_nothing_counted(
    synthetic_db, settings
) -> None:
    """A new document that is not one, is past a limit, or fails validation, ends its
    preparation all the same: the client's next new document is prepared."""
    async with app_client(settings, cache="off") as (_, client):
        codes = []
        for query in ["{ gpus { name ", "{ nope }", "{ a " + "{ b " * 40 + "}" * 41, large(9)]:
            body = (await client.post("/graphql", json={"query": query})).json()
            codes.append([e["extensions"]["code"] for e in body.get("errors", [])])
    assert codes == [
        ["GRAPHQL_PARSE_FAILED"],
        ["GRAPHQL_VALIDATION_FAILED"],
        ["QUERY_TOO_DEEP"],
        [],
    ]
    assert (PREPARING.clients, PREPARING.large) == ({}, 0)


async def test_a_text_being_read_is_waited_for_not_refused(synthetic_db, settings, monkeypatch):
    """While one client's new document is read, the same text sent again by that client waits
    for it and is answered (read once); another new text of that client is still refused."""
    async with (
        app_client(settings, cache="off") as (app, _),
        peer(app, "10.0.0.1") as one,
    ):
        async with held_parsing(monkeypatch) as (release, reached):
            first = asyncio.create_task(one.post("/graphql", json={"query": large(1)}))
            await until(lambda: len(reached) == 1)
            same = asyncio.create_task(one.post("/graphql", json={"query": large(1)}))
            other = await one.post("/graphql", json={"query": large(2)})
            release.set()
            answered = [await first, await same]
    assert other.json()["errors"][0]["extensions"]["code"] == "PREPARATION_BUSY"
    assert [r.json()["data"] for r in answered] == [{"a0": "Query", "b1": "Query"}] * 2
    assert len(reached) == 1
    assert (PREPARING.clients, PREPARING.large) == ({}, 0)
