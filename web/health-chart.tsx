import type { Health, StatusCounts } from './api';

/** The outcomes drawn, bottom up, with their colours (the status colours of the lists). */
const LAYERS: { status: keyof StatusCounts; fill: string }[] = [
  { status: 'delivered', fill: '#1a7f37' },
  { status: 'failed', fill: '#cf222e' },
  { status: 'pending', fill: '#bf8700' },
  { status: 'held', fill: '#8c959f' },
];
const [WIDTH, HEIGHT, GAP] = [480, 120, 2];

/**
 * Deliveries of the last 24 h by hour and outcome, as stacked bars (an SVG drawn from the
 * counts, presentation attributes only: the CSP allows no inline style), with the same
 * figures in a table for screen readers.
 */
export function HealthChart({ hourly }: { hourly: Health['last24h']['hourly'] }) {
  const most = Math.max(1, ...hourly.map((hour) => LAYERS.reduce((sum, { status }) => sum + hour[status], 0)));
  const barWidth = WIDTH / hourly.length - GAP;
  const hourLabel = (hour: string) => new Date(hour).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
  return (
    <figure class="chart">
      <svg viewBox={`0 0 ${WIDTH} ${HEIGHT}`} role="img" aria-labelledby="chart-caption" preserveAspectRatio="none">
        {hourly.map((hour, i) => {
          let top = HEIGHT;
          return (
            <g key={hour.hour}>
              <title>{`${hourLabel(hour.hour)}: ${LAYERS.map(({ status }) => `${hour[status]} ${status}`).join(', ')}`}</title>
              {LAYERS.map(({ status, fill }) => {
                const height = (hour[status] / most) * HEIGHT;
                top -= height;
                return height > 0 ? <rect x={i * (barWidth + GAP)} y={top} width={barWidth} height={height} fill={fill} /> : null;
              })}
            </g>
          );
        })}
      </svg>
      <figcaption id="chart-caption">
        Deliveries by hour over the last 24 hours (most in an hour: {most}):{' '}
        {LAYERS.map(({ status, fill }) => (
          <span class="legend" key={status}>
            <svg width="10" height="10" aria-hidden="true">
              <rect width="10" height="10" fill={fill} />
            </svg>{' '}
            {status}
          </span>
        ))}
      </figcaption>
      <table class="visually-hidden">
        <caption>Deliveries by hour</caption>
        <thead>
          <tr>
            <th scope="col">Hour</th>
            {LAYERS.map(({ status }) => (
              <th scope="col">{status}</th>
            ))}
          </tr>
        </thead>
        <tbody>
          {hourly.map((hour) => (
            <tr key={hour.hour}>
              <th scope="row">{hourLabel(hour.hour)}</th>
              {LAYERS.map(({ status }) => (
                <td>{hour[status]}</td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </figure>
  );
}
