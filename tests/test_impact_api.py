"""Per-request impact and grid zones through the schema (Query.requestImpact, Query.gridZones,
site.zone in the planner), whole answers, on the synthetic snapshot and its text-to-image task
(the tables of tests/test_ranking_api.py and tests/test_plan_api.py): tiny-1b's rows 1, 2 and 3
take 0.5, 0.2 and 0.3 J a token at 10, 20 and 8 ms; Pixel 1B's image rows 1, 2, 3, 4 and 6
take 300, 200, 300, 100 and 250 J an image in 2, 6, 3, 40 and 20 s a batch.
"""

from __future__ import annotations

from typing import Any

import pytest

from db import grid
from tests.conftest import Execute
from tests.test_plan_api import NOT_MEASURED, rounded
from tests.test_ranking_api import execute, iid, lid, ranking_url

pytestmark = pytest.mark.anyio
__all__ = ["execute", "ranking_url"]  # fixtures, used by name

ANSWER = """task { name } model { slug } outputUnit outputsPerRequest pue
    latencyLimit { field max unit } candidates configurations
    excluded { limit configurations reason } reason
    energyPerRequestJoules { min median max } energyPerRequestWh { min median max }
    carbonIntensityGramsPerKwh carbonPerRequestGrams { min median max }
    lowest { id } highest { id } unavailable { field reason } assumptions method"""
VERSION = grid.provenance().package_version
LOAD = (
    "Each configuration's energy per output is the one measured at its steady-state load (its "
    "batch size): a request served at another load takes another share."
)
LLM_METHOD = [
    "energyPerRequestJoules = outputsPerRequest (outputTokens, else avgOutputLen) × "
    "energyPerTokenJoules × site.pue, for each configuration within the latency limit; min, "
    "median and max over them",
    "energyPerRequestWh = energyPerRequestJoules ÷ 3,600",
    "carbonPerRequestGrams = energyPerRequestJoules ÷ 3,600,000 × carbonIntensityGramsPerKwh "
    "(site.carbonIntensityGramsPerKwh, or site.zone's gridZones figure)",
]
FRA = (
    f"Carbon at grid zone FRA's 41.44 gCO₂e per kWh (derived by LeadGreen: ecologits {VERSION}'s "
    "electricity mix gwp, in kgCO₂eq per kWh, × 1,000; EcoLogits takes it from Our World in "
    "Data; `gridZones` gives the source and licence), a yearly average of the zone's grid, not "
    "of the hour."
)


def spread(low: float, median: float, high: float) -> dict[str, float]:
    return {"min": low, "median": median, "max": high}


def joules(low: float, median: float, high: float) -> dict[str, Any]:
    """The energy figures in J and in Wh."""
    return {
        "energyPerRequestJoules": spread(low, median, high),
        "energyPerRequestWh": spread(low / 3600, median / 3600, high / 3600),
    }


async def test_a_model_over_its_configurations_on_a_zone(execute: Execute) -> None:
    """100 tokens at PUE 1.2: 60, 24 and 36 J; France's 41.44 g a kWh."""
    query = f"""{{ requestImpact(model: "tiny-1b", outputTokens: 100,
        site: {{zone: "FRA", pue: 1.2}}) {{ {ANSWER} }} }}"""
    grams = [j / 3.6e6 * 41.44 for j in (24.0, 36.0, 60.0)]
    assert rounded(await execute(query)) == rounded(
        {
            "requestImpact": {
                "task": {"name": "lm-arena-chat"},
                "model": {"slug": "tiny-1b"},
                "outputUnit": "output tokens",
                "outputsPerRequest": 100.0,
                "pue": 1.2,
                "latencyLimit": None,
                "candidates": 3,
                "configurations": 3,
                "excluded": [],
                "reason": None,
                **joules(24.0, 36.0, 60.0),
                "carbonIntensityGramsPerKwh": 41.44,
                "carbonPerRequestGrams": spread(*grams),
                "lowest": {"id": lid(2)},
                "highest": {"id": lid(1)},
                "unavailable": [],
                "assumptions": [
                    "A request generates 100 output tokens.",
                    "No latency limit.",
                    "PUE 1.2: every energy figure is the GPUs' measured energy × 1.2.",
                    FRA,
                    LOAD,
                    NOT_MEASURED,
                ],
                "method": LLM_METHOD,
            }
        }
    )


async def test_within_a_latency_limit_without_carbon(execute: Execute) -> None:
    """Rows 1 and 3 are within 10 ms; each its measured 100 tokens a response."""
    query = f"""{{ requestImpact(model: "tiny-1b", latency: {{maxItlMs: 10}}) {{ {ANSWER} }} }}"""
    answer = (await execute(query))["requestImpact"]
    assert rounded(answer) == rounded(
        {
            **answer,
            "outputsPerRequest": None,
            "latencyLimit": {"field": "medianItlMs", "max": 10.0, "unit": "ms"},
            "candidates": 3,
            "configurations": 2,
            "excluded": [
                {
                    "limit": "latency.maxItlMs",
                    "configurations": 1,
                    "reason": "medianItlMs above 10 ms",
                }
            ],
            **joules(30.0, 40.0, 50.0),
            "carbonIntensityGramsPerKwh": None,
            "carbonPerRequestGrams": None,
            "lowest": {"id": lid(3)},
            "highest": {"id": lid(1)},
            "unavailable": [
                {"field": "carbonPerRequestGrams", "reason": "the site gives no carbon intensity"}
            ],
        }
    )
    assert answer["assumptions"][:4] == [
        "A request generates each configuration's measured average output length "
        "(avgOutputLen) in output tokens.",
        "Latency: medianItlMs at most 10 ms (inclusive), as measured.",
        "PUE 1: every energy figure is the GPUs' measured energy × 1.",
        "No carbon intensity given: carbonPerRequestGrams is null.",
    ]


async def test_one_configuration(execute: Execute) -> None:
    query = f"""{{ requestImpact(model: "tiny-1b", configuration: "{lid(3)}", outputTokens: 10,
        site: {{carbonIntensityGramsPerKwh: 360}}) {{ candidates configurations
        energyPerRequestJoules {{ min median max }} carbonPerRequestGrams {{ min median max }}
        lowest {{ id }} highest {{ id }} assumptions }} }}"""
    answer = (await execute(query))["requestImpact"]
    assert rounded(answer) == {
        "candidates": 1,
        "configurations": 1,
        "energyPerRequestJoules": spread(3.0, 3.0, 3.0),
        "carbonPerRequestGrams": spread(0.0003, 0.0003, 0.0003),  # 3 J = 1/1.2e6 kWh x 360 g
        "lowest": {"id": lid(3)},
        "highest": {"id": lid(3)},
        "assumptions": answer["assumptions"],
    }
    assert answer["assumptions"][3] == "Carbon at the caller's 360 gCO₂e per kWh."


async def test_images_per_their_kind(execute: Execute) -> None:
    """A request is one image; within 10 s a batch, Pixel 1B's rows 1, 2 and 3."""
    query = """{ requestImpact(model: "pixel-1b", task: "text-to-image",
        latency: {maxBatchLatencySeconds: 10}) { outputUnit outputsPerRequest latencyLimit {
        field max unit } candidates configurations energyPerRequestJoules { min median max }
        lowest { id } highest { id } assumptions method } }"""
    answer = (await execute(query))["requestImpact"]
    assert answer == {
        "outputUnit": "image",
        "outputsPerRequest": 1.0,
        "latencyLimit": {"field": "batchLatencyS", "max": 10.0, "unit": "s"},
        "candidates": 5,
        "configurations": 3,
        "energyPerRequestJoules": spread(200.0, 300.0, 300.0),
        "lowest": {"id": iid(2)},
        "highest": {"id": iid(1)},
        "assumptions": [
            "A request generates one image.",
            "Latency: batchLatencyS at most 10 s (inclusive), as measured.",
            "PUE 1: every energy figure is the GPUs' measured energy × 1.",
            "No carbon intensity given: carbonPerRequestGrams is null.",
            LOAD,
            NOT_MEASURED,
        ],
        "method": [
            "energyPerRequestJoules = 1 × energyPerImageJoules × site.pue, for each "
            "configuration within the latency limit; min, median and max over them",
            *LLM_METHOD[1:],
        ],
    }


@pytest.mark.parametrize(
    ("arguments", "reason", "excluded"),
    [
        (
            'model: "pixel-1b", task: "text-to-image", latency: {maxBatchLatencySeconds: 1}',
            "no configuration meets the latency limit: latency.maxBatchLatencySeconds "
            "(batchLatencyS above 1 s) excludes all 5",
            [{"limit": "latency.maxBatchLatencySeconds", "configurations": 5}],
        ),
        (
            'model: "tiny-1b", task: "text-to-image"',
            "tiny-1b has no configuration of text-to-image",
            [],
        ),
    ],
)
async def test_no_configuration_is_null_figures_with_the_reason(
    execute: Execute, arguments: str, reason: str, excluded: list[dict[str, Any]]
) -> None:
    query = f"""{{ requestImpact({arguments}) {{ configurations reason
        excluded {{ limit configurations }} energyPerRequestJoules {{ min }}
        energyPerRequestWh {{ min }} carbonPerRequestGrams {{ min }} lowest {{ id }}
        highest {{ id }} unavailable {{ field }} }} }}"""
    assert await execute(query) == {
        "requestImpact": {
            "configurations": 0,
            "reason": reason,
            "excluded": excluded,
            "energyPerRequestJoules": None,
            "energyPerRequestWh": None,
            "carbonPerRequestGrams": None,
            "lowest": None,
            "highest": None,
            "unavailable": [],
        }
    }


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ('model: "tiny-1b", outputTokens: 0', "outputTokens must be an integer > 0, got 0"),
        ('model: "tiny-1b", outputTokens: -5', "outputTokens must be an integer > 0, got -5"),
        (
            'model: "pixel-1b", task: "text-to-image", outputTokens: 3',
            "outputTokens does not apply to text-to-image, whose requests generate one image "
            "each: leave it out",
        ),
        ('model: "gpt-9"', "unknown model slug 'gpt-9' in `model`; `models` lists them"),
        ('model: "tiny-1b", task: "chat"', "unknown task 'chat' in `task`; `tasks` lists them"),
        (
            'model: "tiny-1b", configuration: "Configuration:nope"',
            "unknown configuration id 'Configuration:nope' in `configuration`; `configurations` "
            "lists them",
        ),
        (
            f'model: "tiny-1b", configuration: "{lid(5)}"',
            f"configuration '{lid(5)}' is of mixture-8x2b on lm-arena-chat, not of tiny-1b on "
            "lm-arena-chat: give one of the model's configurations of the task",
        ),
        (
            f'model: "tiny-1b", configuration: "{iid(1)}"',
            f"configuration '{iid(1)}' is of pixel-1b on text-to-image, not of tiny-1b on "
            "lm-arena-chat: give one of the model's configurations of the task",
        ),
        (
            'model: "tiny-1b", latency: {maxBatchLatencySeconds: 3}',
            "latency.maxBatchLatencySeconds does not apply to lm-arena-chat, an LLM or MLLM "
            "task: give latency.maxItlMs",
        ),
        (
            'model: "tiny-1b", site: {zone: "FRA", carbonIntensityGramsPerKwh: 50}',
            "site takes site.zone or site.carbonIntensityGramsPerKwh, not both: got zone 'FRA' "
            "and 50 gCO₂e per kWh",
        ),
        (
            'model: "tiny-1b", site: {zone: "France"}',
            "unknown grid zone 'France' in `site.zone`; `gridZones` lists them",
        ),
        (
            'model: "tiny-1b", site: {zone: "CAF"}',
            f"grid zone 'CAF' in `site.zone` has no carbon intensity: EcoLogits {VERSION} gives 0 "
            "kgCO₂eq per kWh for CAF, which stands for no figure (no grid emits nothing over "
            "its life cycle); give carbonIntensityGramsPerKwh instead",
        ),
        ('model: "tiny-1b", site: {pue: 0.5}', "site.pue must be a number >= 1, got 0.5"),
    ],
)
async def test_bad_input_names_the_argument_and_the_value(
    execute: Execute, arguments: str, message: str
) -> None:
    data = await execute(f"{{ requestImpact({arguments}) {{ configurations }} }}")
    assert data == {"errors": [{"message": message, "code": "BAD_USER_INPUT"}]}


async def test_grid_zones_with_their_source(execute: Execute) -> None:
    query = """{ gridZones { source { package packageVersion packageUrl source sourceUrl year
        licence licenceUrl upstreamLicence upstreamLicenceUrl }
        zones { code carbonIntensityGramsPerKwh missing carbonIntensityIsWorldDefault
          otherFactorsFromWorld source { package } } } }"""
    answer = (await execute(query))["gridZones"]
    assert answer["source"] == {
        "package": "ecologits",
        "packageVersion": VERSION,
        "packageUrl": "https://github.com/mlco2/ecologits",
        "source": "EcoLogits' electricity mixes (ecologits/data/electricity_mixes.json), whose "
        "carbon intensities (GWP) EcoLogits takes from Our World in Data's carbon intensity of "
        "electricity generation",
        "sourceUrl": "https://ourworldindata.org/electricity-mix",
        "year": None,
        "licence": "MPL-2.0 (the ecologits package, its data file included)",
        "licenceUrl": "https://mozilla.org/MPL/2.0/",
        "upstreamLicence": "CC BY 4.0 (Our World in Data's licence for the data it publishes)",
        "upstreamLicenceUrl": "https://creativecommons.org/licenses/by/4.0/",
    }
    zones = {z["code"]: z for z in answer["zones"]}
    assert [z["code"] for z in answer["zones"]] == list(grid.zones())
    assert [zones[c] for c in ("FRA", "WOR", "ABW", "CAF")] == [
        {
            "code": "FRA",
            "carbonIntensityGramsPerKwh": 41.44,
            "missing": None,
            "carbonIntensityIsWorldDefault": False,
            "otherFactorsFromWorld": [],
            "source": {"package": "ecologits"},
        },
        {
            "code": "WOR",
            "carbonIntensityGramsPerKwh": 458.29,
            "missing": None,
            "carbonIntensityIsWorldDefault": False,
            "otherFactorsFromWorld": [],
            "source": {"package": "ecologits"},
        },
        {
            "code": "ABW",
            "carbonIntensityGramsPerKwh": 550.0,
            "missing": None,
            "carbonIntensityIsWorldDefault": False,
            "otherFactorsFromWorld": ["adpe", "pe", "wue"],
            "source": {"package": "ecologits"},
        },
        {
            "code": "CAF",
            "carbonIntensityGramsPerKwh": None,
            "missing": f"EcoLogits {VERSION} gives 0 kgCO₂eq per kWh for CAF, which stands for no "
            "figure (no grid emits nothing over its life cycle)",
            "carbonIntensityIsWorldDefault": False,
            "otherFactorsFromWorld": ["adpe", "pe", "wue"],
            "source": {"package": "ecologits"},
        },
    ]


async def test_the_planner_takes_a_zone(execute: Execute) -> None:
    """Row 2 for 6,000 tokens a second: 1,200 W, 28.8 kWh a day, at France's 41.44 g a kWh."""
    query = """{ deploymentPlan(demand: {outputTokensPerSecond: 6000}, site: {zone: "FRA"},
        objective: CARBON, first: 1) { plans { configuration { id } carbonPerDayKg {
        lower upper } } assumptions } }"""
    answer = (await execute(query))["deploymentPlan"]
    assert rounded(answer["plans"]) == [
        {
            "configuration": {"id": lid(2)},
            "carbonPerDayKg": {"lower": 1.193472, "upper": 1.193472},
        }
    ]
    assert answer["assumptions"][4] == FRA
