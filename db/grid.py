"""Grid zones: the carbon intensity of each zone's electricity as the `ecologits` package ships
it (its electricity mixes, read through the package's own repository of them), in gCO₂e per
kWh, with where the figures come from. Nothing is copied into LeadGreen: the figures are the
installed package's.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from importlib.metadata import version

from analysis.plan import GRAMS_PER_KILOGRAM

PACKAGE = "ecologits"
# EcoLogits' warning that a factor of a zone's mix is the world's, by the factor it concerns
# (ecologits/status_messages.py). No gwp one exists as of 0.11.3: its figures are each zone's.
WORLD_DEFAULT_WARNINGS = {
    "electricity-mix-gwp-world": "gwp",
    "electricity-mix-adpe-world": "adpe",
    "electricity-mix-pe-world": "pe",
    "electricity-mix-wue-world": "wue",
}


@dataclass(frozen=True)
class Provenance:
    """Where the figures come from, as EcoLogits' documentation states it."""

    package: str
    package_version: str
    package_url: str
    source: str
    source_url: str
    # None: the package states no year for the figures.
    year: int | None
    licence: str
    licence_url: str
    upstream_licence: str
    upstream_licence_url: str


@dataclass(frozen=True)
class Zone:
    """One zone's mix: its code, its carbon intensity in gCO₂e per kWh (None: no figure, and
    `missing` says why), and the factors of its mix EcoLogits took from the world's mix."""

    code: str
    grams_per_kwh: float | None
    missing: str | None
    world_defaults: tuple[str, ...]

    @property
    def world_carbon(self) -> bool:
        """Whether the carbon intensity itself is the world's figure standing in for the zone's."""
        return "gwp" in self.world_defaults


def zone(code: str, gwp_kg_per_kwh: float | None, warnings: list[str]) -> Zone:
    """A zone from EcoLogits' figure (kgCO₂eq per kWh) and warning codes. A figure of 0 or less
    is no figure: no grid emits nothing over its life cycle, and EcoLogits writes 0 where its
    source has none (CAF, whose other factors are all the world's, as of 0.11.3)."""
    defaults = tuple(WORLD_DEFAULT_WARNINGS[w] for w in warnings if w in WORLD_DEFAULT_WARNINGS)
    if gwp_kg_per_kwh is None or not gwp_kg_per_kwh > 0:
        said = "no figure" if gwp_kg_per_kwh is None else f"{gwp_kg_per_kwh:g} kgCO₂eq per kWh"
        missing = (
            f"EcoLogits {version(PACKAGE)} gives {said} for {code}, which stands for no figure "
            "(no grid emits nothing over its life cycle)"
        )
        return Zone(code, None, missing, defaults)
    # The file's decimal figure x 1,000 exactly, then the nearest float (0.45829 x 1000.0 is
    # 458.28999999999996 in floating point).
    grams = float(Decimal(repr(gwp_kg_per_kwh)) * int(GRAMS_PER_KILOGRAM))
    return Zone(code, grams, None, defaults)


@functools.cache
def zones() -> Mapping[str, Zone]:
    """Every zone of the installed ecologits package, by code, in its order (read once)."""
    from ecologits.electricity_mix_repository import electricity_mixes

    return {
        mix.zone: zone(mix.zone, mix.gwp, [w.code for w in mix.warnings])
        for mix in electricity_mixes.list_electricity_mixes()
    }


@functools.cache
def provenance() -> Provenance:
    return Provenance(
        package=PACKAGE,
        package_version=version(PACKAGE),
        package_url="https://github.com/mlco2/ecologits",
        # EcoLogits' methodology (docs/methodology/llm_inference.md) and its pull request 181
        # ("gwp data coming from Our World in Data", 2025-09): the GWP of each mix is Our World
        # in Data's; the ADPe and PE factors are ADEME Base Empreinte's, which LeadGreen does
        # not serve.
        source="EcoLogits' electricity mixes (ecologits/data/electricity_mixes.json), whose "
        "carbon intensities (GWP) EcoLogits takes from Our World in Data's carbon intensity "
        "of electricity generation",
        source_url="https://ourworldindata.org/electricity-mix",
        year=None,
        licence="MPL-2.0 (the ecologits package, its data file included)",
        licence_url="https://mozilla.org/MPL/2.0/",
        upstream_licence="CC BY 4.0 (Our World in Data's licence for the data it publishes)",
        upstream_licence_url="https://creativecommons.org/licenses/by/4.0/",
    )
