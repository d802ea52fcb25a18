/**
 * The host config's price table (`prices`, per million tokens), as the usage report and the worker's
 * metrics read it: a key is a model id (`claude-sonnet-4-5`), or a provider and a model id
 * (`anthropic:claude-sonnet-4-5`) when the same id costs differently through another provider; the
 * provider's key wins (docs/decisions/0042).
 */

export interface ModelPrice {
  promptPerMillion: number;
  completionPerMillion: number;
  currency: string;
}

export type ModelPrices = Readonly<Record<string, ModelPrice>>;

/** The price of `model` as `provider` serves it (provider unknown: the model id's alone), or undefined. */
export function priceOf(prices: ModelPrices, provider: string | undefined, model: string): ModelPrice | undefined {
  const own = (key: string) => (Object.hasOwn(prices, key) ? prices[key] : undefined);
  return (provider ? own(`${provider}:${model}`) : undefined) ?? own(model);
}

/** What `promptTokens` and `completionTokens` cost at `price`, in its currency. */
export function costOf(price: ModelPrice, promptTokens: number, completionTokens: number): number {
  return (promptTokens * price.promptPerMillion + completionTokens * price.completionPerMillion) / 1_000_000;
}
