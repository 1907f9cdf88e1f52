import { execFileSync } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';

import { ensureKstatus } from './kstatus.js';

const savedEnv = { ...process.env };
afterEach(() => {
  process.env = { ...savedEnv };
});

const object = (status: Record<string, unknown>) => ({
  apiVersion: 'mirrorhub.io/v1alpha1',
  kind: 'SecretMirror',
  metadata: { name: 'm', namespace: 'ns', generation: 2 },
  status,
});
const cond = (type: string, status: string, reason: string) => ({
  type,
  status,
  reason,
  message: reason,
  lastTransitionTime: '2026-01-01T00:00:00Z',
});

describe('ensureKstatus', () => {
  it('returns $MIRRORHUB_KSTATUS without building anything', async () => {
    process.env.MIRRORHUB_KSTATUS = '/bin/true';
    expect(await ensureKstatus()).toBe('/bin/true');
  });

  // Builds into the cache once (Go toolchain and module proxy), then reuses it.
  it('reads objects as cli-utils kstatus does: generation, Stalled, Reconciling', async () => {
    delete process.env.MIRRORHUB_KSTATUS;
    const bin = await ensureKstatus();
    const input = [
      object({ observedGeneration: 2, conditions: [cond('Ready', 'True', 'Synced')] }),
      object({ observedGeneration: 1, conditions: [cond('Ready', 'True', 'Synced')] }),
      object({ observedGeneration: 2, conditions: [cond('Stalled', 'True', 'InvalidSpec')] }),
      object({ observedGeneration: 2, conditions: [cond('Reconciling', 'True', 'Progressing')] }),
    ]
      .map((o) => JSON.stringify(o))
      .join('\n');
    const out = execFileSync(bin, [], { input, encoding: 'utf8' });
    expect(
      out
        .trim()
        .split('\n')
        .map((l) => (JSON.parse(l) as { status: string }).status),
    ).toEqual(['Current', 'InProgress', 'Failed', 'InProgress']);
  });
});
