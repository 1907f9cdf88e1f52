// The converter's objects as YAML: block style, keys in the order they were built, strings
// quoted whenever a plain scalar could be read as something else (a number, a boolean, null,
// or YAML syntax), so `kubectl apply` reads exactly what was emitted.

const PLAIN = /^[A-Za-z_/][A-Za-z0-9_./-]*$/;
const RESERVED = /^(true|false|yes|no|on|off|null|y|n|~)$/i;

function scalar(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  const s = String(v);
  return PLAIN.test(s) && !RESERVED.test(s) ? s : JSON.stringify(s);
}

const isMap = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

function lines(v: unknown, indent: string): string[] {
  const out: string[] = [];
  if (isMap(v)) {
    for (const [k, val] of Object.entries(v)) {
      if (val === undefined) continue;
      const key = scalar(k);
      if (isMap(val) && Object.keys(val).length > 0) {
        out.push(`${indent}${key}:`, ...lines(val, `${indent}  `));
      } else if (Array.isArray(val) && val.length > 0) {
        out.push(`${indent}${key}:`, ...lines(val, indent));
      } else {
        out.push(`${indent}${key}: ${isMap(val) ? '{}' : Array.isArray(val) ? '[]' : scalar(val)}`);
      }
    }
  } else if (Array.isArray(v)) {
    for (const item of v) {
      if (isMap(item) && Object.keys(item).length > 0) {
        const [first, ...rest] = lines(item, `${indent}  `);
        out.push(`${indent}- ${first!.trimStart()}`, ...rest);
      } else {
        out.push(`${indent}- ${isMap(item) ? '{}' : scalar(item)}`);
      }
    }
  } else {
    out.push(`${indent}${scalar(v)}`);
  }
  return out;
}

export function toYaml(obj: Record<string, unknown>): string {
  return `${lines(obj, '').join('\n')}\n`;
}

/** Several objects as one YAML stream. */
export function toYamlStream(objs: readonly Record<string, unknown>[]): string {
  return objs.map((o) => `---\n${toYaml(o)}`).join('');
}

/** The file an object is written to with --out: kind-namespace-name.yaml, lower case. */
export function fileName(obj: Record<string, unknown>): string {
  const meta = (obj['metadata'] ?? {}) as { name?: string; namespace?: string };
  const parts = [String(obj['kind']).toLowerCase(), meta.namespace, meta.name].filter(Boolean);
  return `${parts.join('-')}.yaml`;
}
