"""Energy in several units and bases, with estimates from caller-supplied figures."""

from __future__ import annotations

import strawberry

from analysis import units
from graph.errors import BadInput

ESTIMATE_CARBON = (
    "Estimate: emissions of this energy, in grams of CO₂-equivalent, at the grid carbon "
    "intensity the caller gave (`gridCarbonIntensity`, gCO₂e/kWh): kilowattHours × intensity. "
    "Counts GPU energy only, as measured; not a measurement. Null when no intensity is given."
)
ESTIMATE_COST = (
    "Estimate: electricity cost of this energy at the price the caller gave "
    "(`electricityPricePerKwh`), in that price's currency: kilowattHours × price. Counts GPU "
    "energy only; not a measurement. Null when no price is given."
)


@strawberry.type(
    description="An amount of energy in joules, watt-hours and kilowatt-hours, with estimates "
    "of its emissions and cost when the caller gave an intensity or a price."
)
class EnergyAmount:
    joules: float = strawberry.field(description="The energy, in joules.")
    watt_hours: float = strawberry.field(description="The energy, in watt-hours (J ÷ 3,600).")
    kilowatt_hours: float = strawberry.field(
        description="The energy, in kilowatt-hours (J ÷ 3,600,000)."
    )
    estimated_carbon_grams: float | None = strawberry.field(description=ESTIMATE_CARBON)
    estimated_cost: float | None = strawberry.field(description=ESTIMATE_COST)

    @classmethod
    def of(cls, joules: float, estimates: Estimates) -> EnergyAmount:
        intensity, price = estimates.carbon_intensity, estimates.price
        return cls(
            joules=joules,
            watt_hours=units.watt_hours(joules),
            kilowatt_hours=units.kilowatt_hours(joules),
            estimated_carbon_grams=None
            if intensity is None
            else units.carbon_grams(joules, intensity),
            estimated_cost=None if price is None else units.cost(joules, price),
        )


class Estimates:
    """The caller's grid carbon intensity and electricity price, checked."""

    def __init__(self, carbon_intensity: float | None, price: float | None) -> None:
        for name, value in (
            ("gridCarbonIntensity", carbon_intensity),
            ("electricityPricePerKwh", price),
        ):
            if value is not None and not value >= 0:
                raise BadInput(f"{name} must be a number >= 0, got {value}")
        self.carbon_intensity = carbon_intensity
        self.price = price


@strawberry.type(
    description="A configuration's energy (LLM and MLLM tasks) in several units and bases, "
    "converted by LeadGreen from the measured energy per token (all GPUs together)."
)
class TokenEnergy:
    per_token: EnergyAmount = strawberry.field(
        description="Energy per output token (upstream `energy_per_token_joules`)."
    )
    per_thousand_tokens: EnergyAmount = strawberry.field(
        description="Energy per 1,000 output tokens (energy per token × 1,000)."
    )
    per_million_tokens: EnergyAmount = strawberry.field(
        description="Energy per 1,000,000 output tokens (energy per token × 1,000,000)."
    )
    per_response: EnergyAmount = strawberry.field(
        description="Energy per response: upstream `energy_per_request_joules` (energy per "
        "token × average output length, derived upstream)."
    )
    tokens_per_joule: float | None = strawberry.field(
        description="Output tokens per joule (1 ÷ energy per token); null only for a zero energy."
    )

    @classmethod
    def of(cls, per_token: float, per_response: float, estimates: Estimates) -> TokenEnergy:
        return cls(
            per_token=EnergyAmount.of(per_token, estimates),
            per_thousand_tokens=EnergyAmount.of(units.per_count(per_token, 1e3), estimates),
            per_million_tokens=EnergyAmount.of(units.per_count(per_token, 1e6), estimates),
            per_response=EnergyAmount.of(per_response, estimates),
            tokens_per_joule=units.per_joule(per_token),
        )


@strawberry.type(
    description="A diffusion configuration's energy in several units, converted by LeadGreen "
    "from the measured energy per image or video (all GPUs together)."
)
class OutputEnergy:
    per_output: EnergyAmount = strawberry.field(
        description="Energy per generated image or video (upstream `energy_per_image_joules` "
        "or `energy_per_video_joules`)."
    )
    per_thousand_outputs: EnergyAmount = strawberry.field(
        description="Energy per 1,000 images or videos (energy per output × 1,000)."
    )
    outputs_per_kilowatt_hour: float | None = strawberry.field(
        description="Images or videos generated per kilowatt-hour (3,600,000 ÷ energy per "
        "output in joules); null only for a zero energy."
    )

    @classmethod
    def of(cls, per_output: float, estimates: Estimates) -> OutputEnergy:
        per_joule = units.per_joule(per_output)
        return cls(
            per_output=EnergyAmount.of(per_output, estimates),
            per_thousand_outputs=EnergyAmount.of(units.per_count(per_output, 1e3), estimates),
            outputs_per_kilowatt_hour=None
            if per_joule is None
            else per_joule * units.JOULES_PER_KILOWATT_HOUR,
        )
