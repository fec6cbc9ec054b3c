import { useQuery } from "@tanstack/react-query";
import { api, must, type Model } from "../api/client";

export function useModels() {
  return useQuery({ queryKey: ["models"], queryFn: () => must(api.GET("/models")), staleTime: 60_000 });
}

const speedLabel = { fast: "fast", medium: "medium speed", slow: "slow" } as const;

export function describeModel(model: Model) {
  const price = `${model.credits} credit${model.credits === 1 ? "" : "s"}`;
  return model.available ? `${speedLabel[model.speed]}, ${price} a message` : "unavailable: its provider is not configured on this server";
}

/** A native select (keyboard and screen readers for free) listing speed, price and availability. */
export function ModelPicker(props: { value: string; onChange: (id: string) => void }) {
  const { data: models } = useModels();
  const current = models?.find((m) => m.id === props.value);
  return (
    <div class="model-picker">
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
      {current && (
        <span class="model-hint" id="model-hint">
          {describeModel(current)}
        </span>
      )}
    </div>
  );
}
