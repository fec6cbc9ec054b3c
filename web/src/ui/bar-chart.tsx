/** One bar: its value, the text under it ("" for none) and what a screen reader and the tooltip say of it. */
export interface Bar {
  key: string;
  value: number;
  label: string;
  name: string;
}

/**
 * 0 and three or four round steps up to at least `max`: 0, 25, 50, 75, 100. Whole numbers
 * (credits) never step below 1; amounts (cost) step as finely as they need: 0, 0.005, 0.01.
 */
export function axisTicks(max: number, options: { whole?: boolean } = {}): number[] {
  const whole = options.whole ?? true;
  const rough = (max > 0 ? max : whole ? 1 : 0.01) / 4;
  const power = 10 ** Math.floor(Math.log10(rough));
  const found = [1, 2, 2.5, 5, 10].map((f) => f * power).find((s) => s >= rough) ?? 10 * power;
  const step = whole ? Math.max(1, found) : found;
  const top = Math.max(step, Math.ceil(max / step - 1e-9) * step);
  // toPrecision: 3 × 0.1 is 0.30000000000000004, which a tick must not say.
  return Array.from({ length: Math.round(top / step) + 1 }, (_, i) => Number((i * step).toPrecision(12)));
}

/** A tick's text: as many decimals as the step between ticks has (0.025 → three), at most six. */
export function tickText(value: number, ticks: number[]): string {
  const step = ticks[1] ?? 1;
  const decimals = Math.min(6, (step.toFixed(8).replace(/0+$/, "").split(".")[1] ?? "").length);
  return value.toFixed(decimals);
}

/**
 * A bar chart: a value axis in `unit` with its grid lines, a bar per value (its exact value
 * in its name and tooltip) and each bar's label under it. Laid out in HTML, so the text keeps
 * its size at any width. `listLabel` names the bars for a screen reader, `caption` the chart.
 */
export function BarChart(props: { bars: Bar[]; unit: string; listLabel: string; caption: string; whole?: boolean }) {
  const { bars } = props;
  const ticks = axisTicks(Math.max(0, ...bars.map((b) => b.value)), { whole: props.whole });
  const top = ticks[ticks.length - 1]!;
  const at = (value: number) => `${(100 * value) / top}%`;
  const columns = { gridTemplateColumns: `repeat(${bars.length}, minmax(0, 1fr))` };
  return (
    <figure class="chart">
      <div class="chart-area">
        <span class="chart-unit" aria-hidden="true">
          {props.unit}
        </span>
        <div class="chart-y" aria-hidden="true">
          {ticks.map((t) => (
            <span key={t} style={{ bottom: at(t) }}>
              {tickText(t, ticks)}
            </span>
          ))}
        </div>
        <div class="chart-plot">
          {ticks.map((t) => (
            <span key={t} class="chart-grid" style={{ bottom: at(t) }} aria-hidden="true" />
          ))}
          {/* biome-ignore lint/a11y/useSemanticElements: the chart's bars, laid out as a grid, read as a list */}
          <div class="chart-bars" role="list" aria-label={props.listLabel} style={columns}>
            {bars.map((b) => (
              // biome-ignore lint/a11y/useSemanticElements: one bar of the chart above
              <div key={b.key} class="chart-day" role="listitem" aria-label={b.name} title={b.name}>
                <span class="bar" style={{ height: b.value ? `max(2px, ${at(b.value)})` : "0" }} />
              </div>
            ))}
          </div>
        </div>
        <div class="chart-x" aria-hidden="true" style={columns}>
          {bars.map((b, i) => (
            <span key={b.key} class={i === bars.length - 1 ? "last" : ""}>
              {b.label}
            </span>
          ))}
        </div>
      </div>
      <figcaption class="visually-hidden">{props.caption}</figcaption>
    </figure>
  );
}
