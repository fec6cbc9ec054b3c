import { axisTicks, tickText } from "../ui/bar-chart";

/**
 * A horizontal bar chart, for values by name (models): each row its name, its bar and its
 * value; under them a value axis in `unit` with its ticks and grid lines. Names of any length
 * fit (they wrap), where a vertical chart's labels would run into each other.
 */
export function HorizontalChart(props: { rows: Array<{ key: string; value: number; text: string }>; unit: string; listLabel: string; caption: string; whole?: boolean }) {
  const ticks = axisTicks(Math.max(0, ...props.rows.map((r) => r.value)), { whole: props.whole });
  const top = ticks[ticks.length - 1]!;
  const at = (value: number) => `${(100 * value) / top}%`;
  return (
    <figure class="hchart">
      {/* biome-ignore lint/a11y/useSemanticElements: the chart's rows, each a grid of name, bar and value, read as a list */}
      <div role="list" aria-label={props.listLabel}>
        {props.rows.map((r) => (
          // biome-ignore lint/a11y/useSemanticElements: one row of the chart above
          <div key={r.key} class="hchart-row" role="listitem" aria-label={`${r.key}: ${r.text}`} title={`${r.key}: ${r.text}`}>
            <span class="hchart-name" aria-hidden="true">
              {r.key}
            </span>
            <span class="hchart-track" aria-hidden="true">
              {ticks.map((t) => (
                <span key={t} class="hchart-grid" style={{ left: at(t) }} />
              ))}
              <span class="hchart-bar" style={{ width: r.value ? `max(2px, ${at(r.value)})` : "0" }} />
            </span>
            <span class="hchart-value" aria-hidden="true">
              {r.text}
            </span>
          </div>
        ))}
      </div>
      <div class="hchart-row hchart-axis" aria-hidden="true">
        <span class="hchart-name" />
        <span class="hchart-ticks">
          {ticks.map((t, i) => (
            <span key={t} class={i === 0 ? "first" : i === ticks.length - 1 ? "last" : ""} style={{ left: at(t) }}>
              {tickText(t, ticks)}
            </span>
          ))}
        </span>
        <span class="hchart-value" />
      </div>
      <div class="hchart-row" aria-hidden="true">
        <span class="hchart-name" />
        <span class="hchart-unit">{props.unit}</span>
        <span class="hchart-value" />
      </div>
      <figcaption class="visually-hidden">{props.caption}</figcaption>
    </figure>
  );
}
