import { describe, expect, it } from 'vitest';
import { detailsInDelivery, redactNames, type VisibleNames } from './redact.js';

const visible: VisibleNames = {
  delivery: (name) => name === 'sm-team-a-app-0123456789abcdef',
  mirror: (ref) => ref.startsWith('SecretMirror/team-a/'),
};

describe('redactNames', () => {
  it.each([
    [
      'Secret team-a/app is a copy of MirrorDelivery "sm-team-b-db-89abcdef01234567"',
      "Secret team-a/app is a copy of another mirror's MirrorDelivery",
    ],
    [
      'conflict: MirrorDelivery sm-x (namespace mirrorhub-system) belongs to another mirror (SecretMirror/team-b/db uid u from cluster hub)',
      "conflict: another mirror's MirrorDelivery (namespace mirrorhub-system) belongs to another mirror (another mirror uid u from cluster hub)",
    ],
    [
      '(kubectl -n mh delete mirrordelivery sm-x)',
      "(kubectl -n mh delete another mirror's mirrordelivery)",
    ],
    ['owned by ClusterSecretMirror//wide', 'owned by another mirror'],
    // What the reader may see stays as it is.
    [
      'details in MirrorDelivery sm-team-a-app-0123456789abcdef (namespace mh of cluster hub)',
      'details in MirrorDelivery sm-team-a-app-0123456789abcdef (namespace mh of cluster hub)',
    ],
    ['see SecretMirror/team-a/app', 'see SecretMirror/team-a/app'],
    [
      'Secret team-a/app exists and is not managed by mirrorhub',
      'Secret team-a/app exists and is not managed by mirrorhub',
    ],
  ])('%s', (message, expected) => {
    expect(redactNames(message, visible)).toBe(expected);
  });

  it('names where the details are', () => {
    expect(detailsInDelivery('sm-a', 'mh', 'hub')).toBe(
      'details in MirrorDelivery sm-a (namespace mh of cluster hub), readable by its administrators',
    );
  });
});
