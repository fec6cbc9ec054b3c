import { excerpt } from "../../platform/errors";
import type { ModelRegistry, RegisteredModel } from "../../platform/models/registry";
import { ModelNotFound, ModelUnavailable } from "./errors";

// Which models may answer an exchange, and what it holds for them. No I/O.

/** The model a request names: 400 when unknown, 503 when not configured. No I/O. */
export function requireModel(models: ModelRegistry, id: string): RegisteredModel {
  const model = models.get(id);
  if (!model) {
    const available = models.list().filter((m) => m.available);
    const offered = (available.length > 0 ? available : models.list()).map((m) => m.id).join(", ");
    throw new ModelNotFound(`unknown model '${excerpt(id)}'; available models: ${offered}`);
  }
  if (!model.available) throw unavailable(model);
  return model;
}

export function unavailable(model: RegisteredModel): ModelUnavailable {
  return new ModelUnavailable(`model ${model.id} is not configured on this server (the operator must ${model.setup}); choose another model from GET /models`);
}

/** The model a message goes to when the request names none: the user's default, else the deployment's. */
export function defaultModelFor(models: ModelRegistry, storedDefault: string | undefined): RegisteredModel {
  return (storedDefault ? models.get(storedDefault) : undefined) ?? models.defaultModel()!;
}

/**
 * The models an exchange may be answered by, in order: the model, then those of its
 * fallbacks that are available and suit the request (`suits`: what it asks of them).
 */
export function answerChain(models: ModelRegistry, model: RegisteredModel, suits: (m: RegisteredModel) => boolean = () => true): RegisteredModel[] {
  const chain = [model];
  for (const id of model.fallbacks) {
    const fallback = models.get(id);
    if (fallback?.available && suits(fallback) && !chain.includes(fallback)) chain.push(fallback);
  }
  return chain;
}

/** What the debit holds for a chain: the highest price among the models that may answer; the settling batch gives back the rest. */
export function holdPrice(chain: RegisteredModel[]): number {
  return Math.max(...chain.map((m) => m.credits));
}
