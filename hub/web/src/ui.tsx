// Small pieces every page uses: relative times, state badges, links to mirrors.

import type { ComponentChildren } from 'preact';
import { mirrorHref, whereHref } from './route.js';

/** 12 s, 5 min, 3 h, 4 d. */
export function span(ms: number): string {
  const s = Math.floor(Math.abs(ms) / 1000);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min`;
  if (s < 48 * 3600) return `${Math.floor(s / 3600)} h`;
  return `${Math.floor(s / 86400)} d`;
}

/** A past moment as "12 s ago"; the ISO time in the title. */
export function Ago({ iso, now }: { iso?: string; now: number }) {
  if (!iso) return <span class="muted">never</span>;
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return <span>{iso}</span>;
  return (
    <time dateTime={iso} title={iso}>
      {span(Math.max(0, now - t))} ago
    </time>
  );
}

/** A deadline as "in 12 min", or "expired 3 min ago" once past. */
export function Until({ iso, now, soon = 0 }: { iso?: string; now: number; soon?: number }) {
  if (!iso) return <span class="muted">—</span>;
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return <span>{iso}</span>;
  const left = t - now;
  const cls = left <= 0 ? 'text-bad' : left < soon ? 'text-warn' : undefined;
  return (
    <time dateTime={iso} title={iso} class={cls}>
      {left <= 0 ? `expired ${span(left)} ago` : `in ${span(left)}`}
    </time>
  );
}

/** A mirror phase (Active, Degraded, Error, Pending) as a coloured badge. */
export function PhaseBadge({ phase }: { phase: string }) {
  return <span class={`badge phase-${phase}`}>{phase}</span>;
}

/** A copy state (Synced, Failed, Conflict, PolicyDenied, Pending) as a coloured badge. */
export function StateBadge({ state }: { state: string }) {
  return <span class={`badge state-${state}`}>{state}</span>;
}

/** true / false / unknown as yes / no / unknown, coloured. */
export function YesNo({ value }: { value?: boolean }) {
  if (value === undefined) return <span class="badge tri-unknown">unknown</span>;
  return <span class={`badge tri-${value}`}>{value ? 'yes' : 'no'}</span>;
}

/** SecretMirror/ns/name -> ns/name; ClusterSecretMirror//name -> name. */
export function mirrorLabel(key: string): string {
  const [, ns = '', ...rest] = key.split('/');
  const name = rest.join('/');
  return ns ? `${ns}/${name}` : name;
}

export function MirrorLink({
  mirrorKey,
  children,
}: {
  mirrorKey: string;
  children?: ComponentChildren;
}) {
  return <a href={mirrorHref(mirrorKey)}>{children ?? mirrorLabel(mirrorKey)}</a>;
}

export function Labels({ labels }: { labels: Record<string, string> }) {
  const entries = Object.entries(labels).sort(([a], [b]) => a.localeCompare(b));
  if (entries.length === 0) return <span class="muted">—</span>;
  return (
    <span class="labels">
      {entries.map(([k, v]) => (
        <span class="label" key={k}>
          {k}={v}
        </span>
      ))}
    </span>
  );
}

/** `<label>` + `<select name="groupBy">` of label keys, with a "(none)" option for the empty value. */
export function LabelKeySelect({
  keys,
  value,
  onChange,
  label,
}: {
  keys: readonly string[];
  value: string;
  onChange: (key: string) => void;
  label: string;
}) {
  return (
    <label>
      {label}{' '}
      <select name="groupBy" value={value} onChange={(e) => onChange(e.currentTarget.value)}>
        <option value="">(none)</option>
        {keys.map((k) => (
          <option key={k} value={k}>
            {k}
          </option>
        ))}
      </select>
    </label>
  );
}

export function Empty({ children }: { children: ComponentChildren }) {
  return <p class="empty">{children}</p>;
}

/** A copy name, linked to the where page that lists every copy of that name. */
export function whereLink(name: string) {
  return (
    <a href={whereHref(name)} class="mono" title={`Where are the copies named ${name}?`}>
      {name}
    </a>
  );
}
