"""Abuse cases over HTTP, through the ASGI app on the synthetic data: whole answers.

Each test says what the GraphQL-over-HTTP spec (draft, graphql.github.io/graphql-over-http)
asks for, status code and media type, and asserts the server does it. Two media types:

- `application/graphql-response+json` (the client lists it first in `Accept`): a request error
  (not well-formed, unparsable, invalid, no operation, bad variables) is **400** and the body has
  no `data` entry; an executed request (even with field errors and `data: null`) is **200**.
- `application/json` (the client asks for it, `*/*`, or sends no `Accept`): an executed or
  well-formed-but-invalid request is **200**; a request that is not a well-formed GraphQL-over-HTTP
  request (bad JSON, a body that is not an object, wrong parameter types) is **400**, as the spec
  says it SHOULD be (the `graphql-http` audit also accepts 200 with `errors`; this server sends
  400), with a JSON body that has `errors` and no `data`.

Whatever the case, the body is JSON (never text/plain) and every error carries
`extensions.code`.
"""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from tests import synthetic
from tests.conftest import app_client
from tests.reports import UNCOSTED, cost

pytestmark = pytest.mark.anyio

JSON = "application/json"
GQL = "application/graphql-response+json"
MEDIA = {JSON: JSON, GQL: GQL}
# Accept header, and the status of a request error with it.
ACCEPTS = {"json": (JSON, 200), "graphql-response": (GQL, 400)}
GPUS = "{ gpus { name } }"
GPUS_DATA = {"gpus": [{"name": "B200"}, {"name": "H100"}]}


async def each(cases: dict[str, Any], check: Any) -> None:
    """`await check(case)` for every case; one assertion naming every case that failed."""
    failed = []
    for name, case in cases.items():
        try:
            await check(case)
        except AssertionError as error:
            failed.append(f"{name}: {str(error)[:400]}")
    assert not failed, "\n".join(failed)


def media(response: httpx.Response) -> str:
    return response.headers.get("content-type", "").split(";")[0].strip()


def refusal(response: httpx.Response, accept: str | None = None) -> list[dict[str, Any]]:
    """The errors of an answer that executed nothing: a JSON object with `errors` (each with a
    message and a code) and no data, in the media type asked for (json unless graphql-response
    was)."""
    assert media(response) == MEDIA.get(accept or JSON, JSON), (
        response.status_code,
        response.headers.get("content-type"),
        response.text[:300],
    )
    body = response.json()
    assert isinstance(body, dict) and set(body) <= {"data", "errors", "extensions"}, body
    assert body.get("data") is None, body
    errors = body["errors"]
    assert errors and all(
        isinstance(e["message"], str) and isinstance(e["extensions"]["code"], str) for e in errors
    ), body
    return errors


def without_null_data(body: dict[str, Any]) -> dict[str, Any]:
    """The body without `"data": null`: the README's limits answer with it, the GraphQL spec
    leaves the entry out for a request error; either is a request error's answer."""
    if "data" in body and body["data"] is None:
        body = {k: v for k, v in body.items() if k != "data"}
    return body


async def post(client: httpx.AsyncClient, accept: str | None, **json_body: Any) -> httpx.Response:
    headers = {"accept": accept} if accept else {}
    return await client.post("/graphql", json=json_body, headers=headers)


def bad_request(message: str) -> list[dict[str, Any]]:
    """The errors of a request that is not a well-formed GraphQL-over-HTTP request."""
    return [{"message": message, "extensions": {"code": "BAD_REQUEST"}}]


def assert_request_error(
    response: httpx.Response, accept: str, status: int, errors: list[dict[str, Any]]
) -> None:
    """A request error as the spec wants it for this `Accept`, with exactly these errors."""
    assert (response.status_code, media(response)) == (status, MEDIA[accept]), response.text
    body = response.json()
    if accept == GQL:
        assert "data" not in body, body  # the spec: no data entry for a request error
    assert without_null_data(body) == {"errors": errors, "extensions": UNCOSTED}


# ---------------------------------------------------------------------------------------------
# Documents past the limits
# ---------------------------------------------------------------------------------------------


async def test_a_hundred_aliases(synthetic_db, client) -> None:
    """Validation failure (a limit is a validation rule): json 200, graphql-response 400."""

    async def check(case: tuple[str, int]) -> None:
        accept, status = case
        query = "{ " + " ".join(f"g{i}: gpus {{ name }}" for i in range(100)) + " }"
        response = await post(client, accept, query=query)
        message = "The query uses 100 aliases, more than the limit of 30."
        assert_request_error(
            response,
            accept,
            status,
            [{"message": message, "extensions": {"code": "TOO_MANY_ALIASES"}}],
        )

    await each(ACCEPTS, check)


async def test_deep_nesting(synthetic_db, client) -> None:
    """Validation failure: json 200, graphql-response 400."""

    async def check(case: tuple[str, int]) -> None:
        accept, status = case
        query = (
            "{ configurations { nodes { "
            + "model { configurations { " * 10
            + "id"
            + " } }" * 10
            + " } } }"
        )
        response = await post(client, accept, query=query)
        message = "The query nests fields more than 16 deep, the limit."
        assert_request_error(
            response,
            accept,
            status,
            [{"message": message, "extensions": {"code": "QUERY_TOO_DEEP"}}],
        )

    await each(ACCEPTS, check)


async def test_brackets_nested_past_the_token_limit(synthetic_db, client) -> None:
    """3,000 nested list brackets in an argument: refused before the parser recurses."""
    query = "{ gpus(x: " + "[" * 3000 + "]" * 3000 + ") { name } }"
    response = await post(client, JSON, query=query)
    message = "The document has more than 5000 tokens, the limit."
    assert_request_error(
        response, JSON, 200, [{"message": message, "extensions": {"code": "TOO_MANY_TOKENS"}}]
    )


async def test_deeply_nested_json_variables(synthetic_db, client) -> None:
    """100,000 nested arrays in `variables`: a JSON parser that recurses cannot read it. The
    body is not a request the server can interpret: 400 whatever the `Accept`. Never a 500."""

    async def check(case: tuple[str, int]) -> None:
        accept, _ = case
        body = b'{"query": "query($v: [Int]) { gpus { name } }", "variables": {"v": '
        body += b"[" * 100_000 + b"]" * 100_000 + b"}}"
        response = await client.post(
            "/graphql", content=body, headers={"content-type": JSON, "accept": accept}
        )
        assert_request_error(
            response, accept, 400, bad_request("The body is not valid JSON: depth limit exceeded.")
        )

    await each(ACCEPTS, check)


async def test_a_one_megabyte_document(synthetic_db, client) -> None:
    """A 1 MB document in a body under the 1 MiB body cap: refused by the document limit,
    a validation-stage request error (json 200, graphql-response 400)."""

    async def check(case: tuple[str, int]) -> None:
        accept, status = case
        query = GPUS + " " * (1_000_000 - len(GPUS))
        response = await post(client, accept, query=query)
        message = "The document is 1000000 bytes, more than the limit of 65536."
        assert_request_error(
            response,
            accept,
            status,
            [{"message": message, "extensions": {"code": "DOCUMENT_TOO_LARGE"}}],
        )

    await each(ACCEPTS, check)


async def test_a_body_over_the_cap(synthetic_db, client) -> None:
    """2 MB, over LEADGREEN_MAX_BODY_BYTES: 413 Content Too Large (RFC 9110), JSON error."""
    response = await post(client, GQL, query=GPUS + " " * 2_000_000)
    assert response.status_code == 413
    assert [e["extensions"]["code"] for e in refusal(response, GQL)] == ["BODY_TOO_LARGE"]


async def test_a_streamed_body_over_the_cap(synthetic_db, client) -> None:
    """The same without Content-Length (chunked): the cap holds while reading, 413."""

    async def chunks() -> AsyncIterator[bytes]:
        yield b'{"query": "' + GPUS.encode()
        for _ in range(40):
            yield b" " * 65536
        yield b'"}'

    response = await client.post(
        "/graphql", content=chunks(), headers={"content-type": JSON, "accept": GQL}
    )
    assert response.status_code == 413
    assert [e["extensions"]["code"] for e in refusal(response, GQL)] == ["BODY_TOO_LARGE"]


async def test_a_directive_repeated_a_hundred_times(synthetic_db, client) -> None:
    """Validation failure: one error per limit, not one per repeat (json 200, graphql-response
    400)."""

    async def check(case: tuple[str, int]) -> None:
        accept, status = case
        query = "{ gpus" + " @include(if: true)" * 100 + " { name } }"
        response = await post(client, accept, query=query)
        assert_request_error(
            response,
            accept,
            status,
            [
                {
                    "message": "The query uses 100 directives, more than the limit of 50.",
                    "extensions": {"code": "TOO_MANY_DIRECTIVES"},
                },
                {
                    "message": "@include is used 100 times on field `gpus`, "
                    "more than the limit of 1.",
                    "extensions": {"code": "TOO_MANY_DIRECTIVES"},
                },
            ],
        )

    await each(ACCEPTS, check)


# ---------------------------------------------------------------------------------------------
# Batches
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("accept", [JSON, GQL])
async def test_a_batch_when_batching_is_off(synthetic_db, client, accept) -> None:
    """A JSON array of 50 operations. The spec's request is a JSON object, so an array is not a
    well-formed request: 400, JSON error; nothing runs."""
    response = await client.post(
        "/graphql", json=[{"query": GPUS}] * 50, headers={"accept": accept}
    )
    assert response.status_code == 400
    codes = [e["extensions"]["code"] for e in refusal(response, accept)]
    assert codes == ["BATCHING_DISABLED"]


async def test_a_batch_over_the_maximum(synthetic_db, settings) -> None:
    """With batching on (LEADGREEN_BATCH_MAX=5), 50 operations are refused as a whole (400) and
    3 are answered in order (200, a JSON array of three answers)."""
    async with app_client(settings, batch_max=5) as (_, client):
        many = await client.post("/graphql", json=[{"query": GPUS}] * 50)
        few = await client.post(
            "/graphql",
            json=[{"query": GPUS}, {"query": "{ qqq }"}, {"query": "{ __typename }"}],
            headers={"accept": JSON},
        )
    assert many.status_code == 400
    assert [e["extensions"]["code"] for e in refusal(many)] == ["BATCH_TOO_LARGE"]
    assert (few.status_code, media(few)) == (200, JSON)
    answers = few.json()
    assert [a.get("data") for a in answers] == [GPUS_DATA, None, {"__typename": "Query"}]
    assert answers[1]["errors"][0]["extensions"]["code"] == "GRAPHQL_VALIDATION_FAILED"


# ---------------------------------------------------------------------------------------------
# Bodies that are not a JSON GraphQL request: never executed
# ---------------------------------------------------------------------------------------------

# What a page on another site can send without a CORS preflight ("simple" requests), and the
# rest that is not application/json.
NOT_JSON = {
    "form": ("application/x-www-form-urlencoded", b"query=%7B+gpus+%7B+name+%7D+%7D"),
    "text/plain": ("text/plain", json.dumps({"query": GPUS}).encode()),
    "text/plain with json in a parameter": (
        "text/plain; charset=application/json",
        json.dumps({"query": GPUS}).encode(),
    ),
    "multipart": (
        "multipart/form-data; boundary=x",
        b'--x\r\nContent-Disposition: form-data; name="query"\r\n\r\n'
        b"{ gpus { name } }\r\n--x--\r\n",
    ),
    "application/graphql": ("application/graphql", GPUS.encode()),
}


async def test_a_body_that_is_not_json(synthetic_db, client) -> None:
    """CSRF: a form, text/plain or multipart body (what another site's page can send without a
    CORS preflight) never runs. The spec: a server MUST support application/json and MAY
    support others; this one supports only JSON, so the rest get 415 Unsupported Media Type with
    a JSON error (UNSUPPORTED_MEDIA_TYPE)."""

    async def check(case: tuple[str, bytes]) -> None:
        content_type, body = case
        response = await client.post(
            "/graphql", content=body, headers={"content-type": content_type}
        )
        assert b'"B200"' not in response.content  # never executed
        assert response.status_code == 415, response.status_code
        assert [e["extensions"]["code"] for e in refusal(response)] == ["UNSUPPORTED_MEDIA_TYPE"]

    await each(NOT_JSON, check)


@pytest.mark.parametrize("content", [b"", json.dumps({"query": GPUS}).encode()])
async def test_a_post_without_content_type(synthetic_db, client, content) -> None:
    """The spec: a POST without Content-Type SHOULD be rejected with a 4xx (the audit's 9ABE):
    here 415, a JSON error; nothing runs."""
    response = await client.post("/graphql", content=content, headers={"content-type": ""})
    assert response.status_code == 415
    assert [e["extensions"]["code"] for e in refusal(response)] == ["UNSUPPORTED_MEDIA_TYPE"]


async def test_an_empty_json_body(synthetic_db, client) -> None:
    """The audit's 7267: a POST requires a body; not a well-formed request, 400, JSON error."""

    async def check(case: tuple[str, int]) -> None:
        accept, _ = case
        response = await client.post(
            "/graphql", content=b"", headers={"content-type": JSON, "accept": accept}
        )
        message = "The body is empty; send a JSON object with a `query`."
        assert_request_error(response, accept, 400, bad_request(message))

    await each(ACCEPTS, check)


NOT_AN_OBJECT_MESSAGE = "The body must be a JSON object (a GraphQL request)."
NOT_VALUE = "The body is not valid JSON: unexpected character, expected a JSON value."
# A body, and the message it is refused with.
NOT_AN_OBJECT = {
    "number": (b"1", NOT_AN_OBJECT_MESSAGE),
    "string": (b'"{ gpus { name } }"', NOT_AN_OBJECT_MESSAGE),
    "null": (b"null", NOT_AN_OBJECT_MESSAGE),
    "boolean": (b"true", NOT_AN_OBJECT_MESSAGE),
    "broken": (b"{", "The body is not valid JSON: unexpected end of data."),
    "nonsense": (b"NONSENSE", NOT_VALUE),
    "trailing": (
        b'{"query": "{ gpus { name } }"} trailing',
        "The body is not valid JSON: unexpected content after document.",
    ),
    "NaN": (b'{"query": "{ gpus { name } }", "variables": {"x": NaN}}', NOT_VALUE),
}


@pytest.mark.parametrize("accept", [JSON, GQL])
async def test_a_json_body_that_is_not_an_object(synthetic_db, client, accept) -> None:
    """Not a well-formed GraphQL-over-HTTP request (JSON parsing failure, or JSON but not an
    object): 400, as the spec says (the audit would accept 200 with `errors` for json)."""

    async def check(case: tuple[bytes, str]) -> None:
        body, message = case
        response = await client.post(
            "/graphql", content=body, headers={"content-type": JSON, "accept": accept}
        )
        assert_request_error(response, accept, 400, bad_request(message))

    await each(NOT_AN_OBJECT, check)


@pytest.mark.parametrize("accept", [JSON, GQL])
async def test_invalid_utf8(synthetic_db, client, accept) -> None:
    """The spec: request bodies are UTF-8; one that is not cannot be interpreted: 400."""
    body = b'{"query": "{ gpus { name \xff\xfe } }"}'
    response = await client.post(
        "/graphql", content=body, headers={"content-type": JSON, "accept": accept}
    )
    assert_request_error(response, accept, 400, bad_request("The body is not valid UTF-8."))


# ---------------------------------------------------------------------------------------------
# Parameters
# ---------------------------------------------------------------------------------------------


async def test_variables_of_the_wrong_type(synthetic_db, client) -> None:
    """Variable coercion failure (CoerceVariableValues): json 200, graphql-response 400."""

    async def check(case: tuple[str, int]) -> None:
        accept, status = case
        response = await post(
            client,
            accept,
            query="query($n: Int) { configurations(first: $n) { totalCount } }",
            variables={"n": "x"},
        )
        message = "Variable '$n' has invalid value: Int cannot represent non-integer value: 'x'"
        assert_request_error(
            response,
            accept,
            status,
            [
                {
                    "message": message,
                    "locations": [{"line": 1, "column": 7}],
                    "extensions": {"code": "BAD_USER_INPUT"},
                }
            ],
        )

    await each(ACCEPTS, check)


WRONG_PARAMETERS = {
    "variables an array": {"variables": [1]},
    "variables a string": {"variables": "{}"},
    "variables 0": {"variables": 0},
    "variables false": {"variables": False},
    "query an object": {"query": {"obj": "ect"}},
    "query 0": {"query": 0},
    "query false": {"query": False},
    "query an array": {"query": ["array"]},
    "operationName an object": {"operationName": {"obj": "ect"}},
    "operationName an array": {"operationName": ["array"]},
    "operationName 0": {"operationName": 0},
    "extensions a string": {"extensions": "x"},
    "extensions an array": {"extensions": ["array"]},
    "extensions 0": {"extensions": 0},
}
# What each parameter must be, as the refusal says.
MUST_BE = {
    "query": "a string or null",
    "variables": "an object or null",
    "operationName": "a string or null",
    "extensions": "an object or null",
}


@pytest.mark.parametrize("accept", [JSON, GQL])
async def test_parameters_of_the_wrong_type(synthetic_db, client, accept) -> None:
    """Not a well-formed request (`query` a string, `variables` and `extensions` maps,
    `operationName` a string): 400, as the spec says; the audit (4F5x, 9FEx, E3Ex, FB9x, 69Bx,
    F05x, 904x, 368x) wants 400 for graphql-response and would accept 200 for json."""

    async def check(parameters: dict[str, Any]) -> None:
        response = await post(client, accept, **{"query": GPUS, **parameters})
        [name] = parameters
        message = f"`{name}` must be {MUST_BE[name]}."
        assert_request_error(response, accept, 400, bad_request(message))

    await each(WRONG_PARAMETERS, check)


async def test_no_query_parameter(synthetic_db, client) -> None:
    """`{"qeury": ...}`: not well-formed (the audit's 6610/3715): 400 whatever the `Accept`,
    as the spec says (the audit would accept 200 with `errors` for json)."""

    async def check(case: tuple[str, int]) -> None:
        accept, _ = case
        response = await post(client, accept, qeury=GPUS)
        assert_request_error(response, accept, 400, bad_request("The request has no `query`."))

    await each(ACCEPTS, check)


@pytest.mark.parametrize(
    ("query", "operation", "message"),
    [
        ("query A { gpus { name } }", "B", 'Unknown operation named "B".'),
        (
            "query A { gpus { name } } query B { tasks { name } }",
            None,
            "The document holds several operations: say which to run with `operationName`.",
        ),
    ],
    ids=["unknown-name", "several-operations-no-name"],
)
async def test_an_operation_that_cannot_be_determined(
    synthetic_db, client, query, operation, message
) -> None:
    """GetOperation() raises a request error: json 200, graphql-response 400, with a JSON body
    (never text/plain) and a code."""

    async def check(case: tuple[str, int]) -> None:
        accept, status = case
        response = await post(client, accept, query=query, operationName=operation)
        assert_request_error(response, accept, status, bad_request(message))

    await each(ACCEPTS, check)


async def test_a_document_that_does_not_parse(synthetic_db, client) -> None:
    """Document parsing failure: json 200, graphql-response 400 (no data entry)."""

    async def check(case: tuple[str, int]) -> None:
        accept, status = case
        response = await post(client, accept, query="{")
        assert_request_error(
            response,
            accept,
            status,
            [
                {
                    "message": "Syntax Error: Expected Name, found <EOF>.",
                    "locations": [{"line": 1, "column": 2}],
                    "extensions": {"code": "GRAPHQL_PARSE_FAILED"},
                }
            ],
        )

    await each(ACCEPTS, check)


async def test_a_document_that_does_not_validate(synthetic_db, client) -> None:
    """Document validation failure: json 200, graphql-response 400 (no data entry)."""

    async def check(case: tuple[str, int]) -> None:
        accept, status = case
        response = await post(client, accept, query="{ qqq }")
        assert_request_error(
            response,
            accept,
            status,
            [
                {
                    "message": "Cannot query field 'qqq' on type 'Query'.",
                    "locations": [{"line": 1, "column": 3}],
                    "extensions": {"code": "GRAPHQL_VALIDATION_FAILED"},
                }
            ],
        )

    await each(ACCEPTS, check)


# ---------------------------------------------------------------------------------------------
# Cursors
# ---------------------------------------------------------------------------------------------

PAGE = "query($after: String) { configurations(first: 2, after: $after) { nodes { id } } }"


def tampered(cursor: str) -> dict[str, str]:
    """Ways to break a cursor that was issued: each is not a cursor this API issued."""
    padded = cursor + "=" * (-len(cursor) % 4)
    raw = base64.urlsafe_b64decode(padded).decode()
    b64 = lambda text: base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")  # noqa: E731
    return {
        "first character": ("B" if cursor[0] != "B" else "C") + cursor[1:],
        "truncated": cursor[:-3],
        "appended": cursor + "!!",
        "not base64": "%%%" + cursor,
        "json but not a list": b64(json.dumps({"cursor": raw})),
        "a list of two": b64(json.dumps(json.loads(raw)[:2])),
        "id not an integer": b64(json.dumps([*json.loads(raw)[:2], "1"])),
        "value a string": b64(json.dumps(["id", "1", 1])),
        "value true": b64(json.dumps(["id", True, 1])),
        "empty": "",
    }


async def issued_cursor(client: httpx.AsyncClient) -> str:
    issued = await post(client, GQL, query=PAGE.replace("nodes { id }", "pageInfo { endCursor }"))
    cursor: str = issued.json()["data"]["configurations"]["pageInfo"]["endCursor"]
    return cursor


async def assert_not_issued(client: httpx.AsyncClient, bad: str) -> None:
    """A field error (BAD_USER_INPUT, with a path): 200 with `data: null` for either media
    type (the spec: a data entry, even null, is 2xx)."""
    response = await post(client, GQL, query=PAGE, variables={"after": bad})
    assert (response.status_code, media(response)) == (200, GQL)
    assert response.json() == {
        "data": None,
        "errors": [
            {
                "message": f"`after` is not a cursor this API issued: {bad[:40]!r}",
                "locations": [{"line": 1, "column": 25}],
                "path": ["configurations"],
                "extensions": {"code": "BAD_USER_INPUT"},
            }
        ],
        "extensions": cost(4, 0),
    }


async def test_a_tampered_cursor(synthetic_db, client) -> None:
    """Every way of breaking an issued cursor is refused with BAD_USER_INPUT (the README)."""
    first = (await post(client, GQL, query=PAGE)).json()
    assert first["data"]["configurations"]["nodes"] == [
        {"id": synthetic.configuration_id(1)},
        {"id": synthetic.configuration_id(2)},
    ]
    cases = tampered(await issued_cursor(client))
    del cases["not base64"], cases["empty"]  # next tests
    await each(cases, lambda bad: assert_not_issued(client, bad))


async def test_a_cursor_with_characters_outside_base64(synthetic_db, client) -> None:
    await assert_not_issued(client, tampered(await issued_cursor(client))["not base64"])


async def test_a_cursor_of_another_ordering(synthetic_db, client) -> None:
    """A cursor only fits the ordering it was issued for."""
    ordered = "configurations(first: 1, orderBy: {field: MEDIAN_ITL_MS}) { pageInfo { endCursor } }"
    cursor = (await post(client, JSON, query="{ " + ordered + " }")).json()["data"]
    after = cursor["configurations"]["pageInfo"]["endCursor"]
    response = await post(client, JSON, query=PAGE, variables={"after": after})
    assert response.json() == {
        "data": None,
        "errors": [
            {
                "message": "`after` is a cursor for ordering by 'median_itl_ms', not 'id'",
                "locations": [{"line": 1, "column": 25}],
                "path": ["configurations"],
                "extensions": {"code": "BAD_USER_INPUT"},
            }
        ],
        "extensions": cost(4, 0),
    }


# ---------------------------------------------------------------------------------------------
# Methods and URLs
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("accept", [JSON, GQL])
async def test_a_mutation_over_get(synthetic_db, client, accept) -> None:
    """The spec: GET MUST NOT run a mutation; the server MUST answer 405 Method Not Allowed
    (and RFC 9110: a 405 carries `Allow`, here POST). The schema has no mutations, so a POST of
    the same document is a validation error instead (next test). JSON body with a code."""
    response = await client.get(
        "/graphql", params={"query": "mutation { __typename }"}, headers={"accept": accept}
    )
    assert response.status_code == 405
    assert "POST" in response.headers.get("allow", "")
    refusal(response, accept)


async def test_a_mutation_over_get_never_runs(synthetic_db, client) -> None:
    """Whatever the status, a refusal (4xx) with no data."""
    response = await client.get("/graphql", params={"query": "mutation { __typename }"})
    assert 400 <= response.status_code < 500
    if media(response) in (JSON, GQL):
        assert response.json().get("data") is None


async def test_a_mutation_over_post(synthetic_db, client) -> None:
    """No mutation type: document validation failure (json 200, graphql-response 400)."""

    async def check(case: tuple[str, int]) -> None:
        accept, status = case
        response = await post(client, accept, query="mutation { __typename }")
        assert_request_error(
            response,
            accept,
            status,
            [
                {
                    "message": "The mutation operation is not supported by the schema.",
                    "locations": [{"line": 1, "column": 1}],
                    "extensions": {"code": "GRAPHQL_VALIDATION_FAILED"},
                }
            ],
        )

    await each(ACCEPTS, check)


@pytest.mark.parametrize("method", ["PATCH", "TRACE"])
async def test_other_methods(synthetic_db, client, method) -> None:
    """RFC 9110: 405 with `Allow` naming the methods served (GET, HEAD, POST; PUT and DELETE
    for GraphQL over SSE's single connection mode); a JSON error."""
    response = await client.request(
        method, "/graphql", json={"query": GPUS}, headers={"accept": JSON}
    )
    assert response.status_code == 405
    allowed = {m.strip() for m in response.headers.get("allow", "").split(",")}
    assert allowed == {"GET", "HEAD", "POST", "PUT", "DELETE"}
    assert [e["extensions"]["code"] for e in refusal(response, JSON)] == ["METHOD_NOT_ALLOWED"]


@pytest.mark.parametrize("accept", [JSON, GQL])
async def test_a_get_without_a_query(synthetic_db, client, accept) -> None:
    """No `query`: not a well-formed request, 400 with a JSON error (a browser, asking for
    text/html, gets GraphiQL instead: next test)."""
    response = await client.get("/graphql", headers={"accept": accept})
    assert response.status_code == 400
    assert [e["extensions"]["code"] for e in refusal(response, accept)] == ["BAD_REQUEST"]


async def test_a_browser_gets_graphiql(graphiql_assets, synthetic_db, client) -> None:
    response = await client.get("/graphql", headers={"accept": "text/html,*/*;q=0.8"})
    assert response.status_code == 200
    assert media(response) == "text/html"


async def test_a_very_long_url(synthetic_db, client) -> None:
    """A 20 KB query string, over LEADGREEN_MAX_URL_BYTES: 414 URI Too Long, JSON error."""
    query = GPUS + " " * 20_000
    response = await client.get("/graphql", params={"query": query}, headers={"accept": GQL})
    assert response.status_code == 414
    assert [e["extensions"]["code"] for e in refusal(response, GQL)] == ["URL_TOO_LONG"]


async def test_a_long_url_under_the_cap_is_answered(synthetic_db, client) -> None:
    query = GPUS + " " * 7_000
    response = await client.get("/graphql", params={"query": query})
    assert (response.status_code, response.json()["data"]) == (200, GPUS_DATA)


# ---------------------------------------------------------------------------------------------
# Accept
# ---------------------------------------------------------------------------------------------


NEGOTIATION = {
    "graphql-response": (GQL, GQL),
    "json": (JSON, JSON),
    "recommended": (f"{GQL}, {JSON};q=0.9", GQL),
    "with charsets": (f"{GQL};charset=utf-8, {JSON};charset=utf-8", GQL),
    "json first": (f"{JSON}, {GQL};q=0.5", JSON),
    "any": ("*/*", JSON),  # the audit's 47DE
    "none": (None, JSON),  # the audit's 80D8 (the spec's legacy clients)
}


@pytest.mark.parametrize("method", ["GET", "POST"])
async def test_the_answer_is_in_the_media_type_asked_for(synthetic_db, client, method) -> None:
    """The spec: the server MUST respect Accept and answer in the highest-priority media type it
    supports (the spec would take no Accept as graphql-response+json since 2025; the audit, the
    issue's acceptance test, wants application/json); a successful answer is 200 either way."""

    async def check(case: tuple[str | None, str]) -> None:
        accept, expected = case
        headers = {"accept": accept} if accept else {}
        if method == "GET":
            response = await client.get("/graphql", params={"query": GPUS}, headers=headers)
        else:
            response = await client.post("/graphql", json={"query": GPUS}, headers=headers)
        assert (response.status_code, media(response)) == (200, expected)
        assert response.json()["data"] == GPUS_DATA

    await each(NEGOTIATION, check)


async def test_an_accept_with_nothing_we_serve(synthetic_db, client) -> None:
    """The spec: 406 Not Acceptable (recommended), or disregard Accept and answer JSON."""
    response = await client.post("/graphql", json={"query": GPUS}, headers={"accept": "text/plain"})
    if response.status_code == 406:
        refusal(response)
    else:
        assert (response.status_code, media(response)) == (200, JSON)
        assert response.json()["data"] == GPUS_DATA


async def test_a_field_error_is_200_for_either_media_type(synthetic_db, client) -> None:
    """Execution happened (the error has a path): 200 even with graphql-response+json and
    `data: null` (the spec: a data entry, even null, is 2xx)."""
    response = await post(client, GQL, query="{ source(release: 99) { name } }")
    assert (response.status_code, media(response)) == (200, GQL)
    assert response.json() == {
        "data": None,
        "errors": [
            {
                "message": "there is no release 99; `releases` lists them",
                "locations": [{"line": 1, "column": 3}],
                "path": ["source"],
                "extensions": {"code": "BAD_USER_INPUT"},
            }
        ],
        "extensions": cost(2, 0),
    }
