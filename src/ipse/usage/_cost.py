"""What calls cost: each token kind at the model's price (`ipse.prefix.prices`, data with
sources in ``ipse/prefix/rules/prices.json``), cache writes and reads at the provider's
multipliers (`ipse.prefix.rules`: 1.25x base input for 5-minute writes, 2x for 1-hour ones,
0.1x for reads on Anthropic's models; the read discount by model on OpenAI's; Gemini's in the
price table). Each model's four prices are looked up once.
"""

from __future__ import annotations

from ipse.prefix import prices, rules
from ipse.prefix._shared import PROVIDERS
from ipse.usage._call import Call


class Costs:
    """Per-token prices by (model, provider), looked up once each: USD per token of uncached
    input, 5-minute write, 1-hour write, read, output; and whether the model is priced."""

    def __init__(self) -> None:
        self.table = prices()
        self.known: dict[tuple[str, str], tuple[tuple[float, ...], bool]] = {}

    def per_token(self, model: str, provider: str) -> tuple[tuple[float, ...], bool]:
        found = self.known.get((model, provider))
        if found is None:
            base, known = self.table.price(model or None, provider)
            output, _ = self.table.output_price(model or None, provider)
            read = self.table.read_multiplier(model or None, provider)
            five = hour = 1.0
            if provider in PROVIDERS:
                table = rules(provider)
                five, hour = table.write_multiplier("5m"), table.write_multiplier("1h")
                if provider != "anthropic":
                    five = hour = table.write_multiplier(None)
            per = 1e-6
            found = (
                (base * per, base * five * per, base * hour * per, base * read * per, output * per),
                known,
            )
            self.known[(model, provider)] = found
        return found

    def cost(self, call: Call) -> float:
        """What ``call`` cost, USD."""
        (uncached, five, hour, read, output), _ = self.per_token(call.model, call.provider)
        return (
            call.input * uncached
            + call.write_5m * five
            + call.write_1h * hour
            + call.read * read
            + call.output * output
        )

    def unpriced(self) -> list[str]:
        """The models seen that the price table does not name (priced at their provider's
        default)."""
        return sorted({model for (model, _), (_, known) in self.known.items() if not known})


__all__ = ["Costs"]
