import { useQuery } from "@tanstack/react-query";
import { api, must, type Model } from "../api/client";
import { Icon } from "../ui/icons";

export function useModels() {
  return useQuery({ queryKey: ["models"], queryFn: () => must(api.GET("/models")), staleTime: 60_000 });
}

const speedLabel = { fast: "fast", medium: "medium speed", slow: "slow" } as const;

export function describeModel(model: Model) {
  const price = `${model.credits} credit${model.credits === 1 ? "" : "s"}`;
  return model.available ? `${speedLabel[model.speed]}, ${price} a message` : "unavailable: its provider is not configured on this server";
}

/**
 * A native select (keyboard and screen readers for free) listing speed, price and
 * availability. The select itself is see-through, laid over the chosen model's name: a select
 * shows its text on one line, as wide as its longest option allows, which cut names off
 * ("Service 70B · medium · 1 cr…"); the name above it wraps instead, at any width.
 */
export function ModelPicker(props: { value: string; onChange: (id: string) => void }) {
  const { data: models } = useModels();
  const current = models?.find((m) => m.id === props.value);
  return (
    <div class="model-picker">
      <div class="model-choice">
        <span class="model-name" aria-hidden="true">
          {current?.name ?? props.value}
        </span>
        <Icon name="chevron" size={14} />
        <label class="visually-hidden" for="model-picker">
          Model
        </label>
        <select id="model-picker" value={props.value} onChange={(e) => props.onChange(e.currentTarget.value)}>
          {!models && <option value={props.value}>{props.value}</option>}
          {models?.map((m) => (
            <option key={m.id} value={m.id} disabled={!m.available}>
              {m.name} · {m.available ? `${m.speed} · ${m.credits} cr` : "unavailable: provider not configured"}
            </option>
          ))}
        </select>
      </div>
      {current && (
        <span class="model-hint" id="model-hint">
          {describeModel(current)}
        </span>
      )}
    </div>
  );
}
