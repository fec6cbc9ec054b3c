import { useQuery } from "@tanstack/react-query";
import type { Model } from "../api/client";
import { useProfile } from "../settings/profile-query";
import { Icon } from "../ui/icons";
import { modelsQuery } from "./models-query";

export function useModels() {
  return useQuery(modelsQuery());
}

const speedLabel = { fast: "fast", medium: "medium speed", slow: "slow", unknown: "speed unknown" } as const;

/** Milliseconds as a person reads a wait: 420 ms, 1.3 s. */
function seconds(ms: number): string {
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`;
}

/** The model's speed in words: measured on this server when it has been, else its label and that it is not measured yet. */
export function describeSpeed(model: Model): string {
  const { samples, timeToFirstTokenMs, tokensPerSecond } = model.measured;
  if (samples === 0) return `${speedLabel[model.speed]} (not measured here yet)`;
  const parts = [
    ...(timeToFirstTokenMs !== null ? [`first word in ${seconds(timeToFirstTokenMs)}`] : []),
    ...(tokensPerSecond !== null ? [`${Math.round(tokensPerSecond)} tokens/s`] : []),
  ];
  return `${parts.join(", ")} over its last ${samples} repl${samples === 1 ? "y" : "ies"} here`;
}

export function describeModel(model: Model) {
  const price = `${model.credits} credit${model.credits === 1 ? "" : "s"}`;
  if (model.available) return `${describeSpeed(model)}; ${price} a message`;
  // `setup` comes to admins only: what the operator must set for it to answer.
  return `unavailable: its provider is not configured on this server${model.setup ? ` (${model.setup})` : ""}`;
}

/** The option's short speed: measured tokens per second, else the label. */
function shortSpeed(model: Model): string {
  const rate = model.measured.tokensPerSecond;
  if (model.measured.samples > 0 && rate !== null) return `${Math.round(rate)} tok/s`;
  return model.speed === "unknown" ? "not measured" : model.speed;
}

/**
 * The chosen model's line beside the composer's controls, in a form whose length barely
 * changes ("29 tok/s · first word in 0.4 s · 1 credit a message"), the picker's description;
 * the sentence it shortens ("… over its last 14 replies here") is its tooltip.
 */
export function ModelHint({ model }: { model: Model | undefined }) {
  if (!model) return null;
  const { samples, timeToFirstTokenMs } = model.measured;
  const price = `${model.credits} credit${model.credits === 1 ? "" : "s"} a message`;
  const short = !model.available
    ? "unavailable here"
    : samples === 0
      ? `${speedLabel[model.speed]} · not measured yet · ${price}`
      : [shortSpeed(model), ...(timeToFirstTokenMs !== null ? [`first word in ${seconds(timeToFirstTokenMs)}`] : []), price].join(" · ");
  return (
    <span class="model-hint" id="model-hint" title={describeModel(model)}>
      {short}
    </span>
  );
}

/**
 * A native select (keyboard and screen readers for free) listing speed and price. The select
 * itself is see-through, laid over the chosen model's name: a select shows its text on one
 * line, as wide as its longest option allows, which cut names off ("Service 70B · medium ·
 * 1 cr…"); the name above it wraps instead, at any width. Models this server cannot call are
 * left out (the chosen one stays, disabled, so the page can say why Send is off), except for
 * an admin, who sees them greyed in a group of their own, each with what to set for it.
 */
export function ModelPicker(props: { value: string; onChange: (id: string) => void }) {
  const { data: models } = useModels();
  const admin = useProfile().data?.role === "admin";
  const current = models?.find((m) => m.id === props.value);
  const listed = models?.filter((m) => m.available || (m.id === props.value && !admin));
  const unconfigured = admin ? models?.filter((m) => !m.available) : [];
  return (
    <div class="model-choice">
      <span class="model-name" aria-hidden="true">
        {current?.name ?? props.value}
      </span>
      <Icon name="chevron" size={14} />
      <label class="visually-hidden" for="model-picker">
        Model
      </label>
      <select id="model-picker" value={props.value} aria-describedby={current ? "model-hint" : undefined} onChange={(e) => props.onChange(e.currentTarget.value)}>
        {!listed && <option value={props.value}>{props.value}</option>}
        {listed?.map((m) => (
          <option key={m.id} value={m.id} disabled={!m.available}>
            {m.name} · {m.available ? `${shortSpeed(m)} · ${m.credits} cr` : "unavailable: provider not configured"}
          </option>
        ))}
        {unconfigured && unconfigured.length > 0 && (
          <optgroup label="Not configured here (shown to admins)">
            {unconfigured.map((m) => (
              <option key={m.id} value={m.id} disabled>
                {m.name} · unavailable: {m.setup ?? "provider not configured"}
              </option>
            ))}
          </optgroup>
        )}
      </select>
    </div>
  );
}
