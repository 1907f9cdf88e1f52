import pino from 'pino';
import { describe, expect, it } from 'vitest';
import type { MirrorDelivery, SourceKind } from '@mirrorhub/shared/api/types.gen';
import { FakeClock } from '@mirrorhub/shared/testing/fake';
import { ANNOTATION_BINARY_KEYS, ANNOTATION_CONTENT_HASH } from '@mirrorhub/shared/api/contract';
import type { V1Secret } from '@kubernetes/client-node';
import {
  desiredCopy,
  holdsDesired,
  verifyAll,
  type CopyLister,
  type DesiredCopy,
  type ListedCopy,
} from './verify.js';
import { renderCopy } from '@mirrorhub/shared/mirror/shape';

const logger = pino({ level: 'silent' });

function delivery(
  name = 'd-1',
  target: { kind: SourceKind; name: string } = { kind: 'Secret', name: 'tls' },
): MirrorDelivery {
  return {
    apiVersion: 'mirrorhub.io/v1alpha1',
    kind: 'MirrorDelivery',
    metadata: { name, namespace: 'mirrorhub-system' },
    spec: {
      mirror: { kind: 'SecretMirror', namespace: 'apps', name: 'tls', uid: 'u1' },
      originCluster: 'hub',
      payloadSecretName: name,
      target,
      namespaces: ['team-.+'],
      template: { type: 'kubernetes.io/tls', labels: { app: 'web' } },
      contentHash: 'h1',
    },
  };
}

function payloadSecret(data: Record<string, string>, rv = '70'): V1Secret {
  return {
    metadata: {
      name: 'd-1',
      resourceVersion: rv,
      annotations: { [ANNOTATION_CONTENT_HASH]: 'h1', [ANNOTATION_BINARY_KEYS]: '' },
    },
    data,
  };
}

const DATA = { 'tls.crt': 'Y3J0', 'tls.key': 'a2V5' };
const want = desiredCopy(delivery(), payloadSecret(DATA)) as DesiredCopy;

/** The copy as the agent writes it, as a LIST returns it (plus what others add). */
function listed(namespace: string, change: (o: V1Secret) => void = () => {}): ListedCopy {
  const copy = renderCopy({
    kind: 'Secret',
    name: 'tls',
    namespace,
    payload: want.payload,
    template: want.spec.template,
    marks: want.marks,
  });
  const obj = structuredClone(copy) as V1Secret;
  obj.metadata = { ...obj.metadata, uid: `uid-${namespace}`, resourceVersion: '9' };
  change(obj);
  return obj;
}

describe('holdsDesired', () => {
  it.each<[string, (o: V1Secret) => void, boolean]>([
    ['exactly what the delivery says', () => {}, true],
    ["others' labels and annotations too", (o) => void (o.metadata!.labels!['team'] = 'a'), true],
    ['other data', (o) => void (o.data = { 'tls.crt': 'eA==' }), false],
    ['an extra data key', (o) => void (o.data = { ...DATA, extra: 'eA==' }), false],
    ['another type', (o) => void (o.type = 'Opaque'), false],
    [
      'an older content hash',
      (o) => void (o.metadata!.annotations![ANNOTATION_CONTENT_HASH] = 'h0'),
      false,
    ],
    ['another name', (o) => void (o.metadata!.name = 'other'), false],
    ['a template label missing', (o) => void delete o.metadata!.labels!['app'], false],
  ])('a listed copy with %s: %s', (_, change, intact) => {
    expect(holdsDesired('Secret', listed('team-a', change), want)).toBe(intact);
  });

  it('never for another kind, or a delivery without its payload', () => {
    expect(holdsDesired('ConfigMap', listed('team-a'), want)).toBe(false);
    expect(desiredCopy(delivery(), undefined)).toBeUndefined();
    expect(desiredCopy(undefined, payloadSecret(DATA))).toBeUndefined();
    expect(holdsDesired('Secret', listed('team-a'), undefined)).toBe(false);
  });
});

describe('verifyAll', () => {
  /** A lister serving `items` in pages of `limit`. */
  function pages(items: ListedCopy[], calls: string[] = []): CopyLister {
    return {
      list(o) {
        calls.push(o.continue ?? 'first');
        const from = Number(o.continue ?? 0);
        const to = from + (o.limit ?? items.length);
        return Promise.resolve({
          items: items.slice(from, to),
          resourceVersion: '1',
          ...(to < items.length ? { continue: String(to) } : {}),
        });
      },
    };
  }

  it('pages through every copy, marking those that hold their payload', async () => {
    const intact: string[] = [];
    const looked: string[] = [];
    const calls: string[] = [];
    const secrets = [
      listed('team-a'),
      listed('team-b', (o) => void (o.data = {})),
      listed('team-c'),
      listed('team-d', (o) => void (o.metadata!.labels!['mirrorhub.io/delivery'] = 'gone')),
      listed('team-e'),
    ];
    await verifyAll(
      {
        listers: { Secret: pages(secrets, calls), ConfigMap: pages([]) },
        desired: (name) => {
          looked.push(name);
          return name === 'd-1' ? want : undefined;
        },
        intact: (kind, obj, payloadVersion) =>
          void intact.push(`${kind}/${obj.metadata?.namespace} at payload ${payloadVersion}`),
        logger,
        clock: new FakeClock(),
        pageSize: 2,
      },
      new AbortController().signal,
    );
    expect(calls).toEqual(['first', '2', '4']);
    expect(intact).toEqual([
      'Secret/team-a at payload 70',
      'Secret/team-c at payload 70',
      'Secret/team-e at payload 70',
    ]);
    expect(looked).toEqual(['d-1', 'gone']); // once per delivery
  });

  it('a failing LIST is not fatal: the rest is left to each reconcile', async () => {
    const intact: string[] = [];
    const failing: CopyLister = { list: () => Promise.reject(new Error('403 Forbidden')) };
    await expect(
      verifyAll(
        {
          listers: { Secret: pages([listed('team-a')]), ConfigMap: failing },
          desired: () => want,
          intact: (_, obj) => void intact.push(obj.metadata?.namespace ?? ''),
          logger,
          clock: new FakeClock(),
        },
        new AbortController().signal,
      ),
    ).resolves.toBeUndefined();
    expect(intact).toEqual(['team-a']);
  });
});
